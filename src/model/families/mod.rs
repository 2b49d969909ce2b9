//! Every model family headscope runs, one file each: the file holds the
//! family's [`FamilySpec`] — its `model_type`, the name people know it by,
//! the names of its tensors, the defaults its config class gives the
//! fields a config leaves out, its GGUF architecture and, for the pre-norm
//! families, its [`Variant`] — and nothing else. The shared code reads the
//! spec: [`super::config`] reads a `config.json` by it, the encoder and the
//! decoder stack name the tensors by it, [`super::family::Family`] answers
//! from it.
//!
//! To add a family: write `<name>.rs` with its `SPEC` (start from the
//! closest family's file), declare it (`mod <name>;`) and add one line,
//! `Name => <name>,`, to the list below, among the encoders or the
//! decoders: the line makes the [`Family`] variant and its place in
//! [`SPECS`]. Where the family differs from every other in a way no field
//! here says, add the field (with the value the other families had) rather
//! than a `match` on the family.

mod albert;
mod bert;
mod camembert;
mod distilbert;
mod electra;
mod gemma;
mod gemma2;
mod gemma3_text;
mod gpt2;
mod gpt_neox;
mod llama;
mod mistral;
mod modernbert;
mod olmo2;
mod phi3;
mod qwen2;
mod qwen3;
mod roberta;
mod variant;
mod xlm_roberta;

use serde::{Deserialize, Serialize};
pub use variant::{
    EmbeddingScale, FeedForwardLayout, LayerLayout, NormKind, QkNorm, QkvLayout, Variant,
};

/// Declares [`Family`] (one variant each, in the list's order) and
/// [`SPECS`] (their modules' specs, in the same order).
macro_rules! families {
    ($($family:ident => $module:ident,)*) => {
        /// A `model_type` of `config.json` that headscope runs: an index
        /// into [`SPECS`] ([`Family::spec`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Family {
            $($family,)*
        }

        impl Family {
            /// Every family, in [`SPECS`]' order: the encoders, then the decoders.
            pub const ALL: [Family; SPECS.len()] = [$(Family::$family,)*];
        }

        /// Every family's spec, in [`Family`]'s order.
        pub const SPECS: &[&FamilySpec] = &[$(&$module::SPEC,)*];
    };
}

families! {
    // The bidirectional encoders.
    Bert => bert,
    Roberta => roberta,
    XlmRoberta => xlm_roberta,
    Camembert => camembert,
    DistilBert => distilbert,
    Electra => electra,
    Albert => albert,
    ModernBert => modernbert,
    // The causal decoders.
    Gpt2 => gpt2,
    Llama => llama,
    Mistral => mistral,
    Qwen2 => qwen2,
    GptNeoX => gpt_neox,
    Gemma => gemma,
    Gemma2 => gemma2,
    Gemma3Text => gemma3_text,
    Qwen3 => qwen3,
    Phi3 => phi3,
    Olmo2 => olmo2,
}

impl Family {
    /// What headscope knows of the family.
    pub const fn spec(self) -> &'static FamilySpec {
        SPECS[self as usize]
    }
}

/// What headscope knows of one family.
#[derive(Debug)]
pub struct FamilySpec {
    /// `config.json`'s `model_type`.
    pub model_type: &'static str,
    /// The name people know the family by.
    pub display_name: &'static str,
    /// The base model's class, for the `architectures` of a config we write.
    pub base_class: &'static str,
    /// How an `architectures` entry of the family begins (`RobertaForMaskedLM`),
    /// for old configs without `model_type`.
    pub architecture_stems: &'static [&'static str],
    /// What a checkpoint saved with a task head puts before the base
    /// model's tensor names (transformers' `base_model_prefix`).
    pub checkpoint_prefix: &'static str,
    /// The token embedding table, whose presence tells a checkpoint of the
    /// family from another.
    pub word_embeddings: &'static str,
    /// llama.cpp's `general.architecture` for the family's GGUF files;
    /// `None`: headscope opens none.
    pub gguf_architecture: Option<&'static str>,
    pub stack: Stack,
}

/// The stack that runs a family, with what it needs of the family.
#[derive(Debug)]
pub enum Stack {
    /// The post-norm BERT-like encoder ([`super::encoder`]).
    Encoder(EncoderSpec),
    /// The pre-norm stack ([`super::decoder`]): the decoders and ModernBERT.
    PreNorm(PreNormSpec),
}

/// A BERT-like encoder family (ANALYSIS.md §8): how its checkpoints name
/// the tensors, how its embeddings are built and whether its layers share
/// weights. Every such family's layer computes the same thing.
#[derive(Debug)]
pub struct EncoderSpec {
    /// How the config names its fields.
    pub fields: EncoderFields,
    /// ALBERT: the layers share weights, in `num_hidden_groups` groups of
    /// `inner_group_num` layers (config fields only such a family has).
    pub layer_groups: bool,
    /// The config class's `pad_token_id` where a config leaves it out.
    pub pad_token_id: u32,
    /// The config class's activation where a config leaves it out.
    pub hidden_act: &'static str,
    /// Whether position ids start after the padding index and skip padding
    /// tokens, as fairseq's RoBERTa numbers them.
    pub positions_after_padding: bool,
    pub embeddings: EmbeddingNames,
    /// The linear map from `embedding_size` to `hidden_size` of the
    /// families whose config sets `embedding_size` (ELECTRA, ALBERT).
    pub projection: Option<Projection>,
    pub layer: LayerNames,
    pub layer_prefix: LayerPrefix,
}

/// How an encoder family's config names its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderFields {
    /// BERT's names (`hidden_size`, `num_hidden_layers`, …).
    Bert,
    /// DistilBERT's own: `dim`, `n_layers`, `n_heads`, `hidden_dim`,
    /// `activation`, `sinusoidal_pos_embds`; no token types, LayerNorms
    /// always built with eps 1e-12.
    DistilBert,
}

/// Tensor names of the embeddings, below the checkpoint's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingNames {
    pub words: &'static str,
    pub positions: &'static str,
    /// `None`: the family has no token types (DistilBERT).
    pub token_types: Option<&'static str>,
    pub norm: &'static str,
}

/// The projection of narrower embeddings to the hidden size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    pub name: &'static str,
    /// Whether the checkpoint has it even when the sizes agree (ALBERT).
    pub always: bool,
}

/// Tensor names of one layer, below its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerNames {
    pub query: &'static str,
    pub key: &'static str,
    pub value: &'static str,
    /// The attention's output projection, whose input is every head's P·V.
    pub attention_output: &'static str,
    pub attention_norm: &'static str,
    pub intermediate: &'static str,
    pub output: &'static str,
    pub output_norm: &'static str,
}

/// Where an encoder layer's tensors sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerPrefix {
    /// `{0}.{index}`.
    Numbered(&'static str),
    /// ALBERT's groups: `{groups}.{group}.{layers}.{inner}`, the distinct
    /// layers counted group by group.
    Grouped {
        groups: &'static str,
        layers: &'static str,
    },
}

pub const BERT_EMBEDDINGS: EmbeddingNames = EmbeddingNames {
    words: "embeddings.word_embeddings",
    positions: "embeddings.position_embeddings",
    token_types: Some("embeddings.token_type_embeddings"),
    norm: "embeddings.LayerNorm",
};

pub const BERT_LAYER: LayerNames = LayerNames {
    query: "attention.self.query",
    key: "attention.self.key",
    value: "attention.self.value",
    attention_output: "attention.output.dense",
    attention_norm: "attention.output.LayerNorm",
    intermediate: "intermediate.dense",
    output: "output.dense",
    output_norm: "output.LayerNorm",
};

/// BERT's encoder, which the other BERT-like families change a little.
pub const BERT_ENCODER: EncoderSpec = EncoderSpec {
    fields: EncoderFields::Bert,
    layer_groups: false,
    pad_token_id: 0,
    hidden_act: "gelu",
    positions_after_padding: false,
    embeddings: BERT_EMBEDDINGS,
    projection: None,
    layer: BERT_LAYER,
    layer_prefix: LayerPrefix::Numbered("encoder.layer"),
};

/// A family run on the pre-norm stack.
#[derive(Debug)]
pub struct PreNormSpec {
    /// Whether a token attends only to itself and the tokens before it
    /// (ANALYSIS.md §8): every decoder; not ModernBERT.
    pub causal: bool,
    /// How the config is read.
    pub fields: PreNormFields,
    /// The family's layer; the config may change what its reader reads.
    pub variant: Variant,
    pub names: PreNormNames,
    /// How a GGUF file of the family names a layer's tensors.
    pub gguf_tensors: GgufTensors,
}

/// A GGUF file's names of a layer's tensors (after `blk.N.`) and the
/// Hugging Face names they are (after `layers.N.`): the family's own,
/// looked up first, then llama.cpp's Llama names ([`LLAMA_GGUF_TENSORS`])
/// where `then_llama`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgufTensors {
    pub own: &'static [(&'static str, &'static str)],
    pub then_llama: bool,
}

impl GgufTensors {
    /// llama.cpp's Llama names and no others.
    pub const LLAMA: Self = Self {
        own: &[],
        then_llama: true,
    };

    /// The Hugging Face name of the layer tensor `stem` (`attn_q`), or
    /// `None` for one the study does not read.
    pub fn hf_name(&self, stem: &str) -> Option<&'static str> {
        let llama: &[(&str, &str)] = if self.then_llama {
            &LLAMA_GGUF_TENSORS
        } else {
            &[]
        };
        self.own
            .iter()
            .chain(llama)
            .find(|(gguf, _)| *gguf == stem)
            .map(|(_, hf)| *hf)
    }
}

/// llama.cpp's names (gguf-py's `TensorNameMap`) for Llama, Mistral,
/// Qwen2 and 3, Gemma and Phi-3 (whose `attn_qkv` is its fused `qkv_proj`).
pub const LLAMA_GGUF_TENSORS: [(&str, &str); 12] = [
    ("attn_norm", "input_layernorm"),
    ("attn_q", "self_attn.q_proj"),
    ("attn_k", "self_attn.k_proj"),
    ("attn_v", "self_attn.v_proj"),
    ("attn_qkv", "self_attn.qkv_proj"),
    ("attn_q_norm", "self_attn.q_norm"),
    ("attn_k_norm", "self_attn.k_norm"),
    ("attn_output", "self_attn.o_proj"),
    ("ffn_norm", "post_attention_layernorm"),
    ("ffn_gate", "mlp.gate_proj"),
    ("ffn_up", "mlp.up_proj"),
    ("ffn_down", "mlp.down_proj"),
];

/// Tensor names of a pre-norm family: a layer's below `layers.N.` (GPT-2:
/// `h.N.`), the final norm below the base model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreNormNames {
    /// The attention's prefix, its fused q/k/v projection ("": `q_proj`,
    /// `k_proj`, `v_proj`), its output projection.
    pub attention: (&'static str, &'static str, &'static str),
    /// The feed-forward's projections below `mlp`: [up, down] (plain),
    /// [gate, up, down] (gated: gate and up fused in the first for the
    /// fused layout, whose second name is then "").
    pub feed_forward: [&'static str; 3],
    /// The norms before and after the attention and the feed-forward,
    /// `None` where the layout has none.
    pub norms: [Option<&'static str>; 4],
    /// Whether the first layer has its norm before the attention
    /// (ModernBERT's reads the normalised embeddings as they are).
    pub first_attention_norm: bool,
    /// The final norm, after the last layer.
    pub final_norm: &'static str,
    /// The language-model head's matrix (beside the base model in a
    /// checkpoint with the head); `None` for ModernBERT, which predicts no
    /// next token.
    pub lm_head: Option<&'static str>,
}

/// Llama's tensor names, which most decoders keep.
pub const LLAMA_NAMES: PreNormNames = PreNormNames {
    attention: ("self_attn", "", "o_proj"),
    feed_forward: ["gate_proj", "up_proj", "down_proj"],
    norms: [
        Some("input_layernorm"),
        None,
        Some("post_attention_layernorm"),
        None,
    ],
    first_attention_norm: true,
    final_norm: "norm",
    lm_head: Some("lm_head"),
};

/// Gemma 2's and 3's names: four norms, a sandwich around the attention
/// and the feed-forward.
pub const SANDWICH_NAMES: PreNormNames = PreNormNames {
    norms: [
        Some("input_layernorm"),
        Some("post_attention_layernorm"),
        Some("pre_feedforward_layernorm"),
        Some("post_feedforward_layernorm"),
    ],
    ..LLAMA_NAMES
};

/// Gemma 2's and 3's GGUF names of the four norms of the sandwich.
pub const SANDWICH_GGUF_TENSORS: GgufTensors = GgufTensors {
    own: &[
        ("attn_norm", "input_layernorm"),
        ("post_attention_norm", "post_attention_layernorm"),
        ("ffn_norm", "pre_feedforward_layernorm"),
        ("post_ffw_norm", "post_feedforward_layernorm"),
    ],
    then_llama: true,
};

/// How a pre-norm family's config is read: by a reader of its own, or by
/// the Llama family's reader with the family's defaults.
#[derive(Debug)]
pub enum PreNormFields {
    /// GPT-2's `n_embd`, `n_layer`, `n_head`, `n_positions`, learned positions.
    Gpt2,
    /// GPT-NeoX's LayerNorms, Pythia's older rotary names.
    GptNeoX,
    /// ModernBERT's global and local layers, each with its RoPE theta.
    ModernBert,
    /// The Llama family's names, these defaults.
    LlamaLike(LlamaLikeFields),
}

/// What the Llama family's config reader needs of a family: its config
/// class's defaults and the fields it has.
#[derive(Debug)]
pub struct LlamaLikeFields {
    /// `head_dim` where a config leaves it out; `None`: hidden / heads.
    pub head_dim: Option<usize>,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    pub activation: ActivationField,
    pub sliding_windows: SlidingWindows,
    /// Gemma 3: two rotary embeddings, the global layers' and the local ones'.
    pub local_rope: bool,
    /// Whether a share of each head may rotate (`partial_rotary_factor`).
    pub partial_rotary: bool,
    /// `attention_bias`: the q/k/v and output projections' biases.
    pub attention_bias: BiasField,
    /// Qwen2: q/k/v biases whatever `attention_bias` says.
    pub qkv_bias_always: bool,
    /// `mlp_bias`: the feed-forward's biases.
    pub mlp_bias: BiasField,
    pub bidirectional: BidirectionalField,
    /// The score fields of [`Variant`] the config may set, the variant's
    /// value their default (Gemma 2 and 3).
    pub score_fields: &'static [ScoreField],
}

/// Where the activation is named, and its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivationField {
    /// `hidden_act`, or Gemma 2's and 3's `hidden_activation`.
    pub key: &'static str,
    pub default: &'static str,
    /// Gemma's official configs say "gelu" meaning the tanh approximation
    /// (the default); transformers' GemmaConfig swaps it.
    pub gelu_means_default: bool,
}

/// Which layers slide, and how wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlidingWindows {
    /// No layer slides.
    None,
    /// `sliding_window` on every layer, with this default (Mistral 4096;
    /// Phi-3 none).
    EveryLayer { default: Option<usize> },
    /// Qwen2 and 3: `layer_types` when written, else the layers from
    /// `max_window_layers` (default 28) on, when `use_sliding_window`;
    /// window default 4096.
    FromMaxWindowLayers,
    /// Gemma 2 and 3: the layers `layer_types` calls `sliding_attention`,
    /// else all but every `every`-th (or as `pattern_field` says);
    /// window default 4096.
    Pattern {
        pattern_field: Option<&'static str>,
        every: usize,
    },
}

/// A config field the family's config class has or lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BiasField {
    /// The class has it: read, written back.
    Field,
    /// Read as Llama's class reads it, not written back: the family's
    /// class has no such field (Mistral, Qwen2).
    ReadOnly,
    /// Not applied: no such biases.
    Absent,
}

/// Gemma's `use_bidirectional_attention` (EmbeddingGemma).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BidirectionalField {
    /// Not read.
    Absent,
    /// Read and refused when true: the family's eager attention would
    /// stay causal (Gemma, Gemma 2).
    Refused,
    /// Read and applied (Gemma 3, which builds a bidirectional mask).
    Read,
}

/// A field of [`Variant`]'s scores a config may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreField {
    AttnLogitSoftcapping,
    FinalLogitSoftcapping,
    QueryPreAttnScalar,
}

/// The Llama family's reader as Llama's config class defaults it.
pub const LLAMA_FIELDS: LlamaLikeFields = LlamaLikeFields {
    head_dim: None,
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-6,
    activation: ActivationField {
        key: "hidden_act",
        default: "silu",
        gelu_means_default: false,
    },
    sliding_windows: SlidingWindows::None,
    local_rope: false,
    partial_rotary: false,
    attention_bias: BiasField::Field,
    qkv_bias_always: false,
    mlp_bias: BiasField::Field,
    bidirectional: BidirectionalField::Absent,
    score_fields: &[],
};

impl FamilySpec {
    pub const fn encoder(&self) -> Option<&EncoderSpec> {
        match &self.stack {
            Stack::Encoder(spec) => Some(spec),
            Stack::PreNorm(_) => None,
        }
    }

    pub const fn pre_norm(&self) -> Option<&PreNormSpec> {
        match &self.stack {
            Stack::PreNorm(spec) => Some(spec),
            Stack::Encoder(_) => None,
        }
    }

    /// Whether a token attends only to the tokens up to itself.
    pub const fn is_causal(&self) -> bool {
        match &self.stack {
            Stack::PreNorm(spec) => spec.causal,
            Stack::Encoder(_) => false,
        }
    }
}
