//! XLM-RoBERTa: RoBERTa with a multilingual vocabulary; its checkpoints
//! keep RoBERTa's `roberta.` prefix.

use super::roberta::ROBERTA_ENCODER;
use super::{FamilySpec, Stack, BERT_EMBEDDINGS};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "xlm-roberta",
    display_name: "XLM-RoBERTa",
    base_class: "XLMRobertaModel",
    architecture_stems: &["XLMRoberta"],
    checkpoint_prefix: "roberta.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(ROBERTA_ENCODER),
};
