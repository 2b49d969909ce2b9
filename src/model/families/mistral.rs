//! Mistral: Llama's layer with a sliding window on every layer (default
//! 4096). Its GGUF files are `llama` files whose `general.name` is
//! `mistral` (see [`crate::model::gguf`]).

use super::{
    BiasField, FamilySpec, GgufTensors, LlamaLikeFields, PreNormFields, PreNormSpec,
    SlidingWindows, Stack, Variant, LLAMA_FIELDS, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "mistral",
    display_name: "Mistral",
    base_class: "MistralModel",
    architecture_stems: &["Mistral"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: None,
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            max_position_embeddings: 131072,
            sliding_windows: SlidingWindows::EveryLayer {
                default: Some(4096),
            },
            attention_bias: BiasField::ReadOnly,
            mlp_bias: BiasField::ReadOnly,
            ..LLAMA_FIELDS
        }),
        variant: Variant::LLAMA,
        names: LLAMA_NAMES,
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
