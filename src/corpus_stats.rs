//! The statistics of a corpus run, pure: the figures of ANALYSIS.md §4 and
//! §5 of many windows added up into a mean, a sample standard deviation and
//! a 95% confidence interval per figure, plus each head's category counts
//! and most frequent focus token.
//!
//! - [`Aggregate`]: a running count, mean and sum of squared deviations of
//!   one figure (missing values left out), which merges with another's by
//!   Chan et al.'s pairwise update, so that shards of a corpus add up to
//!   the whole;
//! - [`Summary`]: what a report shows of it (mean, sample std, 95%
//!   interval, n), with [`t_quantile_975`] (statrs) for the interval,
//!   kept within the values the figure can take ([`Bounds`]): a fraction's
//!   by Wilson's score interval, a non-negative figure's by its bound;
//! - [`CorpusStats`]: adds up whole [`Analysis`] values, one per window,
//!   each window weighted equally; its state serialises and merges.
//!
//! No model, no tensors, no GUI: [`crate::corpus`] feeds it the windows it
//! runs, and anything else (the app, the tests) can feed it analyses from
//! anywhere.

use crate::analysis::{Analysis, Category, Role};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The 0.975 quantile of Student's t with `df` degrees of freedom (statrs'
/// inverse CDF, through the regularized incomplete beta function). `None`
/// for df = 0, where the interval is undefined.
pub fn t_quantile_975(df: usize) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let t = StudentsT::new(0.0, 1.0, df as f64).ok()?;
    Some(t.inverse_cdf(0.975))
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
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
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

    /// Adds everything `other` counted, as if its values had been pushed
    /// here: Chan, Golub and LeVeque's pairwise update of the count, mean
    /// and sum of squared deviations, exact up to rounding.
    pub fn merge(&mut self, other: &Aggregate) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        self.mean += delta * (nb / n as f64);
        self.m2 += other.m2 + delta * delta * (na * nb / n as f64);
        self.n = n;
    }

    /// Values counted so far.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Mean, sample std, 95% interval within `bounds` and n.
    pub fn summary_within(&self, bounds: Bounds) -> Summary {
        let mut summary = self.summary();
        if let (Some(mean), Some(std)) = (summary.mean, summary.std) {
            summary.ci95 = summary.ci95.map(|interval| match bounds {
                Bounds::Fraction => wilson_interval(mean, std, self.n),
                // The true mean is ≥ 0, so cutting the interval there
                // covers it exactly as often as before.
                Bounds::NonNegative => [interval[0].max(0.0), interval[1]],
                Bounds::Unbounded => interval,
            });
        }
        summary
    }

    /// Mean, sample std, 95% t-interval (unbounded) and n.
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

/// The values a figure can take, which its interval keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// A share, in [0, 1].
    Fraction,
    /// A distance or a count, ≥ 0.
    NonNegative,
    /// Any real number (a change of the loss): the t-interval as it is.
    Unbounded,
}

/// Wilson's score interval for the mean `mean` of `n` values in [0, 1]
/// with sample standard deviation `std`, at the t quantile of n − 1
/// degrees of freedom: the interval for a proportion with the effective
/// sample size n·p(1 − p)/std² whose binomial standard error equals the
/// observed one (n − 1 for 0/1 values). Near the middle it is the
/// t-interval; near 0 or 1 it bends inside [0, 1] instead of crossing
/// them, as a mean over a few windows of a rare share would.
pub fn wilson_interval(mean: f64, std: f64, n: usize) -> [f64; 2] {
    let p = mean.clamp(0.0, 1.0);
    let binomial = p * (1.0 - p);
    let Some(z) = t_quantile_975(n.saturating_sub(1)) else {
        return [p, p];
    };
    if std <= 0.0 || binomial <= 0.0 {
        return [p, p];
    }
    let n_eff = n as f64 * binomial / (std * std);
    let z2n = z * z / n_eff;
    let centre = (p + z2n / 2.0) / (1.0 + z2n);
    let half = z / (1.0 + z2n) * (binomial / n_eff + z2n / (4.0 * n_eff)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
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

    /// Adds another tally's counts.
    pub fn merge(&mut self, other: &CategoryCounts) {
        self.repetition += other.repetition;
        self.focus += other.focus;
        self.local += other.local;
        self.mixed += other.mixed;
        self.none += other.none;
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

/// The per-head figures of ANALYSIS.md §4, then the role scores of §9,
/// then the value-weighted twins of those made from P (§9), then the
/// head's importance (§9: the effect of ablating it alone, where the run
/// ablated each head), in table order.
pub const HEAD_FIGURES: [&str; 19] = [
    "mean_distance",
    "same_sentence_fraction",
    "repetition_fraction",
    "focus_share",
    "local_fraction",
    "separator_attention",
    "sink_attention",
    "previous_token_score",
    "duplicate_token_score",
    "induction_score",
    "self_score",
    "separator_attention_vw",
    "sink_attention_vw",
    "previous_token_score_vw",
    "duplicate_token_score_vw",
    "induction_score_vw",
    "self_score_vw",
    "importance_delta_loss",
    "importance_output_change",
];

/// Where the importance figures sit in [`HEAD_FIGURES`]: [`CorpusStats::add`]
/// leaves them out, [`CorpusStats::add_importance`] fills them in.
const IMPORTANCE_DELTA_LOSS: usize = 17;
const IMPORTANCE_OUTPUT_CHANGE: usize = 18;

/// The head figures a run measures only when it ablates each head.
pub const IMPORTANCE_FIGURES: [&str; 2] = [
    HEAD_FIGURES[IMPORTANCE_DELTA_LOSS],
    HEAD_FIGURES[IMPORTANCE_OUTPUT_CHANGE],
];

/// The values each of [`HEAD_FIGURES`] can take: a distance, shares, then
/// a change of the loss (either sign) and 1 − cos (≥ 0).
const HEAD_BOUNDS: [Bounds; HEAD_FIGURES.len()] = {
    let mut bounds = [Bounds::Fraction; HEAD_FIGURES.len()];
    bounds[0] = Bounds::NonNegative;
    bounds[IMPORTANCE_DELTA_LOSS] = Bounds::Unbounded;
    bounds[IMPORTANCE_OUTPUT_CHANGE] = Bounds::NonNegative;
    bounds
};

/// The per-layer figures of ANALYSIS.md §5, then the value-weighted twins
/// of those made from P (§9), in table order.
pub const LAYER_FIGURES: [&str; 14] = [
    "mean_distance",
    "same_sentence_fraction",
    "separator_attention",
    "focus_uniqueness",
    "segmentation_accuracy",
    "segmentation_undecided",
    "segmentation_share",
    "segmentation_share_chance",
    "sink_attention",
    "separator_attention_vw",
    "segmentation_accuracy_vw",
    "segmentation_undecided_vw",
    "segmentation_share_vw",
    "sink_attention_vw",
];

/// The values each of [`LAYER_FIGURES`] can take: a distance, then shares.
const LAYER_BOUNDS: [Bounds; LAYER_FIGURES.len()] = {
    let mut bounds = [Bounds::Fraction; LAYER_FIGURES.len()];
    bounds[0] = Bounds::NonNegative;
    bounds
};

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
    pub previous_token_score: Summary,
    pub duplicate_token_score: Summary,
    pub induction_score: Summary,
    pub self_score: Summary,
    pub separator_attention_vw: Summary,
    pub sink_attention_vw: Summary,
    pub previous_token_score_vw: Summary,
    pub duplicate_token_score_vw: Summary,
    pub induction_score_vw: Summary,
    pub self_score_vw: Summary,
    /// The mean change of the next-token loss when the head alone is
    /// ablated (a causal decoder), and of 1 − cos of the last hidden
    /// states (every model); n = 0 unless the run ablated each head.
    pub importance_delta_loss: Summary,
    pub importance_output_change: Summary,
    pub categories: CategoryShares,
    /// How often the head took each role of §9 over the windows, by P and
    /// by the value-weighted N′.
    pub roles: RoleShares,
    pub roles_vw: RoleShares,
    pub focus_token: Option<FocusToken>,
}

impl HeadSummary {
    /// The figures with their names, in [`HEAD_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); HEAD_FIGURES.len()] {
        [
            (HEAD_FIGURES[0], self.mean_distance),
            (HEAD_FIGURES[1], self.same_sentence_fraction),
            (HEAD_FIGURES[2], self.repetition_fraction),
            (HEAD_FIGURES[3], self.focus_share),
            (HEAD_FIGURES[4], self.local_fraction),
            (HEAD_FIGURES[5], self.separator_attention),
            (HEAD_FIGURES[6], self.sink_attention),
            (HEAD_FIGURES[7], self.previous_token_score),
            (HEAD_FIGURES[8], self.duplicate_token_score),
            (HEAD_FIGURES[9], self.induction_score),
            (HEAD_FIGURES[10], self.self_score),
            (HEAD_FIGURES[11], self.separator_attention_vw),
            (HEAD_FIGURES[12], self.sink_attention_vw),
            (HEAD_FIGURES[13], self.previous_token_score_vw),
            (HEAD_FIGURES[14], self.duplicate_token_score_vw),
            (HEAD_FIGURES[15], self.induction_score_vw),
            (HEAD_FIGURES[16], self.self_score_vw),
            (HEAD_FIGURES[17], self.importance_delta_loss),
            (HEAD_FIGURES[18], self.importance_output_change),
        ]
    }
}

/// The share of `count` windows in `windows`, as the summary of a 0/1
/// figure (its interval Wilson's, as for every share).
fn share_summary(count: usize, windows: usize) -> Summary {
    let values = (0..windows).map(|window| Some(if window < count { 1.0 } else { 0.0 }));
    Aggregate::from_values(values).summary_within(Bounds::Fraction)
}

/// Windows in which a head took each role (ANALYSIS.md §9), by the role's
/// JSON name, and those without one (a head with no content query token).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RoleCounts {
    pub windows: BTreeMap<Role, usize>,
    pub none: usize,
}

impl RoleCounts {
    fn push(&mut self, role: Option<Role>) {
        match role {
            Some(role) => *self.windows.entry(role).or_default() += 1,
            None => self.none += 1,
        }
    }

    fn merge(&mut self, other: &RoleCounts) {
        for (&role, &count) in &other.windows {
            *self.windows.entry(role).or_default() += count;
        }
        self.none += other.none;
    }

    fn total(&self) -> usize {
        self.windows.values().sum::<usize>() + self.none
    }
}

/// A head's roles over the corpus: the counts, each role's share of the
/// windows with its 95% Wilson interval, and the most frequent role (ties
/// to the first in [`Role::ALL`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoleShares {
    pub counts: RoleCounts,
    pub fractions: BTreeMap<Role, Summary>,
    pub most_common: Option<Role>,
}

impl RoleShares {
    fn of(counts: &RoleCounts) -> Self {
        let windows = counts.total();
        let fractions = Role::ALL
            .iter()
            .filter(|_| windows > 0)
            .map(|&role| {
                let count = counts.windows.get(&role).copied().unwrap_or(0);
                (role, share_summary(count, windows))
            })
            .collect();
        let most_common = Role::ALL
            .iter()
            .map(|&role| (role, counts.windows.get(&role).copied().unwrap_or(0)))
            .filter(|&(_, count)| count > 0)
            .fold(None::<(Role, usize)>, |best, (role, count)| match best {
                Some((_, most)) if most >= count => best,
                _ => Some((role, count)),
            })
            .map(|(role, _)| role);
        Self {
            counts: counts.clone(),
            fractions,
            most_common,
        }
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
    pub segmentation_share: Summary,
    pub segmentation_share_chance: Summary,
    pub sink_attention: Summary,
    pub separator_attention_vw: Summary,
    pub segmentation_accuracy_vw: Summary,
    pub segmentation_undecided_vw: Summary,
    pub segmentation_share_vw: Summary,
    pub sink_attention_vw: Summary,
    pub heads: Vec<HeadSummary>,
}

impl LayerSummary {
    /// The figures with their names, in [`LAYER_FIGURES`] order.
    pub fn figures(&self) -> [(&'static str, Summary); LAYER_FIGURES.len()] {
        [
            (LAYER_FIGURES[0], self.mean_distance),
            (LAYER_FIGURES[1], self.same_sentence_fraction),
            (LAYER_FIGURES[2], self.separator_attention),
            (LAYER_FIGURES[3], self.focus_uniqueness),
            (LAYER_FIGURES[4], self.segmentation_accuracy),
            (LAYER_FIGURES[5], self.segmentation_undecided),
            (LAYER_FIGURES[6], self.segmentation_share),
            (LAYER_FIGURES[7], self.segmentation_share_chance),
            (LAYER_FIGURES[8], self.sink_attention),
            (LAYER_FIGURES[9], self.separator_attention_vw),
            (LAYER_FIGURES[10], self.segmentation_accuracy_vw),
            (LAYER_FIGURES[11], self.segmentation_undecided_vw),
            (LAYER_FIGURES[12], self.segmentation_share_vw),
            (LAYER_FIGURES[13], self.sink_attention_vw),
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct HeadAggregate {
    figures: [Aggregate; HEAD_FIGURES.len()],
    categories: CategoryCounts,
    roles: RoleCounts,
    roles_vw: RoleCounts,
    /// Focus token id → (windows, text).
    focus: BTreeMap<u32, (usize, Option<String>)>,
}

impl HeadAggregate {
    /// A head first seen after `windows` windows: it had no category and
    /// no role in them.
    fn missing_in(windows: usize) -> Self {
        Self {
            categories: CategoryCounts {
                none: windows,
                ..Default::default()
            },
            roles: RoleCounts {
                none: windows,
                ..Default::default()
            },
            roles_vw: RoleCounts {
                none: windows,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct LayerAggregate {
    figures: [Aggregate; LAYER_FIGURES.len()],
    heads: Vec<HeadAggregate>,
}

/// Adds up the figures of many windows' [`Analysis`], each window weighted
/// equally. Pure: the app can feed it analyses from anywhere. Its state
/// serialises exactly (counts, means and sums of squared deviations, the
/// category and focus counts), so that the stats of shards merge
/// ([`CorpusStats::merge`]) into those of the whole.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
                    l.segmentation_share,
                    l.segmentation_share_chance,
                    l.sink_attention,
                    l.separator_attention_vw,
                    l.segmentation_accuracy_vw,
                    l.segmentation_undecided_vw,
                    l.segmentation_share_vw,
                    l.sink_attention_vw,
                ]
            });
            for (figure, value) in aggregate.figures.iter_mut().zip(values) {
                figure.push(value);
            }
            let heads = layer.map_or(&[][..], |l| &l.heads[..]);
            if aggregate.heads.len() < heads.len() {
                aggregate
                    .heads
                    .resize_with(heads.len(), || HeadAggregate::missing_in(before));
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
                        f.previous_token_score,
                        f.duplicate_token_score,
                        f.induction_score,
                        f.self_score,
                        f.separator_attention_vw,
                        f.sink_attention_vw,
                        f.previous_token_score_vw,
                        f.duplicate_token_score_vw,
                        f.induction_score_vw,
                        f.self_score_vw,
                        // Filled in by `add_importance`.
                        None,
                        None,
                    ]
                });
                for (figure, value) in head_aggregate.figures.iter_mut().zip(values) {
                    figure.push(value);
                }
                head_aggregate
                    .categories
                    .push(head.and_then(|f| f.category));
                head_aggregate.roles.push(head.and_then(|f| f.role));
                head_aggregate.roles_vw.push(head.and_then(|f| f.role_vw));
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

    /// Adds the importance of each head (ANALYSIS.md §9) in the window
    /// [`CorpusStats::add`] added last: layer-major grids of `heads` heads
    /// a layer, `delta_loss` for a model with a next-token loss.
    pub fn add_importance(
        &mut self,
        heads: usize,
        delta_loss: Option<&[f64]>,
        output_change: &[f64],
    ) {
        let grids = [
            (IMPORTANCE_DELTA_LOSS, delta_loss),
            (IMPORTANCE_OUTPUT_CHANGE, Some(output_change)),
        ];
        for (figure, grid) in grids {
            for (index, &value) in grid.into_iter().flatten().enumerate() {
                let (layer, head) = (index / heads.max(1), index % heads.max(1));
                if let Some(aggregate) = self
                    .layers
                    .get_mut(layer)
                    .and_then(|l| l.heads.get_mut(head))
                {
                    aggregate.figures[figure].push(Some(value));
                }
            }
        }
    }

    /// Adds every window `other` counted, as if they had been added here
    /// after this one's: the figures by [`Aggregate::merge`], the category
    /// and focus-token counts by addition. A layer or head one side lacks
    /// counts as missing in that side's windows (as in [`CorpusStats::add`]).
    pub fn merge(&mut self, other: &CorpusStats) {
        let (before, theirs) = (self.windows, other.windows);
        self.windows += other.windows;
        self.tokens.merge(&other.tokens);
        self.baseline.merge(&other.baseline);
        let layers = self.layers.len().max(other.layers.len());
        self.layers.resize_with(layers, LayerAggregate::default);
        for (index, layer) in self.layers.iter_mut().enumerate() {
            let empty = LayerAggregate::default();
            let theirs_layer = other.layers.get(index).unwrap_or(&empty);
            for (figure, other_figure) in layer.figures.iter_mut().zip(&theirs_layer.figures) {
                figure.merge(other_figure);
            }
            let heads = layer.heads.len().max(theirs_layer.heads.len());
            layer
                .heads
                .resize_with(heads, || HeadAggregate::missing_in(before));
            for (h, head) in layer.heads.iter_mut().enumerate() {
                match theirs_layer.heads.get(h) {
                    Some(other_head) => {
                        for (figure, other_figure) in
                            head.figures.iter_mut().zip(&other_head.figures)
                        {
                            figure.merge(other_figure);
                        }
                        head.categories.merge(&other_head.categories);
                        head.roles.merge(&other_head.roles);
                        head.roles_vw.merge(&other_head.roles_vw);
                        for (&id, (count, token)) in &other_head.focus {
                            let entry = head.focus.entry(id).or_default();
                            entry.0 += count;
                            if entry.1.is_none() {
                                entry.1 = token.clone();
                            }
                        }
                    }
                    None => {
                        head.categories.none += theirs;
                        head.roles.none += theirs;
                        head.roles_vw.none += theirs;
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
        self.tokens.summary_within(Bounds::NonNegative)
    }

    /// The chance same-sentence fraction per window.
    pub fn baseline_same_sentence_fraction(&self) -> Summary {
        self.baseline.summary_within(Bounds::Fraction)
    }

    /// Every layer's and head's summary.
    pub fn layers(&self) -> Vec<LayerSummary> {
        self.layers
            .iter()
            .enumerate()
            .map(|(index, layer)| {
                let [mean_distance, same_sentence_fraction, separator_attention, focus_uniqueness, segmentation_accuracy, segmentation_undecided, segmentation_share, segmentation_share_chance, sink_attention, separator_attention_vw, segmentation_accuracy_vw, segmentation_undecided_vw, segmentation_share_vw, sink_attention_vw] =
                    within(&layer.figures, LAYER_BOUNDS);
                LayerSummary {
                    layer: index,
                    mean_distance,
                    same_sentence_fraction,
                    separator_attention,
                    focus_uniqueness,
                    segmentation_accuracy,
                    segmentation_undecided,
                    segmentation_share,
                    segmentation_share_chance,
                    sink_attention,
                    separator_attention_vw,
                    segmentation_accuracy_vw,
                    segmentation_undecided_vw,
                    segmentation_share_vw,
                    sink_attention_vw,
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

/// Each aggregate's summary within its figure's bounds.
fn within<const N: usize>(aggregates: &[Aggregate; N], bounds: [Bounds; N]) -> [Summary; N] {
    std::array::from_fn(|i| aggregates[i].summary_within(bounds[i]))
}

fn head_summary(index: usize, head: &HeadAggregate) -> HeadSummary {
    let [mean_distance, same_sentence_fraction, repetition_fraction, focus_share, local_fraction, separator_attention, sink_attention, previous_token_score, duplicate_token_score, induction_score, self_score, separator_attention_vw, sink_attention_vw, previous_token_score_vw, duplicate_token_score_vw, induction_score_vw, self_score_vw, importance_delta_loss, importance_output_change] =
        within(&head.figures, HEAD_BOUNDS);
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
        previous_token_score,
        duplicate_token_score,
        induction_score,
        self_score,
        separator_attention_vw,
        sink_attention_vw,
        previous_token_score_vw,
        duplicate_token_score_vw,
        induction_score_vw,
        self_score_vw,
        importance_delta_loss,
        importance_output_change,
        categories: CategoryShares {
            counts: head.categories,
            fractions: head.categories.fractions(),
            most_common: head.categories.most_common(),
        },
        roles: RoleShares::of(&head.roles),
        roles_vw: RoleShares::of(&head.roles_vw),
        focus_token,
    }
}
