//! XLM-RoBERTa: RoBERTa with a multilingual vocabulary; its checkpoints
//! keep RoBERTa's `roberta.` prefix.

use super::{
    EncoderFields, EncoderSpec, FamilySpec, Stack, BERT_EMBEDDINGS, BERT_LAYER, LayerPrefix,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "xlm-roberta",
    display_name: "XLM-RoBERTa",
    base_class: "XLMRobertaModel",
    architecture_stems: &["XLMRoberta"],
    checkpoint_prefix: "roberta.",
    word_embeddings: BERT_EMBEDDINGS.words,
    gguf_architecture: None,
    stack: Stack::Encoder(EncoderSpec {
        fields: EncoderFields::Bert,
        layer_groups: false,
        pad_token_id: 1,
        hidden_act: "gelu",
        positions_after_padding: true,
        embeddings: BERT_EMBEDDINGS,
        projection: None,
        layer: BERT_LAYER,
        layer_prefix: LayerPrefix::Numbered("encoder.layer"),
    }),
};
