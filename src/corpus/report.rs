//! What a corpus run returns ([`CorpusReport`]) and how it is written.
//!
//! A *document* is a text file, or one record of a JSON Lines or Parquet
//! file; `path` and `id` below say which. `headscope merge` writes the same
//! report from the parts of a sharded run (see [`super::part`]).
//!
//! # JSON (`headscope corpus --json`)
//!
//! ```text
//! {
//!   "format": "headscope-corpus/2",
//!   "model": "all-MiniLM-L6-v2",
//!   "input_mode": "document",            // or "one_sentence_per_line", "plain"
//!   "options": { ... },                  // AnalysisOptions, as in the app's settings
//!   "importance": "zero",                // each head ablated alone in each window, or null
//!   "partial": false,                    // true when cancelled before the end
//!   "files_found": 52,                   // documents found, plus files that could not be read
//!   "files": 50,                         // documents with at least one window analysed
//!   "windows": 61,                       // model inputs analysed
//!   "tokens": 9876,                      // their tokens, [CLS] and [SEP] included
//!   "content_tokens": 9000,
//!   "sentences": 700,                    // sentences analysed
//!   "sentences_split": 0,                // sentences longer than a window, cut into pieces
//!   "bytes": 123456,                     // size of the documents analysed
//!   "elapsed_seconds": 12.5,             // merged: the shards' times added up
//!   "model_seconds": 11.9,               // of which in the encoder and the analysis
//!   "skipped": [{"path": "a/b.txt", "reason": "binary file, not text"},
//!               {"path": "w.jsonl:7", "reason": "no \"text\" field (it has: title, body); ..."}],
//!   "warnings": [{"path": "a/c.txt", "warning": "not UTF-8: read it as Latin-1 ..."}],
//!   "documents": [{"id": "a/d.txt", "path": "a/d.txt", "bytes": 812, "sentences": 9,
//!                  "windows": 1, "tokens": 190, "sentences_split": 0,
//!                  "complete": true},
//!                 {"id": "enwiki-12", "path": "w.jsonl", ...}],   // in corpus order
//!   "tokens_per_window": SUMMARY,
//!   "baseline_same_sentence_fraction": SUMMARY,
//!   "layers": [                          // L objects
//!     { "layer": 0,
//!       "mean_distance": SUMMARY, "same_sentence_fraction": SUMMARY,
//!       "separator_attention": SUMMARY, "focus_uniqueness": SUMMARY,
//!       "segmentation_accuracy": SUMMARY, "segmentation_undecided": SUMMARY,
//!       "sink_attention": SUMMARY,
//!       "separator_attention_vw": SUMMARY, ..., "sink_attention_vw": SUMMARY, // N′ (§9)
//!       "heads": [                       // H objects
//!         { "head": 0,
//!           "mean_distance": SUMMARY, "same_sentence_fraction": SUMMARY,
//!           "repetition_fraction": SUMMARY, "focus_share": SUMMARY,
//!           "local_fraction": SUMMARY, "separator_attention": SUMMARY,
//!           "sink_attention": SUMMARY,
//!           "previous_token_score": SUMMARY, "duplicate_token_score": SUMMARY,
//!           "induction_score": SUMMARY, "self_score": SUMMARY,   // ANALYSIS.md §9
//!           "separator_attention_vw": SUMMARY, ..., "self_score_vw": SUMMARY, // N′ (§9)
//!           "importance_delta_loss": SUMMARY,    // the head ablated alone (§9), a decoder's
//!           "importance_output_change": SUMMARY, // n = 0 unless "importance" is set
//!           "categories": {
//!             "counts":    {"repetition": 3, "focus": 50, "local": 8, "mixed": 0, "none": 0},
//!             "fractions": {"repetition": 0.05, "focus": 0.82, "local": 0.13, "mixed": 0.0, "none": 0.0},
//!             "most_common": "focus" },
//!           "roles": {                   // the role of §9 in each window
//!             "counts":    {"windows": {"previous_token": 40, "sink": 21}, "none": 0},
//!             "fractions": {"previous_token": SUMMARY, "duplicate_token": SUMMARY, ...},
//!             "most_common": "previous_token" },
//!           "roles_vw": { ... },         // the same by the value-weighted N′
//!           "focus_token": {"id": 1012, "token": ".", "windows": 48, "fraction": 0.79} } ] } ]
//! }
//! ```
//!
//! where `SUMMARY` is `{"mean": m, "std": s, "ci95": [lo, hi], "n": n}`:
//! `n` is the number of windows in which the figure is defined (a window
//! with no selected pairs leaves the pair figures out rather than counting
//! them as 0), `std` the sample standard deviation (n − 1 in the
//! denominator; 0 when n = 1), `ci95` = mean ± t(0.975, n − 1)·std/√n
//! (`null` when n < 2), and `mean`/`std` are `null` when n = 0.
//! Category `fractions` are over all windows ("none": the head had no
//! category, i.e. no pairs), `most_common` breaks ties in the order
//! repetition, focus, local, mixed. `focus_token` is the head's most frequent
//! focus token over the windows (ties: smallest id).
//!
//! # CSV (`--csv`)
//!
//! One row per figure: `layer,head,figure,mean,std,ci95_lo,ci95_hi,n`, with
//! `head` empty for the per-layer figures and both `layer` and `head` empty
//! for the document-level ones; undefined numbers are empty cells. The
//! importance rows are there only when the run ablated each head.

use crate::analysis::AnalysisOptions;
use crate::corpus_stats::{LayerSummary, Summary, IMPORTANCE_FIGURES};
use crate::input::InputMode;
use serde::{Deserialize, Serialize};

/// The value of the `format` field, bumped when the layout changes.
pub const FORMAT: &str = "headscope-corpus/2";

/// A document that gave no text, or a file that could not be read, and
/// why; `path` is the document's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// Something to know about a document that was analysed anyway; `path`
/// is its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWarning {
    pub path: String,
    pub warning: String,
}

/// What became of one document.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DocumentSummary {
    /// Its id: the file's path for a text file, the record's id (or
    /// `PATH:LINE`, `PATH[ROW]`) for a record of JSON Lines or Parquet.
    pub id: String,
    /// Its file.
    pub path: String,
    pub bytes: u64,
    /// Sentences in the whole file.
    pub sentences: usize,
    pub windows: usize,
    /// Tokens of its windows, [CLS] and [SEP] included.
    pub tokens: usize,
    /// Sentences longer than a window, cut into pieces that were each
    /// analysed as a sentence.
    #[serde(default)]
    pub sentences_split: usize,
    /// False when the run stopped (cancel, error) before its last sentence.
    pub complete: bool,
}

/// Everything `headscope corpus` writes as JSON (see the module docs).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CorpusReport {
    pub format: String,
    pub model: String,
    pub input_mode: InputMode,
    pub options: AnalysisOptions,
    /// The window limits below the model's own (`null`: the default).
    #[serde(default)]
    pub limits: super::WindowLimits,
    /// How each head was ablated alone in every window for its importance
    /// (`null`: it was not).
    #[serde(default)]
    pub importance: Option<crate::model::ablation::AblationMode>,
    pub partial: bool,
    pub files_found: usize,
    pub files: usize,
    pub windows: usize,
    pub tokens: usize,
    pub content_tokens: usize,
    /// Sentences analysed, each piece of a cut sentence counting as one.
    pub sentences: usize,
    /// Sentences longer than a window, cut into pieces.
    #[serde(default)]
    pub sentences_split: usize,
    pub bytes: u64,
    pub elapsed_seconds: f64,
    /// Of which in the encoder and the analysis.
    pub model_seconds: f64,
    pub skipped: Vec<SkippedFile>,
    pub warnings: Vec<FileWarning>,
    pub documents: Vec<DocumentSummary>,
    pub tokens_per_window: Summary,
    pub baseline_same_sentence_fraction: Summary,
    pub layers: Vec<LayerSummary>,
}

impl CorpusReport {
    /// Pretty JSON, as written by `--json`.
    pub fn to_json(&self) -> String {
        // Every number in the report is finite (Aggregate drops the rest),
        // so serialising cannot fail; the fallback keeps this panic-free.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Whether the run measured head figure `name`: every figure but the
    /// importance, which only a run that ablated each head has.
    pub fn measures(&self, name: &str) -> bool {
        self.importance.is_some() || !IMPORTANCE_FIGURES.contains(&name)
    }

    /// The flat table written by `--csv`: one row per layer/head figure.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("layer,head,figure,mean,std,ci95_lo,ci95_hi,n\n");
        let mut row = |layer: Option<usize>, head: Option<usize>, name: &str, s: &Summary| {
            let cell = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let index = |v: Option<usize>| v.map_or(String::new(), |v| v.to_string());
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{}\n",
                index(layer),
                index(head),
                name,
                cell(s.mean),
                cell(s.std),
                cell(s.ci95.map(|c| c[0])),
                cell(s.ci95.map(|c| c[1])),
                s.n
            ));
        };
        row(None, None, "tokens_per_window", &self.tokens_per_window);
        row(
            None,
            None,
            "baseline_same_sentence_fraction",
            &self.baseline_same_sentence_fraction,
        );
        for layer in &self.layers {
            for (name, summary) in layer.figures() {
                row(Some(layer.layer), None, name, &summary);
            }
            for head in &layer.heads {
                for (name, summary) in head.figures() {
                    if self.measures(name) {
                        row(Some(layer.layer), Some(head.head), name, &summary);
                    }
                }
                // Each role's share of the windows (§9), as `role_<name>`,
                // and by N′ as `role_vw_<name>`.
                for (prefix, roles) in [("role", &head.roles), ("role_vw", &head.roles_vw)] {
                    for (role, summary) in &roles.fractions {
                        let name = format!("{prefix}_{}", role.as_str());
                        row(Some(layer.layer), Some(head.head), &name, summary);
                    }
                }
            }
        }
        out
    }
}
