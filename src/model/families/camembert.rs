//! CamemBERT: RoBERTa trained on French; its checkpoints keep RoBERTa's
//! `roberta.` prefix.

use super::{EncoderSpec, FamilySpec, Stack, BERT_EMBEDDINGS, BERT_ENCODER};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "camembert",
    display_name: "CamemBERT",
    base_class: "CamembertModel",
    architecture_stems: &["Camembert"],
    checkpoint_prefix: "roberta.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        pad_token_id: 1,
        positions_after_padding: true,
        ..BERT_ENCODER
    }),
};
