//! ELECTRA's discriminator: BERT's layers, embeddings `embedding_size` wide,
//! projected to the hidden size when the two differ.

use super::{EncoderSpec, FamilySpec, Projection, Stack, BERT_EMBEDDINGS, BERT_ENCODER};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "electra",
    display_name: "ELECTRA",
    base_class: "ElectraModel",
    architecture_stems: &["Electra"],
    checkpoint_prefix: "electra.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        projection: Some(Projection {
            name: "embeddings_project",
            always: false,
        }),
        ..BERT_ENCODER
    }),
};
