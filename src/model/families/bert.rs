//! BERT: the encoder whose tensor names, config fields and defaults the other
//! BERT-like families start from.

use super::{
    EncoderFields, EncoderSpec, FamilySpec, Stack, BERT_EMBEDDINGS, BERT_LAYER, LayerPrefix,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "bert",
    display_name: "BERT",
    base_class: "BertModel",
    architecture_stems: &["Bert"],
    checkpoint_prefix: "bert.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        fields: EncoderFields::Bert,
        layer_groups: false,
        pad_token_id: 0,
        hidden_act: "gelu",
        positions_after_padding: false,
        embeddings: BERT_EMBEDDINGS,
        projection: None,
        layer: BERT_LAYER,
        layer_prefix: LayerPrefix::Numbered("encoder.layer"),
    }),
};
