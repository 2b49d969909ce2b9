//! What one forward pass captured for every layer and head: the attention
//! probabilities P, the per-head output vectors O = P·V and the raw context
//! similarity S = O·Oᵀ (ANALYSIS.md §2).
//!
//! Plain `f32` buffers in row-major order so that the analysis, the colour
//! maps, the exporters and the UI never need the tensor library.

/// Shapes: attentions and similarity are L×H×T×T, head outputs L×H×T×d.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Captures {
    pub layers: usize,
    pub heads: usize,
    pub tokens: usize,
    pub head_dim: usize,
    pub attentions: Vec<f32>,
    pub head_outputs: Vec<f32>,
    pub similarity: Vec<f32>,
}

/// One head of one layer, both 0-based.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct HeadId {
    pub layer: usize,
    pub head: usize,
}

impl HeadId {
    pub fn new(layer: usize, head: usize) -> Self {
        Self { layer, head }
    }
}

impl std::fmt::Display for HeadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "L{} H{}", self.layer, self.head)
    }
}

impl Captures {
    fn square(&self, buffer: &[f32], id: HeadId) -> std::ops::Range<usize> {
        debug_assert!(id.layer < self.layers && id.head < self.heads);
        let size = self.tokens * self.tokens;
        let start = (id.layer * self.heads + id.head) * size;
        debug_assert!(start + size <= buffer.len());
        start..start + size
    }

    /// The head's T×T attention probabilities, row i = query i.
    pub fn attention(&self, id: HeadId) -> &[f32] {
        &self.attentions[self.square(&self.attentions, id)]
    }

    /// The head's T×T raw similarity O·Oᵀ.
    pub fn similarity(&self, id: HeadId) -> &[f32] {
        &self.similarity[self.square(&self.similarity, id)]
    }

    /// The head's T×d output vectors, row i = token i.
    pub fn head_output(&self, id: HeadId) -> &[f32] {
        let size = self.tokens * self.head_dim;
        let start = (id.layer * self.heads + id.head) * size;
        &self.head_outputs[start..start + size]
    }

    /// Every head in layer-major order.
    pub fn head_ids(&self) -> impl Iterator<Item = HeadId> + '_ {
        (0..self.layers).flat_map(move |l| (0..self.heads).map(move |h| HeadId::new(l, h)))
    }
}
