//! The `config.json` fields of the pre-norm families (the decoders and
//! ModernBERT's `global_attn_every_n_layers`, `local_attention` and two
//! RoPE thetas), as their Hugging Face
//! config classes name them and default them: GPT-2's `n_embd`, `n_layer`,
//! `n_head`, `n_positions`; the Llama family's `num_key_value_heads`,
//! `head_dim`, RoPE parameters (transformers 5's `rope_parameters` or the
//! older `rope_theta` and `rope_scaling`), biases and sliding windows; and
//! what sets each newer family apart ([`Variant`]), with the older names
//! of its fields (Pythia's `rotary_pct` and `rotary_emb_base`, Gemma 3's
//! `rope_local_base_freq` and `sliding_window_pattern`).
//! RoPE scalings other than `linear` and `llama3` are refused by name.

use super::fields::Fields;
use super::ModelConfig;
use crate::kernels::attention::{AttentionMask, ScoreRule};
use crate::model::families::{
    ActivationField, BiasField, BidirectionalField, LlamaLikeFields, PreNormFields, PreNormNames,
    ScoreField, SlidingWindows, LLAMA_NAMES,
};
pub use crate::model::families::{
    EmbeddingScale, FeedForwardLayout, LayerLayout, NormKind, QkNorm, QkvLayout, Variant,
};
use crate::model::family::Family;
use serde_json::{json, Map, Value};

/// What the config of a pre-norm family (the decoders, ModernBERT) adds to
/// the shape every family shares.
#[derive(Debug, Clone, PartialEq)]
pub struct PreNormShape {
    /// Key/value heads; the query heads are split evenly among them
    /// (grouped-query attention). GPT-2: every head its own.
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    /// Rotary positions (the Llama family, ModernBERT's global layers);
    /// `None`: GPT-2's learned table.
    pub rope: Option<Rope>,
    /// ModernBERT's local layers' rotary positions (their own theta).
    pub local_rope: Option<Rope>,
    /// For each layer, the sliding window of its attention, or `None`: a
    /// causal query sees itself and the `window − 1` tokens before it;
    /// ModernBERT's query sees the tokens at most `window` away either side.
    pub sliding_windows: Vec<Option<usize>>,
    /// Whether the LayerNorms have a bias (ModernBERT's `norm_bias`; GPT-2's do).
    pub norm_bias: bool,
    /// Biases of the query, key and value projections (Qwen2; Llama's
    /// `attention_bias`).
    pub qkv_bias: bool,
    /// Bias of the attention's output projection (Llama's `attention_bias`).
    pub output_bias: bool,
    /// Biases of the feed-forward projections (Llama's `mlp_bias`).
    pub mlp_bias: bool,
    /// Where the family's layers differ from Llama's beyond their sizes.
    pub variant: Variant,
}

impl PreNormShape {
    /// How many of each head's first dimensions rotate: ⌊head_dim ·
    /// `partial_rotary_factor`⌋, as transformers truncates it.
    pub fn rotary_dims(&self) -> usize {
        (self.head_dim as f64 * self.variant.partial_rotary_factor) as usize
    }

    /// How Q·Kᵀ becomes the scores: multiplied by
    /// `query_pre_attn_scalar`^−½ (Gemma 2 and 3), else head_dim^−½, then
    /// soft-capped where the family caps.
    pub fn score_rule(&self, mask: AttentionMask) -> ScoreRule {
        let scalar = self
            .variant
            .query_pre_attn_scalar
            .unwrap_or(self.head_dim as f64);
        ScoreRule {
            scale: (1.0 / scalar.sqrt()) as f32,
            mask,
            soft_cap: self.variant.attn_logit_softcapping.map(|cap| cap as f32),
        }
    }
}

/// The family's tensor names (Llama's for a family not pre-norm, which
/// none reads).
fn names(family: Family) -> PreNormNames {
    family
        .spec()
        .pre_norm()
        .map_or(LLAMA_NAMES, |spec| spec.names)
}

/// The family's names of its attention's tensors: (the attention's
/// prefix, its fused q/k/v projection (or "": `q_proj`, `k_proj`,
/// `v_proj`), its output projection).
pub fn attention_names(family: Family) -> (&'static str, &'static str, &'static str) {
    names(family).attention
}

/// The family's names of its feed-forward's projections below `mlp`:
/// [up, down] (plain), [gate, up, down] (gated: gate and up fused in the
/// first for the fused layout, whose second name is then "").
pub fn feed_forward_names(family: Family) -> [&'static str; 3] {
    names(family).feed_forward
}

/// The family's names of its final norm (below the base model, as the
/// layers are) and of its language-model head's matrix (beside the base
/// model in a checkpoint with the head: `lm_head.weight`, GPT-NeoX's
/// `embed_out.weight`); `None` for ModernBERT, which predicts no next token.
pub fn head_names(family: Family) -> Option<(&'static str, &'static str)> {
    let names = names(family);
    names.lm_head.map(|head| (names.final_norm, head))
}

/// The family's name of its final norm (ModernBERT's too).
pub fn final_norm_name(family: Family) -> &'static str {
    names(family).final_norm
}

/// The family's names of layer `index`'s norms before and after its
/// attention and its feed-forward, `None` where its layout has none.
pub fn norm_names(family: Family, index: usize) -> [Option<&'static str>; 4] {
    let PreNormNames {
        norms: [attention, after_attention, feed_forward, after_feed_forward],
        first_attention_norm,
        ..
    } = names(family);
    [
        attention.filter(|_| index > 0 || first_attention_norm),
        after_attention,
        feed_forward,
        after_feed_forward,
    ]
}

/// Rotary position embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    pub theta: f64,
    pub scaling: RopeScaling,
}

/// How the rotary frequencies are scaled, as transformers' `rope_type`.
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    Default,
    /// Every inverse frequency divided by `factor`.
    Linear {
        factor: f64,
    },
    /// Llama 3.1: low frequencies divided by `factor`, high ones kept, the
    /// middle band interpolated.
    Llama3 {
        factor: f64,
        low_freq_factor: f64,
        high_freq_factor: f64,
        original_max_position_embeddings: f64,
    },
    /// A GGUF file's `rope_freqs` (Llama 3.1 and later, as llama.cpp's
    /// converter writes the `llama3` scaling): each inverse frequency
    /// divided by its own factor, as llama.cpp divides it. Written to a
    /// config as `rope_type` `freq_factors` with the list.
    Factors(Vec<f32>),
    /// YaRN (Qwen2.5's and Qwen3's long-context setting): the frequencies
    /// that turn fewer than `beta_slow` times over the original context
    /// divided by `factor`, those that turn more than `beta_fast` times
    /// kept, a linear ramp between; cos and sin multiplied by
    /// `attention_factor` (0.1·ln(factor) + 1 unless the config says).
    /// transformers' `_compute_yarn_parameters`, and llama.cpp's
    /// `rope_yarn` with `yarn_ext_factor` 1.
    Yarn {
        factor: f64,
        original_max_position_embeddings: f64,
        beta_fast: f64,
        beta_slow: f64,
        attention_factor: f64,
        /// Whether the ramp's ends are rounded to whole dimensions
        /// (transformers' `truncate`, llama.cpp always).
        truncate: bool,
    },
}

/// YaRN's `mscale` (its paper's eq. 21): 0.1 · `mscale` · ln(factor) + 1.
fn yarn_mscale(factor: f64, mscale: f64) -> f64 {
    if factor <= 1.0 {
        1.0
    } else {
        0.1 * mscale * factor.ln() + 1.0
    }
}

/// A rotary embedding's inverse frequencies and what its cos and sin are
/// multiplied by (YaRN's attention factor, else 1).
#[derive(Debug, Clone, PartialEq)]
pub struct RotaryFrequencies {
    pub inverse: Vec<f32>,
    pub scaling: f32,
}

impl Rope {
    /// The frequencies of a head's first `dims` dimensions and their scaling.
    pub fn frequencies(&self, dims: usize) -> RotaryFrequencies {
        RotaryFrequencies {
            inverse: self.inverse_frequencies(dims),
            scaling: self.attention_scaling(),
        }
    }

    /// What cos and sin are multiplied by: YaRN's attention factor, else 1.
    pub fn attention_scaling(&self) -> f32 {
        match self.scaling {
            RopeScaling::Yarn {
                attention_factor, ..
            } => attention_factor as f32,
            _ => 1.0,
        }
    }

    /// The inverse frequencies of a head of `head_dim`, as transformers
    /// computes them.
    pub fn inverse_frequencies(&self, head_dim: usize) -> Vec<f32> {
        // In transformers' precision, step by step: the exponent in f32, the
        // power in f64 (as torch's `scalar ** tensor`), everything after in
        // f32. At 2,048 positions a frequency one ulp off moves cos by 1e-4.
        (0..head_dim / 2)
            .map(|i| {
                let exponent = (2 * i) as f32 / head_dim as f32;
                let inv = 1.0f32 / (self.theta.powf(f64::from(exponent)) as f32);
                match &self.scaling {
                    RopeScaling::Default => inv,
                    &RopeScaling::Yarn {
                        factor,
                        original_max_position_embeddings: old,
                        beta_fast,
                        beta_slow,
                        truncate,
                        ..
                    } => {
                        // The dimension that turns `rotations` times over
                        // the original context (in f64, as Python's math).
                        let dimension = |rotations: f64| {
                            head_dim as f64 * (old / (rotations * std::f64::consts::TAU)).ln()
                                / (2.0 * self.theta.ln())
                        };
                        let (mut low, mut high) = (dimension(beta_fast), dimension(beta_slow));
                        if truncate {
                            (low, high) = (low.floor(), high.ceil());
                        }
                        let (low, mut high) = (low.max(0.0), high.min(head_dim as f64 - 1.0));
                        if low == high {
                            high += 0.001;
                        }
                        let ramp = ((i as f32 - low as f32) / (high - low) as f32).clamp(0.0, 1.0);
                        let extrapolation = 1.0 - ramp;
                        let position_frequency = self.theta.powf(f64::from(exponent)) as f32;
                        let interpolated = 1.0 / (factor as f32 * position_frequency);
                        interpolated * (1.0 - extrapolation) + inv * extrapolation
                    }
                    RopeScaling::Factors(factors) => inv / factors.get(i).copied().unwrap_or(1.0),
                    RopeScaling::Linear { factor } => inv / *factor as f32,
                    &RopeScaling::Llama3 {
                        factor,
                        low_freq_factor: low,
                        high_freq_factor: high,
                        original_max_position_embeddings: old,
                    } => {
                        let factor = factor as f32;
                        let wavelen = std::f64::consts::TAU as f32 / inv;
                        let (low_wavelen, high_wavelen) = ((old / low) as f32, (old / high) as f32);
                        let scaled = if wavelen > low_wavelen {
                            inv / factor
                        } else {
                            inv
                        };
                        let smooth = (old as f32 / wavelen - low as f32) / (high - low) as f32;
                        let smoothed = (1.0 - smooth) * scaled / factor + smooth * scaled;
                        let medium = (high_wavelen..=low_wavelen).contains(&wavelen);
                        if medium {
                            smoothed
                        } else {
                            scaled
                        }
                    }
                }
            })
            .collect()
    }
}

/// Reads the config.json fields of a pre-norm family, by the reader its
/// spec names.
pub(super) fn read(
    family: Family,
    fields: &Fields,
    architectures: Option<Vec<String>>,
) -> Result<ModelConfig, String> {
    let spec = family
        .spec()
        .pre_norm()
        .expect("read only for a pre-norm family");
    let base = ModelConfig {
        family,
        embedding_size: None,
        type_vocab_size: 0,
        pad_token_id: None,
        position_embedding_type: None,
        num_hidden_groups: 1,
        inner_group_num: 1,
        sinusoidal_pos_embds: false,
        architectures,
        ..ModelConfig::bert_base_uncased()
    };
    let variant = spec.variant.clone();
    match &spec.fields {
        PreNormFields::Gpt2 => read_gpt2(fields, base, variant),
        PreNormFields::GptNeoX => read_gpt_neox(fields, base, variant),
        PreNormFields::ModernBert => read_modernbert(fields, base, variant),
        PreNormFields::LlamaLike(defaults) => read_llama_like(fields, base, variant, defaults),
    }
}

/// GPT-2: its own names (`n_embd`, `n_head`, `n_layer`, `n_inner`,
/// `n_positions`, `activation_function`, `layer_norm_epsilon`), every head
/// its own keys, learned positions, biases everywhere; the attention
/// variants of its config refused.
fn read_gpt2(fields: &Fields, base: ModelConfig, variant: Variant) -> Result<ModelConfig, String> {
    for (key, default) in [
        ("scale_attn_by_inverse_layer_idx", false),
        ("reorder_and_upcast_attn", false),
        ("scale_attn_weights", true),
    ] {
        if fields.bool_or(key, default)? != default {
            return Err(format!("{key} {} is not supported", !default));
        }
    }
    let hidden = fields.or("n_embd", 768)?;
    let heads = fields.or("n_head", 12)?;
    let layers = fields.or("n_layer", 12)?;
    let inner = match fields.0.get("n_inner") {
        None | Some(Value::Null) => 4 * hidden,
        Some(_) => fields.required("n_inner")?,
    };
    Ok(ModelConfig {
        vocab_size: fields.or("vocab_size", 50257)?,
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        intermediate_size: inner,
        hidden_act: fields
            .string("activation_function")?
            .unwrap_or_else(|| "gelu_new".into()),
        max_position_embeddings: fields.or("n_positions", 1024)?,
        layer_norm_eps: fields.float_or("layer_norm_epsilon", 1e-5)?,
        pre_norm: Some(PreNormShape {
            num_key_value_heads: heads,
            head_dim: hidden / heads.max(1),
            rope: None,
            local_rope: None,
            sliding_windows: vec![None; layers],
            norm_bias: true,
            qkv_bias: true,
            output_bias: true,
            mlp_bias: true,
            variant,
        }),
        ..base
    })
}

/// The Llama family's fields (Llama, Mistral, Qwen2 and 3, Gemma 1–3,
/// Phi-3, OLMo 2), each family's config class's defaults and fields as
/// its spec says.
fn read_llama_like(
    fields: &Fields,
    base: ModelConfig,
    variant: Variant,
    defaults: &LlamaLikeFields,
) -> Result<ModelConfig, String> {
    let family = base.family;
    let (hidden, heads, layers) = sizes(fields)?;
    // The config classes' defaults where a config leaves the field out.
    let head_dim = match fields.0.get("head_dim") {
        None | Some(Value::Null) => defaults.head_dim.unwrap_or(hidden / heads.max(1)),
        Some(_) => fields.required("head_dim")?,
    };
    let bidirectional = match defaults.bidirectional {
        BidirectionalField::Absent => false,
        BidirectionalField::Refused | BidirectionalField::Read => {
            fields.bool_or_null("use_bidirectional_attention", false)?
        }
    };
    if bidirectional && defaults.bidirectional == BidirectionalField::Refused {
        return Err(format!(
            "use_bidirectional_attention true (an embedding model) is not supported for {family}"
        ));
    }
    let attention_bias = fields.bool_or("attention_bias", false)?;
    let (rope, partial_rotary_factor, local_rope) = if defaults.local_rope {
        gemma3_ropes(fields)?
    } else {
        let (rope, partial) = rope(fields, RopeNames::DEFAULT)?;
        (rope, partial, None)
    };
    if partial_rotary_factor != 1.0 && !defaults.partial_rotary {
        return Err(format!(
            "partial_rotary_factor other than 1 is not supported for {family}"
        ));
    }
    let reads = |field| defaults.score_fields.contains(&field);
    let variant = Variant {
        partial_rotary_factor,
        attn_logit_softcapping: if reads(ScoreField::AttnLogitSoftcapping) {
            fields.float_or_null("attn_logit_softcapping", variant.attn_logit_softcapping)?
        } else {
            variant.attn_logit_softcapping
        },
        final_logit_softcapping: if reads(ScoreField::FinalLogitSoftcapping) {
            fields.float_or_null("final_logit_softcapping", variant.final_logit_softcapping)?
        } else {
            variant.final_logit_softcapping
        },
        query_pre_attn_scalar: match variant.query_pre_attn_scalar {
            Some(default) if reads(ScoreField::QueryPreAttnScalar) => {
                Some(fields.float_or("query_pre_attn_scalar", default)?)
            }
            scalar => scalar,
        },
        bidirectional,
        ..variant
    };
    let mut sliding_windows = sliding_windows(defaults.sliding_windows, fields, layers)?;
    if bidirectional {
        // transformers' Gemma3TextConfig turns the written sliding_window
        // W into W / 2 + 1 (rounded down) when bidirectional, and its mask
        // keeps |i − j| < W / 2 + 1: headscope's |i − j| ≤ W / 2.
        for window in sliding_windows.iter_mut().flatten() {
            if *window < 2 {
                return Err(format!(
                    "sliding_window {window} with use_bidirectional_attention is not supported"
                ));
            }
            *window /= 2;
        }
    }
    let ActivationField {
        key,
        default,
        gelu_means_default,
    } = defaults.activation;
    let hidden_act = match fields.string(key)? {
        None => default.to_string(),
        Some(name) if gelu_means_default && name == "gelu" => default.to_string(),
        Some(name) => name,
    };
    let applies = |field: BiasField| field != BiasField::Absent;
    let output_bias = applies(defaults.attention_bias) && attention_bias;
    Ok(ModelConfig {
        vocab_size: fields.required("vocab_size")?,
        intermediate_size: fields.required("intermediate_size")?,
        hidden_act,
        max_position_embeddings: fields
            .or("max_position_embeddings", defaults.max_position_embeddings)?,
        layer_norm_eps: fields.float_or("rms_norm_eps", defaults.rms_norm_eps)?,
        pre_norm: Some(PreNormShape {
            num_key_value_heads: match fields.0.get("num_key_value_heads") {
                None | Some(Value::Null) => heads,
                Some(_) => fields.required("num_key_value_heads")?,
            },
            head_dim,
            rope: Some(rope),
            local_rope,
            sliding_windows,
            norm_bias: false,
            qkv_bias: defaults.qkv_bias_always || output_bias,
            output_bias,
            mlp_bias: applies(defaults.mlp_bias) && fields.bool_or("mlp_bias", false)?,
            variant,
        }),
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        ..base
    })
}

/// GPT-NeoX (Pythia): LayerNorms with biases, the fused `query_key_value`
/// laid out head by head, rotary on a share of each head
/// (`partial_rotary_factor`, or the older `rotary_pct`, default 0.25; base
/// `rope_theta` or `rotary_emb_base`), the parallel residual unless
/// `use_parallel_residual` is false, biased projections.
fn read_gpt_neox(
    fields: &Fields,
    base: ModelConfig,
    variant: Variant,
) -> Result<ModelConfig, String> {
    let (hidden, heads, layers) = sizes(fields)?;
    let attention_bias = fields.bool_or("attention_bias", true)?;
    let (rope, partial_rotary_factor) = rope(
        fields,
        RopeNames {
            theta: "rotary_emb_base",
            partial: "rotary_pct",
            partial_default: variant.partial_rotary_factor,
        },
    )?;
    Ok(ModelConfig {
        vocab_size: fields.required("vocab_size")?,
        intermediate_size: fields.required("intermediate_size")?,
        hidden_act: fields
            .string("hidden_act")?
            .unwrap_or_else(|| "gelu".into()),
        max_position_embeddings: fields.or("max_position_embeddings", 2048)?,
        layer_norm_eps: fields.float_or("layer_norm_eps", 1e-5)?,
        pre_norm: Some(PreNormShape {
            num_key_value_heads: heads,
            head_dim: hidden / heads.max(1),
            rope: Some(rope),
            local_rope: None,
            sliding_windows: vec![None; layers],
            norm_bias: true,
            qkv_bias: attention_bias,
            output_bias: attention_bias,
            mlp_bias: true,
            variant: Variant {
                layout: if fields.bool_or("use_parallel_residual", true)? {
                    variant.layout
                } else {
                    LayerLayout::PreNorm
                },
                partial_rotary_factor,
                ..variant
            },
        }),
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        ..base
    })
}

/// Gemma 3's two rotary embeddings: the global layers' (`rope_parameters`'
/// `full_attention`, or the older `rope_theta`, default 10⁶, and
/// `rope_scaling`) and the local layers' (`sliding_attention`, or
/// `rope_local_base_freq`, default 10⁴, never scaled).
fn gemma3_ropes(fields: &Fields) -> Result<(Rope, f64, Option<Rope>), String> {
    let parameters = fields.0.get("rope_parameters");
    let per_kind = parameters.is_some_and(|p| p.get("full_attention").is_some());
    let kind = |name: &str| -> Result<Map<String, Value>, String> {
        match parameters.and_then(|p| p.get(name)) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(map)) => Ok(map.clone()),
            Some(other) => Err(format!("rope_parameters.{name} is {other}, not an object")),
        }
    };
    let (global, local) = if per_kind {
        (kind("full_attention")?, kind("sliding_attention")?)
    } else {
        (Map::new(), Map::new())
    };
    let global_fields = legacy_rope_fields(fields, &global, "rope_theta", 1e6, true);
    let local_fields = legacy_rope_fields(fields, &local, "rope_local_base_freq", 1e4, false);
    let (global, partial) = rope(&Fields(&global_fields), RopeNames::DEFAULT)?;
    let (local, _) = rope(&Fields(&local_fields), RopeNames::DEFAULT)?;
    Ok((global, partial, Some(local)))
}

/// The fields one of Gemma 3's rotary embeddings reads: `parameters` (its
/// part of `rope_parameters`), else the older top-level `theta_key` (default
/// `theta`) and, if `scaled`, `rope_scaling`.
fn legacy_rope_fields(
    fields: &Fields,
    parameters: &Map<String, Value>,
    theta_key: &str,
    theta: f64,
    scaled: bool,
) -> Map<String, Value> {
    let mut map = Map::new();
    if !parameters.is_empty() {
        map.insert("rope_parameters".into(), Value::Object(parameters.clone()));
    }
    if scaled {
        if let Some(scaling) = fields.0.get("rope_scaling") {
            map.insert("rope_scaling".into(), scaling.clone());
        }
    }
    let theta = fields.0.get(theta_key).cloned().unwrap_or(json!(theta));
    map.insert("rope_theta".into(), theta);
    map
}

/// `hidden_size`, `num_attention_heads` and `num_hidden_layers`, which the
/// families other than GPT-2 name alike.
fn sizes(fields: &Fields) -> Result<(usize, usize, usize), String> {
    Ok((
        fields.required("hidden_size")?,
        fields.required("num_attention_heads")?,
        fields.required("num_hidden_layers")?,
    ))
}

/// ModernBERT: bidirectional, its layers global (every
/// `global_attn_every_n_layers`-th, from layer 0, or as `layer_types` says)
/// or local (tokens at most `local_attention / 2` away), each kind with its
/// own RoPE theta; LayerNorms without bias unless `norm_bias`.
fn read_modernbert(
    fields: &Fields,
    base: ModelConfig,
    variant: Variant,
) -> Result<ModelConfig, String> {
    let (hidden, heads, layers) = sizes(fields)?;
    let every = fields.or("global_attn_every_n_layers", 3)?.max(1);
    let half_window = fields.or("local_attention", 128)? / 2;
    let local: Vec<bool> = match fields.0.get("layer_types") {
        Some(Value::Array(types)) if types.len() == layers => types
            .iter()
            .map(|kind| kind.as_str() == Some("sliding_attention"))
            .collect(),
        Some(Value::Array(types)) => {
            return Err(format!(
                "layer_types has {} entries for {layers} layers",
                types.len()
            ))
        }
        _ => (0..layers).map(|layer| layer % every != 0).collect(),
    };
    let theta = |kind: &str, legacy: &str, default: f64| -> Result<Rope, String> {
        let parameters = fields
            .0
            .get("rope_parameters")
            .and_then(|p| p.get(kind))
            .cloned()
            .unwrap_or(Value::Null);
        let rope_type = parameters
            .get("rope_type")
            .and_then(Value::as_str)
            .unwrap_or("default");
        if rope_type != "default" {
            return Err(format!(
                "ModernBERT's RoPE scaling {rope_type:?} is not supported (only \"default\")"
            ));
        }
        let theta = match parameters.get("rope_theta") {
            Some(value) => value
                .as_f64()
                .ok_or_else(|| format!("rope_theta is {value}, not a number"))?,
            None => fields.float_or(legacy, default)?,
        };
        Ok(Rope {
            theta,
            scaling: RopeScaling::Default,
        })
    };
    let attention_bias = fields.bool_or("attention_bias", false)?;
    Ok(ModelConfig {
        vocab_size: fields.required("vocab_size")?,
        intermediate_size: fields.required("intermediate_size")?,
        hidden_act: fields
            .string("hidden_activation")?
            .unwrap_or_else(|| "gelu".into()),
        max_position_embeddings: fields.or("max_position_embeddings", 8192)?,
        layer_norm_eps: fields.float_or("norm_eps", 1e-5)?,
        pad_token_id: fields.pad(50283)?,
        pre_norm: Some(PreNormShape {
            num_key_value_heads: heads,
            head_dim: hidden / heads.max(1),
            rope: Some(theta("full_attention", "global_rope_theta", 160000.0)?),
            local_rope: Some(theta("sliding_attention", "local_rope_theta", 10000.0)?),
            sliding_windows: local
                .iter()
                .map(|&local| local.then_some(half_window))
                .collect(),
            norm_bias: fields.bool_or("norm_bias", false)?,
            qkv_bias: attention_bias,
            output_bias: attention_bias,
            mlp_bias: fields.bool_or("mlp_bias", false)?,
            variant,
        }),
        hidden_size: hidden,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        ..base
    })
}

/// The older top-level names of the rotary base and share (GPT-NeoX's
/// `rotary_emb_base` and `rotary_pct`), and the share's default.
#[derive(Clone, Copy)]
struct RopeNames {
    theta: &'static str,
    partial: &'static str,
    partial_default: f64,
}

impl RopeNames {
    const DEFAULT: Self = Self {
        theta: "rope_theta",
        partial: "partial_rotary_factor",
        partial_default: 1.0,
    };
}

/// `rope_parameters` (transformers 5) or `rope_theta` and `rope_scaling`
/// (or the family's older names): the rotary embedding and the share of
/// each head it turns.
fn rope(fields: &Fields, names: RopeNames) -> Result<(Rope, f64), String> {
    let empty = Map::new();
    let object = |key: &str| -> Result<&Map<String, Value>, String> {
        match fields.0.get(key) {
            None | Some(Value::Null) => Ok(&empty),
            Some(Value::Object(map)) => Ok(map),
            Some(other) => Err(format!("{key} is {other}, not an object")),
        }
    };
    let (parameters, scaling) = (object("rope_parameters")?, object("rope_scaling")?);
    let given = |key: &str, legacy: &str| -> Result<Option<f64>, String> {
        let value = parameters
            .get(key)
            .or_else(|| scaling.get(key))
            .or_else(|| fields.0.get(key))
            .or_else(|| fields.0.get(legacy))
            .filter(|value| !value.is_null());
        value
            .map(|value| {
                value
                    .as_f64()
                    .ok_or_else(|| format!("RoPE parameter {key} is {value}, not a number"))
            })
            .transpose()
    };
    let number = |key: &str, legacy: &str, default: Option<f64>| -> Result<f64, String> {
        given(key, legacy)?
            .or(default)
            .ok_or_else(|| format!("RoPE parameter {key} is missing"))
    };
    let required = |key: &str| number(key, key, None);
    let optional = |key: &str| given(key, key);
    let kind = [parameters, scaling]
        .iter()
        .find_map(|map| {
            map.get("rope_type")
                .or_else(|| map.get("type"))
                .and_then(Value::as_str)
        })
        .unwrap_or("default");
    let scaling = match kind {
        "default" => RopeScaling::Default,
        "linear" => RopeScaling::Linear {
            factor: required("factor")?,
        },
        "llama3" => RopeScaling::Llama3 {
            factor: required("factor")?,
            low_freq_factor: required("low_freq_factor")?,
            high_freq_factor: required("high_freq_factor")?,
            original_max_position_embeddings: required("original_max_position_embeddings")?,
        },
        "yarn" => {
            let factor = required("factor")?;
            let attention_factor = match (
                optional("attention_factor")?,
                optional("mscale")?,
                optional("mscale_all_dim")?,
            ) {
                (Some(given), _, _) => given,
                (None, Some(mscale), Some(all)) if mscale != 0.0 && all != 0.0 => {
                    yarn_mscale(factor, mscale) / yarn_mscale(factor, all)
                }
                _ => yarn_mscale(factor, 1.0),
            };
            let truncate = [parameters, scaling]
                .iter()
                .find_map(|map| map.get("truncate"))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            // transformers' default: the config's context.
            let original = number(
                "original_max_position_embeddings",
                "max_position_embeddings",
                None,
            )?;
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings: original,
                beta_fast: optional("beta_fast")?.filter(|v| *v != 0.0).unwrap_or(32.0),
                beta_slow: optional("beta_slow")?.filter(|v| *v != 0.0).unwrap_or(1.0),
                attention_factor,
                truncate,
            }
        }
        "freq_factors" => {
            let factors = [parameters, scaling]
                .iter()
                .find_map(|map| map.get("freq_factors"))
                .and_then(Value::as_array)
                .ok_or("RoPE parameter freq_factors is missing")?;
            RopeScaling::Factors(
                factors
                    .iter()
                    .map(|f| f.as_f64().map(|f| f as f32))
                    .collect::<Option<Vec<f32>>>()
                    .ok_or("RoPE parameter freq_factors holds something other than numbers")?,
            )
        }
        other => {
            return Err(format!(
                "RoPE scaling {other:?} is not supported (headscope runs \"default\", \"linear\", \"llama3\" and \"yarn\")"
            ))
        }
    };
    let partial = number(
        "partial_rotary_factor",
        names.partial,
        Some(names.partial_default),
    )?;
    if !(partial > 0.0 && partial <= 1.0) {
        return Err(format!("partial_rotary_factor {partial} is not in (0, 1]"));
    }
    Ok((
        Rope {
            theta: number("rope_theta", names.theta, Some(10000.0))?,
            scaling,
        },
        partial,
    ))
}

/// Each layer's sliding window, as the family's rule says
/// ([`SlidingWindows`]): `sliding_window` on every layer (Mistral, Phi-3);
/// Qwen2's and Qwen3's `layer_types` when written, else the layers from
/// `max_window_layers` on when `use_sliding_window`; Gemma 2's and 3's
/// layers `layer_types` calls `sliding_attention`, else all but every
/// n-th. The others: none.
fn sliding_windows(
    rule: SlidingWindows,
    fields: &Fields,
    layers: usize,
) -> Result<Vec<Option<usize>>, String> {
    let window = |default: Option<usize>| -> Result<Option<usize>, String> {
        match fields.0.get("sliding_window") {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(_) => fields.required("sliding_window").map(Some),
        }
    };
    let layer_types = || -> Result<Option<Vec<bool>>, String> {
        match fields.0.get("layer_types") {
            Some(Value::Array(types)) if types.len() == layers => Ok(Some(
                types
                    .iter()
                    .map(|kind| kind.as_str() == Some("sliding_attention"))
                    .collect(),
            )),
            Some(Value::Array(types)) => Err(format!(
                "layer_types has {} entries for {layers} layers",
                types.len()
            )),
            _ => Ok(None),
        }
    };
    match rule {
        SlidingWindows::EveryLayer { default } => Ok(vec![window(default)?; layers]),
        SlidingWindows::Pattern {
            pattern_field,
            every,
        } => {
            let window = window(Some(4096))?;
            let sliding = match layer_types()? {
                Some(sliding) => sliding,
                None => {
                    let every = match pattern_field {
                        None => every,
                        Some(field) => fields.or(field, every)?.max(1),
                    };
                    (0..layers).map(|layer| (layer + 1) % every != 0).collect()
                }
            };
            Ok(sliding
                .into_iter()
                .map(|sliding| window.filter(|_| sliding))
                .collect())
        }
        SlidingWindows::FromMaxWindowLayers => {
            let window = if fields.bool_or("use_sliding_window", false)? {
                window(Some(4096))?
            } else {
                None
            };
            let sliding = match layer_types()? {
                Some(sliding) => sliding,
                None => {
                    let first = fields.or("max_window_layers", 28)?;
                    (0..layers).map(|layer| layer >= first).collect()
                }
            };
            Ok(sliding
                .into_iter()
                .map(|sliding| window.filter(|_| sliding))
                .collect())
        }
        SlidingWindows::None => Ok(vec![None; layers]),
    }
}

/// Refuses pre-norm shapes the pre-norm stack cannot run.
pub(super) fn validate(config: &ModelConfig, shape: &PreNormShape) -> Result<(), String> {
    for (name, value) in [
        ("vocab_size", config.vocab_size),
        ("hidden_size", config.hidden_size),
        ("num_hidden_layers", config.num_hidden_layers),
        ("num_attention_heads", config.num_attention_heads),
        ("num_key_value_heads", shape.num_key_value_heads),
        ("head_dim", shape.head_dim),
        ("intermediate_size", config.intermediate_size),
        ("max_position_embeddings", config.max_position_embeddings),
    ] {
        if value == 0 {
            return Err(format!("{name} is 0"));
        }
    }
    if !config
        .num_attention_heads
        .is_multiple_of(shape.num_key_value_heads)
    {
        return Err(format!(
            "num_attention_heads {} is not a multiple of num_key_value_heads {}",
            config.num_attention_heads, shape.num_key_value_heads
        ));
    }
    if shape.rope.is_some() && !shape.head_dim.is_multiple_of(2) {
        return Err(format!(
            "head_dim {} is odd: RoPE needs pairs",
            shape.head_dim
        ));
    }
    // The families whose config has no `head_dim` of its own.
    let head_dim_from_sizes = config
        .family
        .spec()
        .pre_norm()
        .is_some_and(|spec| !matches!(spec.fields, PreNormFields::LlamaLike(_)));
    if head_dim_from_sizes && config.hidden_size != config.num_attention_heads * shape.head_dim {
        return Err(format!(
            "n_embd {} is not a multiple of n_head {}",
            config.hidden_size, config.num_attention_heads
        ));
    }
    if shape.rope.is_some() && (!shape.rotary_dims().is_multiple_of(2) || shape.rotary_dims() == 0)
    {
        return Err(format!(
            "partial_rotary_factor {} turns {} of each head's {} dimensions: RoPE needs pairs",
            shape.variant.partial_rotary_factor,
            shape.rotary_dims(),
            shape.head_dim
        ));
    }
    if shape.sliding_windows.contains(&Some(0)) {
        return Err("sliding_window is 0".into());
    }
    if shape.sliding_windows.len() != config.num_hidden_layers {
        return Err("one attention kind per layer is needed".into());
    }
    Ok(())
}

/// The config.json fields of a pre-norm family, as its config class writes them.
pub(super) fn to_json(config: &ModelConfig, shape: &PreNormShape) -> Value {
    let family = config.family;
    let spec = family
        .spec()
        .pre_norm()
        .expect("written only for a pre-norm family");
    let architectures = config
        .architectures
        .clone()
        .unwrap_or_else(|| vec![family.base_class().to_string()]);
    // The first windowed layer's window, and each layer's kind as the
    // `layer_types` field names it.
    let window = shape.sliding_windows.iter().flatten().next().copied();
    let types: Vec<&str> = shape
        .sliding_windows
        .iter()
        .map(|w| {
            if w.is_some() {
                "sliding_attention"
            } else {
                "full_attention"
            }
        })
        .collect();
    if let PreNormFields::ModernBert = spec.fields {
        let theta = |rope: &Option<Rope>| rope.as_ref().map_or(10000.0, |r| r.theta);
        return json!({
            "model_type": "modernbert",
            "architectures": architectures,
            "vocab_size": config.vocab_size,
            "hidden_size": config.hidden_size,
            "num_hidden_layers": config.num_hidden_layers,
            "num_attention_heads": config.num_attention_heads,
            "intermediate_size": config.intermediate_size,
            "hidden_activation": config.hidden_act,
            "max_position_embeddings": config.max_position_embeddings,
            "norm_eps": config.layer_norm_eps,
            "norm_bias": shape.norm_bias,
            "attention_bias": shape.qkv_bias,
            "mlp_bias": shape.mlp_bias,
            "pad_token_id": config.pad_token_id,
            "layer_types": types,
            "local_attention": 2 * window.unwrap_or(64),
            "rope_parameters": {
                "full_attention": {"rope_type": "default", "rope_theta": theta(&shape.rope)},
                "sliding_attention": {"rope_type": "default", "rope_theta": theta(&shape.local_rope)},
            },
        });
    }
    if let PreNormFields::Gpt2 = spec.fields {
        return json!({
            "model_type": "gpt2",
            "architectures": architectures,
            "vocab_size": config.vocab_size,
            "n_embd": config.hidden_size,
            "n_layer": config.num_hidden_layers,
            "n_head": config.num_attention_heads,
            "n_inner": config.intermediate_size,
            "n_positions": config.max_position_embeddings,
            "activation_function": config.hidden_act,
            "layer_norm_epsilon": config.layer_norm_eps,
        });
    }
    let rope = shape.rope.clone().unwrap_or(Rope {
        theta: 10000.0,
        scaling: RopeScaling::Default,
    });
    let mut parameters = rope_json(&rope);
    if shape.variant.partial_rotary_factor != 1.0 {
        parameters["partial_rotary_factor"] = json!(shape.variant.partial_rotary_factor);
    }
    let mut object = json!({
        "model_type": family.model_type(),
        "architectures": architectures,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": shape.num_key_value_heads,
        "head_dim": shape.head_dim,
        "intermediate_size": config.intermediate_size,
        "hidden_act": config.hidden_act,
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.layer_norm_eps,
        "rope_parameters": parameters,
    });
    let fields = object.as_object_mut().expect("an object");
    match &spec.fields {
        PreNormFields::GptNeoX => {
            // Every head its own keys, head_dim from the sizes, LayerNorms.
            for key in ["num_key_value_heads", "head_dim", "rms_norm_eps"] {
                fields.remove(key);
            }
            fields.insert("layer_norm_eps".into(), json!(config.layer_norm_eps));
            fields.insert(
                "use_parallel_residual".into(),
                json!(shape.variant.layout == LayerLayout::ParallelResidual),
            );
            fields.insert("attention_bias".into(), json!(shape.qkv_bias));
        }
        PreNormFields::LlamaLike(defaults) => {
            if defaults.activation.key != "hidden_act" {
                let activation = fields.remove("hidden_act").expect("written above");
                fields.insert(defaults.activation.key.into(), activation);
            }
            let mut set = |key: &str, value: Value| {
                fields.insert(key.into(), value);
            };
            if defaults.attention_bias == BiasField::Field {
                set("attention_bias", json!(shape.output_bias));
            }
            if defaults.mlp_bias == BiasField::Field {
                set("mlp_bias", json!(shape.mlp_bias));
            }
            match defaults.sliding_windows {
                SlidingWindows::None => {}
                SlidingWindows::EveryLayer { .. } => {
                    set("sliding_window", json!(shape.sliding_windows[0]));
                }
                SlidingWindows::FromMaxWindowLayers => {
                    set("use_sliding_window", json!(window.is_some()));
                    set("sliding_window", json!(window));
                    set("layer_types", json!(types));
                }
                SlidingWindows::Pattern { .. } => {
                    set("sliding_window", json!(window));
                    set("layer_types", json!(types));
                }
            }
            for field in defaults.score_fields {
                let variant = &shape.variant;
                match field {
                    ScoreField::AttnLogitSoftcapping => {
                        set(
                            "attn_logit_softcapping",
                            json!(variant.attn_logit_softcapping),
                        );
                    }
                    ScoreField::FinalLogitSoftcapping => {
                        set(
                            "final_logit_softcapping",
                            json!(variant.final_logit_softcapping),
                        );
                    }
                    ScoreField::QueryPreAttnScalar => {
                        // An integer, as transformers' Gemma configs declare it
                        // (their strict dataclasses refuse 256.0).
                        let scalar = variant.query_pre_attn_scalar.map(|scalar| {
                            if scalar.fract() == 0.0 {
                                json!(scalar as u64)
                            } else {
                                json!(scalar)
                            }
                        });
                        set("query_pre_attn_scalar", json!(scalar));
                    }
                }
            }
            if defaults.local_rope {
                let local = shape.local_rope.as_ref().unwrap_or(&rope);
                set(
                    "rope_parameters",
                    json!({"full_attention": rope_json(&rope), "sliding_attention": rope_json(local)}),
                );
            }
            if defaults.bidirectional == BidirectionalField::Read && shape.variant.bidirectional {
                set("use_bidirectional_attention", json!(true));
                set("sliding_window", json!(window.map(|w| 2 * w)));
            }
        }
        PreNormFields::Gpt2 | PreNormFields::ModernBert => unreachable!("written above"),
    }
    object
}

/// One rotary embedding as `rope_parameters` writes it.
fn rope_json(rope: &Rope) -> Value {
    let mut parameters = json!({"rope_theta": rope.theta, "rope_type": "default"});
    match rope.scaling.clone() {
        RopeScaling::Default => {}
        RopeScaling::Factors(factors) => {
            parameters["rope_type"] = json!("freq_factors");
            parameters["freq_factors"] = json!(factors);
        }
        RopeScaling::Linear { factor } => {
            parameters["rope_type"] = json!("linear");
            parameters["factor"] = json!(factor);
        }
        RopeScaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings,
        } => {
            parameters["rope_type"] = json!("llama3");
            parameters["factor"] = json!(factor);
            parameters["low_freq_factor"] = json!(low_freq_factor);
            parameters["high_freq_factor"] = json!(high_freq_factor);
            parameters["original_max_position_embeddings"] =
                json!(original_max_position_embeddings as u64);
        }
        RopeScaling::Yarn {
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            attention_factor,
            truncate,
        } => {
            parameters["rope_type"] = json!("yarn");
            parameters["factor"] = json!(factor);
            parameters["original_max_position_embeddings"] =
                json!(original_max_position_embeddings as u64);
            parameters["beta_fast"] = json!(beta_fast);
            parameters["beta_slow"] = json!(beta_slow);
            parameters["attention_factor"] = json!(attention_factor);
            parameters["truncate"] = json!(truncate);
        }
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<ModelConfig, String> {
        ModelConfig::from_json(text).map_err(|e| e.to_string())
    }

    #[test]
    fn llama3_scaling_keeps_high_divides_low_and_blends_the_middle() {
        let rope = Rope {
            theta: 5000.0,
            scaling: RopeScaling::Llama3 {
                factor: 4.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 64.0,
            },
        };
        let plain = Rope {
            theta: 5000.0,
            scaling: RopeScaling::Default,
        }
        .inverse_frequencies(8);
        let scaled = rope.inverse_frequencies(8);
        // Wavelengths 2π, ≈53, ≈444 and ≈3737 against the band 16 to 64.
        assert_eq!(scaled[0], plain[0]);
        assert!(scaled[1] < plain[1] && scaled[1] > plain[1] / 4.0);
        assert_eq!(scaled[2], plain[2] / 4.0);
    }

    /// Qwen2.5's YaRN as its model card writes it: the fast-turning
    /// dimensions kept, the slow ones divided by the factor, a ramp
    /// between; cos and sin scaled by 0.1·ln(4) + 1.
    #[test]
    fn yarn_keeps_fast_dimensions_divides_slow_ones_and_scales() {
        let yarn = config(
            r#"{"model_type": "qwen2", "vocab_size": 10, "hidden_size": 64, "num_attention_heads": 1,
            "num_hidden_layers": 1, "intermediate_size": 16, "rope_theta": 10000.0,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}"#,
        )
        .unwrap();
        let rope = yarn.pre_norm.unwrap().rope.unwrap();
        assert_eq!(rope.attention_scaling(), (0.1 * 4f64.ln() + 1.0) as f32);
        let plain = Rope {
            theta: 10000.0,
            scaling: RopeScaling::Default,
        }
        .inverse_frequencies(64);
        let scaled = rope.inverse_frequencies(64);
        // Pairs turning over 32 times in 32,768 positions (to ⌊17.7⌋) are
        // kept, under once (from ⌈29.7⌉) divided by 4, those between blended.
        assert_eq!(scaled[..=17], plain[..=17]);
        assert!(scaled[24] < plain[24] && scaled[24] > plain[24] / 4.0);
        for (s, p) in scaled[30..].iter().zip(&plain[30..]) {
            assert!((s - p / 4.0).abs() <= 1e-6 * p, "{s} vs {p}");
        }
        let context = config(
            r#"{"model_type": "qwen2", "vocab_size": 10, "hidden_size": 64, "num_attention_heads": 1,
            "num_hidden_layers": 1, "intermediate_size": 16, "max_position_embeddings": 4096,
            "rope_scaling": {"type": "yarn", "factor": 4.0}}"#,
        )
        .unwrap();
        let Some(RopeScaling::Yarn {
            original_max_position_embeddings,
            ..
        }) = context.pre_norm.unwrap().rope.map(|rope| rope.scaling)
        else {
            panic!("yarn expected");
        };
        assert_eq!(original_max_position_embeddings, 4096.0);
    }

    #[test]
    fn old_and_new_rope_fields_read_alike() {
        let new = config(
            r#"{"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16,
            "rope_parameters": {"rope_type": "linear", "rope_theta": 500.0, "factor": 2.0}}"#,
        )
        .unwrap();
        let old = config(
            r#"{"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "rope_theta": 500.0,
            "rope_scaling": {"type": "linear", "factor": 2.0}}"#,
        )
        .unwrap();
        assert_eq!(new, old);
        let shape = new.pre_norm.unwrap();
        assert_eq!(shape.num_key_value_heads, 2);
        assert_eq!(
            shape.rope.unwrap().scaling,
            RopeScaling::Linear { factor: 2.0 }
        );
        let dynamic = config(
            r#"{"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16,
            "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}"#,
        )
        .unwrap_err();
        assert!(
            dynamic.contains("\"dynamic\" is not supported"),
            "{dynamic}"
        );
    }

    /// The older config fields of each newer family read as transformers
    /// 5 reads them: Pythia's `rotary_pct` and `rotary_emb_base`, Gemma 3's
    /// `rope_local_base_freq`, `rope_scaling` and `sliding_window_pattern`,
    /// Gemma's legacy `hidden_act` "gelu"; the class defaults where a
    /// field is left out; rope scalings not done refused by name.
    #[test]
    fn newer_families_read_their_older_fields_and_defaults() {
        let shape = |text: &str| config(text).unwrap().pre_norm.unwrap();
        let pythia = shape(
            r#"{"model_type": "gpt_neox", "vocab_size": 10, "hidden_size": 32, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "rotary_pct": 0.5, "rotary_emb_base": 500}"#,
        );
        assert_eq!(pythia.rotary_dims(), 8);
        assert_eq!(pythia.rope.as_ref().unwrap().theta, 500.0);
        assert_eq!(pythia.variant.layout, LayerLayout::ParallelResidual);
        assert_eq!(pythia.variant.qkv_layout, QkvLayout::InterleavedPerHead);
        assert!(pythia.norm_bias && pythia.qkv_bias && pythia.mlp_bias);
        let sequential = shape(
            r#"{"model_type": "gpt_neox", "vocab_size": 10, "hidden_size": 32, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "use_parallel_residual": false}"#,
        );
        // Pythia's default share is a quarter of each head.
        assert_eq!(sequential.rotary_dims(), 4);
        assert_eq!(sequential.variant.layout, LayerLayout::PreNorm);

        let gemma3 = |extra: &str| {
            shape(&format!(
                r#"{{"model_type": "gemma3_text", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
                "num_key_value_heads": 1, "head_dim": 4, "num_hidden_layers": 7, "intermediate_size": 16,
                "sliding_window": 3 {extra}}}"#
            ))
        };
        let old = gemma3(
            r#", "rope_theta": 1000000.0, "rope_local_base_freq": 20000.0,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "sliding_window_pattern": 3"#,
        );
        let new = gemma3(
            r#", "layer_types": ["sliding_attention", "sliding_attention", "full_attention",
            "sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
            "rope_parameters": {"full_attention": {"rope_type": "linear", "rope_theta": 1000000.0, "factor": 8.0},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}"#,
        );
        assert_eq!(old, new);
        let w = Some(3);
        assert_eq!(old.sliding_windows, [w, w, None, w, w, None, w]);
        assert_eq!(old.local_rope.as_ref().unwrap().theta, 20000.0);
        assert_eq!(old.local_rope.unwrap().scaling, RopeScaling::Default);
        assert_eq!(
            old.rope.unwrap().scaling,
            RopeScaling::Linear { factor: 8.0 }
        );
        // Transformers' Gemma 3 attention never soft-caps.
        assert_eq!(old.variant.attn_logit_softcapping, None);
        assert_eq!(old.variant.qk_norm, QkNorm::PerHead);
        // Default pattern: every sixth layer global; default scalar 256.
        let default = gemma3("");
        assert_eq!(default.sliding_windows[5], None);
        assert_eq!(default.sliding_windows.iter().flatten().count(), 6);
        assert_eq!(
            default.score_rule(AttentionMask::default()).scale,
            1.0 / 16.0
        );
        // EmbeddingGemma: bidirectional, its written window 4 is
        // transformers' |i − j| < 4 / 2 + 1, headscope's |i − j| ≤ 2;
        // Gemma 2 keeps refusing the flag.
        let embedding = config(
            r#"{"model_type": "gemma3_text", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 2, "intermediate_size": 16, "use_bidirectional_attention": true,
            "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]}"#,
        )
        .unwrap();
        assert!(!embedding.is_causal() && embedding.is_bidirectional_decoder());
        let embedding_shape = embedding.pre_norm.as_ref().unwrap();
        assert_eq!(embedding_shape.sliding_windows, [Some(2), None]);
        let written = to_json(&embedding, embedding_shape);
        assert_eq!(written["sliding_window"], 4);
        assert_eq!(written["use_bidirectional_attention"], true);
        assert!(config(
            r#"{"model_type": "gemma2", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "use_bidirectional_attention": true}"#
        )
        .unwrap_err()
        .contains("use_bidirectional_attention"));

        let gemma = config(
            r#"{"model_type": "gemma", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "hidden_act": "gelu"}"#,
        )
        .unwrap();
        assert_eq!(gemma.hidden_act, "gelu_pytorch_tanh");
        let gemma_shape = gemma.pre_norm.unwrap();
        assert_eq!(gemma_shape.head_dim, 256);
        assert_eq!(gemma_shape.variant.norm, NormKind::RmsPlusOne);
        assert_eq!(
            gemma_shape.variant.embedding_scale.factor(8),
            Some(8f32.sqrt())
        );
        let gemma2 = shape(
            r#"{"model_type": "gemma2", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 3, "intermediate_size": 16, "head_dim": 4}"#,
        );
        assert_eq!(gemma2.variant.attn_logit_softcapping, Some(50.0));
        assert_eq!(gemma2.variant.layout, LayerLayout::Sandwich);
        assert_eq!(gemma2.sliding_windows, [Some(4096), None, Some(4096)]);
        let qwen3 = shape(
            r#"{"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16}"#,
        );
        assert_eq!((qwen3.head_dim, qwen3.qkv_bias), (128, false));

        let phi3 = |rope: &str| {
            config(&format!(
                r#"{{"model_type": "phi3", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
                "num_hidden_layers": 2, "intermediate_size": 16, "sliding_window": 5, {rope}}}"#
            ))
        };
        let partial = phi3(r#""partial_rotary_factor": 0.5"#)
            .unwrap()
            .pre_norm
            .unwrap();
        assert_eq!(partial.rotary_dims(), 2);
        assert_eq!(partial.sliding_windows, [Some(5), Some(5)]);
        assert_eq!(partial.variant.feed_forward, FeedForwardLayout::FusedGated);
        for kind in ["longrope", "su"] {
            let error = phi3(&format!(
                r#""rope_scaling": {{"type": "{kind}", "short_factor": [1.0], "long_factor": [1.0]}}"#
            ))
            .unwrap_err();
            assert!(
                error.contains(&format!("{kind:?} is not supported")),
                "{error}"
            );
        }
        let error = config(
            r#"{"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16, "partial_rotary_factor": 0.5}"#,
        )
        .unwrap_err();
        assert!(error.contains("partial_rotary_factor"), "{error}");

        let olmo2 = shape(
            r#"{"model_type": "olmo2", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": 16}"#,
        );
        assert_eq!(olmo2.variant.qk_norm, QkNorm::AcrossHeads);
        assert_eq!(olmo2.variant.layout, LayerLayout::PostNorm);
    }

    #[test]
    fn decoder_configs_round_trip_through_their_json() {
        let texts = [
            r#"{"model_type": "gpt2", "vocab_size": 100, "n_embd": 16, "n_layer": 2, "n_head": 4, "n_positions": 32}"#,
            r#"{"model_type": "qwen2", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_key_value_heads": 2, "num_hidden_layers": 3, "intermediate_size": 32,
               "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 1}"#,
            r#"{"model_type": "mistral", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_key_value_heads": 1, "num_hidden_layers": 2, "intermediate_size": 32, "sliding_window": 5}"#,
            r#"{"model_type": "modernbert", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_hidden_layers": 4, "intermediate_size": 32, "local_attention": 8,
               "global_attn_every_n_layers": 3, "global_rope_theta": 1000.0}"#,
            r#"{"model_type": "gpt_neox", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 2,
               "num_hidden_layers": 2, "intermediate_size": 32, "rotary_pct": 0.5, "use_parallel_residual": false}"#,
            r#"{"model_type": "gemma2", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 3, "intermediate_size": 32,
               "sliding_window": 6, "query_pre_attn_scalar": 12, "attn_logit_softcapping": null}"#,
            r#"{"model_type": "gemma3_text", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_hidden_layers": 3, "intermediate_size": 32, "head_dim": 8, "sliding_window_pattern": 2,
               "rope_local_base_freq": 500.0, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}"#,
            r#"{"model_type": "phi3", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 32,
               "partial_rotary_factor": 0.5, "sliding_window": 7}"#,
            r#"{"model_type": "olmo2", "vocab_size": 100, "hidden_size": 16, "num_attention_heads": 4,
               "num_hidden_layers": 2, "intermediate_size": 32, "attention_bias": true}"#,
        ];
        for text in texts {
            let config = config(text).unwrap();
            let again = ModelConfig::from_json(&serde_json::to_string(&config).unwrap()).unwrap();
            assert_eq!(again.pre_norm, config.pre_norm, "{text}");
            assert_eq!(again.hidden_size, config.hidden_size, "{text}");
        }
        let qwen = config(texts[1]).unwrap().pre_norm.unwrap();
        assert_eq!(qwen.sliding_windows, [None, Some(8), Some(8)]);
        assert!(qwen.qkv_bias && !qwen.output_bias);
        let modernbert = config(texts[3]).unwrap().pre_norm.unwrap();
        // Global layers 0 and 3, local ones see 4 tokens either side.
        assert_eq!(modernbert.sliding_windows, [None, Some(4), Some(4), None]);
        assert_eq!(modernbert.rope.unwrap().theta, 1000.0);
        assert_eq!(modernbert.local_rope.unwrap().theta, 10000.0);
        assert!(!modernbert.norm_bias && !modernbert.qkv_bias);
        let gpt2 = config(texts[0]).unwrap();
        assert_eq!((gpt2.intermediate_size, gpt2.max_tokens()), (64, 32));
    }
}
