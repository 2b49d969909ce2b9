//! The model's config from a GGUF file's metadata, as transformers' GGUF
//! loader reads it (`GGUF_CONFIG_MAPPING`, `load_gguf_checkpoint`): the
//! `config.json` fields it would write, read by the same code that reads a
//! folder's `config.json`, so a GGUF model is the same model as its
//! Hugging Face conversion.
//!
//! As transformers does: `rope.dimension_count` is the head size for
//! llama (Qwen2 derives its own); a llama file whose `general.name` is
//! exactly `mistral` is a Mistral; the embeddings are tied when the file
//! has no `output.weight`; the vocabulary size falls back to the
//! tokenizer's. RoPE scaling keys (and llama.cpp's `rope_freqs` tensor)
//! are not read by transformers either.

use super::file::GgufFile;
use crate::model::config::ModelConfig;
use anyhow::{anyhow, bail};
use serde_json::{json, Map, Value};

/// The GGUF architectures headscope opens, and the `model_type` each is.
pub const ARCHITECTURES: [(&str, &str); 2] = [("llama", "llama"), ("qwen2", "qwen2")];

/// The `model_type` of the file's architecture, or a message naming it.
pub fn model_type(file: &GgufFile) -> anyhow::Result<&'static str> {
    let architecture = file.string("general.architecture")?;
    let Some(&(_, model_type)) = ARCHITECTURES.iter().find(|(a, _)| *a == architecture) else {
        bail!(
            "{}: GGUF architecture {architecture} is not supported (headscope opens {})",
            file.path.display(),
            ARCHITECTURES.map(|(a, _)| a).join(", ")
        );
    };
    if model_type == "llama" && matches!(file.string("general.name"), Ok("mistral")) {
        return Ok("mistral");
    }
    Ok(model_type)
}

/// The config transformers gives this file.
pub fn encoder_config(file: &GgufFile) -> anyhow::Result<ModelConfig> {
    let model_type = model_type(file)?;
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
    if architecture == "llama" {
        if let Some(head_dim) = file.integer(&key("rope.dimension_count"))? {
            config.insert("head_dim".into(), json!(head_dim));
        }
    }
    if let Some(eps) = file.float(&key("attention.layer_norm_rms_epsilon"))? {
        config.insert("rms_norm_eps".into(), json!(eps));
    }
    if let Some(theta) = file.float(&key("rope.freq_base"))? {
        config.insert("rope_theta".into(), json!(theta));
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
    ModelConfig::from_json(&Value::Object(config).to_string()).map_err(|problem| {
        anyhow!(
            "{}: its metadata does not make a {model_type} config: {problem}",
            file.path.display()
        )
    })
}
