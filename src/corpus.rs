//! Corpus statistics: the figures of ANALYSIS.md §4 and §5 averaged over
//! many texts, with their spread and 95% confidence intervals.
//!
//! One text says little about a head; a folder of texts says whether a
//! head's behaviour is stable. Every `.txt` file found under the given paths
//! (folders are searched recursively; files named explicitly are taken
//! whatever their extension; the list is sorted and de-duplicated so a run
//! is deterministic) is cut into sentence-aligned windows that fit the
//! model: window k starts at the sentence after the last one window k − 1
//! analysed, until every sentence is covered. Each window runs through
//! [`pipeline::run`], exactly what `headscope analyze` runs, and every
//! window counts once, whatever its length.
//!
//! The module has two halves:
//!
//! - the pure maths: [`Aggregate`] (a running mean and sample variance of
//!   one figure, missing values left out), [`Summary`] (mean, sample std,
//!   95% interval, n), [`t_quantile_975`], and [`CorpusStats`], which adds
//!   up whole [`Analysis`] values; no model, no tensors, no GUI;
//! - the runner: [`find_text_files`], [`run_files`] and [`run`], which read
//!   the files, run the model window by window, report progress through a
//!   callback and stop between windows (or inside one, between layers) when
//!   the cancel flag is set. A cancelled run still returns everything done
//!   so far, marked `partial`.
//!
//! Files that give no text (binary, empty or blank, unreadable) are skipped
//! and listed with the reason; a file that is not UTF-8 is read as Latin-1
//! and listed under `warnings`. A sentence too long for the model on its own
//! is left out of the windows and counted, with a warning.
//!
//! # JSON (`headscope corpus --json`)
//!
//! ```text
//! {
//!   "format": "headscope-corpus/1",
//!   "model": "all-MiniLM-L6-v2",
//!   "input_mode": "document",            // or "one_sentence_per_line", "plain"
//!   "options": { ... },                  // AnalysisOptions, as in the app's settings
//!   "partial": false,                    // true when cancelled before the end
//!   "files_found": 52,                   // files considered (skipped ones included)
//!   "files": 50,                         // files with at least one window analysed
//!   "windows": 61,                       // model inputs analysed
//!   "tokens": 9876,                      // their tokens, [CLS] and [SEP] included
//!   "content_tokens": 9000,
//!   "sentences": 700,                    // sentences analysed
//!   "sentences_left_out": 0,             // sentences too long for the model alone
//!   "bytes": 123456,                     // size of the files analysed
//!   "elapsed_seconds": 12.5,
//!   "skipped": [{"path": "a/b.txt", "reason": "binary file, not text"}],
//!   "warnings": [{"path": "a/c.txt", "warning": "not UTF-8: read it as Latin-1 ..."}],
//!   "documents": [{"path": "a/d.txt", "bytes": 812, "sentences": 9,
//!                  "windows": 1, "tokens": 190, "sentences_left_out": 0,
//!                  "complete": true}],
//!   "tokens_per_window": SUMMARY,
//!   "baseline_same_sentence_fraction": SUMMARY,
//!   "layers": [                          // L objects
//!     { "layer": 0,
//!       "mean_distance": SUMMARY, "same_sentence_fraction": SUMMARY,
//!       "separator_attention": SUMMARY, "focus_uniqueness": SUMMARY,
//!       "segmentation_accuracy": SUMMARY,
//!       "heads": [                       // H objects
//!         { "head": 0,
//!           "mean_distance": SUMMARY, "same_sentence_fraction": SUMMARY,
//!           "repetition_fraction": SUMMARY, "focus_share": SUMMARY,
//!           "local_fraction": SUMMARY, "separator_attention": SUMMARY,
//!           "categories": {
//!             "counts":    {"repetition": 3, "focus": 50, "local": 8, "mixed": 0, "none": 0},
//!             "fractions": {"repetition": 0.05, "focus": 0.82, "local": 0.13, "mixed": 0.0, "none": 0.0},
//!             "most_common": "focus" },
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
//! for the document-level ones; undefined numbers are empty cells.

use crate::analysis::{Analysis, AnalysisOptions, Category};
use crate::input::{InputError, InputMode};
use crate::model::Model;
use crate::pipeline::{self, InputOptions, RunError};
use crate::textfile::{read_text_file, TextFileError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The value of the `format` field, bumped when the layout changes.
pub const FORMAT: &str = "headscope-corpus/1";

// ---------------------------------------------------------------------------
// The maths

/// t(0.975, df) for df = 1..=30 (two-sided 95% critical values).
const T_975: [f64; 30] = [
    12.706_204_736,
    4.302_652_730,
    3.182_446_305,
    2.776_445_105,
    2.570_581_836,
    2.446_911_851,
    2.364_624_252,
    2.306_004_135,
    2.262_157_163,
    2.228_138_852,
    2.200_985_160,
    2.178_812_830,
    2.160_368_656,
    2.144_786_688,
    2.131_449_546,
    2.119_905_299,
    2.109_815_578,
    2.100_922_040,
    2.093_024_054,
    2.085_963_447,
    2.079_613_845,
    2.073_873_068,
    2.068_657_610,
    2.063_898_562,
    2.059_538_553,
    2.055_529_439,
    2.051_830_516,
    2.048_407_142,
    2.045_229_642,
    2.042_272_456,
];

/// The 0.975 quantile of Student's t with `df` degrees of freedom: exact
/// (to 9 digits) from a table up to 30, then the Cornish–Fisher expansion
/// around the normal quantile, whose error there is below 1e-5 and shrinks
/// with df. `None` for df = 0, where the interval is undefined.
pub fn t_quantile_975(df: usize) -> Option<f64> {
    match df {
        0 => None,
        1..=30 => Some(T_975[df - 1]),
        _ => {
            const Z: f64 = 1.959_963_984_540_054;
            let n = df as f64;
            let (z3, z5, z7) = (Z.powi(3), Z.powi(5), Z.powi(7));
            Some(
                Z + (z3 + Z) / (4.0 * n)
                    + (5.0 * z5 + 16.0 * z3 + 3.0 * Z) / (96.0 * n * n)
                    + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * Z) / (384.0 * n * n * n),
            )
        }
    }
}

/// Mean, spread and 95% confidence interval of one figure over windows.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// `None` when no window defines the figure.
    pub mean: Option<f64>,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub std: Option<f64>,
    /// mean ± t(0.975, n − 1)·std/√n; `None` when n < 2.
    pub ci95: Option<[f64; 2]>,
    /// Windows in which the figure is defined.
    pub n: usize,
}

/// A running mean and variance (Welford's update, stable for any number of
/// windows) of one figure. Missing values (`None`, and NaN or infinities,
/// which the analysis never produces but a caller might) are not counted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Aggregate {
    n: usize,
    mean: f64,
    /// Sum of squared deviations from the mean.
    m2: f64,
}

impl Aggregate {
    /// An aggregate of the given values, missing ones left out.
    pub fn from_values(values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let mut aggregate = Self::default();
        for value in values {
            aggregate.push(value);
        }
        aggregate
    }

    /// Adds one window's value of the figure.
    pub fn push(&mut self, value: Option<f64>) {
        let Some(x) = value.filter(|x| x.is_finite()) else {
            return;
        };
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// Values counted so far.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Mean, sample std, 95% interval and n.
    pub fn summary(&self) -> Summary {
        if self.n == 0 {
            return Summary::default();
        }
        let std = if self.n == 1 {
            0.0
        } else {
            // Rounding can leave m2 a hair below 0 for equal values.
            (self.m2.max(0.0) / (self.n - 1) as f64).sqrt()
        };
        let ci95 = t_quantile_975(self.n - 1).map(|t| {
            let half = t * std / (self.n as f64).sqrt();
            [self.mean - half, self.mean + half]
        });
        Summary {
            mean: Some(self.mean),
            std: Some(std),
            ci95,
            n: self.n,
        }
    }
}

/// How often a head fell in each category (ANALYSIS.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CategoryCounts {
    pub repetition: usize,
    pub focus: usize,
    pub local: usize,
    pub mixed: usize,
    /// Windows where the head had no category (no selected pairs).
    pub none: usize,
}

impl CategoryCounts {
    /// Counts one window's category.
    pub fn push(&mut self, category: Option<Category>) {
        match category {
            Some(Category::Repetition) => self.repetition += 1,
            Some(Category::Focus) => self.focus += 1,
            Some(Category::Local) => self.local += 1,
            Some(Category::Mixed) => self.mixed += 1,
            None => self.none += 1,
        }
    }

    /// Windows counted.
    pub fn total(&self) -> usize {
        self.repetition + self.focus + self.local + self.mixed + self.none
    }

    /// The count of one category.
    pub fn get(&self, category: Category) -> usize {
        match category {
            Category::Repetition => self.repetition,
            Category::Focus => self.focus,
            Category::Local => self.local,
            Category::Mixed => self.mixed,
        }
    }

    /// The category seen most often (ties in [`Category::ALL`] order);
    /// `None` when no window had one.
    pub fn most_common(&self) -> Option<Category> {
        let mut best: Option<(Category, usize)> = None;
        for category in Category::ALL {
            let count = self.get(category);
            if count > 0 && best.is_none_or(|(_, b)| count > b) {
                best = Some((category, count));
            }
        }
        best.map(|(category, _)| category)
    }

    /// Each count divided by the windows counted; `None` before any window.
    pub fn fractions(&self) -> Option<CategoryFractions> {
        let total = self.total();
        (total > 0).then(|| {
            let share = |count: usize| count as f64 / total as f64;
            CategoryFractions {
                repetition: share(self.repetition),
                focus: share(self.focus),
                local: share(self.local),
                mixed: share(self.mixed),
                none: share(self.none),
            }
        })
    }
}

/// [`CategoryCounts`] as shares of the windows.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CategoryFractions {
    pub repetition: f64,
    pub focus: f64,
    pub local: f64,
    pub mixed: f64,
    pub none: f64,
}

/// A head's categories over the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CategoryShares {
    pub counts: CategoryCounts,
    pub fractions: Option<CategoryFractions>,
    pub most_common: Option<Category>,
}

/// A head's most frequent focus token over the windows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FocusToken {
    pub id: u32,
    /// The token's text, as the tokenizer spells it.
    pub token: Option<String>,
    /// Windows in which it was the head's focus token.
    pub windows: usize,
    /// `windows` divided by all windows of the head.
    pub fraction: f64,
}

/// The per-head figures of ANALYSIS.md §4, in table order.
pub const HEAD_FIGURES: [&str; 6] = [
    "mean_distance",
    "same_sentence_fraction",
    "repetition_fraction",
    "focus_share",
    "local_fraction",
    "separator_attention",
];

/// The per-layer figures of ANALYSIS.md §5, in table order.
pub const LAYER_FIGURES: [&str; 5] = [
    "mean_distance",
    "same_sentence_fraction",
    "separator_attention",
    "focus_uniqueness",
    "segmentation_accuracy",
];

/// One head's figures over the corpus.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HeadSummary {
    pub head: usize,
    pub mean_distance: Summary,
    pub same_sentence_fraction: Summary,
    pub repetition_fraction: Summary,
    pub focus_share: Summary,
    pub local_fraction: Summary,
    pub separator_attention: Summary,
    pub categories: CategoryShares,
    pub focus_token: Option<FocusToken>,
}

impl HeadSummary {
    /// The figures with their names, in [`HEAD_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); 6] {
        [
            (HEAD_FIGURES[0], self.mean_distance),
            (HEAD_FIGURES[1], self.same_sentence_fraction),
            (HEAD_FIGURES[2], self.repetition_fraction),
            (HEAD_FIGURES[3], self.focus_share),
            (HEAD_FIGURES[4], self.local_fraction),
            (HEAD_FIGURES[5], self.separator_attention),
        ]
    }
}

/// One layer's figures over the corpus, and its heads'.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LayerSummary {
    pub layer: usize,
    pub mean_distance: Summary,
    pub same_sentence_fraction: Summary,
    pub separator_attention: Summary,
    pub focus_uniqueness: Summary,
    pub segmentation_accuracy: Summary,
    pub heads: Vec<HeadSummary>,
}

impl LayerSummary {
    /// The figures with their names, in [`LAYER_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); 5] {
        [
            (LAYER_FIGURES[0], self.mean_distance),
            (LAYER_FIGURES[1], self.same_sentence_fraction),
            (LAYER_FIGURES[2], self.separator_attention),
            (LAYER_FIGURES[3], self.focus_uniqueness),
            (LAYER_FIGURES[4], self.segmentation_accuracy),
        ]
    }
}

#[derive(Debug, Clone, Default)]
struct HeadAggregate {
    figures: [Aggregate; 6],
    categories: CategoryCounts,
    /// Focus token id → (windows, text).
    focus: BTreeMap<u32, (usize, Option<String>)>,
}

#[derive(Debug, Clone, Default)]
struct LayerAggregate {
    figures: [Aggregate; 5],
    heads: Vec<HeadAggregate>,
}

/// Adds up the figures of many windows' [`Analysis`], each window weighted
/// equally. Pure: the app can feed it analyses from anywhere.
#[derive(Debug, Clone, Default)]
pub struct CorpusStats {
    windows: usize,
    tokens: Aggregate,
    baseline: Aggregate,
    layers: Vec<LayerAggregate>,
}

impl CorpusStats {
    /// Adds one window. Layers and heads a window lacks (it never happens
    /// with one model) count as missing for that window, not as zeros.
    pub fn add(&mut self, analysis: &Analysis) {
        // Heads and layers first seen now were missing in earlier windows:
        // their category counts must still cover every window.
        let before = self.windows;
        self.windows += 1;
        self.tokens.push(Some(analysis.tokens as f64));
        self.baseline.push(analysis.baseline_same_sentence_fraction);
        if self.layers.len() < analysis.layers.len() {
            self.layers
                .resize_with(analysis.layers.len(), LayerAggregate::default);
        }
        for (index, aggregate) in self.layers.iter_mut().enumerate() {
            let layer = analysis.layers.get(index);
            let values = layer.map_or([None; 5], |l| {
                [
                    l.mean_distance,
                    l.same_sentence_fraction,
                    l.separator_attention,
                    l.focus_uniqueness,
                    l.segmentation_accuracy,
                ]
            });
            for (figure, value) in aggregate.figures.iter_mut().zip(values) {
                figure.push(value);
            }
            let heads = layer.map_or(&[][..], |l| &l.heads[..]);
            if aggregate.heads.len() < heads.len() {
                aggregate.heads.resize_with(heads.len(), || HeadAggregate {
                    categories: CategoryCounts {
                        none: before,
                        ..Default::default()
                    },
                    ..Default::default()
                });
            }
            for (h, head_aggregate) in aggregate.heads.iter_mut().enumerate() {
                let head = heads.get(h);
                let values = head.map_or([None; 6], |f| {
                    [
                        f.mean_distance,
                        f.same_sentence_fraction,
                        f.repetition_fraction,
                        f.focus_share,
                        f.local_fraction,
                        f.separator_attention,
                    ]
                });
                for (figure, value) in head_aggregate.figures.iter_mut().zip(values) {
                    figure.push(value);
                }
                head_aggregate
                    .categories
                    .push(head.and_then(|f| f.category));
                if let Some(id) = head.and_then(|f| f.focus_token_id) {
                    let entry = head_aggregate.focus.entry(id).or_default();
                    entry.0 += 1;
                    if entry.1.is_none() {
                        entry.1 = head.and_then(|f| f.focus_token.clone());
                    }
                }
            }
        }
    }

    /// Windows added.
    pub fn windows(&self) -> usize {
        self.windows
    }

    /// Tokens per window.
    pub fn tokens_per_window(&self) -> Summary {
        self.tokens.summary()
    }

    /// The chance same-sentence fraction per window.
    pub fn baseline_same_sentence_fraction(&self) -> Summary {
        self.baseline.summary()
    }

    /// Every layer's and head's summary.
    pub fn layers(&self) -> Vec<LayerSummary> {
        self.layers
            .iter()
            .enumerate()
            .map(|(index, layer)| {
                let [mean_distance, same_sentence_fraction, separator_attention, focus_uniqueness, segmentation_accuracy] =
                    layer.figures.map(|a| a.summary());
                LayerSummary {
                    layer: index,
                    mean_distance,
                    same_sentence_fraction,
                    separator_attention,
                    focus_uniqueness,
                    segmentation_accuracy,
                    heads: layer
                        .heads
                        .iter()
                        .enumerate()
                        .map(|(h, head)| head_summary(h, head))
                        .collect(),
                }
            })
            .collect()
    }
}

fn head_summary(index: usize, head: &HeadAggregate) -> HeadSummary {
    let [mean_distance, same_sentence_fraction, repetition_fraction, focus_share, local_fraction, separator_attention] =
        head.figures.map(|a| a.summary());
    let windows = head.categories.total();
    // BTreeMap order makes the smallest id win ties.
    let focus_token = head
        .focus
        .iter()
        .fold(
            None::<(&u32, &(usize, Option<String>))>,
            |best, entry| match best {
                Some(b) if b.1 .0 >= entry.1 .0 => Some(b),
                _ => Some(entry),
            },
        )
        .map(|(&id, (count, token))| FocusToken {
            id,
            token: token.clone(),
            windows: *count,
            fraction: if windows == 0 {
                0.0
            } else {
                *count as f64 / windows as f64
            },
        });
    HeadSummary {
        head: index,
        mean_distance,
        same_sentence_fraction,
        repetition_fraction,
        focus_share,
        local_fraction,
        separator_attention,
        categories: CategoryShares {
            counts: head.categories,
            fractions: head.categories.fractions(),
            most_common: head.categories.most_common(),
        },
        focus_token,
    }
}

// ---------------------------------------------------------------------------
// The report

/// A file that gave no text, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// Something to know about a file that was analysed anyway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWarning {
    pub path: String,
    pub warning: String,
}

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DocumentSummary {
    pub path: String,
    pub bytes: u64,
    /// Sentences in the whole file.
    pub sentences: usize,
    pub windows: usize,
    /// Tokens of its windows, [CLS] and [SEP] included.
    pub tokens: usize,
    /// Sentences too long for the model on their own.
    pub sentences_left_out: usize,
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
    pub partial: bool,
    pub files_found: usize,
    pub files: usize,
    pub windows: usize,
    pub tokens: usize,
    pub content_tokens: usize,
    pub sentences: usize,
    pub sentences_left_out: usize,
    pub bytes: u64,
    pub elapsed_seconds: f64,
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
                    row(Some(layer.layer), Some(head.head), name, &summary);
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Finding the files

/// A text file to analyse and its size on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundFile {
    pub path: PathBuf,
    pub bytes: u64,
}

/// The files a corpus run will read, and the paths that could not be searched.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileList {
    /// Sorted by path, each file once.
    pub files: Vec<FoundFile>,
    /// Named paths that do not exist, folders that could not be listed.
    pub skipped: Vec<SkippedFile>,
}

/// Why a corpus run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    #[error("no paths given: name text files or folders holding .txt files")]
    NoPaths,
    #[error("no .txt file found in {searched}{}", problems(.skipped))]
    NoTextFiles {
        searched: String,
        skipped: Vec<SkippedFile>,
    },
}

fn problems(skipped: &[SkippedFile]) -> String {
    skipped
        .iter()
        .map(|s| format!("; {}: {}", s.path, s.reason))
        .collect()
}

fn is_txt(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("txt"))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        _ => crate::textfile::describe_io_error(e),
    }
}

/// Every `.txt` file (any case) under the folders among `paths`, searched
/// recursively (symbolic links followed, each folder visited once), plus the
/// files named directly whatever their extension. Sorted and de-duplicated
/// so that a run is the same on every machine. Fails only when nothing is
/// found.
pub fn find_text_files(paths: &[PathBuf]) -> Result<FileList, CorpusError> {
    if paths.is_empty() {
        return Err(CorpusError::NoPaths);
    }
    let mut list = FileList::default();
    let mut visited = HashSet::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, &mut visited, &mut list),
            Ok(m) => list.files.push(FoundFile {
                path: path.clone(),
                bytes: m.len(),
            }),
            Err(e) => list.skipped.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
        }
    }
    list.files.sort_by(|a, b| a.path.cmp(&b.path));
    // The same file reached twice (named and inside a named folder, or
    // through a link) is analysed once.
    let mut seen = HashSet::new();
    list.files
        .retain(|f| seen.insert(std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone())));
    if list.files.is_empty() {
        let searched = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CorpusError::NoTextFiles {
            searched,
            skipped: list.skipped,
        });
    }
    Ok(list)
}

fn walk(folder: &Path, visited: &mut HashSet<PathBuf>, list: &mut FileList) {
    let canonical = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    if !visited.insert(canonical) {
        return; // a link loop, or a folder named twice
    }
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            list.skipped.push(SkippedFile {
                path: folder.display().to_string(),
                reason: format!("cannot list the folder: {}", io_reason(&e)),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => walk(&path, visited, list),
            Ok(m) if is_txt(&path) => list.files.push(FoundFile {
                path,
                bytes: m.len(),
            }),
            Ok(_) => {}
            // A dangling link named .txt is worth reporting; other names are not ours.
            Err(e) if is_txt(&path) => list.skipped.push(SkippedFile {
                path: path.display().to_string(),
                reason: io_reason(&e),
            }),
            Err(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Running

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

    /// One line for a terminal, without a line ending (the CLI prints it
    /// after `\r` so it overwrites itself):
    /// `corpus  42% [########            ] 21/50 files, 37 windows, ETA 1m05s`.
    pub fn line(&self) -> String {
        const WIDTH: usize = 20;
        let fraction = self.fraction();
        let filled = ((fraction * WIDTH as f64).round() as usize).min(WIDTH);
        let eta = match self.eta() {
            Some(eta) => format!("ETA {}", format_duration(eta)),
            None => "ETA —".into(),
        };
        format!(
            "corpus {:>3.0}% [{}{}] {}/{} files, {} window{}, {}",
            fraction * 100.0,
            "#".repeat(filled),
            " ".repeat(WIDTH - filled),
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
        let mut first_sentence = 0;
        loop {
            if is_cancelled() {
                report.partial = true;
                break;
            }
            let input = InputOptions {
                mode: options.mode,
                first_sentence,
            };
            match pipeline::run(model, &text, &input, &options.analysis, &is_cancelled) {
                Ok(output) => {
                    let built = &output.input;
                    stats.add(&output.analysis);
                    document.windows += 1;
                    document.tokens += output.analysis.tokens;
                    document.sentences = built.sentence_spans.len();
                    report.tokens += output.analysis.tokens;
                    report.content_tokens += output.analysis.content_tokens;
                    report.sentences += built.sentences_analysed;
                    let next = built.first_sentence + built.sentences_analysed;
                    let end = next
                        .checked_sub(1)
                        .and_then(|last| built.sentence_spans.get(last))
                        .map_or(text.len(), |s| s.1);
                    on_event(progress(
                        &found.path,
                        index,
                        stats.windows(),
                        bytes_before + covered(end),
                    ));
                    // No progress would loop for ever; it cannot happen
                    // with a non-empty window, but guard anyway.
                    if next >= built.sentence_spans.len() || built.sentences_analysed == 0 {
                        document.complete = true;
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
                    let spans = crate::input::split_sentences(&text, options.mode);
                    document.sentences = spans.len();
                    first_sentence += 1;
                    if first_sentence >= spans.len() {
                        document.complete = true;
                        break;
                    }
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
