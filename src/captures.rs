//! What one forward pass captured for every layer and head: the attention
//! probabilities P, the per-head output vectors O = P·V and the raw context
//! similarity S = O·Oᵀ (ANALYSIS.md §2).
//!
//! Plain `f32` buffers in row-major order so that the analysis, the colour
//! maps, the exporters and the UI never need the tensor library.
//!
//! P and S take L·H·T² values each: at 2,048 tokens on a 24-layer × 14-head
//! decoder, 11 GB. When they would not fit the memory limit, a pass keeps
//! instead what they are made from ([`AttentionInputs`]: each head's
//! rotated queries and keys, and each layer's score rule; S comes from O),
//! and [`Captures::attention`] and [`Captures::similarity`] recompute one
//! head when asked, in milliseconds, through the same attention core as the
//! pass ([`crate::kernels::attention`]). The figures never wait for that: the
//! pipeline analyses each layer while its P and S exist.

use crate::kernels::attention::{
    attention_rows, context_similarity, similarity_row_block, similarity_rows, ScoreRule, ROW_BLOCK,
};
use crate::kernels::{prefetch, PREFETCH_ROWS};
use crate::vector_store::VectorStore;
use std::borrow::Cow;

/// Shapes: attentions and similarity are L×H×T×T, head outputs L×H×T×d.
/// `attentions` and `similarity` are empty when `recompute` holds what they
/// are made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Captures {
    pub layers: usize,
    pub heads: usize,
    pub tokens: usize,
    pub head_dim: usize,
    pub attentions: Vec<f32>,
    /// L×H×T: the entropy of each row of P, as the attention core made it
    /// with P (from the scores, not a logarithm per entry). Empty where the
    /// input came without it (a capture file, an `.npz`, a capture from
    /// Python): the analysis then computes it from P.
    pub attention_entropy: Vec<f32>,
    /// Empty where a long pass put O on disk
    /// ([`AttentionInputs::outputs_on_disk`]): read a head's through
    /// [`Captures::head_output`].
    pub head_outputs: Vec<f32>,
    pub similarity: Vec<f32>,
    /// L×H×T: per head, the size of what each token's value writes
    /// through it, ‖v_j W_O^h‖ (ANALYSIS.md §9's value weighting). Empty
    /// where the input came without them (a capture file of P and O).
    pub value_norms: Vec<f32>,
    pub recompute: Option<Box<AttentionInputs>>,
    /// The residual stream after each layer, L×T×hidden, where the pass
    /// kept it (a causal decoder's, when small:
    /// [`crate::model::Model::keeps_residuals`]): the logit lens and the
    /// next tokens read it instead of running the model again. Empty
    /// otherwise.
    pub residuals: Vec<f32>,
}

/// Whether a pass keeps every P and S, or what recomputes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum CaptureMode {
    #[default]
    Stored,
    Recomputed,
}

/// What P is made from: each head's queries and keys as the scores read
/// them (normalised where the family does, rotated, not yet scaled) and each layer's [`ScoreRule`], which the
/// attention core ([`crate::kernels::attention`]) applies as in the pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttentionInputs {
    /// L×H×T×d; read only to recompute a head's P for a view, so on disk
    /// when long ([`VectorStore`]).
    pub queries: VectorStore,
    /// L×H_kv×T×d: query head h reads key head h / (H / H_kv).
    pub keys: Vec<f32>,
    pub kv_heads: usize,
    /// One per layer.
    pub rules: Vec<ScoreRule>,
    /// Every head's outputs O (L×H×T×d) where a long pass put them on
    /// disk ([`VectorStore`]), `Captures::head_outputs` then empty: S is
    /// made from them a head at a time. `None` where they are in memory.
    pub outputs_on_disk: Option<VectorStore>,
}

/// One head's S = O·Oᵀ, read a block of rows at a time: kept whole, or made
/// from its outputs O in the attention core's blocks (the same bits), so
/// that a head's analysis holds [`ROW_BLOCK`] × T of it, not T × T.
#[derive(Clone, Copy)]
pub enum HeadSimilarity<'a> {
    /// S (T × T).
    Stored(&'a [f32]),
    /// O (T × d) and d.
    Outputs(&'a [f32], usize),
}

impl HeadSimilarity<'_> {
    /// Rows per block over `tokens` tokens (the last block may be shorter).
    pub fn rows_per_block(&self, tokens: usize) -> usize {
        match self {
            Self::Stored(_) => tokens.max(1),
            Self::Outputs(..) => ROW_BLOCK,
        }
    }

    /// Block `block`'s rows of S (each T wide): borrowed where S is kept,
    /// else made in `buffer`.
    pub fn block<'s>(&'s self, block: usize, tokens: usize, buffer: &'s mut Vec<f32>) -> &'s [f32] {
        let rows = self.rows_per_block(tokens);
        let start = (block * rows).min(tokens);
        let end = (start + rows).min(tokens);
        match *self {
            Self::Stored(similarity) => &similarity[start * tokens..end * tokens],
            Self::Outputs(outputs, head_dim) => {
                buffer.resize((end - start) * tokens, 0.0);
                similarity_row_block(outputs, head_dim, block, buffer);
                buffer
            }
        }
    }
    /// Block `block`'s rows of S from the block's diagonal on, with the
    /// first column they start at: made from O, the rows are multiplied
    /// only by the outputs from the block's first row on (about half of S,
    /// every pair i < j among it, the same bits as whole rows); where S is
    /// kept, whole rows from column 0.
    pub fn block_from_diagonal<'s>(
        &'s self,
        block: usize,
        tokens: usize,
        buffer: &'s mut Vec<f32>,
    ) -> (&'s [f32], usize) {
        match *self {
            Self::Stored(_) => (self.block(block, tokens, buffer), 0),
            Self::Outputs(outputs, head_dim) => {
                let start = (block * ROW_BLOCK).min(tokens);
                let end = (start + ROW_BLOCK).min(tokens);
                buffer.resize((end - start) * (tokens - start), 0.0);
                similarity_rows(
                    &outputs[start * head_dim..end * head_dim],
                    &outputs[start * head_dim..],
                    head_dim,
                    buffer,
                );
                (buffer, start)
            }
        }
    }
}

/// Turns a row of a head's attention P into its row of N′ (ANALYSIS.md
/// §9), in place: each entry times the size of what its key writes
/// (`value_norms`, at least the row's length), the row divided by its sum.
/// A row whose keys write nothing stays 0.
#[inline(always)]
pub fn value_weight_row(row: &mut [f32], value_norms: &[f32]) {
    let scale = value_weight_scale(row, value_norms);
    let n = row.len().min(value_norms.len());
    let (weighted, rest) = row.split_at_mut(n);
    for (p, &w) in weighted.iter_mut().zip(value_norms) {
        *p = *p * w * scale;
    }
    rest.iter_mut().for_each(|p| *p *= scale);
}

/// What [`value_weight_row`] multiplies each weighted entry by after
/// weighting it: 1 over the sum of the row's entries each times the size
/// of what its key writes (0 where that sum is not positive). Entry k of
/// N′ is then `row[k] * value_norms[k] * scale`, to the bit, without
/// making the whole row.
#[inline(always)]
pub fn value_weight_scale(row: &[f32], value_norms: &[f32]) -> f32 {
    const LANES: usize = 16;
    // Sixteen running sums, entry k into sum k mod 16, added up in order at
    // the end: one would be a chain of dependent additions as long as the
    // row. A fixed order, so the same bits on every CPU; and zeros after
    // the row's end change no sum, so a causal row cut at its query sums
    // as the whole row does.
    let n = row.len().min(value_norms.len());
    let (rows, norms) = (
        row[..n].chunks_exact(LANES),
        value_norms[..n].chunks_exact(LANES),
    );
    let mut lanes = [0.0f32; LANES];
    let rest = rows.remainder().iter().zip(norms.remainder());
    for (block, weights) in rows.zip(norms) {
        for ((&p, &w), lane) in block.iter().zip(weights).zip(&mut lanes) {
            *lane += p * w;
        }
    }
    for ((&p, &w), lane) in rest.zip(&mut lanes) {
        *lane += p * w;
    }
    let sum = lanes.iter().sum::<f32>();
    if sum > 0.0 {
        1.0 / sum
    } else {
        0.0
    }
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

    /// Whether every P and S is kept (else they are recomputed per head).
    pub fn stores_squares(&self) -> bool {
        self.recompute.is_none()
    }

    /// The head's T×T attention probabilities, row i = query i.
    pub fn attention(&self, id: HeadId) -> Cow<'_, [f32]> {
        self.attention_rows(id, 0..self.tokens)
    }

    /// Whether the captures hold P, kept or what recomputes it (a capture
    /// file may hold O alone).
    pub fn has_attention(&self) -> bool {
        !self.stores_squares()
            || self.attentions.len() == self.layers * self.heads * self.tokens * self.tokens
    }

    /// Whether the pass gave every head's value norms (ANALYSIS.md §9).
    pub fn has_value_norms(&self) -> bool {
        !self.value_norms.is_empty()
            && self.value_norms.len() == self.layers * self.heads * self.tokens
    }

    /// The head's value norms ‖v_j W_O^h‖ (T); empty without them.
    pub fn head_value_norms(&self, id: HeadId) -> &[f32] {
        if !self.has_value_norms() {
            return &[];
        }
        let start = (id.layer * self.heads + id.head) * self.tokens;
        &self.value_norms[start..start + self.tokens]
    }

    /// The head's T×T value-weighted attention N′ (ANALYSIS.md §9), row
    /// i = query i; `None` without value norms.
    pub fn value_weighted_attention(&self, id: HeadId) -> Option<Vec<f32>> {
        let norms = self.head_value_norms(id);
        if norms.is_empty() {
            return None;
        }
        let mut weighted = self.attention(id).into_owned();
        for row in weighted.chunks_exact_mut(self.tokens.max(1)) {
            value_weight_row(row, norms);
        }
        Some(weighted)
    }

    /// The head's T×T raw similarity O·Oᵀ.
    pub fn similarity(&self, id: HeadId) -> Cow<'_, [f32]> {
        if self.recompute.is_none() {
            return Cow::Borrowed(&self.similarity[self.square(&self.similarity, id)]);
        }
        let mut similarity = vec![0.0f32; self.tokens * self.tokens];
        context_similarity(&self.head_output(id), self.head_dim, &mut similarity);
        Cow::Owned(similarity)
    }

    /// S[i, j] of the head for the rows `rows` and the columns `columns`,
    /// into `block` (rows × columns, row-major): read from the kept S, else
    /// made again from O ([`Captures::with_head_similarity`]).
    pub fn similarity_block(
        &self,
        id: HeadId,
        rows: std::ops::Range<usize>,
        columns: std::ops::Range<usize>,
        block: &mut [f32],
    ) {
        let t = self.tokens;
        let width = columns.len();
        assert_eq!(
            block.len(),
            rows.len() * width,
            "block must be rows × columns"
        );
        self.with_head_similarity(id, |similarity| match similarity {
            HeadSimilarity::Outputs(outputs, d) => similarity_rows(
                &outputs[rows.start * d..rows.end * d],
                &outputs[columns.start * d..columns.end * d],
                d,
                block,
            ),
            HeadSimilarity::Stored(square) => {
                let piece = |i: usize| &square[i * t + columns.start..i * t + columns.end];
                let end = rows.end;
                for (i, out) in rows.zip(block.chunks_exact_mut(width.max(1))) {
                    // Each row is a short piece of a large S: ask for a
                    // later row's ahead.
                    if i + PREFETCH_ROWS < end {
                        prefetch(piece(i + PREFETCH_ROWS));
                    }
                    out.copy_from_slice(piece(i));
                }
            }
        })
    }

    /// Row `query` of the head's attention P: its attention to every key.
    pub fn attention_row(&self, id: HeadId, query: usize) -> Vec<f32> {
        self.attention_rows(id, query..query + 1).into_owned()
    }

    /// The rows `queries` of the head's attention P, each T wide: read
    /// where P is kept, else recomputed (the same bits as
    /// [`Captures::attention`]'s rows when `queries` starts at a multiple
    /// of [`ROW_BLOCK`]).
    pub fn attention_rows(&self, id: HeadId, queries: std::ops::Range<usize>) -> Cow<'_, [f32]> {
        let t = self.tokens;
        match &self.recompute {
            None => Cow::Borrowed(
                &self.attentions[self.square(&self.attentions, id)]
                    [queries.start * t..queries.end * t],
            ),
            Some(inputs) => Cow::Owned(self.recomputed_attention(inputs, id, queries)),
        }
    }

    /// `read` of the head's S as the analysis reads it a block at a time:
    /// the kept S where the captures keep every head's (what the analysis
    /// of a pass that kept them read), else made from O (read from disk
    /// for the call where a long pass put it there). Any rectangle made
    /// from O has the bits of the same cells of S made whole
    /// ([`crate::kernels::attention::similarity_rows`]), so the two agree
    /// where a pass made both.
    pub fn with_head_similarity<R>(&self, id: HeadId, read: impl FnOnce(HeadSimilarity) -> R) -> R {
        let square = self.tokens * self.tokens;
        let keeps_similarity =
            square > 0 && self.similarity.len() == self.layers * self.heads * square;
        if !keeps_similarity && self.has_head_outputs() {
            read(HeadSimilarity::Outputs(
                &self.head_output(id),
                self.head_dim,
            ))
        } else {
            read(HeadSimilarity::Stored(
                &self.similarity[self.square(&self.similarity, id)],
            ))
        }
    }

    /// Whether the captures hold every head's outputs O, in memory or on
    /// disk.
    pub fn has_head_outputs(&self) -> bool {
        let (t, d) = (self.tokens, self.head_dim);
        d > 0
            && (self.head_outputs.len() == self.layers * self.heads * t * d
                || self.outputs_on_disk().is_some())
    }

    /// Every head's outputs O read into memory, and nothing else: what S is
    /// made from, for a reader of every head's S in small pieces (the
    /// layer correlation grid) where a long pass put O on disk, once the
    /// pass's own buffers are gone (2.8 GB at 32,768 tokens on a 24 × 14
    /// model, where that grid reads each head's S in 8,256 tiles). `None`
    /// where O is not on disk.
    pub fn outputs_read_in(&self) -> Option<Captures> {
        let store = self.outputs_on_disk()?;
        Some(Captures {
            layers: self.layers,
            heads: self.heads,
            tokens: self.tokens,
            head_dim: self.head_dim,
            head_outputs: store.read(0..store.len()).into_owned(),
            ..Captures::default()
        })
    }

    /// Whether a long pass put every head's outputs O on disk (a head's
    /// read costs a copy: a reader of many rectangles keeps it).
    pub fn has_outputs_on_disk(&self) -> bool {
        self.outputs_on_disk().is_some()
    }

    fn outputs_on_disk(&self) -> Option<&VectorStore> {
        self.recompute.as_ref()?.outputs_on_disk.as_ref()
    }

    /// Row `token` of the head's similarity S: its output vector's dot
    /// products with every token's.
    pub fn similarity_row(&self, id: HeadId, token: usize) -> Vec<f32> {
        let t = self.tokens;
        if self.recompute.is_none() {
            return self.similarity[self.square(&self.similarity, id)][token * t..(token + 1) * t]
                .to_vec();
        }
        let d = self.head_dim;
        let outputs = self.head_output(id);
        let outputs = &outputs[..];
        let mut row = vec![0.0f32; t];
        similarity_rows(&outputs[token * d..(token + 1) * d], outputs, d, &mut row);
        row
    }

    /// The rows `queries` of the head's attention, recomputed from its
    /// queries and keys.
    fn recomputed_attention(
        &self,
        inputs: &AttentionInputs,
        id: HeadId,
        queries: std::ops::Range<usize>,
    ) -> Vec<f32> {
        let (t, d) = (self.tokens, self.head_dim);
        let group = self.heads / inputs.kv_heads.max(1);
        let vectors = t * d;
        let query_start = (id.layer * self.heads + id.head) * vectors;
        let key_start = (id.layer * inputs.kv_heads + id.head / group.max(1)) * vectors;
        let mut attention = vec![0.0f32; queries.len() * t];
        attention_rows(
            &inputs
                .queries
                .read(query_start + queries.start * d..query_start + queries.end * d),
            &inputs.keys[key_start..key_start + vectors],
            d,
            queries.start,
            &inputs.rules[id.layer],
            &mut attention,
            None,
        );
        attention
    }

    /// The head's T×d output vectors, row i = token i: read from disk
    /// where a long pass put them there.
    pub fn head_output(&self, id: HeadId) -> Cow<'_, [f32]> {
        let size = self.tokens * self.head_dim;
        let start = (id.layer * self.heads + id.head) * size;
        match self.outputs_on_disk() {
            Some(store) => store.read(start..start + size),
            None => Cow::Borrowed(&self.head_outputs[start..start + size]),
        }
    }

    /// Every head in layer-major order.
    pub fn head_ids(&self) -> impl Iterator<Item = HeadId> + '_ {
        (0..self.layers).flat_map(move |l| (0..self.heads).map(move |h| HeadId::new(l, h)))
    }
}
