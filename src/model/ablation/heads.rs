//! Which heads an ablated pass silences, and how: the set the pass reads
//! ([`Ablation`]), one layer's share of it ([`LayerAblation`]) and the one
//! place a head's output is ablated ([`LayerAblation::apply`]).

/// What an ablated head's output becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AblationMode {
    /// Zero at every position.
    #[default]
    Zero,
    /// Its mean over the input's positions, at every position.
    Mean,
}

impl AblationMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Zero => "zero",
            Self::Mean => "mean",
        }
    }
}

/// A set of heads, each (layer, head), and what their outputs become.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Ablation {
    pub mode: AblationMode,
    /// Sorted, without repeats.
    heads: Vec<(usize, usize)>,
}

impl Ablation {
    pub fn new(mode: AblationMode, heads: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let mut heads: Vec<_> = heads.into_iter().collect();
        heads.sort_unstable();
        heads.dedup();
        Self { mode, heads }
    }

    pub fn heads(&self) -> &[(usize, usize)] {
        &self.heads
    }

    /// The first layer it changes, where an ablated pass may resume; `None`
    /// where that is the first layer of all (or it ablates nothing).
    pub fn resumes_at(&self) -> Option<usize> {
        self.heads
            .first()
            .map(|&(layer, _)| layer)
            .filter(|&l| l > 0)
    }

    /// The heads of layer `layer` it ablates, and how.
    pub(in crate::model) fn layer(&self, layer: usize) -> LayerAblation<'_> {
        let start = self.heads.partition_point(|&(l, _)| l < layer);
        let end = self.heads.partition_point(|&(l, _)| l <= layer);
        LayerAblation {
            mode: self.mode,
            heads: &self.heads[start..end],
        }
    }
}

/// The heads one layer ablates.
#[derive(Clone, Copy)]
pub(in crate::model) struct LayerAblation<'a> {
    mode: AblationMode,
    heads: &'a [(usize, usize)],
}

impl LayerAblation<'_> {
    /// A layer that ablates nothing.
    pub(in crate::model) const NONE: LayerAblation<'static> = LayerAblation {
        mode: AblationMode::Zero,
        heads: &[],
    };

    pub(in crate::model) fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    pub(in crate::model) fn ablates(&self, head: usize) -> bool {
        self.heads.iter().any(|&(_, h)| h == head)
    }

    /// Ablates head `head`'s output where it meets the output projection:
    /// `columns` of the row-major `matrix` whose rows (one per token) are
    /// `width` wide. Nothing where the layer keeps the head.
    pub(in crate::model) fn apply(
        &self,
        head: usize,
        matrix: &mut [f32],
        width: usize,
        columns: std::ops::Range<usize>,
    ) {
        if !self.ablates(head) || width == 0 {
            return;
        }
        match self.mode {
            AblationMode::Zero => {
                for row in matrix.chunks_exact_mut(width) {
                    row[columns.clone()].fill(0.0);
                }
            }
            AblationMode::Mean => {
                let tokens = matrix.len() / width;
                let mut mean = vec![0f64; columns.len()];
                for row in matrix.chunks_exact(width) {
                    for (m, &v) in mean.iter_mut().zip(&row[columns.clone()]) {
                        *m += f64::from(v);
                    }
                }
                let mean: Vec<f32> = mean.iter().map(|m| (m / tokens as f64) as f32).collect();
                for row in matrix.chunks_exact_mut(width) {
                    row[columns.clone()].copy_from_slice(&mean);
                }
            }
        }
    }

    /// A layer's head outputs laid out head by head (H × T × d), with
    /// its ablated heads ablated: a copy, so that the captures keep what
    /// the heads made.
    pub(in crate::model) fn applied_to_heads(
        &self,
        head_outputs: &[f32],
        head_dim: usize,
        tokens: usize,
    ) -> Vec<f32> {
        let mut ablated = head_outputs.to_vec();
        let size = (tokens * head_dim).max(1);
        for (head, output) in ablated.chunks_exact_mut(size).enumerate() {
            self.apply(head, output, head_dim, 0..head_dim);
        }
        ablated
    }
}
