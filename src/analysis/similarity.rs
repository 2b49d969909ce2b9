//! The similarity the selection ranks (ANALYSIS.md §2): raw S or one of
//! its variants, computed on demand per row so that no T×T copy is made.

use super::attention::lane_sum;
use super::SimilarityVariant;

/// One head's T×T similarity after `variant`. Cosine and row-over-diagonal
/// give 0 where the diagonal makes the denominator zero; z-score gives 0
/// everywhere when the head's S is constant. Non-finite results become 0.
/// Panics unless `raw` holds T×T values.
pub fn transformed_similarity(raw: &[f32], tokens: usize, variant: SimilarityVariant) -> Vec<f32> {
    assert_eq!(raw.len(), tokens * tokens, "similarity must be T×T");
    let transform = Transform::new(raw, tokens, variant);
    let mut out = Vec::with_capacity(raw.len());
    for i in 0..tokens {
        out.extend((0..tokens).map(|j| transform.get(i, j)));
    }
    out
}

/// One head's similarity as the selection sees it, computed on demand so
/// that no T×T copy is made.
pub(super) struct Transform<'a> {
    raw: &'a [f32],
    t: usize,
    kind: TransformKind,
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

impl<'a> Transform<'a> {
    pub(super) fn new(raw: &'a [f32], t: usize, variant: SimilarityVariant) -> Self {
        let diagonal = || (0..t).map(|i| f64::from(raw[i * t + i]));
        let kind = match variant {
            SimilarityVariant::Raw => TransformKind::Raw,
            SimilarityVariant::Cosine => TransformKind::Cosine(
                diagonal()
                    .map(|d| if d > 0.0 { 1.0 / d.sqrt() } else { 0.0 })
                    .collect(),
            ),
            SimilarityVariant::RowOverDiagonal => {
                TransformKind::RowOverDiagonal(diagonal().collect())
            }
            SimilarityVariant::ZScore => {
                let m = Moments::of(raw).unwrap_or(Moments {
                    mean: 0.0,
                    std: 0.0,
                });
                TransformKind::ZScore {
                    mean: m.mean,
                    std: m.std,
                }
            }
        };
        Self { raw, t, kind }
    }

    pub(super) fn get(&self, i: usize, j: usize) -> f32 {
        let s = self.raw[i * self.t + j];
        clean(match &self.kind {
            TransformKind::Raw => s,
            TransformKind::Cosine(inv) => cosine(s, inv[i], inv[j]),
            TransformKind::RowOverDiagonal(diag) => over_diagonal(s, diag[i]),
            TransformKind::ZScore { mean, std } => z_score(s, *mean, *std),
        })
    }

    /// Appends S'[i, j] for every j in `columns`.
    #[inline(always)]
    pub(super) fn extend_row(&self, i: usize, columns: std::ops::Range<usize>, out: &mut Vec<f32>) {
        let row = &self.raw[i * self.t..(i + 1) * self.t];
        self.kind.extend(i, columns.clone(), &row[columns], out);
    }

    /// What the variant keeps of the head (its diagonal or moments), to
    /// transform rows of S made again later ([`TransformKind::extend`]).
    pub(super) fn into_kind(self) -> TransformKind {
        self.kind
    }
}

impl TransformKind {
    /// Appends S'[i, j] for every j in `columns`, from S[i, j] (`raw`, one
    /// per column): `Transform::get` with the variant's dispatch hoisted
    /// out of the loop, which vectorises.
    #[inline(always)]
    pub(super) fn extend(
        &self,
        i: usize,
        columns: std::ops::Range<usize>,
        raw: &[f32],
        out: &mut Vec<f32>,
    ) {
        let values = raw.iter().copied();
        match self {
            TransformKind::Raw => out.extend(values.map(clean)),
            TransformKind::Cosine(inv) => {
                let a = inv[i];
                out.extend(
                    values
                        .zip(&inv[columns])
                        .map(|(s, &b)| clean(cosine(s, a, b))),
                )
            }
            TransformKind::RowOverDiagonal(diag) => {
                out.extend(values.map(|s| clean(over_diagonal(s, diag[i]))))
            }
            TransformKind::ZScore { mean, std } => {
                out.extend(values.map(|s| clean(z_score(s, *mean, *std))))
            }
        }
    }
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

/// Mean and population standard deviation, in f64.
#[derive(Clone, Copy)]
pub(super) struct Moments {
    pub(super) mean: f64,
    pub(super) std: f64,
}

impl Moments {
    #[inline(always)]
    pub(super) fn of(values: &[f32]) -> Option<Moments> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = lane_sum(values, f64::from) / n;
        let var = lane_sum(values, |v| (f64::from(v) - mean).powi(2)) / n;
        let std = var.sqrt();
        (mean.is_finite() && std.is_finite()).then_some(Moments { mean, std })
    }
}
