//! Every tensor a decoder checkpoint holds for the loader ([`super::blocks`]
//! reads the same names), for random models of a decoder family
//! ([`crate::model::random`]): GPT-2's `wte`, `wpe`, `h.N.*` with Conv1D
//! weights stored inputs × outputs; the Llama family's `embed_tokens`,
//! `layers.N.*`, with grouped-query key/value projections and the biases
//! the config asks for; ModernBERT's `embeddings.*` and `layers.N.attn.Wqkv`,
//! `mlp.Wi` (input and gate side by side), its first layer without
//! `attn_norm`. The final norm and the language-model head, which
//! the study does not read, are written too, as a real checkpoint has them.
//! And the shapes of a few well-known decoders, for `--like`.

use super::config::DecoderShape;
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
    add("embed_tokens.weight".into(), vec![v, h]);
    for layer in 0..config.num_hidden_layers {
        let p = format!("layers.{layer}");
        for norm in ["input_layernorm", "post_attention_layernorm"] {
            add(format!("{p}.{norm}.weight"), vec![h]);
        }
        for (name, inputs, outputs, bias) in [
            ("self_attn.q_proj", h, q, shape.qkv_bias),
            ("self_attn.k_proj", h, kv, shape.qkv_bias),
            ("self_attn.v_proj", h, kv, shape.qkv_bias),
            ("self_attn.o_proj", q, h, shape.output_bias),
            ("mlp.gate_proj", h, i, shape.mlp_bias),
            ("mlp.up_proj", h, i, shape.mlp_bias),
            ("mlp.down_proj", i, h, shape.mlp_bias),
        ] {
            add(format!("{p}.{name}.weight"), vec![outputs, inputs]);
            if bias {
                add(format!("{p}.{name}.bias"), vec![outputs]);
            }
        }
    }
    add("norm.weight".into(), vec![h]);
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
    ]
    .iter()
    .any(|end| name.ends_with(end))
}

/// The shape of a well-known decoder checkpoint, by its hub name (any
/// case), for `headscope make-random-model --like`: `gpt2` (124M),
/// `smollm2-135m` (a Llama; also `llama`), `qwen2-0.5b` (also `qwen2`),
/// `llama-3-8b` (Meta's Llama 3 8B: grouped-query attention with 8
/// key/value heads, the vocabulary of 128,256, the `llama3` RoPE scaling
/// of Meta's Llama 3.1 config, 8,192 positions).
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
        _ => return None,
    };
    Some(EncoderConfig::from_json(text).expect("a valid shape"))
}
