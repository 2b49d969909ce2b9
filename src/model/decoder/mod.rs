//! Our decoder for the causal families (GPT-2; Llama, Mistral, Qwen2), and
//! the pre-norm stack ModernBERT runs on too (bidirectionally), returning,
//! like [`super::encoder`], every layer's attention
//! probabilities P, every query head's output O = P·V (with grouped-query
//! attention, V of the head's key/value group) and S = O·Oᵀ.
//!
//! One forward pass on candle's ops, on any device: embeddings (GPT-2 adds
//! its learned position table; the Llama family rotates queries and keys
//! instead), then pre-norm layers whose attention is causal (and, where the
//! config says, limited to a sliding window). The families differ only where
//! [`blocks`] says. Unlike the encoder there is no CPU kernel path yet: on
//! the CPU this runs candle's own matrix products.

mod blocks;
pub mod config;
pub mod weights;

use blocks::{DecoderLayer, Norm, RotaryTables};
use config::{DecoderActivation, DecoderShape};

use super::config::EncoderConfig;
use super::encoder::{copy_to_host, CaptureBuffers, ForwardError};
use super::family::Family;
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::{Embedding, VarBuilder};

/// Token (and for GPT-2 position) embeddings and the stack of layers; no
/// final norm or language-model head (the study reads neither).
pub struct Decoder {
    words: Embedding,
    positions: Option<Embedding>,
    /// ModernBERT normalises its embeddings.
    embedding_norm: Option<Norm>,
    layers: Vec<DecoderLayer>,
    inverse_frequencies: Option<Vec<f32>>,
    /// ModernBERT's local layers' frequencies.
    local_inverse_frequencies: Option<Vec<f32>>,
    activation: DecoderActivation,
    config: EncoderConfig,
    device: Device,
}

impl Decoder {
    /// `vb` is rooted at the base model (names like `wte.weight` or
    /// `embed_tokens.weight`).
    pub fn load(vb: VarBuilder, config: &EncoderConfig) -> Result<Self> {
        let shape: &DecoderShape = config.decoder.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!("{} has no decoder fields", config.family))
        })?;
        let activation = config::activation(config).map_err(candle_core::Error::Msg)?;
        let hidden = config.hidden_size;
        let words = candle_nn::embedding(
            config.vocab_size,
            hidden,
            vb.pp(config.family.word_embeddings()),
        )?;
        let positions = (config.family == Family::Gpt2)
            .then(|| candle_nn::embedding(config.max_position_embeddings, hidden, vb.pp("wpe")))
            .transpose()?;
        let embedding_norm = (config.family == Family::ModernBert)
            .then(|| Norm::load(vb.pp("embeddings.norm"), config, shape))
            .transpose()?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| DecoderLayer::load(&vb, config, shape, index))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            words,
            positions,
            embedding_norm,
            layers,
            inverse_frequencies: shape
                .rope
                .as_ref()
                .map(|rope| rope.inverse_frequencies(shape.head_dim)),
            local_inverse_frequencies: shape
                .local_rope
                .as_ref()
                .map(|rope| rope.inverse_frequencies(shape.head_dim)),
            activation,
            config: config.clone(),
            device: vb.device().clone(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Runs the decoder on one sequence of T tokens, writing every layer's
    /// P, O and S into `out`; `cancelled` is polled between layers.
    pub fn forward_into(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        out: CaptureBuffers,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let heads = self.config.num_attention_heads;
        let square = heads * tokens * tokens;
        let vectors = heads * tokens * self.config.head_dim();
        let count = self.layers.len();
        if out.attention.len() != count * square
            || out.similarity.len() != count * square
            || out.head_outputs.len() != count * vectors
        {
            return Err(candle_core::Error::Msg("capture buffers of the wrong size".into()).into());
        }
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.words.forward(&ids)?;
        if let Some(table) = &self.positions {
            let positions = Tensor::new(self.config.position_ids(input_ids), &self.device)?;
            x = x.add(&table.forward(&positions)?)?;
        }
        if let Some(norm) = &self.embedding_norm {
            x = norm.forward(&x)?;
        }
        let tables = |inverse: &Option<Vec<f32>>| {
            inverse
                .as_ref()
                .map(|inverse| RotaryTables::new(inverse, tokens, &self.device))
                .transpose()
        };
        let (rotary, local_rotary) = (
            tables(&self.inverse_frequencies)?,
            tables(&self.local_inverse_frequencies)?,
        );
        let per_layer = out
            .attention
            .chunks_mut(square)
            .zip(out.head_outputs.chunks_mut(vectors))
            .zip(out.similarity.chunks_mut(square));
        let mut x = Some(x);
        for (index, (layer, ((attention, head_outputs), similarity))) in
            self.layers.iter().zip(per_layer).enumerate()
        {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            let input = x.take().expect("every layer but the last has an output");
            let rotary = match &local_rotary {
                Some(local) if layer.local => Some(local),
                _ => rotary.as_ref(),
            };
            let (next, capture) =
                layer.forward(&input, rotary, self.activation, index + 1 == count)?;
            copy_to_host(&capture.attention, attention)?;
            copy_to_host(&capture.head_outputs, head_outputs)?;
            copy_to_host(&capture.similarity, similarity)?;
            x = next;
        }
        Ok(())
    }
}
