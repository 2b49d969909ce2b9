//! The shapes of well-known checkpoints of every family, by their hub
//! names, for `headscope make-random-model --like`: the BERT-like encoders
//! written out field by field, the pre-norm families as the `config.json`
//! their config class writes (read back through the same reader).

use super::ModelConfig;
use crate::model::family::Family;

impl ModelConfig {
    /// The configuration of `bert-base-uncased`, for random models of that shape.
    pub fn bert_base_uncased() -> Self {
        ModelConfig {
            family: Family::Bert,
            vocab_size: 30522,
            hidden_size: 768,
            embedding_size: None,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            hidden_act: "gelu".into(),
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            pad_token_id: Some(0),
            position_embedding_type: Some("absolute".into()),
            num_hidden_groups: 1,
            inner_group_num: 1,
            sinusoidal_pos_embds: false,
            architectures: Some(vec!["BertForMaskedLM".into()]),
            pre_norm: None,
        }
    }

    /// The configuration of sentence-transformers' all-MiniLM-L6-v2.
    pub fn all_minilm_l6_v2() -> Self {
        ModelConfig {
            hidden_size: 384,
            num_hidden_layers: 6,
            intermediate_size: 1536,
            architectures: Some(vec!["BertModel".into()]),
            ..Self::bert_base_uncased()
        }
    }

    /// The shape of a well-known checkpoint, by its hub name (any case), for
    /// `headscope make-random-model --like`.
    pub fn like(name: &str) -> Option<Self> {
        let base = Self::bert_base_uncased();
        let roberta = |family: Family, vocab_size: usize| ModelConfig {
            family,
            vocab_size,
            max_position_embeddings: 514,
            type_vocab_size: 1,
            layer_norm_eps: 1e-5,
            pad_token_id: Some(1),
            architectures: None,
            ..base.clone()
        };
        let config = match name.to_ascii_lowercase().as_str() {
            "bert-base-uncased" | "bert-base" => base,
            "all-minilm-l6-v2" | "sentence-transformers/all-minilm-l6-v2" => {
                Self::all_minilm_l6_v2()
            }
            "roberta-base" | "facebookai/roberta-base" => roberta(Family::Roberta, 50265),
            "xlm-roberta-base" | "facebookai/xlm-roberta-base" => {
                roberta(Family::XlmRoberta, 250002)
            }
            "camembert-base" | "almanach/camembert-base" => roberta(Family::Camembert, 32005),
            "distilbert-base-uncased" | "distilbert/distilbert-base-uncased" => ModelConfig {
                family: Family::DistilBert,
                num_hidden_layers: 6,
                type_vocab_size: 0,
                position_embedding_type: None,
                architectures: None,
                ..base
            },
            "electra-base-discriminator" | "google/electra-base-discriminator" => ModelConfig {
                family: Family::Electra,
                embedding_size: Some(768),
                architectures: None,
                ..base
            },
            "electra-small-discriminator" | "google/electra-small-discriminator" => ModelConfig {
                family: Family::Electra,
                hidden_size: 256,
                embedding_size: Some(128),
                num_attention_heads: 4,
                intermediate_size: 1024,
                architectures: None,
                ..base
            },
            "albert-base-v2" | "albert/albert-base-v2" => ModelConfig {
                family: Family::Albert,
                vocab_size: 30000,
                embedding_size: Some(128),
                hidden_act: "gelu_new".into(),
                position_embedding_type: None,
                architectures: None,
                ..base
            },
            _ => return Self::like_pre_norm(name),
        };
        Some(config)
    }

    /// The names [`ModelConfig::like`] knows, for help and error messages.
    pub const KNOWN_SHAPES: [&'static str; 20] = [
        "bert-base-uncased",
        "all-minilm-l6-v2",
        "roberta-base",
        "xlm-roberta-base",
        "camembert-base",
        "distilbert-base-uncased",
        "electra-base-discriminator",
        "electra-small-discriminator",
        "albert-base-v2",
        "gpt2",
        "smollm2-135m",
        "qwen2-0.5b",
        "llama-3-8b",
        "pythia-160m",
        "gemma-2b",
        "gemma-2-2b",
        "gemma-3-1b",
        "qwen3-0.6b",
        "phi-3-mini",
        "olmo-2-1b",
    ];

    /// The shape of a well-known decoder checkpoint, by its hub name (any
    /// case), for `headscope make-random-model --like`: `gpt2` (124M),
    /// `smollm2-135m` (a Llama; also `llama`), `qwen2-0.5b` (also `qwen2`),
    /// `llama-3-8b` (Meta's Llama 3 8B: grouped-query attention with 8
    /// key/value heads, the vocabulary of 128,256, the `llama3` RoPE scaling
    /// of Meta's Llama 3.1 config, 8,192 positions); and one of each newer
    /// family, as its hub config has it: `pythia-160m`, `gemma-2b`,
    /// `gemma-2-2b`, `gemma-3-1b`, `qwen3-0.6b`, `phi-3-mini` (the 4k
    /// Instruct, window 2,047), `olmo-2-1b` (OLMo-2-0425-1B).
    fn like_pre_norm(name: &str) -> Option<Self> {
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
        Some(Self::from_json(text).expect("a valid shape"))
    }
}
