//! The capture modes of a study run, as the sinks a pass writes into
//! ([`LayerSink`]): every layer's P, O and S kept in the final buffers of
//! [`Captures`] ([`KeepAll`]), or only what recomputes them per head, each
//! layer's full captures handed on while they exist ([`Recomputable`]).
//! The logit lens' and generation's sinks are in [`super::predict`].

use super::stack::{CaptureBuffers, ForwardError, LayerCaptures, LayerSink};
use crate::captures::{AttentionInputs, Captures};
use crate::kernels::attention::ScoreRule;
use crate::vector_store::VectorStore;
use candle_core::Tensor;

/// Keeps every layer: the pass writes P, O and S straight into the
/// buffers of `Captures` (no copy on the CPU pass).
pub(super) struct KeepAll<'a> {
    captures: &'a mut Captures,
}

impl<'a> KeepAll<'a> {
    /// Shapes `captures` for `layers` layers of `heads` heads over `tokens`
    /// tokens and vectors of `head_dim`, and `residuals` values of the
    /// residual stream (0: none kept), keeping its buffers where they
    /// already have the right sizes.
    pub(super) fn new(
        captures: &'a mut Captures,
        (layers, heads, tokens, head_dim): (usize, usize, usize, usize),
        residuals: usize,
    ) -> Self {
        let square = layers * heads * tokens * tokens;
        captures.layers = layers;
        captures.heads = heads;
        captures.tokens = tokens;
        captures.head_dim = head_dim;
        captures.recompute = None;
        // Every value is overwritten by the forward pass, so buffers of the
        // right size are kept as they are; others are replaced by zeroed
        // allocations, which come straight from the OS (no fill pass).
        for (buffer, len) in [
            (&mut captures.attentions, square),
            (&mut captures.attention_entropy, layers * heads * tokens),
            (
                &mut captures.head_outputs,
                layers * heads * tokens * head_dim,
            ),
            (&mut captures.similarity, square),
            (&mut captures.value_norms, layers * heads * tokens),
            (&mut captures.residuals, residuals),
        ] {
            if buffer.len() != len {
                *buffer = vec![0.0; len];
            }
        }
        Self { captures }
    }
}

impl LayerSink for KeepAll<'_> {
    fn kept(&mut self) -> Option<CaptureBuffers<'_>> {
        Some(CaptureBuffers {
            attention: &mut self.captures.attentions,
            attention_entropy: &mut self.captures.attention_entropy,
            head_outputs: &mut self.captures.head_outputs,
            similarity: &mut self.captures.similarity,
            value_norms: &mut self.captures.value_norms,
            residuals: Some(&mut self.captures.residuals[..]).filter(|rows| !rows.is_empty()),
        })
    }
}

/// Keeps every layer's O and the queries and keys P is made from (O and
/// the queries on disk when long: [`VectorStore`]), and where asked the
/// residual stream; hands each layer's captures to
/// `on_layer` first (without P and S on the tuned CPU pass, which hands
/// each head's to the head observer alone).
pub(super) struct Recomputable<'a> {
    on_layer: &'a mut dyn FnMut(usize, &LayerCaptures),
    captures: Captures,
    outputs: VectorStore,
    queries: VectorStore,
    keys: Vec<f32>,
    kv_heads: usize,
    /// Values of the residual stream to keep (L × T × hidden, or 0).
    residual_values: usize,
}

impl<'a> Recomputable<'a> {
    /// `residuals`: values of the residual stream to keep (0: none).
    pub(super) fn new(
        (layers, heads, kv_heads, tokens, head_dim): (usize, usize, usize, usize, usize),
        residuals: usize,
        on_layer: &'a mut dyn FnMut(usize, &LayerCaptures),
    ) -> Self {
        let vectors = heads * tokens * head_dim;
        let kv_vectors = kv_heads * tokens * head_dim;
        let scratch = super::cache_dir().join("scratch");
        Self {
            on_layer,
            captures: Captures {
                layers,
                heads,
                tokens,
                head_dim,
                value_norms: vec![0.0; layers * heads * tokens],
                residuals: Vec::with_capacity(residuals),
                ..Captures::default()
            },
            outputs: VectorStore::zeros(layers * vectors, &scratch),
            queries: VectorStore::zeros(layers * vectors, &scratch),
            keys: vec![0.0; layers * kv_vectors],
            kv_heads,
            residual_values: residuals,
        }
    }

    /// The captures, with what recomputes P under `rules` (each layer's).
    pub(super) fn into_captures(self, rules: Vec<ScoreRule>) -> Captures {
        let (head_outputs, outputs_on_disk) = match self.outputs.into_memory() {
            Ok(outputs) => (outputs, None),
            Err(on_disk) => (Vec::new(), Some(on_disk)),
        };
        Captures {
            head_outputs,
            recompute: Some(Box::new(AttentionInputs {
                queries: self.queries,
                keys: self.keys,
                kv_heads: self.kv_heads,
                rules,
                outputs_on_disk,
            })),
            ..self.captures
        }
    }
}

impl LayerSink for Recomputable<'_> {
    /// Its caller takes each head's P and S from the head observer.
    fn wants_layer_squares(&self) -> bool {
        false
    }

    fn layer(&mut self, index: usize, layer: LayerCaptures) -> Result<(), ForwardError> {
        (self.on_layer)(index, &layer);
        let captures = &self.captures;
        let vectors = captures.heads * captures.tokens * captures.head_dim;
        let kv_vectors = self.kv_heads * captures.tokens * captures.head_dim;
        let at = |size: usize| index * size..(index + 1) * size;
        let norms = captures.heads * captures.tokens;
        self.outputs.write(index * vectors, layer.head_outputs);
        self.captures.value_norms[at(norms)].copy_from_slice(layer.value_norms);
        self.queries.write(index * vectors, layer.queries);
        self.keys[at(kv_vectors)].copy_from_slice(layer.keys);
        Ok(())
    }

    fn wants_residuals(&self) -> bool {
        self.residual_values > 0
    }

    fn residual(&mut self, _layer: usize, residual: &Tensor) -> Result<(), ForwardError> {
        // The layers come in order.
        let rows = residual.flatten_all()?.to_vec1::<f32>()?;
        self.captures.residuals.extend_from_slice(&rows);
        Ok(())
    }
}
