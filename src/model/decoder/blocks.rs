//! The decoder's blocks, each with `load(vb, …)` and a tensor `forward`,
//! in the variants the families take ([`super::config::Variant`],
//! ANALYSIS.md §8): LayerNorm, RMSNorm or Gemma's RMSNorm by (1 + w);
//! learned or rotary positions, rotary on all or the first share of each
//! head; GPT-2's Conv1D projections (stored inputs × outputs, queries, keys
//! and values fused in `c_attn`), separate `q_proj`, `k_proj`, `v_proj`
//! with grouped-query key/value heads, or one fused projection (ModernBERT's
//! `Wqkv`, Phi-3's `qkv_proj`, GPT-NeoX's `query_key_value` laid out head by
//! head); q/k RMSNorm per head or across heads; scores scaled by head_dim^−½
//! or `query_pre_attn_scalar`^−½ and optionally soft-capped; bidirectional
//! or causal, optionally within a window; a plain or a gated feed-forward
//! (separate, or fused gate-first); norms before and/or after each
//! sublayer, and a sequential or parallel residual.
//! Projection matrices stay in the checkpoint's precision and are widened
//! to float32 one at a time, for their product ([`Projection`]).

use super::config::{
    DecoderActivation, DecoderShape, FeedForwardLayout, LayerLayout, NormKind, QkNorm, QkvLayout,
};
use crate::captures::{AttentionMask, ScoreRule};
use crate::model::config::EncoderConfig;
use crate::model::family::Family;
use crate::model::weight::{Weight, WeightBuilder};
use candle_core::{Module, Result, Tensor, D};
use candle_nn::{LayerNorm, Linear, RmsNorm};

/// A norm: GPT-2's, GPT-NeoX's and ModernBERT's LayerNorm (without bias
/// unless the shape says), the Llama family's RMSNorm, Gemma's RMSNorm by
/// (1 + w); or none (ModernBERT's first layer, whose input is the
/// normalised embeddings; the norms a layer layout has not).
pub(super) enum Norm {
    Layer(LayerNorm),
    Rms(RmsNorm),
    Identity,
}

impl Norm {
    /// A norm over the hidden size.
    pub(super) fn load(
        vb: WeightBuilder,
        config: &EncoderConfig,
        shape: &DecoderShape,
    ) -> Result<Self> {
        Self::load_sized(vb, config.hidden_size, config, shape)
    }

    /// A norm of the model's kind over `size` values (the q/k norms').
    fn load_sized(
        vb: WeightBuilder,
        size: usize,
        config: &EncoderConfig,
        shape: &DecoderShape,
    ) -> Result<Self> {
        let eps = config.layer_norm_eps;
        let weight = vb.get(size, "weight")?;
        Ok(match shape.variant.norm {
            NormKind::LayerNorm => Self::Layer(if shape.norm_bias {
                LayerNorm::new(weight, vb.get(size, "bias")?, eps)
            } else {
                LayerNorm::new_no_bias(weight, eps)
            }),
            NormKind::Rms => Self::Rms(RmsNorm::new(weight, eps)),
            // Gemma stores w and scales by 1 + w, added in float32 as
            // transformers does: the sum is exact to compute once.
            NormKind::RmsPlusOne => Self::Rms(RmsNorm::new((weight + 1.0)?, eps)),
        })
    }

    /// The norm `name` below `vb`, or none when `name` is `None`.
    fn load_optional(
        vb: &WeightBuilder,
        name: Option<&str>,
        config: &EncoderConfig,
        shape: &DecoderShape,
    ) -> Result<Self> {
        match name {
            Some(name) => Self::load(vb.pp(name), config, shape),
            None => Ok(Self::Identity),
        }
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

    /// x·cos + rotate_half(x)·sin for heads × T × d. With partial rotary
    /// (tables narrower than d) only each head's first dimensions turn,
    /// `rotate_half` within them, and the rest pass unchanged.
    fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let (width, rotary) = (x.dim(D::Minus1)?, self.cos.dim(D::Minus1)?);
        if rotary < width {
            let turned = self.apply(&x.narrow(D::Minus1, 0, rotary)?)?;
            let kept = x.narrow(D::Minus1, rotary, width - rotary)?;
            return Tensor::cat(&[&turned, &kept], D::Minus1);
        }
        let half = width / 2;
        let first = x.narrow(D::Minus1, 0, half)?;
        let second = x.narrow(D::Minus1, half, half)?;
        let rotated = Tensor::cat(&[&second.neg()?, &first], D::Minus1)?;
        x.broadcast_mul(&self.cos)?
            .add(&rotated.broadcast_mul(&self.sin)?)
    }
}

/// Queries, keys and values of one fused projection whose outputs are all
/// queries, then all keys, then all values (`sizes` of each): GPT-2's
/// `c_attn`, ModernBERT's `Wqkv`, Phi-3's `qkv_proj`.
fn split_concatenated(fused: &Projection, sizes: [usize; 3]) -> Result<[Projection; 3]> {
    let part = |i: usize| -> Result<Projection> {
        let start: usize = sizes[..i].iter().sum();
        let rows = |t: &Tensor| t.narrow(0, start, sizes[i])?.contiguous();
        Ok(Projection {
            weight: fused.weight.map(rows)?,
            bias: fused.bias.as_ref().map(rows).transpose()?,
        })
    };
    Ok([part(0)?, part(1)?, part(2)?])
}

/// Queries, keys and values of GPT-NeoX's `query_key_value`, whose outputs
/// go head by head, each head's query, key and value side by side
/// (transformers views them as heads × 3·head_dim).
fn split_interleaved(fused: &Projection, heads: usize, head_dim: usize) -> Result<[Projection; 3]> {
    let part = |i: usize| -> Result<Projection> {
        let rows = |t: &Tensor| -> Result<Tensor> {
            let mut dims = t.dims().to_vec();
            let rest = dims.split_off(1);
            let grouped: Vec<usize> = [heads, 3, head_dim]
                .into_iter()
                .chain(rest.clone())
                .collect();
            let flat: Vec<usize> = [heads * head_dim].into_iter().chain(rest).collect();
            t.reshape(grouped)?
                .narrow(1, i, 1)?
                .contiguous()?
                .reshape(flat)
        };
        Ok(Projection {
            weight: fused.weight.map(rows)?,
            bias: fused.bias.as_ref().map(rows).transpose()?,
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
    /// Qwen3's, Gemma 3's and OLMo 2's RMSNorm of queries and keys.
    query_norm: Norm,
    key_norm: Norm,
    qk_norm: QkNorm,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// See [`DecoderShape::sliding_windows`].
    window: Option<usize>,
    causal: bool,
    scores: ScoreRule,
}

/// Each family's names of its attention's tensors: (the attention's
/// prefix, its fused q/k/v projection (or "": `q_proj`, `k_proj`,
/// `v_proj`), its output projection).
pub(super) fn attention_names(family: Family) -> (&'static str, &'static str, &'static str) {
    match family {
        Family::Gpt2 => ("attn", "c_attn", "c_proj"),
        Family::ModernBert => ("attn", "Wqkv", "Wo"),
        Family::GptNeoX => ("attention", "query_key_value", "dense"),
        Family::Phi3 => ("self_attn", "qkv_proj", "o_proj"),
        _ => ("self_attn", "", "o_proj"),
    }
}

/// Each family's names of its feed-forward's projections below `mlp`:
/// [up, down] (plain), [gate, up, down] (gated: gate and up fused in the
/// first for the fused layout, whose second name is then "").
pub(super) fn feed_forward_names(family: Family, layout: FeedForwardLayout) -> [&'static str; 3] {
    match (family, layout) {
        (Family::Gpt2, _) => ["c_fc", "c_proj", ""],
        (_, FeedForwardLayout::Plain) => ["dense_h_to_4h", "dense_4h_to_h", ""],
        (Family::ModernBert, _) => ["Wi", "", "Wo"],
        (_, FeedForwardLayout::FusedGated) => ["gate_up_proj", "", "down_proj"],
        (_, FeedForwardLayout::Gated) => ["gate_proj", "up_proj", "down_proj"],
    }
}

/// The scores of Q·Kᵀ under `rule` (scaled, and soft-capped where the
/// family caps them), as transformers' eager attention makes them.
fn scores(rule: ScoreRule, products: &Tensor) -> Result<Tensor> {
    let scores = (products * rule.scale)?;
    match rule.softcap {
        Some(cap) => (scores / cap)?.tanh()? * cap,
        None => Ok(scores),
    }
}

impl Attention {
    /// `vb` is rooted at the layer.
    pub(super) fn load(
        vb: &WeightBuilder,
        config: &EncoderConfig,
        shape: &DecoderShape,
        layer: usize,
    ) -> Result<Self> {
        let hidden = config.hidden_size;
        let (heads, kv_heads, head_dim) = (
            config.num_attention_heads,
            shape.num_key_value_heads,
            shape.head_dim,
        );
        let (q, kv) = (heads * head_dim, kv_heads * head_dim);
        let (prefix, fused, output) = attention_names(config.family);
        let vb = vb.pp(prefix);
        let bias = shape.qkv_bias;
        let [query, key, value] = match shape.variant.qkv_layout {
            QkvLayout::Separate => [
                linear(vb.pp("q_proj"), hidden, q, bias)?,
                linear(vb.pp("k_proj"), hidden, kv, bias)?,
                linear(vb.pp("v_proj"), hidden, kv, bias)?,
            ],
            QkvLayout::Concatenated if config.family == Family::Gpt2 => {
                split_concatenated(&conv1d(vb.pp(fused), hidden, 3 * hidden)?, [hidden; 3])?
            }
            QkvLayout::Concatenated => {
                let all = linear(vb.pp(fused), hidden, q + 2 * kv, bias)?;
                split_concatenated(&all, [q, kv, kv])?
            }
            QkvLayout::InterleavedPerHead => {
                let all = linear(vb.pp(fused), hidden, 3 * q, bias)?;
                split_interleaved(&all, heads, head_dim)?
            }
        };
        let output = if config.family == Family::Gpt2 {
            conv1d(vb.pp(output), hidden, hidden)?
        } else {
            linear(vb.pp(output), q, hidden, shape.output_bias)?
        };
        let qk_norm = shape.variant.qk_norm;
        let (query_norm, key_norm) = match qk_norm {
            QkNorm::None => (Norm::Identity, Norm::Identity),
            QkNorm::PerHead => (
                Norm::load_sized(vb.pp("q_norm"), head_dim, config, shape)?,
                Norm::load_sized(vb.pp("k_norm"), head_dim, config, shape)?,
            ),
            QkNorm::AcrossHeads => (
                Norm::load_sized(vb.pp("q_norm"), q, config, shape)?,
                Norm::load_sized(vb.pp("k_norm"), kv, config, shape)?,
            ),
        };
        Ok(Self {
            query,
            key,
            value,
            output,
            query_norm,
            key_norm,
            qk_norm,
            heads,
            kv_heads,
            head_dim,
            window: shape.sliding_windows[layer],
            causal: config.is_causal(),
            scores: shape.score_rule(),
        })
    }

    /// Which keys each query sees.
    pub(super) fn mask(&self) -> AttentionMask {
        AttentionMask {
            causal: self.causal,
            window: self.window,
        }
    }

    /// T×hidden → (the output projection of every head's P·V, capture).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
    ) -> Result<(Tensor, AttentionCapture)> {
        let tokens = x.dim(0)?;
        let split = |projected: Tensor, heads: usize| -> Result<Tensor> {
            projected
                .reshape((tokens, heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        // The q/k norms come before rotary: over all heads on the
        // projection (OLMo 2), or over each head once split (Qwen3, Gemma 3).
        let across = self.qk_norm == QkNorm::AcrossHeads;
        let project = |projection: &Projection, norm: &Norm, heads: usize| -> Result<Tensor> {
            let mut projected = projection.forward(x)?;
            if across {
                projected = norm.forward(&projected)?;
            }
            let split = split(projected, heads)?;
            if across {
                Ok(split)
            } else {
                norm.forward(&split)
            }
        };
        let mut query = project(&self.query, &self.query_norm, self.heads)?;
        let mut key = project(&self.key, &self.key_norm, self.kv_heads)?;
        let value = split(self.value.forward(x)?, self.kv_heads)?;
        if let Some(rotary) = rotary {
            query = rotary.apply(&query)?;
            key = rotary.apply(&key)?;
        }
        // Query head h reads key/value head h / (heads / kv_heads), as
        // transformers' `repeat_kv` lays them out.
        let group = self.heads / self.kv_heads;
        let repeat = |t: Tensor| -> Result<Tensor> {
            if group == 1 {
                return Ok(t);
            }
            t.unsqueeze(1)?
                .expand((self.kv_heads, group, tokens, self.head_dim))?
                .reshape((self.heads, tokens, self.head_dim))
        };
        let (keys, queries) = (key.clone(), query.clone());
        let (key, value) = (repeat(key)?, repeat(value)?);
        let scores = scores(self.scores, &query.matmul(&key.t()?)?)?;
        let mask = attention_mask(tokens, self.mask(), x.device())?;
        let attention = candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&mask)?)?;
        let head_outputs = attention.matmul(&value)?;
        let similarity = head_outputs.matmul(&head_outputs.t()?)?;
        let context = head_outputs
            .transpose(0, 1)?
            .contiguous()?
            .reshape((tokens, self.heads * self.head_dim))?;
        Ok((
            self.output.forward(&context)?,
            AttentionCapture {
                attention,
                head_outputs,
                similarity,
                queries,
                keys,
            },
        ))
    }
}

/// 0 where query i may see key j, −∞ elsewhere: those attentions come out
/// exactly 0, as transformers' do (its mask adds the smallest float, whose
/// exponential is 0 too).
pub(super) fn attention_mask(
    tokens: usize,
    mask: AttentionMask,
    device: &candle_core::Device,
) -> Result<Tensor> {
    let values: Vec<f32> = (0..tokens)
        .flat_map(|i| {
            (0..tokens).map(move |j| {
                if mask.visible(i, j) {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
        })
        .collect();
    Tensor::from_vec(values, (tokens, tokens), device)
}

/// One layer's attention as the decoder captures it: P and S (H×T×T), O
/// (H×T×d), and the rotated queries (H×T×d) and keys (H_kv×T×d) P is
/// made from.
pub(super) struct AttentionCapture {
    pub attention: Tensor,
    pub head_outputs: Tensor,
    pub similarity: Tensor,
    pub queries: Tensor,
    pub keys: Tensor,
}

/// GPT-2's and GPT-NeoX's feed-forward (up, activation, down), the Llama
/// family's gated one: `down(act(gate(x)) · up(x))`, or ModernBERT's and
/// Phi-3's, whose one projection (`Wi`, `gate_up_proj`) yields the
/// activated half and the other side by side: `down(act(first) · second)`.
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
        config: &EncoderConfig,
        shape: &DecoderShape,
    ) -> Result<Self> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let bias = shape.mlp_bias;
        let vb = vb.pp("mlp");
        let layout = shape.variant.feed_forward;
        let [first, second, third] = feed_forward_names(config.family, layout);
        Ok(match layout {
            FeedForwardLayout::Plain if config.family == Family::Gpt2 => Self::Plain {
                up: conv1d(vb.pp(first), hidden, inner)?,
                down: conv1d(vb.pp(second), inner, hidden)?,
            },
            FeedForwardLayout::Plain => Self::Plain {
                up: linear(vb.pp(first), hidden, inner, bias)?,
                down: linear(vb.pp(second), inner, hidden, bias)?,
            },
            FeedForwardLayout::FusedGated => Self::FusedGated {
                input_and_gate: linear(vb.pp(first), hidden, 2 * inner, bias)?,
                down: linear(vb.pp(third), inner, hidden, bias)?,
            },
            FeedForwardLayout::Gated => Self::Gated {
                gate: linear(vb.pp(first), hidden, inner, bias)?,
                up: linear(vb.pp(second), hidden, inner, bias)?,
                down: linear(vb.pp(third), inner, hidden, bias)?,
            },
        })
    }

    pub(super) fn forward(&self, x: &Tensor, activation: DecoderActivation) -> Result<Tensor> {
        let act = |x: Tensor| -> Result<Tensor> {
            match activation {
                DecoderActivation::GeluTanh => x.gelu(),
                DecoderActivation::Gelu => x.gelu_erf(),
                DecoderActivation::Silu => candle_nn::ops::silu(&x),
                DecoderActivation::Relu => x.relu(),
            }
        };
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

/// One decoder layer, its norms placed and its residual summed as its
/// [`LayerLayout`] says.
pub(super) struct DecoderLayer {
    /// Before and after the attention, before and after the feed-forward;
    /// [`Norm::Identity`] where the layout has none.
    pub(super) attention_input_norm: Norm,
    pub(super) attention: Attention,
    pub(super) attention_output_norm: Norm,
    pub(super) feed_forward_input_norm: Norm,
    pub(super) feed_forward: FeedForward,
    pub(super) feed_forward_output_norm: Norm,
    layout: LayerLayout,
    /// A sliding-window layer (ModernBERT's and Gemma 3's local layers
    /// rotate by their own theta).
    pub(super) local: bool,
}

impl DecoderLayer {
    /// `vb` is rooted at the model.
    pub(super) fn load(
        vb: &WeightBuilder,
        config: &EncoderConfig,
        shape: &DecoderShape,
        index: usize,
    ) -> Result<Self> {
        let family = config.family;
        let vb = vb.pp(if family == Family::Gpt2 {
            format!("h.{index}")
        } else {
            format!("layers.{index}")
        });
        let layout = shape.variant.layout;
        let [before_attention, after_attention, before_feed_forward, after_feed_forward] =
            norm_names(family, layout, index);
        let norm = |name| Norm::load_optional(&vb, name, config, shape);
        Ok(Self {
            attention_input_norm: norm(before_attention)?,
            attention: Attention::load(&vb, config, shape, index)?,
            attention_output_norm: norm(after_attention)?,
            feed_forward_input_norm: norm(before_feed_forward)?,
            feed_forward: FeedForward::load(vb.clone(), config, shape)?,
            feed_forward_output_norm: norm(after_feed_forward)?,
            layout,
            local: shape.sliding_windows[index].is_some(),
        })
    }

    /// The layer's capture, and its output unless `last` (nothing reads the
    /// final hidden states, so the last layer stops after its attention).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        activation: DecoderActivation,
        last: bool,
    ) -> Result<(Option<Tensor>, AttentionCapture)> {
        let (attended, capture) = self
            .attention
            .forward(&self.attention_input_norm.forward(x)?, rotary)?;
        if last {
            return Ok((None, capture));
        }
        let attended = self.attention_output_norm.forward(&attended)?;
        let feed = |input: &Tensor| -> Result<Tensor> {
            let fed = self
                .feed_forward
                .forward(&self.feed_forward_input_norm.forward(input)?, activation)?;
            self.feed_forward_output_norm.forward(&fed)
        };
        let output = if self.layout == LayerLayout::ParallelResidual {
            // Both read x; transformers sums (ff + attention) + x.
            feed(x)?.add(&attended)?.add(x)?
        } else {
            let x = x.add(&attended)?;
            x.add(&feed(&x)?)?
        };
        Ok((Some(output), capture))
    }
}

/// Each family's names of a layer's norms before and after its attention
/// and its feed-forward, `None` where its layout has none.
pub(super) fn norm_names(
    family: Family,
    layout: LayerLayout,
    index: usize,
) -> [Option<&'static str>; 4] {
    match (family, layout) {
        (Family::Gpt2, _) => [Some("ln_1"), None, Some("ln_2"), None],
        // ModernBERT's first layer reads the normalised embeddings as they are.
        (Family::ModernBert, _) => [
            (index > 0).then_some("attn_norm"),
            None,
            Some("mlp_norm"),
            None,
        ],
        (_, LayerLayout::PreNorm | LayerLayout::ParallelResidual) => [
            Some("input_layernorm"),
            None,
            Some("post_attention_layernorm"),
            None,
        ],
        (_, LayerLayout::Sandwich) => [
            Some("input_layernorm"),
            Some("post_attention_layernorm"),
            Some("pre_feedforward_layernorm"),
            Some("post_feedforward_layernorm"),
        ],
        (_, LayerLayout::PostNorm) => [
            None,
            Some("post_attention_layernorm"),
            None,
            Some("post_feedforward_layernorm"),
        ],
    }
}
