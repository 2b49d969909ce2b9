//! The statistics of a corpus run, pure: the figures of ANALYSIS.md §4 and
//! §5 of many windows added up into a mean, a sample standard deviation and
//! a 95% confidence interval per figure, plus each head's category counts
//! and most frequent focus token.
//!
//! - [`Aggregate`]: a running count, mean and sum of squared deviations of
//!   one figure (missing values left out);
//! - [`Summary`]: what a report shows of it (mean, sample std, 95%
//!   interval, n), with [`t_quantile_975`] for the interval;
//! - [`CorpusStats`]: adds up whole [`Analysis`] values, one per window,
//!   each window weighted equally.
//!
//! No model, no tensors, no GUI: [`crate::corpus`] feeds it the windows it
//! runs, and anything else (the app, the tests) can feed it analyses from
//! anywhere.

use crate::analysis::{Analysis, Category};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
pub const HEAD_FIGURES: [&str; 7] = [
    "mean_distance",
    "same_sentence_fraction",
    "repetition_fraction",
    "focus_share",
    "local_fraction",
    "separator_attention",
    "sink_attention",
];

/// The per-layer figures of ANALYSIS.md §5, in table order.
pub const LAYER_FIGURES: [&str; 7] = [
    "mean_distance",
    "same_sentence_fraction",
    "separator_attention",
    "focus_uniqueness",
    "segmentation_accuracy",
    "segmentation_undecided",
    "sink_attention",
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
    pub sink_attention: Summary,
    pub categories: CategoryShares,
    pub focus_token: Option<FocusToken>,
}

impl HeadSummary {
    /// The figures with their names, in [`HEAD_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); 7] {
        [
            (HEAD_FIGURES[0], self.mean_distance),
            (HEAD_FIGURES[1], self.same_sentence_fraction),
            (HEAD_FIGURES[2], self.repetition_fraction),
            (HEAD_FIGURES[3], self.focus_share),
            (HEAD_FIGURES[4], self.local_fraction),
            (HEAD_FIGURES[5], self.separator_attention),
            (HEAD_FIGURES[6], self.sink_attention),
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
    pub segmentation_undecided: Summary,
    pub sink_attention: Summary,
    pub heads: Vec<HeadSummary>,
}

impl LayerSummary {
    /// The figures with their names, in [`LAYER_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); 7] {
        [
            (LAYER_FIGURES[0], self.mean_distance),
            (LAYER_FIGURES[1], self.same_sentence_fraction),
            (LAYER_FIGURES[2], self.separator_attention),
            (LAYER_FIGURES[3], self.focus_uniqueness),
            (LAYER_FIGURES[4], self.segmentation_accuracy),
            (LAYER_FIGURES[5], self.segmentation_undecided),
            (LAYER_FIGURES[6], self.sink_attention),
        ]
    }
}

#[derive(Debug, Clone, Default)]
struct HeadAggregate {
    figures: [Aggregate; HEAD_FIGURES.len()],
    categories: CategoryCounts,
    /// Focus token id → (windows, text).
    focus: BTreeMap<u32, (usize, Option<String>)>,
}

#[derive(Debug, Clone, Default)]
struct LayerAggregate {
    figures: [Aggregate; LAYER_FIGURES.len()],
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
            let values = layer.map_or([None; LAYER_FIGURES.len()], |l| {
                [
                    l.mean_distance,
                    l.same_sentence_fraction,
                    l.separator_attention,
                    l.focus_uniqueness,
                    l.segmentation_accuracy,
                    l.segmentation_undecided,
                    l.sink_attention,
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
                let values = head.map_or([None; HEAD_FIGURES.len()], |f| {
                    [
                        f.mean_distance,
                        f.same_sentence_fraction,
                        f.repetition_fraction,
                        f.focus_share,
                        f.local_fraction,
                        f.separator_attention,
                        f.sink_attention,
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
                let [mean_distance, same_sentence_fraction, separator_attention, focus_uniqueness, segmentation_accuracy, segmentation_undecided, sink_attention] =
                    layer.figures.map(|a| a.summary());
                LayerSummary {
                    layer: index,
                    mean_distance,
                    same_sentence_fraction,
                    separator_attention,
                    focus_uniqueness,
                    segmentation_accuracy,
                    segmentation_undecided,
                    sink_attention,
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
    let [mean_distance, same_sentence_fraction, repetition_fraction, focus_share, local_fraction, separator_attention, sink_attention] =
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
        sink_attention,
        categories: CategoryShares {
            counts: head.categories,
            fractions: head.categories.fractions(),
            most_common: head.categories.most_common(),
        },
        focus_token,
    }
}
