//! A head's heatmap at any zoom ([`crate::head_map`]): an overview that
//! fits the screen, and tiles of finer levels computed off the UI thread as
//! the view zooms in, down to single cells.
//!
//! The overview is one texture of at most [`OVERVIEW_BLOCKS`] a side: a
//! short input's whole matrix, a long one's blocks (each pixel the max or
//! the mean of its block). It is made at once for a short input and on a
//! thread with progress and Cancel for a long one. Closer in, the visible
//! tiles of the level where a block is about a pixel are asked for; until
//! one is there the overview shows, magnified, in its place. A tile holds
//! both reductions, so switching between max and mean only recolours.

use crate::app::jobs::{spawn_job, spawn_tracked_job, JobProgress};
use crate::app::widgets::heatmap::{self, ViewKey};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ColourScale, ValueRange};
use crate::head_map::{
    self, BlockReduction, Blocks, HeadMatrix, MapMatrix, MapOverview, OverviewSize,
};
use crate::pipeline::RunOutput;
use crate::worker::Waker;
use crossbeam_channel::{Receiver, TryRecvError};
use egui::{Color32, ColorImage, Pos2, Rect, TextureHandle, Vec2};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The overview's side, in blocks, at most: a matrix of up to this many
/// tokens is drawn cell by cell, a longer one in blocks until zoomed in.
pub const OVERVIEW_BLOCKS: usize = 1024;
/// A tile's side, in blocks.
pub const TILE_BLOCKS: usize = 256;
/// Tiles kept as textures (the least recently drawn go first).
const KEPT_TILES: usize = 64;

/// The matrix a heatmap of `key` shows.
pub fn map_matrix(key: &ViewKey) -> MapMatrix {
    use crate::app::settings::MatrixKind;
    match key.kind {
        MatrixKind::Attention => MapMatrix::Attention,
        MatrixKind::ValueWeighted => MapMatrix::ValueWeighted,
        MatrixKind::Similarity => MapMatrix::Similarity(key.variant),
    }
}

/// One tile of a level: `level`, its row and column in tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct TileKey {
    level: u32,
    row: usize,
    column: usize,
}

struct Tile {
    blocks: Blocks,
    texture: TextureHandle,
    drawn: u64,
}

/// What the map shows and how it colours it.
struct Shown {
    output: Arc<RunOutput>,
    matrix: HeadMatrix,
    overview: Arc<MapOverview>,
    map: ColorMap,
    scale: ColourScale,
    range: ValueRange,
}

/// Tiles being computed, sent back one by one.
struct TileJob {
    wanted: Vec<TileKey>,
    receiver: Receiver<(TileKey, Blocks)>,
    stop: Arc<AtomicBool>,
}

/// A long input's overview being made: the matrix and its overview come
/// back (`None`: stopped).
type BuildingOverview = (
    Receiver<Option<(HeadMatrix, MapOverview)>>,
    Arc<JobProgress>,
);

/// The map of one head under one view key.
#[derive(Default)]
pub struct ZoomMap {
    key: Option<(ViewKey, HeadId)>,
    shown: Option<Shown>,
    reduction: BlockReduction,
    overview_texture: Option<TextureHandle>,
    building: Option<BuildingOverview>,
    cancelled: bool,
    tiles: HashMap<TileKey, Tile>,
    tile_job: Option<TileJob>,
    frame: u64,
    last_level: Option<u32>,
    /// The last cell read from the captures, and its value (a pointer
    /// resting on a long map's cell reads it once, not every frame).
    last_read: std::cell::Cell<Option<(usize, usize, f32)>>,
}

/// What a frame draws: the cells from `origin` (fractional), `cells` a
/// side, into `plot`.
#[derive(Debug, Clone, Copy)]
pub struct Viewport {
    pub plot: Rect,
    pub origin: Vec2,
    pub cells: f32,
}

impl Viewport {
    fn screen_of(self, cell: Vec2) -> Pos2 {
        self.plot.min + (cell - self.origin) * (self.plot.width() / self.cells)
    }
}

impl ZoomMap {
    /// Makes the map of `head` under `key` when either changed (at once
    /// for a short input, on a thread for a long one), and takes what the
    /// threads finished.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        output: &Arc<RunOutput>,
        key: ViewKey,
        head: HeadId,
        reduction: BlockReduction,
        wake: &Waker,
    ) {
        if self.key != Some((key, head)) {
            self.start(ctx, output, key, head, wake);
        }
        if let Some((receiver, _)) = &self.building {
            match receiver.try_recv() {
                Ok(Some((matrix, overview))) => {
                    self.building = None;
                    self.show(ctx, output, key, matrix, overview);
                }
                Ok(None) => {
                    self.building = None;
                    self.cancelled = true;
                }
                Err(TryRecvError::Disconnected) => self.building = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        if reduction != self.reduction {
            self.reduction = reduction;
            self.recolour(ctx);
        }
        self.take_tiles(ctx);
    }

    fn start(
        &mut self,
        ctx: &egui::Context,
        output: &Arc<RunOutput>,
        key: ViewKey,
        head: HeadId,
        wake: &Waker,
    ) {
        self.key = Some((key, head));
        self.cancelled = false;
        // Not another head's picture under this one's title meanwhile.
        self.shown = None;
        if let Some((_, progress)) = self.building.take() {
            progress.cancel();
        }
        self.stop_tiles();
        for (_, tile) in self.tiles.drain() {
            heatmap::forget_pixels(ctx, tile.texture.id());
        }
        self.last_read.set(None);
        let tokens = output.captures.tokens;
        let matrix_of = map_matrix(&key);
        if tokens <= OVERVIEW_BLOCKS {
            // A short input: its whole matrix, at once, as before maps.
            let made = make_map(output, head, matrix_of, 1, &|| false, &|| {});
            if let Some((matrix, overview)) = made {
                self.show(ctx, output, key, matrix, overview);
            }
            return;
        }
        let bands = head_map::overview_bands(tokens, OVERVIEW_BLOCKS);
        let output = output.clone();
        let (receiver, progress) = spawn_tracked_job(
            "headscope-head-map",
            &format!("Drawing L{} H{}", head.layer, head.head),
            bands + 1,
            wake.clone(),
            move |progress| {
                make_map(
                    &output,
                    head,
                    matrix_of,
                    crate::threads::total(),
                    &|| progress.is_cancelled(),
                    &|| progress.step(),
                )
            },
        );
        self.building = Some((receiver, progress));
    }

    fn show(
        &mut self,
        ctx: &egui::Context,
        output: &Arc<RunOutput>,
        key: ViewKey,
        matrix: HeadMatrix,
        overview: MapOverview,
    ) {
        let scale = heatmap::colour_scale(output, &key);
        let (_, range) =
            heatmap::picture(key.colormap, scale, &overview.sample, overview.sample_side);
        self.shown = Some(Shown {
            output: output.clone(),
            matrix,
            overview: Arc::new(overview),
            map: key.colormap,
            scale,
            range,
        });
        self.recolour(ctx);
    }

    /// Colours the overview and every kept tile again (a new reduction).
    fn recolour(&mut self, ctx: &egui::Context) {
        let Some(shown) = &self.shown else {
            return;
        };
        if let Some(base) = shown.overview.level(shown.overview.base) {
            let image = colour_blocks(shown, base, self.reduction);
            heatmap::upload(ctx, &mut self.overview_texture, "head map overview", image);
        }
        for (key, tile) in self.tiles.iter_mut() {
            let image = colour_blocks(shown, &tile.blocks, self.reduction);
            let name = format!("head map tile {key:?}");
            heatmap::upload(ctx, &mut Some(tile.texture.clone()), &name, image);
        }
    }

    /// The build of a long input's overview, for its progress row.
    pub fn building(&self) -> Option<&JobProgress> {
        self.building.as_ref().map(|(_, p)| p.as_ref())
    }

    /// Whether the user stopped the overview's build.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Makes the map again after its build was stopped.
    pub fn draw_again(&mut self) {
        self.key = None;
        self.cancelled = false;
    }

    /// Whether the map of the current key is on screen.
    pub fn is_ready(&self) -> bool {
        self.shown.is_some() && self.building.is_none()
    }

    /// The colour range and how it is spread, in the values' own units.
    pub fn range(&self) -> Option<ValueRange> {
        self.shown.as_ref().map(|s| s.scale.shown_range(s.range))
    }

    /// The exact value of cell (`row`, `column`): from a cell-level tile or
    /// overview when one holds it, else read from the captures.
    pub fn value(&self, row: usize, column: usize) -> f32 {
        let Some(shown) = &self.shown else {
            return f32::NAN;
        };
        if shown.overview.base == 0 {
            if let Some(cells) = shown.overview.level(0) {
                return cells.value(BlockReduction::Max, row, column);
            }
        }
        let key = TileKey {
            level: 0,
            row: row / TILE_BLOCKS,
            column: column / TILE_BLOCKS,
        };
        if let Some(tile) = self.tiles.get(&key) {
            return tile.blocks.value(
                BlockReduction::Max,
                row - tile.blocks.first_row,
                column - tile.blocks.first_column,
            );
        }
        if let Some((r, c, value)) = self.last_read.get() {
            if (r, c) == (row, column) {
                return value;
            }
        }
        let value = shown.matrix.value(&shown.output.captures, row, column);
        self.last_read.set(Some((row, column, value)));
        value
    }

    /// The level the last frame drew at.
    pub fn shown_level(&self) -> Option<u32> {
        self.last_level
    }

    /// The level a view of `viewport` draws: where a block is about a
    /// pixel (the overview's own, or finer).
    pub fn level_for(&self, viewport: &Viewport) -> Option<u32> {
        let shown = self.shown.as_ref()?;
        let cells_per_pixel = viewport.cells / viewport.plot.width().max(1.0);
        let level = cells_per_pixel.max(1.0).log2().floor() as u32;
        Some(level.min(shown.overview.base))
    }

    /// Draws the visible part of the map into `viewport.plot`, and asks for
    /// the tiles it lacks. Every kept tile in view is drawn, coarse ones
    /// first: a finer one covers them, and while the tiles of a new zoom
    /// are made the nearest ones stand in. Each picture is cut to the plot
    /// by its texture coordinates, not by clipping, so an exported figure
    /// holds the visible region only.
    pub fn paint(&mut self, painter: &egui::Painter, viewport: Viewport, wake: &Waker) {
        self.frame += 1;
        let (Some(shown), Some(texture)) = (&self.shown, &self.overview_texture) else {
            return;
        };
        let tokens = shown.matrix.tokens();
        let base = shown.overview.base;
        // The overview's texture spans its blocks: side · 2^base cells.
        let span = (head_map::level_side(tokens, base) << base) as f32;
        image_within(
            painter,
            texture.id(),
            &viewport,
            Vec2::ZERO,
            Vec2::splat(span),
        );
        let Some(level) = self.level_for(&viewport) else {
            return;
        };
        self.last_level = Some(level);
        let mut in_view: Vec<(u32, TileKey)> = Vec::new();
        for (key, tile) in &self.tiles {
            let (min, size) = tile_cells(&tile.blocks);
            let rect = Rect::from_min_size(min.to_pos2(), size);
            let view = Rect::from_min_size(viewport.origin.to_pos2(), Vec2::splat(viewport.cells));
            if rect.intersects(view) {
                in_view.push((key.level, *key));
            }
        }
        in_view.sort_by_key(|(level, _)| std::cmp::Reverse(*level));
        for (_, key) in in_view {
            if let Some(tile) = self.tiles.get_mut(&key) {
                tile.drawn = self.frame;
                let (min, size) = tile_cells(&tile.blocks);
                image_within(painter, tile.texture.id(), &viewport, min, size);
            }
        }
        if level >= base {
            return;
        }
        // The visible tiles of `level` not yet made, nearest the centre
        // first.
        let tile_cells = (TILE_BLOCKS << level) as f32;
        let tiles_side = head_map::level_side(tokens, level).div_ceil(TILE_BLOCKS);
        let first = (viewport.origin / tile_cells).floor();
        let last = ((viewport.origin + Vec2::splat(viewport.cells)) / tile_cells).ceil();
        let range = |a: f32, b: f32| (a.max(0.0) as usize)..(b.max(0.0) as usize).min(tiles_side);
        let mut wanted: Vec<TileKey> = range(first.y, last.y)
            .flat_map(|row| {
                range(first.x, last.x).map(move |column| TileKey { level, row, column })
            })
            .filter(|key| !self.tiles.contains_key(key))
            .collect();
        let centre = (viewport.origin + Vec2::splat(viewport.cells / 2.0)) / tile_cells;
        wanted.sort_by(|a, b| {
            let d = |k: &TileKey| {
                (Vec2::new(k.column as f32 + 0.5, k.row as f32 + 0.5) - centre).length_sq()
            };
            d(a).total_cmp(&d(b))
        });
        self.ask_for(wanted, wake);
    }

    /// Starts computing `wanted` unless a job already computes them.
    fn ask_for(&mut self, wanted: Vec<TileKey>, wake: &Waker) {
        if let Some(job) = &self.tile_job {
            if wanted.iter().all(|k| job.wanted.contains(k)) {
                return;
            }
        }
        self.stop_tiles();
        let Some(shown) = &self.shown else {
            return;
        };
        if wanted.is_empty() {
            return;
        }
        let (sender, receiver) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let (output, matrix, keys) = (shown.output.clone(), shown.matrix.clone(), wanted.clone());
        let stopped = stop.clone();
        let wake = wake.clone();
        // Tiles a few at a time on the budget's threads, each sent back
        // as soon as it is there; the threads are held from one batch to
        // the next, so that the grid's thumbnails, which lease a thread a
        // head, wait for the zoom the user is looking at.
        let _ = spawn_job("headscope-map-tiles", wake.clone(), move || {
            let lease = crate::threads::lease(keys.len().min(crate::threads::total()));
            for batch in keys.chunks(lease.threads()) {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let tiles = lease.map_indices(batch.len(), |k| {
                    let key = batch[k];
                    let first = |t: usize| t * TILE_BLOCKS;
                    head_map::tile(
                        &output.captures,
                        &matrix,
                        key.level,
                        first(key.row)..first(key.row + 1),
                        first(key.column)..first(key.column + 1),
                    )
                });
                for (key, blocks) in batch.iter().zip(tiles) {
                    let _ = sender.send((*key, blocks));
                }
                wake();
            }
        });
        self.tile_job = Some(TileJob {
            wanted,
            receiver,
            stop,
        });
    }

    fn stop_tiles(&mut self) {
        if let Some(job) = self.tile_job.take() {
            job.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Puts the tiles that came on screen, forgetting the least recently
    /// drawn beyond [`KEPT_TILES`].
    fn take_tiles(&mut self, ctx: &egui::Context) {
        let Some(job) = &self.tile_job else {
            return;
        };
        let Some(shown) = &self.shown else {
            return;
        };
        let mut finished = false;
        loop {
            match job.receiver.try_recv() {
                Ok((key, blocks)) => {
                    let image = colour_blocks(shown, &blocks, self.reduction);
                    let mut texture = None;
                    heatmap::upload(ctx, &mut texture, &format!("head map tile {key:?}"), image);
                    if let Some(texture) = texture {
                        let drawn = self.frame;
                        self.tiles.insert(
                            key,
                            Tile {
                                blocks,
                                texture,
                                drawn,
                            },
                        );
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    finished = true;
                    break;
                }
            }
        }
        if finished {
            self.tile_job = None;
        }
        while self.tiles.len() > KEPT_TILES {
            let oldest = self
                .tiles
                .iter()
                .min_by_key(|(_, t)| t.drawn)
                .map(|(k, _)| *k);
            if let Some(tile) = oldest.and_then(|key| self.tiles.remove(&key)) {
                heatmap::forget_pixels(ctx, tile.texture.id());
            }
        }
    }

    /// How many tiles of `level` are kept.
    pub fn tiles_at(&self, level: u32) -> usize {
        self.tiles.keys().filter(|k| k.level == level).count()
    }

    /// Whether tiles are being computed.
    pub fn is_drawing_tiles(&self) -> bool {
        self.tile_job.is_some()
    }
}

/// `matrix` of `head` and its overview, on `threads` threads; `done` is
/// told once the matrix is ready (a similarity variant's statistics) and
/// after each band of the overview.
fn make_map(
    output: &RunOutput,
    head: HeadId,
    matrix: MapMatrix,
    threads: usize,
    cancelled: &(dyn Fn() -> bool + Sync),
    done: &(dyn Fn() + Sync),
) -> Option<(HeadMatrix, MapOverview)> {
    let causal = output.input.tokens.causal;
    let matrix = HeadMatrix::new(&output.captures, head, matrix, causal);
    done();
    let overview = head_map::overview(
        &output.captures,
        &matrix,
        OverviewSize {
            blocks: OVERVIEW_BLOCKS,
            sample: head_map::SAMPLE_SIDE,
        },
        threads,
        cancelled,
        done,
    )?;
    Some((matrix, overview))
}

/// The cells a rectangle of blocks covers: its first cell and its size
/// (cut at the matrix's edge by the blocks' own count).
fn tile_cells(blocks: &Blocks) -> (Vec2, Vec2) {
    let level = blocks.level;
    let min = Vec2::new(
        (blocks.first_column << level) as f32,
        (blocks.first_row << level) as f32,
    );
    let size = Vec2::new(
        (blocks.columns << level) as f32,
        (blocks.rows << level) as f32,
    );
    (min, size)
}

/// Draws a texture spanning the cells from `min`, `size` of them, where
/// it lies within the viewport's plot: the visible part of the picture
/// only, chosen by texture coordinates.
fn image_within(
    painter: &egui::Painter,
    texture: egui::TextureId,
    viewport: &Viewport,
    min: Vec2,
    size: Vec2,
) {
    let rect = Rect::from_min_max(viewport.screen_of(min), viewport.screen_of(min + size));
    let visible = rect.intersect(viewport.plot);
    if !visible.is_positive() {
        return;
    }
    let uv = Rect::from_min_max(
        ((visible.min - rect.min) / rect.size()).to_pos2(),
        ((visible.max - rect.min) / rect.size()).to_pos2(),
    );
    painter.image(texture, visible, uv, Color32::WHITE);
}

/// A rectangle of blocks in the map's colours.
fn colour_blocks(shown: &Shown, blocks: &Blocks, reduction: BlockReduction) -> ColorImage {
    let coloured = shown.scale.coloured(&blocks.values(reduction));
    heatmap::colour_image_sized(
        &coloured,
        [blocks.columns, blocks.rows],
        shown.map,
        shown.range,
    )
}
