//! Llama (and SmolLM, TinyLlama, …): the plain pre-norm layer every other
//! decoder here changes a little: RMSNorm, rotary positions, grouped-query
//! attention, a SwiGLU feed-forward.

use super::{
    FamilySpec, GgufTensors, PreNormFields, PreNormSpec, Stack, Variant, LLAMA_FIELDS, LLAMA_NAMES,
};

pub const SPEC: FamilySpec = FamilySpec {
    model_type: "llama",
    display_name: "Llama",
    base_class: "LlamaModel",
    architecture_stems: &["Llama"],
    checkpoint_prefix: "model.",
    word_embeddings: "embed_tokens",
    gguf_architecture: Some("llama"),
    stack: Stack::PreNorm(PreNormSpec {
        causal: true,
        fields: PreNormFields::LlamaLike(LLAMA_FIELDS),
        variant: Variant::LLAMA,
        names: LLAMA_NAMES,
        gguf_tensors: GgufTensors::LLAMA,
    }),
};
