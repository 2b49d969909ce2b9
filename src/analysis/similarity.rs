//! The similarity the selection ranks (ANALYSIS.md §2): raw S or one of
//! its variants, computed on demand per row so that no T×T copy is made.

use super::attention::{lane_sum, LaneSum};
use super::SimilarityVariant;
use crate::captures::HeadSimilarity;
use crate::kernels::attention::{similarity_rows, ROW_BLOCK};
use crate::kernels::{prefetch, PREFETCH_ROWS};

/// One head's T×T similarity after `variant`. Cosine and row-over-diagonal
/// give 0 where the diagonal makes the denominator zero; z-score gives 0
/// everywhere when the head's S is constant. Non-finite results become 0.
/// Panics unless `raw` holds T×T values.
pub fn transformed_similarity(raw: &[f32], tokens: usize, variant: SimilarityVariant) -> Vec<f32> {
    assert_eq!(raw.len(), tokens * tokens, "similarity must be T×T");
    let kind = TransformKind::new(
        HeadSimilarity::Stored(raw),
        tokens,
        variant,
        &mut Vec::new(),
    );
    let mut out = Vec::with_capacity(raw.len());
    for (i, row) in raw.chunks_exact(tokens.max(1)).enumerate() {
        kind.extend(i, 0..tokens, row, &mut out);
    }
    out
}

/// A similarity variant made ready for one head, for any block of its S
/// (the maps read a rectangle at a time): what the variant keeps of the
/// head is computed once, here.
pub struct SimilarityTransform(TransformKind);

impl SimilarityTransform {
    /// The variant of one head's S over `tokens` tokens.
    pub fn new(similarity: HeadSimilarity, tokens: usize, variant: SimilarityVariant) -> Self {
        Self(TransformKind::new(
            similarity,
            tokens,
            variant,
            &mut Vec::new(),
        ))
    }

    /// Appends S'[i, j] for every j in `columns` from S[i, j] (`raw`), as
    /// [`transformed_similarity`] makes them.
    pub fn extend(
        &self,
        i: usize,
        columns: std::ops::Range<usize>,
        raw: &[f32],
        out: &mut Vec<f32>,
    ) {
        self.0.extend(i, columns, raw, out);
    }
}

/// A variant with what it keeps of its head.
pub(super) enum TransformKind {
    Raw,
    /// 1/sqrt(S_ii), or 0 where S_ii is not positive.
    Cosine(Vec<f64>),
    /// S_ii.
    RowOverDiagonal(Vec<f64>),
    /// Mean and std over the head's T×T entries (std 0: everything maps to 0).
    ZScore {
        mean: f64,
        std: f64,
    },
}

impl TransformKind {
    /// The variant of one head's S, read a block of rows at a time (in
    /// `buffer` where it is made): the diagonal for cosine and
    /// row-over-diagonal, the moments of all T×T entries for the z-score.
    #[inline(always)]
    pub(super) fn new(
        similarity: HeadSimilarity,
        t: usize,
        variant: SimilarityVariant,
        buffer: &mut Vec<f32>,
    ) -> Self {
        let diagonal = |buffer: &mut Vec<f32>| {
            let mut diagonal = Vec::with_capacity(t);
            match similarity {
                HeadSimilarity::Stored(square) => {
                    diagonal.extend((0..t).map(|i| f64::from(square[i * t + i])));
                }
                // Each block of rows against itself (the same bits as
                // whole rows), not S whole.
                HeadSimilarity::Outputs(outputs, d) => {
                    for start in (0..t).step_by(ROW_BLOCK) {
                        let block = &outputs[start * d..(start + ROW_BLOCK).min(t) * d];
                        let n = block.len() / d;
                        buffer.resize(n * n, 0.0);
                        similarity_rows(block, block, d, buffer);
                        diagonal.extend((0..n).map(|i| f64::from(buffer[i * n + i])));
                    }
                }
            }
            diagonal
        };
        match variant {
            SimilarityVariant::Raw => TransformKind::Raw,
            SimilarityVariant::Cosine => TransformKind::Cosine(
                diagonal(buffer)
                    .into_iter()
                    .map(|d| if d > 0.0 { 1.0 / d.sqrt() } else { 0.0 })
                    .collect(),
            ),
            SimilarityVariant::RowOverDiagonal => TransformKind::RowOverDiagonal(diagonal(buffer)),
            SimilarityVariant::ZScore => {
                let m = Moments::of_blocks(similarity, t, buffer).unwrap_or(Moments {
                    mean: 0.0,
                    std: 0.0,
                });
                TransformKind::ZScore {
                    mean: m.mean,
                    std: m.std,
                }
            }
        }
    }

    /// Appends S'[i, j] for every j in `columns`, from S[i, j] (`raw`, one
    /// per column), with the variant's dispatch hoisted
    /// out of the loop, which vectorises.
    #[inline(always)]
    pub(super) fn extend(
        &self,
        i: usize,
        columns: std::ops::Range<usize>,
        raw: &[f32],
        out: &mut Vec<f32>,
    ) {
        match self {
            TransformKind::Raw => append(out, raw, clean),
            TransformKind::Cosine(inv) => {
                let a = inv[i];
                append_with(out, raw, &inv[columns], |s, b| clean(cosine(s, a, b)))
            }
            TransformKind::RowOverDiagonal(diag) => {
                let d = diag[i];
                append(out, raw, |s| clean(over_diagonal(s, d)))
            }
            TransformKind::ZScore { mean, std } => {
                append(out, raw, |s| clean(z_score(s, *mean, *std)))
            }
        }
    }

    /// Appends S'[r, i] for every r in `rows`, from S[i, r] (`raw`, one
    /// per row): column i of S' from row i of S, which is symmetric (the
    /// values [`TransformKind::extend`] makes from row r, S[r, i]).
    #[inline(always)]
    pub(super) fn extend_column(
        &self,
        i: usize,
        rows: std::ops::Range<usize>,
        raw: &[f32],
        out: &mut Vec<f32>,
    ) {
        match self {
            TransformKind::Raw => append(out, raw, clean),
            TransformKind::Cosine(inv) => {
                let b = inv[i];
                append_with(out, raw, &inv[rows], |s, a| clean(cosine(s, a, b)))
            }
            TransformKind::RowOverDiagonal(diag) => {
                append_with(out, raw, &diag[rows], |s, d| clean(over_diagonal(s, d)))
            }
            TransformKind::ZScore { mean, std } => {
                append(out, raw, |s| clean(z_score(s, *mean, *std)))
            }
        }
    }
}

/// Appends `f(s)` for each s of `raw`. Written into the vector's spare
/// room through a slice, a loop that vectorises: `Vec::extend` over a
/// mapped iterator stores one value at a time, and growing it with zeros
/// first wrote every value twice.
#[inline(always)]
fn append(out: &mut Vec<f32>, raw: &[f32], f: impl Fn(f32) -> f32) {
    out.reserve(raw.len());
    let room = &mut out.spare_capacity_mut()[..raw.len()];
    for (o, &s) in room.iter_mut().zip(raw) {
        o.write(f(s));
    }
    // SAFETY: the loop wrote the `raw.len()` values past the old length.
    unsafe { out.set_len(out.len() + raw.len()) };
}

/// [`append`] of `f(s, x)` for each s of `raw` and x of `per_value` beside it.
#[inline(always)]
fn append_with(out: &mut Vec<f32>, raw: &[f32], per_value: &[f64], f: impl Fn(f32, f64) -> f32) {
    assert_eq!(raw.len(), per_value.len(), "a value beside each of raw");
    out.reserve(raw.len());
    let room = &mut out.spare_capacity_mut()[..raw.len()];
    for ((o, &s), &x) in room.iter_mut().zip(raw).zip(per_value) {
        o.write(f(s, x));
    }
    // SAFETY: the loop wrote the `raw.len()` values past the old length.
    unsafe { out.set_len(out.len() + raw.len()) };
}

#[inline(always)]
fn cosine(s: f32, inv_norm_i: f64, inv_norm_j: f64) -> f32 {
    (f64::from(s) * inv_norm_i * inv_norm_j) as f32
}

#[inline(always)]
fn over_diagonal(s: f32, diagonal: f64) -> f32 {
    if diagonal == 0.0 {
        0.0
    } else {
        (f64::from(s) / diagonal) as f32
    }
}

#[inline(always)]
fn z_score(s: f32, mean: f64, std: f64) -> f32 {
    if std > 0.0 {
        ((f64::from(s) - mean) / std) as f32
    } else {
        0.0
    }
}

/// Non-finite similarities (overflow, or NaN from a broken input) count as 0.
#[inline(always)]
fn clean(v: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The moments of values handed in parts, in one pass over them: each
/// chunk of [`MomentSums::CHUNK`] values (in the order they come, whatever
/// the parts) summed about its own mean (two passes while it is in cache,
/// in eight lanes), and the chunks merged in order (Chan et al.): no
/// cancellation when the values sit far from 0 or from their first ones,
/// and the parts' lengths do not change a bit.
#[derive(Default)]
pub(super) struct MomentSums {
    /// The values of the chunk under way.
    chunk: Vec<f32>,
    count: usize,
    mean: f64,
    /// Σ (v − mean)² of the chunks merged.
    squares: f64,
}

impl MomentSums {
    const CHUNK: usize = 1024;

    #[inline(always)]
    pub(super) fn add(&mut self, mut values: &[f32]) {
        while !values.is_empty() {
            let taken = values.len().min(Self::CHUNK - self.chunk.len());
            self.chunk.extend_from_slice(&values[..taken]);
            values = &values[taken..];
            if self.chunk.len() == Self::CHUNK {
                self.merge_chunk();
            }
        }
    }

    /// Merges the chunks of `values` not merged yet, every value handed so
    /// far in order (a buffer they grow in, from its first: [`add`] is not
    /// called on these sums), each whole chunk where it lies, not copied;
    /// `last` merges the rest, a chunk short of the whole.
    ///
    /// [`add`]: MomentSums::add
    #[inline(always)]
    pub(super) fn add_grown(&mut self, values: &[f32], last: bool) {
        debug_assert!(self.chunk.is_empty(), "values handed in parts too");
        while values.len() - self.count >= Self::CHUNK {
            self.merge(&values[self.count..self.count + Self::CHUNK]);
        }
        if last {
            self.merge(&values[self.count..]);
        }
    }

    // Inlined, so that the analysis' widest vectors sum the chunk.
    #[inline(always)]
    fn merge_chunk(&mut self) {
        let chunk = std::mem::take(&mut self.chunk);
        self.merge(&chunk);
        self.chunk = chunk;
        self.chunk.clear();
    }

    #[inline(always)]
    fn merge(&mut self, chunk: &[f32]) {
        let n = chunk.len();
        if n > 0 {
            let mean = lane_sum(chunk, f64::from) / n as f64;
            let squares = lane_sum(chunk, |v| (f64::from(v) - mean).powi(2));
            let total = self.count + n;
            let delta = mean - self.mean;
            self.mean += delta * n as f64 / total as f64;
            self.squares += squares + delta * delta * (self.count as f64 * n as f64) / total as f64;
            self.count = total;
        }
    }

    /// `None` without values or where they are not finite.
    pub(super) fn moments(mut self) -> Option<Moments> {
        self.merge_chunk();
        if self.count == 0 {
            return None;
        }
        Moments::of_mean_and_variance(self.mean, self.squares / self.count as f64)
    }
}

/// Mean and population standard deviation, in f64.
#[derive(Clone, Copy)]
pub(super) struct Moments {
    pub(super) mean: f64,
    pub(super) std: f64,
}

impl Moments {
    /// Of every entry of one head's S (T×T), read a block of rows at a
    /// time: the same sums as [`Moments::of`] over the whole.
    #[inline(always)]
    fn of_blocks(similarity: HeadSimilarity, t: usize, buffer: &mut Vec<f32>) -> Option<Moments> {
        if t == 0 {
            return None;
        }
        let blocks = t.div_ceil(similarity.rows_per_block(t));
        let n = (t * t) as f64;
        let mut sum = LaneSum::default();
        for b in 0..blocks {
            sum.add(similarity.block(b, t, buffer), f64::from);
        }
        let mean = sum.total() / n;
        let mut squares = LaneSum::default();
        for b in 0..blocks {
            squares.add(similarity.block(b, t, buffer), |v| {
                (f64::from(v) - mean).powi(2)
            });
        }
        Self::of_mean_and_variance(mean, squares.total() / n)
    }

    #[inline(always)]
    fn of_mean_and_variance(mean: f64, var: f64) -> Option<Moments> {
        let std = var.sqrt();
        (mean.is_finite() && std.is_finite()).then_some(Moments { mean, std })
    }
}

/// Calls `f(i, row, first)` for every row i of one head's S, where
/// `row[k]` is S[i, first + k] and `first` ≤ i: at least the columns from
/// the diagonal on, a block of rows at a time
/// ([`HeadSimilarity::block_from_diagonal`]: half the product of
/// [`for_each_row`] where S is made from O).
#[inline(always)]
pub(super) fn for_each_row_from_diagonal(
    similarity: HeadSimilarity,
    t: usize,
    buffer: &mut Vec<f32>,
    mut f: impl FnMut(usize, &[f32], usize),
) {
    let rows = similarity.rows_per_block(t);
    for b in 0..t.div_ceil(rows) {
        let (block, first) = similarity.block_from_diagonal(b, t, buffer);
        let width = t - first;
        let block_rows = block.len() / width.max(1);
        for (r, row) in block.chunks_exact(width.max(1)).enumerate() {
            let i = b * rows + r;
            // Row i's part from the diagonal on is a short piece of a
            // large S: ask for a later row's ahead.
            let ahead = r + PREFETCH_ROWS;
            if ahead < block_rows {
                let from = ahead * width + (b * rows + ahead - first);
                prefetch(&block[from..(ahead + 1) * width]);
            }
            f(i, row, first);
        }
    }
}

/// Calls `f(i, row)` for every row i of one head's S (T wide), a block of
/// rows at a time.
#[inline(always)]
pub(super) fn for_each_row(
    similarity: HeadSimilarity,
    t: usize,
    buffer: &mut Vec<f32>,
    mut f: impl FnMut(usize, &[f32]),
) {
    let rows = similarity.rows_per_block(t);
    for b in 0..t.div_ceil(rows) {
        let block = similarity.block(b, t, buffer);
        for (i, row) in (b * rows..).zip(block.chunks_exact(t)) {
            f(i, row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MomentSums;

    fn moments_in_parts(values: &[f32], part: usize) -> (u64, u64) {
        let mut sums = MomentSums::default();
        for chunk in values.chunks(part) {
            sums.add(chunk);
        }
        let m = sums.moments().unwrap();
        (m.mean.to_bits(), m.std.to_bits())
    }

    /// The moments do not depend on how the values are cut into parts, and
    /// are those of the two-pass definition, far from 0 too.
    #[test]
    fn moments_in_one_pass() {
        let mut state = 3u64;
        let values: Vec<f32> = (0..10_007)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let noise = (state >> 40) as f32 / 16_777_216.0;
                if i < 5_000 {
                    1e4 + noise
                } else {
                    noise * 3.0 - 1.0
                }
            })
            .collect();
        let whole = moments_in_parts(&values, values.len());
        for part in [1, 3, 7, 8, 100, 1023, 1024, 1025, 4096] {
            assert_eq!(moments_in_parts(&values, part), whole, "parts of {part}");
        }
        for values in [&values[..], &values[..5_000], &values[..10]] {
            let n = values.len() as f64;
            let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
            let var = values
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / n;
            let (m, s) = moments_in_parts(values, 64);
            let (m, s) = (f64::from_bits(m), f64::from_bits(s));
            assert!((m - mean).abs() <= 1e-12 * mean.abs(), "{m} vs {mean}");
            assert!(
                (s - var.sqrt()).abs() <= 1e-12 * var.sqrt(),
                "{s} vs {}",
                var.sqrt()
            );
        }
    }
}
