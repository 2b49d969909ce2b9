//! Gemma 2: Gemma's norms in a sandwich around the attention and the
//! feed-forward, every other layer sliding (window 4096), soft-capped
//! scores and logits, scores scaled by `query_pre_attn_scalar`^−½.

use super::{
    ActivationField, BiasField, BidirectionalField, EmbeddingScale, FamilySpec, LayerLayout,
    LlamaLikeFields, NormKind, PreNormFields, PreNormSpec, ScoreField, SlidingWindows, Stack,
    Variant, LLAMA_FIELDS, SANDWICH_GGUF_TENSORS, SANDWICH_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "gemma2",
    display_name: "Gemma 2",
    base_class: "Gemma2Model",
    architecture_stems: &["Gemma2"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("gemma2"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            head_dim: Some(256),
            max_position_embeddings: 8192,
            activation: ActivationField {
                key: "hidden_activation",
                default: "gelu_pytorch_tanh",
                gelu_means_default: false,
            },
            sliding_windows: SlidingWindows::Pattern {
                pattern_field: None,
                every: 2,
            },
            mlp_bias: BiasField::Absent,
            bidirectional: BidirectionalField::Refused,
            score_fields: &[
                ScoreField::AttnLogitSoftcapping,
                ScoreField::FinalLogitSoftcapping,
                ScoreField::QueryPreAttnScalar,
            ],
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            norm: NormKind::RmsPlusOne,
            layout: LayerLayout::Sandwich,
            attn_logit_softcapping: Some(50.0),
            final_logit_softcapping: Some(30.0),
            query_pre_attn_scalar: Some(256.0),
            embedding_scale: EmbeddingScale::SqrtHidden,
            ..Variant::LLAMA
        },
        names: SANDWICH_NAMES,
        gguf_tensors: SANDWICH_GGUF_TENSORS,
    }),
};
