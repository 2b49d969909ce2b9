//! Our BERT encoder, written in the style of candle's `models/bert.rs`
//! (every block a struct with `load(vb, &config)` and `forward`), but
//! returning what candle's model keeps private: every layer's attention
//! probabilities P and every head's output O = P·V, from which the context
//! similarity S = O·Oᵀ is computed on the same device (ANALYSIS.md §2).
//!
//! One sequence at a time with an all-ones attention mask, as the study's
//! document mode prescribes, so no mask is built or applied.

use super::config::{Activation, BertConfig};
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{embedding, layer_norm, linear, Embedding, LayerNorm, Linear, VarBuilder};

/// What one layer hands back besides its hidden states, each H×T×T or H×T×d.
pub struct LayerCapture {
    pub attention: Tensor,
    pub head_outputs: Tensor,
    pub similarity: Tensor,
}

struct BertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
}

impl BertEmbeddings {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            word_embeddings: embedding(
                config.vocab_size,
                config.hidden_size,
                vb.pp("word_embeddings"),
            )?,
            position_embeddings: embedding(
                config.max_position_embeddings,
                config.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type_embeddings: embedding(
                config.type_vocab_size,
                config.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            layer_norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
        })
    }

    /// `input_ids` is a T-vector; token types are all 0 (ANALYSIS.md §1).
    fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let tokens = input_ids.dim(0)?;
        let device = input_ids.device();
        let positions = Tensor::arange(0u32, tokens as u32, device)?;
        let token_types = Tensor::zeros(tokens, DType::U32, device)?;
        let x = self.word_embeddings.forward(input_ids)?;
        let x = x.add(&self.position_embeddings.forward(&positions)?)?;
        let x = x.broadcast_add(&self.token_type_embeddings.forward(&token_types)?)?;
        self.layer_norm.forward(&x)
    }
}

/// Query, key and value projections fused into one matrix product.
struct BertSelfAttention {
    qkv: Linear,
    heads: usize,
    head_dim: usize,
}

impl BertSelfAttention {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let hidden = config.hidden_size;
        let query = linear(hidden, hidden, vb.pp("query"))?;
        let key = linear(hidden, hidden, vb.pp("key"))?;
        let value = linear(hidden, hidden, vb.pp("value"))?;
        let weight = Tensor::cat(&[query.weight(), key.weight(), value.weight()], 0)?;
        let bias = Tensor::cat(
            &[
                query.bias().expect("linear has a bias"),
                key.bias().expect("linear has a bias"),
                value.bias().expect("linear has a bias"),
            ],
            0,
        )?;
        Ok(Self {
            qkv: Linear::new(weight, Some(bias)),
            heads: config.num_attention_heads,
            head_dim: config.head_dim(),
        })
    }

    /// T×hidden → (context T×hidden, capture).
    fn forward(&self, x: &Tensor) -> Result<(Tensor, LayerCapture)> {
        let tokens = x.dim(0)?;
        let hidden = self.heads * self.head_dim;
        let qkv = self.qkv.forward(x)?;
        let split = |part: usize| -> Result<Tensor> {
            qkv.narrow(1, part * hidden, hidden)?
                .reshape((tokens, self.heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let (query, key, value) = (split(0)?, split(1)?, split(2)?);
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        let scores = (query.matmul(&key.t()?)? * scale)?;
        let attention = candle_nn::ops::softmax_last_dim(&scores)?;
        let head_outputs = attention.matmul(&value)?;
        let similarity = head_outputs.matmul(&head_outputs.t()?)?;
        let context = head_outputs
            .transpose(0, 1)?
            .contiguous()?
            .reshape((tokens, hidden))?;
        Ok((
            context,
            LayerCapture {
                attention,
                head_outputs,
                similarity,
            },
        ))
    }
}

/// Dense + residual + LayerNorm, used after attention and after the feed-forward.
struct BertOutput {
    dense: Linear,
    layer_norm: LayerNorm,
}

impl BertOutput {
    fn load(vb: VarBuilder, in_dim: usize, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            dense: linear(in_dim, config.hidden_size, vb.pp("dense"))?,
            layer_norm: layer_norm(
                config.hidden_size,
                config.layer_norm_eps,
                vb.pp("LayerNorm"),
            )?,
        })
    }

    fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&self.dense.forward(x)?.add(residual)?)
    }
}

struct BertIntermediate {
    dense: Linear,
    activation: Activation,
}

impl BertIntermediate {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let activation = config.activation().map_err(candle_core::Error::Msg)?;
        Ok(Self {
            dense: linear(config.hidden_size, config.intermediate_size, vb.pp("dense"))?,
            activation,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.dense.forward(x)?;
        match self.activation {
            Activation::Gelu => x.gelu_erf(),
            Activation::GeluTanh => x.gelu(),
            Activation::Relu => x.relu(),
        }
    }
}

struct BertLayer {
    self_attention: BertSelfAttention,
    attention_output: BertOutput,
    intermediate: BertIntermediate,
    output: BertOutput,
}

impl BertLayer {
    fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        Ok(Self {
            self_attention: BertSelfAttention::load(vb.pp("attention.self"), config)?,
            attention_output: BertOutput::load(
                vb.pp("attention.output"),
                config.hidden_size,
                config,
            )?,
            intermediate: BertIntermediate::load(vb.pp("intermediate"), config)?,
            output: BertOutput::load(vb.pp("output"), config.intermediate_size, config)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<(Tensor, LayerCapture)> {
        let (context, capture) = self.self_attention.forward(x)?;
        let attended = self.attention_output.forward(&context, x)?;
        let x = self
            .output
            .forward(&self.intermediate.forward(&attended)?, &attended)?;
        Ok((x, capture))
    }
}

/// Embeddings and the stack of layers; no pooler (the study does not use it).
pub struct BertEncoder {
    embeddings: BertEmbeddings,
    layers: Vec<BertLayer>,
    device: Device,
}

/// Why a forward pass stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

impl BertEncoder {
    /// `vb` is rooted at the encoder (names like `embeddings.word_embeddings.weight`).
    pub fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let embeddings = BertEmbeddings::load(vb.pp("embeddings"), config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|index| BertLayer::load(vb.pp(format!("encoder.layer.{index}")), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            embeddings,
            layers,
            device: vb.device().clone(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Runs the encoder on one sequence, handing each layer's capture to
    /// `on_layer` as soon as it exists. `cancelled` is polled between layers
    /// so that a stale request is abandoned quickly.
    pub fn forward(
        &self,
        input_ids: &[u32],
        cancelled: &dyn Fn() -> bool,
        on_layer: &mut dyn FnMut(usize, LayerCapture) -> Result<()>,
    ) -> std::result::Result<Tensor, ForwardError> {
        let ids = Tensor::new(input_ids, &self.device)?;
        let mut x = self.embeddings.forward(&ids)?;
        for (index, layer) in self.layers.iter().enumerate() {
            if cancelled() {
                return Err(ForwardError::Cancelled);
            }
            let (next, capture) = layer.forward(&x)?;
            on_layer(index, capture)?;
            x = next;
        }
        Ok(x)
    }
}
