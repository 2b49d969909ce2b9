//! CamemBERT: RoBERTa trained on French; its checkpoints keep RoBERTa's
//! `roberta.` prefix.

use super::roberta::ROBERTA_ENCODER;
use super::{FamilySpec, Stack, BERT_EMBEDDINGS};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "camembert",
    display_name: "CamemBERT",
    base_class: "CamembertModel",
    architecture_stems: &["Camembert"],
    checkpoint_prefix: "roberta.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(ROBERTA_ENCODER),
};
