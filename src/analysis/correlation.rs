//! The layer-to-layer grid (ANALYSIS.md §5): Pearson correlation of the
//! layers' head-averaged, z-scored similarity over the candidate pairs.

use super::finite;
use super::widest::widest;

/// A layer's profile centred and scaled to unit length, kept in f32 (at
/// 2,048 tokens a profile has two million pairs, and a deep model's
/// profiles would take 400 MB in f64); `None` for a profile that is constant
/// up to rounding, which has no direction to correlate.
#[inline(always)]
pub(super) fn unit_profile(mut p: Vec<f64>) -> Option<Vec<f32>> {
    let mean = p.iter().sum::<f64>() / p.len() as f64;
    p.iter_mut().for_each(|x| *x -= mean);
    let norm = p.iter().map(|x| x * x).sum::<f64>().sqrt();
    let scale = mean.abs().max(1.0) * 1e-12 * (p.len() as f64).sqrt();
    if !(norm.is_finite() && norm > scale) {
        return None;
    }
    Some(p.iter().map(|x| (x / norm) as f32).collect())
}

/// Pearson correlation between every two layers' unit profiles; the rows
/// on the threads of the budget (at 2,048 tokens and 30 layers, 435 dot
/// products of two million pairs).
pub(super) fn correlation_matrix(unit: Vec<Option<Vec<f32>>>) -> Vec<Vec<Option<f64>>> {
    let l = unit.len();
    // Row a: its correlations with the layers after it.
    let upper = crate::threads::map_indices(l, crate::threads::total(), |a| {
        let Some(x) = &unit[a] else {
            return vec![None; l - a - 1];
        };
        unit[a + 1..]
            .iter()
            .map(|y| {
                let y = y.as_ref()?;
                finite(dot(x, y).clamp(-1.0, 1.0))
            })
            .collect::<Vec<_>>()
    });
    let mut grid = vec![vec![None; l]; l];
    for (a, row) in upper.into_iter().enumerate() {
        if unit[a].is_some() {
            grid[a][a] = Some(1.0);
        }
        for (b, r) in (a + 1..l).zip(row) {
            grid[a][b] = r;
            grid[b][a] = r;
        }
    }
    grid
}

widest! {
    /// Σ a·b with eight independent accumulators (see `lane_sum`).
    fn dot(a: &[f32], b: &[f32]) -> f64 = dot_body;
}

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (chunks_a, chunks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f64 = (chunks_a.remainder().iter())
        .zip(chunks_b.remainder())
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for ((lane, x), y) in lanes.iter_mut().zip(ca).zip(cb) {
            *lane += f64::from(*x) * f64::from(*y);
        }
    }
    lanes.iter().sum::<f64>() + rest
}
