//! `config.json` of a BERT checkpoint: the shape of the encoder, checked
//! before any weight is read so that a wrong folder is refused with a message
//! that names the file and the problem.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The fields of a Hugging Face `BertConfig` that the encoder needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub model_type: Option<String>,
    #[serde(default)]
    pub architectures: Option<Vec<String>>,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_hidden_act() -> String {
    "gelu".into()
}
fn default_max_positions() -> usize {
    512
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
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

impl BertConfig {
    /// Reads and validates `config.json`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let config: BertConfig = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is not a BERT config.json: {e}", path.display()))?;
        config
            .validate()
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", path.display()))?;
        Ok(config)
    }

    /// Refuses shapes and model types the encoder cannot run.
    pub fn validate(&self) -> Result<(), String> {
        let is_bert = match (&self.model_type, &self.architectures) {
            (Some(t), _) => t == "bert",
            (None, Some(archs)) => archs.iter().all(|a| a.starts_with("Bert")),
            (None, None) => true,
        };
        if !is_bert {
            return Err(format!(
                "model_type {:?} is not a BERT encoder (headscope runs BERT-family models: model_type \"bert\")",
                self.model_type.as_deref().unwrap_or("?")
            ));
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
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
        ] {
            if value == 0 {
                return Err(format!("{name} is 0"));
            }
        }
        if self.max_position_embeddings < 3 {
            return Err("max_position_embeddings is below 3: no room for a sentence".into());
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

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// The configuration of `bert-base-uncased`, for random models of that shape.
    pub fn bert_base_uncased() -> Self {
        BertConfig {
            vocab_size: 30522,
            hidden_size: 768,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            hidden_act: "gelu".into(),
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            model_type: Some("bert".into()),
            architectures: Some(vec!["BertForMaskedLM".into()]),
            position_embedding_type: Some("absolute".into()),
        }
    }

    /// The configuration of sentence-transformers' all-MiniLM-L6-v2.
    pub fn all_minilm_l6_v2() -> Self {
        BertConfig {
            hidden_size: 384,
            num_hidden_layers: 6,
            intermediate_size: 1536,
            architectures: Some(vec!["BertModel".into()]),
            ..Self::bert_base_uncased()
        }
    }
}
