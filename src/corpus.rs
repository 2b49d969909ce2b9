//! Corpus statistics: the figures of ANALYSIS.md §4 and §5 averaged over
//! many texts, with their spread and 95% confidence intervals.
//!
//! One text says little about a head; a folder of texts says whether a
//! head's behaviour is stable. Every `.txt` file found under the given paths
//! (folders are searched recursively; files named explicitly are taken
//! whatever their extension; the list is sorted and de-duplicated so a run
//! is deterministic) is cut into sentence-aligned windows that fit the
//! model: window k starts at the sentence after the last one window k − 1
//! analysed, until every sentence is covered. A file is split and tokenized
//! once ([`TokenizedText`]) and its windows are cut from those tokens, the
//! same windows `headscope analyze` builds; each runs through
//! [`pipeline::run_prepared`] as in `analyze`, and every window counts once,
//! whatever its length.
//!
//! The statistics themselves are pure and live in [`crate::corpus_stats`];
//! this module is the runner: [`find_text_files`],
//! [`run_files`] and [`run`], which read the files, run the model window by
//! window, report progress through a callback and stop between windows (or
//! inside one, between layers) when the cancel flag is set. A cancelled run
//! still returns everything done so far, marked `partial`. What a run
//! returns, and how it is written as JSON and CSV, is [`CorpusReport`].
//!
//! Files that give no text (binary, empty or blank, unreadable) are skipped
//! and listed with the reason; a file that is not UTF-8 is read as Latin-1
//! and listed under `warnings`. A sentence too long for the model on its own
//! is left out of the windows and counted, with a warning.

mod files;
mod report;

pub use crate::corpus_stats::{
    CategoryCounts, CategoryFractions, CategoryShares, FocusToken, HeadSummary, LayerSummary,
    Summary, HEAD_FIGURES, LAYER_FIGURES,
};
pub use files::{find_text_files, CorpusError, FileList, FoundFile};
pub use report::{CorpusReport, DocumentSummary, FileWarning, SkippedFile, FORMAT};

use crate::analysis::AnalysisOptions;
use crate::corpus_stats::CorpusStats;
use crate::input::{InputError, InputMode, TokenizedText};
use crate::model::Model;
use crate::pipeline::{self, RunError};
use crate::textfile::{read_text_file, TextFileError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How each file becomes model inputs, and how they are analysed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CorpusOptions {
    pub mode: InputMode,
    pub analysis: AnalysisOptions,
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
    /// `corpus  42% [########            ] 21/50 files, 37 windows, ETA 1m05s`.
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

    /// What is done and the time left: `21/50 files, 37 windows, ETA 1m05s`.
    pub fn counts(&self) -> String {
        let eta = match self.eta() {
            Some(eta) => format!("ETA {}", format_duration(eta)),
            None => "ETA —".into(),
        };
        format!(
            "{}/{} files, {} window{}, {}",
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
        })
    }
}

/// Finds the files under `paths` and runs [`run_files`] on them.
pub fn run(
    model: &Model,
    paths: &[PathBuf],
    options: &CorpusOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> Result<CorpusReport, CorpusError> {
    let list = find_text_files(paths)?;
    Ok(run_files(model, list, options, on_event, cancel))
}

/// The reason text of a file that gave no text, without its path (the
/// report lists the path beside it).
fn skip_reason(error: &TextFileError) -> String {
    match error {
        TextFileError::Unreadable { reason, .. } => reason.clone(),
        TextFileError::Binary { .. } => "binary file, not text".into(),
        TextFileError::Empty { .. } => "empty or blank".into(),
    }
}

/// Analyses every file of `list`, window by window, and aggregates the
/// figures. Never fails: files that give nothing are listed as skipped.
/// Setting `cancel` stops the run within a layer's time; the windows
/// finished so far are kept and the report is marked `partial`.
pub fn run_files(
    model: &Model,
    list: FileList,
    options: &CorpusOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> CorpusReport {
    let start = Instant::now();
    let mut stats = CorpusStats::default();
    let mut report = CorpusReport {
        format: FORMAT.into(),
        model: model.name.clone(),
        input_mode: options.mode,
        options: options.analysis.clone(),
        files_found: list.files.len() + list.skipped.len(),
        ..Default::default()
    };
    for skipped in list.skipped {
        on_event(CorpusEvent::Skipped(&skipped));
        report.skipped.push(skipped);
    }
    let bytes_total: u64 = list.files.iter().map(|f| f.bytes).sum();
    let mut bytes_before = 0u64;
    let is_cancelled = || cancel.load(Ordering::SeqCst);
    let files_total = list.files.len();
    let tracker = Tracker {
        start,
        files_total,
        bytes_total,
    };
    let progress =
        |file, files_done, windows, bytes| tracker.event(file, files_done, windows, bytes);
    if let Some(first) = list.files.first() {
        on_event(progress(&first.path, 0, 0, 0));
    }
    for (index, found) in list.files.iter().enumerate() {
        if is_cancelled() {
            report.partial = true;
            break;
        }
        let name = found.path.display().to_string();
        let text = match read_text_file(&found.path) {
            Ok(file) => {
                if let Some(warning) = file.warning {
                    // The message names the file; the report lists the path beside it.
                    let warning = FileWarning {
                        warning: warning
                            .strip_prefix(&format!("{name} is "))
                            .map_or(warning.clone(), str::to_string),
                        path: name.clone(),
                    };
                    on_event(CorpusEvent::Warning(&warning));
                    report.warnings.push(warning);
                }
                file.text
            }
            Err(e) => {
                let skipped = SkippedFile {
                    path: name,
                    reason: skip_reason(&e),
                };
                on_event(CorpusEvent::Skipped(&skipped));
                report.skipped.push(skipped);
                bytes_before += found.bytes;
                on_event(progress(
                    &found.path,
                    index + 1,
                    stats.windows(),
                    bytes_before,
                ));
                continue;
            }
        };
        let mut document = DocumentSummary {
            path: name.clone(),
            bytes: found.bytes,
            ..Default::default()
        };
        // Bytes of the file covered once the text up to `offset` is done;
        // scaled because a Latin-1 text is longer in UTF-8 than on disk.
        let covered = |offset: usize| {
            (offset as f64 / text.len().max(1) as f64 * found.bytes as f64).round() as u64
        };
        // Tokenized once: every window is cut from these tokens.
        let tokenized = match TokenizedText::new(&model.tokenizer, &text, options.mode) {
            Ok(tokenized) => tokenized,
            Err(e) => {
                let skipped = SkippedFile {
                    path: name,
                    reason: e.to_string(),
                };
                on_event(CorpusEvent::Skipped(&skipped));
                report.skipped.push(skipped);
                bytes_before += found.bytes;
                on_event(progress(
                    &found.path,
                    index + 1,
                    stats.windows(),
                    bytes_before,
                ));
                continue;
            }
        };
        let spans = tokenized.sentence_spans();
        document.sentences = spans.len();
        let mut first_sentence = 0;
        while first_sentence < spans.len() {
            if is_cancelled() {
                report.partial = true;
                break;
            }
            let window = tokenized
                .window(model.max_tokens(), first_sentence, &model.specials)
                .map_err(RunError::Input)
                .and_then(|built| {
                    pipeline::run_prepared(model, built, &options.analysis, &is_cancelled)
                });
            match window {
                Ok(output) => {
                    let built = &output.input;
                    stats.add(&output.analysis);
                    document.windows += 1;
                    document.tokens += output.analysis.tokens;
                    report.tokens += output.analysis.tokens;
                    report.content_tokens += output.analysis.content_tokens;
                    report.sentences += built.sentences_analysed;
                    let next = first_sentence + built.sentences_analysed;
                    let end = next
                        .checked_sub(1)
                        .and_then(|last| spans.get(last))
                        .map_or(text.len(), |s| s.1);
                    on_event(progress(
                        &found.path,
                        index,
                        stats.windows(),
                        bytes_before + covered(end),
                    ));
                    // No progress would loop for ever; it cannot happen
                    // with a non-empty window, but guard anyway.
                    if built.sentences_analysed == 0 {
                        break;
                    }
                    first_sentence = next;
                }
                Err(RunError::Cancelled) => {
                    report.partial = true;
                    break;
                }
                Err(RunError::Input(InputError::SentenceTooLong {
                    sentence,
                    tokens,
                    limit,
                })) => {
                    // One run-on sentence should not cost the rest of the file.
                    let warning = FileWarning {
                        path: name.clone(),
                        warning: format!(
                            "sentence {sentence} alone has {tokens} tokens, more than the model's limit of {limit}: left it out"
                        ),
                    };
                    on_event(CorpusEvent::Warning(&warning));
                    report.warnings.push(warning);
                    document.sentences_left_out += 1;
                    report.sentences_left_out += 1;
                    first_sentence += 1;
                }
                Err(e) => {
                    let skipped = SkippedFile {
                        path: name.clone(),
                        reason: match document.windows {
                            0 => e.to_string(),
                            done => format!("{e} (after {done} windows; those are counted)"),
                        },
                    };
                    on_event(CorpusEvent::Skipped(&skipped));
                    report.skipped.push(skipped);
                    break;
                }
            }
        }
        document.complete = first_sentence >= spans.len();
        if document.windows > 0 {
            report.files += 1;
            report.bytes += found.bytes;
        }
        if document.windows > 0 || document.sentences_left_out > 0 {
            report.documents.push(document);
        }
        if report.partial {
            break;
        }
        bytes_before += found.bytes;
        on_event(progress(
            &found.path,
            index + 1,
            stats.windows(),
            bytes_before,
        ));
    }
    report.windows = stats.windows();
    report.tokens_per_window = stats.tokens_per_window();
    report.baseline_same_sentence_fraction = stats.baseline_same_sentence_fraction();
    report.layers = stats.layers();
    report.elapsed_seconds = start.elapsed().as_secs_f64();
    report
}
