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
