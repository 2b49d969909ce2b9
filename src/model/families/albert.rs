//! ALBERT: embeddings `embedding_size` wide, always projected to the hidden
//! size; layers in `num_hidden_groups` groups of `inner_group_num` that
//! share their weights, named by group.

use super::{
    EncoderFields, EncoderSpec, FamilySpec, LayerNames, LayerPrefix, Projection, Stack,
    BERT_EMBEDDINGS,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "albert",
    display_name: "ALBERT",
    base_class: "AlbertModel",
    architecture_stems: &["Albert"],
    checkpoint_prefix: "albert.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        fields: EncoderFields::Bert,
        layer_groups: true,
        pad_token_id: 0,
        hidden_act: "gelu_new",
        positions_after_padding: false,
        embeddings: BERT_EMBEDDINGS,
        projection: Some(Projection {
            name: "encoder.embedding_hidden_mapping_in",
            always: true,
        }),
        layer: LayerNames {
            query: "attention.query",
            key: "attention.key",
            value: "attention.value",
            attention_output: "attention.dense",
            attention_norm: "attention.LayerNorm",
            intermediate: "ffn",
            output: "ffn_output",
            output_norm: "full_layer_layer_norm",
        },
        layer_prefix: LayerPrefix::Grouped {
            groups: "encoder.albert_layer_groups",
            layers: "albert_layers",
        },
    }),
};
