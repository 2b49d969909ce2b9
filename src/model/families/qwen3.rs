//! Qwen3: Qwen2's layer without its q/k/v biases, with RMS-normalised
//! queries and keys per head; head_dim 128 by default.

use super::{
    BiasField, FamilySpec, GgufTensors, LlamaLikeFields, PreNormFields, PreNormSpec, QkNorm,
    SlidingWindows, Stack, Variant, LLAMA_FIELDS, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "qwen3",
    display_name: "Qwen3",
    base_class: "Qwen3Model",
    architecture_stems: &["Qwen3"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("qwen3"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            head_dim: Some(128),
            max_position_embeddings: 32768,
            sliding_windows: SlidingWindows::FromMaxWindowLayers,
            mlp_bias: BiasField::Absent,
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            qk_norm: QkNorm::PerHead,
            ..Variant::LLAMA
        },
        names: LLAMA_NAMES,
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
