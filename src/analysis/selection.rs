//! The pair selection rules (ANALYSIS.md §3): the top fraction with
//! numpy's tie order, without sorting every pair, and the top k per row.

use super::similarity::Transform;
use super::{Document, Scratch};

/// k of the top-fraction rule for N candidates: max(1, floor(q·N)), at most
/// N (0 when there is no candidate).
pub fn top_fraction_count(q: f64, candidates: usize) -> usize {
    if candidates == 0 {
        return 0;
    }
    // `as` saturates: a negative or NaN product gives 0, hence k = 1.
    let k = (q * candidates as f64).floor() as usize;
    k.max(1).min(candidates)
}

/// A u64 whose ascending order is the reference's ranking: larger value
/// first, NaN last, −0 equal to +0, then smaller index first.
#[inline]
pub(super) fn rank_key(v: f32, index: usize) -> u64 {
    let v = if v == 0.0 { 0.0 } else { v };
    let bits = v.to_bits();
    // Ascending total order of the non-NaN floats, then flipped for descending.
    let ascending = if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    let descending = if v.is_nan() { u32::MAX } else { !ascending };
    (u64::from(descending) << 32) | index as u64
}

#[inline]
pub(super) fn key_index(key: u64) -> usize {
    (key & 0xffff_ffff) as usize
}

/// Indices of the k best values in rank order: numpy's
/// `np.lexsort((np.arange(n), -v))[:k]`, without sorting all n.
pub(super) fn top_fraction(values: &[f32], k: usize, keys: &mut Vec<u64>) -> Vec<usize> {
    let k = k.min(values.len());
    if k == 0 {
        return Vec::new();
    }
    keys.clear();
    // A cheap threshold from a strided sample usually leaves only a few times
    // k survivors; every value at least as good as the threshold survives
    // (IEEE comparison: ties and −0/+0 included, NaN, which ranks last, not),
    // so when at least k do, the k best are among them.
    let stride = (values.len() / 4096).max(1);
    if stride > 1 {
        let mut sample: Vec<f32> = values
            .iter()
            .step_by(stride)
            .copied()
            .filter(|v| !v.is_nan())
            .collect();
        let rank = ((k as f64 / values.len() as f64) * sample.len() as f64 * 2.0) as usize + 8;
        if rank < sample.len() {
            let threshold = *sample.select_nth_unstable_by(rank, |a, b| b.total_cmp(a)).1;
            for (p, &v) in values.iter().enumerate() {
                if v >= threshold {
                    keys.push(rank_key(v, p));
                }
            }
            if keys.len() < k {
                keys.clear();
            }
        }
    }
    if keys.is_empty() {
        keys.extend(values.iter().enumerate().map(|(p, &v)| rank_key(v, p)));
    }
    if k < keys.len() {
        keys.select_nth_unstable(k - 1);
    }
    let best = &mut keys[..k];
    best.sort_unstable();
    best.iter().map(|&key| key_index(key)).collect()
}

/// Each content token's k best partners by its row of S', as unordered pairs
/// in pair order, each pair once.
pub(super) fn top_k_per_row(
    doc: &Document,
    transform: &Transform,
    k: usize,
    scratch: &mut Scratch,
) -> Vec<(u32, u32)> {
    let c = doc.content.len();
    let k = k.min(c.saturating_sub(1));
    if k == 0 {
        return Vec::new();
    }
    let mut chosen = Vec::with_capacity(c * k);
    let Scratch { row, keys, .. } = scratch;
    for &i in &doc.content {
        row.clear();
        for run in &doc.content_runs {
            transform.extend_row(i, run.clone(), row);
        }
        keys.clear();
        keys.extend(
            doc.content
                .iter()
                .zip(row.iter())
                .filter(|&(&j, _)| j != i)
                .map(|(&j, &v)| rank_key(v, j)),
        );
        if k < keys.len() {
            keys.select_nth_unstable(k - 1);
        }
        chosen.extend(keys[..k].iter().map(|&key| {
            let j = key_index(key);
            (i.min(j) as u32, i.max(j) as u32)
        }));
    }
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_key_orders_like_numpy_lexsort() {
        let values = [
            1.0f32,
            f32::NAN,
            -0.0,
            3.0,
            0.0,
            f32::NEG_INFINITY,
            3.0,
            f32::INFINITY,
            -2.0,
        ];
        let mut keys: Vec<u64> = values
            .iter()
            .enumerate()
            .map(|(p, &v)| rank_key(v, p))
            .collect();
        keys.sort_unstable();
        let order: Vec<usize> = keys.iter().map(|&k| key_index(k)).collect();
        assert_eq!(order, vec![7, 3, 6, 0, 2, 4, 8, 5, 1]);
    }

    #[test]
    fn top_fraction_matches_full_sort_with_ties() {
        // Quantised values make many ties, across the sampling threshold too.
        let mut state = 12345u64;
        let values: Vec<f32> = (0..100_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) % 200) as f32 - 100.0
            })
            .collect();
        let mut all: Vec<usize> = (0..values.len()).collect();
        all.sort_by(|&a, &b| values[b].partial_cmp(&values[a]).unwrap().then(a.cmp(&b)));
        for k in [1, 7, 1000, 5000, 60_000, 100_000] {
            assert_eq!(
                top_fraction(&values, k, &mut Vec::new()),
                all[..k].to_vec(),
                "k = {k}"
            );
        }
    }

    #[test]
    fn top_fraction_count_rule() {
        assert_eq!(top_fraction_count(0.01, 0), 0);
        assert_eq!(top_fraction_count(0.01, 1), 1);
        assert_eq!(top_fraction_count(0.01, 1711), 17);
        assert_eq!(top_fraction_count(0.01, 130_816), 1308);
        assert_eq!(top_fraction_count(2.0, 10), 10);
        assert_eq!(top_fraction_count(-1.0, 10), 1);
    }
}
