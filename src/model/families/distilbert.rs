//! DistilBERT: its own config names (`dim`, `n_layers`, …), no token
//! types, its own tensor names, optionally the fixed sinusoidal position
//! table.

use super::{
    EmbeddingNames, EncoderFields, EncoderSpec, FamilySpec, LayerNames, LayerPrefix, Stack,
    BERT_EMBEDDINGS,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "distilbert",
    display_name: "DistilBERT",
    base_class: "DistilBertModel",
    architecture_stems: &["DistilBert"],
    checkpoint_prefix: "distilbert.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        fields: EncoderFields::DistilBert,
        layer_groups: false,
        pad_token_id: 0,
        hidden_act: "gelu",
        positions_after_padding: false,
        embeddings: EmbeddingNames {
            token_types: None,
            ..BERT_EMBEDDINGS
        },
        projection: None,
        layer: LayerNames {
            query: "attention.q_lin",
            key: "attention.k_lin",
            value: "attention.v_lin",
            attention_output: "attention.out_lin",
            attention_norm: "sa_layer_norm",
            intermediate: "ffn.lin1",
            output: "ffn.lin2",
            output_norm: "output_layer_norm",
        },
        layer_prefix: LayerPrefix::Numbered("transformer.layer"),
    }),
};
