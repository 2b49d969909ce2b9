//! The `config.json` fields of the BERT-like encoder families (BERT,
//! RoBERTa, XLM-RoBERTa, CamemBERT, DistilBERT, ELECTRA, ALBERT), as their
//! Hugging Face config classes name and default them: DistilBERT's `dim`,
//! `n_layers`, `n_heads`, `hidden_dim`, `activation`; ELECTRA's and
//! ALBERT's `embedding_size`; ALBERT's layer groups.

use super::fields::Fields;
use super::ModelConfig;
use crate::model::families::{EncoderFields, EncoderSpec};
use crate::model::family::Family;
use serde_json::{json, Value};

/// The family's encoder spec.
fn spec(family: Family) -> &'static EncoderSpec {
    family.spec().encoder().expect("an encoder family's config")
}

/// Reads the config.json fields of a BERT-like encoder family, by the
/// names and defaults of its spec.
pub(super) fn read(
    family: Family,
    fields: &Fields,
    architectures: Option<Vec<String>>,
) -> Result<ModelConfig, String> {
    let spec = spec(family);
    let position_embedding_type = fields.string("position_embedding_type")?;
    if spec.fields == EncoderFields::DistilBert {
        return read_distilbert(family, spec, fields, architectures, position_embedding_type);
    }
    let hidden = fields.required("hidden_size")?;
    let embedding_size = if family.has_embedding_size() {
        Some(fields.or("embedding_size", 128)?)
    } else {
        None
    };
    let group_field = |key: &str| match spec.layer_groups {
        true => fields.or(key, 1),
        false => Ok(1),
    };
    Ok(ModelConfig {
        family,
        vocab_size: fields.required("vocab_size")?,
        hidden_size: hidden,
        embedding_size,
        num_hidden_layers: fields.required("num_hidden_layers")?,
        num_attention_heads: fields.required("num_attention_heads")?,
        intermediate_size: fields.required("intermediate_size")?,
        hidden_act: fields
            .string("hidden_act")?
            .unwrap_or_else(|| spec.hidden_act.into()),
        max_position_embeddings: fields.or("max_position_embeddings", 512)?,
        type_vocab_size: fields.or("type_vocab_size", 2)?,
        layer_norm_eps: fields.float_or("layer_norm_eps", 1e-12)?,
        pad_token_id: fields.pad(spec.pad_token_id)?,
        position_embedding_type,
        num_hidden_groups: group_field("num_hidden_groups")?,
        inner_group_num: group_field("inner_group_num")?,
        sinusoidal_pos_embds: false,
        architectures,
        pre_norm: None,
    })
}

/// DistilBERT's own names: `dim`, `n_layers`, `n_heads`, `hidden_dim`,
/// `activation`, `sinusoidal_pos_embds`.
fn read_distilbert(
    family: Family,
    spec: &EncoderSpec,
    fields: &Fields,
    architectures: Option<Vec<String>>,
    position_embedding_type: Option<String>,
) -> Result<ModelConfig, String> {
    let hidden = fields.required("dim")?;
    Ok(ModelConfig {
        family,
        vocab_size: fields.required("vocab_size")?,
        hidden_size: hidden,
        embedding_size: None,
        num_hidden_layers: fields.required("n_layers")?,
        num_attention_heads: fields.required("n_heads")?,
        intermediate_size: fields.required("hidden_dim")?,
        hidden_act: fields
            .string("activation")?
            .unwrap_or_else(|| spec.hidden_act.into()),
        max_position_embeddings: fields.or("max_position_embeddings", 512)?,
        type_vocab_size: 0,
        // DistilBERT's LayerNorms are built with eps 1e-12, whatever the config says.
        layer_norm_eps: 1e-12,
        pad_token_id: fields.pad(spec.pad_token_id)?,
        position_embedding_type,
        num_hidden_groups: 1,
        inner_group_num: 1,
        sinusoidal_pos_embds: fields.bool_or("sinusoidal_pos_embds", false)?,
        architectures,
        pre_norm: None,
    })
}

/// Refuses encoder shapes the encoder cannot run.
pub(super) fn validate(config: &ModelConfig) -> Result<(), String> {
    if let Some(kind) = &config.position_embedding_type {
        if kind != "absolute" {
            return Err(format!(
                "position_embedding_type {kind:?} is not supported (only \"absolute\")"
            ));
        }
    }
    for (name, value) in [
        ("vocab_size", config.vocab_size),
        ("hidden_size", config.hidden_size),
        ("embedding_size", config.embedding_width()),
        ("num_hidden_layers", config.num_hidden_layers),
        ("num_attention_heads", config.num_attention_heads),
        ("intermediate_size", config.intermediate_size),
        ("max_position_embeddings", config.max_position_embeddings),
        ("num_hidden_groups", config.num_hidden_groups),
        ("inner_group_num", config.inner_group_num),
    ] {
        if value == 0 {
            return Err(format!("{name} is 0"));
        }
    }
    let has_token_types = spec(config.family).embeddings.token_types.is_some();
    if has_token_types && config.type_vocab_size == 0 {
        return Err("type_vocab_size is 0".into());
    }
    if config.num_hidden_groups > config.num_hidden_layers {
        return Err(format!(
            "num_hidden_groups {} is more than num_hidden_layers {}",
            config.num_hidden_groups, config.num_hidden_layers
        ));
    }
    if config.family.positions_after_padding() && config.pad_token_id.is_none() {
        return Err(format!(
            "pad_token_id is null, but {} numbers positions after it",
            config.family
        ));
    }
    if config.max_tokens() < 3 {
        return Err("max_position_embeddings leaves no room for a sentence".into());
    }
    if !config
        .hidden_size
        .is_multiple_of(config.num_attention_heads)
    {
        return Err(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            config.hidden_size, config.num_attention_heads
        ));
    }
    Ok(())
}

/// The config.json fields of an encoder, as its config class writes them.
pub(super) fn to_json(config: &ModelConfig) -> Value {
    let family = config.family;
    let architectures = config
        .architectures
        .clone()
        .unwrap_or_else(|| vec![family.base_class().to_string()]);
    let mut object = json!({
        "model_type": family.model_type(),
        "architectures": architectures,
        "vocab_size": config.vocab_size,
        "max_position_embeddings": config.max_position_embeddings,
        "pad_token_id": config.pad_token_id,
    });
    let fields = object.as_object_mut().expect("an object");
    let mut set = |key: &str, value: Value| {
        fields.insert(key.to_string(), value);
    };
    if spec(family).fields == EncoderFields::DistilBert {
        set("dim", json!(config.hidden_size));
        set("n_layers", json!(config.num_hidden_layers));
        set("n_heads", json!(config.num_attention_heads));
        set("hidden_dim", json!(config.intermediate_size));
        set("activation", json!(config.hidden_act));
        set("sinusoidal_pos_embds", json!(config.sinusoidal_pos_embds));
        return object;
    }
    set("hidden_size", json!(config.hidden_size));
    set("num_hidden_layers", json!(config.num_hidden_layers));
    set("num_attention_heads", json!(config.num_attention_heads));
    set("intermediate_size", json!(config.intermediate_size));
    set("hidden_act", json!(config.hidden_act));
    set("type_vocab_size", json!(config.type_vocab_size));
    set("layer_norm_eps", json!(config.layer_norm_eps));
    if let Some(kind) = &config.position_embedding_type {
        set("position_embedding_type", json!(kind));
    }
    if family.has_embedding_size() {
        set("embedding_size", json!(config.embedding_width()));
    }
    if spec(family).layer_groups {
        set("num_hidden_groups", json!(config.num_hidden_groups));
        set("inner_group_num", json!(config.inner_group_num));
    }
    object
}
