//! The pair selection rules (ANALYSIS.md §3): the top fraction, without
//! sorting every pair, and the top k per row; in both, pairs within ε of
//! the k-th value tie and share the last places ([`TieRule`]), so that a
//! head whose S is flat to float noise selects all its candidates evenly
//! instead of an order that noise decides.

use super::similarity::{for_each_row, TransformKind};
use super::{Document, Scratch, TieShare};
use crate::captures::HeadSimilarity;
use crate::kernels::widest::widest;

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
        let mut places = PlaceCounts::new(kth, largest);
        for_each_at_least(values, places.floor(), |_, v| places.add(v));
        places.rule(k)
    }

    /// The rule for selecting `k` whose k-th best is `kth`, `above` of the
    /// candidates above its band and `tied` in it.
    fn from_counts(kth: f64, epsilon: f64, k: usize, above: usize, tied: usize) -> Self {
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

    /// Where a candidate of value `v` lies for a k-th value `kth` and a band
    /// `epsilon`: as [`TieRule::weight`] tells, with the same comparisons.
    #[inline(always)]
    fn place(kth: f64, epsilon: f64, v: f32) -> Place {
        let v = f64::from(v);
        if v > kth + epsilon {
            Place::Above
        } else if (v - kth).abs() <= epsilon {
            Place::Tied
        } else {
            Place::Below
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
        match Self::place(self.kth, self.epsilon, v) {
            Place::Above => 1.0,
            Place::Tied => self.share.weight,
            Place::Below => 0.0,
        }
    }
}

/// The candidates' places under the tie rule of a k-th value, counted
/// from those at or above [`PlaceCounts::floor`] alone: the others lie
/// below its band and add to neither count. They are a few in a thousand,
/// and one f32 comparison passes over the others, where the place of every
/// candidate in f64 took a tenth of the figures.
pub(super) struct PlaceCounts {
    kth: f64,
    epsilon: f64,
    by_place: [usize; 3],
}

impl PlaceCounts {
    /// For the k-th value `kth` among candidates whose largest |S'| is
    /// `largest`.
    #[inline(always)]
    pub(super) fn new(kth: f32, largest: f32) -> Self {
        Self {
            kth: f64::from(kth),
            // Widening is exact and keeps the order: the largest |v| in
            // f32 is the largest in f64.
            epsilon: TIE_BAND * f64::from(largest),
            by_place: [0; 3],
        }
    }

    /// The candidates below it lie below the band.
    #[inline(always)]
    pub(super) fn floor(&self) -> f32 {
        band_floor(self.kth, self.epsilon)
    }

    #[inline(always)]
    pub(super) fn add(&mut self, v: f32) {
        self.by_place[TieRule::place(self.kth, self.epsilon, v) as usize] += 1;
    }

    /// The rule for selecting `k`.
    #[inline(always)]
    pub(super) fn rule(self, k: usize) -> TieRule {
        let (above, tied) = (
            self.by_place[Place::Above as usize],
            self.by_place[Place::Tied as usize],
        );
        TieRule::from_counts(self.kth, self.epsilon, k, above, tied)
    }
}

/// A candidate's place under the tie rule: above the k-th value's band (it
/// weighs 1), in it (it shares the last places) or below (0). Along the
/// values it only rises.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Below,
    Tied,
    Above,
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

/// Above this many candidates, a head whose band of ties holds most of
/// them is not kept whole (4 bytes a candidate: 2 GB a thread at 32,768
/// tokens) but counted ([`Candidates::select_counted`]).
const KEPT_WHOLE_AT_MOST: usize = 1 << 24;

/// At most this many candidates a head keeps every one of from the start
/// (1 MB a thread), where the top-fraction rule would keep only the
/// strongest: letting go of the weakest sorts and compacts 65,536 at a
/// time, which cost more than selecting once among all of them (at 500
/// tokens, 14% of BERT-base's figures).
const KEPT_WHOLE_UP_TO: usize = 1 << 18;

/// The counts of the candidates' ranks ([`rank_of`]) by their upper 16
/// bits: 256 KB, so that counting stays in a core's cache.
const RANK_BUCKETS: usize = 1 << 16;

/// The buckets on each side of the k-th value's whose ranks are counted to
/// the last bit on the second pass: the band's edges lie there unless the
/// largest |S'| is far above the k-th value (ε is a thousandth of it, a
/// bucket an 128th of its values' size).
const NEAR_BUCKETS: usize = 2;

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
/// Past [`KEPT_WHOLE_AT_MOST`] candidates, such a head, and one whose band
/// holds more than the room kept (its largest |S'| far above the k-th),
/// only counts their ranks instead, and the selection takes the candidates
/// again (see [`Candidates::select_counted`]): the room stays that of the
/// first letting go.
pub(super) struct Candidates {
    /// Keep the k best (and their band), or every candidate (`None`).
    strongest: Option<usize>,
    /// The kept candidates' S', in pair order.
    pub(super) values: Vec<f32>,
    /// Their pair indices (empty when every candidate is kept).
    pairs: Vec<u32>,
    /// Room to find the k-th best of the kept ones.
    order: Vec<f32>,
    /// What [`Candidates::strongest`] last gathered as may be among the k
    /// best (its survivors), as rank keys in pair order, and a value at or
    /// above which every kept candidate is among them (+∞ before).
    gathered: Vec<u64>,
    gathered_floor: f32,
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
    /// Counting instead of keeping: the candidates per rank bucket
    /// ([`RANK_BUCKETS`]); empty when keeping.
    counts: Vec<u32>,
    /// [`KEPT_WHOLE_AT_MOST`], lower in tests.
    kept_whole_at_most: usize,
}

impl Default for Candidates {
    fn default() -> Self {
        Self {
            strongest: None,
            values: Vec::new(),
            pairs: Vec::new(),
            order: Vec::new(),
            gathered: Vec::new(),
            gathered_floor: f32::INFINITY,
            floor: f32::NEG_INFINITY,
            largest: 0.0,
            next: 0,
            limit: 0,
            total: 0,
            counts: Vec::new(),
            kept_whole_at_most: KEPT_WHOLE_AT_MOST,
        }
    }
}

impl Candidates {
    /// Ready for a head of `total` candidates: keep the `strongest` k
    /// (with their band) or every candidate. The buffers are reused, but
    /// no larger than this head starts with (one head's all would
    /// otherwise stay with its thread).
    pub(super) fn begin(&mut self, strongest: Option<usize>, total: usize) {
        self.strongest = strongest;
        self.gathered.clear();
        self.gathered_floor = f32::INFINITY;
        self.floor = f32::NEG_INFINITY;
        self.largest = 0.0;
        self.next = 0;
        self.limit = strongest.map_or(usize::MAX, |k| (FIRST_BATCH_PER_PLACE * k).max(1 << 16));
        self.total = total;
        self.counts.clear();
        let room = self.limit.min(total);
        for buffer in [&mut self.values, &mut self.order] {
            buffer.clear();
            buffer.shrink_to(room);
        }
        self.pairs.clear();
        self.pairs.shrink_to(room);
        self.values.reserve_exact(room);
    }

    /// Candidates that count any head past `limit` whose band holds most of
    /// them.
    #[cfg(test)]
    pub(super) fn keeping_whole_at_most(limit: usize) -> Self {
        Self {
            kept_whole_at_most: limit,
            ..Self::default()
        }
    }

    /// Ready for a head of `total` candidates whose `k` best are selected by
    /// counting ([`Candidates::select_counted`]).
    pub(super) fn begin_counting(&mut self, k: usize, total: usize) {
        self.begin(Some(k), total);
        self.start_counting();
    }

    /// Whether every one of `total` candidates may be kept.
    pub(super) fn may_keep_whole(&self, total: usize) -> bool {
        total <= self.kept_whole_at_most
    }

    /// Whether a head of `total` candidates keeps every one from the
    /// start, where the top-fraction rule would let the weakest go
    /// ([`KEPT_WHOLE_UP_TO`]).
    pub(super) fn keeps_whole_from_start(&self, total: usize) -> bool {
        total <= KEPT_WHOLE_UP_TO.min(self.kept_whole_at_most)
    }

    /// Every one of a head's `total` candidates in pair order, where they
    /// were all kept (none let go, none only counted).
    pub(super) fn every_one(&self, total: usize) -> Option<&[f32]> {
        (self.strongest.is_none() && !self.counted() && self.values.len() == total)
            .then_some(self.values.as_slice())
    }

    /// The kept candidates' values, `spare` (emptied) kept in their place
    /// for the next head.
    pub(super) fn swap_values(&mut self, mut spare: Vec<f32>) -> Vec<f32> {
        spare.clear();
        std::mem::replace(&mut self.values, spare)
    }

    /// Whether the candidates are counted, not kept.
    pub(super) fn counted(&self) -> bool {
        !self.counts.is_empty()
    }

    /// From now on, count the candidates' ranks; the kept ones are counted
    /// and let go.
    fn start_counting(&mut self) {
        self.counts = vec![0; RANK_BUCKETS];
        count_ranks(&mut self.counts, &self.values);
        self.values = Vec::new();
        self.pairs = Vec::new();
        self.order = Vec::new();
    }

    /// Every candidate, where every one is kept (no strongest, not
    /// counted): `fill` appends them to the kept values in pair order,
    /// straight where they are kept rather than a row at a time through
    /// [`Candidates::add`], and returns their largest |S'|.
    #[inline(always)]
    pub(super) fn fill_every_one(&mut self, fill: impl FnOnce(&mut Vec<f32>) -> f32) {
        assert!(
            self.strongest.is_none() && !self.counted(),
            "only candidates that keep every one are filled"
        );
        self.gathered_floor = f32::INFINITY;
        let largest = fill(&mut self.values);
        self.largest = self.largest.max(largest);
    }

    /// The next row's candidates, in pair order.
    #[inline(always)]
    pub(super) fn add(&mut self, row: &[f32]) {
        // What `strongest` gathered no longer holds every candidate.
        self.gathered_floor = f32::INFINITY;
        self.largest = self.largest.max(largest_magnitude(row));
        if self.counted() {
            count_ranks(&mut self.counts, row);
            return;
        }
        if self.strongest.is_none() {
            self.values.extend_from_slice(row);
            return;
        }
        let (values, pairs, next) = (&mut self.values, &mut self.pairs, self.next);
        // Before the first letting go every candidate but NaN is kept (the
        // analysis's S' has none): copied whole, not pushed one by one. A
        // fold, not `any`, compares the whole row in vector lanes.
        if self.floor == f32::NEG_INFINITY && !row.iter().fold(false, |nan, v| nan | v.is_nan()) {
            values.extend_from_slice(row);
            pairs.extend(next as u32..(next + row.len()) as u32);
        } else {
            for_each_at_least(row, self.floor, |offset, v| {
                values.push(v);
                pairs.push((next + offset) as u32);
            });
        }
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
        let kth = kth_best(&self.values, k, &mut self.order);
        let floor = band_floor(
            f64::from(kth),
            BAND_MARGIN * TIE_BAND * f64::from(self.largest),
        );
        let first = self.floor == f32::NEG_INFINITY;
        let in_band = self.values.iter().filter(|&&v| v >= floor).count() - k;
        // A head whose band holds most candidates below the k best (its
        // largest |S'| far above the rest): each kept one would take three
        // times the room of keeping every candidate.
        let flat = first && in_band * 3 > self.values.len() - k;
        // Or whose band holds more than the room kept for it, which would
        // grow with the head's candidates.
        let kept = if floor > self.floor {
            k + in_band
        } else {
            self.values.len()
        };
        if (flat || 2 * kept > self.limit) && !self.may_keep_whole(self.total) {
            // Those let go so far stay let go: the selection tells whether
            // one of them might weigh.
            self.start_counting();
            return;
        }
        if flat {
            // Nothing was let go yet.
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

    /// How many of the k best there are among the kept candidates, with
    /// `list` those in rank order (indices among the kept; else none, as a
    /// head that keeps only their number needs: sorting them took a second
    /// a head at 32,768 tokens), and the tie rule of the k-th (`None`
    /// without candidates).
    pub(super) fn strongest(
        &mut self,
        k: usize,
        keys: &mut Vec<u64>,
        list: bool,
    ) -> (usize, Vec<usize>, Option<TieRule>) {
        strongest_widest(self, k, keys, list)
    }

    #[inline(always)]
    fn strongest_body(
        &mut self,
        k: usize,
        keys: &mut Vec<u64>,
        list: bool,
    ) -> (usize, Vec<usize>, Option<TieRule>) {
        let (found, floor) = gather_best(&self.values, k, keys, &mut self.gathered);
        self.gathered_floor = floor;
        let best = &mut keys[..found];
        let rule = best.iter().max().map(|&kth| {
            let mut places = PlaceCounts::new(self.values[key_index(kth)], self.largest);
            self.for_each_at_least(places.floor(), |_, v| places.add(v));
            places.rule(k)
        });
        let listed = if list {
            best.sort_unstable();
            best.iter().map(|&key| key_index(key)).collect()
        } else {
            Vec::new()
        };
        (found, listed, rule)
    }

    /// Calls `f(index, value)` for every kept candidate at least
    /// `threshold`, in pair order (as [`for_each_at_least`] over the kept
    /// values): from those [`Candidates::strongest`] gathered where they
    /// hold every one (a few in a thousand, where a pass over all of them
    /// read 4 bytes a candidate again), else from all.
    #[inline(always)]
    pub(super) fn for_each_at_least(&self, threshold: f32, mut f: impl FnMut(usize, f32)) {
        if self.gathered_floor <= threshold {
            for &key in &self.gathered {
                let v = value_of_rank(rank_of_key(key));
                // −0 comes back +0, which compares the same.
                if v >= threshold {
                    f(key_index(key), v);
                }
            }
        } else {
            for_each_at_least(&self.values, threshold, f);
        }
    }

    /// Whether every candidate that weighs under `rule` was kept.
    pub(super) fn keeps_every_weighted(&self, rule: &TieRule) -> bool {
        self.floor <= rule.lowest_weighted()
    }

    /// The top-fraction rule over counted candidates, the same selection
    /// and weights as over every candidate kept, from two more passes over
    /// them (`rows` hands them over again in pair order, as the first
    /// time): one counts the ranks near the k-th's bucket to the last bit,
    /// which gives the k-th value and, from every bucket's count, how many
    /// lie above its band and in it (a third pass counts those where an
    /// edge of the band falls in a bucket not counted to the bit); the
    /// last hands `add` each candidate that may weigh, its pair index and
    /// its weight, in pair order, and, with `keep_best`, returns the k best
    /// pair indices in rank order. With the tie rule of the k-th (`None`
    /// without candidates).
    pub(super) fn select_counted(
        &self,
        k: usize,
        keep_best: bool,
        mut rows: impl FnMut(&mut dyn FnMut(&[f32])),
        mut add: impl FnMut(usize, f64),
    ) -> (Option<Vec<usize>>, Option<TieRule>) {
        let counts = &self.counts;
        let k = k.min(self.total);
        if k == 0 {
            return (keep_best.then(Vec::new), None);
        }
        // The bucket of the k-th best, and how many rank before it.
        let (mut bucket, mut before) = (0, 0usize);
        while before + (counts[bucket] as usize) < k {
            before += counts[bucket] as usize;
            bucket += 1;
        }
        let near =
            bucket.saturating_sub(NEAR_BUCKETS)..(bucket + NEAR_BUCKETS + 1).min(RANK_BUCKETS);
        let mut near_counts = vec![0u32; near.len() * RANK_BUCKETS];
        rows(&mut |row| {
            for &v in row {
                let rank = rank_of(v) as usize;
                let (upper, lower) = (rank / RANK_BUCKETS, rank % RANK_BUCKETS);
                if near.contains(&upper) {
                    near_counts[(upper - near.start) * RANK_BUCKETS + lower] += 1;
                }
            }
        });
        let counted_near = |rank: usize| near_counts[rank - near.start * RANK_BUCKETS];
        let mut kth_rank = bucket * RANK_BUCKETS;
        while before + (counted_near(kth_rank) as usize) < k {
            before += counted_near(kth_rank) as usize;
            kth_rank += 1;
        }
        // `before` now ranks above the k-th's rank: the k best are they and
        // the first `k − before` of its rank in pair order.
        let mut places = PlaceCounts::new(value_of_rank(kth_rank as u32), self.largest);
        let (kth, epsilon, floor) = (places.kth, places.epsilon, places.floor());
        // The counts lack the candidates let go before counting began, all
        // below `floor`: told apart unless the band reaches below it.
        let told = if self.floor <= floor {
            let place = |v: f32| TieRule::place(kth, epsilon, v);
            places_from_counts(counts, near.clone(), &counted_near, place)
        } else {
            None
        };
        match told {
            Some(by_place) => places.by_place = by_place,
            None => rows(&mut |row| for_each_at_least(row, floor, |_, v| places.add(v))),
        }
        let rule = places.rule(k);
        let lowest = rule.lowest_weighted();
        let (mut best, mut of_kth_rank, mut next) = (Vec::new(), k - before, 0usize);
        rows(&mut |row| {
            for_each_at_least(row, lowest, |offset, v| add(next + offset, rule.weight(v)));
            if keep_best {
                let mut take = |offset: usize, v: f32| {
                    let rank = rank_of(v) as usize;
                    if rank < kth_rank || (rank == kth_rank && of_kth_rank > 0) {
                        of_kth_rank -= usize::from(rank == kth_rank);
                        best.push(rank_key(v, next + offset));
                    }
                };
                if kth.is_nan() {
                    row.iter()
                        .enumerate()
                        .for_each(|(offset, &v)| take(offset, v));
                } else {
                    // Every rank at least as good as the k-th's is ≥ it.
                    for_each_at_least(row, kth as f32, take);
                }
            }
            next += row.len();
        });
        let best = keep_best.then(|| {
            best.sort_unstable();
            best.into_iter().map(key_index).collect()
        });
        (best, Some(rule))
    }
}

/// How many counted candidates lie below, in and above the band (by
/// [`Place`]): a bucket's count where its largest and smallest values have
/// one place (a place rises with the value), rank by rank in the buckets
/// `near` the k-th's (`counted_near` of a rank); `None` where an edge of
/// the band falls in a bucket counted only whole.
fn places_from_counts(
    counts: &[u32],
    near: std::ops::Range<usize>,
    counted_near: &impl Fn(usize) -> u32,
    place: impl Fn(f32) -> Place,
) -> Option<[usize; 3]> {
    let mut by_place = [0usize; 3];
    for (upper, &count) in counts.iter().enumerate() {
        if count == 0 || upper == RANK_BUCKETS - 1 {
            // The last bucket's ranks are NaN's alone: below, untied.
            continue;
        }
        if near.contains(&upper) {
            for rank in upper * RANK_BUCKETS..(upper + 1) * RANK_BUCKETS {
                by_place[place(value_of_rank(rank as u32)) as usize] += counted_near(rank) as usize;
            }
            continue;
        }
        let (high, low) = (
            value_of_rank((upper * RANK_BUCKETS) as u32),
            value_of_rank(((upper + 1) * RANK_BUCKETS - 1) as u32),
        );
        if high.is_nan() || low.is_nan() || place(high) != place(low) {
            return None;
        }
        by_place[place(high) as usize] += count as usize;
    }
    Some(by_place)
}

/// Counts each value's rank in its bucket.
#[inline(always)]
fn count_ranks(counts: &mut [u32], values: &[f32]) {
    for &v in values {
        counts[rank_of(v) as usize / RANK_BUCKETS] += 1;
    }
}

/// A value's place in the ranking, smaller first (the upper half of
/// [`rank_key`]: larger value first, −0 as +0, NaN last).
#[inline(always)]
fn rank_of(v: f32) -> u32 {
    rank_of_key(rank_key(v, 0))
}

/// The rank of a [`rank_key`]'s value.
#[inline(always)]
fn rank_of_key(key: u64) -> u32 {
    (key >> 32) as u32
}

/// The value of rank `rank` (+0 for zero's; NaN for the ranks no value
/// has).
#[inline(always)]
fn value_of_rank(rank: u32) -> f32 {
    let ascending = !rank;
    f32::from_bits(if ascending & 0x8000_0000 != 0 {
        ascending & 0x7fff_ffff
    } else {
        !ascending
    })
}

/// The largest |v| of the values that are not NaN (0 for none), in 16
/// running maxima (one would be a chain of dependent steps).
#[inline(always)]
pub(super) fn largest_magnitude(values: &[f32]) -> f32 {
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
/// comparison: NaN never is), in index order. The rules pass over a few
/// in a thousand, and most blocks of 16 hold none: the values are compared
/// 16 at a time into a mask of the block's hits, and only those are
/// visited. In AVX2's lanes where the CPU has them (also the closure's
/// code): the portable loop compiled to scalar steps where a block holds a
/// hit, and took a tenth of the figures.
#[inline(always)]
pub(super) fn for_each_at_least(values: &[f32], threshold: f32, mut f: impl FnMut(usize, f32)) {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::has_avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { for_each_at_least_avx2(values, threshold, &mut f) };
        return;
    }
    for_each_at_least_portable(values, threshold, f);
}

/// [`for_each_at_least`] in plain code.
#[inline(always)]
fn for_each_at_least_portable(values: &[f32], threshold: f32, mut f: impl FnMut(usize, f32)) {
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

/// [`for_each_at_least`] in AVX2's lanes: each block's hits as a mask,
/// visited lowest first.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn for_each_at_least_avx2(values: &[f32], threshold: f32, f: &mut impl FnMut(usize, f32)) {
    use std::arch::x86_64::_CMP_GE_OQ;
    use std::arch::x86_64::{_mm256_cmp_ps, _mm256_loadu_ps, _mm256_movemask_ps, _mm256_set1_ps};
    const BLOCK: usize = 16;
    let floor = _mm256_set1_ps(threshold);
    let blocks = values.chunks_exact(BLOCK);
    let rest = blocks.remainder();
    for (b, block) in blocks.enumerate() {
        // SAFETY: the block holds 16 floats, two loads of 8.
        let (low, high) = unsafe {
            (
                _mm256_loadu_ps(block.as_ptr()),
                _mm256_loadu_ps(block.as_ptr().add(8)),
            )
        };
        // Ordered comparisons: NaN is never at least the threshold.
        let mut hits = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(low, floor)) as u32
            | (_mm256_movemask_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(high, floor)) as u32) << 8;
        while hits != 0 {
            let offset = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            f(b * BLOCK + offset, block[offset]);
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

/// A cheap threshold below which the k best of `values` (k ≥ 1) most
/// likely do not lie, from a strided sample: it usually leaves only a few
/// times k survivors. Every value at least as good as it survives (IEEE
/// comparison: ties and −0/+0 included, NaN, which ranks last, not), so
/// when at least k do, the k best are among them. `None` where the values
/// are too few to sample.
fn sampled_threshold(values: &[f32], k: usize) -> Option<f32> {
    let stride = (values.len() / 4096).max(1);
    if stride == 1 {
        return None;
    }
    let mut sample: Vec<f32> = values
        .iter()
        .step_by(stride)
        .copied()
        .filter(|v| !v.is_nan())
        .collect();
    let rank = ((k as f64 / values.len() as f64) * sample.len() as f64 * 2.0) as usize + 8;
    (rank < sample.len()).then(|| *sample.select_nth_unstable_by(rank, |a, b| b.total_cmp(a)).1)
}

/// Leaves in `out`, in order, what may be among the k best of `values`
/// (k ≥ 1), each made by `make` from its index and value: the survivors of
/// [`sampled_threshold`] where at least k survive, else every value.
/// Returns a value at or above which every value is among them (−∞
/// where they are every value).
#[inline(always)]
fn survivors<T>(values: &[f32], k: usize, out: &mut Vec<T>, make: impl Fn(usize, f32) -> T) -> f32 {
    out.clear();
    if let Some(threshold) = sampled_threshold(values, k) {
        for_each_at_least(values, threshold, |p, v| out.push(make(p, v)));
        if out.len() >= k {
            return threshold;
        }
        out.clear();
    }
    out.extend(values.iter().enumerate().map(|(p, &v)| make(p, v)));
    f32::NEG_INFINITY
}

/// The k-th best of `values` (1 ≤ k ≤ their number) in descending total
/// order, selected among their [`survivors`] (the k-th best of those is
/// every value's); `order` is room for them.
fn kth_best(values: &[f32], k: usize, order: &mut Vec<f32>) -> f32 {
    survivors(values, k, order, |_, v| v);
    *order.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a)).1
}

widest! {
    /// [`Candidates::strongest`] in the CPU's widest vectors: its passes
    /// over every candidate count and compare in them (integer counts, so
    /// the same on every CPU).
    fn strongest_widest(
        candidates: &mut Candidates,
        k: usize,
        keys: &mut Vec<u64>,
        list: bool,
    ) -> (usize, Vec<usize>, Option<TieRule>) = Candidates::strongest_body;
}

/// Leaves in `keys[..k]` the rank keys of the k best values, in no order,
/// and returns k (at most the number of values); sorted, they are the
/// indices numpy's `np.lexsort((np.arange(n), -v))[:k]` gives, without
/// sorting all n. Leaves in `gathered` the rank keys of the [`survivors`]
/// it selected among, in order, and returns their floor too.
#[inline(always)]
fn gather_best(
    values: &[f32],
    k: usize,
    keys: &mut Vec<u64>,
    gathered: &mut Vec<u64>,
) -> (usize, f32) {
    let k = k.min(values.len());
    keys.clear();
    gathered.clear();
    if k == 0 {
        return (0, f32::INFINITY);
    }
    let floor = survivors(values, k, keys, |p, v| rank_key(v, p));
    gathered.extend_from_slice(keys);
    if k < keys.len() {
        keys.select_nth_unstable(k - 1);
    }
    (k, floor)
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

    /// The k best pair indices in rank order, and every weighted
    /// candidate's pair index with its weight's bits.
    type Selected = (Vec<usize>, Vec<(usize, u64)>);

    /// What the top-fraction rule makes of kept candidates: the k best as
    /// pair indices, and every weighted candidate with its weight.
    fn selection(candidates: &mut Candidates, k: usize) -> Selected {
        let (found, best, rule) = candidates.strongest(k, &mut Vec::new(), true);
        assert_eq!(found, best.len());
        let rule = rule.expect("candidates");
        assert!(candidates.keeps_every_weighted(&rule));
        let mut weighted = Vec::new();
        candidates.for_each_at_least(rule.lowest_weighted(), |at, v| {
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
            assert_eq!(
                selection(&mut strongest, k),
                selection(&mut all, k),
                "k = {k}"
            );
        }
    }

    /// What the top-fraction rule makes of counted candidates, as
    /// [`selection`] tells it, and how many times the rows were taken again.
    fn counted_selection(
        candidates: &Candidates,
        rows: &[Vec<f32>],
        k: usize,
    ) -> (Selected, usize) {
        assert!(candidates.counted());
        let mut passes = 0;
        let mut weighted = Vec::new();
        let (best, rule) = candidates.select_counted(
            k,
            true,
            |take| {
                passes += 1;
                rows.iter().for_each(|row| take(row));
            },
            |pair, weight| weighted.push((pair, weight.to_bits())),
        );
        assert!(rule.is_some());
        ((best.expect("kept"), weighted), passes)
    }

    /// The seeded rows with a few values that rank apart: NaN, −0 and +0,
    /// and (`extremes`) ±∞.
    fn rows_with_specials(seed: u64, extremes: bool) -> Vec<Vec<f32>> {
        let mut rows = rows_of_values(seed);
        rows[3][0] = f32::NAN;
        rows[5][1] = -0.0;
        rows[9][2] = 0.0;
        if extremes {
            rows[11][0] = f32::INFINITY;
            rows[12][0] = f32::NEG_INFINITY;
        }
        rows
    }

    /// Counting the candidates' ranks selects what keeping every one does,
    /// to the bit: the k best in rank order and every weight (ties at a
    /// plateau, NaN, −0 and ±∞ included), from two more passes, or three
    /// where a band's edge falls in a bucket not counted to the bit.
    #[test]
    fn counting_selects_what_keeping_every_one_does() {
        for (seed, k, extremes) in [
            (1, 1, false),
            (2, 80, false),
            (3, 800, true),
            (4, 8_000, false),
            (5, 40_000, false),
            (6, 79_000, true),
            (7, 80_200, false),
        ] {
            let rows = rows_with_specials(seed, extremes);
            let n = rows.iter().map(Vec::len).sum();
            let mut all = Candidates::default();
            all.begin(None, n);
            let mut counted = Candidates::default();
            counted.begin_counting(k, n);
            for row in &rows {
                all.add(row);
                counted.add(row);
            }
            let (selected, passes) = counted_selection(&counted, &rows, k);
            assert_eq!(selected, selection(&mut all, k), "k = {k}");
            assert_eq!(passes, if extremes { 3 } else { 2 }, "k = {k}");
            let (best, _) = counted.select_counted(
                k,
                false,
                |take| rows.iter().for_each(|row| take(row)),
                |_, _| (),
            );
            assert!(best.is_none());
        }
    }

    /// A head whose band holds most of its candidates, more than a thread
    /// keeps whole, is counted from the first letting go on, and selects
    /// what keeping every one does.
    #[test]
    fn a_long_flat_head_is_counted() {
        let mut state = 99u64;
        // Values within a ten-thousandth of 1: the band (a thousandth of
        // the largest) holds all of them.
        let rows: Vec<Vec<f32>> = (0..600)
            .map(|i| {
                (0..600 - i)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        1.0 + ((state >> 40) % 100) as f32 * 1e-6
                    })
                    .collect()
            })
            .collect();
        let n = rows.iter().map(Vec::len).sum();
        let k = n / 100;
        let mut all = Candidates::default();
        all.begin(None, n);
        let mut counted = Candidates {
            kept_whole_at_most: n / 2,
            ..Candidates::default()
        };
        counted.begin(Some(k), n);
        for row in &rows {
            all.add(row);
            counted.add(row);
        }
        assert!(counted.values.is_empty());
        let (selected, passes) = counted_selection(&counted, &rows, k);
        assert_eq!(passes, 2);
        let expected = selection(&mut all, k);
        assert!(expected.1.len() > n / 2, "most candidates tie");
        assert_eq!(selected, expected);
    }

    /// A band that widens after some candidates were let go (a large |S'|
    /// comes late) crowds the room kept: the head is counted from then on,
    /// and the selection tells the candidates let go before apart again,
    /// taking them all a third time.
    #[test]
    fn a_band_widened_late_is_counted() {
        let mut state = 5u64;
        // Rising along the rows, so that later rows pass the floor and
        // the kept ones are let go again and again.
        let mut rows: Vec<Vec<f32>> = (0..1000)
            .map(|i| {
                (0..500)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        i as f32 / 100.0 + (state >> 40) as f32 / 16_777_216.0
                    })
                    .collect()
            })
            .collect();
        // Its band, 2 wide, holds every candidate.
        rows[700][3] = 1000.0;
        let n = rows.iter().map(Vec::len).sum();
        let k = 1000;
        let mut all = Candidates::default();
        all.begin(None, n);
        let mut counted = Candidates::keeping_whole_at_most(n / 2);
        counted.begin(Some(k), n);
        for (i, row) in rows.iter().enumerate() {
            all.add(row);
            counted.add(row);
            // Counted from the first letting go after it.
            assert!(i >= 700 || !counted.counted(), "row {i}");
        }
        assert!(counted.counted());
        assert!(counted.floor > f32::NEG_INFINITY, "some were let go");
        let (selected, passes) = counted_selection(&counted, &rows, k);
        assert_eq!(passes, 3);
        assert_eq!(selected, selection(&mut all, k));
    }

    #[test]
    fn value_of_rank_undoes_rank_of() {
        for v in [
            1.5f32,
            -2.25,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -1e-40,
        ] {
            assert_eq!(value_of_rank(rank_of(v)).to_bits(), v.to_bits());
        }
        assert_eq!(value_of_rank(rank_of(-0.0)).to_bits(), 0.0f32.to_bits());
        assert!(value_of_rank(rank_of(f32::NAN)).is_nan());
        assert_eq!(rank_of(f32::NAN), u32::MAX);
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
            .strongest(100, &mut Vec::new(), false)
            .2
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

    /// After `strongest`, the kept candidates at least a threshold are
    /// those of all the values, in the same order, from the survivors it
    /// gathered or from every value, whatever the threshold.
    #[test]
    fn the_gathered_candidates_are_those_of_every_value() {
        for (seed, k) in [(1, 1), (2, 80), (3, 800), (4, 8_000)] {
            let rows = rows_of_values(seed);
            let mut all = Candidates::default();
            all.begin(None, rows.iter().map(Vec::len).sum());
            for row in &rows {
                all.add(row);
            }
            let (_, best, rule) = all.strongest(k, &mut Vec::new(), true);
            let rule = rule.expect("candidates");
            assert!(
                all.gathered_floor <= rule.lowest_weighted(),
                "k = {k}: the survivors hold the band"
            );
            let kth = all.values[best[best.len() - 1]];
            for threshold in [rule.lowest_weighted(), kth, kth.next_down(), f32::MIN, 1e9] {
                let (mut found, mut expected) = (Vec::new(), Vec::new());
                all.for_each_at_least(threshold, |p, v| found.push((p, v)));
                for_each_at_least(&all.values, threshold, |p, v| expected.push((p, v)));
                assert_eq!(found, expected, "k = {k}, threshold {threshold}");
            }
        }
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
            let expected: Vec<(usize, u32)> = (values.iter().enumerate())
                .filter(|&(_, &v)| v >= threshold)
                .map(|(p, v)| (p, v.to_bits()))
                .collect();
            let mut found = Vec::new();
            for_each_at_least(&values, threshold, |p, v| found.push((p, v.to_bits())));
            assert_eq!(found, expected, "threshold {threshold}");
            found.clear();
            for_each_at_least_portable(&values, threshold, |p, v| found.push((p, v.to_bits())));
            assert_eq!(found, expected, "portable, threshold {threshold}");
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
    fn the_k_best_match_full_sort_with_ties() {
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
        let mut candidates = Candidates::default();
        candidates.begin(None, values.len());
        candidates.add(&values);
        for k in [1, 7, 1000, 5000, 60_000, 100_000] {
            let (found, best, _) = candidates.strongest(k, &mut Vec::new(), true);
            assert_eq!(found, k);
            assert_eq!(best, all[..k].to_vec(), "k = {k}");
        }
    }

    /// The k-th best found among a sample's survivors is the k-th best of
    /// a full selection, ties and signed zeros included.
    #[test]
    fn the_kth_best_of_the_survivors_is_every_values() {
        let mut state = 777u64;
        let values: Vec<f32> = (0..70_000)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((state >> 33) % 50) as f32 - 40.0;
                if v == 0.0 && i % 2 == 1 {
                    -0.0
                } else {
                    v
                }
            })
            .collect();
        let mut sorted = values.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let mut order = Vec::new();
        for k in [1, 9, 700, 6_000, 12_000, 50_000, 70_000] {
            let kth = kth_best(&values, k, &mut order);
            assert_eq!(kth.to_bits(), sorted[k - 1].to_bits(), "k = {k}");
            assert!(
                k > 6_000 || order.len() < values.len() / 2,
                "k = {k}: sampled"
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
