//! Every tensor a decoder checkpoint holds for the loader ([`super::blocks`]
//! reads the same names), for random models of a decoder family
//! ([`crate::model::random`]): GPT-2's `wte`, `wpe`, `h.N.*` with Conv1D
//! weights stored inputs × outputs; the Llama family's `embed_tokens`,
//! `layers.N.*`, with grouped-query key/value projections and the biases
//! the config asks for; ModernBERT's `embeddings.*` and `layers.N.attn.Wqkv`,
//! `mlp.Wi` (input and gate side by side), its first layer without
//! `attn_norm`; the newer families' own (GPT-NeoX's `embed_in`,
//! `attention.query_key_value`, `mlp.dense_h_to_4h`, `final_layer_norm`;
//! Phi-3's `qkv_proj` and `gate_up_proj`; the q/k norms; Gemma's and
//! OLMo's norms after the sublayers), named as [`super::blocks`] reads
//! them. The final norm and the language-model head, which
//! the study does not read, are written too, as a real checkpoint has them.
//! And the shapes of a few well-known decoders, for `--like`.

use super::blocks::{attention_names, feed_forward_names, norm_names};
use super::config::{DecoderShape, FeedForwardLayout, QkNorm, QkvLayout};
use crate::model::config::EncoderConfig;
use crate::model::family::Family;

/// (name, shape) of every tensor of a decoder of this shape.
pub fn tensor_shapes(config: &EncoderConfig, shape: &DecoderShape) -> Vec<(String, Vec<usize>)> {
    let (h, i, v) = (
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
    );
    let mut shapes = Vec::new();
    let mut add = |name: String, dims: Vec<usize>| shapes.push((name, dims));
    if config.family == Family::Gpt2 {
        add("wte.weight".into(), vec![v, h]);
        add("wpe.weight".into(), vec![config.max_position_embeddings, h]);
        for layer in 0..config.num_hidden_layers {
            let p = format!("h.{layer}");
            for norm in ["ln_1", "ln_2"] {
                add(format!("{p}.{norm}.weight"), vec![h]);
                add(format!("{p}.{norm}.bias"), vec![h]);
            }
            for (name, inputs, outputs) in [
                ("attn.c_attn", h, 3 * h),
                ("attn.c_proj", h, h),
                ("mlp.c_fc", h, i),
                ("mlp.c_proj", i, h),
            ] {
                add(format!("{p}.{name}.weight"), vec![inputs, outputs]);
                add(format!("{p}.{name}.bias"), vec![outputs]);
            }
        }
        add("ln_f.weight".into(), vec![h]);
        add("ln_f.bias".into(), vec![h]);
        return shapes;
    }
    if config.family == Family::ModernBert {
        add("embeddings.tok_embeddings.weight".into(), vec![v, h]);
        let norm = |name: String, add: &mut dyn FnMut(String, Vec<usize>)| {
            add(format!("{name}.weight"), vec![h]);
            if shape.norm_bias {
                add(format!("{name}.bias"), vec![h]);
            }
        };
        norm("embeddings.norm".into(), &mut add);
        for layer in 0..config.num_hidden_layers {
            let p = format!("layers.{layer}");
            if layer > 0 {
                norm(format!("{p}.attn_norm"), &mut add);
            }
            norm(format!("{p}.mlp_norm"), &mut add);
            for (name, inputs, outputs, bias) in [
                ("attn.Wqkv", h, 3 * h, shape.qkv_bias),
                ("attn.Wo", h, h, shape.output_bias),
                ("mlp.Wi", h, 2 * i, shape.mlp_bias),
                ("mlp.Wo", i, h, shape.mlp_bias),
            ] {
                add(format!("{p}.{name}.weight"), vec![outputs, inputs]);
                if bias {
                    add(format!("{p}.{name}.bias"), vec![outputs]);
                }
            }
        }
        norm("final_norm".into(), &mut add);
        return shapes;
    }
    let (q, kv) = (
        config.num_attention_heads * shape.head_dim,
        shape.num_key_value_heads * shape.head_dim,
    );
    let variant = &shape.variant;
    let norm = |name: String, size: usize, add: &mut dyn FnMut(String, Vec<usize>)| {
        add(format!("{name}.weight"), vec![size]);
        if shape.norm_bias {
            add(format!("{name}.bias"), vec![size]);
        }
    };
    add(
        format!("{}.weight", config.family.word_embeddings()),
        vec![v, h],
    );
    for layer in 0..config.num_hidden_layers {
        let p = format!("layers.{layer}");
        for name in norm_names(config.family, variant.layout, layer)
            .into_iter()
            .flatten()
        {
            norm(format!("{p}.{name}"), h, &mut add);
        }
        let (attention, fused, output) = attention_names(config.family);
        let mut projections = match variant.qkv_layout {
            QkvLayout::Separate => vec![
                ("q_proj", h, q, shape.qkv_bias),
                ("k_proj", h, kv, shape.qkv_bias),
                ("v_proj", h, kv, shape.qkv_bias),
            ],
            _ => vec![(fused, h, q + 2 * kv, shape.qkv_bias)],
        };
        projections.push((output, q, h, shape.output_bias));
        for (name, inputs, outputs, bias) in projections {
            add(
                format!("{p}.{attention}.{name}.weight"),
                vec![outputs, inputs],
            );
            if bias {
                add(format!("{p}.{attention}.{name}.bias"), vec![outputs]);
            }
        }
        let qk_sizes = match variant.qk_norm {
            QkNorm::None => None,
            QkNorm::PerHead => Some((shape.head_dim, shape.head_dim)),
            QkNorm::AcrossHeads => Some((q, kv)),
        };
        if let Some((query, key)) = qk_sizes {
            norm(format!("{p}.{attention}.q_norm"), query, &mut add);
            norm(format!("{p}.{attention}.k_norm"), key, &mut add);
        }
        let [first, second, third] = feed_forward_names(config.family, variant.feed_forward);
        let feed_forward = match variant.feed_forward {
            FeedForwardLayout::Plain => vec![(first, h, i), (second, i, h)],
            FeedForwardLayout::Gated => vec![(first, h, i), (second, h, i), (third, i, h)],
            FeedForwardLayout::FusedGated => vec![(first, h, 2 * i), (third, i, h)],
        };
        for (name, inputs, outputs) in feed_forward {
            add(format!("{p}.mlp.{name}.weight"), vec![outputs, inputs]);
            if shape.mlp_bias {
                add(format!("{p}.mlp.{name}.bias"), vec![outputs]);
            }
        }
    }
    let final_norm = if config.family == Family::GptNeoX {
        "final_layer_norm"
    } else {
        "norm"
    };
    norm(final_norm.into(), h, &mut add);
    shapes
}

/// Whether a tensor of [`tensor_shapes`] is a norm's weight (1 at
/// initialisation).
pub fn is_norm_weight(name: &str) -> bool {
    [
        "ln_1.weight",
        "ln_2.weight",
        "ln_f.weight",
        "layernorm.weight",
        "norm.weight",
        "layer_norm.weight",
    ]
    .iter()
    .any(|end| name.ends_with(end))
}

/// The shape of a well-known decoder checkpoint, by its hub name (any
/// case), for `headscope make-random-model --like`: `gpt2` (124M),
/// `smollm2-135m` (a Llama; also `llama`), `qwen2-0.5b` (also `qwen2`),
/// `llama-3-8b` (Meta's Llama 3 8B: grouped-query attention with 8
/// key/value heads, the vocabulary of 128,256, the `llama3` RoPE scaling
/// of Meta's Llama 3.1 config, 8,192 positions); and one of each newer
/// family, as its hub config has it: `pythia-160m`, `gemma-2b`,
/// `gemma-2-2b`, `gemma-3-1b`, `qwen3-0.6b`, `phi-3-mini` (the 4k
/// Instruct, window 2,047), `olmo-2-1b` (OLMo-2-0425-1B).
pub(in crate::model) fn like(name: &str) -> Option<EncoderConfig> {
    let text = match name.to_ascii_lowercase().as_str() {
        "gpt2" | "openai-community/gpt2" => {
            r#"{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 50257,
                "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024}"#
        }
        "llama" | "smollm2-135m" | "huggingfacetb/smollm2-135m" => {
            r#"{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 49152,
                "hidden_size": 576, "num_hidden_layers": 30, "num_attention_heads": 9,
                "num_key_value_heads": 3, "head_dim": 64, "intermediate_size": 1536,
                "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                "rope_parameters": {"rope_type": "default", "rope_theta": 100000.0}}"#
        }
        "qwen2" | "qwen2-0.5b" | "qwen/qwen2-0.5b" => {
            r#"{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936,
                "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
                "num_key_value_heads": 2, "intermediate_size": 4864,
                "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
                "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}"#
        }
        "llama-3-8b" | "meta-llama/meta-llama-3-8b" => {
            r#"{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 128256,
                "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336,
                "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192}}"#
        }
        "pythia-160m" | "eleutherai/pythia-160m" => {
            r#"{"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": 50304,
                "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 2048,
                "layer_norm_eps": 1e-5, "rotary_pct": 0.25, "rotary_emb_base": 10000,
                "use_parallel_residual": true}"#
        }
        "gemma-2b" | "google/gemma-2b" => {
            r#"{"model_type": "gemma", "architectures": ["GemmaForCausalLM"], "vocab_size": 256000,
                "hidden_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 8,
                "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 16384,
                "hidden_act": "gelu", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
                "rope_theta": 10000.0}"#
        }
        "gemma-2-2b" | "google/gemma-2-2b" => {
            r#"{"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "vocab_size": 256000,
                "hidden_size": 2304, "num_hidden_layers": 26, "num_attention_heads": 8,
                "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216,
                "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
                "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "query_pre_attn_scalar": 256,
                "sliding_window": 4096, "attn_logit_softcapping": 50.0,
                "final_logit_softcapping": 30.0}"#
        }
        "gemma-3-1b" | "google/gemma-3-1b-pt" | "google/gemma-3-1b-it" => {
            r#"{"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"],
                "vocab_size": 262144, "hidden_size": 1152, "num_hidden_layers": 26,
                "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                "intermediate_size": 6912, "hidden_activation": "gelu_pytorch_tanh",
                "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 256,
                "sliding_window": 512, "sliding_window_pattern": 6}"#
        }
        "qwen3-0.6b" | "qwen/qwen3-0.6b" => {
            r#"{"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936,
                "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
                "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                "use_sliding_window": false, "sliding_window": null, "max_window_layers": 28}"#
        }
        "phi-3-mini" | "microsoft/phi-3-mini-4k-instruct" => {
            r#"{"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "vocab_size": 32064,
                "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 32, "intermediate_size": 8192, "hidden_act": "silu",
                "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
                "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": null,
                "sliding_window": 2047}"#
        }
        "olmo-2-1b" | "allenai/olmo-2-0425-1b" => {
            r#"{"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "vocab_size": 100352,
                "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
                "num_key_value_heads": 16, "intermediate_size": 8192, "hidden_act": "silu",
                "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 500000.0}"#
        }
        _ => return None,
    };
    Some(EncoderConfig::from_json(text).expect("a valid shape"))
}
