//! Gemma 3's text model: Gemma 2's layer without its score soft-cap (its
//! config has the field, transformers' attention never applies it), q/k
//! norms per head, five sliding layers then a global one by default, a
//! second rotary embedding for the sliding layers, and EmbeddingGemma's
//! `use_bidirectional_attention`.

use super::{
    ActivationField, BiasField, BidirectionalField, EmbeddingScale, FamilySpec, LayerLayout,
    LlamaLikeFields, NormKind, PreNormFields, PreNormSpec, QkNorm, ScoreField, SlidingWindows,
    Stack, Variant, LLAMA_FIELDS, SANDWICH_GGUF_TENSORS, SANDWICH_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "gemma3_text",
    display_name: "Gemma 3",
    base_class: "Gemma3TextModel",
    // Gemma 3's own text model; `Gemma3ForConditionalGeneration` is the
    // multimodal one, which headscope does not run.
    architecture_stems: &["Gemma3Text", "Gemma3ForCausalLM"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("gemma3"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            head_dim: Some(256),
            max_position_embeddings: 131072,
            activation: ActivationField {
                key: "hidden_activation",
                default: "gelu_pytorch_tanh",
                gelu_means_default: false,
            },
            sliding_windows: SlidingWindows::Pattern {
                pattern_field: Some("sliding_window_pattern"),
                every: 6,
            },
            local_rope: true,
            mlp_bias: BiasField::Absent,
            bidirectional: BidirectionalField::Read,
            score_fields: &[
                ScoreField::FinalLogitSoftcapping,
                ScoreField::QueryPreAttnScalar,
            ],
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            norm: NormKind::RmsPlusOne,
            qk_norm: QkNorm::PerHead,
            layout: LayerLayout::Sandwich,
            query_pre_attn_scalar: Some(256.0),
            embedding_scale: EmbeddingScale::SqrtHidden,
            ..Variant::LLAMA
        },
        names: SANDWICH_NAMES,
        gguf_tensors: SANDWICH_GGUF_TENSORS,
    }),
};
