//! Corpus statistics: the figures of ANALYSIS.md §4 and §5 averaged over
//! many documents, with their spread and 95% confidence intervals.
//!
//! One text says little about a head; a corpus says whether a head's
//! behaviour is stable. The documents are found under the given paths
//! (text and Markdown files, gzip-compressed or not, the records of JSON
//! Lines and Parquet files: see [`sources`]), in an order every run finds
//! alike. Each is cut into sentence-aligned windows that fit the model:
//! window k starts at the sentence after the last one window k − 1
//! analysed, until every sentence is covered. A document is split and
//! tokenized once ([`TokenizedText`]) and its windows are cut from those
//! tokens, the same windows `headscope analyze` builds; each runs through
//! [`pipeline::run_prepared`] as in `analyze`, and every window counts
//! once, whatever its length.
//!
//! The statistics themselves are pure and live in [`crate::corpus_stats`];
//! this module is the runner: [`run_shard`] analyses the documents of one
//! shard ([`Shard`]; all of them for an unsharded run), reports progress
//! through a callback, stops between windows (or inside one, between
//! layers) when the cancel flag is set, and returns a [`CorpusPart`], the
//! mergeable state of [`part`]; [`run_files`] and [`run`] turn the one part
//! of an unsharded run into its [`CorpusReport`]. A cancelled run still
//! returns everything done so far, marked `partial`.
//!
//! A corpus may also be capture files instead of texts ([`captures`]): each
//! capture is one window, analysed as stored, without a model.
//!
//! Documents that give no text (binary, empty or blank, unreadable, a JSON
//! Lines line without the text field) are skipped and listed with the
//! reason; a file that is not UTF-8 is read as Latin-1 and listed under
//! `warnings`. A sentence longer than a window on its own is cut into
//! pieces, each analysed as a sentence (as `analyze` does), and counted.

pub mod captures;
pub mod documents;
mod parquet_source;
pub mod part;
mod report;
pub mod shard;
pub mod sources;

pub use crate::corpus_stats::{
    CategoryCounts, CategoryFractions, CategoryShares, FocusToken, HeadSummary, LayerSummary,
    Summary, HEAD_FIGURES, IMPORTANCE_FIGURES, LAYER_FIGURES,
};
pub use captures::{find_captures, holds_captures, run_captures, CaptureCorpusError, CapturePlan};
pub use documents::{DocumentText, SourceOptions, DEFAULT_TEXT_FIELD};
pub use part::{
    merge, model_fingerprint, CorpusIdentity, CorpusPart, MergeError, Numbered, PartError,
};
pub use report::{CorpusReport, DocumentSummary, FileWarning, SkippedFile, FORMAT};
pub use shard::Shard;
pub use sources::{find_documents, find_text_files, CorpusError, CorpusPlan, SourceReader};

use crate::analysis::AnalysisOptions;
use crate::input::{InputMode, TokenizedText, WindowStart};
use crate::model::ablation::AblationMode;
use crate::model::Model;
use crate::pipeline::{self, RunError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How each file becomes model inputs, and how they are analysed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CorpusOptions {
    pub mode: InputMode,
    pub analysis: AnalysisOptions,
    #[serde(default)]
    pub limits: WindowLimits,
    /// Ablate each head alone in every window (ANALYSIS.md §9), L × H
    /// passes a window, for each head's importance over the corpus;
    /// `None`: not.
    #[serde(default)]
    pub importance: Option<AblationMode>,
}

/// The limits a window is cut to below the model's own, as for one text
/// (`--max-tokens`, `--capture-memory-mb`; see [`pipeline::InputOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowLimits {
    pub max_tokens: Option<usize>,
    pub capture_memory_mb: Option<u64>,
}

impl CorpusOptions {
    /// The input options of every window.
    pub fn input_options(&self) -> pipeline::InputOptions {
        pipeline::InputOptions {
            mode: self.mode,
            max_tokens: self.limits.max_tokens,
            capture_memory_mb: self.limits.capture_memory_mb,
            ..Default::default()
        }
    }
}

/// Where a run stands, after each window and each file.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress<'a> {
    /// The file being read.
    pub file: &'a Path,
    pub files_done: usize,
    pub files_total: usize,
    pub windows_done: usize,
    /// Bytes of text covered by finished windows (and skipped files).
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub elapsed: Duration,
    /// Heads ablated so far of all in the window whose importance is being
    /// measured (`--importance`), if one is.
    pub heads_ablated: Option<(usize, usize)>,
}

impl Progress<'_> {
    /// Share of the bytes done, 0 to 1.
    pub fn fraction(&self) -> f64 {
        if self.bytes_total == 0 {
            return if self.files_total == 0 {
                1.0
            } else {
                self.files_done as f64 / self.files_total as f64
            };
        }
        (self.bytes_done as f64 / self.bytes_total as f64).clamp(0.0, 1.0)
    }

    /// Time left at the pace so far; `None` until something is done.
    pub fn eta(&self) -> Option<Duration> {
        let fraction = self.fraction();
        (fraction > 0.0 && self.windows_done > 0).then(|| {
            Duration::from_secs_f64(self.elapsed.as_secs_f64() * (1.0 - fraction) / fraction)
        })
    }

    /// One line for a log, without a line ending:
    /// `corpus  42% [########            ] 21/50 documents, 37 windows, ETA 1m05s`.
    pub fn line(&self) -> String {
        const WIDTH: usize = 20;
        let fraction = self.fraction();
        let filled = ((fraction * WIDTH as f64).round() as usize).min(WIDTH);
        format!(
            "corpus {:>3.0}% [{}{}] {}",
            fraction * 100.0,
            "#".repeat(filled),
            " ".repeat(WIDTH - filled),
            self.counts()
        )
    }

    /// What is done and the time left: `21/50 documents, 37 windows, ETA 1m05s`.
    pub fn counts(&self) -> String {
        let eta = match self.eta() {
            Some(eta) => format!("ETA {}", format_duration(eta)),
            None => "ETA —".into(),
        };
        let ablating = match self.heads_ablated {
            Some((done, total)) => format!(", importance: {done}/{total} heads"),
            None => String::new(),
        };
        format!(
            "{}/{} documents, {} window{}{ablating}, {}",
            self.files_done,
            self.files_total,
            self.windows_done,
            if self.windows_done == 1 { "" } else { "s" },
            eta
        )
    }
}

/// `1h02m`, `3m05s` or `42s`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// What a run tells its caller while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum CorpusEvent<'a> {
    Progress(Progress<'a>),
    /// A file gave no text, or could not be analysed; the run goes on.
    Skipped(&'a SkippedFile),
    /// A file was read as Latin-1, or a sentence was too long to fit.
    Warning(&'a FileWarning),
}

/// The fixed part of every progress event of a run.
struct Tracker {
    start: Instant,
    files_total: usize,
    bytes_total: u64,
}

impl Tracker {
    fn event<'a>(
        &self,
        file: &'a Path,
        files_done: usize,
        windows: usize,
        bytes: u64,
    ) -> CorpusEvent<'a> {
        CorpusEvent::Progress(Progress {
            file,
            files_done,
            files_total: self.files_total,
            windows_done: windows,
            bytes_done: bytes,
            bytes_total: self.bytes_total,
            elapsed: self.start.elapsed(),
            heads_ablated: None,
        })
    }
}

/// Finds the documents under `paths` and runs [`run_files`] on them.
pub fn run(
    model: &Model,
    paths: &[PathBuf],
    options: &CorpusOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> Result<CorpusReport, CorpusError> {
    let plan = find_text_files(paths)?;
    Ok(run_files(model, plan, options, on_event, cancel))
}

/// Analyses every document of `plan`, window by window, and aggregates the
/// figures. Never fails: documents that give nothing are listed as skipped.
/// Setting `cancel` stops the run within a layer's time; the windows
/// finished so far are kept and the report is marked `partial`.
pub fn run_files(
    model: &Model,
    plan: CorpusPlan,
    options: &CorpusOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> CorpusReport {
    run_shard(model, &plan, Shard::WHOLE, options, on_event, cancel).report()
}

/// Analyses the documents of `shard` (all of them for [`Shard::WHOLE`]) and
/// returns the mergeable result ([`CorpusPart`]); as [`run_files`] otherwise.
/// The corpus's problems (paths not found, damaged files) are announced by
/// shard 0 only, and recorded in every part.
pub fn run_shard(
    model: &Model,
    plan: &CorpusPlan,
    shard: Shard,
    options: &CorpusOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> CorpusPart {
    let start = Instant::now();
    let range = shard.range(&plan.sizes());
    let identity = CorpusIdentity {
        fingerprint: plan.fingerprint(),
        documents: plan.documents.len(),
        bytes: plan.bytes(),
        problems: plan.problems.clone(),
    };
    let mut part = CorpusPart::new(
        &model.name,
        options.mode,
        &options.analysis,
        identity,
        shard,
        range.clone(),
    );
    part.limits = options.limits;
    part.importance = options.importance;
    if shard.index == 0 {
        for problem in &plan.problems {
            on_event(CorpusEvent::Skipped(problem));
        }
    }
    let documents = &plan.documents[range.clone()];
    let tracker = Tracker {
        start,
        files_total: documents.len(),
        bytes_total: documents.iter().map(|d| d.bytes).sum(),
    };
    let is_cancelled = || cancel.load(Ordering::SeqCst);
    if let Some(first) = documents.first() {
        on_event(tracker.event(plan.path_of(first), 0, 0, 0));
    }
    let mut bytes_before = 0u64;
    // The file being read, opened once for all its documents.
    let mut open: Option<(usize, Result<SourceReader, String>)> = None;
    for (offset, document) in documents.iter().enumerate() {
        if is_cancelled() {
            part.partial = true;
            break;
        }
        let number = range.start + offset;
        let path = plan.path_of(document);
        if open.as_ref().map(|(source, _)| *source) != Some(document.source) {
            open = Some((document.source, SourceReader::open(plan, document.source)));
        }
        let text = match open.as_mut().map(|(_, reader)| reader) {
            Some(Ok(reader)) => reader.read(plan, document),
            Some(Err(reason)) => Err(reason.clone()),
            None => Err("the file could not be opened".into()),
        };
        let mut job = DocumentRun {
            model,
            options,
            number,
            path: path.display().to_string(),
            bytes: document.bytes,
            part: &mut part,
            on_event: &mut *on_event,
            is_cancelled: &is_cancelled,
            progress: &|windows, bytes| tracker.event(path, offset, windows, bytes_before + bytes),
        };
        match text {
            Ok(text) => job.run(text),
            Err(reason) => job.skip(plan.default_id(document), reason),
        }
        if part.partial {
            break;
        }
        bytes_before += document.bytes;
        on_event(tracker.event(path, offset + 1, part.stats.windows(), bytes_before));
    }
    part.elapsed_seconds = start.elapsed().as_secs_f64();
    part
}

/// One document's run: its windows, warnings and line in the part.
struct DocumentRun<'a, 'e> {
    model: &'a Model,
    options: &'a CorpusOptions,
    /// Its number in the corpus.
    number: usize,
    /// Its file.
    path: String,
    bytes: u64,
    part: &'a mut CorpusPart,
    on_event: &'a mut dyn FnMut(CorpusEvent<'_>),
    is_cancelled: &'a dyn Fn() -> bool,
    /// The progress event after `windows` windows in all and `bytes` of
    /// this document done.
    progress: &'a dyn Fn(usize, u64) -> CorpusEvent<'e>,
}

impl DocumentRun<'_, '_> {
    fn skip(&mut self, path: String, reason: String) {
        let skipped = SkippedFile { path, reason };
        (self.on_event)(CorpusEvent::Skipped(&skipped));
        self.part.skipped.push(Numbered {
            document: self.number,
            item: skipped,
        });
    }

    fn warn(&mut self, path: String, warning: String) {
        let warning = FileWarning { path, warning };
        (self.on_event)(CorpusEvent::Warning(&warning));
        self.part.warnings.push(Numbered {
            document: self.number,
            item: warning,
        });
    }

    /// Ablates each head of the model alone on the window `input_ids`
    /// that [`CorpusStats::add`] added last, and adds each head's effect
    /// to the statistics; progress moves through the window's `bytes` as
    /// the heads are done.
    ///
    /// [`CorpusStats::add`]: crate::corpus_stats::CorpusStats::add
    fn importance(
        &mut self,
        input_ids: &[u32],
        mode: AblationMode,
        bytes: std::ops::Range<u64>,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let windows = self.part.stats.windows();
        let on_event = std::cell::RefCell::new(&mut *self.on_event);
        let progress = self.progress;
        let heads_done = |done: usize, total: usize| {
            let share = done as f64 / total.max(1) as f64;
            let within = ((bytes.end - bytes.start) as f64 * share).round() as u64;
            let mut event = progress(windows, bytes.start + within);
            if let CorpusEvent::Progress(progress) = &mut event {
                progress.heads_ablated = Some((done, total));
            }
            (on_event.borrow_mut())(event);
        };
        heads_done(0, self.model.layers() * self.model.heads());
        let importance =
            self.model
                .head_importance(input_ids, mode, self.is_cancelled, &heads_done)?;
        self.part.stats.add_importance(
            importance.heads,
            importance.delta_loss.as_deref(),
            &importance.output_change,
        );
        self.part.model_seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Cuts the text into windows and analyses each.
    fn run(&mut self, text: DocumentText) {
        let (model, options) = (self.model, self.options);
        let id = text.id;
        if let Some(warning) = text.warning {
            // The message names the file; the report lists it beside it.
            let warning = warning
                .strip_prefix(&format!("{id} is "))
                .map_or(warning.clone(), str::to_string);
            self.warn(id.clone(), warning);
        }
        let text = text.text;
        // Tokenized once: every window is cut from these tokens.
        let tokenized =
            match TokenizedText::new(&model.tokenizer, &text, options.mode, &model.specials) {
                Ok(tokenized) => tokenized,
                Err(e) => return self.skip(id, e.to_string()),
            };
        let spans = tokenized.sentence_spans();
        let mut document = DocumentSummary {
            id: id.clone(),
            path: self.path.clone(),
            bytes: self.bytes,
            sentences: spans.len(),
            ..Default::default()
        };
        // Bytes of the document covered once the text up to `offset` is
        // done; scaled because the text's length differs from its size on
        // disk (Latin-1, compression, JSON escapes).
        let size = self.bytes;
        let covered =
            |offset: usize| (offset as f64 / text.len().max(1) as f64 * size as f64).round() as u64;
        // The model's limit, or the user's, and the capture memory.
        let input = options.input_options();
        let limit = pipeline::token_limit(model, &input);
        let mut start = Some(WindowStart::default());
        // The bytes covered before the window being analysed.
        let mut covered_before = 0;
        while let Some(first) = start {
            if (self.is_cancelled)() {
                self.part.partial = true;
                break;
            }
            let window = tokenized
                .window(limit.tokens, first, &model.specials)
                .map_err(RunError::Input)
                .and_then(|built| {
                    let built = pipeline::fit_window(model, built, limit, &input);
                    pipeline::run_prepared(model, built, &options.analysis, &self.is_cancelled)
                });
            match window {
                Ok(output) => {
                    let built = &output.input;
                    self.part.stats.add(&output.analysis);
                    self.part.model_seconds += output.timings.total_ms / 1000.0;
                    document.windows += 1;
                    document.tokens += output.analysis.tokens;
                    self.part.tokens += output.analysis.tokens;
                    self.part.content_tokens += output.analysis.content_tokens;
                    self.part.sentences += built.sentences_analysed;
                    // A sentence cut into pieces counts once, in the window
                    // holding its first piece.
                    let newly_split = built
                        .sentences_split
                        .iter()
                        .filter(|split| split.in_window.first().is_some_and(|p| p.piece == 0))
                        .count();
                    document.sentences_split += newly_split;
                    self.part.sentences_split += newly_split;
                    // The text covered: up to the window's last sentence,
                    // or its last piece.
                    let end = match built.next {
                        Some(next) if next.piece > 0 => {
                            built.tokens.offsets.iter().flatten().last().map(|o| o.1)
                        }
                        _ => spans.get(built.last_sentence()).map(|s| s.1),
                    }
                    .unwrap_or(0);
                    if let Some(mode) = options.importance {
                        let bytes = covered_before..covered(end);
                        if let Err(e) = self.importance(&built.tokens.input_ids, mode, bytes) {
                            if (self.is_cancelled)() {
                                self.part.partial = true;
                            } else {
                                let reason = format!(
                                    "the heads' importance failed: {e:#} (after {} windows; \
                                     those are counted)",
                                    document.windows
                                );
                                self.skip(id.clone(), reason);
                            }
                            break;
                        }
                    }
                    covered_before = covered(end);
                    (self.on_event)((self.progress)(self.part.stats.windows(), covered_before));
                    // Every window holds at least one sentence or piece, so
                    // `next` always moves on.
                    start = built.next;
                }
                Err(RunError::Cancelled) => {
                    self.part.partial = true;
                    break;
                }
                Err(e) => {
                    let reason = match document.windows {
                        0 => e.to_string(),
                        done => format!("{e} (after {done} windows; those are counted)"),
                    };
                    self.skip(id.clone(), reason);
                    break;
                }
            }
        }
        document.complete = start.is_none();
        if document.windows > 0 {
            self.part.files += 1;
            self.part.bytes += self.bytes;
        }
        if document.windows > 0 {
            self.part.documents.push(Numbered {
                document: self.number,
                item: document,
            });
        }
    }
}
