//! Thumbnails made by a long pass as it analyses each head: the grid's
//! picture of a head without a second pass over its matrix.
//!
//! Past the memory limit the pass keeps no head's P or S, and the grid
//! would make each again to draw its thumbnail: at 32k tokens a pass over
//! one head's S is half a teraflop, and a model's 72 heads held the
//! threads for minutes after the analysis. But the pass already has every
//! row of P, and the analysis every row of S' (S after its variant) from
//! the diagonal on. A [`ThumbnailBuilder`] sums them into the thumbnail's
//! blocks as they go by: P (and N′) a row at a time, S' a column at a time
//! from those rows (S is symmetric; a causal model's map shows the lower
//! triangle). A block's mean is summed in another order than
//! [`super::overview`] sums it (equal within rounding); the sample is the
//! matrix's own cells.

use super::{
    add_column_cells, add_row_cells, level_side, level_within, sample_step, BlockReduction, Blocks,
    MapMatrix, MapOverview, OverviewSize,
};
use crate::analysis::{SimilarityTriangles, SimilarityVariant};
use crate::captures::HeadId;

/// What the grid draws of one head's matrix: the mean of each block of
/// the finest level that fits [`OverviewSize::THUMBNAIL`], and a sample of
/// cells for the colour range.
#[derive(Debug, Clone, PartialEq)]
pub struct Thumbnail {
    /// `side` × `side` blocks' means, row-major (NaN: every cell masked).
    pub means: Vec<f32>,
    pub side: usize,
    /// As [`MapOverview::sample`].
    pub sample: Vec<f32>,
    pub sample_side: usize,
}

impl Thumbnail {
    /// The thumbnail of an overview of [`OverviewSize::THUMBNAIL`].
    pub fn of(overview: MapOverview) -> Self {
        let MapOverview {
            levels,
            sample,
            sample_side,
            ..
        } = overview;
        // Level `base` is the first.
        let blocks = levels.first().expect("an overview holds its base level");
        Self::new(blocks, sample, sample_side)
    }

    /// The means of `blocks` (a whole level), with the sampled cells.
    fn new(blocks: &Blocks, sample: Vec<f32>, sample_side: usize) -> Self {
        Self {
            means: blocks.values(BlockReduction::Mean),
            side: blocks.columns,
            sample,
            sample_side,
        }
    }
}

/// One head's thumbnail made from its rows or columns as a pass hands
/// them over, in order.
struct ThumbnailBuilder {
    tokens: usize,
    causal: bool,
    blocks: Blocks,
    step: usize,
    sample_side: usize,
    sample: Vec<f32>,
}

impl ThumbnailBuilder {
    /// The thumbnail of a matrix over `tokens` tokens; a causal model's
    /// cells above the diagonal are masked.
    fn new(tokens: usize, causal: bool) -> Self {
        let size = OverviewSize::THUMBNAIL;
        let base = level_within(tokens, size.blocks);
        let side = level_side(tokens, base);
        let step = sample_step(tokens, size.sample);
        let sample_side = tokens.div_ceil(step);
        Self {
            tokens,
            causal,
            blocks: Blocks::empty(base, 0, 0, side, side),
            step,
            sample_side,
            sample: vec![f32::NAN; sample_side * sample_side],
        }
    }

    /// How many cells of row `i` have a value: up to the diagonal where
    /// the model is causal.
    fn cells_in_row(&self, i: usize) -> usize {
        if self.causal {
            i + 1
        } else {
            self.tokens
        }
    }

    /// Row `i` of the matrix from column 0, at least its
    /// [`ThumbnailBuilder::cells_in_row`] (a causal model's cells past the
    /// diagonal, whatever they hold, are left out).
    fn add_row(&mut self, i: usize, row: &[f32]) {
        let cells = &row[..self.cells_in_row(i)];
        let row_block = i >> self.blocks.level;
        add_row_cells(&mut self.blocks, row_block, 0, cells);
        if i.is_multiple_of(self.step) {
            let at = (i / self.step) * self.sample_side;
            for (k, &v) in cells.iter().step_by(self.step).enumerate() {
                self.sample[at + k] = v;
            }
        }
    }

    fn finish(self) -> Thumbnail {
        Thumbnail::new(&self.blocks, self.sample, self.sample_side)
    }
}

impl SimilarityTriangles for ThumbnailBuilder {
    fn wants_rows(&self) -> bool {
        !self.causal
    }

    fn add(&mut self, i: usize, column: &[f32], row: Option<&[f32]>) {
        debug_assert_eq!(column.len(), self.tokens - i);
        add_column_cells(&mut self.blocks, i, i, column);
        // The diagonal came with the column.
        if let Some(row) = row {
            let row_block = i >> self.blocks.level;
            add_row_cells(&mut self.blocks, row_block, i + 1, &row[1..]);
        }
        if !i.is_multiple_of(self.step) {
            return;
        }
        let (step, side) = (self.step, self.sample_side);
        for r in (i..self.tokens).step_by(step) {
            self.sample[(r / step) * side + i / step] = column[r - i];
            if let Some(row) = row {
                self.sample[(i / step) * side + r / step] = row[r - i];
            }
        }
    }
}

/// One head's thumbnails made by the pass.
#[derive(Debug, Clone)]
pub struct HeadThumbnails {
    /// Of P.
    pub attention: Thumbnail,
    /// Of N′, where the pass had the value norms.
    pub value_weighted: Option<Thumbnail>,
    /// Of S after the analysis's variant.
    pub similarity: Thumbnail,
}

/// One head's thumbnails as the pass hands over its P, a block of rows at
/// a time, and the analysis its N′ and S'.
pub struct HeadThumbnailsBuilder {
    attention: ThumbnailBuilder,
    /// N′'s, where the head has its value norms.
    value_weighted: Option<ThumbnailBuilder>,
    similarity: ThumbnailBuilder,
}

impl HeadThumbnailsBuilder {
    /// A head over `tokens` tokens; `value_weighted` where the analysis
    /// makes its N′ (its keys' value norms known).
    pub fn new(tokens: usize, causal: bool, value_weighted: bool) -> Self {
        let builder = || ThumbnailBuilder::new(tokens, causal);
        Self {
            attention: builder(),
            value_weighted: value_weighted.then(builder),
            similarity: builder(),
        }
    }

    /// Rows `first`, … of P, each T wide.
    pub fn attention_rows(&mut self, first: usize, rows: &[f32]) {
        let t = self.attention.tokens;
        for (i, row) in (first..).zip(rows.chunks_exact(t)) {
            self.attention.add_row(i, row);
        }
    }

    /// What sees each row of N′ as the analysis makes it, where wanted.
    pub fn value_weighted(&mut self) -> Option<impl FnMut(usize, &[f32]) + '_> {
        let builder = self.value_weighted.as_mut()?;
        Some(move |i, row: &[f32]| builder.add_row(i, row))
    }

    /// What sees S' as the analysis reads it.
    pub fn similarity(&mut self) -> &mut dyn SimilarityTriangles {
        &mut self.similarity
    }

    pub fn finish(self) -> HeadThumbnails {
        HeadThumbnails {
            attention: self.attention.finish(),
            value_weighted: self.value_weighted.map(ThumbnailBuilder::finish),
            similarity: self.similarity.finish(),
        }
    }
}

/// Every head's thumbnails made by a long pass ([`ThumbnailBuilder`]);
/// empty where the run made none (its P and S are kept whole, and
/// thumbnails come fast from them).
#[derive(Debug, Clone, Default)]
pub struct PassThumbnails {
    /// The analysis's variant, which the similarity thumbnails show.
    variant: SimilarityVariant,
    heads_per_layer: usize,
    heads: Vec<Option<HeadThumbnails>>,
}

impl PassThumbnails {
    /// Room for `layers` × `heads` heads' thumbnails of S in `variant`.
    pub fn new(layers: usize, heads: usize, variant: SimilarityVariant) -> Self {
        Self {
            variant,
            heads_per_layer: heads,
            heads: vec![None; layers * heads],
        }
    }

    /// Where `head`'s thumbnails are kept, if it is one of the model's.
    fn index(&self, head: HeadId) -> Option<usize> {
        let index = head.layer * self.heads_per_layer + head.head;
        (head.head < self.heads_per_layer && index < self.heads.len()).then_some(index)
    }

    pub fn insert(&mut self, head: HeadId, thumbnails: HeadThumbnails) {
        let index = self.index(head).expect("a head of the model");
        self.heads[index] = Some(thumbnails);
    }

    /// The thumbnail of `matrix` of `head`, where the pass made it.
    pub fn get(&self, head: HeadId, matrix: MapMatrix) -> Option<&Thumbnail> {
        let made = self.heads[self.index(head)?].as_ref()?;
        match matrix {
            MapMatrix::Attention => Some(&made.attention),
            MapMatrix::ValueWeighted => made.value_weighted.as_ref(),
            MapMatrix::Similarity(variant) if variant == self.variant => Some(&made.similarity),
            MapMatrix::Similarity(_) => None,
        }
    }

    /// Whether it holds every head's.
    pub fn is_complete(&self) -> bool {
        !self.heads.is_empty() && self.heads.iter().all(Option::is_some)
    }
}
