//! OLMo 2: norms after the attention and the feed-forward (not before),
//! queries and keys RMS-normalised across all heads together.

use super::{
    BiasField, FamilySpec, GgufTensors, LayerLayout, LlamaLikeFields, PreNormFields, PreNormNames,
    PreNormSpec, QkNorm, Stack, Variant, LLAMA_FIELDS, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "olmo2",
    display_name: "OLMo 2",
    base_class: "Olmo2Model",
    architecture_stems: &["Olmo2"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("olmo2"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LlamaLikeFields {
            rms_norm_eps: 1e-5,
            mlp_bias: BiasField::Absent,
            ..LLAMA_FIELDS
        }),
        variant: Variant {
            qk_norm: QkNorm::AcrossHeads,
            layout: LayerLayout::PostNorm,
            ..Variant::LLAMA
        },
        names: PreNormNames {
            norms: [
                None,
                Some("post_attention_layernorm"),
                None,
                Some("post_feedforward_layernorm"),
            ],
            ..LLAMA_NAMES
        },
        gguf_tensors: GgufTensors {
            // Norms after the attention and the feed-forward only.
            own: &[
                ("post_attention_norm", "post_attention_layernorm"),
                ("post_ffw_norm", "post_feedforward_layernorm"),
            ],
            then_llama: true,
        },
    }),
};
