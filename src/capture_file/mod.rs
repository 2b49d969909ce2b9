//! Capture files: one model run on one text, stored so that headscope can
//! analyse and show it without running the model — a model of a family
//! headscope does not run, a fine-tune on a GPU node, a run from Python.
//!
//! The format (docs/CAPTURE.md) is safetensors: per layer every head's
//! output vectors O (`layers.{l}.head_outputs`, H×T×d) and, when given,
//! the attention P (`layers.{l}.attentions`, H×T×T), in float32, float16
//! or bfloat16; and a JSON [`Header`] in the metadata under `headscope`:
//! the model's name and type, causal or not, the text, the tokens (ids,
//! texts, character offsets, sentence ids, special and separator
//! positions).
//!
//! Reading checks everything it can — format and version, every shape
//! against the header, positions and offsets in range, the separators
//! against the rule the analysis applies to the ids (ANALYSIS.md §1, §8),
//! finite values — and says what is wrong in one [`CaptureFileError`].
//! A capture becomes the same [`Captures`] and [`TokenSequence`] a model
//! run gives (S = O·Oᵀ computed here), so its figures come from the one
//! analysis every run goes through; without P the figures made from P are
//! `None` ([`crate::analysis::analyze`]).

mod header;
mod read;
mod write;

pub use header::{Header, ModelDescription, TokenTable, FORMAT, HEADER_KEY, VERSION};
pub use write::{header_of, write_capture, CaptureSource};

use crate::analysis::{self, Analysis, AnalysisOptions};
use crate::captures::Captures;
use crate::input::BuiltInput;
use crate::pipeline::{RunOutput, Timings};
use crate::tokens::TokenSequence;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A capture file, read and checked: its header, its input as the analysis
/// reads it, and its captures (O, S, and P when the file has it).
#[derive(Debug, Clone)]
pub struct CaptureFile {
    pub path: PathBuf,
    pub header: Header,
    pub tokens: TokenSequence,
    pub captures: Captures,
}

/// Why a capture file cannot be read: each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CaptureFileError {
    #[error("cannot read capture {}: {error}", .path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{} is not a safetensors file (damaged or cut short?): {detail}", .path.display())]
    NotSafetensors { path: PathBuf, detail: String },
    #[error("{} is a safetensors file but no headscope capture: its metadata has no `{HEADER_KEY}` header", .path.display())]
    NoHeader { path: PathBuf },
    #[error("{}: the capture header is not valid: {detail}", .path.display())]
    BadHeader { path: PathBuf, detail: String },
    #[error("{} is a capture of version {found}; this headscope reads version {VERSION} (a newer headscope wrote it?)", .path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("{}: {detail}", .path.display())]
    Inconsistent { path: PathBuf, detail: String },
}

impl CaptureFile {
    /// Reads and checks a capture file.
    pub fn read(path: &Path) -> Result<Self, CaptureFileError> {
        read::read(path)
    }

    /// Reads only the header of a capture file (fast: no tensor is read),
    /// checked for format and version.
    pub fn read_header(path: &Path) -> Result<Header, CaptureFileError> {
        read::read_header(path)
    }

    /// Whether the file holds every layer's attention P.
    pub fn has_attention(&self) -> bool {
        self.header.attentions
    }

    /// A short name: the model's name and what kind of capture it is.
    pub fn name(&self) -> String {
        format!("{} (capture)", self.header.model.name)
    }

    /// The sentences of the capture's input.
    pub fn sentences(&self) -> usize {
        let mut ids: Vec<usize> = self.tokens.sentence_ids.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// Every figure (ANALYSIS.md §3–§6), as `headscope analyze` reports it.
    pub fn analyze(&self, options: &AnalysisOptions) -> Analysis {
        let mut analysis = analysis::analyze(&self.tokens, &self.captures, options);
        analysis.sentences_analysed = self.sentences();
        analysis.sentences_left_out = self.header.sentences_left_out;
        analysis.tokens_left_out = self.header.tokens_left_out;
        analysis
    }

    /// What a model run on the capture's text would have given: the input,
    /// the captures and the figures under `options`.
    pub fn run_output(&self, options: &AnalysisOptions) -> RunOutput {
        let start = Instant::now();
        let analysis = self.analyze(options);
        let analysis_ms = start.elapsed().as_secs_f64() * 1000.0;
        RunOutput {
            input: BuiltInput {
                sentence_spans: sentence_spans(&self.tokens),
                sentences_analysed: analysis.sentences_analysed,
                sentences_left_out: self.header.sentences_left_out,
                tokens_left_out: self.header.tokens_left_out,
                tokens: self.tokens.clone(),
                ..Default::default()
            },
            captures: self.captures.clone(),
            analysis,
            thumbnails: Default::default(),
            timings: Timings {
                analysis_ms,
                total_ms: analysis_ms,
                ..Default::default()
            },
        }
    }
}

/// What the views and exports say where a capture holds no P.
pub const NO_ATTENTION: &str = "this capture holds the head outputs O without the attention P, \
     so the figures and pictures made from P are empty";

/// Whether `path` looks like a capture file (by its extension), not a
/// text or a model folder.
pub fn is_capture_path(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

/// Byte span of each sentence: from its first token's start to its last
/// token's end.
fn sentence_spans(tokens: &TokenSequence) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (sentence, offset) in tokens.sentence_ids.iter().zip(&tokens.offsets) {
        let (Some(sentence), Some((start, end))) = (sentence, offset) else {
            continue;
        };
        if spans.len() <= *sentence {
            spans.resize(sentence + 1, (usize::MAX, 0));
        }
        let span = &mut spans[*sentence];
        *span = (span.0.min(*start), span.1.max(*end));
    }
    spans.retain(|span| span.0 != usize::MAX);
    spans
}
