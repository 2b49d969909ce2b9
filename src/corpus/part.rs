//! Partial results: what one shard of a corpus run writes (`headscope
//! corpus --shard K/N --part FILE`), and merging them (`headscope merge`)
//! into the report one unsharded run would have written.
//!
//! A part holds exact, mergeable state, not summaries: per figure the count,
//! mean and sum of squared deviations ([`crate::corpus_stats::Aggregate`]),
//! which merge exactly by Chan et al.'s pairwise formula; each head's
//! category and focus-token counts; the counters; the skipped files,
//! warnings and per-document lines, each with the document's number in the
//! corpus so that the merge lists them in corpus order; and the time taken.
//! A report is always made from parts: an unsharded run is one part, shard
//! 0 of 1, so the two paths cannot drift apart.
//!
//! A merge refuses parts of different models (name and a digest of the
//! model's files), analysis settings, input modes, corpora (a digest of the
//! document list, [`super::CorpusPlan::fingerprint`]) or shard counts, and
//! reports missing and duplicated shards by number and interrupted ones
//! (`"partial": true`) by file, so that exactly those can be rerun.
//!
//! # Layout (`"format": "headscope-corpus-part/2"`)
//!
//! ```text
//! { "format": "headscope-corpus-part/2",
//!   "model": "all-MiniLM-L6-v2", "model_fingerprint": "9f2c…",
//!   "input_mode": "document", "options": { ... },
//!   "corpus": {"fingerprint": "5d1e…", "documents": 300, "bytes": 13000000,
//!              "problems": [{"path": …, "reason": …}]},
//!   "shard": {"index": 2, "count": 4}, "first_document": 151, "end_document": 230,
//!   "partial": false, "elapsed_seconds": 812.5, "model_seconds": 790.1,
//!   "files": 79, "tokens": …, "content_tokens": …, "sentences": …,
//!   "sentences_split": 0, "bytes": …,
//!   "skipped": [{"document": 160, "path": …, "reason": …}],
//!   "warnings": [{"document": 171, "path": …, "warning": …}],
//!   "documents": [{"document": 151, "id": …, "path": …, …}],
//!   "head_figures": ["mean_distance", …], "layer_figures": ["mean_distance", …],
//!   "stats": { "windows": 97, "tokens": {"n": 97, "mean": 480.2, "m2": 5120.0},
//!              "baseline": {…},
//!              "layers": [{"figures": [{"n": …, "mean": …, "m2": …}, …],
//!                          "heads": [{"figures": […], "categories": {…},
//!                                     "focus": {"1012": [48, "."]}}]}] } }
//! ```

use super::report::{CorpusReport, DocumentSummary, FileWarning, SkippedFile, FORMAT};
use super::shard::Shard;
use super::sources::hex;
use super::WindowLimits;
use crate::analysis::AnalysisOptions;
use crate::corpus_stats::{CorpusStats, HEAD_FIGURES, LAYER_FIGURES};
use crate::input::InputMode;
use crate::model::ablation::AblationMode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The value of a part's `format` field.
pub const PART_FORMAT: &str = "headscope-corpus-part/2";

/// An item of a per-document list, with the document's number in the corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Numbered<T> {
    pub document: usize,
    #[serde(flatten)]
    pub item: T,
}

/// What every shard of one run agrees on about the corpus.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CorpusIdentity {
    /// [`super::CorpusPlan::fingerprint`].
    pub fingerprint: String,
    /// Documents in the whole corpus.
    pub documents: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files that could not be searched or read as their format says; every
    /// part lists them, the merged report once.
    pub problems: Vec<SkippedFile>,
}

/// The mergeable result of one shard (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusPart {
    pub format: String,
    pub model: String,
    /// A digest of the model's files ([`model_fingerprint`]); `None` when
    /// they could not be read.
    pub model_fingerprint: Option<String>,
    pub input_mode: InputMode,
    pub options: AnalysisOptions,
    /// The window limits below the model's own.
    #[serde(default)]
    pub limits: WindowLimits,
    /// How each head was ablated alone in every window (`None`: it was not).
    #[serde(default)]
    pub importance: Option<AblationMode>,
    pub corpus: CorpusIdentity,
    pub shard: Shard,
    /// The shard's documents: numbers `first_document..end_document`.
    pub first_document: usize,
    pub end_document: usize,
    /// True when the shard stopped (cancelled) before its last document.
    pub partial: bool,
    pub elapsed_seconds: f64,
    /// Of which in the encoder and the analysis (the rest: reading and
    /// tokenizing the documents).
    pub model_seconds: f64,
    /// Documents with at least one window analysed.
    pub files: usize,
    pub tokens: usize,
    pub content_tokens: usize,
    /// Sentences analysed, each piece of a cut sentence counting as one.
    pub sentences: usize,
    /// Sentences longer than a window, cut into pieces.
    #[serde(default)]
    pub sentences_split: usize,
    /// Bytes of the documents analysed.
    pub bytes: u64,
    pub skipped: Vec<Numbered<SkippedFile>>,
    pub warnings: Vec<Numbered<FileWarning>>,
    pub documents: Vec<Numbered<DocumentSummary>>,
    /// The figures of `stats`, in order: parts of different versions do
    /// not merge.
    pub head_figures: Vec<String>,
    pub layer_figures: Vec<String>,
    pub stats: CorpusStats,
}

impl CorpusPart {
    /// An empty part of `shard`, before any document.
    pub fn new(
        model: &str,
        input_mode: InputMode,
        options: &AnalysisOptions,
        corpus: CorpusIdentity,
        shard: Shard,
        documents: std::ops::Range<usize>,
    ) -> Self {
        Self {
            format: PART_FORMAT.into(),
            model: model.into(),
            model_fingerprint: None,
            input_mode,
            options: options.clone(),
            limits: WindowLimits::default(),
            importance: None,
            corpus,
            shard,
            first_document: documents.start,
            end_document: documents.end,
            partial: false,
            elapsed_seconds: 0.0,
            model_seconds: 0.0,
            files: 0,
            tokens: 0,
            content_tokens: 0,
            sentences: 0,
            sentences_split: 0,
            bytes: 0,
            skipped: Vec::new(),
            warnings: Vec::new(),
            documents: Vec::new(),
            head_figures: HEAD_FIGURES.iter().map(|s| s.to_string()).collect(),
            layer_figures: LAYER_FIGURES.iter().map(|s| s.to_string()).collect(),
            stats: CorpusStats::default(),
        }
    }

    /// Pretty JSON, as written by `--part`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads a part written by `--part`; the error says what is wrong.
    pub fn from_json(text: &str) -> Result<Self, PartError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(PartError::NotJson)?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(PART_FORMAT) => {}
            Some(format) if format.starts_with("headscope-corpus/") => {
                return Err(PartError::Report)
            }
            Some(format) => return Err(PartError::OtherFormat(format.to_string())),
            None => return Err(PartError::NoFormat),
        }
        serde_json::from_value(value).map_err(PartError::Damaged)
    }

    /// The report of this part alone (what an unsharded run writes).
    pub fn report(&self) -> CorpusReport {
        report_of(&[self])
    }
}

/// Why a file is not a corpus part; the message finishes the sentence
/// "FILE is …".
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error(
        "a corpus report, not a part: write parts with `headscope corpus --shard K/N --part FILE`"
    )]
    Report,
    #[error("format \"{0}\", not {PART_FORMAT}: written by another version of headscope?")]
    OtherFormat(String),
    #[error("not a headscope corpus part (no \"format\" field)")]
    NoFormat,
    #[error("a damaged part: {0}")]
    Damaged(serde_json::Error),
}

/// The report of parts known to belong together, in shard order.
fn report_of(parts: &[&CorpusPart]) -> CorpusReport {
    let Some(first) = parts.first() else {
        return CorpusReport::default();
    };
    let mut stats = CorpusStats::default();
    let mut report = CorpusReport {
        format: FORMAT.into(),
        model: first.model.clone(),
        input_mode: first.input_mode,
        options: first.options.clone(),
        limits: first.limits,
        importance: first.importance,
        files_found: first.corpus.documents + first.corpus.problems.len(),
        skipped: first.corpus.problems.clone(),
        ..Default::default()
    };
    let mut skipped = Vec::new();
    let mut warnings = Vec::new();
    let mut documents = Vec::new();
    for part in parts {
        stats.merge(&part.stats);
        report.partial |= part.partial;
        report.files += part.files;
        report.tokens += part.tokens;
        report.content_tokens += part.content_tokens;
        report.sentences += part.sentences;
        report.sentences_split += part.sentences_split;
        report.bytes += part.bytes;
        report.elapsed_seconds += part.elapsed_seconds;
        report.model_seconds += part.model_seconds;
        skipped.extend(part.skipped.iter().cloned());
        warnings.extend(part.warnings.iter().cloned());
        documents.extend(part.documents.iter().cloned());
    }
    // Stable sorts: a document's own items keep their order.
    skipped.sort_by_key(|n| n.document);
    warnings.sort_by_key(|n| n.document);
    documents.sort_by_key(|n| n.document);
    report.skipped.extend(skipped.into_iter().map(|n| n.item));
    report.warnings = warnings.into_iter().map(|n| n.item).collect();
    report.documents = documents.into_iter().map(|n| n.item).collect();
    report.windows = stats.windows();
    report.tokens_per_window = stats.tokens_per_window();
    report.baseline_same_sentence_fraction = stats.baseline_same_sentence_fraction();
    report.layers = stats.layers();
    report
}

/// Why parts do not merge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("no parts to merge")]
    Nothing,
    #[error("{first} and {other} are not of one run: {what}; merge the parts of one run only")]
    Mismatch {
        first: String,
        other: String,
        what: String,
    },
    #[error("{0}")]
    Incomplete(String),
}

/// Merges the parts of one sharded run (`(name, part)`, the name being
/// what messages call it, e.g. its path) into the report one unsharded run
/// of the same corpus writes: every count equal, every figure equal up to
/// rounding (Chan et al.'s pairwise update).
pub fn merge(parts: &[(String, CorpusPart)]) -> Result<CorpusReport, MergeError> {
    let Some((first_name, first)) = parts.first() else {
        return Err(MergeError::Nothing);
    };
    for (name, part) in &parts[1..] {
        if let Some(what) = difference(first, part) {
            return Err(MergeError::Mismatch {
                first: first_name.clone(),
                other: name.clone(),
                what,
            });
        }
    }
    let count = first.shard.count;
    let mut by_shard: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (name, part) in parts {
        by_shard.entry(part.shard.index).or_default().push(name);
    }
    let mut problems = Vec::new();
    let missing: Vec<String> = (0..count)
        .filter(|index| !by_shard.contains_key(index))
        .map(|index| index.to_string())
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "missing shard{} {} of {count} (run {} with --shard K/{count})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "each" }
        ));
    }
    for (index, names) in &by_shard {
        if names.len() > 1 {
            problems.push(format!(
                "shard {index} of {count} is there {} times ({})",
                names.len(),
                names.join(", ")
            ));
        }
    }
    for (name, part) in parts {
        if part.partial {
            problems.push(format!(
                "shard {} ({name}) was interrupted before its end (\"partial\": true): rerun it \
                 alone with --shard {}",
                part.shard, part.shard
            ));
        }
    }
    if !problems.is_empty() {
        return Err(MergeError::Incomplete(format!(
            "cannot merge: {}",
            problems.join("; ")
        )));
    }
    let mut ordered: Vec<&CorpusPart> = parts.iter().map(|(_, part)| part).collect();
    ordered.sort_by_key(|part| part.shard.index);
    Ok(report_of(&ordered))
}

/// What makes two parts belong to different runs, if anything.
fn difference(a: &CorpusPart, b: &CorpusPart) -> Option<String> {
    if a.model != b.model || a.model_fingerprint != b.model_fingerprint {
        return Some(format!(
            "the model differs ({} {} vs {} {})",
            a.model,
            a.model_fingerprint.as_deref().unwrap_or("(no digest)"),
            b.model,
            b.model_fingerprint.as_deref().unwrap_or("(no digest)")
        ));
    }
    if a.input_mode != b.input_mode {
        return Some(format!(
            "the input mode differs ({:?} vs {:?})",
            a.input_mode, b.input_mode
        ));
    }
    if a.options != b.options {
        return Some(format!(
            "the analysis settings differ ({} vs {})",
            serde_json::to_string(&a.options).unwrap_or_default(),
            serde_json::to_string(&b.options).unwrap_or_default()
        ));
    }
    if a.limits != b.limits {
        return Some(format!(
            "the window limits differ (--max-tokens {} --capture-memory-mb {} vs {} {})",
            show(a.limits.max_tokens),
            show(a.limits.capture_memory_mb),
            show(b.limits.max_tokens),
            show(b.limits.capture_memory_mb)
        ));
    }
    if a.importance != b.importance {
        let name = |mode: Option<AblationMode>| mode.map_or("none", AblationMode::name);
        return Some(format!(
            "the importance differs (--importance {} vs {})",
            name(a.importance),
            name(b.importance)
        ));
    }
    if a.corpus.fingerprint != b.corpus.fingerprint || a.corpus.documents != b.corpus.documents {
        return Some(format!(
            "the corpus differs ({} documents, digest {} vs {} documents, digest {}); every \
             shard must be given the same paths and --text-field/--id-field",
            a.corpus.documents, a.corpus.fingerprint, b.corpus.documents, b.corpus.fingerprint
        ));
    }
    if a.shard.count != b.shard.count {
        return Some(format!(
            "the number of shards differs ({} vs {})",
            a.shard.count, b.shard.count
        ));
    }
    if a.head_figures != b.head_figures || a.layer_figures != b.layer_figures {
        return Some("they hold different figures (written by different versions)".into());
    }
    None
}

/// A digest of the files that make a model folder what it is: config.json,
/// tokenizer.json and model.safetensors, read whole; of a GGUF file, the
/// file.
pub fn model_fingerprint(folder: &Path) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let files: Vec<(&str, PathBuf)> = if folder.is_file() {
        vec![("", folder.to_path_buf())]
    } else {
        ["config.json", "tokenizer.json", "model.safetensors"]
            .map(|name| (name, folder.join(name)))
            .into()
    };
    for (name, path) in files {
        let mut file = std::fs::File::open(path)?;
        hash.update(name.as_bytes());
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hash.update(&buffer[..read]);
        }
    }
    Ok(hex(&hash.finalize()[..16]))
}

/// An optional limit as the command line gives it ("default" when unset).
fn show<T: std::fmt::Display>(limit: Option<T>) -> String {
    limit.map_or_else(|| "default".into(), |v| v.to_string())
}
