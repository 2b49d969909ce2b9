//! What sets a pre-norm family's layer apart from Llama's, as data the
//! decoder stack reads ([`Variant`]): the norm's kind, q/k norms, where the
//! norms sit and how the residual sums, fused weight layouts, partial
//! rotary, soft-capped and rescaled scores, scaled embeddings. Each family's
//! spec holds its [`Variant`]; a config may change the parts its family
//! reads from it (GPT-NeoX's `use_parallel_residual`, Gemma's soft-caps).

/// The few places where the decoder families differ (ANALYSIS.md §8), as
/// data the stack reads: [`Variant::LLAMA`] is the plain pre-norm Llama
/// layer, every other family changes a few of these.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub norm: NormKind,
    /// RMSNorm of the queries and keys before rotary (Qwen3, Gemma 3, OLMo 2).
    pub qk_norm: QkNorm,
    pub layout: LayerLayout,
    pub qkv_layout: QkvLayout,
    pub feed_forward: FeedForwardLayout,
    /// The share of each head's dimensions that rotate: its first
    /// ⌊head_dim · factor⌋ (GPT-NeoX 0.25, Phi-3's Phi-4-mini 0.75).
    pub partial_rotary_factor: f64,
    /// Gemma 2: scores become cap · tanh(scores / cap), before the mask.
    pub attn_logit_softcapping: Option<f64>,
    /// Gemma 2 (and Gemma 3 where its config sets it): the LM head's
    /// logits become cap · tanh(logits / cap).
    pub final_logit_softcapping: Option<f64>,
    /// Gemma 2 and 3 scale the scores by `query_pre_attn_scalar`^−½
    /// instead of head_dim^−½.
    pub query_pre_attn_scalar: Option<f64>,
    pub embedding_scale: EmbeddingScale,
    /// Gemma 3's `use_bidirectional_attention` (EmbeddingGemma): every
    /// query sees every key, and a sliding-window layer's query the keys
    /// at most ⌊`sliding_window` / 2⌋ away either side (ANALYSIS.md §8).
    pub bidirectional: bool,
}

/// What the token embeddings are multiplied by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddingScale {
    None,
    /// Gemma: √hidden, rounded to the embeddings' precision (float32) before
    /// the product, as transformers casts its normalizer.
    SqrtHidden,
}

impl EmbeddingScale {
    pub fn factor(self, hidden: usize) -> Option<f32> {
        match self {
            Self::None => None,
            Self::SqrtHidden => Some((hidden as f64).sqrt() as f32),
        }
    }
}

impl Variant {
    /// Llama's layer: RMSNorm before attention and before the SwiGLU
    /// feed-forward, separate q/k/v projections, every dimension rotated.
    pub const LLAMA: Self = Self {
        norm: NormKind::Rms,
        qk_norm: QkNorm::None,
        layout: LayerLayout::PreNorm,
        qkv_layout: QkvLayout::Separate,
        feed_forward: FeedForwardLayout::Gated,
        partial_rotary_factor: 1.0,
        attn_logit_softcapping: None,
        final_logit_softcapping: None,
        query_pre_attn_scalar: None,
        embedding_scale: EmbeddingScale::None,
        bidirectional: false,
    };
}

/// How a norm normalises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKind {
    /// GPT-2, GPT-NeoX, ModernBERT (with a bias where the shape says).
    LayerNorm,
    /// x / rms(x) · w.
    Rms,
    /// Gemma: x / rms(x) · (1 + w), in float32.
    RmsPlusOne,
}

/// Where the queries and keys are RMS-normalised (with the model's
/// [`NormKind`]), after their projection and before rotary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkNorm {
    None,
    /// Over each head's `head_dim` values (Qwen3, Gemma 3).
    PerHead,
    /// Over all heads together, before the split into heads (OLMo 2).
    AcrossHeads,
}

/// Where a layer's norms sit and how its residual adds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerLayout {
    /// x + attn(norm(x)), then x + ff(norm(x)).
    PreNorm,
    /// GPT-NeoX's `use_parallel_residual`: x + attn(norm₁(x)) + ff(norm₂(x)).
    ParallelResidual,
    /// Gemma 2 and 3: x + norm(attn(norm(x))), then x + norm(ff(norm(x))).
    Sandwich,
    /// OLMo 2: x + norm(attn(x)), then x + norm(ff(x)).
    PostNorm,
}

/// How the query, key and value projections are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkvLayout {
    /// `q_proj`, `k_proj`, `v_proj`.
    Separate,
    /// One projection, all queries then all keys then all values (GPT-2's
    /// `c_attn`, ModernBERT's `Wqkv`, Phi-3's `qkv_proj` with grouped keys).
    Concatenated,
    /// GPT-NeoX's `query_key_value`: head by head, each head's query, key
    /// and value side by side.
    InterleavedPerHead,
}

/// How the feed-forward is stored and computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedForwardLayout {
    /// down(act(up(x))): GPT-2, GPT-NeoX.
    Plain,
    /// down(act(gate(x)) · up(x)) from `gate_proj` and `up_proj`.
    Gated,
    /// The same from one fused projection, gate half first: ModernBERT's
    /// `Wi`, Phi-3's `gate_up_proj`.
    FusedGated,
}
