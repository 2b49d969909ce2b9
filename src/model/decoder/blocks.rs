//! The decoder's blocks, each with `load(vb, …)` and a tensor `forward`,
//! in the variants the families take (ANALYSIS.md §8): LayerNorm or
//! RMSNorm; learned or rotary positions; GPT-2's Conv1D projections (stored
//! inputs × outputs, queries, keys and values fused in `c_attn`) or the
//! Llama family's separate `q_proj`, `k_proj`, `v_proj` with grouped-query
//! key/value heads; ModernBERT's fused `Wqkv` without biases, bidirectional
//! and, in its local layers, limited to a window either side; a plain or a
//! gated (SwiGLU, or ModernBERT's GeGLU from one fused `Wi`) feed-forward.
//! Projection matrices stay in the checkpoint's precision and are widened
//! to float32 one at a time, for their product ([`Projection`]).

use crate::kernels::attention::{AttentionMask, ScoreRule};
use crate::model::config::{Activation, ModelConfig, PreNormShape};
use crate::model::family::Family;
use crate::model::stack::{self, attend_layer, HostValues, LayerAttention, LayerCaptures};
use crate::model::weight::{Weight, WeightBuilder};
use candle_core::{Module, Result, Tensor, D};
use candle_nn::{LayerNorm, Linear, RmsNorm};

/// A pre-norm: GPT-2's LayerNorm, ModernBERT's (without bias unless its
/// config says), the Llama family's RMSNorm; or none (ModernBERT's first
/// layer, whose input is the normalised embeddings).
pub(super) enum Norm {
    Layer(LayerNorm),
    Rms(RmsNorm),
    Identity,
}

impl Norm {
    pub(super) fn load(
        vb: WeightBuilder,
        config: &ModelConfig,
        shape: &PreNormShape,
    ) -> Result<Self> {
        let (size, eps) = (config.hidden_size, config.layer_norm_eps);
        Ok(match config.family {
            Family::Gpt2 | Family::ModernBert => {
                let weight = vb.get(size, "weight")?;
                Self::Layer(if shape.norm_bias {
                    LayerNorm::new(weight, vb.get(size, "bias")?, eps)
                } else {
                    LayerNorm::new_no_bias(weight, eps)
                })
            }
            _ => Self::Rms(RmsNorm::new(vb.get(size, "weight")?, eps)),
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Self::Layer(norm) => norm.forward(x),
            Self::Rms(norm) => norm.forward(x),
            Self::Identity => Ok(x.clone()),
        }
    }
}

/// A `torch.nn.Linear` (weight outputs × inputs, in the checkpoint's
/// precision; bias float32), whose weight is widened for each product and
/// dropped after it: at most one projection's matrix is float32 at a time.
pub(super) struct Projection {
    weight: Weight,
    bias: Option<Tensor>,
}

impl Projection {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Linear::new(self.weight.widen()?, self.bias.clone()).forward(x)
    }
}

/// A `torch.nn.Linear` (outputs × inputs), with or without a bias.
fn linear(vb: WeightBuilder, inputs: usize, outputs: usize, bias: bool) -> Result<Projection> {
    let weight = vb.weight((outputs, inputs), "weight")?;
    let bias = bias.then(|| vb.get(outputs, "bias")).transpose()?;
    Ok(Projection { weight, bias })
}

/// GPT-2's `Conv1D`, stored inputs × outputs, as a `Linear`.
fn conv1d(vb: WeightBuilder, inputs: usize, outputs: usize) -> Result<Projection> {
    let weight = vb
        .weight((inputs, outputs), "weight")?
        .map(|w| w.t()?.contiguous())?;
    Ok(Projection {
        weight,
        bias: Some(vb.get(outputs, "bias")?),
    })
}

/// Rotary positions: cos and sin of every position's angles (T × d, the
/// frequencies repeated for the two halves), as transformers'
/// `rotate_half` convention pairs dimension i with i + d/2.
pub(super) struct RotaryTables {
    cos: Tensor,
    sin: Tensor,
}

impl RotaryTables {
    pub(super) fn new(
        inverse_frequencies: &[f32],
        tokens: usize,
        vb_device: &candle_core::Device,
    ) -> Result<Self> {
        let half = inverse_frequencies.len();
        let (mut cos, mut sin) = (
            Vec::with_capacity(tokens * 2 * half),
            Vec::with_capacity(tokens * 2 * half),
        );
        for position in 0..tokens {
            for _ in 0..2 {
                for &inv in inverse_frequencies {
                    // f32 as transformers: position · inverse frequency, then cos and sin.
                    let angle = position as f32 * inv;
                    cos.push(angle.cos());
                    sin.push(angle.sin());
                }
            }
        }
        Ok(Self {
            cos: Tensor::from_vec(cos, (tokens, 2 * half), vb_device)?,
            sin: Tensor::from_vec(sin, (tokens, 2 * half), vb_device)?,
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

/// Queries, keys and values of one fused `hidden → 3·hidden` projection
/// (GPT-2's `c_attn`, ModernBERT's `Wqkv`), as three projections.
fn split_fused(fused: &Projection, hidden: usize) -> Result<[Projection; 3]> {
    let part = |i: usize| -> Result<Projection> {
        let bias = fused
            .bias
            .as_ref()
            .map(|bias| bias.narrow(0, i * hidden, hidden)?.contiguous())
            .transpose()?;
        Ok(Projection {
            weight: fused
                .weight
                .map(|w| w.narrow(0, i * hidden, hidden)?.contiguous())?,
            bias,
        })
    };
    Ok([part(0)?, part(1)?, part(2)?])
}

/// Self-attention with `heads` query heads sharing `kv_heads` key/value
/// heads (grouped-query; GPT-2 and ModernBERT have as many of each).
pub(super) struct Attention {
    query: Projection,
    key: Projection,
    value: Projection,
    output: Projection,
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
        let (query, key, value, output) = if config.family == Family::Gpt2 {
            let fused = conv1d(vb.pp("attn.c_attn"), hidden, 3 * hidden)?;
            let [q, k, v] = split_fused(&fused, hidden)?;
            (q, k, v, conv1d(vb.pp("attn.c_proj"), hidden, hidden)?)
        } else if config.family == Family::ModernBert {
            let vb = vb.pp("attn");
            let fused = linear(vb.pp("Wqkv"), hidden, 3 * hidden, shape.qkv_bias)?;
            let [q, k, v] = split_fused(&fused, hidden)?;
            (
                q,
                k,
                v,
                linear(vb.pp("Wo"), hidden, hidden, shape.output_bias)?,
            )
        } else {
            let vb = vb.pp("self_attn");
            let kv = kv_heads * head_dim;
            (
                linear(vb.pp("q_proj"), hidden, heads * head_dim, shape.qkv_bias)?,
                linear(vb.pp("k_proj"), hidden, kv, shape.qkv_bias)?,
                linear(vb.pp("v_proj"), hidden, kv, shape.qkv_bias)?,
                linear(vb.pp("o_proj"), heads * head_dim, hidden, shape.output_bias)?,
            )
        };
        Ok(Self {
            query,
            key,
            value,
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
        let mut query = split(self.query.forward(x)?, self.heads)?;
        let mut key = split(self.key.forward(x)?, self.kv_heads)?;
        let value = split(self.value.forward(x)?, self.kv_heads)?;
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

/// GPT-2's feed-forward (`c_fc`, activation, `c_proj`), the Llama
/// family's gated one: `down(act(gate(x)) · up(x))`, or ModernBERT's, whose
/// `Wi` yields the input and the gate side by side: `Wo(act(input) · gate)`.
pub(super) enum FeedForward {
    Plain {
        up: Projection,
        down: Projection,
    },
    Gated {
        gate: Projection,
        up: Projection,
        down: Projection,
    },
    FusedGated {
        input_and_gate: Projection,
        down: Projection,
    },
}

impl FeedForward {
    pub(super) fn load(
        vb: WeightBuilder,
        config: &ModelConfig,
        shape: &PreNormShape,
    ) -> Result<Self> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        Ok(if config.family == Family::Gpt2 {
            Self::Plain {
                up: conv1d(vb.pp("mlp.c_fc"), hidden, inner)?,
                down: conv1d(vb.pp("mlp.c_proj"), inner, hidden)?,
            }
        } else if config.family == Family::ModernBert {
            let vb = vb.pp("mlp");
            Self::FusedGated {
                input_and_gate: linear(vb.pp("Wi"), hidden, 2 * inner, shape.mlp_bias)?,
                down: linear(vb.pp("Wo"), inner, hidden, shape.mlp_bias)?,
            }
        } else {
            let vb = vb.pp("mlp");
            Self::Gated {
                gate: linear(vb.pp("gate_proj"), hidden, inner, shape.mlp_bias)?,
                up: linear(vb.pp("up_proj"), hidden, inner, shape.mlp_bias)?,
                down: linear(vb.pp("down_proj"), inner, hidden, shape.mlp_bias)?,
            }
        })
    }

    pub(super) fn forward(&self, x: &Tensor, activation: Activation) -> Result<Tensor> {
        let act = |x: Tensor| stack::activate(&x, activation);
        match self {
            Self::Plain { up, down } => down.forward(&act(up.forward(x)?)?),
            Self::Gated { gate, up, down } => {
                down.forward(&act(gate.forward(x)?)?.mul(&up.forward(x)?)?)
            }
            Self::FusedGated {
                input_and_gate,
                down,
            } => {
                let both = input_and_gate.forward(x)?;
                let inner = both.dim(D::Minus1)? / 2;
                let (input, gate) = (
                    both.narrow(D::Minus1, 0, inner)?,
                    both.narrow(D::Minus1, inner, inner)?,
                );
                down.forward(&act(input)?.mul(&gate)?)
            }
        }
    }
}

/// One pre-norm decoder layer: x + attention(norm(x)), then
/// x + feed-forward(norm(x)).
pub(super) struct DecoderLayer {
    pub(super) input_norm: Norm,
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
            Norm::Identity
        } else {
            Norm::load(vb.pp(first), config, shape)?
        };
        Ok(Self {
            input_norm,
            attention: Attention::load(&vb, config, shape, index)?,
            post_attention_norm: Norm::load(vb.pp(second), config, shape)?,
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
        let attended = self
            .attention
            .forward(&self.input_norm.forward(x)?, rotary, capture)?;
        if last {
            return Ok(None);
        }
        let x = x.add(&attended)?;
        let fed = self
            .feed_forward
            .forward(&self.post_attention_norm.forward(&x)?, activation)?;
        Ok(Some(x.add(&fed)?))
    }
}
