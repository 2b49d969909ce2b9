//! The documents the command line writes as JSON (ANALYSIS.md §6): what
//! `headscope analyze --json` writes ([`AnalysisReport`]: every figure of
//! the analysis, and beside them what the input stage did to the text that
//! the figures depend on — which sentences, longer than a window, were cut
//! into pieces and analysed as sentences, §1), and what `compare --json`
//! writes ([`ComparisonReport`]: the same document for each of the two
//! models, with how they compare), and for a decoder what `analyze
//! --logit-lens` and `generate --json` add ([`DecoderReport`]).
//!
//! Here rather than in [`crate::comparison`], which stays pure and below
//! the input stage.

use crate::analysis::Analysis;
use crate::comparison::{depth, Alignment, Comparison, HeadMatching, Side, SpecialisationRow};
use crate::input::SplitSentence;
use crate::predictions::LogitLens;
use serde::Serialize;

/// The figures of one window and the sentences its input cut.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AnalysisReport<'a> {
    #[serde(flatten)]
    pub analysis: &'a Analysis,
    /// The sentences of the text longer than a window, each cut into
    /// pieces, with the pieces this window holds; empty when none was.
    pub sentences_split: &'a [SplitSentence],
}

/// `analyze --json` with what a decoder predicts: `analyze --logit-lens`
/// adds the logit lens, `generate --json` the ids of the prompt and of its
/// continuation (the analysis covering both).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DecoderReport<'a> {
    #[serde(flatten)]
    pub report: AnalysisReport<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_ids: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_ids: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logit_lens: Option<&'a LogitLens>,
}

/// One model as `compare --json` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport<'a> {
    pub name: &'a str,
    pub layers: usize,
    pub heads: usize,
    /// Depth of each layer, layer / (L − 1): the x of the view's curves.
    pub depth: Vec<f64>,
    /// The tokens of this model's input, as its tokenizer cut them.
    pub token_texts: &'a [String],
    /// The whole analysis, exactly as `analyze --json` writes it: the
    /// per-layer figures and every head's, and the sentences cut into
    /// pieces.
    pub analysis: AnalysisReport<'a>,
}

impl<'a> ModelReport<'a> {
    /// The model `name`'s side of a comparison, whose input cut the
    /// sentences `sentences_split`.
    pub fn new(name: &'a str, side: Side<'a>, sentences_split: &'a [SplitSentence]) -> Self {
        let layers = side.analysis.layers.len();
        ModelReport {
            name,
            layers,
            heads: side.analysis.layers.first().map_or(0, |l| l.heads.len()),
            depth: (0..layers).map(|l| depth(l, layers)).collect(),
            token_texts: &side.tokens.token_texts,
            analysis: AnalysisReport {
                analysis: side.analysis,
                sentences_split,
            },
        }
    }
}

/// The document `headscope compare --json` writes.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonReport<'a> {
    pub model_a: ModelReport<'a>,
    pub model_b: ModelReport<'a>,
    pub alignment: &'a Alignment,
    pub specialisation: &'a [SpecialisationRow],
    pub head_matching: &'a HeadMatching,
}

impl<'a> ComparisonReport<'a> {
    pub fn new(a: ModelReport<'a>, b: ModelReport<'a>, comparison: &'a Comparison) -> Self {
        ComparisonReport {
            model_a: a,
            model_b: b,
            alignment: &comparison.alignment,
            specialisation: &comparison.specialisation,
            head_matching: &comparison.head_matching,
        }
    }
}
