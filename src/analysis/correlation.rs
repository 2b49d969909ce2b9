//! The layer-to-layer grid (ANALYSIS.md §5): Pearson correlation of the
//! layers' head-averaged, z-scored similarity over the candidate pairs.
//!
//! A layer's profile has a value per candidate pair (at 8,192 tokens, 33
//! million), so no layer's is kept whole: the pairs are cut into tiles of
//! consecutive rows, each tile's profiles are made again for every layer
//! from its heads' S (rows of S from [`Captures::similarity_block`]) and
//! the moments each head's analysis found, and the tile adds its sums and
//! the layers' dot products; the tiles are summed in their order, so the
//! grid does not depend on the thread count, and memory grows with a
//! tile, not with L·T².

use std::ops::Range;
use std::sync::Mutex;

use super::similarity::{Moments, TransformKind};
use super::widest::widest;
use super::{finite, lock, Document};
use crate::captures::{Captures, HeadId};

/// Candidate pairs per tile: big enough that a tile's rows of S are a
/// product worth making, small enough that its L profiles (8 bytes a
/// pair) stay in cache.
const TILE_PAIRS: usize = 1 << 16;

/// What the grid needs of one head: how its S becomes S' and, where it
/// varies, the mean and std of its S' over the candidates (its z-scores).
pub(super) struct ProfileTerms {
    pub(super) transform: TransformKind,
    pub(super) moments: Option<Moments>,
}

impl ProfileTerms {
    /// A constant head has no z-scores and adds nothing to its layer.
    fn z_scores(&self) -> Option<Moments> {
        self.moments.filter(|m| m.std > 0.0)
    }
}

/// One tile's sums: per layer Σx, and Σ x_a·x_b for a ≤ b (row-major
/// upper triangle).
struct TileSums {
    sums: Vec<f64>,
    products: Vec<f64>,
}

/// Buffers a thread reuses from tile to tile.
#[derive(Default)]
struct TileScratch {
    block: Vec<f32>,
    row: Vec<f32>,
    profiles: Vec<f64>,
}

/// The L×L grid, from every layer's heads' terms (`terms[l][h]`) and the
/// captures that give their S; `None` for a layer whose profile is constant
/// up to rounding (it has no direction to correlate) and everywhere with
/// fewer than two candidate pairs.
pub(super) fn correlation_matrix(
    doc: &Document,
    terms: &[Vec<ProfileTerms>],
    captures: &Captures,
) -> Vec<Vec<Option<f64>>> {
    let l = terms.len();
    let n = doc.pair_count;
    let mut grid = vec![vec![None; l]; l];
    if n < 2 || l == 0 {
        return grid;
    }
    let tiles = tiles(doc);
    let pool: Mutex<Vec<TileScratch>> = Mutex::new(Vec::new());
    let per_tile = crate::threads::map_indices(tiles.len(), crate::threads::total(), |tile| {
        let mut scratch = lock(&pool).pop().unwrap_or_default();
        let sums = tile_sums(doc, terms, captures, tiles[tile].clone(), &mut scratch);
        lock(&pool).push(scratch);
        sums
    });
    let mut sums = vec![0.0; l];
    let mut products = vec![0.0; l * (l + 1) / 2];
    for tile in per_tile {
        sums.iter_mut().zip(&tile.sums).for_each(|(s, x)| *s += x);
        (products.iter_mut())
            .zip(&tile.products)
            .for_each(|(s, x)| *s += x);
    }
    let product = |a: usize, b: usize| products[a * l - a * (a + 1) / 2 + b];
    let count = n as f64;
    // The centred norm of each profile, or `None` where it is rounding.
    let norms: Vec<Option<f64>> = (0..l)
        .map(|a| {
            let mean = sums[a] / count;
            let norm = (product(a, a) - sums[a] * mean).max(0.0).sqrt();
            let rounding = mean.abs().max(1.0) * 1e-12 * count.sqrt();
            (norm.is_finite() && norm > rounding).then_some(norm)
        })
        .collect();
    for a in 0..l {
        let Some(norm_a) = norms[a] else { continue };
        grid[a][a] = Some(1.0);
        for b in a + 1..l {
            let Some(norm_b) = norms[b] else { continue };
            let covariance = product(a, b) - sums[a] * sums[b] / count;
            let r = finite((covariance / (norm_a * norm_b)).clamp(-1.0, 1.0));
            grid[a][b] = r;
            grid[b][a] = r;
        }
    }
    grid
}

/// The content rows (indices among the content tokens) of each tile, in
/// order: consecutive rows until a tile holds [`TILE_PAIRS`] pairs.
fn tiles(doc: &Document) -> Vec<Range<usize>> {
    let c = doc.content.len();
    let mut tiles = Vec::new();
    let (mut start, mut pairs) = (0, 0);
    for a in 0..c {
        pairs += c - 1 - a;
        if pairs >= TILE_PAIRS || a + 1 == c {
            tiles.push(start..a + 1);
            (start, pairs) = (a + 1, 0);
        }
    }
    tiles
}

/// Every layer's profile over the pairs of the content rows `rows`, then
/// their sums and products.
fn tile_sums(
    doc: &Document,
    terms: &[Vec<ProfileTerms>],
    captures: &Captures,
    rows: Range<usize>,
    scratch: &mut TileScratch,
) -> TileSums {
    let l = terms.len();
    let c = doc.content.len();
    let n: usize = rows.clone().map(|a| c - 1 - a).sum();
    if n == 0 {
        return TileSums {
            sums: vec![0.0; l],
            products: vec![0.0; l * (l + 1) / 2],
        };
    }
    // The positions of S the tile reads: its rows, against every position
    // after its first.
    let first = doc.content[rows.start];
    let positions = first..doc.content[rows.end - 1] + 1;
    let columns = first + 1..doc.t;
    scratch.profiles.clear();
    scratch.profiles.resize(l * n, 0.0);
    for (layer, heads) in terms.iter().enumerate() {
        let profile = &mut scratch.profiles[layer * n..(layer + 1) * n];
        for (head, terms) in heads.iter().enumerate() {
            let Some(moments) = terms.z_scores() else {
                continue;
            };
            scratch.block.resize(positions.len() * columns.len(), 0.0);
            let id = HeadId::new(layer, head);
            captures.similarity_block(id, positions.clone(), columns.clone(), &mut scratch.block);
            let scale = 1.0 / moments.std;
            let mut at = 0;
            for a in rows.clone() {
                let i = doc.content[a];
                let block_row = &scratch.block[(i - first) * columns.len()..][..columns.len()];
                // Row i's candidates in pair order: the content positions
                // after it, run by run.
                scratch.row.clear();
                let own_run = doc.content_runs.partition_point(|run| run.end <= i);
                for run in &doc.content_runs[own_run..] {
                    let from = run.start.max(i + 1);
                    if from < run.end {
                        let raw = &block_row[from - columns.start..run.end - columns.start];
                        terms
                            .transform
                            .extend(i, from..run.end, raw, &mut scratch.row);
                    }
                }
                let values = &scratch.row;
                for (x, &v) in profile[at..at + values.len()].iter_mut().zip(values) {
                    *x += (f64::from(v) - moments.mean) * scale;
                }
                at += values.len();
            }
        }
    }
    let profiles = &scratch.profiles;
    let layer = |a: usize| &profiles[a * n..(a + 1) * n];
    let sums = (0..l).map(|a| sum(layer(a))).collect();
    let mut products = Vec::with_capacity(l * (l + 1) / 2);
    for a in 0..l {
        products.extend((a..l).map(|b| dot(layer(a), layer(b))));
    }
    TileSums { sums, products }
}

widest! {
    /// Σ a·b with eight independent accumulators.
    fn dot(a: &[f64], b: &[f64]) -> f64 = dot_body;
}

#[inline(always)]
fn dot_body(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (chunks_a, chunks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f64 = (chunks_a.remainder().iter())
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((lane, x), y) in lanes.iter_mut().zip(ca).zip(cb) {
            *lane += x * y;
        }
    }
    lanes.iter().sum::<f64>() + rest
}

/// Σ x with eight independent accumulators.
fn sum(x: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest: f64 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    lanes.iter().sum::<f64>() + rest
}
