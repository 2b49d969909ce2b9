//! GPT-2: learned positions, LayerNorms with biases, the fused `c_attn`
//! and a plain feed-forward stored as Conv1D (inputs × outputs); its own
//! config names (`n_embd`, `n_layer`, `n_head`, `n_positions`).

use super::{
    FamilySpec, FeedForwardLayout, GgufTensors, NormKind, PreNormFields, PreNormNames, PreNormSpec,
    QkvLayout, Stack, Variant,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "gpt2",
    display_name: "GPT-2",
    base_class: "GPT2Model",
    architecture_stems: &["GPT2"],
    checkpoint_prefix: "transformer.",
    word_embeddings: "wte",
    gguf_architecture: None,
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::Gpt2,
        variant: Variant {
            norm: NormKind::LayerNorm,
            qkv_layout: QkvLayout::Concatenated,
            feed_forward: FeedForwardLayout::Plain,
            ..Variant::LLAMA
        },
        names: PreNormNames {
            attention: ("attn", "c_attn", "c_proj"),
            feed_forward: ["c_fc", "c_proj", ""],
            norms: [Some("ln_1"), None, Some("ln_2"), None],
            first_attention_norm: true,
            final_norm: "ln_f",
            lm_head: Some("lm_head"),
        },
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
