//! Per-token arrays the study's views draw, derived from a result once per
//! result generation rather than every frame: the tokens as labels
//! ([`ReadableTokens`]) and the figures below.
//!
//! These are displays of the captured attention, not figures: every
//! figure on screen comes from the [`Analysis`](crate::analysis::Analysis)
//! the worker delivered. The one place where a display must agree with a
//! figure is the segmentation: each content token is assigned to the
//! `[SEP]` it attends to most with the head-averaged attention summed in
//! f32 in head order and assigned by the analysis' own
//! [`choose_separator`], so the tokens marked as misplaced or undecided are
//! the ones `segmentation_accuracy` and `segmentation_undecided` count.
//!
//! Similarity rows (for the token focus view) read the captured S where it
//! is kept and make one row from the head's outputs where it is not (a
//! long input); a variant other than raw applies the analysis' own
//! transform, whose per-head terms are made once per layer and variant.
//! The separator arrays, of P and of the value-weighted
//! attention N′ (ANALYSIS.md §9) for the Separators view's N′, are the
//! analysis' own ([`SeparatorTokens`], made while it held the layer's
//! sums), so no view reads a layer's P for them.

use std::borrow::Cow;

use crate::analysis::{
    LayerFigures, SeparatorChoice, SeparatorTokens, SimilarityTransform, SimilarityVariant,
};
use crate::captures::{Captures, HeadId};
use crate::pipeline::RunOutput;
use crate::tokens::ReadableTokens;

/// One layer's per-token arrays.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerTokens {
    /// Per position i: mean over the layer's heads of Σ over `[SEP]` keys
    /// of P[i, ·].
    pub separator_attention: Vec<f64>,
    /// Per position: for a content token, the `[SEP]` (an index into
    /// [`Derived::separators`]) its head-averaged attention is largest on,
    /// or undecided on a tie; `None` for special tokens or when there is no
    /// separator.
    pub assigned: Vec<Option<SeparatorChoice>>,
    /// Content tokens assigned to the `[SEP]` that closes their own sentence.
    pub correct: usize,
    /// Content tokens whose top two separators tie.
    pub undecided: usize,
}

impl LayerTokens {
    /// Whether the content token at `position` was assigned to a separator
    /// of another sentence.
    pub fn misplaced(&self, derived: &Derived, output: &RunOutput, position: usize) -> bool {
        let ids = &output.input.tokens.sentence_ids;
        match self.assigned.get(position).copied().flatten() {
            Some(SeparatorChoice::Separator(s)) => derived
                .separators
                .get(s)
                .is_none_or(|&k| ids.get(k) != ids.get(position)),
            Some(SeparatorChoice::Undecided) | None => false,
        }
    }

    /// Whether the content token at `position` is undecided.
    pub fn undecided_at(&self, position: usize) -> bool {
        self.assigned.get(position).copied().flatten() == Some(SeparatorChoice::Undecided)
    }
}

/// What one layer's heads need for their similarity rows under a variant.
struct SimilarityLayer {
    layer: usize,
    variant: SimilarityVariant,
    heads: Vec<SimilarityTransform>,
}

/// Everything derived from one result.
pub struct Derived {
    pub generation: u64,
    /// Every token as the views label it.
    pub labels: ReadableTokens,
    /// Positions of the `[SEP]` tokens, ascending.
    pub separators: Vec<usize>,
    /// Number of content tokens.
    pub content: usize,
    /// One entry per layer; empty when the captures are inconsistent.
    pub layers: Vec<LayerTokens>,
    similarity: Option<SimilarityLayer>,
    /// The same from N′, one entry per layer; empty without value norms.
    weighted: Vec<LayerTokens>,
}

impl Derived {
    /// Takes the per-layer arrays from the analysis.
    pub fn new(generation: u64, output: &RunOutput) -> Self {
        let tokens = &output.input.tokens;
        let t = output.captures.tokens;
        let consistent = tokens.len() == t
            && tokens.special.len() == t
            && tokens.sentence_ids.len() == t
            && output.captures.heads > 0;
        let mut derived = Self {
            generation,
            labels: tokens.readable_tokens(),
            content: tokens.special.iter().filter(|&&s| !s).count(),
            separators: tokens.separator_positions(),
            layers: Vec::new(),
            similarity: None,
            weighted: Vec::new(),
        };
        if !consistent {
            return derived;
        }
        let layers = &output.analysis.layers;
        let of_every_layer = |arrays: fn(&LayerFigures) -> Option<&SeparatorTokens>| {
            layers
                .iter()
                .map(|layer| Some(derived.layer_tokens(output, arrays(layer)?)))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default()
        };
        let plain = of_every_layer(|l| l.separator_tokens.as_ref());
        let weighted = of_every_layer(|l| l.separator_tokens_vw.as_ref());
        (derived.layers, derived.weighted) = (plain, weighted);
        derived
    }

    /// A layer's arrays, with the tokens its assignment gets right.
    fn layer_tokens(&self, output: &RunOutput, arrays: &SeparatorTokens) -> LayerTokens {
        let ids = &output.input.tokens.sentence_ids;
        let (mut correct, mut undecided) = (0, 0);
        for (i, choice) in arrays.assigned.iter().enumerate() {
            match choice {
                Some(SeparatorChoice::Separator(s)) => {
                    correct += usize::from(
                        self.separators
                            .get(*s)
                            .is_some_and(|&k| ids.get(k) == ids.get(i)),
                    );
                }
                Some(SeparatorChoice::Undecided) => undecided += 1,
                None => {}
            }
        }
        LayerTokens {
            separator_attention: arrays.attention.clone(),
            assigned: arrays.assigned.clone(),
            correct,
            undecided,
        }
    }

    /// The arrays of `layer`, if the result has it.
    pub fn layer(&self, layer: usize) -> Option<&LayerTokens> {
        self.layers.get(layer)
    }

    /// The arrays of `layer` from N′, if the result has value norms.
    pub fn weighted_layer(&self, layer: usize) -> Option<&LayerTokens> {
        self.weighted.get(layer)
    }

    /// Makes [`Derived::similarity_row`] ready for `layer` under `variant`:
    /// what a variant other than raw needs of each of the layer's heads,
    /// once per layer and variant.
    pub fn prepare_similarity(
        &mut self,
        output: &RunOutput,
        layer: usize,
        variant: SimilarityVariant,
    ) {
        let captures = &output.captures;
        if layer >= captures.layers || !has_similarity(captures) {
            return;
        }
        let current = self
            .similarity
            .as_ref()
            .is_some_and(|s| s.layer == layer && s.variant == variant);
        if !current {
            let heads = (0..captures.heads)
                .map(|h| {
                    captures.with_head_similarity(HeadId::new(layer, h), |head| {
                        SimilarityTransform::new(head, captures.tokens, variant)
                    })
                })
                .collect();
            self.similarity = Some(SimilarityLayer {
                layer,
                variant,
                heads,
            });
        }
    }

    /// Row `i` of head `head`'s similarity under `variant` (T values), if
    /// available (see [`Derived::prepare_similarity`]): read where S is
    /// kept, else made from the head's outputs, one row (a long input's
    /// layer is never made whole: at 8,192 tokens it would be 2.4 GB).
    pub fn similarity_row<'a>(
        &'a self,
        output: &'a RunOutput,
        head: HeadId,
        variant: SimilarityVariant,
        i: usize,
    ) -> Option<Cow<'a, [f32]>> {
        let captures = &output.captures;
        let t = captures.tokens;
        if head.layer >= captures.layers
            || head.head >= captures.heads
            || i >= t
            || !has_similarity(captures)
        {
            return None;
        }
        let cached = self.similarity.as_ref()?;
        if cached.layer != head.layer || cached.variant != variant {
            return None;
        }
        let raw = captures.similarity_row(head, i);
        if variant == SimilarityVariant::Raw {
            return Some(Cow::Owned(raw));
        }
        let mut row = Vec::with_capacity(t);
        cached.heads.get(head.head)?.extend(i, 0..t, &raw, &mut row);
        Some(Cow::Owned(row))
    }
}

/// Whether the captures hold S, or the head outputs it is recomputed from.
fn has_similarity(captures: &Captures) -> bool {
    let (heads, t) = (captures.layers * captures.heads, captures.tokens);
    if captures.stores_squares() {
        captures.similarity.len() == heads * t * t
    } else {
        captures.has_head_outputs()
    }
}
