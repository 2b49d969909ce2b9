//! The attention core: the one place where a head's attention P, its output
//! vectors O = P·V and its context similarity S = O·Oᵀ are made (ANALYSIS.md
//! §2), for every family, in a forward pass and when a head's P and S are
//! recomputed from the queries and keys a pass kept.
//!
//! A head's scores are `scale · Q·Kᵀ`, soft-capped where a family caps them,
//! and masked: a causal query sees no later key, a sliding window no key
//! too far away ([`AttentionMask`]). Each row is softmaxed over the keys it
//! sees; the others get exactly 0, as transformers' masked softmax gives
//! them (its mask adds the smallest float, whose exponential is 0). The
//! softmax also gives each row's entropy, which the analysis's classic
//! statistics read: from the scores it costs a product an entry, from the
//! finished P a logarithm an entry (a third of a small model's figures).

use super::{matmul, softmax_entropy, MatMut, MatRef};
use std::ops::Range;

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
    pub fn visible_keys(&self, query: usize, tokens: usize) -> Range<usize> {
        match (self.causal, self.window) {
            (true, None) => 0..query + 1,
            (true, Some(w)) => (query + 1).saturating_sub(w)..query + 1,
            (false, None) => 0..tokens,
            (false, Some(w)) => query.saturating_sub(w)..(query + w + 1).min(tokens),
        }
    }
}

/// How one layer's heads turn queries and keys into attention.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRule {
    /// Scores are `scale · q·k`: 1/√d, or Gemma 2 and 3's
    /// `query_pre_attn_scalar`^−½.
    pub scale: f32,
    pub mask: AttentionMask,
    /// Soft-capping, `cap · tanh(score / cap)` before the mask, for a
    /// family that caps its scores (Gemma 2's `attn_logit_softcapping`).
    pub soft_cap: Option<f32>,
}

impl ScoreRule {
    /// Scores scaled by 1/√`head_dim`, masked by `mask`, not capped.
    pub fn new(head_dim: usize, mask: AttentionMask) -> Self {
        Self {
            scale: 1.0 / (head_dim as f32).sqrt(),
            mask,
            soft_cap: None,
        }
    }
}

/// Query rows per block: each block is scored against, and multiplies,
/// only the keys its rows see, so a causal head costs about half a full
/// one. 128 rows keep a block's scores (128 × T) in L2 at 2,048 tokens, and
/// the wasted triangle of each block small. Every head is made in these
/// blocks, masked or not, and S too: a pass that makes a head's rows a
/// block at a time (holding 128 × T of its P and S, not T × T) gives the
/// same bits as one that makes it whole.
pub const ROW_BLOCK: usize = 128;

/// The row blocks of `rows` queries at positions `first_query`, …, each
/// with the keys its rows see together (the union of their ranges: the
/// ranges' ends never decrease with the query, so the union is one range).
fn row_blocks(
    mask: AttentionMask,
    first_query: usize,
    rows: usize,
    tokens: usize,
) -> impl Iterator<Item = (Range<usize>, Range<usize>)> {
    (0..rows).step_by(ROW_BLOCK).map(move |start| {
        let end = (start + ROW_BLOCK).min(rows);
        let first = mask.visible_keys(first_query + start, tokens);
        let last = mask.visible_keys(first_query + end - 1, tokens);
        (
            start..end,
            first.start.min(last.start)..first.end.max(last.end),
        )
    })
}

/// Rows of one head's attention P: queries `n × d` at positions
/// `first_query`, `first_query + 1`, … against all `T` keys (`T × d`),
/// into `attention` (`n × T`), and, where given, each row's entropy into
/// `entropies` (n; [`softmax_entropy`]: the analysis then reads P's
/// entropy here, not by a logarithm per entry). With `first_query` 0 and
/// n = T, the whole P; a decoder that caches its keys makes the rows of
/// its new tokens so.
pub fn attention_rows(
    query: &[f32],
    key: &[f32],
    head_dim: usize,
    first_query: usize,
    rule: &ScoreRule,
    attention: &mut [f32],
    mut entropies: Option<&mut [f32]>,
) {
    let rows = query.len().checked_div(head_dim).unwrap_or(0);
    let tokens = key.len().checked_div(head_dim).unwrap_or(0);
    for (block, keys) in row_blocks(rule.mask, first_query, rows, tokens) {
        let scores = &mut attention[block.start * tokens..block.end * tokens];
        matmul(
            MatMut::strided(&mut scores[keys.start..], block.len(), keys.len(), tokens),
            MatRef::new(
                &query[block.start * head_dim..block.end * head_dim],
                block.len(),
                head_dim,
            ),
            MatRef::new(
                &key[keys.start * head_dim..keys.end * head_dim],
                keys.len(),
                head_dim,
            )
            .t(),
            false,
            rule.scale,
        );
        for (row_index, row) in (block.start..).zip(scores.chunks_exact_mut(tokens)) {
            let seen = rule.mask.visible_keys(first_query + row_index, tokens);
            let visible = &mut row[seen.clone()];
            if let Some(cap) = rule.soft_cap {
                visible
                    .iter_mut()
                    .for_each(|score| *score = cap * (*score / cap).tanh());
            }
            let entropy = softmax_entropy(visible);
            if let Some(entropies) = entropies.as_deref_mut() {
                entropies[row_index] = entropy;
            }
            row[..seen.start].fill(0.0);
            row[seen.end..].fill(0.0);
        }
    }
}

/// One head's self-attention over all T tokens, from its contiguous
/// queries, keys and values (each `T × d`): P into `attention` (`T × T`),
/// its rows' entropies into `entropies` (T), O = P·V into `head_output`
/// (`T × d`) and S = O·Oᵀ into `similarity` (`T × T`).
#[allow(clippy::too_many_arguments)]
pub fn attend(
    query: &[f32],
    key: &[f32],
    value: &[f32],
    head_dim: usize,
    rule: &ScoreRule,
    (attention, entropies): (&mut [f32], &mut [f32]),
    head_output: &mut [f32],
    similarity: &mut [f32],
) {
    attend_rows(
        query,
        key,
        value,
        head_dim,
        0,
        rule,
        (attention, Some(entropies)),
        head_output,
    );
    context_similarity(head_output, head_dim, similarity);
}

/// The rows of P (`n × T`), where given their entropies (n), and O = P·V
/// (`n × d`) of queries `n × d` at positions `first_query`, … against all
/// `T` keys and values (`T × d`).
#[allow(clippy::too_many_arguments)]
pub fn attend_rows(
    query: &[f32],
    key: &[f32],
    value: &[f32],
    head_dim: usize,
    first_query: usize,
    rule: &ScoreRule,
    (attention, entropies): (&mut [f32], Option<&mut [f32]>),
    head_output: &mut [f32],
) {
    let rows = query.len().checked_div(head_dim).unwrap_or(0);
    let tokens = key.len().checked_div(head_dim).unwrap_or(0);
    attention_rows(
        query,
        key,
        head_dim,
        first_query,
        rule,
        attention,
        entropies,
    );
    // Each block's rows against the values its keys hold: P is 0 elsewhere.
    for (block, keys) in row_blocks(rule.mask, first_query, rows, tokens) {
        matmul(
            MatMut::new(
                &mut head_output[block.start * head_dim..block.end * head_dim],
                block.len(),
                head_dim,
            ),
            MatRef::strided(
                &attention[block.start * tokens + keys.start..block.end * tokens],
                block.len(),
                keys.len(),
                tokens,
                1,
            ),
            MatRef::new(
                &value[keys.start * head_dim..keys.end * head_dim],
                keys.len(),
                head_dim,
            ),
            false,
            1.0,
        );
    }
}

/// The size of what each key writes through the head (ANALYSIS.md §9,
/// value weighting): ‖v_j W_O^h‖₂ for every token j, from the head's
/// values (`T × d`) and the Gram matrix of its rows of the output
/// projection, G = W_O^h·W_O^hᵀ (`d × d`, [`value_gram`]): v G vᵀ costs d²
/// a token, not the d × hidden of the product itself. Into `norms` (T).
pub fn value_norms(value: &[f32], gram: &[f32], head_dim: usize, norms: &mut [f32]) {
    let tokens = value.len().checked_div(head_dim).unwrap_or(0);
    let mut weighted = vec![0.0f32; value.len()];
    matmul(
        MatMut::new(&mut weighted, tokens, head_dim),
        MatRef::new(value, tokens, head_dim),
        MatRef::new(gram, head_dim, head_dim),
        false,
        1.0,
    );
    for ((norm, v), vg) in norms
        .iter_mut()
        .zip(value.chunks_exact(head_dim))
        .zip(weighted.chunks_exact(head_dim))
    {
        let square: f32 = v.iter().zip(vg).map(|(a, b)| a * b).sum();
        // G is positive semi-definite: a negative square is rounding.
        *norm = square.max(0.0).sqrt();
    }
}

/// G = W·Wᵀ (`d × d`) of a head's rows W (`d × hidden`) of its output
/// projection, in the x·W form (the rows its d dimensions multiply).
pub fn value_gram(rows: &[f32], head_dim: usize, gram: &mut [f32]) {
    let width = rows.len().checked_div(head_dim).unwrap_or(0);
    matmul(
        MatMut::new(gram, head_dim, head_dim),
        MatRef::new(rows, head_dim, width),
        MatRef::new(rows, head_dim, width).t(),
        false,
        1.0,
    );
}

/// S = O·Oᵀ (`T × T`) of one head's output vectors O (`T × d`), in
/// blocks of [`ROW_BLOCK`] rows ([`similarity_row_block`]).
///
/// In full, though S is symmetric: multiplying only the blocks on and
/// below the diagonal halves the product (3.6 against 6.2 ms at 2,048
/// tokens, d = 64, one AVX-512 core), but mirroring them above it, block by
/// block while they are in cache, cost another 3–4 ms: the writes land on
/// rows far apart, each a cache line not yet held.
pub fn context_similarity(head_output: &[f32], head_dim: usize, similarity: &mut [f32]) {
    let tokens = head_output.len().checked_div(head_dim).unwrap_or(0);
    for (block, rows) in similarity
        .chunks_mut((ROW_BLOCK * tokens).max(1))
        .enumerate()
    {
        similarity_row_block(head_output, head_dim, block, rows);
    }
}

/// Block `block` of S (rows `block · ROW_BLOCK …`, at most [`ROW_BLOCK`]
/// of them, against all T) of one head's outputs O (`T × d`), into `rows`.
pub fn similarity_row_block(head_output: &[f32], head_dim: usize, block: usize, rows: &mut [f32]) {
    let tokens = head_output.len().checked_div(head_dim).unwrap_or(0);
    let start = block * ROW_BLOCK;
    let end = (start + ROW_BLOCK).min(tokens);
    similarity_rows(
        &head_output[start * head_dim..end * head_dim],
        head_output,
        head_dim,
        &mut rows[..(end - start) * tokens],
    );
}

/// Rows of S: the output vectors `rows` (`n × d`) against all `T` of the
/// head's (`T × d`), into `similarity` (`n × T`).
///
/// Every entry has the same bits whatever the block's shape, so that any
/// rectangle of S equals the same cells of S made whole: gemm's general
/// path makes each entry one chain of fused multiply-adds over d wherever
/// it sits, but a product of one row or column (gemv) or of at most 256
/// entries (dot products reduced across lanes) takes other paths, which
/// round differently. Such a block is made inside a larger one, padded
/// with zero vectors.
pub fn similarity_rows(rows: &[f32], all: &[f32], head_dim: usize, similarity: &mut [f32]) {
    let (n, tokens) = (
        rows.len().checked_div(head_dim).unwrap_or(0),
        all.len().checked_div(head_dim).unwrap_or(0),
    );
    if n > 0 && tokens > 0 && head_dim > 0 && (n < 2 || tokens < 2 || n * tokens <= 256) {
        let (padded_n, padded_tokens) = (n.max(17), tokens.max(17));
        let pad = |vectors: &[f32], count: usize| {
            let mut padded = vectors.to_vec();
            padded.resize(count * head_dim, 0.0);
            padded
        };
        let mut padded = vec![0.0f32; padded_n * padded_tokens];
        similarity_rows(
            &pad(rows, padded_n),
            &pad(all, padded_tokens),
            head_dim,
            &mut padded,
        );
        for (out, row) in similarity
            .chunks_exact_mut(tokens)
            .zip(padded.chunks_exact(padded_tokens))
        {
            out.copy_from_slice(&row[..tokens]);
        }
        return;
    }
    matmul(
        MatMut::new(similarity, n, tokens),
        MatRef::new(rows, n, head_dim),
        MatRef::new(all, tokens, head_dim).t(),
        false,
        1.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The range the core softmaxes over is exactly the keys `visible` allows.
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

    /// P, O and S in double precision, straight from their definitions.
    fn reference(q: &[f32], k: &[f32], v: &[f32], d: usize, rule: &ScoreRule) -> [Vec<f64>; 3] {
        let t = q.len() / d;
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a.iter()
                .zip(b)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum()
        };
        let mut p = vec![0.0; t * t];
        for i in 0..t {
            let scores: Vec<Option<f64>> = (0..t)
                .map(|j| {
                    let s = f64::from(rule.scale) * dot(&q[i * d..][..d], &k[j * d..][..d]);
                    let s = rule
                        .soft_cap
                        .map_or(s, |cap| f64::from(cap) * (s / f64::from(cap)).tanh());
                    rule.mask.visible(i, j).then_some(s)
                })
                .collect();
            let max = scores.iter().flatten().fold(f64::MIN, |m, &s| m.max(s));
            let sum: f64 = scores.iter().flatten().map(|s| (s - max).exp()).sum();
            for (j, s) in scores.iter().enumerate() {
                p[i * t + j] = s.map_or(0.0, |s| (s - max).exp() / sum);
            }
        }
        let mut o = vec![0.0; t * d];
        for i in 0..t {
            for c in 0..d {
                o[i * d + c] = (0..t).map(|j| p[i * t + j] * f64::from(v[j * d + c])).sum();
            }
        }
        let mut s = vec![0.0; t * t];
        for i in 0..t {
            for j in 0..t {
                s[i * t + j] = (0..d).map(|c| o[i * d + c] * o[j * d + c]).sum();
            }
        }
        [p, o, s]
    }

    /// Every mask and a soft cap: P, O and S as their definitions give
    /// them, masked keys exactly 0, every row of P summing to 1.
    /// Any rectangle of S, of any shape (one row, one column, a few
    /// cells, which gemm makes on other paths), has the bits of S made
    /// whole in blocks of rows.
    #[test]
    fn every_rectangle_of_s_has_the_bits_of_the_whole() {
        let (t, d) = (400, 64);
        let mut state = 12345u64;
        let outputs: Vec<f32> = (0..t * d)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 40) as f32 / 16_777_216.0 - 0.5
            })
            .collect();
        let mut whole = vec![0.0f32; t * t];
        context_similarity(&outputs, d, &mut whole);
        for (rows, columns) in [
            (0..1, 0..400),
            (0..1, 335..400),
            (398..400, 335..400),
            (384..400, 384..400),
            (5..13, 6..400),
            (7..71, 3..67),
            (3..200, 399..400),
            (256..400, 256..400),
        ] {
            let mut block = vec![0.0f32; rows.len() * columns.len()];
            similarity_rows(
                &outputs[rows.start * d..rows.end * d],
                &outputs[columns.start * d..columns.end * d],
                d,
                &mut block,
            );
            for (i, row) in rows.clone().zip(block.chunks_exact(columns.len())) {
                for (j, &value) in columns.clone().zip(row) {
                    assert_eq!(
                        value.to_bits(),
                        whole[i * t + j].to_bits(),
                        "S[{i}, {j}] in {rows:?} × {columns:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_core_computes_the_definitions() {
        // 19 tokens: one row block; 300: three, the last one short.
        for (t, window) in [(19, 4), (300, 70)] {
            core_matches_definitions(t, window);
        }
    }

    fn core_matches_definitions(t: usize, window: usize) {
        let d = 8;
        let values = |seed: f32| -> Vec<f32> {
            (0..t * d)
                .map(|i| 2.0 * (i as f32 * 0.37 + seed).sin())
                .collect()
        };
        let (q, k, v) = (values(0.1), values(1.3), values(2.9));
        for causal in [false, true] {
            for window in [None, Some(window)] {
                for soft_cap in [None, Some(1.5)] {
                    let rule = ScoreRule {
                        soft_cap,
                        ..ScoreRule::new(d, AttentionMask { causal, window })
                    };
                    let (mut p, mut o, mut s) =
                        (vec![0.0; t * t], vec![0.0; t * d], vec![0.0; t * t]);
                    let mut entropies = vec![f32::NAN; t];
                    attend(
                        &q,
                        &k,
                        &v,
                        d,
                        &rule,
                        (&mut p, &mut entropies),
                        &mut o,
                        &mut s,
                    );
                    let [rp, ro, rs] = reference(&q, &k, &v, d, &rule);
                    for (name, ours, theirs) in [("P", &p, &rp), ("O", &o, &ro), ("S", &s, &rs)] {
                        for (a, b) in ours.iter().zip(theirs) {
                            assert!(
                                (f64::from(*a) - b).abs() <= 1e-5 * b.abs().max(1.0),
                                "{rule:?} {name}: {a} vs {b}"
                            );
                        }
                    }
                    for (i, row) in p.chunks(t).enumerate() {
                        // −Σ p ln p of the reference's row.
                        let entropy: f64 = rp[i * t..(i + 1) * t]
                            .iter()
                            .filter(|&&p| p > 0.0)
                            .map(|&p| -p * p.ln())
                            .sum();
                        assert!(
                            (f64::from(entropies[i]) - entropy).abs() <= 1e-5 * entropy.max(1.0),
                            "{rule:?} row {i}'s entropy: {} vs {entropy}",
                            entropies[i]
                        );
                        let sum: f32 = row.iter().sum();
                        assert!((sum - 1.0).abs() < 1e-5, "{rule:?} row {i} sums to {sum}");
                        for (j, &value) in row.iter().enumerate() {
                            if !rule.mask.visible(i, j) {
                                assert_eq!(value, 0.0, "{rule:?} P[{i}, {j}]");
                            }
                        }
                    }
                    // The rows of the last tokens alone (as a cached
                    // generation step makes them), from a position inside a
                    // row block: the same rows of P and O.
                    let first = t / 2 + 3;
                    let (mut rows_p, mut rows_o) =
                        (vec![0.0; (t - first) * t], vec![0.0; (t - first) * d]);
                    attend_rows(
                        &q[first * d..],
                        &k,
                        &v,
                        d,
                        first,
                        &rule,
                        (&mut rows_p, None),
                        &mut rows_o,
                    );
                    for (name, ours, whole) in [
                        ("P", &rows_p, &p[first * t..]),
                        ("O", &rows_o, &o[first * d..]),
                    ] {
                        for (a, b) in ours.iter().zip(whole) {
                            assert!(
                                (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                                "{rule:?} rows of {name}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
    }
}
