//! The layer-to-layer grid (ANALYSIS.md §5): Pearson correlation of the
//! layers' head-averaged, z-scored similarity over the candidate pairs.

use super::finite;

/// A layer's profile centred and scaled to unit length, kept in f32 (at
/// 2,048 tokens a profile has two million pairs, and a deep model's
/// profiles would take 400 MB in f64); `None` for a profile that is constant
/// up to rounding, which has no direction to correlate.
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

/// Pearson correlation between every two layers' unit profiles.
pub(super) fn correlation_matrix(unit: Vec<Option<Vec<f32>>>) -> Vec<Vec<Option<f64>>> {
    let l = unit.len();
    let mut grid = vec![vec![None; l]; l];
    for a in 0..l {
        let Some(x) = &unit[a] else { continue };
        grid[a][a] = Some(1.0);
        for b in a + 1..l {
            let Some(y) = &unit[b] else { continue };
            let r = dot(x, y);
            let r = finite(r.clamp(-1.0, 1.0));
            grid[a][b] = r;
            grid[b][a] = r;
        }
    }
    grid
}

/// Σ a·b with eight independent accumulators (see `lane_sum`).
fn dot(a: &[f32], b: &[f32]) -> f64 {
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
