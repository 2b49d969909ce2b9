//! ModernBERT: a bidirectional encoder on the pre-norm stack; global and
//! local (sliding-window) layers, each kind with its own RoPE theta;
//! LayerNorms without bias unless `norm_bias`; fused `Wqkv` and `Wi`.

use super::{
    FamilySpec, FeedForwardLayout, GgufTensors, NormKind, PreNormFields, PreNormNames, PreNormSpec,
    QkvLayout, Stack, Variant,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "modernbert",
    display_name: "ModernBERT",
    base_class: "ModernBertModel",
    architecture_stems: &["ModernBert"],
    checkpoint_prefix: "model.",
    word_embeddings: "embeddings.tok_embeddings",
    gguf_architecture: None,
    stack: Stack::PreNorm(PreNormSpec {
        causal: false,
        fields: PreNormFields::ModernBert,
        variant: Variant {
            norm: NormKind::LayerNorm,
            qkv_layout: QkvLayout::Concatenated,
            feed_forward: FeedForwardLayout::FusedGated,
            ..Variant::LLAMA
        },
        names: PreNormNames {
            attention: ("attn", "Wqkv", "Wo"),
            feed_forward: ["Wi", "", "Wo"],
            norms: [Some("attn_norm"), None, Some("mlp_norm"), None],
            // The first layer reads the normalised embeddings as they are.
            first_attention_norm: false,
            final_norm: "final_norm",
            lm_head: None,
        },
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
