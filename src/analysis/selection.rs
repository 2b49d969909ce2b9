//! The pair selection rules (ANALYSIS.md §3): the top fraction, without
//! sorting every pair, and the top k per row; in both, pairs within ε of
//! the k-th value tie and share the last places ([`TieRule`]), so that a
//! head whose S is flat to float noise selects all its candidates evenly
//! instead of an order that noise decides.

use super::similarity::{for_each_row, TransformKind};
use super::{Document, Scratch, TieShare};
use crate::captures::HeadSimilarity;

/// ε of the tie rule, relative to the largest |S'| among the candidates.
pub const TIE_BAND: f64 = 1e-3;

/// The weights of ANALYSIS.md §3 for one set of candidates: weight 1 above
/// v_k + ε, the tied pairs (|S' − v_k| ≤ ε) sharing the remaining places,
/// 0 below. Compared in f64, as the reference does.
#[derive(Clone, Copy, Debug)]
pub(super) struct TieRule {
    kth: f64,
    epsilon: f64,
    pub(super) share: TieShare,
}

impl TieRule {
    /// The rule for selecting `k` of `values`, whose k-th best is `kth`.
    #[inline(always)]
    pub(super) fn new(values: &[f32], kth: f32, k: usize) -> Self {
        Self::with_largest(values, kth, k, largest_magnitude(values))
    }

    /// The rule for selecting `k` of some candidates whose largest |S'| is
    /// `largest`, from `values`, the candidates at or above the band's lower
    /// edge (or more): the others add to neither count.
    #[inline(always)]
    pub(super) fn with_largest(values: &[f32], kth: f32, k: usize, largest: f32) -> Self {
        let kth = f64::from(kth);
        // Widening is exact and keeps the order: the largest |v| in f32 is
        // the largest in f64.
        let epsilon = TIE_BAND * f64::from(largest);
        let (mut above, mut tied) = (0usize, 0usize);
        // Without branches, so that the loop runs in vector lanes.
        for &v in values {
            let v = f64::from(v);
            let is_above = v > kth + epsilon;
            above += usize::from(is_above);
            tied += usize::from(!is_above && (v - kth).abs() <= epsilon);
        }
        // The k-th value ties with itself, so `tied` ≥ 1 and `above` < k,
        // unless it is not finite (then nothing ties and nothing is shared).
        let weight = if tied > 0 {
            k.saturating_sub(above) as f64 / tied as f64
        } else {
            0.0
        };
        Self {
            kth,
            epsilon,
            share: TieShare {
                above,
                tied,
                weight,
            },
        }
    }

    /// A value below which every candidate's weight is 0 (the band's lower
    /// edge less a margin far above f64 rounding, as an f32), so that a
    /// pass over all candidates can skip them with one f32 comparison;
    /// −∞ where the band is not finite.
    #[inline(always)]
    pub(super) fn lowest_weighted(&self) -> f32 {
        band_floor(self.kth, self.epsilon)
    }

    /// The weight of a candidate whose value is `v`.
    #[inline(always)]
    pub(super) fn weight(&self, v: f32) -> f64 {
        let v = f64::from(v);
        if v > self.kth + self.epsilon {
            1.0
        } else if (v - self.kth).abs() <= self.epsilon {
            self.share.weight
        } else {
            0.0
        }
    }
}

/// An f32 below which no candidate weighs anything for a k-th value `kth`
/// and a band `epsilon` (see [`TieRule::lowest_weighted`]).
#[inline(always)]
fn band_floor(kth: f64, epsilon: f64) -> f32 {
    let edge = kth - epsilon;
    let lowest = edge - (kth.abs() + epsilon) * 1e-9;
    if !lowest.is_finite() {
        return f32::NEG_INFINITY;
    }
    let rounded = lowest as f32;
    if f64::from(rounded) > lowest {
        rounded.next_down()
    } else {
        rounded
    }
}

/// How many times ε the band of candidates kept around the k-th best so far
/// spans (see [`Candidates`]).
const BAND_MARGIN: f64 = 2.0;

/// Candidates kept before the first letting go, per place selected: at
/// 32,768 tokens the top 1% is 5.4 million pairs, so each thread holds up
/// to 4 × 12 bytes of each (16 times was 1 GB a thread).
const FIRST_BATCH_PER_PLACE: usize = 4;

/// A head's candidates S', taken a row at a time in pair order: all of
/// them, or, for the top-fraction rule, only those that may still weigh (a
/// head's N candidates are T²/2: at 8,192 tokens, 134 MB on each thread).
///
/// Keeping the strongest: once the kept ones are `limit` many, those below
/// the band of the k-th best so far are let go, and later ones below it
/// are never kept. The k-th best of all is at least that k-th, so nothing
/// let go is among the k best; the band is ε of the largest |S'| so far,
/// twice over, so nothing let go ties either unless the largest of all is
/// more than twice that ([`Candidates::keeps_every_weighted`] says whether;
/// if not, the head is taken again with every candidate). A head whose
/// band holds most of its candidates at the first letting go keeps every
/// one from then on (4 bytes a candidate, not 8 and the room to select).
#[derive(Default)]
pub(super) struct Candidates {
    /// Keep the k best (and their band), or every candidate (`None`).
    strongest: Option<usize>,
    /// The kept candidates' S', in pair order.
    pub(super) values: Vec<f32>,
    /// Their pair indices (empty when every candidate is kept).
    pairs: Vec<u32>,
    /// Room to find the k-th best of the kept ones.
    order: Vec<f32>,
    /// Below it a candidate is let go.
    floor: f32,
    /// The largest |S'| of every candidate taken.
    pub(super) largest: f32,
    /// The pair index of the next candidate.
    next: usize,
    /// How many are kept before the next letting go.
    limit: usize,
    /// The head's candidates.
    total: usize,
}

impl Candidates {
    /// Ready for a head of `total` candidates: keep the `strongest` k
    /// (with their band) or every candidate. The buffers are reused, but
    /// no larger than this head starts with (one head's all would
    /// otherwise stay with its thread).
    pub(super) fn begin(&mut self, strongest: Option<usize>, total: usize) {
        self.strongest = strongest;
        self.floor = f32::NEG_INFINITY;
        self.largest = 0.0;
        self.next = 0;
        self.limit = strongest.map_or(usize::MAX, |k| (FIRST_BATCH_PER_PLACE * k).max(1 << 16));
        self.total = total;
        let room = self.limit.min(total);
        for buffer in [&mut self.values, &mut self.order] {
            buffer.clear();
            buffer.shrink_to(room);
        }
        self.pairs.clear();
        self.pairs.shrink_to(room);
        self.values.reserve_exact(room);
    }

    /// The next row's candidates, in pair order.
    #[inline(always)]
    pub(super) fn add(&mut self, row: &[f32]) {
        self.largest = self.largest.max(largest_magnitude(row));
        if self.strongest.is_none() {
            self.values.extend_from_slice(row);
            return;
        }
        let (values, pairs, next) = (&mut self.values, &mut self.pairs, self.next);
        for_each_at_least(row, self.floor, |offset, v| {
            values.push(v);
            pairs.push((next + offset) as u32);
        });
        self.next += row.len();
        if self.values.len() >= self.limit {
            self.let_go();
        }
    }

    /// Lets go of the kept candidates below the band of the k-th best.
    fn let_go(&mut self) {
        let Some(k) = self.strongest.filter(|&k| k > 0 && k < self.values.len()) else {
            return;
        };
        self.order.clear();
        self.order.extend_from_slice(&self.values);
        let kth = *self
            .order
            .select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a))
            .1;
        let floor = band_floor(
            f64::from(kth),
            BAND_MARGIN * TIE_BAND * f64::from(self.largest),
        );
        let first = self.floor == f32::NEG_INFINITY;
        let in_band = self.values.iter().filter(|&&v| v >= floor).count() - k;
        if first && in_band * 3 > self.values.len() - k {
            // A head whose band holds most candidates below the k best (its
            // largest |S'| far above the rest): each kept one would take
            // three times the room of keeping every candidate, and nothing
            // was let go yet.
            self.strongest = None;
            self.pairs = Vec::new();
            self.order = Vec::new();
            self.values.reserve_exact(self.total - self.values.len());
            return;
        }
        if floor > self.floor {
            self.floor = floor;
            let mut kept = 0;
            for at in 0..self.values.len() {
                if self.values[at] >= floor {
                    self.values[kept] = self.values[at];
                    self.pairs[kept] = self.pairs[at];
                    kept += 1;
                }
            }
            self.values.truncate(kept);
            self.pairs.truncate(kept);
        }
        self.limit = self.limit.max(2 * self.values.len());
    }

    /// The pair index of kept candidate `index`.
    #[inline(always)]
    pub(super) fn pair_index(&self, index: usize) -> usize {
        if self.strongest.is_some() {
            self.pairs[index] as usize
        } else {
            index
        }
    }

    /// The k best kept candidates in rank order (indices among the kept),
    /// and the tie rule of the k-th (`None` without candidates).
    pub(super) fn strongest(&self, k: usize, keys: &mut Vec<u64>) -> (Vec<usize>, Option<TieRule>) {
        let best = top_fraction(&self.values, k, keys);
        let rule = best
            .last()
            .map(|&kth| TieRule::with_largest(&self.values, self.values[kth], k, self.largest));
        (best, rule)
    }

    /// Whether every candidate that weighs under `rule` was kept.
    pub(super) fn keeps_every_weighted(&self, rule: &TieRule) -> bool {
        self.floor <= rule.lowest_weighted()
    }
}

/// The largest |v| of the values that are not NaN (0 for none), in 16
/// running maxima (one would be a chain of dependent steps).
#[inline(always)]
fn largest_magnitude(values: &[f32]) -> f32 {
    let keep_larger = |m: f32, v: f32| {
        let a = v.abs();
        // NaN compares false and is passed over.
        if a > m {
            a
        } else {
            m
        }
    };
    let mut lanes = [0.0f32; 16];
    let chunks = values.chunks_exact(16);
    let rest = chunks
        .remainder()
        .iter()
        .fold(0.0, |m, &v| keep_larger(m, v));
    for chunk in chunks {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            *m = keep_larger(*m, v);
        }
    }
    lanes.into_iter().fold(rest, keep_larger)
}

/// Calls `f(index, value)` for every value ≥ `threshold` (an IEEE
/// comparison: NaN never is), in index order. The values are compared 16
/// at a time, in vector lanes, and only a block with one at least as large
/// is looked at one by one: the rules pass over a few in a thousand.
#[inline(always)]
pub(super) fn for_each_at_least(values: &[f32], threshold: f32, mut f: impl FnMut(usize, f32)) {
    const BLOCK: usize = 16;
    let blocks = values.chunks_exact(BLOCK);
    let rest = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        // A fold, not `any`, so that the compiler does not stop early and
        // compares the whole block at once.
        if block.iter().fold(false, |hit, &v| hit | (v >= threshold)) {
            for (offset, &v) in block.iter().enumerate() {
                if v >= threshold {
                    f(b * BLOCK + offset, v);
                }
            }
        }
    }
    let start = values.len() - rest.len();
    for (offset, &v) in rest.iter().enumerate() {
        if v >= threshold {
            f(start + offset, v);
        }
    }
}

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
#[inline(always)]
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
            for_each_at_least(values, threshold, |p, v| keys.push(rank_key(v, p)));
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
/// in pair order, each pair once (for display). Each row shares its last
/// places by the tie rule; a pair's weight, written to
/// `scratch.pair_weights` (indexed like the candidates), is the larger of
/// its weights from its two rows.
#[inline(always)]
pub(super) fn top_k_per_row(
    doc: &Document,
    (transform, similarity): (&TransformKind, HeadSimilarity),
    k: usize,
    scratch: &mut Scratch,
    block: &mut Vec<f32>,
) -> Vec<(u32, u32)> {
    let c = doc.content.len();
    let k = k.min(c.saturating_sub(1));
    let Scratch {
        row,
        keys,
        pair_weights,
        ..
    } = scratch;
    pair_weights.clear();
    pair_weights.resize(doc.pair_count, 0.0);
    if k == 0 {
        return Vec::new();
    }
    let mut chosen = Vec::with_capacity(c * k);
    let mut partner_values = Vec::with_capacity(c);
    for_each_row(similarity, doc.t, block, |i, raw| {
        if doc.content_index[i] == u32::MAX {
            return;
        }
        row.clear();
        for run in &doc.content_runs {
            transform.extend(i, run.clone(), &raw[run.clone()], row);
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
        let kth = keys[..k].iter().max().map(|&key| key_index(key));
        chosen.extend(keys[..k].iter().map(|&key| {
            let j = key_index(key);
            (i.min(j) as u32, i.max(j) as u32)
        }));
        let partners = || {
            doc.content
                .iter()
                .zip(row.iter())
                .filter(move |&(&j, _)| j != i)
        };
        let kth_value = partners()
            .find(|&(&j, _)| Some(j) == kth)
            .map_or(f32::NAN, |(_, &v)| v);
        partner_values.clear();
        partner_values.extend(partners().map(|(_, &v)| v));
        let rule = TieRule::new(&partner_values, kth_value, k);
        for (&j, &v) in partners() {
            let w = rule.weight(v);
            if w > 0.0 {
                let p = doc.pair_index(i, j);
                pair_weights[p] = pair_weights[p].max(w);
            }
        }
    });
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded values in rows of varied lengths, some far above the rest.
    fn rows_of_values(seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / 16_777_216.0
        };
        (0..400)
            .map(|i| {
                let len = 400 - i;
                (0..len)
                    .map(|_| {
                        let v = next();
                        // Plateaus of equal values, as a flat head gives.
                        if v < 0.2 {
                            0.5
                        } else {
                            v * 3.0 - 1.0
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// What the top-fraction rule makes of kept candidates: the k best as
    /// pair indices, and every weighted candidate with its weight.
    fn selection(candidates: &Candidates, k: usize) -> (Vec<usize>, Vec<(usize, u64)>) {
        let (best, rule) = candidates.strongest(k, &mut Vec::new());
        let rule = rule.expect("candidates");
        assert!(candidates.keeps_every_weighted(&rule));
        let mut weighted = Vec::new();
        for_each_at_least(&candidates.values, rule.lowest_weighted(), |at, v| {
            weighted.push((candidates.pair_index(at), rule.weight(v).to_bits()))
        });
        (
            best.into_iter()
                .map(|at| candidates.pair_index(at))
                .collect(),
            weighted,
        )
    }

    /// Keeping only the strongest candidates selects what keeping every one
    /// does, to the bit, whatever k (ties at a plateau included).
    #[test]
    fn the_strongest_kept_select_what_all_do() {
        for (seed, k) in [(1, 1), (2, 80), (3, 800), (4, 8_000), (5, 40_000)] {
            let rows = rows_of_values(seed);
            let n_all = rows.iter().map(Vec::len).sum();
            let mut strongest = Candidates::default();
            strongest.begin(Some(k), n_all);
            let mut all = Candidates::default();
            all.begin(None, n_all);
            for row in &rows {
                strongest.add(row);
                all.add(row);
            }
            let n: usize = rows.iter().map(Vec::len).sum();
            assert_eq!(all.values.len(), n);
            assert!(
                strongest.values.len() < n || FIRST_BATCH_PER_PLACE * k >= n,
                "k = {k}: some let go"
            );
            assert_eq!(selection(&strongest, k), selection(&all, k), "k = {k}");
        }
    }

    /// A largest |S'| that comes late and widens the band past what was let
    /// go is told, so that the head is taken again with every candidate.
    #[test]
    fn a_late_widening_of_the_band_is_told() {
        let mut rows = rows_of_values(7);
        rows.push(vec![-1e6]);
        let mut strongest = Candidates::default();
        strongest.begin(Some(100), rows.iter().map(Vec::len).sum());
        for row in &rows {
            strongest.add(row);
        }
        let rule = strongest
            .strongest(100, &mut Vec::new())
            .1
            .expect("candidates");
        assert!(!strongest.keeps_every_weighted(&rule));
    }

    #[test]
    fn the_skip_bound_passes_over_only_candidates_of_weight_zero() {
        // Values on and around the band's edges, in f32 steps, for a
        // positive, a negative and a zero k-th value; NaN and ∞ among them.
        for kth in [0.37f32, -2.5, 0.0] {
            let mut values = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1000.0];
            let epsilon = (TIE_BAND * 1000.0) as f32;
            for edge in [kth - epsilon, kth, kth + epsilon] {
                let mut v = edge;
                for _ in 0..40 {
                    v = v.next_down();
                }
                for _ in 0..80 {
                    values.push(v);
                    v = v.next_up();
                }
            }
            let finite: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();
            assert_eq!(largest_magnitude(&values[1..]), f32::INFINITY);
            assert_eq!(largest_magnitude(&finite), 1000.0);
            // k large enough that the tied values share places.
            let rule = TieRule::new(&finite, kth, finite.len() - 1);
            let lowest = rule.lowest_weighted();
            let mut weighed_below_kth = 0;
            for v in finite {
                if rule.weight(v) > 0.0 {
                    assert!(v >= lowest, "{v} weighs {} below {lowest}", rule.weight(v));
                    weighed_below_kth += usize::from(v < kth);
                }
            }
            assert!(weighed_below_kth > 30, "the lower edge is in the band");
            assert!(rule.weight(lowest.next_down()) == 0.0);
        }
        assert_eq!(largest_magnitude(&[f32::NAN, -3.0, 2.0]), 3.0);
        assert_eq!(largest_magnitude(&[]), 0.0);
    }

    #[test]
    fn for_each_at_least_finds_what_a_plain_filter_finds() {
        // Hits in the first and last place of a block, in the rest after
        // the last whole block, NaN and −0 among the values.
        let mut values: Vec<f32> = (0..16 * 3 + 5).map(|i| (i % 7) as f32 - 3.0).collect();
        values[0] = 9.0;
        values[15] = 9.0;
        values[16 * 3 + 4] = 9.0;
        values[20] = f32::NAN;
        values[21] = -0.0;
        for threshold in [9.0, 2.0, 0.0, -3.0, 10.0, f32::NAN] {
            let mut found = Vec::new();
            for_each_at_least(&values, threshold, |p, v| found.push((p, v.to_bits())));
            let expected: Vec<(usize, u32)> = (values.iter().enumerate())
                .filter(|&(_, &v)| v >= threshold)
                .map(|(p, v)| (p, v.to_bits()))
                .collect();
            assert_eq!(found, expected, "threshold {threshold}");
        }
    }

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
