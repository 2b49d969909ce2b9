//! The decoder's blocks, each with `load(vb, …)`, a tensor `forward` and
//! `cpu()` (its parameters as slices for the CPU pass), in the variants the
//! families take ([`PreNormShape::variant`], ANALYSIS.md §8): LayerNorm,
//! RMSNorm or Gemma's RMSNorm by (1 + w); learned or rotary positions,
//! rotary on all or the first share of each head; GPT-2's Conv1D
//! projections (stored inputs × outputs, queries, keys and values fused in
//! `c_attn`), separate `q_proj`, `k_proj`, `v_proj` with grouped-query
//! key/value heads (fused at load), or one fused projection (ModernBERT's
//! `Wqkv`, Phi-3's `qkv_proj`, GPT-NeoX's `query_key_value`, laid out head
//! by head and reordered at load); q/k norms per head or across heads;
//! bidirectional or causal, optionally within a window; a plain or a gated
//! feed-forward (gate and up fused at load, or fused gate-first in the
//! checkpoint); norms before and/or after each sublayer, and a sequential
//! or parallel residual. Projection matrices stay in the checkpoint's
//! precision ([`Dense`]). On the CPU every variant runs on the tuned CPU
//! pass ([`DecoderLayer::cpu`]); elsewhere on candle's ops.

use crate::kernels::attention::{attend_rows, similarity_rows, AttentionMask, ScoreRule};
use crate::model::ablation::heads::LayerAblation;
use crate::model::blocks::{Dense, HeadGrams, Norm};
use crate::model::config::pre_norm::{
    attention_names, feed_forward_names, norm_names, FeedForwardLayout, LayerLayout, NormKind,
    QkNorm, QkvLayout,
};
use crate::model::config::{Activation, ModelConfig, PreNormShape, RotaryFrequencies};
use crate::model::cpu_pass::{LayerCpu, QkNormsCpu, RotaryCpu};
use crate::model::family::Family;
use crate::model::stack::{
    self, attend_layer, HostValues, LayerAttention, LayerCache, LayerCaptures,
};
use crate::model::weight::{Weight, WeightBuilder};
use candle_core::{Result, Tensor, D};

/// A norm over the hidden size, of the family's kind.
pub(super) fn norm(vb: WeightBuilder, config: &ModelConfig, shape: &PreNormShape) -> Result<Norm> {
    norm_sized(vb, config.hidden_size, config, shape)
}

/// A norm of the family's kind over `size` values (the q/k norms'):
/// LayerNorm (with a bias where the shape says), RMSNorm, or Gemma's
/// RMSNorm by (1 + w), whose sum transformers adds in float32, so adding it
/// once at load is the same arithmetic.
fn norm_sized(
    vb: WeightBuilder,
    size: usize,
    config: &ModelConfig,
    shape: &PreNormShape,
) -> Result<Norm> {
    let eps = config.layer_norm_eps;
    match shape.variant.norm {
        NormKind::LayerNorm => Norm::layer(vb, size, eps, shape.norm_bias),
        NormKind::Rms => Norm::rms(vb, size, eps),
        NormKind::RmsPlusOne => Norm::rms_plus_one(vb, size, eps),
    }
}

/// The norm `name` below `vb`, or none where the layout has none.
fn optional_norm(
    vb: &WeightBuilder,
    name: Option<&str>,
    config: &ModelConfig,
    shape: &PreNormShape,
) -> Result<Option<Norm>> {
    name.map(|name| norm(vb.pp(name), config, shape))
        .transpose()
}

/// `x` through `norm`, or as it is.
fn normed(norm: &Option<Norm>, x: &Tensor) -> Result<Tensor> {
    match norm {
        Some(norm) => norm.forward(x),
        None => Ok(x.clone()),
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

/// GPT-NeoX's `query_key_value` (outputs head by head, each head's query,
/// key and value side by side, as transformers views them: heads × 3 ×
/// head_dim) with its rows reordered to all queries, all keys, all values,
/// the layout the attention splits. Moving rows changes no value.
fn interleaved_per_head(
    vb: WeightBuilder,
    inputs: usize,
    heads: usize,
    head_dim: usize,
    bias: bool,
) -> Result<Dense> {
    let outputs = 3 * heads * head_dim;
    let order: Vec<u32> = (0..3)
        .flat_map(|part| {
            (0..heads).flat_map(move |head| {
                (0..head_dim).map(move |i| ((head * 3 + part) * head_dim + i) as u32)
            })
        })
        .collect();
    let order = Tensor::new(order.as_slice(), vb.device())?;
    let rows = |t: &Tensor| t.index_select(&order, 0);
    let weight = vb.weight((outputs, inputs), "weight")?.map(rows)?;
    let bias = bias
        .then(|| vb.get(outputs, "bias"))
        .transpose()?
        .map(|b| rows(&b))
        .transpose()?;
    Dense::new(&weight, bias.as_ref())
}

/// Rotary positions on a device: the tables of [`RotaryCpu`] as tensors.
pub(super) struct RotaryTables {
    cos: Tensor,
    sin: Tensor,
}

impl RotaryTables {
    /// The tables of the positions `positions` (all of an input's, or
    /// the new tokens' of a cached step).
    pub(super) fn positions(
        frequencies: &RotaryFrequencies,
        positions: std::ops::Range<usize>,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let tables = RotaryCpu::new(frequencies, positions.end);
        let width = 2 * frequencies.inverse.len();
        let rows = positions.start * width..positions.end * width;
        let shape = (positions.len(), width);
        Ok(Self {
            cos: Tensor::from_slice(&tables.cos()[rows.clone()], shape, device)?,
            sin: Tensor::from_slice(&tables.sin()[rows], shape, device)?,
        })
    }

    /// x·cos + rotate_half(x)·sin for heads × T × d. With partial rotary
    /// (tables narrower than d) only each head's first dimensions turn,
    /// `rotate_half` within them, and the rest pass unchanged.
    fn apply(&self, x: &Tensor) -> Result<Tensor> {
        let (width, rotary) = (x.dim(D::Minus1)?, self.cos.dim(D::Minus1)?);
        if rotary < width {
            let turned = self.apply(&x.narrow(D::Minus1, 0, rotary)?.contiguous()?)?;
            let kept = x.narrow(D::Minus1, rotary, width - rotary)?;
            return Tensor::cat(&[&turned, &kept], D::Minus1)?.contiguous();
        }
        let half = width / 2;
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
    /// Its heads' Gram matrices in `output`, for value weighting.
    output_grams: HeadGrams,
    /// Qwen3's, Gemma 3's and OLMo 2's norms of queries and keys, before
    /// rotary: over each head (`QkNorm::PerHead`) or all heads together.
    query_norm: Option<Norm>,
    key_norm: Option<Norm>,
    qk_norm: QkNorm,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    rule: ScoreRule,
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
        let (q, kv) = (heads * head_dim, kv_heads * head_dim);
        let (prefix, fused_name, output_name) = attention_names(config.family);
        let vb = vb.pp(prefix);
        let bias = shape.qkv_bias;
        let qkv = match shape.variant.qkv_layout {
            QkvLayout::Concatenated if config.family == Family::Gpt2 => {
                conv1d(vb.pp(fused_name), hidden, 3 * hidden)?
            }
            QkvLayout::Concatenated => Dense::load(vb.pp(fused_name), hidden, q + 2 * kv, bias)?,
            QkvLayout::InterleavedPerHead => {
                interleaved_per_head(vb.pp(fused_name), hidden, heads, head_dim, bias)?
            }
            QkvLayout::Separate => {
                let parts = [("q_proj", q), ("k_proj", kv), ("v_proj", kv)];
                fused(&vb, &parts, hidden, bias)?
            }
        };
        let output = if config.family == Family::Gpt2 {
            conv1d(vb.pp(output_name), hidden, hidden)?
        } else {
            Dense::load(vb.pp(output_name), q, hidden, shape.output_bias)?
        };
        let qk_norm = shape.variant.qk_norm;
        let qk_sizes = match qk_norm {
            QkNorm::None => None,
            QkNorm::PerHead => Some((head_dim, head_dim)),
            QkNorm::AcrossHeads => Some((q, kv)),
        };
        let (query_norm, key_norm) = match qk_sizes {
            None => (None, None),
            Some((query, key)) => (
                Some(norm_sized(vb.pp("q_norm"), query, config, shape)?),
                Some(norm_sized(vb.pp("k_norm"), key, config, shape)?),
            ),
        };
        let mask = AttentionMask {
            causal: config.is_causal(),
            window: shape.sliding_windows[layer],
        };
        Ok(Self {
            qkv,
            output,
            output_grams: HeadGrams::default(),
            query_norm,
            key_norm,
            qk_norm,
            heads,
            kv_heads,
            head_dim,
            rule: shape.score_rule(mask),
        })
    }

    /// How its heads make their attention: the scores' scale and cap, and
    /// which keys each query sees.
    pub(super) fn score_rule(&self) -> ScoreRule {
        self.rule
    }

    /// Its heads' Gram matrices in the output projection (H×d×d), for
    /// value weighting ([`crate::kernels::attention::value_norms`]).
    pub(super) fn value_grams(&self) -> Result<&[f32]> {
        self.output_grams
            .of(&self.output, self.heads, self.head_dim)
    }

    /// The queries (H×T×d), keys and values (H_kv×T×d) of the rows `x`
    /// (T×hidden): normed where the family norms them, rotated by
    /// `rotary` (the tables of those rows' positions).
    fn heads_of(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let tokens = x.dim(0)?;
        let split = |projected: Tensor, heads: usize| -> Result<Tensor> {
            projected
                .reshape((tokens, heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let qkv = self.qkv.forward(x)?;
        let (q, kv) = (self.heads * self.head_dim, self.kv_heads * self.head_dim);
        // The q/k norms come before rotary: over all heads on the
        // projection (OLMo 2), or over each head once split (Qwen3, Gemma 3).
        let across = self.qk_norm == QkNorm::AcrossHeads;
        let project = |start: usize, size: usize, norm: &Option<Norm>, heads: usize| {
            let projected = qkv.narrow(1, start, size)?;
            if across {
                split(normed(norm, &projected.contiguous()?)?, heads)
            } else {
                normed(norm, &split(projected, heads)?)
            }
        };
        let mut query = project(0, q, &self.query_norm, self.heads)?;
        let mut key = project(q, kv, &self.key_norm, self.kv_heads)?;
        let value = split(qkv.narrow(1, q + kv, kv)?, self.kv_heads)?;
        if let Some(rotary) = rotary {
            query = rotary.apply(&query)?;
            key = rotary.apply(&key)?;
        }
        Ok((query, key, value))
    }

    /// T×hidden → the output projection of every head's P·V; every head's
    /// P, O and S, and the queries and keys they are made from, into `out`.
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        out: &mut AttentionBuffers,
        ablation: LayerAblation,
    ) -> Result<Tensor> {
        let tokens = x.dim(0)?;
        let (query, key, value) = self.heads_of(x, rotary)?;
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
            (&self.score_rule(), self.value_grams()?),
            &mut LayerAttention {
                attention: &mut out.attention,
                attention_entropy: &mut out.attention_entropy,
                head_outputs: &mut out.head_outputs,
                similarity: &mut out.similarity,
                value_norms: &mut out.value_norms,
            },
        );
        out.queries.clear();
        out.queries.extend_from_slice(query.get());
        out.keys.clear();
        out.keys.extend_from_slice(key.get());
        let context =
            stack::heads_side_by_side(&out.head_outputs, self.heads, tokens, x.device(), ablation)?;
        self.output.forward(&context)
    }

    /// [`Attention::forward`] of the rows `x` (n×hidden) of new tokens,
    /// which follow the tokens `cache` holds: their keys, values and head
    /// outputs join the cache, and their rows of P, O and S (each head's n
    /// rows against all T tokens so far) go to `rows` (not its queries and
    /// keys: nothing recomputes rows).
    pub(super) fn forward_cached(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        cache: &mut LayerCache,
        rows: &mut AttentionBuffers,
    ) -> Result<Tensor> {
        let n = x.dim(0)?;
        let d = self.head_dim;
        let (query, key, value) = self.heads_of(x, rotary)?;
        let (query, key, value) = (
            HostValues::of(&query)?,
            HostValues::of(&key)?,
            HostValues::of(&value)?,
        );
        cache.append(key.get(), value.get(), self.kv_heads, n, d);
        let tokens = cache.tokens;
        let first = tokens - n;
        rows.attention.resize(self.heads * n * tokens, 0.0);
        rows.attention_entropy.resize(self.heads * n, 0.0);
        rows.similarity.resize(self.heads * n * tokens, 0.0);
        rows.head_outputs.resize(self.heads * n * d, 0.0);
        let group = self.heads / self.kv_heads.max(1);
        let rule = self.score_rule();
        cache.outputs.resize_with(self.heads, Vec::new);
        if first == 0 {
            // The prompt: every row, as a full pass makes them (its heads
            // shared out among threads).
            attend_layer(
                query.get(),
                key.get(),
                value.get(),
                (n, d),
                (&rule, &[]),
                &mut LayerAttention {
                    attention: &mut rows.attention,
                    attention_entropy: &mut rows.attention_entropy,
                    head_outputs: &mut rows.head_outputs,
                    similarity: &mut rows.similarity,
                    value_norms: &mut [],
                },
            );
            for (head, outputs) in cache.outputs.iter_mut().enumerate() {
                outputs.extend_from_slice(&rows.head_outputs[head * n * d..][..n * d]);
            }
        } else {
            for head in 0..self.heads {
                let kv = head / group.max(1);
                let square = n * tokens;
                let output = &mut rows.head_outputs[head * n * d..][..n * d];
                attend_rows(
                    &query.get()[head * n * d..][..n * d],
                    &cache.keys[kv],
                    &cache.values[kv],
                    d,
                    first,
                    &rule,
                    (
                        &mut rows.attention[head * square..][..square],
                        Some(&mut rows.attention_entropy[head * n..][..n]),
                    ),
                    output,
                );
                cache.outputs[head].extend_from_slice(output);
                similarity_rows(
                    output,
                    &cache.outputs[head],
                    d,
                    &mut rows.similarity[head * square..][..square],
                );
            }
        }
        let context = stack::heads_side_by_side(
            &rows.head_outputs,
            self.heads,
            n,
            x.device(),
            LayerAblation::NONE,
        )?;
        self.output.forward(&context)
    }
}

/// One layer's attention as the decoder captures it, kept for the whole
/// pass: P and S (H×T×T), P's row entropies (H×T), O (H×T×d), the value
/// norms (H×T; none on a generation step), and the rotated queries
/// (H×T×d) and keys (H_kv×T×d) P is made from.
#[derive(Default)]
pub(super) struct AttentionBuffers {
    attention: Vec<f32>,
    attention_entropy: Vec<f32>,
    head_outputs: Vec<f32>,
    similarity: Vec<f32>,
    value_norms: Vec<f32>,
    queries: Vec<f32>,
    keys: Vec<f32>,
}

impl AttentionBuffers {
    fn resize(&mut self, heads: usize, tokens: usize, head_dim: usize) {
        self.attention.resize(heads * tokens * tokens, 0.0);
        self.attention_entropy.resize(heads * tokens, 0.0);
        self.similarity.resize(heads * tokens * tokens, 0.0);
        self.head_outputs.resize(heads * tokens * head_dim, 0.0);
        self.value_norms.resize(heads * tokens, 0.0);
    }

    pub(super) fn captures(&self) -> LayerCaptures<'_> {
        LayerCaptures {
            attention: &self.attention,
            attention_entropy: &self.attention_entropy,
            head_outputs: &self.head_outputs,
            similarity: &self.similarity,
            value_norms: &self.value_norms,
            queries: &self.queries,
            keys: &self.keys,
        }
    }
}

/// A plain feed-forward (GPT-2's `c_fc`, activation, `c_proj`; GPT-NeoX's
/// `dense_h_to_4h`, `dense_4h_to_h`), or a gated one whose first
/// projection yields the activated half and the half it is multiplied by
/// side by side: the Llama family's `down(act(gate(x)) · up(x))`
/// (`gate_proj` and `up_proj` fused at load), ModernBERT's `Wo(act(input) ·
/// gate)` (from `Wi`) and Phi-3's (from `gate_up_proj`).
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
        let bias = shape.mlp_bias;
        let vb = vb.pp("mlp");
        let layout = shape.variant.feed_forward;
        let [first, second, third] = feed_forward_names(config.family);
        Ok(match layout {
            FeedForwardLayout::Plain if config.family == Family::Gpt2 => Self {
                up: conv1d(vb.pp(first), hidden, inner)?,
                gated: false,
                down: conv1d(vb.pp(second), inner, hidden)?,
            },
            FeedForwardLayout::Plain => Self {
                up: Dense::load(vb.pp(first), hidden, inner, bias)?,
                gated: false,
                down: Dense::load(vb.pp(second), inner, hidden, bias)?,
            },
            FeedForwardLayout::FusedGated => Self {
                up: Dense::load(vb.pp(first), hidden, 2 * inner, bias)?,
                gated: true,
                down: Dense::load(vb.pp(third), inner, hidden, bias)?,
            },
            FeedForwardLayout::Gated => Self {
                up: fused(&vb, &[(first, inner), (second, inner)], hidden, bias)?,
                gated: true,
                down: Dense::load(vb.pp(third), inner, hidden, bias)?,
            },
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

/// One decoder layer, its norms placed and its residual summed as its
/// [`LayerLayout`] says.
pub(super) struct DecoderLayer {
    /// Before and after the attention, before and after the feed-forward;
    /// `None` where the layout has none (and ModernBERT's first layer, whose
    /// input is the normalised embeddings).
    pub(super) attention_input_norm: Option<Norm>,
    pub(super) attention: Attention,
    attention_output_norm: Option<Norm>,
    feed_forward_input_norm: Option<Norm>,
    pub(super) feed_forward: FeedForward,
    feed_forward_output_norm: Option<Norm>,
    layout: LayerLayout,
    /// A sliding-window layer (ModernBERT's and Gemma 3's local layers
    /// rotate by their own theta).
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
        let vb = vb.pp(if config.family == Family::Gpt2 {
            format!("h.{index}")
        } else {
            format!("layers.{index}")
        });
        let layout = shape.variant.layout;
        let [before_attention, after_attention, before_feed_forward, after_feed_forward] =
            norm_names(config.family, index);
        let norm = |name| optional_norm(&vb, name, config, shape);
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

    /// The layer's capture into `capture`, and its output unless `last`
    /// (the study reads no final hidden states, so its last layer may stop
    /// after its attention).
    pub(super) fn forward(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        activation: Activation,
        capture: &mut AttentionBuffers,
        ablation: LayerAblation,
        last: bool,
    ) -> Result<Option<Tensor>> {
        let input = normed(&self.attention_input_norm, x)?;
        let attended = self.attention.forward(&input, rotary, capture, ablation)?;
        if last {
            return Ok(None);
        }
        self.after_attention(x, &attended, activation).map(Some)
    }

    /// [`DecoderLayer::forward`] of new tokens' rows through the cache
    /// ([`Attention::forward_cached`]): their output.
    pub(super) fn forward_cached(
        &self,
        x: &Tensor,
        rotary: Option<&RotaryTables>,
        activation: Activation,
        cache: &mut LayerCache,
        rows: &mut AttentionBuffers,
    ) -> Result<Tensor> {
        let input = normed(&self.attention_input_norm, x)?;
        let attended = self.attention.forward_cached(&input, rotary, cache, rows)?;
        self.after_attention(x, &attended, activation)
    }

    /// The layer's output from its input `x` and its attention's output:
    /// the norms after it, the feed-forward and the residual.
    fn after_attention(
        &self,
        x: &Tensor,
        attended: &Tensor,
        activation: Activation,
    ) -> Result<Tensor> {
        let attended = normed(&self.attention_output_norm, attended)?;
        let feed = |input: &Tensor| -> Result<Tensor> {
            let fed = self
                .feed_forward
                .forward(&normed(&self.feed_forward_input_norm, input)?, activation)?;
            normed(&self.feed_forward_output_norm, &fed)
        };
        if self.layout == LayerLayout::ParallelResidual {
            // Both read x; transformers sums (ff + attention) + x.
            feed(x)?.add(&attended)?.add(x)
        } else {
            let x = x.add(&attended)?;
            x.add(&feed(&x)?)
        }
    }

    /// Whether the CPU pass computes this layer: every layer, but for q/k
    /// norms across heads that are not RMSNorms (no family has them).
    pub(super) fn fits_cpu_pass(&self) -> bool {
        self.attention.qk_norm != QkNorm::AcrossHeads
            || [&self.attention.query_norm, &self.attention.key_norm]
                .iter()
                .all(|norm| norm.as_ref().is_some_and(Norm::is_rms))
    }

    /// Its parameters as slices for the CPU pass, rotated by `rotary`
    /// (a layer that [`DecoderLayer::fits_cpu_pass`]).
    pub(super) fn cpu<'a>(
        &'a self,
        activation: Activation,
        rotary: Option<&'a RotaryCpu>,
    ) -> Result<LayerCpu<'a>> {
        let cpu = |norm: &'a Option<Norm>| norm.as_ref().map(Norm::cpu).transpose();
        let attention = &self.attention;
        let qk_norms = match (&attention.query_norm, &attention.key_norm) {
            (Some(query), Some(key)) => Some(QkNormsCpu {
                query: query.cpu()?,
                key: key.cpu()?,
                across_heads: attention.qk_norm == QkNorm::AcrossHeads,
            }),
            _ => None,
        };
        Ok(LayerCpu {
            attention_norm: cpu(&self.attention_input_norm)?,
            qkv: attention.qkv.cpu()?,
            qk_norms,
            attention_output: attention.output.cpu()?,
            attention_output_norm: cpu(&self.attention_output_norm)?,
            value_grams: attention.value_grams()?,
            feed_forward_norm: cpu(&self.feed_forward_input_norm)?,
            feed_forward_output_norm: cpu(&self.feed_forward_output_norm)?,
            parallel_residual: self.layout == LayerLayout::ParallelResidual,
            up: self.feed_forward.up.cpu()?,
            gated: self.feed_forward.gated,
            activation,
            down: self.feed_forward.down.cpu()?,
            rule: self.attention.score_rule(),
            rotary,
        })
    }
}
