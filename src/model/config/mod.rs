//! `config.json` of a checkpoint: its family and shape, checked before any
//! weight is read so that a wrong folder is refused with a message that
//! names the file and the problem.
//!
//! One [`ModelConfig`] describes every family. Each family names its fields
//! as its Hugging Face config class does, and fields a config may leave out
//! take that class's defaults (the shape itself must be written): the
//! BERT-like encoders' fields are read in [`encoder_families`], the pre-norm
//! families' (the decoders and ModernBERT: grouped-query heads, RoPE,
//! sliding windows) in [`pre_norm`], both through [`fields`] and by the
//! names and defaults each family's spec gives ([`super::families`]);
//! [`shapes`] holds the shapes of well-known checkpoints for `--like`.

mod encoder_families;
mod fields;
pub mod pre_norm;
mod shapes;

use super::family::{supported_list, Family};
pub use crate::kernels::Activation;
use fields::Fields;
pub use pre_norm::{PreNormShape, Rope, RopeScaling, RotaryFrequencies};
use serde_json::Value;
use std::path::Path;

/// The shape of a model of any supported family: the fields every family
/// has, the encoders' own (embedding width, token types, ALBERT's groups,
/// DistilBERT's table) and, for the pre-norm families, [`PreNormShape`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    /// ELECTRA's and ALBERT's `embedding_size`, the width of embeddings
    /// they project to `hidden_size`; `None` elsewhere (the embeddings are
    /// `hidden_size` wide). See [`ModelConfig::embedding_width`].
    pub embedding_size: Option<usize>,
    /// Layers as configured; ALBERT runs `inner_group_num` attention layers
    /// for each (see [`ModelConfig::attention_layers`]).
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: String,
    pub max_position_embeddings: usize,
    /// 0 when the family has no token types (DistilBERT).
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    pub pad_token_id: Option<u32>,
    pub position_embedding_type: Option<String>,
    /// ALBERT: how many sets of layer weights the layers share.
    pub num_hidden_groups: usize,
    /// ALBERT: layers (each with its own weights) in one group.
    pub inner_group_num: usize,
    /// DistilBERT: the position table is the fixed sinusoidal one.
    pub sinusoidal_pos_embds: bool,
    pub architectures: Option<Vec<String>>,
    /// What a pre-norm family (the decoders, ModernBERT) adds; `None` for
    /// the BERT-like encoders. Its `layer_norm_eps` is GPT-2's
    /// `layer_norm_epsilon`, the Llama family's `rms_norm_eps` or
    /// ModernBERT's `norm_eps`.
    pub pre_norm: Option<PreNormShape>,
}

impl ModelConfig {
    /// Reads and validates `config.json`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        Self::from_json(&text).map_err(|problem| anyhow::anyhow!("{}: {problem}", path.display()))
    }

    /// Parses and validates the text of a `config.json`.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ConfigError::NotJson(e.to_string()))?;
        let object = value
            .as_object()
            .ok_or_else(|| ConfigError::NotJson("not a JSON object".into()))?;
        let config = Self::from_fields(&Fields(object))?;
        config.validate()?;
        Ok(config)
    }

    fn from_fields(fields: &Fields) -> Result<Self, ConfigError> {
        let architectures = match fields.0.get("architectures") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                serde_json::from_value::<Vec<String>>(value.clone()).map_err(|_| {
                    ConfigError::Invalid("architectures is not a list of names".into())
                })?,
            ),
        };
        let model_type = fields.string("model_type").map_err(ConfigError::Invalid)?;
        let family = family_of(model_type, architectures.as_deref())?;
        if family.is_pre_norm() {
            pre_norm::read(family, fields, architectures)
        } else {
            encoder_families::read(family, fields, architectures)
        }
        .map_err(ConfigError::Invalid)
    }

    /// Refuses shapes headscope cannot run.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match (&self.pre_norm, self.family.is_pre_norm()) {
            (Some(shape), true) => pre_norm::validate(self, shape),
            (None, false) => encoder_families::validate(self),
            _ => Err(format!("{} needs its pre-norm fields", self.family)),
        }
        .map_err(ConfigError::Invalid)?;
        self.activation()?;
        Ok(())
    }

    /// The feed-forward activation `hidden_act` names.
    pub fn activation(&self) -> Result<Activation, ConfigError> {
        Activation::from_name(&self.hidden_act)
            .ok_or_else(|| ConfigError::Activation(self.hidden_act.clone()))
    }

    /// The width of the embeddings (before any projection to `hidden_size`).
    pub fn embedding_width(&self) -> usize {
        match self.embedding_size {
            Some(width) if self.family.has_embedding_size() => width,
            _ => self.hidden_size,
        }
    }

    pub fn head_dim(&self) -> usize {
        match &self.pre_norm {
            Some(shape) => shape.head_dim,
            None => self.hidden_size / self.num_attention_heads,
        }
    }

    /// Key/value heads: fewer than the query heads with grouped-query
    /// attention, as many in every other model.
    pub fn key_value_heads(&self) -> usize {
        self.pre_norm
            .as_ref()
            .map_or(self.num_attention_heads, |shape| shape.num_key_value_heads)
    }

    /// Whether the model is a causal decoder (ANALYSIS.md §8): a decoder
    /// family, unless its config makes its attention bidirectional
    /// (EmbeddingGemma).
    pub fn is_causal(&self) -> bool {
        self.family.is_causal() && !self.is_bidirectional_decoder()
    }

    /// A decoder family whose attention goes both ways (Gemma 3's
    /// `use_bidirectional_attention`): its input is a decoder's, its
    /// attention and figures an encoder's (ANALYSIS.md §8).
    pub fn is_bidirectional_decoder(&self) -> bool {
        self.family.is_causal()
            && self
                .pre_norm
                .as_ref()
                .is_some_and(|shape| shape.variant.bidirectional)
    }

    /// The longest input the model takes, in tokens: every position of the
    /// table, less those up to RoBERTa's padding index (its first position
    /// id is `pad_token_id + 1`).
    pub fn max_tokens(&self) -> usize {
        let reserved = match (self.family.positions_after_padding(), self.pad_token_id) {
            (true, Some(pad)) => pad as usize + 1,
            _ => 0,
        };
        self.max_position_embeddings.saturating_sub(reserved)
    }

    /// The position id of every token: 0, 1, 2, …, or for the RoBERTa family
    /// fairseq's numbering (transformers' `create_position_ids_from_input_ids`):
    /// padding tokens sit at the padding index, the others count from
    /// `pad_token_id + 1`, skipping the padding.
    pub fn position_ids(&self, input_ids: &[u32]) -> Vec<u32> {
        match (self.family.positions_after_padding(), self.pad_token_id) {
            (true, Some(pad)) => {
                let mut count = 0;
                input_ids
                    .iter()
                    .map(|&id| {
                        if id == pad {
                            pad
                        } else {
                            count += 1;
                            pad + count
                        }
                    })
                    .collect()
            }
            _ => (0..input_ids.len() as u32).collect(),
        }
    }

    /// How many distinct sets of layer weights the checkpoint holds.
    pub fn distinct_layers(&self) -> usize {
        if self.family.has_layer_groups() {
            self.num_hidden_groups * self.inner_group_num
        } else {
            self.num_hidden_layers
        }
    }

    /// For each attention layer the model runs, in order, the distinct
    /// layer whose weights it uses. ALBERT's layer i runs the inner layers
    /// of group ⌊i / (layers / groups)⌋, computed in floating point as
    /// transformers does.
    pub fn layer_schedule(&self) -> Vec<usize> {
        if !self.family.has_layer_groups() {
            return (0..self.num_hidden_layers).collect();
        }
        let per_group = self.num_hidden_layers as f64 / self.num_hidden_groups as f64;
        (0..self.num_hidden_layers)
            .flat_map(|layer| {
                let group = ((layer as f64 / per_group) as usize).min(self.num_hidden_groups - 1);
                (0..self.inner_group_num).map(move |inner| group * self.inner_group_num + inner)
            })
            .collect()
    }

    /// Attention layers the model runs (and headscope captures): L.
    pub fn attention_layers(&self) -> usize {
        self.num_hidden_layers * self.inner_group_num
    }

    /// The fields of this config as the family's Hugging Face config class
    /// writes them, for the `config.json` of a random model.
    pub fn to_json(&self) -> Value {
        match &self.pre_norm {
            Some(shape) => pre_norm::to_json(self, shape),
            None => encoder_families::to_json(self),
        }
    }
}

/// The family a config names, by `model_type`, else by `architectures`,
/// else BERT (the oldest configs name neither).
fn family_of(
    model_type: Option<String>,
    architectures: Option<&[String]>,
) -> Result<Family, ConfigError> {
    let unsupported = |named: String| ConfigError::Family {
        named,
        supported: supported_list(),
    };
    match (model_type, architectures) {
        (Some(kind), _) => Family::from_model_type(&kind)
            .ok_or_else(|| unsupported(format!("model_type {kind:?}"))),
        (None, Some([first, ..])) => Family::from_architecture(first)
            .ok_or_else(|| unsupported(format!("architecture {first:?}"))),
        (None, _) => Ok(Family::Bert),
    }
}

/// Why a `config.json` is not one headscope runs; the messages name the
/// field or the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("not a valid config.json: {0}")]
    NotJson(String),
    /// A model type or architecture of no family headscope runs.
    #[error("{named} is not supported: headscope runs the models whose model_type is {supported}")]
    Family { named: String, supported: String },
    #[error("hidden_act {0:?} is not supported")]
    Activation(String),
    /// A field missing, of the wrong kind, or out of range, or fields that
    /// do not fit together.
    #[error("{0}")]
    Invalid(String),
}

impl serde::Serialize for ModelConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_shape_round_trips_through_its_json() {
        for name in ModelConfig::KNOWN_SHAPES {
            let config = ModelConfig::like(name).unwrap();
            config.validate().unwrap();
            let text = serde_json::to_string(&config).unwrap();
            let mut again = ModelConfig::from_json(&text).unwrap();
            again.architectures = config.architectures.clone();
            assert_eq!(again, config, "{name}");
        }
    }

    #[test]
    fn distilbert_fields_have_their_own_names() {
        let text = r#"{"model_type": "distilbert", "vocab_size": 100, "dim": 16, "n_layers": 2,
            "n_heads": 4, "hidden_dim": 32, "activation": "relu", "sinusoidal_pos_embds": true}"#;
        let config = ModelConfig::from_json(text).unwrap();
        assert_eq!(
            (
                config.hidden_size,
                config.num_hidden_layers,
                config.num_attention_heads
            ),
            (16, 2, 4)
        );
        assert_eq!((config.intermediate_size, config.type_vocab_size), (32, 0));
        assert!(config.sinusoidal_pos_embds);
        assert_eq!(config.activation(), Ok(Activation::Relu));
    }

    #[test]
    fn roberta_positions_start_after_padding_and_skip_it() {
        let config = ModelConfig::like("roberta-base").unwrap();
        assert_eq!(config.max_tokens(), 512);
        assert_eq!(config.position_ids(&[0, 7, 1, 8, 2]), [2, 3, 1, 4, 5]);
        let bert = ModelConfig::bert_base_uncased();
        assert_eq!(bert.max_tokens(), 512);
        assert_eq!(bert.position_ids(&[101, 0, 102]), [0, 1, 2]);
    }

    #[test]
    fn albert_layers_share_weights_by_group() {
        let config = ModelConfig {
            num_hidden_layers: 3,
            num_hidden_groups: 2,
            inner_group_num: 2,
            ..ModelConfig::like("albert-base-v2").unwrap()
        };
        assert_eq!(config.distinct_layers(), 4);
        assert_eq!(config.attention_layers(), 6);
        // Layer 0 and 1 use group 0 (1 / 1.5 < 1), layer 2 group 1.
        assert_eq!(config.layer_schedule(), [0, 1, 0, 1, 2, 3]);
        let base = ModelConfig::like("albert-base-v2").unwrap();
        assert_eq!(base.layer_schedule(), [0; 12]);
    }

    #[test]
    fn unsupported_model_types_name_the_supported_ones() {
        let error = ModelConfig::from_json(r#"{"model_type": "falcon", "hidden_size": 8}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"falcon\" is not supported"), "{error}");
        assert!(
            error.contains("roberta") && error.contains("albert"),
            "{error}"
        );
        let error = ModelConfig::from_json(r#"{"architectures": ["T5Model"], "hidden_size": 8}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("T5Model"), "{error}");
    }
}
