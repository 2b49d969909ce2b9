//! `config.json` of a checkpoint: its family and shape, checked
//! before any weight is read so that a wrong folder is refused with a message
//! that names the file and the problem.
//!
//! Each family names its fields as its Hugging Face config class does
//! (DistilBERT's `dim`, `n_layers`, `n_heads`, `hidden_dim`, `activation`);
//! they are read into one [`EncoderConfig`]. Fields a config may leave out
//! take the defaults of that class; the shape itself must be written.
//! The decoders' own fields (grouped-query heads, RoPE, sliding windows) are
//! read by [`super::decoder::config`] into [`EncoderConfig::decoder`].

use super::decoder::config::{self as decoder_config, DecoderShape};
use super::family::{supported_list, Family};
use serde_json::{json, Map, Value};
use std::path::Path;

/// The shape of a model of any supported family (the name is older than
/// the decoders, which it describes too).
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderConfig {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    /// ELECTRA's and ALBERT's `embedding_size`, the width of embeddings
    /// they project to `hidden_size`; `None` elsewhere (the embeddings are
    /// `hidden_size` wide). See [`EncoderConfig::embedding_width`].
    pub embedding_size: Option<usize>,
    /// Layers as configured; ALBERT runs `inner_group_num` attention layers
    /// for each (see [`EncoderConfig::attention_layers`]).
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
    /// What a causal decoder adds (`None` for the encoders). Its
    /// `layer_norm_eps` is GPT-2's `layer_norm_epsilon` or the Llama
    /// family's `rms_norm_eps`.
    pub decoder: Option<DecoderShape>,
}

/// The feed-forward activation, as Hugging Face names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: the exact, erf-based GELU.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`: the tanh approximation.
    GeluTanh,
    Relu,
}

/// Reads the fields of one config.json object.
pub(in crate::model) struct Fields<'a>(pub(in crate::model) &'a Map<String, Value>);

impl Fields<'_> {
    pub(in crate::model) fn usize_or(
        &self,
        key: &str,
        default: Option<usize>,
    ) -> Result<usize, String> {
        match self.0.get(key) {
            Some(value) => value
                .as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| format!("{key} is {value}, not a whole number")),
            None => default.ok_or_else(|| format!("missing field `{key}`")),
        }
    }

    pub(in crate::model) fn required(&self, key: &str) -> Result<usize, String> {
        self.usize_or(key, None)
    }

    pub(in crate::model) fn or(&self, key: &str, default: usize) -> Result<usize, String> {
        self.usize_or(key, Some(default))
    }

    pub(in crate::model) fn string(&self, key: &str) -> Result<Option<String>, String> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(format!("{key} is {other}, not a string")),
        }
    }

    pub(in crate::model) fn float_or(&self, key: &str, default: f64) -> Result<f64, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(value) => value
                .as_f64()
                .ok_or_else(|| format!("{key} is {value}, not a number")),
        }
    }

    /// A number that `null` turns off: absent means `default`.
    pub(in crate::model) fn float_or_null(
        &self,
        key: &str,
        default: Option<f64>,
    ) -> Result<Option<f64>, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("{key} is {value}, not a number")),
        }
    }

    /// A flag where `null` means `default`, as absent does.
    pub(in crate::model) fn bool_or_null(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            Some(Value::Null) => Ok(default),
            _ => self.bool_or(key, default),
        }
    }

    pub(in crate::model) fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(value) => value
                .as_bool()
                .ok_or_else(|| format!("{key} is {value}, not true or false")),
        }
    }

    /// `pad_token_id`: absent means the class default, `null` means none.
    pub(in crate::model) fn pad(&self, default: u32) -> Result<Option<u32>, String> {
        match self.0.get("pad_token_id") {
            None => Ok(Some(default)),
            Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .map(Some)
                .ok_or_else(|| format!("pad_token_id is {value}, not a token id")),
        }
    }
}

impl EncoderConfig {
    /// Reads and validates `config.json`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        Self::from_json(&text).map_err(|problem| anyhow::anyhow!("{}: {problem}", path.display()))
    }

    /// Parses and validates the text of a `config.json`.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("not a valid config.json: {e}"))?;
        let object = value
            .as_object()
            .ok_or("not a valid config.json: not a JSON object")?;
        let config = Self::from_fields(&Fields(object))?;
        config.validate()?;
        Ok(config)
    }

    fn from_fields(fields: &Fields) -> Result<Self, String> {
        let architectures = match fields.0.get("architectures") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                serde_json::from_value::<Vec<String>>(value.clone())
                    .map_err(|_| "architectures is not a list of names".to_string())?,
            ),
        };
        let family = family_of(fields.string("model_type")?, architectures.as_deref())?;
        if family.is_pre_norm() {
            return decoder_config::read(family, fields, architectures);
        }
        let position_embedding_type = fields.string("position_embedding_type")?;
        if family == Family::DistilBert {
            let hidden = fields.required("dim")?;
            return Ok(Self {
                family,
                vocab_size: fields.required("vocab_size")?,
                hidden_size: hidden,
                embedding_size: None,
                num_hidden_layers: fields.required("n_layers")?,
                num_attention_heads: fields.required("n_heads")?,
                intermediate_size: fields.required("hidden_dim")?,
                hidden_act: fields
                    .string("activation")?
                    .unwrap_or_else(|| "gelu".into()),
                max_position_embeddings: fields.or("max_position_embeddings", 512)?,
                type_vocab_size: 0,
                // DistilBERT's LayerNorms are built with eps 1e-12, whatever the config says.
                layer_norm_eps: 1e-12,
                pad_token_id: fields.pad(0)?,
                position_embedding_type,
                num_hidden_groups: 1,
                inner_group_num: 1,
                sinusoidal_pos_embds: fields.bool_or("sinusoidal_pos_embds", false)?,
                architectures,
                decoder: None,
            });
        }
        let hidden = fields.required("hidden_size")?;
        // The class defaults where they differ from BERT's.
        let (pad, act) = match family {
            Family::Roberta | Family::XlmRoberta | Family::Camembert => (1, "gelu"),
            Family::Albert => (0, "gelu_new"),
            _ => (0, "gelu"),
        };
        let embedding_size = if family.has_embedding_size() {
            Some(fields.or("embedding_size", 128)?)
        } else {
            None
        };
        Ok(Self {
            family,
            vocab_size: fields.required("vocab_size")?,
            hidden_size: hidden,
            embedding_size,
            num_hidden_layers: fields.required("num_hidden_layers")?,
            num_attention_heads: fields.required("num_attention_heads")?,
            intermediate_size: fields.required("intermediate_size")?,
            hidden_act: fields.string("hidden_act")?.unwrap_or_else(|| act.into()),
            max_position_embeddings: fields.or("max_position_embeddings", 512)?,
            type_vocab_size: fields.or("type_vocab_size", 2)?,
            layer_norm_eps: fields.float_or("layer_norm_eps", 1e-12)?,
            pad_token_id: fields.pad(pad)?,
            position_embedding_type,
            num_hidden_groups: if family == Family::Albert {
                fields.or("num_hidden_groups", 1)?
            } else {
                1
            },
            inner_group_num: if family == Family::Albert {
                fields.or("inner_group_num", 1)?
            } else {
                1
            },
            sinusoidal_pos_embds: false,
            architectures,
            decoder: None,
        })
    }

    /// Refuses shapes the encoder cannot run.
    pub fn validate(&self) -> Result<(), String> {
        match (&self.decoder, self.family.is_pre_norm()) {
            (Some(shape), true) => return decoder_config::validate(self, shape),
            (None, false) => {}
            _ => return Err(format!("{} needs its pre-norm fields", self.family)),
        }
        if let Some(kind) = &self.position_embedding_type {
            if kind != "absolute" {
                return Err(format!(
                    "position_embedding_type {kind:?} is not supported (only \"absolute\")"
                ));
            }
        }
        for (name, value) in [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("embedding_size", self.embedding_width()),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("num_hidden_groups", self.num_hidden_groups),
            ("inner_group_num", self.inner_group_num),
        ] {
            if value == 0 {
                return Err(format!("{name} is 0"));
            }
        }
        if self.family != Family::DistilBert && self.type_vocab_size == 0 {
            return Err("type_vocab_size is 0".into());
        }
        if self.num_hidden_groups > self.num_hidden_layers {
            return Err(format!(
                "num_hidden_groups {} is more than num_hidden_layers {}",
                self.num_hidden_groups, self.num_hidden_layers
            ));
        }
        if self.family.positions_after_padding() && self.pad_token_id.is_none() {
            return Err(format!(
                "pad_token_id is null, but {} numbers positions after it",
                self.family
            ));
        }
        if self.max_tokens() < 3 {
            return Err("max_position_embeddings leaves no room for a sentence".into());
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        self.activation()?;
        Ok(())
    }

    pub fn activation(&self) -> Result<Activation, String> {
        match self.hidden_act.as_str() {
            "gelu" => Ok(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Activation::GeluTanh),
            "relu" => Ok(Activation::Relu),
            other => Err(format!("hidden_act {other:?} is not supported")),
        }
    }

    /// The width of the embeddings (before any projection to `hidden_size`).
    pub fn embedding_width(&self) -> usize {
        match self.embedding_size {
            Some(width) if self.family.has_embedding_size() => width,
            _ => self.hidden_size,
        }
    }

    pub fn head_dim(&self) -> usize {
        match &self.decoder {
            Some(shape) => shape.head_dim,
            None => self.hidden_size / self.num_attention_heads,
        }
    }

    /// Key/value heads: fewer than the query heads with grouped-query
    /// attention, as many in every other model.
    pub fn key_value_heads(&self) -> usize {
        self.decoder
            .as_ref()
            .map_or(self.num_attention_heads, |shape| shape.num_key_value_heads)
    }

    /// Whether the model is a causal decoder (ANALYSIS.md §8).
    pub fn is_causal(&self) -> bool {
        self.family.is_causal()
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
        match self.family {
            Family::Albert => self.num_hidden_groups * self.inner_group_num,
            _ => self.num_hidden_layers,
        }
    }

    /// For each attention layer the model runs, in order, the distinct
    /// layer whose weights it uses. ALBERT's layer i runs the inner layers
    /// of group ⌊i / (layers / groups)⌋, computed in floating point as
    /// transformers does.
    pub fn layer_schedule(&self) -> Vec<usize> {
        if self.family != Family::Albert {
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
        if let Some(shape) = &self.decoder {
            return decoder_config::to_json(self, shape);
        }
        let family = self.family;
        let architectures = self
            .architectures
            .clone()
            .unwrap_or_else(|| vec![family.base_class().to_string()]);
        let mut object = json!({
            "model_type": family.model_type(),
            "architectures": architectures,
            "vocab_size": self.vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "pad_token_id": self.pad_token_id,
        });
        let fields = object.as_object_mut().expect("an object");
        let mut set = |key: &str, value: Value| {
            fields.insert(key.to_string(), value);
        };
        if family == Family::DistilBert {
            set("dim", json!(self.hidden_size));
            set("n_layers", json!(self.num_hidden_layers));
            set("n_heads", json!(self.num_attention_heads));
            set("hidden_dim", json!(self.intermediate_size));
            set("activation", json!(self.hidden_act));
            set("sinusoidal_pos_embds", json!(self.sinusoidal_pos_embds));
            return object;
        }
        set("hidden_size", json!(self.hidden_size));
        set("num_hidden_layers", json!(self.num_hidden_layers));
        set("num_attention_heads", json!(self.num_attention_heads));
        set("intermediate_size", json!(self.intermediate_size));
        set("hidden_act", json!(self.hidden_act));
        set("type_vocab_size", json!(self.type_vocab_size));
        set("layer_norm_eps", json!(self.layer_norm_eps));
        if let Some(kind) = &self.position_embedding_type {
            set("position_embedding_type", json!(kind));
        }
        if family.has_embedding_size() {
            set("embedding_size", json!(self.embedding_width()));
        }
        if family == Family::Albert {
            set("num_hidden_groups", json!(self.num_hidden_groups));
            set("inner_group_num", json!(self.inner_group_num));
        }
        object
    }

    /// The configuration of `bert-base-uncased`, for random models of that shape.
    pub fn bert_base_uncased() -> Self {
        EncoderConfig {
            family: Family::Bert,
            vocab_size: 30522,
            hidden_size: 768,
            embedding_size: None,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            hidden_act: "gelu".into(),
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            pad_token_id: Some(0),
            position_embedding_type: Some("absolute".into()),
            num_hidden_groups: 1,
            inner_group_num: 1,
            sinusoidal_pos_embds: false,
            architectures: Some(vec!["BertForMaskedLM".into()]),
            decoder: None,
        }
    }

    /// The configuration of sentence-transformers' all-MiniLM-L6-v2.
    pub fn all_minilm_l6_v2() -> Self {
        EncoderConfig {
            hidden_size: 384,
            num_hidden_layers: 6,
            intermediate_size: 1536,
            architectures: Some(vec!["BertModel".into()]),
            ..Self::bert_base_uncased()
        }
    }

    /// The shape of a well-known checkpoint, by its hub name (any case), for
    /// `headscope make-random-model --like`.
    pub fn like(name: &str) -> Option<Self> {
        let base = Self::bert_base_uncased();
        let roberta = |family: Family, vocab_size: usize| EncoderConfig {
            family,
            vocab_size,
            max_position_embeddings: 514,
            type_vocab_size: 1,
            layer_norm_eps: 1e-5,
            pad_token_id: Some(1),
            architectures: None,
            ..base.clone()
        };
        let config = match name.to_ascii_lowercase().as_str() {
            "bert-base-uncased" | "bert-base" => base,
            "all-minilm-l6-v2" | "sentence-transformers/all-minilm-l6-v2" => {
                Self::all_minilm_l6_v2()
            }
            "roberta-base" | "facebookai/roberta-base" => roberta(Family::Roberta, 50265),
            "xlm-roberta-base" | "facebookai/xlm-roberta-base" => {
                roberta(Family::XlmRoberta, 250002)
            }
            "camembert-base" | "almanach/camembert-base" => roberta(Family::Camembert, 32005),
            "distilbert-base-uncased" | "distilbert/distilbert-base-uncased" => EncoderConfig {
                family: Family::DistilBert,
                num_hidden_layers: 6,
                type_vocab_size: 0,
                position_embedding_type: None,
                architectures: None,
                ..base
            },
            "electra-base-discriminator" | "google/electra-base-discriminator" => EncoderConfig {
                family: Family::Electra,
                embedding_size: Some(768),
                architectures: None,
                ..base
            },
            "electra-small-discriminator" | "google/electra-small-discriminator" => EncoderConfig {
                family: Family::Electra,
                hidden_size: 256,
                embedding_size: Some(128),
                num_attention_heads: 4,
                intermediate_size: 1024,
                architectures: None,
                ..base
            },
            "albert-base-v2" | "albert/albert-base-v2" => EncoderConfig {
                family: Family::Albert,
                vocab_size: 30000,
                embedding_size: Some(128),
                hidden_act: "gelu_new".into(),
                position_embedding_type: None,
                architectures: None,
                ..base
            },
            _ => return super::decoder::weights::like(name),
        };
        Some(config)
    }

    /// The names [`EncoderConfig::like`] knows, for help and error messages.
    pub const KNOWN_SHAPES: [&'static str; 20] = [
        "bert-base-uncased",
        "all-minilm-l6-v2",
        "roberta-base",
        "xlm-roberta-base",
        "camembert-base",
        "distilbert-base-uncased",
        "electra-base-discriminator",
        "electra-small-discriminator",
        "albert-base-v2",
        "gpt2",
        "smollm2-135m",
        "qwen2-0.5b",
        "llama-3-8b",
        "pythia-160m",
        "gemma-2b",
        "gemma-2-2b",
        "gemma-3-1b",
        "qwen3-0.6b",
        "phi-3-mini",
        "olmo-2-1b",
    ];
}

/// The family a config names, by `model_type`, else by `architectures`,
/// else BERT (the oldest configs name neither).
fn family_of(
    model_type: Option<String>,
    architectures: Option<&[String]>,
) -> Result<Family, String> {
    let unsupported = |what: String| {
        format!(
            "{what} is not supported: headscope runs the models whose model_type is {}",
            supported_list()
        )
    };
    match (model_type, architectures) {
        (Some(kind), _) => Family::from_model_type(&kind)
            .ok_or_else(|| unsupported(format!("model_type {kind:?}"))),
        (None, Some([first, ..])) => Family::from_architecture(first)
            .ok_or_else(|| unsupported(format!("architecture {first:?}"))),
        (None, _) => Ok(Family::Bert),
    }
}

impl serde::Serialize for EncoderConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_shape_round_trips_through_its_json() {
        for name in EncoderConfig::KNOWN_SHAPES {
            let config = EncoderConfig::like(name).unwrap();
            config.validate().unwrap();
            let text = serde_json::to_string(&config).unwrap();
            let mut again = EncoderConfig::from_json(&text).unwrap();
            again.architectures = config.architectures.clone();
            assert_eq!(again, config, "{name}");
        }
    }

    #[test]
    fn distilbert_fields_have_their_own_names() {
        let text = r#"{"model_type": "distilbert", "vocab_size": 100, "dim": 16, "n_layers": 2,
            "n_heads": 4, "hidden_dim": 32, "activation": "relu", "sinusoidal_pos_embds": true}"#;
        let config = EncoderConfig::from_json(text).unwrap();
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
        let config = EncoderConfig::like("roberta-base").unwrap();
        assert_eq!(config.max_tokens(), 512);
        assert_eq!(config.position_ids(&[0, 7, 1, 8, 2]), [2, 3, 1, 4, 5]);
        let bert = EncoderConfig::bert_base_uncased();
        assert_eq!(bert.max_tokens(), 512);
        assert_eq!(bert.position_ids(&[101, 0, 102]), [0, 1, 2]);
    }

    #[test]
    fn albert_layers_share_weights_by_group() {
        let config = EncoderConfig {
            num_hidden_layers: 3,
            num_hidden_groups: 2,
            inner_group_num: 2,
            ..EncoderConfig::like("albert-base-v2").unwrap()
        };
        assert_eq!(config.distinct_layers(), 4);
        assert_eq!(config.attention_layers(), 6);
        // Layer 0 and 1 use group 0 (1 / 1.5 < 1), layer 2 group 1.
        assert_eq!(config.layer_schedule(), [0, 1, 0, 1, 2, 3]);
        let base = EncoderConfig::like("albert-base-v2").unwrap();
        assert_eq!(base.layer_schedule(), [0; 12]);
    }

    #[test]
    fn unsupported_model_types_name_the_supported_ones() {
        let error =
            EncoderConfig::from_json(r#"{"model_type": "falcon", "hidden_size": 8}"#).unwrap_err();
        assert!(error.contains("\"falcon\" is not supported"), "{error}");
        assert!(
            error.contains("roberta") && error.contains("albert"),
            "{error}"
        );
        let error = EncoderConfig::from_json(r#"{"architectures": ["T5Model"], "hidden_size": 8}"#)
            .unwrap_err();
        assert!(error.contains("T5Model"), "{error}");
    }
}
