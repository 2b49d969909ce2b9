//! The model families headscope loads, and the few places where they differ
//! (ANALYSIS.md §8).
//!
//! The BERT-like encoders differ in how a checkpoint names its tensors, how the
//! embeddings are built (position ids after RoBERTa's padding index; no token
//! types in DistilBERT; ELECTRA's and ALBERT's narrower embeddings projected
//! to the hidden size) and whether layers share weights (ALBERT). Every
//! family's layer computes the same thing — self-attention, output
//! projection, residual and LayerNorm, then the feed-forward, residual and
//! LayerNorm — so one encoder runs them all, reading these descriptions.
//!
//! The decoders (GPT-2; the Llama family: Llama, Mistral, Qwen2; and
//! GPT-NeoX, Gemma 1–3, Qwen3, Phi-3, OLMo 2) are causal; one stack
//! ([`super::decoder`]) runs them all, and ModernBERT too
//! (bidirectionally). What sets a family apart is data its config is read
//! into ([`super::decoder::config::Variant`]): the norm's kind, q/k norms,
//! where the norms sit and how the residual sums, fused weight layouts,
//! partial rotary, soft-capped and rescaled scores, scaled embeddings;
//! the family itself names the tensors.

use serde::{Deserialize, Serialize};

/// A `model_type` of `config.json` that headscope runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Family {
    Bert,
    Roberta,
    XlmRoberta,
    Camembert,
    DistilBert,
    Electra,
    Albert,
    ModernBert,
    Gpt2,
    Llama,
    Mistral,
    Qwen2,
    GptNeoX,
    Gemma,
    Gemma2,
    Gemma3Text,
    Qwen3,
    Phi3,
    Olmo2,
}

/// Tensor names of the embeddings, below the checkpoint's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingNames {
    pub words: &'static str,
    pub positions: &'static str,
    /// `None`: the family has no token types (DistilBERT).
    pub token_types: Option<&'static str>,
    pub norm: &'static str,
}

/// Tensor names of one layer, below its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerNames {
    pub query: &'static str,
    pub key: &'static str,
    pub value: &'static str,
    /// The attention's output projection, whose input is every head's P·V.
    pub attention_output: &'static str,
    pub attention_norm: &'static str,
    pub intermediate: &'static str,
    pub output: &'static str,
    pub output_norm: &'static str,
}

const BERT_EMBEDDINGS: EmbeddingNames = EmbeddingNames {
    words: "embeddings.word_embeddings",
    positions: "embeddings.position_embeddings",
    token_types: Some("embeddings.token_type_embeddings"),
    norm: "embeddings.LayerNorm",
};

const BERT_LAYER: LayerNames = LayerNames {
    query: "attention.self.query",
    key: "attention.self.key",
    value: "attention.self.value",
    attention_output: "attention.output.dense",
    attention_norm: "attention.output.LayerNorm",
    intermediate: "intermediate.dense",
    output: "output.dense",
    output_norm: "output.LayerNorm",
};

const DISTILBERT_LAYER: LayerNames = LayerNames {
    query: "attention.q_lin",
    key: "attention.k_lin",
    value: "attention.v_lin",
    attention_output: "attention.out_lin",
    attention_norm: "sa_layer_norm",
    intermediate: "ffn.lin1",
    output: "ffn.lin2",
    output_norm: "output_layer_norm",
};

const ALBERT_LAYER: LayerNames = LayerNames {
    query: "attention.query",
    key: "attention.key",
    value: "attention.value",
    attention_output: "attention.dense",
    attention_norm: "attention.LayerNorm",
    intermediate: "ffn",
    output: "ffn_output",
    output_norm: "full_layer_layer_norm",
};

impl Family {
    /// The encoders, then the decoders.
    pub const ALL: [Family; 19] = {
        let (encoders, decoders) = (Self::ENCODERS.len(), Self::DECODERS.len());
        let mut all = [Family::Bert; 19];
        let mut i = 0;
        while i < encoders + decoders {
            all[i] = if i < encoders {
                Self::ENCODERS[i]
            } else {
                Self::DECODERS[i - encoders]
            };
            i += 1;
        }
        all
    };

    /// The bidirectional encoders.
    pub const ENCODERS: [Family; 8] = [
        Family::Bert,
        Family::Roberta,
        Family::XlmRoberta,
        Family::Camembert,
        Family::DistilBert,
        Family::Electra,
        Family::Albert,
        Family::ModernBert,
    ];

    /// The causal decoders.
    pub const DECODERS: [Family; 11] = [
        Family::Gpt2,
        Family::Llama,
        Family::Mistral,
        Family::Qwen2,
        Family::GptNeoX,
        Family::Gemma,
        Family::Gemma2,
        Family::Gemma3Text,
        Family::Qwen3,
        Family::Phi3,
        Family::Olmo2,
    ];

    /// Whether the family is a causal decoder: a token attends only to
    /// itself and the tokens before it (ANALYSIS.md §8).
    pub fn is_causal(self) -> bool {
        Self::DECODERS.contains(&self)
    }

    /// Whether the family runs on the pre-norm stack of [`super::decoder`]
    /// (the decoders and ModernBERT) rather than the post-norm encoder.
    pub fn is_pre_norm(self) -> bool {
        self.is_causal() || self == Family::ModernBert
    }

    /// Whether the family is Llama-like: rotary positions, RMSNorm,
    /// grouped-query attention and a SwiGLU feed-forward.
    pub fn is_llama_like(self) -> bool {
        matches!(self, Family::Llama | Family::Mistral | Family::Qwen2)
    }

    /// The token embedding table, whose presence tells a checkpoint of the
    /// family from another.
    pub fn word_embeddings(self) -> &'static str {
        match self {
            Family::Gpt2 => "wte",
            Family::GptNeoX => "embed_in",
            Family::ModernBert => "embeddings.tok_embeddings",
            _ if self.is_causal() => "embed_tokens",
            _ => self.embedding_names().words,
        }
    }

    /// The family of a `model_type` value.
    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|family| family.model_type() == model_type)
    }

    /// The family of an `architectures` entry such as `RobertaForMaskedLM`,
    /// for old configs without `model_type`.
    pub fn from_architecture(architecture: &str) -> Option<Self> {
        [
            ("Bert", Family::Bert),
            ("Roberta", Family::Roberta),
            ("XLMRoberta", Family::XlmRoberta),
            ("Camembert", Family::Camembert),
            ("DistilBert", Family::DistilBert),
            ("Electra", Family::Electra),
            ("Albert", Family::Albert),
            ("ModernBert", Family::ModernBert),
            ("GPT2", Family::Gpt2),
            ("Llama", Family::Llama),
            ("Mistral", Family::Mistral),
            ("Qwen2", Family::Qwen2),
            ("GPTNeoX", Family::GptNeoX),
            // Gemma 3's own text model; `Gemma3ForConditionalGeneration`
            // is the multimodal one, which headscope does not run.
            ("Gemma3Text", Family::Gemma3Text),
            ("Gemma3ForCausalLM", Family::Gemma3Text),
            ("Gemma2", Family::Gemma2),
            ("GemmaModel", Family::Gemma),
            ("GemmaFor", Family::Gemma),
            ("Qwen3", Family::Qwen3),
            ("Phi3", Family::Phi3),
            ("Olmo2", Family::Olmo2),
        ]
        .into_iter()
        .find(|(stem, _)| architecture.starts_with(stem))
        .map(|(_, family)| family)
    }

    pub fn model_type(self) -> &'static str {
        match self {
            Family::Bert => "bert",
            Family::Roberta => "roberta",
            Family::XlmRoberta => "xlm-roberta",
            Family::Camembert => "camembert",
            Family::DistilBert => "distilbert",
            Family::Electra => "electra",
            Family::Albert => "albert",
            Family::ModernBert => "modernbert",
            Family::Gpt2 => "gpt2",
            Family::Llama => "llama",
            Family::Mistral => "mistral",
            Family::Qwen2 => "qwen2",
            Family::GptNeoX => "gpt_neox",
            Family::Gemma => "gemma",
            Family::Gemma2 => "gemma2",
            Family::Gemma3Text => "gemma3_text",
            Family::Qwen3 => "qwen3",
            Family::Phi3 => "phi3",
            Family::Olmo2 => "olmo2",
        }
    }

    /// The name people know the family by.
    pub fn display_name(self) -> &'static str {
        match self {
            Family::Bert => "BERT",
            Family::Roberta => "RoBERTa",
            Family::XlmRoberta => "XLM-RoBERTa",
            Family::Camembert => "CamemBERT",
            Family::DistilBert => "DistilBERT",
            Family::Electra => "ELECTRA",
            Family::Albert => "ALBERT",
            Family::ModernBert => "ModernBERT",
            Family::Gpt2 => "GPT-2",
            Family::Llama => "Llama",
            Family::Mistral => "Mistral",
            Family::Qwen2 => "Qwen2",
            Family::GptNeoX => "GPT-NeoX",
            Family::Gemma => "Gemma",
            Family::Gemma2 => "Gemma 2",
            Family::Gemma3Text => "Gemma 3",
            Family::Qwen3 => "Qwen3",
            Family::Phi3 => "Phi-3",
            Family::Olmo2 => "OLMo 2",
        }
    }

    /// The base model's class, for the `architectures` of a config we write.
    pub fn base_class(self) -> &'static str {
        match self {
            Family::Bert => "BertModel",
            Family::Roberta => "RobertaModel",
            Family::XlmRoberta => "XLMRobertaModel",
            Family::Camembert => "CamembertModel",
            Family::DistilBert => "DistilBertModel",
            Family::Electra => "ElectraModel",
            Family::Albert => "AlbertModel",
            Family::ModernBert => "ModernBertModel",
            Family::Gpt2 => "GPT2Model",
            Family::Llama => "LlamaModel",
            Family::Mistral => "MistralModel",
            Family::Qwen2 => "Qwen2Model",
            Family::GptNeoX => "GPTNeoXModel",
            Family::Gemma => "GemmaModel",
            Family::Gemma2 => "Gemma2Model",
            Family::Gemma3Text => "Gemma3TextModel",
            Family::Qwen3 => "Qwen3Model",
            Family::Phi3 => "Phi3Model",
            Family::Olmo2 => "Olmo2Model",
        }
    }

    /// What a checkpoint saved with a task head puts before the base model's
    /// tensor names (transformers' `base_model_prefix`).
    pub fn checkpoint_prefix(self) -> &'static str {
        match self {
            Family::Bert => "bert.",
            Family::Roberta | Family::XlmRoberta | Family::Camembert => "roberta.",
            Family::DistilBert => "distilbert.",
            Family::Electra => "electra.",
            Family::Albert => "albert.",
            Family::Gpt2 => "transformer.",
            Family::GptNeoX => "gpt_neox.",
            _ => "model.",
        }
    }

    /// Whether position ids start after the padding index and skip padding
    /// tokens, as fairseq's RoBERTa numbers them.
    pub fn positions_after_padding(self) -> bool {
        matches!(
            self,
            Family::Roberta | Family::XlmRoberta | Family::Camembert
        )
    }

    /// Whether the config sets `embedding_size`, the width of embeddings
    /// that are projected to `hidden_size`.
    pub fn has_embedding_size(self) -> bool {
        matches!(self, Family::Electra | Family::Albert)
    }

    pub fn embedding_names(self) -> EmbeddingNames {
        match self {
            Family::DistilBert => EmbeddingNames {
                token_types: None,
                ..BERT_EMBEDDINGS
            },
            _ => BERT_EMBEDDINGS,
        }
    }

    /// The linear map from `embedding_size` to `hidden_size`, when the
    /// family has one and the sizes differ (ALBERT always has it).
    pub fn projection_name(
        self,
        embedding_size: usize,
        hidden_size: usize,
    ) -> Option<&'static str> {
        match self {
            Family::Albert => Some("encoder.embedding_hidden_mapping_in"),
            Family::Electra if embedding_size != hidden_size => Some("embeddings_project"),
            _ => None,
        }
    }

    pub fn layer_names(self) -> LayerNames {
        match self {
            Family::DistilBert => DISTILBERT_LAYER,
            Family::Albert => ALBERT_LAYER,
            _ => BERT_LAYER,
        }
    }

    /// The prefix of a layer's tensors: `index` counts distinct layers; for
    /// ALBERT it runs over the groups' inner layers, group by group.
    pub fn layer_prefix(self, index: usize, inner_group_num: usize) -> String {
        match self {
            Family::DistilBert => format!("transformer.layer.{index}"),
            Family::Albert => format!(
                "encoder.albert_layer_groups.{}.albert_layers.{}",
                index / inner_group_num,
                index % inner_group_num
            ),
            _ => format!("encoder.layer.{index}"),
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// The supported model types as prose: `bert, roberta, …, electra and albert`.
pub fn supported_list() -> String {
    let types = Family::ALL.map(Family::model_type);
    let (last, rest) = types.split_last().expect("not empty");
    format!("{} and {last}", rest.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_types_and_architectures_name_their_family() {
        for family in Family::ALL {
            assert_eq!(Family::from_model_type(family.model_type()), Some(family));
            assert_eq!(Family::from_architecture(family.base_class()), Some(family));
        }
        assert_eq!(
            Family::from_architecture("DistilBertForSequenceClassification"),
            Some(Family::DistilBert)
        );
        assert_eq!(
            Family::from_architecture("GPT2LMHeadModel"),
            Some(Family::Gpt2)
        );
        assert_eq!(Family::from_model_type("t5"), None);
        assert!(Family::Qwen2.is_causal() && !Family::Bert.is_causal());
    }

    #[test]
    fn albert_layers_are_numbered_within_their_group() {
        assert_eq!(
            Family::Albert.layer_prefix(3, 2),
            "encoder.albert_layer_groups.1.albert_layers.1"
        );
        assert_eq!(Family::Bert.layer_prefix(3, 1), "encoder.layer.3");
    }
}
