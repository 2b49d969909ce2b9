//! Gemma: Llama's layer with Gemma's RMSNorm (x / rms(x) · (1 + w), in
//! float32), embeddings scaled by √hidden, head_dim 256 by default, and
//! "gelu" in its configs meaning the tanh approximation.

use super::{
    ActivationField, BiasField, BidirectionalField, EmbeddingScale, FamilySpec, GgufTensors,
    LlamaLikeFields, NormKind, PreNormFields, PreNormSpec, Stack, Variant, LLAMA_FIELDS,
    LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "gemma",
    display_name: "Gemma",
    base_class: "GemmaModel",
    architecture_stems: &["GemmaModel", "GemmaFor"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("gemma"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            head_dim: Some(256),
            max_position_embeddings: 8192,
            activation: ActivationField {
                key: "hidden_act",
                default: "gelu_pytorch_tanh",
                gelu_means_default: true,
            },
            mlp_bias: BiasField::Absent,
            bidirectional: BidirectionalField::Refused,
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            norm: NormKind::RmsPlusOne,
            embedding_scale: EmbeddingScale::SqrtHidden,
            ..Variant::LLAMA
        },
        names: LLAMA_NAMES,
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
