//! Phi-3 (and Phi-4-mini): fused `qkv_proj` and `gate_up_proj`, no biases,
//! an optional sliding window on every layer, rotary on a share of each
//! head where `partial_rotary_factor` says.

use super::{
    BiasField, FamilySpec, FeedForwardLayout, GgufTensors, LlamaLikeFields, PreNormFields,
    PreNormNames, PreNormSpec, QkvLayout, SlidingWindows, Stack, Variant, LLAMA_FIELDS,
    LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "phi3",
    display_name: "Phi-3",
    base_class: "Phi3Model",
    architecture_stems: &["Phi3"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("phi3"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            max_position_embeddings: 4096,
            rms_norm_eps: 1e-5,
            sliding_windows: SlidingWindows::EveryLayer { default: None },
            partial_rotary: true,
            attention_bias: BiasField::Absent,
            mlp_bias: BiasField::Absent,
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            qkv_layout: QkvLayout::Concatenated,
            feed_forward: FeedForwardLayout::FusedGated,
            ..Variant::LLAMA
        },
        names: PreNormNames {
            attention: ("self_attn", "qkv_proj", "o_proj"),
            feed_forward: ["gate_up_proj", "", "down_proj"],
            ..LLAMA_NAMES
        },
        gguf_tensors: GgufTensors {
            // `ffn_up` is its fused `gate_up_proj`.
            own: &[("ffn_up", "mlp.gate_up_proj")],
            then_llama: true,
        },
    }),
};
