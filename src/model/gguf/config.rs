//! The model's config from a GGUF file's metadata, as llama.cpp reads it
//! (`llama_model::load_hparams`), written as the `config.json` fields of
//! the Hugging Face family the architecture is and read by the same code
//! that reads a folder's `config.json`.
//!
//! As transformers' GGUF loader where the two agree (`GGUF_CONFIG_MAPPING`:
//! sizes, heads, norm epsilon, `rope.freq_base`; `rope.dimension_count` as
//! the head size for llama; a llama file whose `general.name` is exactly
//! `mistral` is a Mistral; embeddings tied when the file has no
//! `output.weight`; the vocabulary size falling back to the tokenizer's).
//! Where transformers reads less, as llama.cpp: the head size from
//! `attention.key_length` (else hidden / heads), the rotary share from
//! `rope.dimension_count` (Phi-3, GPT-NeoX), Gemma 2's and 3's sliding
//! windows and their layers, Gemma 3's local rope base
//! (`rope.freq_base_swa`, else 10000) and llama.cpp's score scale for
//! them, Gemma 2's soft-caps, GPT-NeoX's parallel residual, Phi-3 without
//! its sliding window (llama.cpp turns it off), linear rope scaling, and
//! `rope_freqs` (Llama 3.1+: each rotary frequency divided by its factor).

use super::file::GgufFile;
use crate::model::config::pre_norm::RopeScaling;
use crate::model::config::ModelConfig;
use crate::model::family::Family;
use crate::model::weight::Weight;
use anyhow::{anyhow, bail};
use candle_core::quantized::gguf_file::Value as GgufValue;
use candle_core::{DType, Device};
use serde_json::{json, Map, Value};

/// The GGUF architectures headscope opens: each family's
/// `gguf_architecture`, in [`Family::ALL`]'s order.
pub fn architectures() -> Vec<&'static str> {
    Family::ALL
        .iter()
        .filter_map(|family| family.spec().gguf_architecture)
        .collect()
}

/// The `model_type` of the file's architecture, or a message naming it.
pub fn model_type(file: &GgufFile) -> anyhow::Result<&'static str> {
    let architecture = file.string("general.architecture")?;
    let Some(family) = Family::from_gguf_architecture(architecture) else {
        bail!(
            "{}: GGUF architecture {architecture} is not supported (headscope opens {})",
            file.path.display(),
            architectures().join(", ")
        );
    };
    // Mistral's files are `llama` files; llama.cpp tells them by name.
    if family == Family::Llama && matches!(file.string("general.name"), Ok("mistral")) {
        return Ok(Family::Mistral.model_type());
    }
    Ok(family.model_type())
}

/// The config of this file: the `config.json` fields its metadata says,
/// as llama.cpp reads them, then the file's `rope_freqs`.
pub fn encoder_config(file: &mut GgufFile) -> anyhow::Result<ModelConfig> {
    let model_type = model_type(file)?;
    let json = config_fields(file, model_type)?;
    let mut config =
        ModelConfig::from_json(&Value::Object(json).to_string()).map_err(|problem| {
            anyhow!(
                "{}: its metadata does not make a {model_type} config: {problem}",
                file.path.display()
            )
        })?;
    // Llama 3.1 and later: llama.cpp divides each rotary frequency by its
    // factor in `rope_freqs` (transformers' GGUF loader skips the tensor;
    // the factors are what its `llama3` scaling computes).
    if file.tensor_info(ROPE_FREQS).is_some() {
        let raw = file.read_tensor(ROPE_FREQS)?;
        let factors = super::tensors::to_weight(raw, &Device::Cpu)
            .and_then(|weight| match weight {
                Weight::Quantized(blocks) => blocks.dequantize(),
                Weight::F32(t) | Weight::Half(t) => Ok(t),
            })
            .and_then(|t| t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>())
            .map_err(|e| anyhow!("{}: tensor {ROPE_FREQS}: {e}", file.path.display()))?;
        let shape = config.pre_norm.as_mut().expect("a decoder");
        let rotary = shape.rotary_dims();
        if factors.len() != rotary / 2 {
            bail!(
                "{}: {ROPE_FREQS} holds {} factors for {} rotary pairs",
                file.path.display(),
                factors.len(),
                rotary / 2
            );
        }
        if let Some(rope) = shape.rope.as_mut() {
            if rope.scaling != RopeScaling::Default {
                bail!(
                    "{}: both {ROPE_FREQS} and a RoPE scaling type",
                    file.path.display()
                );
            }
            rope.scaling = RopeScaling::Factors(factors);
        }
    }
    Ok(config)
}

const ROPE_FREQS: &str = "rope_freqs.weight";

/// The `config.json` fields the file's metadata gives.
fn config_fields(file: &GgufFile, model_type: &str) -> anyhow::Result<Map<String, Value>> {
    let architecture = file.string("general.architecture")?;
    let key = |name: &str| format!("{architecture}.{name}");
    let required = |name: &str| -> anyhow::Result<u64> {
        file.integer(&key(name))?
            .ok_or_else(|| anyhow!("{}: the metadata has no {}", file.path.display(), key(name)))
    };
    let mut config = Map::new();
    config.insert("model_type".into(), json!(model_type));
    for (gguf, field) in [
        ("embedding_length", "hidden_size"),
        ("feed_forward_length", "intermediate_size"),
        ("block_count", "num_hidden_layers"),
        ("attention.head_count", "num_attention_heads"),
    ] {
        config.insert(field.into(), json!(required(gguf)?));
    }
    for (gguf, field) in [
        ("attention.head_count_kv", "num_key_value_heads"),
        ("context_length", "max_position_embeddings"),
    ] {
        if let Some(value) = file.integer(&key(gguf))? {
            config.insert(field.into(), json!(value));
        }
    }
    let hidden = required("embedding_length")?;
    let heads = required("attention.head_count")?.max(1);
    let layers = required("block_count")?;
    // llama.cpp's head size: `attention.key_length`, else hidden / heads.
    let head_dim = file
        .integer(&key("attention.key_length"))?
        .unwrap_or(hidden / heads);
    match architecture {
        "llama" => {
            if let Some(head_dim) = file.integer(&key("rope.dimension_count"))? {
                config.insert("head_dim".into(), json!(head_dim));
            }
        }
        // Qwen2 derives its own; GPT-NeoX's is hidden / heads.
        "qwen2" | "gptneox" => {}
        _ => {
            config.insert("head_dim".into(), json!(head_dim));
        }
    }
    // The share of each head that rotates (Phi-3, GPT-NeoX).
    if matches!(architecture, "phi3" | "gptneox") {
        if let Some(dims) = file.integer(&key("rope.dimension_count"))? {
            config.insert(
                "partial_rotary_factor".into(),
                json!(dims as f64 / head_dim as f64),
            );
        }
    }
    if architecture == "gptneox" {
        if let Some(eps) = file.float(&key("attention.layer_norm_epsilon"))? {
            config.insert("layer_norm_eps".into(), json!(eps));
        }
        let parallel = file.flag(&key("use_parallel_residual")).unwrap_or(true);
        config.insert("use_parallel_residual".into(), json!(parallel));
    } else if let Some(eps) = file.float(&key("attention.layer_norm_rms_epsilon"))? {
        config.insert("rms_norm_eps".into(), json!(eps));
    }
    let theta = file.float(&key("rope.freq_base"))?;
    if let Some(theta) = theta {
        config.insert("rope_theta".into(), json!(theta));
    }
    let scaling = rope_scaling(file, architecture)?;
    match architecture {
        "gemma2" | "gemma3" => {
            // llama.cpp: Gemma 2's window default is 4096; its pattern is
            // every other layer from the first (2), Gemma 3's five
            // sliding layers then one global (6), or as
            // `attention.sliding_window_pattern` says.
            let window = file.integer(&key("attention.sliding_window"))?;
            let window = match (architecture, window) {
                ("gemma2", None) => Some(4096),
                (_, window) => window.filter(|&w| w > 0),
            };
            let sliding =
                sliding_layers(file, &key("attention.sliding_window_pattern"), layers, {
                    if architecture == "gemma2" {
                        2
                    } else {
                        6
                    }
                })?;
            let types: Vec<&str> = sliding
                .iter()
                .map(|&s| {
                    if s && window.is_some() {
                        "sliding_attention"
                    } else {
                        "full_attention"
                    }
                })
                .collect();
            config.insert("layer_types".into(), json!(types));
            config.insert("sliding_window".into(), json!(window));
            // llama.cpp scales the scores by key_length^−½, except in the
            // 27B models (62 layers for Gemma 3, 46 for Gemma 2):
            // (hidden / heads)^−½, their `query_pre_attn_scalar`.
            let big = (architecture == "gemma3" && layers == 62)
                || (architecture == "gemma2" && layers == 46);
            let scalar = if big { hidden / heads } else { head_dim };
            config.insert("query_pre_attn_scalar".into(), json!(scalar));
            for cap in ["attn_logit_softcapping", "final_logit_softcapping"] {
                let value = file.float(&key(cap))?;
                match (architecture, value) {
                    (_, Some(value)) => {
                        config.insert(cap.into(), json!(value));
                    }
                    // llama.cpp's defaults for Gemma 2: 50 and 30.
                    ("gemma2", None) => {}
                    (_, None) => {
                        config.insert(cap.into(), Value::Null);
                    }
                }
            }
            if architecture == "gemma3" {
                let local = file.float(&key("rope.freq_base_swa"))?.unwrap_or(10000.0);
                let mut global =
                    json!({"rope_type": "default", "rope_theta": theta.unwrap_or(1e6)});
                if let Some(Value::Object(scaling)) = &scaling {
                    for (k, v) in scaling {
                        global[k] = v.clone();
                    }
                }
                config.insert(
                    "rope_parameters".into(),
                    json!({
                        "full_attention": global,
                        "sliding_attention": {"rope_type": "default", "rope_theta": local},
                    }),
                );
            } else if let Some(scaling) = scaling {
                config.insert("rope_scaling".into(), scaling);
            }
        }
        _ => {
            if let Some(scaling) = scaling {
                config.insert("rope_scaling".into(), scaling);
            }
        }
    }
    if architecture == "phi3" && file.tensor_info("rope_factors_long.weight").is_some() {
        bail!(
            "{}: Phi-3's LongRoPE factors (rope_factors_long) are not supported",
            file.path.display()
        );
    }
    let vocab_size = match file.integer(&key("vocab_size"))? {
        Some(size) => size,
        None => file
            .strings("tokenizer.ggml.tokens")?
            .map(|tokens| tokens.len() as u64)
            .ok_or_else(|| {
                anyhow!(
                    "{}: the metadata has neither {} nor a tokenizer vocabulary",
                    file.path.display(),
                    key("vocab_size")
                )
            })?,
    };
    config.insert("vocab_size".into(), json!(vocab_size));
    for (gguf, field) in [
        ("bos_token_id", "bos_token_id"),
        ("eos_token_id", "eos_token_id"),
        ("padding_token_id", "pad_token_id"),
    ] {
        if let Some(id) = file.integer(&format!("tokenizer.ggml.{gguf}"))? {
            config.insert(field.into(), json!(id));
        }
    }
    let tied = file.tensor_info("output.weight").is_none();
    config.insert("tie_word_embeddings".into(), json!(tied));
    Ok(config)
}

/// The file's RoPE scaling keys as `rope_scaling`: `rope.scaling.type`
/// `linear` with `rope.scaling.factor` (or the older `rope.scale_linear`);
/// `yarn` with the factor and `rope.scaling.original_context_length` (and
/// llama.cpp's optional `attn_factor`, `yarn_beta_fast`, `yarn_beta_slow`),
/// as llama.cpp's `rope_yarn` applies them; `none` or no key, none; others
/// refused by name.
fn rope_scaling(file: &GgufFile, architecture: &str) -> anyhow::Result<Option<Value>> {
    let key = |name: &str| format!("{architecture}.{name}");
    let kind = file.string(&key("rope.scaling.type")).ok();
    let factor = file.float(&key("rope.scaling.factor"))?;
    if kind == Some("yarn") {
        return yarn_scaling(file, architecture, factor).map(Some);
    }
    match (kind, factor, file.float(&key("rope.scale_linear"))?) {
        (None | Some("none"), _, None) => Ok(None),
        (None, _, Some(factor)) | (Some("linear"), None, Some(factor)) => {
            Ok((factor != 1.0).then(|| json!({"rope_type": "linear", "factor": factor})))
        }
        (Some("linear"), Some(factor), _) => {
            Ok((factor != 1.0).then(|| json!({"rope_type": "linear", "factor": factor})))
        }
        (Some("none"), _, Some(_)) => Ok(None),
        (Some("linear"), None, None) => bail!(
            "{}: {} is linear but the metadata has no {}",
            file.path.display(),
            key("rope.scaling.type"),
            key("rope.scaling.factor")
        ),
        (Some(other), _, _) => bail!(
            "{}: RoPE scaling {other} ({}) is not supported (headscope applies linear scaling, YaRN and rope_freqs)",
            file.path.display(),
            key("rope.scaling.type")
        ),
    }
}

/// YaRN as llama.cpp applies it: the angles of interpolated and extrapolated
/// frequencies blended by its ramp (`yarn_ext_factor` 1), between the
/// dimensions that turn `yarn_beta_fast` (32) and `yarn_beta_slow` (1)
/// times over the original context, rounded outwards; cos and sin times
/// `attn_factor` (1) · (1 + 0.1·ln(factor)). That is transformers' `yarn`
/// with `attention_factor` the product, which is how the config says it.
fn yarn_scaling(file: &GgufFile, architecture: &str, factor: Option<f64>) -> anyhow::Result<Value> {
    let key = |name: &str| format!("{architecture}.rope.scaling.{name}");
    let path = file.path.display();
    let factor = factor.ok_or_else(|| {
        anyhow::anyhow!(
            "{path}: RoPE scaling yarn but the metadata has no {}",
            key("factor")
        )
    })?;
    let original = file
        .integer(&key("original_context_length"))?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{path}: RoPE scaling yarn but the metadata has no {}",
                key("original_context_length")
            )
        })?;
    for (name, neutral) in [("yarn_ext_factor", 1.0), ("yarn_log_multiplier", 0.0)] {
        if let Some(value) = file.float(&key(name))?.filter(|v| *v != neutral) {
            bail!(
                "{path}: {} is {value}: headscope applies YaRN with {neutral} only",
                key(name)
            );
        }
    }
    let mscale = if factor > 1.0 {
        1.0 + 0.1 * factor.ln()
    } else {
        1.0
    };
    let attention = file.float(&key("attn_factor"))?.unwrap_or(1.0) * mscale;
    Ok(json!({
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original,
        "attention_factor": attention,
        "beta_fast": file.float(&key("yarn_beta_fast"))?.unwrap_or(32.0),
        "beta_slow": file.float(&key("yarn_beta_slow"))?.unwrap_or(1.0),
        "truncate": true,
    }))
}

/// Which layers slide: `key` as a list of flags (llama.cpp's
/// `swa_layers`) or a period `n` (every layer but each n-th), else the
/// family's period.
fn sliding_layers(
    file: &GgufFile,
    key: &str,
    layers: u64,
    default: u64,
) -> anyhow::Result<Vec<bool>> {
    let layers = layers as usize;
    let period = match file.value(key) {
        Some(GgufValue::Array(values)) => {
            let flags: Option<Vec<bool>> = values
                .iter()
                .map(|value| match value {
                    GgufValue::Bool(flag) => Some(*flag),
                    other => other.to_u64().ok().map(|n| n != 0),
                })
                .collect();
            match flags {
                Some(flags) if flags.len() == layers => return Ok(flags),
                _ => bail!(
                    "{}: metadata {key} is not one flag per layer ({layers})",
                    file.path.display()
                ),
            }
        }
        Some(_) => file.integer(key)?.unwrap_or(default),
        None => default,
    }
    .max(1) as usize;
    // llama.cpp's `set_swa_pattern`: layer i slides when i % n < n − 1.
    Ok((0..layers).map(|i| i % period < period - 1).collect())
}
