//! Segmentation from attention (ANALYSIS.md §5): each content token goes to
//! the `[SEP]` its head-averaged attention is largest on, unless the two
//! largest tie, and is right when that separator closes its own sentence;
//! and, without that knife edge, the share of its separator attention that
//! goes to its own sentence's `[SEP]`.
//! The app's Separators view assigns tokens with the same function.
//! A causal model has none: its tokens cannot attend to the end of their
//! own sentence (ANALYSIS.md §8).

use super::{fraction, Document};

/// Where segmentation (ANALYSIS.md §5) puts one content token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeparatorChoice {
    /// The index (among the separators) of the `[SEP]` attended to most.
    Separator(usize),
    /// The two largest separator attentions are within 1e-4 of each other,
    /// relative to the larger: an argmax would pick by float noise.
    Undecided,
}

/// Relative gap under which the top two separator attentions tie.
pub const SEGMENTATION_TIE: f32 = 1e-4;

/// Assigns a content token to a separator from `sums`, its attention to
/// each `[SEP]` summed in f32 over the layer's `heads` in head order; the
/// head average is taken in f32 as numpy's float32 `mean(axis=0)` does.
/// The first separator wins among exact equals (which are undecided anyway).
/// `None` without separators.
pub fn choose_separator(sums: &[f32], heads: usize) -> Option<SeparatorChoice> {
    let h = heads as f32;
    let mut means = sums.iter().map(|&sum| sum / h);
    // Attention is never negative, so 0 is a safe runner-up to start from;
    // with one separator it stays 0, as in the reference.
    let (mut best, mut top, mut runner_up) = (0, means.next()?, 0.0f32);
    for (s, mean) in means.enumerate() {
        if mean > top {
            (best, top, runner_up) = (s + 1, mean, top);
        } else if mean > runner_up {
            runner_up = mean;
        }
    }
    Some(if top - runner_up <= SEGMENTATION_TIE * top {
        SeparatorChoice::Undecided
    } else {
        SeparatorChoice::Separator(best)
    })
}

/// A layer's segmentation figures.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segmentation {
    pub(super) accuracy: f64,
    pub(super) undecided: f64,
    /// `None` when no content token attends to any separator.
    pub(super) share: Option<f64>,
    pub(super) share_chance: f64,
}

/// Each content token goes to the `[SEP]` it attends to most (head-averaged
/// attention, see [`choose_separator`]) and is right when that separator
/// closes its own sentence; undecided tokens are not right.
pub(super) fn segmentation(
    doc: &Document,
    separator_sums: &[f32],
    heads: usize,
) -> Option<Segmentation> {
    let separators = doc.separators.len();
    if doc.tokens.causal || doc.content.is_empty() || separators == 0 || heads == 0 {
        return None;
    }
    let (mut correct, mut undecided) = (0, 0);
    let (mut share_sum, mut shared) = (0.0f64, 0usize);
    for (&i, sums) in doc
        .content
        .iter()
        .zip(separator_sums.chunks_exact(separators))
    {
        // The head average cancels in the ratio.
        let total: f64 = sums.iter().map(|&x| f64::from(x)).sum();
        if total > 0.0 {
            let own: f64 = doc
                .separators
                .iter()
                .zip(sums)
                .filter(|&(&s, _)| doc.same_sentence(s, i))
                .map(|(_, &x)| f64::from(x))
                .sum();
            share_sum += own / total;
            shared += 1;
        }
        match choose_separator(sums, heads) {
            Some(SeparatorChoice::Separator(s)) => {
                correct += usize::from(doc.same_sentence(doc.separators[s], i));
            }
            Some(SeparatorChoice::Undecided) => undecided += 1,
            None => {}
        }
    }
    Some(Segmentation {
        accuracy: fraction(correct, doc.content.len())?,
        undecided: fraction(undecided, doc.content.len())?,
        share: (shared > 0).then(|| share_sum / shared as f64),
        share_chance: 1.0 / separators as f64,
    })
}

/// One head's attention on the separators, from P or from N′: each content
/// row's value on every separator (content × separators; 0 on those it
/// does not see) and, per position, the sum over the separators it sees.
///
/// A causal model has no segmentation (§8: a token does not see the end of
/// its own sentence), so its columns, which grow with T × sentences (at
/// 32,768 tokens of prose 220 MB a head), are not made: only the sums.
#[derive(Debug, Clone, Default)]
pub(super) struct SeparatorColumns {
    pub(super) columns: Vec<f32>,
    pub(super) row_sums: Vec<f64>,
}

impl SeparatorColumns {
    pub(super) fn new(doc: &Document) -> Self {
        Self {
            columns: if doc.tokens.causal {
                Vec::new()
            } else {
                vec![0.0; doc.content.len() * doc.separators.len()]
            },
            row_sums: vec![0.0; doc.t],
        }
    }

    /// Adds the next head's, element by element.
    fn add(&mut self, head: &Self) {
        for (sum, &p) in self.columns.iter_mut().zip(&head.columns) {
            *sum += p;
        }
        for (sum, &p) in self.row_sums.iter_mut().zip(&head.row_sums) {
            *sum += p;
        }
    }
}

/// What a head's passes over P (and N′, where it has value norms) give its
/// layer's separator sums.
#[derive(Debug, Clone)]
pub(super) struct HeadSeparators {
    pub(super) plain: SeparatorColumns,
    pub(super) weighted: Option<SeparatorColumns>,
}

/// A layer's heads' [`HeadSeparators`] added up in head order (f32 sums, as
/// [`choose_separator`] takes them), whatever order the heads come in: one
/// that comes before those ahead of it waits, so that a layer holds the
/// columns of the heads in flight, not of all its heads (at 8,192 tokens
/// and 481 sentences a head's are 16 MB).
#[derive(Debug, Default)]
pub(super) struct LayerSeparators {
    added: usize,
    waiting: Vec<Option<HeadSeparators>>,
    plain: Option<SeparatorColumns>,
    /// `None` once a head came without N′.
    weighted: Option<SeparatorColumns>,
}

impl LayerSeparators {
    /// Takes head `head`'s, and every waiting head after it that is next.
    pub(super) fn add(&mut self, head: usize, separators: HeadSeparators) {
        super::keep_for_head(&mut self.waiting, head, separators);
        while let Some(next) = self.waiting.get_mut(self.added).and_then(Option::take) {
            match &mut self.plain {
                None => {
                    self.plain = Some(next.plain);
                    self.weighted = next.weighted;
                }
                Some(plain) => {
                    plain.add(&next.plain);
                    self.weighted = match (self.weighted.take(), &next.weighted) {
                        (Some(mut sums), Some(head)) => {
                            sums.add(head);
                            Some(sums)
                        }
                        _ => None,
                    };
                }
            }
            self.added += 1;
        }
    }

    /// The sums of the layer's `heads` heads over P (content ×
    /// separators) for its segmentation, and over N′ where every head had
    /// it; `None` where no head came with P. Panics if a head is missing.
    pub(super) fn finish(
        self,
        heads: usize,
    ) -> (Option<SeparatorColumns>, Option<SeparatorColumns>) {
        if self.plain.is_none() {
            return (None, None);
        }
        assert_eq!(self.added, heads, "every head's separators must be added");
        (self.plain, self.weighted)
    }
}

/// Where a layer's head-averaged attention (P, or N′) on the separators
/// puts each token: what the app's Separators view draws, made while the
/// analysis holds the sums, so that no layer's columns are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeparatorTokens {
    /// Per position i: the mean over the layer's heads of Σ over the
    /// `[SEP]` keys i sees of P[i, ·].
    pub attention: Vec<f64>,
    /// Per position: a content token's [`choose_separator`]; `None` for
    /// special tokens, without separators, and everywhere for a causal
    /// model (no segmentation).
    pub assigned: Vec<Option<SeparatorChoice>>,
}

impl SeparatorTokens {
    pub(super) fn new(doc: &Document, sums: &SeparatorColumns, heads: usize) -> Self {
        let n = doc.separators.len();
        let mut assigned = vec![None; doc.t];
        for (&i, row) in doc.content.iter().zip(sums.columns.chunks_exact(n.max(1))) {
            assigned[i] = choose_separator(row, heads);
        }
        Self {
            attention: sums
                .row_sums
                .iter()
                .map(|&sum| sum / heads.max(1) as f64)
                .collect(),
            assigned,
        }
    }
}
