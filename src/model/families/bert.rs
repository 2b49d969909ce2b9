//! BERT: the encoder whose tensor names, config fields and defaults the other
//! BERT-like families start from.

use super::{FamilySpec, Stack, BERT_EMBEDDINGS, BERT_ENCODER};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "bert",
    display_name: "BERT",
    base_class: "BertModel",
    architecture_stems: &["Bert"],
    checkpoint_prefix: "bert.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(BERT_ENCODER),
};
