//! What one forward pass captured for every layer and head: the attention
//! probabilities P, the per-head output vectors O = P·V and the raw context
//! similarity S = O·Oᵀ (ANALYSIS.md §2).
//!
//! Plain `f32` buffers in row-major order so that the analysis, the colour
//! maps, the exporters and the UI never need the tensor library.
//!
//! P and S take L·H·T² values each: at 2,048 tokens on a 24-layer × 14-head
//! decoder, 11 GB. When they would not fit the memory limit, a pass keeps
//! instead what they are made from ([`AttentionInputs`]: each head's
//! rotated queries and keys, and the mask; S comes from O), and
//! [`Captures::attention`] and [`Captures::similarity`] recompute one head
//! when asked, in milliseconds. The figures never wait for that: the
//! pipeline analyses each layer while its P and S exist.

use crate::kernels::{matmul, MatMut, MatRef};
use std::borrow::Cow;

/// Shapes: attentions and similarity are L×H×T×T, head outputs L×H×T×d.
/// `attentions` and `similarity` are empty when `recompute` holds what they
/// are made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Captures {
    pub layers: usize,
    pub heads: usize,
    pub tokens: usize,
    pub head_dim: usize,
    pub attentions: Vec<f32>,
    pub head_outputs: Vec<f32>,
    pub similarity: Vec<f32>,
    pub recompute: Option<Box<AttentionInputs>>,
    /// Per layer, what the Separators view reads of P, computed during the
    /// pass when P is not kept (empty otherwise).
    pub separator_columns: Vec<SeparatorColumns>,
}

/// Whether a pass keeps every P and S, or what recomputes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum CaptureMode {
    #[default]
    Stored,
    Recomputed,
}

/// What P is made from: softmax(scores(Q·Kᵀ) + mask) per head, the scores
/// as [`ScoreRule`] says, with the queries and keys as the scores read them
/// (normalised where the family does, rotated, not yet scaled).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttentionInputs {
    /// L×H×T×d.
    pub queries: Vec<f32>,
    /// L×H_kv×T×d: query head h reads key head h / (H / H_kv).
    pub keys: Vec<f32>,
    pub kv_heads: usize,
    /// One per layer.
    pub masks: Vec<AttentionMask>,
    /// How Q·Kᵀ becomes the scores (the same in every layer).
    pub scores: ScoreRule,
}

/// How a model turns Q·Kᵀ into the scores its mask and softmax read:
/// multiplied by `scale` (head_dim^−½; Gemma 2 and 3:
/// `query_pre_attn_scalar`^−½), then, where `softcap` is set (Gemma 2),
/// cap · tanh(scores / cap).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRule {
    pub scale: f64,
    pub softcap: Option<f64>,
}

impl Default for ScoreRule {
    /// Unscaled, uncapped (a placeholder for empty captures).
    fn default() -> Self {
        Self {
            scale: 1.0,
            softcap: None,
        }
    }
}

/// Which keys a query sees in one layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttentionMask {
    /// Query i sees only keys j ≤ i.
    pub causal: bool,
    /// A sliding window: causal, i − j < window; bidirectional (ModernBERT's
    /// local layers), |i − j| ≤ window.
    pub window: Option<usize>,
}

impl AttentionMask {
    pub fn visible(&self, query: usize, key: usize) -> bool {
        if self.causal {
            key <= query && self.window.is_none_or(|w| query - key < w)
        } else {
            self.window.is_none_or(|w| query.abs_diff(key) <= w)
        }
    }

    /// The keys query `query` of a `tokens`-token input sees, as one range.
    pub fn visible_keys(&self, query: usize, tokens: usize) -> std::ops::Range<usize> {
        match (self.causal, self.window) {
            (true, None) => 0..query + 1,
            (true, Some(w)) => (query + 1).saturating_sub(w)..query + 1,
            (false, None) => 0..tokens,
            (false, Some(w)) => query.saturating_sub(w)..(query + w + 1).min(tokens),
        }
    }
}

/// One layer's attention to the `[SEP]` (sentence-closing) positions, summed
/// over its heads: what the Separators view shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeparatorColumns {
    /// Per token, the mean over heads of Σ_s P[i, s] (T values).
    pub per_token: Vec<f64>,
    /// Σ over heads of P[i, s], in f32 and head order like the analysis:
    /// T rows of one value per separator.
    pub sums: Vec<f32>,
}

impl SeparatorColumns {
    /// Reads one layer: `attention(h)` is head h's T×T P.
    pub fn of_layer<'a>(
        attention: impl Fn(usize) -> Cow<'a, [f32]>,
        heads: usize,
        tokens: usize,
        separators: &[usize],
    ) -> Self {
        let n = separators.len();
        let mut per_token = vec![0.0f64; tokens];
        let mut sums = vec![0.0f32; tokens * n];
        for head in 0..heads {
            let attention = attention(head);
            for (i, row) in attention.chunks_exact(tokens.max(1)).enumerate() {
                per_token[i] += separators.iter().map(|&k| f64::from(row[k])).sum::<f64>();
                for (sum, &k) in sums[i * n..(i + 1) * n].iter_mut().zip(separators) {
                    *sum = if head == 0 { row[k] } else { *sum + row[k] };
                }
            }
        }
        per_token.iter_mut().for_each(|v| *v /= heads.max(1) as f64);
        Self { per_token, sums }
    }
}
/// One head of one layer, both 0-based.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct HeadId {
    pub layer: usize,
    pub head: usize,
}

impl HeadId {
    pub fn new(layer: usize, head: usize) -> Self {
        Self { layer, head }
    }
}

impl std::fmt::Display for HeadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "L{} H{}", self.layer, self.head)
    }
}

impl Captures {
    fn square(&self, buffer: &[f32], id: HeadId) -> std::ops::Range<usize> {
        debug_assert!(id.layer < self.layers && id.head < self.heads);
        let size = self.tokens * self.tokens;
        let start = (id.layer * self.heads + id.head) * size;
        debug_assert!(start + size <= buffer.len());
        start..start + size
    }

    /// Whether every P and S is kept (else they are recomputed per head).
    pub fn stores_squares(&self) -> bool {
        self.recompute.is_none()
    }

    /// The head's T×T attention probabilities, row i = query i.
    pub fn attention(&self, id: HeadId) -> Cow<'_, [f32]> {
        match &self.recompute {
            None => Cow::Borrowed(&self.attentions[self.square(&self.attentions, id)]),
            Some(inputs) => Cow::Owned(self.recomputed_attention(inputs, id)),
        }
    }

    /// The head's T×T raw similarity O·Oᵀ.
    pub fn similarity(&self, id: HeadId) -> Cow<'_, [f32]> {
        if self.recompute.is_none() {
            return Cow::Borrowed(&self.similarity[self.square(&self.similarity, id)]);
        }
        let (t, d) = (self.tokens, self.head_dim);
        let outputs = MatRef::new(self.head_output(id), t, d);
        let mut similarity = vec![0.0f32; t * t];
        matmul(
            MatMut::new(&mut similarity, t, t),
            outputs,
            outputs.t(),
            false,
            1.0,
        );
        Cow::Owned(similarity)
    }

    fn recomputed_attention(&self, inputs: &AttentionInputs, id: HeadId) -> Vec<f32> {
        let (t, d) = (self.tokens, self.head_dim);
        let group = self.heads / inputs.kv_heads.max(1);
        let vectors = t * d;
        let query_start = (id.layer * self.heads + id.head) * vectors;
        let key_start = (id.layer * inputs.kv_heads + id.head / group.max(1)) * vectors;
        let queries = MatRef::new(&inputs.queries[query_start..query_start + vectors], t, d);
        let keys = MatRef::new(&inputs.keys[key_start..key_start + vectors], t, d);
        let mut scores = vec![0.0f32; t * t];
        let rule = inputs.scores;
        matmul(
            MatMut::new(&mut scores, t, t),
            queries,
            keys.t(),
            false,
            rule.scale as f32,
        );
        if let Some(cap) = rule.softcap {
            let cap = cap as f32;
            scores.iter_mut().for_each(|x| *x = (*x / cap).tanh() * cap);
        }
        let mask = inputs.masks[id.layer];
        for (i, row) in scores.chunks_exact_mut(t.max(1)).enumerate() {
            let seen = mask.visible_keys(i, t);
            let max = row[seen.clone()]
                .iter()
                .fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            let mut sum = 0.0f32;
            for x in &mut row[seen.clone()] {
                *x = (*x - max).exp();
                sum += *x;
            }
            let inverse = 1.0 / sum;
            row[seen.clone()].iter_mut().for_each(|x| *x *= inverse);
            row[..seen.start].fill(0.0);
            row[seen.end..].fill(0.0);
        }
        scores
    }

    /// The head's T×d output vectors, row i = token i.
    pub fn head_output(&self, id: HeadId) -> &[f32] {
        let size = self.tokens * self.head_dim;
        let start = (id.layer * self.heads + id.head) * size;
        &self.head_outputs[start..start + size]
    }

    /// Every head in layer-major order.
    pub fn head_ids(&self) -> impl Iterator<Item = HeadId> + '_ {
        (0..self.layers).flat_map(move |l| (0..self.heads).map(move |h| HeadId::new(l, h)))
    }
}

#[cfg(test)]
mod tests {
    use super::AttentionMask;

    /// The range the recomputation reads is exactly the keys `visible` allows.
    #[test]
    fn visible_keys_are_the_visible_ones() {
        let tokens = 12;
        for causal in [true, false] {
            for window in [None, Some(1), Some(3), Some(20)] {
                let mask = AttentionMask { causal, window };
                for query in 0..tokens {
                    let expected: Vec<usize> = (0..tokens)
                        .filter(|&key| mask.visible(query, key))
                        .collect();
                    let range: Vec<usize> = mask.visible_keys(query, tokens).collect();
                    assert_eq!(range, expected, "{mask:?} query {query}");
                }
            }
        }
    }
}
