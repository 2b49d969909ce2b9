//! Head matching by linear CKA of the heads' context similarity matrices
//! over the aligned units.
//!
//! For a head, the matrix compared is its raw context similarity S = O·Oᵀ
//! (ANALYSIS.md §2) restricted to the aligned content tokens and pooled
//! over each aligned unit: entry (u, v) is the mean of S[i, j] over the
//! unit's tokens i of u and j of v. That is exactly the Gram matrix of the
//! head's output vectors averaged over each unit, so it stays a linear
//! kernel, and where the units are single tokens it is S itself.
//!
//! Linear CKA (Kornblith et al. 2019) of two such n × n matrices K and L,
//! with the centring H = I − 11ᵀ/n:
//!
//! CKA(K, L) = ⟨HKH, HLH⟩_F / (‖HKH‖_F · ‖HLH‖_F)
//!
//! It is 1 for a head compared with itself, does not change when a
//! matrix is scaled, and is undefined (`None`) when a centred matrix is
//! zero or there are fewer than two units. A head's best match is the
//! other model's head of the highest CKA (ties: the first in layer-major
//! order).

use crate::captures::{Captures, HeadId};
use serde::{Deserialize, Serialize};

/// The unit-pooled similarity of one head: n × n, row-major. `s` is the
/// head's T × T matrix; `groups` the positions of each unit.
pub fn pooled_similarity(s: &[f32], tokens: usize, groups: &[Vec<usize>]) -> Vec<f64> {
    let n = groups.len();
    let mut pooled = vec![0.0f64; n * n];
    for (u, rows) in groups.iter().enumerate() {
        for (v, columns) in groups.iter().enumerate() {
            let mut sum = 0.0f64;
            for &i in rows {
                for &j in columns {
                    sum += f64::from(s[i * tokens + j]);
                }
            }
            pooled[u * n + v] = sum / (rows.len() * columns.len()) as f64;
        }
    }
    pooled
}

/// H·K·H for an n × n matrix K: every row mean and column mean removed,
/// the grand mean added back.
pub fn centre(k: &[f64], n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    let row_means: Vec<f64> = (0..n)
        .map(|i| k[i * n..(i + 1) * n].iter().sum::<f64>() / n as f64)
        .collect();
    let column_means: Vec<f64> = (0..n)
        .map(|j| (0..n).map(|i| k[i * n + j]).sum::<f64>() / n as f64)
        .collect();
    let grand = row_means.iter().sum::<f64>() / n as f64;
    let mut centred = Vec::with_capacity(n * n);
    for (row, row_mean) in k.chunks_exact(n).zip(&row_means) {
        for (value, column_mean) in row.iter().zip(&column_means) {
            centred.push(value - row_mean - column_mean + grand);
        }
    }
    centred
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Linear CKA of two n × n matrices (see the module documentation).
pub fn linear_cka(k: &[f64], l: &[f64], n: usize) -> Option<f64> {
    let (k, l) = (centre(k, n), centre(l, n));
    cka_of_centred(&k, dot(&k, &k).sqrt(), &l, dot(&l, &l).sqrt(), n)
}

fn cka_of_centred(k: &[f64], k_norm: f64, l: &[f64], l_norm: f64, n: usize) -> Option<f64> {
    cka_of_inner(dot(k, l), k_norm, l_norm, n)
}

fn cka_of_inner(inner: f64, k_norm: f64, l_norm: f64, n: usize) -> Option<f64> {
    if n < 2 || !(k_norm > 0.0 && l_norm > 0.0) {
        return None;
    }
    let value = inner / (k_norm * l_norm);
    value.is_finite().then(|| value.clamp(-1.0, 1.0))
}

/// A head of the other model and its CKA.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BestMatch {
    pub layer: usize,
    pub head: usize,
    pub cka: f64,
}

impl BestMatch {
    pub fn head_id(&self) -> HeadId {
        HeadId::new(self.layer, self.head)
    }
}

/// The CKA of every head of A with every head of B.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeadMatching {
    /// Layers and heads per layer of A and of B.
    pub a_layers: usize,
    pub a_heads: usize,
    pub b_layers: usize,
    pub b_heads: usize,
    /// Aligned units the matrices span (their n).
    pub units: usize,
    /// Row r = head r of A, column c = head c of B, both in layer-major
    /// order (r = layer · heads + head); `None` where undefined.
    pub cka: Vec<Vec<Option<f64>>>,
    /// Per head of A (layer-major), its best match in B.
    pub best_for_a: Vec<Option<BestMatch>>,
    /// Per head of B (layer-major), its best match in A.
    pub best_for_b: Vec<Option<BestMatch>>,
}

impl HeadMatching {
    /// The CKA of head `a` of A with head `b` of B.
    pub fn get(&self, a: HeadId, b: HeadId) -> Option<f64> {
        let row = self.cka.get(a.layer * self.a_heads + a.head)?;
        *row.get(b.layer * self.b_heads + b.head)?
    }

    /// The heads of B ranked by CKA with head `a` of A, best first, at
    /// most `count`.
    pub fn ranked_for_a(&self, a: HeadId, count: usize) -> Vec<BestMatch> {
        let Some(row) = self.cka.get(a.layer * self.a_heads + a.head) else {
            return Vec::new();
        };
        ranked(row.iter().copied(), self.b_heads, count)
    }

    /// The heads of A ranked by CKA with head `b` of B, best first.
    pub fn ranked_for_b(&self, b: HeadId, count: usize) -> Vec<BestMatch> {
        let column = b.layer * self.b_heads + b.head;
        ranked(
            self.cka
                .iter()
                .map(|row| row.get(column).copied().flatten()),
            self.a_heads,
            count,
        )
    }
}

/// The defined values of a row, best first (ties: the lower index first).
fn ranked(values: impl Iterator<Item = Option<f64>>, heads: usize, count: usize) -> Vec<BestMatch> {
    let mut defined: Vec<(usize, f64)> = values
        .enumerate()
        .filter_map(|(i, v)| Some((i, v?)))
        .collect();
    defined.sort_by(|(i, x), (j, y)| y.total_cmp(x).then(i.cmp(j)));
    defined
        .into_iter()
        .take(count)
        .map(|(i, cka)| BestMatch {
            layer: i / heads.max(1),
            head: i % heads.max(1),
            cka,
        })
        .collect()
}

/// The centred pooled matrix of one head, with its norm.
fn centred_head(captures: &Captures, id: HeadId, groups: &[Vec<usize>]) -> (Vec<f64>, f64) {
    let pooled = pooled_similarity(&captures.similarity(id), captures.tokens, groups);
    let centred = centre(&pooled, groups.len());
    let norm = dot(&centred, &centred).sqrt();
    (centred, norm)
}

/// Matches every head of A with every head of B over the units given by
/// `a_groups` and `b_groups` (the same number of units, in the same order).
pub fn match_heads(
    a: &Captures,
    a_groups: &[Vec<usize>],
    b: &Captures,
    b_groups: &[Vec<usize>],
) -> HeadMatching {
    assert_eq!(a_groups.len(), b_groups.len(), "one unit list for both");
    let n = a_groups.len();
    // B's matrices are kept, in f32 (n² values a head: 150 MB for 144
    // heads at 512 tokens), with their norms from those very values; A's
    // are made one at a time.
    let b_centred: Vec<(Vec<f32>, f64)> = b
        .head_ids()
        .map(|id| {
            let (centred, _) = centred_head(b, id, b_groups);
            let narrow: Vec<f32> = centred.iter().map(|&v| v as f32).collect();
            let norm = narrow
                .iter()
                .map(|&v| f64::from(v).powi(2))
                .sum::<f64>()
                .sqrt();
            (narrow, norm)
        })
        .collect();
    let cka: Vec<Vec<Option<f64>>> = a
        .head_ids()
        .map(|id| {
            let (k, k_norm) = centred_head(a, id, a_groups);
            b_centred
                .iter()
                .map(|(l, l_norm)| {
                    let inner = k.iter().zip(l).map(|(x, &y)| x * f64::from(y)).sum();
                    cka_of_inner(inner, k_norm, *l_norm, n)
                })
                .collect()
        })
        .collect();
    let mut matching = HeadMatching {
        a_layers: a.layers,
        a_heads: a.heads,
        b_layers: b.layers,
        b_heads: b.heads,
        units: n,
        cka,
        best_for_a: Vec::new(),
        best_for_b: Vec::new(),
    };
    matching.best_for_a = a
        .head_ids()
        .map(|id| matching.ranked_for_a(id, 1).first().copied())
        .collect();
    matching.best_for_b = b
        .head_ids()
        .map(|id| matching.ranked_for_b(id, 1).first().copied())
        .collect();
    matching
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Gram matrix of n points in d dimensions.
    fn gram(points: &[Vec<f64>]) -> Vec<f64> {
        let n = points.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = dot(&points[i], &points[j]);
            }
        }
        k
    }

    #[test]
    fn cka_is_one_for_a_matrix_and_its_multiple_and_undefined_when_flat() {
        let x = vec![
            vec![1.0, 0.0],
            vec![0.5, 2.0],
            vec![-1.0, 1.0],
            vec![3.0, 0.1],
        ];
        let k = gram(&x);
        let scaled: Vec<f64> = k.iter().map(|v| v * 7.5).collect();
        assert!((linear_cka(&k, &scaled, 4).unwrap() - 1.0).abs() < 1e-12);
        // Rotating the points leaves the Gram matrix, and the CKA, alone.
        let rotated: Vec<Vec<f64>> = x.iter().map(|p| vec![-p[1], p[0]]).collect();
        assert!((linear_cka(&k, &gram(&rotated), 4).unwrap() - 1.0).abs() < 1e-12);
        // Another configuration is less similar.
        let other = vec![
            vec![1.0, 1.0],
            vec![0.0, 0.0],
            vec![2.0, -1.0],
            vec![0.0, 5.0],
        ];
        let value = linear_cka(&k, &gram(&other), 4).unwrap();
        assert!(value < 0.99 && value > -1.0, "{value}");
        // Every point alike: the centred matrix is zero, CKA undefined.
        let flat = gram(&vec![vec![1.0, 2.0]; 4]);
        assert_eq!(linear_cka(&k, &flat, 4), None);
        assert_eq!(linear_cka(&k[..1], &k[..1], 1), None);
    }

    #[test]
    fn pooling_averages_the_blocks() {
        // T = 3; units {0, 1} and {2}.
        let s = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let pooled = pooled_similarity(&s, 3, &[vec![0, 1], vec![2]]);
        assert_eq!(pooled, vec![3.0, 4.5, 7.5, 9.0]);
    }

    #[test]
    fn ranking_puts_the_highest_first_and_skips_undefined() {
        let ranked = ranked([Some(0.2), None, Some(0.9), Some(0.9)].into_iter(), 2, 3);
        let heads: Vec<(usize, usize)> = ranked.iter().map(|m| (m.layer, m.head)).collect();
        assert_eq!(heads, vec![(1, 0), (1, 1), (0, 0)]);
    }
}
