//! A corpus of capture files (docs/CAPTURE.md): the corpus statistics of
//! runs made elsewhere — a model headscope cannot run, a GPU node, Python.
//!
//! Each capture is one window: its tokens, sentences, O and P as stored,
//! analysed with the corpus's analysis options as `headscope analyze
//! --capture` analyses it, and added to the same [`CorpusStats`] a corpus
//! of texts fills, so the report is the same document (a capture without P
//! leaves the figures made from P out of the averages: `null` when no
//! capture has P). The input options do not apply: a capture holds its
//! input already.
//!
//! [`find_captures`] lists the `.safetensors` files under the paths given
//! (folders searched recursively, sorted) and reads their headers only:
//! a file that is no capture is skipped with the reason, and captures of
//! different models are refused before anything is analysed, since their
//! heads cannot be averaged together. [`run_captures`] then reads and
//! analyses one capture at a time, so memory holds one window, and stops
//! between captures when the cancel flag is set.

use super::report::{DocumentSummary, FileWarning, SkippedFile};
use super::sources::hex;
use super::{CorpusEvent, CorpusIdentity, CorpusPart, Numbered, Shard, Tracker};
use crate::analysis::AnalysisOptions;
use crate::capture_file::{CaptureFile, Header};
use crate::input::InputMode;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The capture files of a corpus, their headers read and their model
/// checked to be one.
#[derive(Debug, Clone)]
pub struct CapturePlan {
    /// The captures, sorted by path, each with its header.
    pub captures: Vec<(PathBuf, Header)>,
    /// Files that could not be searched or are no readable capture.
    pub problems: Vec<SkippedFile>,
}

impl CapturePlan {
    /// The model every capture is of, as messages name it.
    pub fn model(&self) -> String {
        self.captures
            .first()
            .map_or_else(String::new, |(_, header)| header.model_description())
    }

    /// A digest of the captures' paths and sizes, and the problems found.
    fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        for (path, header) in &self.captures {
            let size = std::fs::metadata(path).map_or(0, |m| m.len());
            hash.update(format!(
                "capture\t{}\t{size}\t{}\n",
                path.display(),
                header.text.len()
            ));
        }
        for problem in &self.problems {
            hash.update(format!("problem\t{}\t{}\n", problem.path, problem.reason));
        }
        hex(&hash.finalize()[..16])
    }
}

/// Why a corpus of captures cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureCorpusError {
    #[error("no paths given: name capture files (.safetensors) or folders holding them")]
    NoPaths,
    #[error("no capture file found in {searched} (looked for .safetensors files){}", problems(.skipped))]
    NoCaptures {
        searched: String,
        skipped: Vec<SkippedFile>,
    },
    #[error(
        "the captures are of different models, whose heads cannot be averaged together: \
         {first} is of {first_model}, {other} is of {other_model}; run the corpus on the \
         captures of one model"
    )]
    MixedModels {
        first: String,
        first_model: String,
        other: String,
        other_model: String,
    },
}

fn problems(skipped: &[SkippedFile]) -> String {
    skipped
        .iter()
        .map(|s| format!("; {}: {}", s.path, s.reason))
        .collect()
}

/// Whether `path` is a capture file, or a folder with a `.safetensors`
/// file somewhere under it: what a corpus of captures is given.
pub fn holds_captures(path: &Path) -> bool {
    if path.is_dir() {
        let mut files = Vec::new();
        safetensors_under(path, &mut files, &mut Vec::new());
        !files.is_empty()
    } else {
        is_safetensors(path)
    }
}

fn is_safetensors(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

/// Every `.safetensors` file under `folder`, recursively, in sorted order.
fn safetensors_under(folder: &Path, files: &mut Vec<PathBuf>, problems: &mut Vec<SkippedFile>) {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(SkippedFile {
                path: folder.display().to_string(),
                reason: format!(
                    "cannot list the folder: {}",
                    crate::textfile::describe_io_error(&e)
                ),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            safetensors_under(&path, files, problems);
        } else if is_safetensors(&path) {
            files.push(path);
        }
    }
}

/// The capture files under `paths` (a file named directly is taken
/// whatever its name), their headers read; see the module docs.
pub fn find_captures(paths: &[PathBuf]) -> Result<CapturePlan, CaptureCorpusError> {
    if paths.is_empty() {
        return Err(CaptureCorpusError::NoPaths);
    }
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        if path.is_dir() {
            safetensors_under(path, &mut files, &mut problems);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            problems.push(SkippedFile {
                path: path.display().to_string(),
                reason: "no such file or folder".into(),
            });
        }
    }
    files.sort();
    files.dedup();
    let mut captures: Vec<(PathBuf, Header)> = Vec::with_capacity(files.len());
    for path in files {
        match CaptureFile::read_header(&path) {
            Ok(header) => {
                if let Some((first, first_header)) = captures.first() {
                    if !first_header.same_model(&header) {
                        return Err(CaptureCorpusError::MixedModels {
                            first: first.display().to_string(),
                            first_model: first_header.model_description(),
                            other: path.display().to_string(),
                            other_model: header.model_description(),
                        });
                    }
                }
                captures.push((path, header));
            }
            Err(e) => problems.push(SkippedFile {
                path: path.display().to_string(),
                reason: e.to_string(),
            }),
        }
    }
    if captures.is_empty() {
        let searched = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CaptureCorpusError::NoCaptures {
            searched,
            skipped: problems,
        });
    }
    Ok(CapturePlan { captures, problems })
}

/// Analyses every capture of `plan` with `options` and returns the
/// mergeable result of the whole (one part, shard 0 of 1); a capture that
/// cannot be read is skipped with the reason. Setting `cancel` stops the
/// run between captures; what was done is kept and marked `partial`.
pub fn run_captures(
    plan: &CapturePlan,
    options: &AnalysisOptions,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    cancel: &AtomicBool,
) -> CorpusPart {
    let start = Instant::now();
    let count = plan.captures.len();
    let identity = CorpusIdentity {
        fingerprint: plan.fingerprint(),
        documents: count,
        bytes: plan.captures.iter().map(|(_, h)| h.text.len() as u64).sum(),
        problems: plan.problems.clone(),
    };
    let name = plan
        .captures
        .first()
        .map_or_else(String::new, |(_, header)| {
            format!("{} (captures)", header.model.name)
        });
    // Captures hold their input already: the input mode is not theirs to
    // say, and is left at its default.
    let mut part = CorpusPart::new(
        &name,
        InputMode::default(),
        options,
        identity,
        Shard::WHOLE,
        0..count,
    );
    for problem in &plan.problems {
        on_event(CorpusEvent::Skipped(problem));
    }
    let tracker = Tracker {
        start,
        files_total: count,
        bytes_total: part.corpus.bytes,
    };
    let mut bytes_done = 0u64;
    for (number, (path, header)) in plan.captures.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            part.partial = true;
            break;
        }
        on_event(tracker.event(path, number, part.stats.windows(), bytes_done));
        let id = path.display().to_string();
        let bytes = header.text.len() as u64;
        bytes_done += bytes;
        let capture = match CaptureFile::read(path) {
            Ok(capture) if capture.header.same_model(header) => capture,
            Ok(_) => {
                skip(
                    &mut part,
                    on_event,
                    number,
                    id,
                    "it changed while the corpus ran".into(),
                );
                continue;
            }
            Err(e) => {
                skip(&mut part, on_event, number, id, e.to_string());
                continue;
            }
        };
        if !capture.has_attention() {
            let warning = FileWarning {
                path: id.clone(),
                warning: "holds no attention P: the figures made from P leave it out".into(),
            };
            on_event(CorpusEvent::Warning(&warning));
            part.warnings.push(Numbered {
                document: number,
                item: warning,
            });
        }
        let analysis_start = Instant::now();
        let analysis = capture.analyze(options);
        part.model_seconds += analysis_start.elapsed().as_secs_f64();
        part.stats.add(&analysis);
        part.files += 1;
        part.bytes += bytes;
        part.tokens += analysis.tokens;
        part.content_tokens += analysis.content_tokens;
        part.sentences += analysis.sentences_analysed;
        let left_out = header.sentences_left_out + header.tokens_left_out;
        part.documents.push(Numbered {
            document: number,
            item: DocumentSummary {
                id: id.clone(),
                path: id,
                bytes,
                sentences: analysis.sentences_analysed + header.sentences_left_out,
                windows: 1,
                tokens: analysis.tokens,
                sentences_split: 0,
                complete: left_out == 0,
            },
        });
        on_event(tracker.event(path, number + 1, part.stats.windows(), bytes_done));
    }
    part.elapsed_seconds = start.elapsed().as_secs_f64();
    part
}

fn skip(
    part: &mut CorpusPart,
    on_event: &mut dyn FnMut(CorpusEvent<'_>),
    number: usize,
    path: String,
    reason: String,
) {
    let skipped = SkippedFile { path, reason };
    on_event(CorpusEvent::Skipped(&skipped));
    part.skipped.push(Numbered {
        document: number,
        item: skipped,
    });
}
