//! The layer-to-layer grid (ANALYSIS.md §5): Pearson correlation of the
//! layers' head-averaged, z-scored similarity over the candidate pairs.
//!
//! A layer's profile has a value per candidate pair (at 8,192 tokens, 33
//! million), so no layer's is kept whole: the pairs are cut into square
//! tiles of rows and columns, each tile's profiles are made again for every layer
//! from its heads' S (rows of S from [`Captures::similarity_block`]) and
//! the moments each head's analysis found, and the tile adds its sums and
//! the layers' dot products; the tiles are summed in their order, so the
//! grid does not depend on the thread count, and memory grows with a
//! tile, not with L·T².
//!
//! Where the analysis kept every layer's profile whole (a shorter input),
//! the pairs are cut into pieces in pair order instead, which read the
//! profiles where they lie, and the pieces are summed in their order.

use std::ops::Range;
use std::sync::Mutex;

use super::similarity::{Moments, TransformKind};
use super::{finite, lock, Document};
use crate::captures::{Captures, HeadId};
use crate::kernels::widest::widest;

/// Content tokens per side of a tile: a tile holds at most 256 × 256
/// candidate pairs, whose L profiles (8 bytes a pair) stay in cache, and
/// reads 512 of each head's output vectors to make its S. (Tiles of whole
/// rows read every later vector of every head for a few rows: at 8,192
/// tokens that was 276 GB from cache, 35 s of the analysis.)
const TILE_SIDE: usize = 256;

/// A tile: the candidate pairs (a, b), a < b, of content rows `rows` and
/// content columns `columns` (indices among the content tokens).
#[derive(Clone)]
struct Tile {
    rows: Range<usize>,
    columns: Range<usize>,
}

impl Tile {
    /// Row a's candidates in the tile: its columns after a.
    fn columns_of(&self, a: usize) -> Range<usize> {
        self.columns.start.max(a + 1)..self.columns.end.max(a + 1)
    }
}

/// What the grid needs of one head: how its S becomes S' and, where it
/// varies, the mean and std of its S' over the candidates (its z-scores).
pub(super) struct ProfileTerms {
    pub(super) transform: TransformKind,
    pub(super) moments: Option<Moments>,
}

impl ProfileTerms {
    /// A constant head has no z-scores and adds nothing to its layer.
    pub(super) fn z_scores(&self) -> Option<Moments> {
        self.moments.filter(|m| m.std > 0.0)
    }
}

/// One part's sums (a tile's, or a piece's of whole profiles): per layer
/// Σx, and Σ x_a·x_b for a ≤ b (row-major upper triangle).
struct PartSums {
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

/// The L×L grid, from every layer's profile where the analysis made them
/// (`profiles`), else from its heads' terms (`terms[l][h]`) and the
/// captures that give their S; `None` for a layer whose profile is constant
/// up to rounding (it has no direction to correlate) and everywhere with
/// fewer than two candidate pairs.
pub(super) fn correlation_matrix(
    doc: &Document,
    terms: &[Vec<ProfileTerms>],
    profiles: Option<&[Vec<f64>]>,
    captures: &Captures,
) -> Vec<Vec<Option<f64>>> {
    let l = terms.len();
    let n = doc.pair_count;
    let mut grid = vec![vec![None; l]; l];
    if n < 2 || l == 0 {
        return grid;
    }
    let read_in = profiles
        .is_none()
        .then(|| captures.outputs_read_in())
        .flatten();
    let captures = read_in.as_ref().unwrap_or(captures);
    let threads = crate::threads::total();
    let per_part = match profiles {
        Some(profiles) => crate::threads::map_indices(n.div_ceil(PIECE), threads, |piece| {
            let pairs = piece * PIECE..((piece + 1) * PIECE).min(n);
            let layers: Vec<&[f64]> = profiles.iter().map(|p| &p[pairs.clone()]).collect();
            sums_of(&layers)
        }),
        None => {
            let tiles = tiles(doc);
            let pool: Mutex<Vec<TileScratch>> = Mutex::new(Vec::new());
            crate::threads::map_indices(tiles.len(), threads, |tile| {
                let mut scratch = lock(&pool).pop().unwrap_or_default();
                let sums = tile_sums(doc, terms, captures, tiles[tile].clone(), &mut scratch);
                lock(&pool).push(scratch);
                sums
            })
        }
    };
    let mut sums = vec![0.0; l];
    let mut products = vec![0.0; l * (l + 1) / 2];
    for part in per_part {
        sums.iter_mut().zip(&part.sums).for_each(|(s, x)| *s += x);
        (products.iter_mut())
            .zip(&part.products)
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

/// Pairs per piece of whole profiles: as many pieces as a short input's
/// tiles ([`TILES_AT_LEAST`] at 500 tokens), each a few of the grid's
/// blocks of [`PRODUCT_BLOCK`]. Not the thread count, for the same reason.
const PIECE: usize = 16_384;

/// Tiles at least, where the input allows: a tile's time grows with its
/// side more than with its pairs (each head's rows of S are read from
/// their start), and a short input cut into three tiles kept one of two
/// threads idle a third of the time. Not the thread count: the tiles, and
/// so the grid's sums, are the same on every machine.
const TILES_AT_LEAST: usize = 8;

/// The tiles of the candidate pairs, in order: blocks of [`TILE_SIDE`]
/// content rows (halved, down to 64, while that makes fewer than
/// [`TILES_AT_LEAST`]), each against the blocks of columns from its own on.
fn tiles(doc: &Document) -> Vec<Tile> {
    let c = doc.content.len();
    let count = |side: usize| {
        let blocks = c.div_ceil(side);
        blocks * (blocks + 1) / 2
    };
    let mut side = TILE_SIDE;
    while side > 64 && count(side) < TILES_AT_LEAST {
        side /= 2;
    }
    let block = |start: usize| start..(start + side).min(c);
    (0..c)
        .step_by(side)
        .flat_map(|row| {
            (row..c).step_by(side).map(move |column| Tile {
                rows: block(row),
                columns: block(column),
            })
        })
        .collect()
}

/// Every layer's profile over the pairs of `tile`, then their sums and
/// products.
fn tile_sums(
    doc: &Document,
    terms: &[Vec<ProfileTerms>],
    captures: &Captures,
    tile: Tile,
    scratch: &mut TileScratch,
) -> PartSums {
    let l = terms.len();
    let n: usize = tile.rows.clone().map(|a| tile.columns_of(a).len()).sum();
    if n == 0 {
        return PartSums {
            sums: vec![0.0; l],
            products: vec![0.0; l * (l + 1) / 2],
        };
    }
    // The positions of S the tile reads: from its first row's to its last
    // row's, against its first column's to its last column's.
    let span = |range: &Range<usize>| doc.content[range.start]..doc.content[range.end - 1] + 1;
    let (positions, columns) = (span(&tile.rows), span(&tile.columns));
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
            for a in tile.rows.clone() {
                let candidates = tile.columns_of(a);
                if candidates.is_empty() {
                    continue;
                }
                let i = doc.content[a];
                let block_row =
                    &scratch.block[(i - positions.start) * columns.len()..][..columns.len()];
                // Row i's candidates in pair order: the tile's content
                // positions after it, run by run.
                let (from, to) = (doc.content[candidates.start], columns.end);
                scratch.row.clear();
                let first_run = doc.content_runs.partition_point(|run| run.end <= from);
                for run in &doc.content_runs[first_run..] {
                    let (start, end) = (run.start.max(from), run.end.min(to));
                    if start >= end {
                        break;
                    }
                    let raw = &block_row[start - columns.start..end - columns.start];
                    terms.transform.extend(i, start..end, raw, &mut scratch.row);
                }
                let values = &scratch.row;
                for (x, &v) in profile[at..at + values.len()].iter_mut().zip(values) {
                    *x += (f64::from(v) - moments.mean) * scale;
                }
                at += values.len();
            }
        }
    }
    let layers: Vec<&[f64]> = scratch.profiles.chunks_exact(n).collect();
    sums_of(&layers)
}

/// A part's sums and products from its profile of each layer (all of one
/// length).
fn sums_of(layers: &[&[f64]]) -> PartSums {
    let sums = layers.iter().map(|x| sum(x)).collect();
    let products = products(layers);
    PartSums { sums, products }
}

/// Pairs per block of [`products`]: the L profiles' values of a block (at
/// 30 layers, 61 KB) stay in the core's cache while every pair of layers
/// multiplies them. A multiple of the eight lanes.
const PRODUCT_BLOCK: usize = 256;

widest! {
    /// Σ x_a·x_b over a part's pairs for every two layers a ≤ b
    /// (row-major upper triangle), from each layer's profile (all of one
    /// length). Each sum runs in eight lanes, value k into lane k mod 8,
    /// the lanes then added in order, as for one dot product; the
    /// pairs are taken a block at a time, every product of a block before
    /// the next, so that a part's profiles (at 30 layers, 16 MB) are read
    /// from memory once, not once per pair of layers.
    fn products(layers: &[&[f64]]) -> Vec<f64> = products_body;
}

#[inline(always)]
fn products_body(layers: &[&[f64]]) -> Vec<f64> {
    let (l, n) = (layers.len(), layers.first().map_or(0, |x| x.len()));
    let layer = |a: usize| &layers[a][..n];
    let mut lanes = vec![[0.0f64; 8]; l * (l + 1) / 2];
    let whole = n - n % 8;
    for start in (0..whole).step_by(PRODUCT_BLOCK) {
        let block = start..(start + PRODUCT_BLOCK).min(whole);
        let mut pair = 0;
        for a in 0..l {
            let xa = &layer(a)[block.clone()];
            for b in a..l {
                let xb = &layer(b)[block.clone()];
                // Summed in registers, not in the vector's memory.
                let mut sums = lanes[pair];
                for (ca, cb) in xa.chunks_exact(8).zip(xb.chunks_exact(8)) {
                    for ((lane, x), y) in sums.iter_mut().zip(ca).zip(cb) {
                        *lane += x * y;
                    }
                }
                lanes[pair] = sums;
                pair += 1;
            }
        }
    }
    let mut products = Vec::with_capacity(lanes.len());
    let mut pair = 0;
    for a in 0..l {
        for b in a..l {
            let rest: f64 = (layer(a)[whole..].iter())
                .zip(&layer(b)[whole..])
                .map(|(x, y)| x * y)
                .sum();
            products.push(lanes[pair].iter().sum::<f64>() + rest);
            pair += 1;
        }
    }
    products
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
