//! RoBERTa: BERT's layers; position ids after the padding index (1), as
//! fairseq numbers them.

use super::{EncoderSpec, FamilySpec, Stack, BERT_EMBEDDINGS, BERT_ENCODER};

/// RoBERTa's encoder, which CamemBERT and XLM-RoBERTa share.
pub const ROBERTA_ENCODER: EncoderSpec = EncoderSpec {
    pad_token_id: 1,
    positions_after_padding: true,
    ..BERT_ENCODER
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "roberta",
    display_name: "RoBERTa",
    base_class: "RobertaModel",
    architecture_stems: &["Roberta"],
    checkpoint_prefix: "roberta.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(ROBERTA_ENCODER),
};
