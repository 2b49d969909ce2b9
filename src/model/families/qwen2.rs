//! Qwen2: Llama's layer with biased query, key and value projections and
//! sliding windows from `max_window_layers` on, when `use_sliding_window`.

use super::{
    BiasField, FamilySpec, GgufTensors, LlamaLikeFields, PreNormFields, PreNormSpec,
    SlidingWindows, Stack, Variant, LLAMA_FIELDS, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "qwen2",
    display_name: "Qwen2",
    base_class: "Qwen2Model",
    architecture_stems: &["Qwen2"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("qwen2"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            max_position_embeddings: 32768,
            sliding_windows: SlidingWindows::FromMaxWindowLayers,
            attention_bias: BiasField::ReadOnly,
            qkv_bias_always: true,
            mlp_bias: BiasField::ReadOnly,
            ..LLAMA_FIELDS
        }),
        variant: Variant::LLAMA,
        names: LLAMA_NAMES,
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
