//! Token alignment between two tokenizations of one text, through the
//! byte offsets of their tokens.
//!
//! Two tokenizers cut a text differently ("harbours" may be `harbour ##s`
//! for one and `harb ours` for the other), so a token of one model rarely
//! has exactly one partner in the other. The rule here pairs *stretches* of
//! text instead of tokens:
//!
//! - A **cut** is a byte offset at which a content token of A and a content
//!   token of B both end.
//! - **Aligned unit** k holds every content token of A, and every content
//!   token of B, whose end offset lies after cut k − 1 and at or before cut
//!   k. Each unit has at least one token of each model; where both
//!   tokenizers agree (the usual case for words) a unit is one token of
//!   each.
//! - Content tokens ending after the last cut (or without an offset) are
//!   left out, and listed as unaligned.
//!
//! Ends, not starts, define the cuts, because byte-level BPE tokenizers
//! count the space before a word into the token ("Ġcat" starts one byte
//! earlier than WordPiece's "cat") while both end where the word ends.
//! Comparing a tokenization with itself gives one unit per content token.

use crate::tokens::TokenSequence;
use serde::{Deserialize, Serialize};

/// One stretch of text covered alike by a run of A's content tokens and a
/// run of B's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlignedUnit {
    /// Byte range in the text: from the earliest start of its tokens to the
    /// cut that ends it.
    pub start: usize,
    pub end: usize,
    /// Positions in A's input, ascending.
    pub a_positions: Vec<usize>,
    /// Positions in B's input, ascending.
    pub b_positions: Vec<usize>,
}

/// The aligned units of two inputs, in text order, and what could not be
/// aligned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alignment {
    pub units: Vec<AlignedUnit>,
    /// Content positions of A in no unit.
    pub a_unaligned: Vec<usize>,
    /// Content positions of B in no unit.
    pub b_unaligned: Vec<usize>,
}

impl Alignment {
    /// Number of aligned units n: the rows and columns of the matrices the
    /// head matching compares.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Each unit's positions in A.
    pub fn a_groups(&self) -> Vec<Vec<usize>> {
        self.units.iter().map(|u| u.a_positions.clone()).collect()
    }

    /// Each unit's positions in B.
    pub fn b_groups(&self) -> Vec<Vec<usize>> {
        self.units.iter().map(|u| u.b_positions.clone()).collect()
    }
}

/// (position, start, end) of every content token with an offset.
fn content_spans(tokens: &TokenSequence) -> Vec<(usize, usize, usize)> {
    tokens
        .content_positions()
        .into_iter()
        .filter_map(|p| {
            let (s, e) = tokens.offsets.get(p).copied().flatten()?;
            Some((p, s, e))
        })
        .collect()
}

/// Aligns the content tokens of two inputs of the same text (see the
/// module documentation for the rule).
pub fn align(a: &TokenSequence, b: &TokenSequence) -> Alignment {
    let a_spans = content_spans(a);
    let b_spans = content_spans(b);
    let a_ends: std::collections::BTreeSet<usize> = a_spans.iter().map(|&(_, _, e)| e).collect();
    let cuts: Vec<usize> = b_spans
        .iter()
        .map(|&(_, _, e)| e)
        .filter(|e| a_ends.contains(e))
        .collect::<std::collections::BTreeSet<usize>>()
        .into_iter()
        .collect();
    let mut units: Vec<AlignedUnit> = cuts
        .iter()
        .map(|&end| AlignedUnit {
            start: end,
            end,
            a_positions: Vec::new(),
            b_positions: Vec::new(),
        })
        .collect();
    let mut unaligned = [Vec::new(), Vec::new()];
    for (side, spans) in [&a_spans, &b_spans].into_iter().enumerate() {
        for &(position, start, end) in spans {
            // The first cut at or after the token's end.
            let unit = cuts.partition_point(|&cut| cut < end);
            match units.get_mut(unit) {
                Some(unit) => {
                    unit.start = unit.start.min(start);
                    if side == 0 {
                        unit.a_positions.push(position);
                    } else {
                        unit.b_positions.push(position);
                    }
                }
                None => unaligned[side].push(position),
            }
        }
    }
    let [a_unaligned, b_unaligned] = unaligned;
    // (Every cut is an end of both sides, so no unit is empty; the filter
    // only guards against that invariant breaking.)
    units.retain(|u| !u.a_positions.is_empty() && !u.b_positions.is_empty());
    Alignment {
        units,
        a_unaligned,
        b_unaligned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sequence `[CLS] tokens… [SEP]` with the given byte spans.
    fn sequence(spans: &[(usize, usize)]) -> TokenSequence {
        let n = spans.len() + 2;
        let mut offsets = vec![None];
        offsets.extend(spans.iter().map(|&s| Some(s)));
        offsets.push(None);
        TokenSequence {
            input_ids: (0..n as u32).map(|i| i + 10).collect(),
            token_texts: vec!["t".into(); n],
            special: (0..n).map(|i| i == 0 || i == n - 1).collect(),
            sentence_ids: vec![Some(0); n],
            offsets,
            sep_id: 0,
            cls_id: 1,
            ..Default::default()
        }
    }

    #[test]
    fn identical_tokenizations_align_token_by_token() {
        let a = sequence(&[(0, 3), (4, 7), (7, 8)]);
        let alignment = align(&a, &a);
        assert_eq!(alignment.len(), 3);
        for (k, unit) in alignment.units.iter().enumerate() {
            assert_eq!(unit.a_positions, vec![k + 1]);
            assert_eq!(unit.b_positions, vec![k + 1]);
        }
        assert!(alignment.a_unaligned.is_empty() && alignment.b_unaligned.is_empty());
    }

    #[test]
    fn a_word_split_differently_becomes_one_unit() {
        // "harbours are": A = harbour|s are, B = harb|ours| are (with the space).
        let a = sequence(&[(0, 7), (7, 8), (9, 12)]);
        let b = sequence(&[(0, 4), (4, 8), (8, 12)]);
        let alignment = align(&a, &b);
        assert_eq!(alignment.len(), 2);
        assert_eq!(alignment.units[0].a_positions, vec![1, 2]);
        assert_eq!(alignment.units[0].b_positions, vec![1, 2]);
        assert_eq!((alignment.units[0].start, alignment.units[0].end), (0, 8));
        assert_eq!(alignment.units[1].a_positions, vec![3]);
        assert_eq!(alignment.units[1].b_positions, vec![3]);
        assert_eq!((alignment.units[1].start, alignment.units[1].end), (8, 12));
    }

    #[test]
    fn tokens_after_the_last_shared_end_are_unaligned() {
        // B stops early (a shorter window): A's last token has no partner.
        let a = sequence(&[(0, 3), (4, 7)]);
        let b = sequence(&[(0, 3)]);
        let alignment = align(&a, &b);
        assert_eq!(alignment.len(), 1);
        assert_eq!(alignment.a_unaligned, vec![2]);
        assert!(alignment.b_unaligned.is_empty());
    }
}
