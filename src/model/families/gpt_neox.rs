//! GPT-NeoX (Pythia): LayerNorms with biases, the fused `query_key_value`
//! laid out head by head, rotary on a quarter of each head by default, the
//! parallel residual unless `use_parallel_residual` is false, biased
//! projections; its own config reader (Pythia's older rotary names).

use super::{
    FamilySpec, FeedForwardLayout, GgufTensors, LayerLayout, NormKind, PreNormFields, PreNormNames,
    PreNormSpec, QkvLayout, Stack, Variant, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "gpt_neox",
    display_name: "GPT-NeoX",
    base_class: "GPTNeoXModel",
    architecture_stems: &["GPTNeoX"],
    checkpoint_prefix: "gpt_neox.",
    word_embeddings: "embed_in",
    gguf_architecture: Some("gptneox"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::GptNeoX,
        variant: Variant {
            norm: NormKind::LayerNorm,
            layout: LayerLayout::ParallelResidual,
            qkv_layout: QkvLayout::InterleavedPerHead,
            feed_forward: FeedForwardLayout::Plain,
            // Pythia's default share (`rotary_pct`).
            partial_rotary_factor: 0.25,
            ..Variant::LLAMA
        },
        names: PreNormNames {
            attention: ("attention", "query_key_value", "dense"),
            feed_forward: ["dense_h_to_4h", "dense_4h_to_h", ""],
            final_norm: "final_layer_norm",
            lm_head: Some("embed_out"),
            ..LLAMA_NAMES
        },
        gguf_tensors: GgufTensors {
            own: &[
                ("attn_norm", "input_layernorm"),
                ("attn_qkv", "attention.query_key_value"),
                ("attn_output", "attention.dense"),
                ("ffn_norm", "post_attention_layernorm"),
                ("ffn_up", "mlp.dense_h_to_4h"),
                ("ffn_down", "mlp.dense_4h_to_h"),
            ],
            then_llama: false,
        },
    }),
};
