//! ELECTRA's discriminator: BERT's layers, embeddings `embedding_size` wide,
//! projected to the hidden size when the two differ.

use super::{
    EncoderFields, EncoderSpec, FamilySpec, Stack, BERT_EMBEDDINGS, BERT_LAYER, LayerPrefix,
    Projection,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "electra",
    display_name: "ELECTRA",
    base_class: "ElectraModel",
    architecture_stems: &["Electra"],
    checkpoint_prefix: "electra.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        fields: EncoderFields::Bert,
        layer_groups: false,
        pad_token_id: 0,
        hidden_act: "gelu",
        positions_after_padding: false,
        embeddings: BERT_EMBEDDINGS,
        projection: Some(Projection {
            name: "embeddings_project",
            always: false,
        }),
        layer: BERT_LAYER,
        layer_prefix: LayerPrefix::Numbered("encoder.layer"),
    }),
};
