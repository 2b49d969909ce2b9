//! What the analysis reports (ANALYSIS.md §4–§6): per head, per layer and
//! for the whole input, serialised as `headscope analyze --json` writes it.

use serde::{Deserialize, Serialize};

use super::options::AnalysisOptions;
use super::segmentation::SeparatorTokens;
use crate::captures::HeadId;

/// What a head's selected pairs mostly are (ANALYSIS.md §4).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Repetition,
    Focus,
    Local,
    Mixed,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Repetition,
        Category::Focus,
        Category::Local,
        Category::Mixed,
    ];

    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Repetition => "repetition",
            Category::Focus => "focus",
            Category::Local => "local",
            Category::Mixed => "mixed",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of head a head is, by the largest of its role scores
/// (ANALYSIS.md §9): the score must be at least [`ROLE_FLOOR`] and exceed
/// the second largest by [`ROLE_MARGIN`], else the head is `Mixed`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    PreviousToken,
    DuplicateToken,
    Induction,
    Sink,
    Separator,
    #[serde(rename = "self")]
    SelfAttention,
    Mixed,
}

/// The least score a role needs (ANALYSIS.md §9).
pub const ROLE_FLOOR: f64 = 0.4;
/// How far a role's score must exceed the second largest (ANALYSIS.md §9).
pub const ROLE_MARGIN: f64 = 0.1;

impl Role {
    pub const ALL: [Role; 7] = [
        Role::PreviousToken,
        Role::DuplicateToken,
        Role::Induction,
        Role::Sink,
        Role::Separator,
        Role::SelfAttention,
        Role::Mixed,
    ];

    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::PreviousToken => "previous_token",
            Role::DuplicateToken => "duplicate_token",
            Role::Induction => "induction",
            Role::Sink => "sink",
            Role::Separator => "separator",
            Role::SelfAttention => "self",
            Role::Mixed => "mixed",
        }
    }

    /// The role of a head with these scores, each `None` where undefined
    /// (an undefined score competes with none). `None` when every score
    /// is: a head without P has no role.
    pub fn of_scores(scores: [(Role, Option<f64>); 6]) -> Option<Role> {
        let mut defined = scores
            .iter()
            .filter_map(|&(role, score)| Some((role, score?)));
        let (mut best, mut best_score) = defined.next()?;
        let mut second = f64::NEG_INFINITY;
        for (role, score) in defined {
            if score > best_score {
                second = best_score;
                (best, best_score) = (role, score);
            } else if score > second {
                second = score;
            }
        }
        // An exact tie leaves the margin 0: mixed, whichever came first.
        Some(
            if best_score >= ROLE_FLOOR && best_score - second >= ROLE_MARGIN {
                best
            } else {
                Role::Mixed
            },
        )
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The classic per-head attention statistics of Clark et al. (2019), "What
/// does BERT look at?": each a mean over the query rows of the head's P.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(default)]
pub struct AttentionStats {
    /// −Σ p ln p (nats), 0·ln 0 = 0.
    pub entropy: f64,
    /// Attention to `[CLS]` keys.
    pub cls: f64,
    /// Attention to `[SEP]` keys.
    pub sep: f64,
    /// Attention to punctuation content tokens.
    pub punctuation: f64,
    /// P[i, i].
    pub self_attention: f64,
    /// P[i, i − 1], over the rows that have a previous token.
    pub previous: f64,
    /// P[i, i + 1], over the rows that have a next token.
    pub next: f64,
}

/// The figures of one head (ANALYSIS.md §4); `None` where undefined.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct HeadFigures {
    pub mean_distance: Option<f64>,
    pub same_sentence_fraction: Option<f64>,
    pub repetition_fraction: Option<f64>,
    pub focus_token_id: Option<u32>,
    /// The focus token's text.
    pub focus_token: Option<String>,
    pub focus_share: Option<f64>,
    pub local_fraction: Option<f64>,
    pub separator_attention: Option<f64>,
    /// Mean over content query tokens of the attention on the first
    /// position (`[CLS]`): the "attention sink".
    pub sink_attention: Option<f64>,
    pub category: Option<Category>,
    /// Mean over content queries i with a content token at i − 1 of
    /// P[i, i − 1] (ANALYSIS.md §9).
    pub previous_token_score: Option<f64>,
    /// Mean over content queries with an earlier occurrence of their token
    /// of the attention on those occurrences; `None` when no token repeats.
    pub duplicate_token_score: Option<f64>,
    /// Mean over content queries i of the attention on the tokens that
    /// followed earlier occurrences of token i; `None` when none has one.
    pub induction_score: Option<f64>,
    /// Mean over content queries of P[i, i].
    pub self_score: Option<f64>,
    /// The largest of the role scores, sink and separator attention
    /// included, or `mixed` (ANALYSIS.md §9); `None` without P.
    pub role: Option<Role>,
    /// The value-weighted twins (ANALYSIS.md §9) of the figures above made
    /// from P, made from N′; `None` where the input came without the
    /// heads' value norms.
    pub separator_attention_vw: Option<f64>,
    pub sink_attention_vw: Option<f64>,
    pub previous_token_score_vw: Option<f64>,
    pub duplicate_token_score_vw: Option<f64>,
    pub induction_score_vw: Option<f64>,
    pub self_score_vw: Option<f64>,
    pub role_vw: Option<Role>,
    /// `None` when the input came without its attention P (a capture file
    /// may hold the head outputs O alone).
    pub attention_stats: Option<AttentionStats>,
    /// The strongest selected pairs as positions `(i, j)`, `i < j`: the k
    /// best in rank order (largest S first) for the top-fraction rule, every
    /// selected pair in rank order for above-mean, each row's k best in pair
    /// order for top-k per row. For highlighting; not exported. The figures
    /// weigh every selected pair, the tied ones too ([`TieShare`]). As
    /// one u32 a pair ([`SelectedPairs`]): at 8,192 tokens a model of 270
    /// heads selects 90 million pairs.
    #[serde(skip)]
    pub selected_pairs: SelectedPairs,
    /// How the top-fraction rule's last places were shared (ANALYSIS.md
    /// §3); `None` for the other rules. Not exported.
    #[serde(skip)]
    pub ties: Option<TieShare>,
}

/// The tie rule of ANALYSIS.md §3 for one head: `above` pairs are selected
/// outright (weight 1, the first `above` of `selected_pairs`), and `tied`
/// pairs within ε of the k-th value share the `k − above` remaining places,
/// `weight` each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TieShare {
    pub above: usize,
    pub tied: usize,
    pub weight: f64,
}

/// The figures of one layer (ANALYSIS.md §5).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct LayerFigures {
    pub mean_distance: Option<f64>,
    pub same_sentence_fraction: Option<f64>,
    pub separator_attention: Option<f64>,
    pub focus_uniqueness: Option<f64>,
    pub segmentation_accuracy: Option<f64>,
    /// Share of content tokens whose two largest `[SEP]` attentions tie
    /// (within 1e-4 relative): assigned to no separator.
    pub segmentation_undecided: Option<f64>,
    /// Mean over content tokens of the share of their `[SEP]` attention
    /// (head-averaged) that goes to the `[SEP]` closing their own sentence.
    pub segmentation_share: Option<f64>,
    /// What an even spread over the `[SEP]`s scores: mean of 1 / (number of
    /// `[SEP]`s) over content tokens.
    pub segmentation_share_chance: Option<f64>,
    /// Mean over heads of each head's `sink_attention`.
    pub sink_attention: Option<f64>,
    /// The value-weighted twins (ANALYSIS.md §9), from N′.
    pub separator_attention_vw: Option<f64>,
    pub segmentation_accuracy_vw: Option<f64>,
    pub segmentation_undecided_vw: Option<f64>,
    pub segmentation_share_vw: Option<f64>,
    pub sink_attention_vw: Option<f64>,
    /// Counts of j − i over the pooled selected pairs, each pair counted
    /// with its weight (§3); index = distance, length T (index 0 is always 0).
    pub distance_histogram: Vec<f64>,
    /// Where the head-averaged P (and N′) on the separators puts each
    /// token: what the Separators view draws (`None` without P). Not
    /// exported.
    #[serde(skip)]
    pub separator_tokens: Option<SeparatorTokens>,
    #[serde(skip)]
    pub separator_tokens_vw: Option<SeparatorTokens>,
    pub heads: Vec<HeadFigures>,
}

impl LayerFigures {
    /// (distinct focus token ids, heads that have a focus token): the
    /// numerator and denominator of `focus_uniqueness`.
    pub fn focus_counts(&self) -> (usize, usize) {
        focus_counts(&self.heads)
    }
}

pub(super) fn focus_counts(heads: &[HeadFigures]) -> (usize, usize) {
    let mut focus: Vec<u32> = heads.iter().filter_map(|h| h.focus_token_id).collect();
    let with_focus = focus.len();
    focus.sort_unstable();
    focus.dedup();
    (focus.len(), with_focus)
}

/// Everything `headscope analyze` reports for one input (ANALYSIS.md §6).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Analysis {
    pub tokens: usize,
    pub content_tokens: usize,
    /// N: candidate pairs per head.
    pub pairs: usize,
    /// k of the top-fraction rule; `None` for the other rules.
    pub selected_per_head: Option<usize>,
    /// Same-sentence share over all candidate pairs: what chance gives.
    pub baseline_same_sentence_fraction: Option<f64>,
    pub input_ids: Vec<u32>,
    /// Filled in by the caller from the input stage; `analyze` leaves 0.
    pub sentences_analysed: usize,
    pub sentences_left_out: usize,
    pub tokens_left_out: usize,
    pub layers: Vec<LayerFigures>,
    /// L×L Pearson correlation of the head-averaged, per-head z-scored S over
    /// the candidate pairs; `None` where undefined.
    pub layer_correlation: Vec<Vec<Option<f64>>>,
    /// The options the figures were made with (what makes a head's
    /// selected pairs again where they were not kept). Not exported: the
    /// report's caller writes them.
    #[serde(skip)]
    pub options: AnalysisOptions,
}

impl Analysis {
    /// The figures of one head, if the analysis has it.
    pub fn head(&self, id: HeadId) -> Option<&HeadFigures> {
        self.layers.get(id.layer)?.heads.get(id.head)
    }
}

/// A head's selected pairs (i, j), i < j, in their order, each held in one
/// u32: its place j(j − 1)/2 + i among the cells below the diagonal, which
/// fits while T(T − 1)/2 does (the analysis' bound on its candidates).
///
/// A head that selects more than [`SelectedPairs::KEPT_AT_MOST`] keeps only
/// their number ([`SelectedPairs::counted`]): at 32,768 tokens a 24 × 14
/// model selects 1% of 537 million pairs per head, 7 GB in all, for views
/// that show one head at a time; [`super::head_selected_pairs`] makes one
/// head's again.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SelectedPairs {
    cells: Vec<u32>,
    count: usize,
}

impl SelectedPairs {
    /// Pairs a head keeps (1 MB): every head's up to 7,240 tokens under the
    /// default top 1%.
    pub const KEPT_AT_MOST: usize = 1 << 18;

    /// `count` pairs, not kept.
    pub fn counted(count: usize) -> Self {
        Self {
            cells: Vec::new(),
            count,
        }
    }

    /// How many pairs the head selected, kept or not.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether the pairs themselves are held (else only their number).
    pub fn is_kept(&self) -> bool {
        self.cells.len() == self.count
    }

    /// The pairs as positions (i, j), in order; none where not kept.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u32, u32)> + '_ {
        self.cells.iter().map(|&cell| Self::pair(cell))
    }

    fn cell((i, j): (u32, u32)) -> u32 {
        assert!(i < j, "a selected pair has i < j");
        let (i, j) = (u64::from(i), u64::from(j));
        u32::try_from(j * (j - 1) / 2 + i).expect("at most 2³² cells below the diagonal")
    }

    fn pair(cell: u32) -> (u32, u32) {
        let cell = u64::from(cell);
        // The largest j with j(j − 1)/2 ≤ cell: the root's estimate, then
        // exact integer steps (it is off by at most one).
        let mut j = ((1.0 + (1.0 + 8.0 * cell as f64).sqrt()) / 2.0) as u64;
        while j * (j - 1) / 2 > cell {
            j -= 1;
        }
        while (j + 1) * j / 2 <= cell {
            j += 1;
        }
        ((cell - j * (j - 1) / 2) as u32, j as u32)
    }
}

impl FromIterator<(u32, u32)> for SelectedPairs {
    fn from_iter<I: IntoIterator<Item = (u32, u32)>>(pairs: I) -> Self {
        let mut cells: Vec<u32> = pairs.into_iter().map(Self::cell).collect();
        // Collected in place from a Vec of pairs, it would keep that Vec's
        // bytes: twice what it holds.
        cells.shrink_to_fit();
        Self {
            count: cells.len(),
            cells,
        }
    }
}

impl std::fmt::Debug for SelectedPairs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq<Vec<(u32, u32)>> for SelectedPairs {
    fn eq(&self, pairs: &Vec<(u32, u32)>) -> bool {
        self.is_kept() && self.len() == pairs.len() && self.iter().eq(pairs.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::SelectedPairs;

    #[test]
    fn selected_pairs_come_back_as_given() {
        let far = 92_000u32;
        let pairs = vec![
            (0, 1),
            (0, 2),
            (1, 2),
            (5, 9),
            (0, far),
            (far - 1, far),
            (7, 3000),
        ];
        let held: SelectedPairs = pairs.iter().copied().collect();
        assert_eq!(held, pairs);
        assert_eq!(held.iter().collect::<Vec<_>>(), pairs);
        // Every cell of a small triangle, in order.
        let all: Vec<(u32, u32)> = (1..300).flat_map(|j| (0..j).map(move |i| (i, j))).collect();
        assert_eq!(all.iter().copied().collect::<SelectedPairs>(), all);
    }
}
