//! The decoder's blocks, each with `load(vb, …)`, a tensor `forward` and
//! `cpu()` (its parameters as slices for the CPU pass), in the variants the
//! families take (ANALYSIS.md §8): LayerNorm or RMSNorm; learned or rotary
//! positions; GPT-2's Conv1D projections (stored inputs × outputs, queries,
//! keys and values fused in `c_attn`) or the Llama family's separate
//! `q_proj`, `k_proj`, `v_proj` with grouped-query key/value heads, fused
//! at load; ModernBERT's fused `Wqkv` without biases, bidirectional and, in
//! its local layers, limited to a window either side; a plain or a gated
//! (SwiGLU from `gate_proj` and `up_proj` fused at load, or ModernBERT's
//! GeGLU from one fused `Wi`) feed-forward. Projection matrices stay in the
//! checkpoint's precision ([`Dense`]).

use crate::kernels::attention::{AttentionMask, ScoreRule};
use crate::model::blocks::{Dense, Norm};
use crate::model::config::{Activation, ModelConfig, PreNormShape};
use crate::model::cpu_pass::{LayerCpu, RotaryCpu};
use crate::model::family::Family;
use crate::model::stack::{self, attend_layer, HostValues, LayerAttention, LayerCaptures};
use crate::model::weight::{Weight, WeightBuilder};
use candle_core::{Result, Tensor, D};

/// A pre-norm: GPT-2's LayerNorm, ModernBERT's (without bias unless its
/// config says), the Llama family's RMSNorm.
pub(super) fn norm(vb: WeightBuilder, config: &ModelConfig, shape: &PreNormShape) -> Result<Norm> {
    let (size, eps) = (config.hidden_size, config.layer_norm_eps);
    match config.family {
        Family::Gpt2 | Family::ModernBert => Norm::layer(vb, size, eps, shape.norm_bias),
        _ => Norm::rms(vb, size, eps),
    }
}

/// GPT-2's `Conv1D` (weight stored inputs × outputs, with a bias).
fn conv1d(vb: WeightBuilder, inputs: usize, outputs: usize) -> Result<Dense> {
    let weight = vb
        .weight((inputs, outputs), "weight")?
        .map(|w| w.t()?.contiguous())?;
    Dense::new(&weight, Some(&vb.get(outputs, "bias")?))
}

/// `torch.nn.Linear`s of the same inputs as one projection, their outputs
/// side by side.
fn fused(vb: &WeightBuilder, parts: &[(&str, usize)], inputs: usize, bias: bool) -> Result<Dense> {
    let weights = parts
        .iter()
        .map(|&(name, outputs)| vb.pp(name).weight((outputs, inputs), "weight"))
        .collect::<Result<Vec<Weight>>>()?;
    let bias = bias
        .then(|| -> Result<Tensor> {
            let biases = parts
                .iter()
                .map(|&(name, outputs)| vb.pp(name).get(outputs, "bias"))
                .collect::<Result<Vec<_>>>()?;
            Tensor::cat(&biases, 0)
        })
        .transpose()?;
    Dense::new(
        &Weight::cat(&weights.iter().collect::<Vec<_>>())?,
        bias.as_ref(),
    )
}

/// Rotary positions on a device: the tables of [`RotaryCpu`] as tensors.
pub(super) struct RotaryTables {
    cos: Tensor,
    sin: Tensor,
}

impl RotaryTables {
    pub(super) fn new(
        inverse_frequencies: &[f32],
        tokens: usize,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let tables = RotaryCpu::new(inverse_frequencies, tokens);
        let shape = (tokens, 2 * inverse_frequencies.len());
        Ok(Self {
            cos: Tensor::from_slice(tables.cos(), shape, device)?,
            sin: Tensor::from_slice(tables.sin(), shape, device)?,
        })
    }

    /// x·cos + rotate_half(x)·sin for heads × T × d.
    fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let half = x.dim(D::Minus1)? / 2;
        let first = x.narrow(D::Minus1, 0, half)?;
        let second = x.narrow(D::Minus1, half, half)?;
        let rotated = Tensor::cat(&[&second.neg()?, &first], D::Minus1)?;
        x.broadcast_mul(&self.cos)?
            .add(&rotated.broadcast_mul(&self.sin)?)
    }
}

/// Self-attention with `heads` query heads sharing `kv_heads` key/value
/// heads (grouped-query; GPT-2 and ModernBERT have as many of each).
pub(super) struct Attention {
    /// Queries, keys and values side by side: H·d, H_kv·d, H_kv·d outputs.
    qkv: Dense,
    output: Dense,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// See [`PreNormShape::sliding_windows`].
    window: Option<usize>,
    causal: bool,
}

impl Attention {
    /// `vb` is rooted at the layer.
    pub(super) fn load(
        vb: &WeightBuilder,
        config: &ModelConfig,
        shape: &PreNormShape,
        layer: usize,
    ) -> Result<Self> {
        let hidden = config.hidden_size;
        let (heads, kv_heads, head_dim) = (
            config.num_attention_heads,
            shape.num_key_value_heads,
            shape.head_dim,
        );
        let (qkv, output) = if config.family == Family::Gpt2 {
            (
                conv1d(vb.pp("attn.c_attn"), hidden, 3 * hidden)?,
                conv1d(vb.pp("attn.c_proj"), hidden, hidden)?,
            )
        } else if config.family == Family::ModernBert {
            let vb = vb.pp("attn");
            (
                Dense::load(vb.pp("Wqkv"), hidden, 3 * hidden, shape.qkv_bias)?,
                Dense::load(vb.pp("Wo"), hidden, hidden, shape.output_bias)?,
            )
        } else {
            let vb = vb.pp("self_attn");
            let (q, kv) = (heads * head_dim, kv_heads * head_dim);
            let parts = [("q_proj", q), ("k_proj", kv), ("v_proj", kv)];
            (
                fused(&vb, &parts, hidden, shape.qkv_bias)?,
                Dense::load(vb.pp("o_proj"), q, hidden, shape.output_bias)?,
            )
        };
        Ok(Self {
            qkv,
            output,
            heads,
            kv_heads,
            head_dim,
            window: shape.sliding_windows[layer],
            causal: config.is_causal(),
        })
    }

    /// How its heads make their attention: which keys each query sees.
    pub(super) fn score_rule(&self) -> ScoreRule {
        let mask = AttentionMask {
            causal: self.causal,
            window: self.window,
        };
        ScoreRule::new(self.head_dim, mask)
    }

    /// T×hidden → the output projection of every head's P·V; every head's
    /// P, O and S, and the queries and keys they are made from, into `out`.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        out: &mut AttentionBuffers,
    ) -> Result<Tensor> {
        let tokens = x.dim(0)?;
        let split = |projected: Tensor, heads: usize| -> Result<Tensor> {
            projected
                .reshape((tokens, heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let qkv = self.qkv.forward(x)?;
        let (q, kv) = (self.heads * self.head_dim, self.kv_heads * self.head_dim);
        let mut query = split(qkv.narrow(1, 0, q)?, self.heads)?;
        let mut key = split(qkv.narrow(1, q, kv)?, self.kv_heads)?;
        let value = split(qkv.narrow(1, q + kv, kv)?, self.kv_heads)?;
        if let Some(rotary) = rotary {
            query = rotary.apply(&query)?;
            key = rotary.apply(&key)?;
        }
        let (query, key, value) = (
            HostValues::of(&query)?,
            HostValues::of(&key)?,
            HostValues::of(&value)?,
        );
        out.resize(self.heads, tokens, self.head_dim);
        attend_layer(
            query.get(),
            key.get(),
            value.get(),
            (tokens, self.head_dim),
            &self.score_rule(),
            &mut LayerAttention {
                attention: &mut out.attention,
                head_outputs: &mut out.head_outputs,
                similarity: &mut out.similarity,
            },
        );
        out.queries.clear();
        out.queries.extend_from_slice(query.get());
        out.keys.clear();
        out.keys.extend_from_slice(key.get());
        let context = stack::heads_side_by_side(&out.head_outputs, self.heads, tokens, x.device())?;
        self.output.forward(&context)
    }
}

/// One layer's attention as the decoder captures it, kept for the whole
/// pass: P and S (H×T×T), O (H×T×d), and the rotated queries (H×T×d) and
/// keys (H_kv×T×d) P is made from.
#[derive(Default)]
pub(super) struct AttentionBuffers {
    attention: Vec<f32>,
    head_outputs: Vec<f32>,
    similarity: Vec<f32>,
    queries: Vec<f32>,
    keys: Vec<f32>,
}

impl AttentionBuffers {
    fn resize(&mut self, heads: usize, tokens: usize, head_dim: usize) {
        self.attention.resize(heads * tokens * tokens, 0.0);
        self.similarity.resize(heads * tokens * tokens, 0.0);
        self.head_outputs.resize(heads * tokens * head_dim, 0.0);
    }

    pub(super) fn captures(&self) -> LayerCaptures<'_> {
        LayerCaptures {
            attention: &self.attention,
            head_outputs: &self.head_outputs,
            similarity: &self.similarity,
            queries: &self.queries,
            keys: &self.keys,
        }
    }
}

/// GPT-2's feed-forward (`c_fc`, activation, `c_proj`), or a gated one
/// whose first projection yields the activated half and the half it is
/// multiplied by side by side: the Llama family's `down(act(gate(x)) ·
/// up(x))` (`gate_proj` and `up_proj` fused), ModernBERT's `Wo(act(input) ·
/// gate)` (from `Wi`).
pub(super) struct FeedForward {
    up: Dense,
    gated: bool,
    down: Dense,
}

impl FeedForward {
    pub(super) fn load(
        vb: WeightBuilder,
        config: &ModelConfig,
        shape: &PreNormShape,
    ) -> Result<Self> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        Ok(if config.family == Family::Gpt2 {
            Self {
                up: conv1d(vb.pp("mlp.c_fc"), hidden, inner)?,
                gated: false,
                down: conv1d(vb.pp("mlp.c_proj"), inner, hidden)?,
            }
        } else if config.family == Family::ModernBert {
            let vb = vb.pp("mlp");
            Self {
                up: Dense::load(vb.pp("Wi"), hidden, 2 * inner, shape.mlp_bias)?,
                gated: true,
                down: Dense::load(vb.pp("Wo"), inner, hidden, shape.mlp_bias)?,
            }
        } else {
            let vb = vb.pp("mlp");
            let parts = [("gate_proj", inner), ("up_proj", inner)];
            Self {
                up: fused(&vb, &parts, hidden, shape.mlp_bias)?,
                gated: true,
                down: Dense::load(vb.pp("down_proj"), inner, hidden, shape.mlp_bias)?,
            }
        })
    }

    pub(super) fn forward(&self, x: &Tensor, activation: Activation) -> Result<Tensor> {
        let up = self.up.forward(x)?;
        if !self.gated {
            return self.down.forward(&stack::activate(&up, activation)?);
        }
        let inner = up.dim(D::Minus1)? / 2;
        let activated = stack::activate(&up.narrow(D::Minus1, 0, inner)?, activation)?;
        self.down
            .forward(&activated.mul(&up.narrow(D::Minus1, inner, inner)?)?)
    }
}

/// One pre-norm decoder layer: x + attention(norm(x)), then
/// x + feed-forward(norm(x)).
pub(super) struct DecoderLayer {
    /// `None`: ModernBERT's first layer, whose input is the normalised
    /// embeddings.
    pub(super) input_norm: Option<Norm>,
    pub(super) attention: Attention,
    pub(super) post_attention_norm: Norm,
    pub(super) feed_forward: FeedForward,
    /// A sliding-window layer (ModernBERT's local layers rotate by their
    /// own theta).
    pub(super) local: bool,
}

impl DecoderLayer {
    /// `vb` is rooted at the model.
    pub(super) fn load(
        vb: &WeightBuilder,
        config: &ModelConfig,
        shape: &PreNormShape,
        index: usize,
    ) -> Result<Self> {
        let gpt2 = config.family == Family::Gpt2;
        let vb = vb.pp(if gpt2 {
            format!("h.{index}")
        } else {
            format!("layers.{index}")
        });
        let (first, second) = match config.family {
            Family::Gpt2 => ("ln_1", "ln_2"),
            Family::ModernBert => ("attn_norm", "mlp_norm"),
            _ => ("input_layernorm", "post_attention_layernorm"),
        };
        let input_norm = if config.family == Family::ModernBert && index == 0 {
            None
        } else {
            Some(norm(vb.pp(first), config, shape)?)
        };
        Ok(Self {
            input_norm,
            attention: Attention::load(&vb, config, shape, index)?,
            post_attention_norm: norm(vb.pp(second), config, shape)?,
            feed_forward: FeedForward::load(vb.clone(), config, shape)?,
            local: shape.sliding_windows[index].is_some(),
        })
    }

    /// The layer's capture into `capture`, and its output unless `last`
    /// (nothing reads the final hidden states, so the last layer stops
    /// after its attention).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        activation: Activation,
        capture: &mut AttentionBuffers,
        last: bool,
    ) -> Result<Option<Tensor>> {
        let input = match &self.input_norm {
            Some(norm) => norm.forward(x)?,
            None => x.clone(),
        };
        let attended = self.attention.forward(&input, rotary, capture)?;
        if last {
            return Ok(None);
        }
        let x = x.add(&attended)?;
        let fed = self
            .feed_forward
            .forward(&self.post_attention_norm.forward(&x)?, activation)?;
        Ok(Some(x.add(&fed)?))
    }

    /// Its parameters as slices for the CPU pass, rotated by `rotary`.
    pub(super) fn cpu<'a>(
        &'a self,
        activation: Activation,
        rotary: Option<&'a RotaryCpu>,
    ) -> Result<LayerCpu<'a>> {
        Ok(LayerCpu {
            attention_norm: self.input_norm.as_ref().map(Norm::cpu).transpose()?,
            qkv: self.attention.qkv.cpu()?,
            attention_output: self.attention.output.cpu()?,
            feed_forward_norm: self.post_attention_norm.cpu()?,
            up: self.feed_forward.up.cpu()?,
            gated: self.feed_forward.gated,
            activation,
            down: self.feed_forward.down.cpu()?,
            rule: self.attention.score_rule(),
            rotary,
        })
    }
}
