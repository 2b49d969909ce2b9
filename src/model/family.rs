//! The model families headscope loads, and the few places where they differ
//! (ANALYSIS.md §8), asked of [`Family`]; each family's answers are data in
//! its file of [`super::families`].
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
//! into ([`super::families::Variant`]): the norm's kind, q/k norms,
//! where the norms sit and how the residual sums, fused weight layouts,
//! partial rotary, soft-capped and rescaled scores, scaled embeddings;
//! the family itself names the tensors.

pub use super::families::{EmbeddingNames, Family, LayerNames};
use super::families::{EncoderSpec, LayerPrefix, Stack};

/// How many of [`Family::ALL`] are encoders, which come first.
const ENCODER_COUNT: usize = {
    let mut count = 0;
    while count < Family::ALL.len() && !Family::ALL[count].spec().is_causal() {
        count += 1;
    }
    count
};

impl Family {
    /// The bidirectional encoders.
    pub const ENCODERS: [Family; ENCODER_COUNT] = {
        let mut encoders = [Family::Bert; ENCODER_COUNT];
        let mut i = 0;
        while i < ENCODER_COUNT {
            encoders[i] = Family::ALL[i];
            i += 1;
        }
        encoders
    };

    /// The causal decoders.
    pub const DECODERS: [Family; Family::ALL.len() - ENCODER_COUNT] = {
        let mut decoders = [Family::Bert; Family::ALL.len() - ENCODER_COUNT];
        let mut i = 0;
        while i < decoders.len() {
            decoders[i] = Family::ALL[ENCODER_COUNT + i];
            i += 1;
        }
        decoders
    };

    /// Whether the family is a causal decoder: a token attends only to
    /// itself and the tokens before it (ANALYSIS.md §8).
    pub fn is_causal(self) -> bool {
        self.spec().is_causal()
    }

    /// Whether the family runs on the pre-norm stack of [`super::decoder`]
    /// (the decoders and ModernBERT) rather than the post-norm encoder.
    pub fn is_pre_norm(self) -> bool {
        self.spec().pre_norm().is_some()
    }

    /// The token embedding table, whose presence tells a checkpoint of the
    /// family from another.
    pub fn word_embeddings(self) -> &'static str {
        self.spec().word_embeddings
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
        Self::ALL.into_iter().find(|family| {
            family
                .spec()
                .architecture_stems
                .iter()
                .any(|stem| architecture.starts_with(stem))
        })
    }

    /// The family of a GGUF file's `general.architecture`.
    pub fn from_gguf_architecture(architecture: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|family| family.spec().gguf_architecture == Some(architecture))
    }

    pub fn model_type(self) -> &'static str {
        self.spec().model_type
    }

    /// The name people know the family by.
    pub fn display_name(self) -> &'static str {
        self.spec().display_name
    }

    /// The base model's class, for the `architectures` of a config we write.
    pub fn base_class(self) -> &'static str {
        self.spec().base_class
    }

    /// What a checkpoint saved with a task head puts before the base model's
    /// tensor names (transformers' `base_model_prefix`).
    pub fn checkpoint_prefix(self) -> &'static str {
        self.spec().checkpoint_prefix
    }

    /// Whether position ids start after the padding index and skip padding
    /// tokens, as fairseq's RoBERTa numbers them.
    pub fn positions_after_padding(self) -> bool {
        self.encoder()
            .is_some_and(|encoder| encoder.positions_after_padding)
    }

    /// Whether the config sets `embedding_size`, the width of embeddings
    /// that are projected to `hidden_size`.
    pub fn has_embedding_size(self) -> bool {
        self.encoder()
            .is_some_and(|encoder| encoder.projection.is_some())
    }

    /// Whether the layers share weights in groups (ALBERT's
    /// `num_hidden_groups` of `inner_group_num` layers).
    pub fn has_layer_groups(self) -> bool {
        self.encoder().is_some_and(|encoder| encoder.layer_groups)
    }

    pub fn embedding_names(self) -> EmbeddingNames {
        self.encoder_or_bert().embeddings
    }

    /// The linear map from `embedding_size` to `hidden_size`, when the
    /// family has one and the sizes differ (ALBERT always has it).
    pub fn projection_name(
        self,
        embedding_size: usize,
        hidden_size: usize,
    ) -> Option<&'static str> {
        self.encoder()
            .and_then(|encoder| encoder.projection)
            .filter(|projection| projection.always || embedding_size != hidden_size)
            .map(|projection| projection.name)
    }

    pub fn layer_names(self) -> LayerNames {
        self.encoder_or_bert().layer
    }

    /// The prefix of a layer's tensors: `index` counts distinct layers; for
    /// ALBERT it runs over the groups' inner layers, group by group.
    pub fn layer_prefix(self, index: usize, inner_group_num: usize) -> String {
        match self.encoder_or_bert().layer_prefix {
            LayerPrefix::Numbered(prefix) => format!("{prefix}.{index}"),
            LayerPrefix::Grouped { groups, layers } => format!(
                "{groups}.{}.{layers}.{}",
                index / inner_group_num,
                index % inner_group_num
            ),
        }
    }

    fn encoder(self) -> Option<&'static EncoderSpec> {
        self.spec().encoder()
    }

    /// The encoder spec, or BERT's for a pre-norm family (whose encoder
    /// names nothing reads).
    fn encoder_or_bert(self) -> &'static EncoderSpec {
        match &self.spec().stack {
            Stack::Encoder(encoder) => encoder,
            Stack::PreNorm(_) => Family::Bert.encoder().expect("BERT is an encoder"),
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
        // The encoders come first in the list, the decoders after them.
        assert!(Family::ENCODERS.iter().all(|family| !family.is_causal()));
        assert!(Family::DECODERS.iter().all(|family| family.is_causal()));
        assert_eq!(
            Family::ENCODERS.len() + Family::DECODERS.len(),
            Family::ALL.len()
        );
        for family in Family::ALL {
            if let Some(architecture) = family.spec().gguf_architecture {
                assert_eq!(Family::from_gguf_architecture(architecture), Some(family));
            }
        }
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
