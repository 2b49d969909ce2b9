//! Our decoder for the causal families (GPT-2; Llama, Mistral, Qwen2;
//! GPT-NeoX, Gemma 1–3, Qwen3, Phi-3, OLMo 2), and
//! the pre-norm stack ModernBERT runs on too (bidirectionally), returning,
//! like [`super::encoder`], every layer's attention
//! probabilities P, every query head's output O = P·V (with grouped-query
//! attention, V of the head's key/value group) and S = O·Oᵀ.
//!
//! One forward pass on candle's ops, on any device: embeddings (GPT-2 adds
//! its learned position table, Gemma scales them by √hidden; the others
//! rotate queries and keys instead), then layers whose attention is causal
//! (and, where the config says, limited to a sliding window). The families
//! differ only where [`config::Variant`] says and [`blocks`] reads it.
//! Unlike the encoder there is no CPU kernel path yet: on the CPU this runs
//! candle's own matrix products.

mod blocks;
pub mod config;
pub mod weights;

use blocks::{DecoderLayer, Norm, RotaryTables};
use config::{DecoderActivation, DecoderShape};

use super::config::EncoderConfig;
use super::encoder::{CaptureBuffers, ForwardError};
use super::family::Family;
use super::weight::{Weight, WeightBuilder};
use crate::captures::{AttentionMask, ScoreRule};
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::Embedding;

/// Token (and for GPT-2 position) embeddings and the stack of layers; no
/// final norm or language-model head (the study reads neither).
pub struct Decoder {
    /// In the checkpoint's precision: a token's row is widened when read.
    words: Weight,
    positions: Option<Embedding>,
    /// ModernBERT normalises its embeddings.
    embedding_norm: Option<Norm>,
    layers: Vec<DecoderLayer>,
    inverse_frequencies: Option<Vec<f32>>,
    /// ModernBERT's and Gemma 3's local layers' frequencies.
    local_inverse_frequencies: Option<Vec<f32>>,
    /// Gemma's √hidden, in float32 (transformers casts it to the
    /// embeddings' precision before the product).
    embedding_scale: Option<f32>,
    scores: ScoreRule,
    activation: DecoderActivation,
    config: EncoderConfig,
    device: Device,
}

impl Decoder {
    /// `vb` is rooted at the base model (names like `wte.weight` or
    /// `embed_tokens.weight`).
    pub fn load(vb: WeightBuilder, config: &EncoderConfig) -> Result<Self> {
        let shape: &DecoderShape = config.decoder.as_ref().ok_or_else(|| {
            candle_core::Error::Msg(format!("{} has no decoder fields", config.family))
        })?;
        let activation = config::activation(config).map_err(candle_core::Error::Msg)?;
        let hidden = config.hidden_size;
        let words = vb
            .pp(config.family.word_embeddings())
            .weight((config.vocab_size, hidden), "weight")?;
        let positions = (config.family == Family::Gpt2)
            .then(|| -> Result<Embedding> {
                let table = vb
                    .pp("wpe")
                    .get((config.max_position_embeddings, hidden), "weight")?;
                Ok(Embedding::new(table, hidden))
            })
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
                .map(|rope| rope.inverse_frequencies(shape.rotary_dims())),
            local_inverse_frequencies: shape
                .local_rope
                .as_ref()
                .map(|rope| rope.inverse_frequencies(shape.rotary_dims())),
            embedding_scale: shape.variant.embedding_scale.factor(hidden),
            scores: shape.score_rule(),
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
        out.check(self.layers.len(), heads, tokens, self.config.head_dim())?;
        self.forward_layers(input_ids, cancelled, &mut |index, layer| {
            let at = |size: usize| index * size..(index + 1) * size;
            out.attention[at(square)].copy_from_slice(layer.attention);
            out.head_outputs[at(vectors)].copy_from_slice(layer.head_outputs);
            out.similarity[at(square)].copy_from_slice(layer.similarity);
            Ok(())
        })
    }

    /// Runs the decoder on one sequence, handing each layer's captures to
    /// `sink` as soon as they exist (the caller keeps what it needs: a long
    /// input's P and S of every layer would not fit in memory).
    pub fn forward_layers(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        sink: &mut dyn FnMut(usize, LayerCaptures) -> std::result::Result<(), ForwardError>,
    ) -> std::result::Result<(), ForwardError> {
        let tokens = input_ids.len();
        let count = self.layers.len();
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.words.rows(&ids)?;
        if let Some(scale) = self.embedding_scale {
            x = (x * f64::from(scale))?;
        }
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
        let mut x = Some(x);
        for (index, layer) in self.layers.iter().enumerate() {
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
            drop(input);
            let host = [
                HostValues::of(&capture.attention)?,
                HostValues::of(&capture.head_outputs)?,
                HostValues::of(&capture.similarity)?,
                HostValues::of(&capture.queries)?,
                HostValues::of(&capture.keys)?,
            ];
            sink(
                index,
                LayerCaptures {
                    attention: host[0].values()?,
                    head_outputs: host[1].values()?,
                    similarity: host[2].values()?,
                    queries: host[3].values()?,
                    keys: host[4].values()?,
                },
            )?;
            x = next;
        }
        Ok(())
    }

    /// What each layer's attention masks (the same for every input).
    pub fn attention_masks(&self) -> Vec<AttentionMask> {
        self.layers.iter().map(|l| l.attention.mask()).collect()
    }

    /// How every layer turns Q·Kᵀ into scores.
    pub fn score_rule(&self) -> ScoreRule {
        self.scores
    }
}

/// One layer's captures on the host, row-major: P and S (H×T×T), O
/// (H×T×d), and the queries (H×T×d) and keys (H_kv×T×d) as the scores read
/// them (rotated, unscaled).
pub struct LayerCaptures<'a> {
    pub attention: &'a [f32],
    pub head_outputs: &'a [f32],
    pub similarity: &'a [f32],
    pub queries: &'a [f32],
    pub keys: &'a [f32],
}

/// A tensor's values on the host: borrowed from a contiguous CPU tensor
/// (no copy: a layer's P alone is 235 MB at 2,048 tokens), copied otherwise.
enum HostValues<'a> {
    Cpu(candle_core::StorageRef<'a>, std::ops::Range<usize>),
    Copied(Vec<f32>),
}

impl<'a> HostValues<'a> {
    fn of(tensor: &'a Tensor) -> Result<Self> {
        let (storage, layout) = tensor.storage_and_layout();
        if let (candle_core::Storage::Cpu(_), Some((start, end))) =
            (&*storage, layout.contiguous_offsets())
        {
            return Ok(Self::Cpu(storage, start..end));
        }
        drop(storage);
        Ok(Self::Copied(tensor.flatten_all()?.to_vec1::<f32>()?))
    }

    fn values(&self) -> Result<&[f32]> {
        match self {
            Self::Cpu(storage, range) => match &**storage {
                candle_core::Storage::Cpu(cpu) => Ok(&cpu.as_slice::<f32>()?[range.clone()]),
                _ => unreachable!("checked in HostValues::of"),
            },
            Self::Copied(values) => Ok(values),
        }
    }
}
