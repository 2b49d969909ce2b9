//! One head's matrix (P, N′, or S in its variant) at any zoom, without
//! ever holding T × T of it: at 32k tokens one head's matrix is 4 GB.
//!
//! A map is a pyramid. At level ℓ a block is 2^ℓ × 2^ℓ cells, and a pixel
//! shows the maximum or the mean of its block's cells (masked cells, a
//! causal model's upper triangle, are left out; a block of masked cells
//! only has no value, NaN). The [`MapOverview`] is made in one pass over
//! the rows, a band at a time: every level whose side fits the screen,
//! and an evenly spaced sample of cells for the colour range. A finer
//! level is read a [`tile`] at a time when the view zooms into it, down
//! to level 0, single cells.
//!
//! Every value is the full matrix's own: rows come from the same kernels
//! and the same row blocks as [`Captures::attention`] and
//! [`Captures::similarity`] (the same bits), a block's maximum is exact
//! and its mean is summed in f64 (a row's cells in a block in eight lanes,
//! the rows in order). A band of base blocks is summed by one thread, so
//! the figures do not depend on the thread count.
//!
//! A long pass makes each head's thumbnail as it goes ([`thumbnails`]).

use crate::analysis::{SimilarityTransform, SimilarityVariant};
use crate::captures::{value_weight_row, Captures, HeadId, HeadSimilarity};
use crate::kernels::attention::ROW_BLOCK;
use crate::kernels::widest::widest;
use std::ops::Range;
use std::sync::Arc;

mod thumbnails;
pub use thumbnails::{HeadThumbnails, HeadThumbnailsBuilder, PassThumbnails, Thumbnail};

/// Which of a head's matrices a map shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MapMatrix {
    /// The attention probabilities P (rows are queries).
    Attention,
    /// Value-weighted attention N′ (ANALYSIS.md §9).
    ValueWeighted,
    /// S after the variant the analysis ranks pairs by.
    Similarity(SimilarityVariant),
}

/// What a block's pixel shows of its cells.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum BlockReduction {
    /// The largest value: a single strong cell stays visible at any zoom.
    #[default]
    Max,
    /// The mean of the cells.
    Mean,
}

impl BlockReduction {
    pub const ALL: [BlockReduction; 2] = [BlockReduction::Max, BlockReduction::Mean];

    pub fn label(self) -> &'static str {
        match self {
            BlockReduction::Max => "Max",
            BlockReduction::Mean => "Mean",
        }
    }
}

/// The side, in blocks, of level `level` of a map over `tokens` tokens.
pub fn level_side(tokens: usize, level: u32) -> usize {
    tokens.div_ceil(1 << level)
}

/// The finest level whose side is at most `limit` blocks.
pub fn level_within(tokens: usize, limit: usize) -> u32 {
    let mut level = 0;
    while level_side(tokens, level) > limit.max(1) {
        level += 1;
    }
    level
}

/// One head's matrix, read a rectangle at a time. Cheap to clone: what a
/// similarity variant keeps of the head (its diagonal or moments, one
/// pass over S to make) is shared.
#[derive(Clone)]
pub struct HeadMatrix {
    head: HeadId,
    tokens: usize,
    causal: bool,
    source: Source,
}

#[derive(Clone)]
enum Source {
    /// P, or N′ where `weighted`.
    Attention { weighted: bool },
    /// S, after the variant where there is one (raw S as it is), with the
    /// head's outputs O where a long pass put them on disk: read once, not
    /// for each rectangle.
    Similarity {
        transform: Option<Arc<SimilarityTransform>>,
        outputs: Option<Arc<[f32]>>,
    },
    /// The captures do not hold it (a capture file without P, or
    /// without value norms): every cell without a value.
    Missing,
}

impl HeadMatrix {
    /// `matrix` of `head` in `captures`; a causal model's cells above the
    /// diagonal are masked.
    pub fn new(captures: &Captures, head: HeadId, matrix: MapMatrix, causal: bool) -> Self {
        let has_attention = captures.has_attention();
        let source = match matrix {
            MapMatrix::Attention if has_attention => Source::Attention { weighted: false },
            MapMatrix::ValueWeighted if has_attention && captures.has_value_norms() => {
                Source::Attention { weighted: true }
            }
            MapMatrix::Attention | MapMatrix::ValueWeighted => Source::Missing,
            MapMatrix::Similarity(variant) => {
                let outputs = (captures.has_outputs_on_disk())
                    .then(|| Arc::from(captures.head_output(head).into_owned()));
                let transform = (variant != SimilarityVariant::Raw).then(|| {
                    Arc::new(with_similarity(captures, head, outputs.as_deref(), |s| {
                        SimilarityTransform::new(s, captures.tokens, variant)
                    }))
                });
                Source::Similarity { transform, outputs }
            }
        };
        Self {
            head,
            tokens: captures.tokens,
            causal,
            source,
        }
    }

    pub fn head(&self) -> HeadId {
        self.head
    }

    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Rows `rows` × columns `columns` of the matrix into `out` (replaced;
    /// row-major), NaN where a cell is masked or has no value. `captures`
    /// are those the matrix was made for.
    pub fn read(
        &self,
        captures: &Captures,
        rows: Range<usize>,
        columns: Range<usize>,
        out: &mut Vec<f32>,
    ) {
        let t = self.tokens;
        debug_assert_eq!(captures.tokens, t);
        out.clear();
        out.reserve(rows.len() * columns.len());
        match &self.source {
            Source::Missing => out.resize(rows.len() * columns.len(), f32::NAN),
            Source::Attention { weighted } => {
                let norms = captures.head_value_norms(self.head);
                for (first, block) in whole_blocks(rows.clone(), ROW_BLOCK, t) {
                    let block = captures.attention_rows(self.head, block);
                    for i in rows.start.max(first)..rows.end.min(first + ROW_BLOCK) {
                        let row = &block[(i - first) * t..(i - first + 1) * t];
                        if *weighted {
                            let mut row = row.to_vec();
                            value_weight_row(&mut row, norms);
                            out.extend_from_slice(&row[columns.clone()]);
                        } else {
                            out.extend_from_slice(&row[columns.clone()]);
                        }
                    }
                }
            }
            Source::Similarity { transform, outputs } => {
                with_similarity(captures, self.head, outputs.as_deref(), |similarity| {
                    let per_block = similarity.rows_per_block(t);
                    let mut buffer = Vec::new();
                    for (first, range) in whole_blocks(rows.clone(), per_block, t) {
                        let block = similarity.block(first / per_block, t, &mut buffer);
                        debug_assert_eq!(block.len(), range.len() * t);
                        for i in rows.start.max(first)..rows.end.min(first + per_block) {
                            let row = &block
                                [(i - first) * t + columns.start..(i - first) * t + columns.end];
                            match transform {
                                None => out.extend_from_slice(row),
                                Some(transform) => transform.extend(i, columns.clone(), row, out),
                            }
                        }
                    }
                })
            }
        }
        if self.causal {
            let width = columns.len().max(1);
            for (i, row) in rows.zip(out.chunks_exact_mut(width)) {
                let first_masked = (i + 1).clamp(columns.start, columns.end) - columns.start;
                row[first_masked..].fill(f32::NAN);
            }
        }
    }

    /// The value of cell (`row`, `column`).
    pub fn value(&self, captures: &Captures, row: usize, column: usize) -> f32 {
        let mut out = Vec::with_capacity(1);
        self.read(captures, row..row + 1, column..column + 1, &mut out);
        out.first().copied().unwrap_or(f32::NAN)
    }
}

/// `read` of the head's S: made from `outputs` where given, else as the
/// captures hold it.
fn with_similarity<R>(
    captures: &Captures,
    head: HeadId,
    outputs: Option<&[f32]>,
    read: impl FnOnce(HeadSimilarity) -> R,
) -> R {
    match outputs {
        Some(outputs) => read(HeadSimilarity::Outputs(outputs, captures.head_dim)),
        None => captures.with_head_similarity(head, read),
    }
}

/// The whole row blocks of `per_block` rows (of `tokens`) that hold
/// `rows`, each as its first row and its rows: a head's matrix is made a
/// whole block at a time, as the pass and the analysis make it, for their
/// bits (the products' kernels round a lone row differently).
fn whole_blocks(
    rows: Range<usize>,
    per_block: usize,
    tokens: usize,
) -> impl Iterator<Item = (usize, Range<usize>)> {
    let per_block = per_block.max(1);
    let blocks = if rows.is_empty() {
        0..0
    } else {
        rows.start / per_block..(rows.end - 1) / per_block + 1
    };
    blocks.map(move |b| {
        (
            b * per_block,
            b * per_block..((b + 1) * per_block).min(tokens),
        )
    })
}

/// A rectangle of blocks of one level: per block, the maximum, the sum and
/// the count of its unmasked cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    pub level: u32,
    /// The first block's row and column in the level.
    pub first_row: usize,
    pub first_column: usize,
    pub rows: usize,
    pub columns: usize,
    max: Vec<f32>,
    sum: Vec<f64>,
    count: Vec<u32>,
}

impl Blocks {
    fn empty(
        level: u32,
        first_row: usize,
        first_column: usize,
        rows: usize,
        columns: usize,
    ) -> Self {
        let n = rows * columns;
        Self {
            level,
            first_row,
            first_column,
            rows,
            columns,
            max: vec![f32::NEG_INFINITY; n],
            sum: vec![0.0; n],
            count: vec![0; n],
        }
    }

    /// Block (`row`, `column`) of the rectangle (counted from its first).
    pub fn value(&self, reduction: BlockReduction, row: usize, column: usize) -> f32 {
        let k = row * self.columns + column;
        match (self.count[k], reduction) {
            (0, _) => f32::NAN,
            (_, BlockReduction::Max) => self.max[k],
            (n, BlockReduction::Mean) => (self.sum[k] / f64::from(n)) as f32,
        }
    }

    /// Every block's value, row-major.
    pub fn values(&self, reduction: BlockReduction) -> Vec<f32> {
        (0..self.rows)
            .flat_map(|r| (0..self.columns).map(move |c| self.value(reduction, r, c)))
            .collect()
    }

    /// The cells of one cell row `cells` (from cell column
    /// `first_column_cell`) into their blocks of block row `row`.
    fn add_cells(&mut self, row: usize, first_column_cell: usize, cells: &[f32]) {
        add_row_cells(self, row, first_column_cell, cells);
    }

    /// A run of cells of block `k` into it.
    #[inline(always)]
    fn add_run(&mut self, k: usize, cells: &[f32]) {
        let (max, sum, count) = reduce_run(cells);
        self.max[k] = self.max[k].max(max);
        self.sum[k] += sum;
        self.count[k] += count;
    }

    /// The next level up of a rectangle that starts at block (0, 0): each
    /// block merges (up to) 2 × 2 of these.
    fn coarser(&self) -> Blocks {
        debug_assert!(self.first_row == 0 && self.first_column == 0);
        let (rows, columns) = (self.rows.div_ceil(2), self.columns.div_ceil(2));
        let mut up = Blocks::empty(self.level + 1, 0, 0, rows, columns);
        for r in 0..self.rows {
            for c in 0..self.columns {
                let (from, to) = (r * self.columns + c, (r / 2) * columns + c / 2);
                up.max[to] = up.max[to].max(self.max[from]);
                up.sum[to] += self.sum[from];
                up.count[to] += self.count[from];
            }
        }
        up
    }

    /// Appends `band` (the next rows of the same columns) below.
    fn append(&mut self, band: Blocks) {
        debug_assert_eq!(self.columns, band.columns);
        self.rows += band.rows;
        self.max.extend(band.max);
        self.sum.extend(band.sum);
        self.count.extend(band.count);
    }
}

widest! {
    /// [`Blocks::add_cells`], a block's run of cells at a time.
    fn add_row_cells(blocks: &mut Blocks, row: usize, first_column_cell: usize, cells: &[f32]) -> () =
        add_row_cells_body;
}

#[inline(always)]
fn add_row_cells_body(blocks: &mut Blocks, row: usize, first_column_cell: usize, cells: &[f32]) {
    let (first_block, first_column) = (row * blocks.columns, blocks.first_column);
    // Inlined, so that the sums run in the widest vectors too.
    block_runs(
        first_column_cell,
        cells,
        blocks.level,
        #[inline(always)]
        |column, run| blocks.add_run(first_block + column - first_column, run),
    );
}

widest! {
    /// Cells (r, `column`) for r = `first_row_cell`, … (`cells`) into
    /// their blocks, a block's run at a time.
    fn add_column_cells(blocks: &mut Blocks, column: usize, first_row_cell: usize, cells: &[f32]) -> () =
        add_column_cells_body;
}

#[inline(always)]
fn add_column_cells_body(blocks: &mut Blocks, column: usize, first_row_cell: usize, cells: &[f32]) {
    let block_column = (column >> blocks.level) - blocks.first_column;
    block_runs(
        first_row_cell,
        cells,
        blocks.level,
        #[inline(always)]
        |row, run| {
            let block_row = row - blocks.first_row;
            blocks.add_run(block_row * blocks.columns + block_column, run)
        },
    );
}

/// `cells` of one line of cells (a row or a column) from cell `first` on,
/// cut where the blocks of level `level` end: `f(block, run)` for each
/// run, with its block's index along the line.
#[inline(always)]
fn block_runs(first: usize, cells: &[f32], level: u32, mut f: impl FnMut(usize, &[f32])) {
    let (mut at, mut rest) = (first, cells);
    while !rest.is_empty() {
        let block_end = ((at >> level) + 1) << level;
        let (run, after) = rest.split_at(block_end.min(at + rest.len()) - at);
        f(at >> level, run);
        at += run.len();
        rest = after;
    }
}

/// The maximum, the sum (f64) and the count of the cells that have a
/// value (masked cells are NaN), in eight lanes that vectorise: the order
/// of the sum is the run's own, whatever the thread.
#[inline(always)]
fn reduce_run(cells: &[f32]) -> (f32, f64, u32) {
    const LANES: usize = 8;
    let mut max = [f32::NEG_INFINITY; LANES];
    let mut sum = [0.0f64; LANES];
    let mut count = [0u32; LANES];
    let mut add = |lane: usize, v: f32| {
        let kept = !v.is_nan();
        // A NaN compares false and leaves the maximum.
        max[lane] = if v > max[lane] { v } else { max[lane] };
        sum[lane] += if kept { f64::from(v) } else { 0.0 };
        count[lane] += u32::from(kept);
    };
    let chunks = cells.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in chunk.iter().enumerate() {
            add(lane, v);
        }
    }
    for (lane, &v) in rest.iter().enumerate() {
        add(lane, v);
    }
    (
        max.into_iter().fold(f32::NEG_INFINITY, f32::max),
        sum.into_iter().sum(),
        count.into_iter().sum(),
    )
}

/// Cells a map's overview samples for the colour range, at most, a side.
pub const SAMPLE_SIDE: usize = 512;

/// How many blocks and sampled cells a side an overview holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverviewSize {
    /// The base level is the finest whose side is at most this many blocks.
    pub blocks: usize,
    /// Cells sampled for the colour range: at most this many a side.
    pub sample: usize,
}

impl OverviewSize {
    /// A head's thumbnail in the grid: small, as a long pass keeps every
    /// head's (128 KB a matrix).
    pub const THUMBNAIL: OverviewSize = OverviewSize {
        blocks: 128,
        sample: 128,
    };
}

/// What a map keeps of a head to draw it at coarse zooms: every level from
/// `base` (the finest whose side fits the limit) up to one block, and a
/// sample of the cells for the colour range.
#[derive(Debug, Clone)]
pub struct MapOverview {
    pub base: u32,
    /// Level `base + k` at index k.
    levels: Vec<Blocks>,
    /// The cells (i, j) with i and j multiples of `sample_step`, row-major:
    /// `sample_side` × `sample_side`, the whole matrix when T is at most
    /// the size's sample. Its first row and column are token 0's.
    pub sample: Vec<f32>,
    pub sample_side: usize,
}

impl MapOverview {
    /// Level `level`, when the overview holds it.
    pub fn level(&self, level: u32) -> Option<&Blocks> {
        level
            .checked_sub(self.base)
            .and_then(|k| self.levels.get(k as usize))
    }
}

/// The overview of `matrix` of `size`, made a band of rows at a time on up to
/// `threads` threads leased from the budget (1: on the calling thread,
/// leasing nothing, for a caller that holds a lease); `cancelled` stops it (`None`) and
/// `done` is told of each band (of [`overview_bands`]) finished.
pub fn overview(
    captures: &Captures,
    matrix: &HeadMatrix,
    size: OverviewSize,
    threads: usize,
    cancelled: &(dyn Fn() -> bool + Sync),
    done: &(dyn Fn() + Sync),
) -> Option<MapOverview> {
    let t = matrix.tokens();
    let base = level_within(t, size.blocks);
    let side = level_side(t, base);
    let band_rows = overview_band_rows(t, size.blocks);
    let step = sample_step(t, size.sample);
    let read_band = |band: usize| {
        if cancelled() {
            return None;
        }
        let rows = band * band_rows..((band + 1) * band_rows).min(t);
        let first_block = rows.start >> base;
        let block_rows = level_side(rows.end, base) - first_block;
        let mut blocks = Blocks::empty(base, first_block, 0, block_rows, side);
        let mut sample: Vec<f32> = Vec::new();
        let mut cells = Vec::new();
        for (_, chunk) in whole_blocks(rows, ROW_BLOCK, t) {
            matrix.read(captures, chunk.clone(), 0..t, &mut cells);
            for (i, row) in chunk.zip(cells.chunks_exact(t.max(1))) {
                blocks.add_cells((i >> base) - first_block, 0, row);
                if i % step == 0 {
                    sample.extend(row.iter().step_by(step));
                }
            }
        }
        done();
        Some((blocks, sample))
    };
    let count = t.div_ceil(band_rows);
    let bands: Vec<_> = if threads <= 1 {
        // On the calling thread, under the lease it holds (a second lease
        // on one thread would wait for the first).
        (0..count).map(read_band).collect()
    } else {
        crate::threads::map_indices(count, threads, read_band)
    };
    let mut finest = Blocks::empty(base, 0, 0, 0, side);
    let mut sample = Vec::new();
    for band in bands {
        let (blocks, band_sample) = band?;
        finest.append(blocks);
        sample.extend(band_sample);
    }
    let mut levels = vec![finest];
    while let Some(last) = levels.last().filter(|l| l.rows > 1 || l.columns > 1) {
        let up = last.coarser();
        levels.push(up);
    }
    Some(MapOverview {
        base,
        levels,
        sample,
        sample_side: t.div_ceil(step),
    })
}

/// How many bands [`overview`] reads (its progress steps).
pub fn overview_bands(tokens: usize, limit: usize) -> usize {
    tokens.div_ceil(overview_band_rows(tokens, limit))
}

/// A band is whole blocks of the base level and whole row blocks of the
/// attention core (both powers of two), so one thread sums every block.
fn overview_band_rows(tokens: usize, limit: usize) -> usize {
    (1usize << level_within(tokens, limit)).max(ROW_BLOCK)
}

fn sample_step(tokens: usize, side: usize) -> usize {
    tokens.div_ceil(side.max(1)).max(1)
}

/// Blocks `block_rows` × `block_columns` of level `level` (cut at the
/// matrix's edge), read from the cells they cover.
pub fn tile(
    captures: &Captures,
    matrix: &HeadMatrix,
    level: u32,
    block_rows: Range<usize>,
    block_columns: Range<usize>,
) -> Blocks {
    let t = matrix.tokens();
    let side = level_side(t, level);
    let block_rows = block_rows.start.min(side)..block_rows.end.min(side);
    let block_columns = block_columns.start.min(side)..block_columns.end.min(side);
    let cell_rows = (block_rows.start << level)..(block_rows.end << level).min(t);
    let cell_columns = (block_columns.start << level)..(block_columns.end << level).min(t);
    let mut blocks = Blocks::empty(
        level,
        block_rows.start,
        block_columns.start,
        block_rows.len(),
        block_columns.len(),
    );
    let mut cells = Vec::new();
    for (first, block) in whole_blocks(cell_rows.clone(), ROW_BLOCK, t) {
        let chunk = cell_rows.start.max(first)..cell_rows.end.min(block.end);
        matrix.read(captures, chunk.clone(), cell_columns.clone(), &mut cells);
        for (i, row) in chunk.zip(cells.chunks_exact(cell_columns.len().max(1))) {
            blocks.add_cells((i >> level) - block_rows.start, cell_columns.start, row);
        }
    }
    blocks
}
