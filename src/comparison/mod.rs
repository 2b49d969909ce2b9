//! Two models on one text: how their heads compare (docs/COMPARE.md).
//!
//! Each model keeps its own tokenization of the text; [`alignment`] pairs
//! their content tokens through byte offsets, [`matching`] scores every
//! head of A against every head of B by linear CKA of their context
//! similarity over the aligned tokens, and this file adds what the
//! comparison view and `headscope compare --json` show beside it: the depth
//! of each layer on a common 0–1 scale and the specialisation of both
//! models side by side. The document `compare --json` writes is
//! [`crate::report::ComparisonReport`].
//!
//! Pure, like [`crate::analysis`]: std and serde only, no GUI, no tensors.

pub mod alignment;
pub mod matching;

use crate::analysis::{Analysis, Category, HeadFigures, Role};
use crate::captures::Captures;
use crate::tokens::TokenSequence;
use serde::{Deserialize, Serialize};

pub use alignment::{align, AlignedUnit, Alignment};
pub use matching::{linear_cka, match_heads, pooled_similarity, BestMatch, HeadMatching};

/// One model's side: its tokens, captures and figures.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub tokens: &'a TokenSequence,
    pub captures: &'a Captures,
    pub analysis: &'a Analysis,
}

/// What comparing two analyses of one text gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub alignment: Alignment,
    pub head_matching: HeadMatching,
    pub specialisation: Vec<SpecialisationRow>,
}

/// Aligns the two inputs, matches the heads and sums up both models'
/// specialisation.
pub fn compare(a: Side<'_>, b: Side<'_>) -> Comparison {
    let alignment = align(a.tokens, b.tokens);
    let head_matching = match_heads(
        a.captures,
        &alignment.a_groups(),
        b.captures,
        &alignment.b_groups(),
    );
    let mut specialisation = specialisation(a.analysis, b.analysis);
    specialisation.push(SpecialisationRow {
        figure: MATCHED_SAME_ROLE.to_string(),
        a: matched_same_role(a.analysis, &head_matching.best_for_a, b.analysis),
        b: matched_same_role(b.analysis, &head_matching.best_for_b, a.analysis),
    });
    Comparison {
        alignment,
        head_matching,
        specialisation,
    }
}

/// The specialisation row of [`matched_same_role`].
pub const MATCHED_SAME_ROLE: &str = "matched_same_role";

/// Of the heads of `own` that have a role (ANALYSIS.md §9) and a best
/// match in `other` (`best`, layer-major), the share whose match has the
/// same role: do the two models' matched heads do the same kind of work?
fn matched_same_role(own: &Analysis, best: &[Option<BestMatch>], other: &Analysis) -> Option<f64> {
    let role_of = |analysis: &Analysis, layer: usize, head: usize| {
        analysis.layers.get(layer)?.heads.get(head)?.role
    };
    let heads = own
        .layers
        .iter()
        .enumerate()
        .flat_map(|(layer, figures)| (0..figures.heads.len()).map(move |head| (layer, head)));
    let pairs: Vec<bool> = heads
        .zip(best)
        .filter_map(|((layer, head), best)| {
            let mine = role_of(own, layer, head)?;
            let theirs = role_of(other, best.as_ref()?.layer, best.as_ref()?.head)?;
            Some(mine == theirs)
        })
        .collect();
    let same = pairs.iter().filter(|&&same| same).count();
    (!pairs.is_empty()).then(|| same as f64 / pairs.len() as f64)
}

/// Depth of `layer` among `layers`: layer / (L − 1), so both models' first
/// layer is 0 and last is 1 (a one-layer model's only layer is 0).
pub fn depth(layer: usize, layers: usize) -> f64 {
    if layers <= 1 {
        0.0
    } else {
        layer as f64 / (layers - 1) as f64
    }
}

/// One row of the specialisation table: a figure over all heads of each
/// model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecialisationRow {
    /// The figure, as in ANALYSIS.md: `repetition` (share of the heads in
    /// that category), …, `mean_distance` (mean over the heads that have
    /// one), ….
    pub figure: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

/// Reads one per-head figure.
type HeadFigure = fn(&HeadFigures) -> Option<f64>;

/// The per-head figures averaged in the table, after the category and
/// role shares.
const AVERAGED: [(&str, HeadFigure); 11] = [
    ("mean_distance", |h| h.mean_distance),
    ("same_sentence_fraction", |h| h.same_sentence_fraction),
    ("repetition_fraction", |h| h.repetition_fraction),
    ("focus_share", |h| h.focus_share),
    ("local_fraction", |h| h.local_fraction),
    ("separator_attention", |h| h.separator_attention),
    ("sink_attention", |h| h.sink_attention),
    ("previous_token_score", |h| h.previous_token_score),
    ("duplicate_token_score", |h| h.duplicate_token_score),
    ("induction_score", |h| h.induction_score),
    ("self_score", |h| h.self_score),
];

fn heads(analysis: &Analysis) -> impl Iterator<Item = &HeadFigures> {
    analysis.layers.iter().flat_map(|l| l.heads.iter())
}

/// Share of all heads in `category` (`None` without heads).
fn category_share(analysis: &Analysis, category: Category) -> Option<f64> {
    let total = heads(analysis).count();
    let count = heads(analysis)
        .filter(|h| h.category == Some(category))
        .count();
    (total > 0).then(|| count as f64 / total as f64)
}

/// Share of all heads whose role (ANALYSIS.md §9) is `role`.
fn role_share(analysis: &Analysis, role: Role) -> Option<f64> {
    let total = heads(analysis).count();
    let count = heads(analysis).filter(|h| h.role == Some(role)).count();
    (total > 0).then(|| count as f64 / total as f64)
}

/// Mean of a figure over the heads where it is defined.
fn mean_over_heads(analysis: &Analysis, figure: HeadFigure) -> Option<f64> {
    let values: Vec<f64> = heads(analysis)
        .filter_map(figure)
        .filter(|v| v.is_finite())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The specialisation table: the share of heads in each category and in
/// each role (`role_<name>`), then the mean over heads of each per-head
/// figure, for A and B.
pub fn specialisation(a: &Analysis, b: &Analysis) -> Vec<SpecialisationRow> {
    let mut rows: Vec<SpecialisationRow> = Category::ALL
        .iter()
        .map(|&c| SpecialisationRow {
            figure: c.as_str().to_string(),
            a: category_share(a, c),
            b: category_share(b, c),
        })
        .collect();
    rows.extend(Role::ALL.iter().map(|&role| SpecialisationRow {
        figure: format!("role_{}", role.as_str()),
        a: role_share(a, role),
        b: role_share(b, role),
    }));
    rows.extend(AVERAGED.iter().map(|&(name, figure)| SpecialisationRow {
        figure: name.to_string(),
        a: mean_over_heads(a, figure),
        b: mean_over_heads(b, figure),
    }));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_runs_from_zero_to_one() {
        assert_eq!(depth(0, 6), 0.0);
        assert_eq!(depth(5, 6), 1.0);
        assert_eq!(depth(2, 5), 0.5);
        assert_eq!(depth(0, 1), 0.0);
    }
}
