//! One grid of a model's heads: a row per layer (L0 at the top), a column
//! per head, "H0 H1 …" above and "L0 L1 …" to the left, and optionally a
//! last column for the layer's own figure. The Heads tab's thumbnails, the
//! Separators view's attention per head, the corpus window's means and the
//! Compare tab's two models are each one [`HeadGrid`]; what a cell shows is
//! the caller's, drawn by a closure that gets the cell's rectangle and its
//! response (hovered, clicked), so every grid lays out, labels and answers
//! clicks the same way.

use crate::captures::HeadId;
use egui::{Align2, FontId, Painter, Rect, Response, Sense, Vec2};

/// A grid of heads, configured by its builder methods and drawn by
/// [`HeadGrid::show`].
pub struct HeadGrid<'a> {
    /// Told apart from other grids in the same place by this.
    salt: egui::Id,
    /// The layers shown, top to bottom.
    layers: &'a [usize],
    heads: usize,
    /// A cell's size (picture and caption).
    cell: Vec2,
    /// The room between two cells.
    gap: Vec2,
    row_header: f32,
    column_header: f32,
    /// The caption band at the bottom of each cell: row labels centre on
    /// the picture above it.
    caption: f32,
    font_size: f32,
    /// Column titles "0 1 2 …" instead of "H0 H1 H2 …" (small cells).
    bare_numbers: bool,
    /// A last column for the layer's own figure: its title and the room
    /// before it.
    layer_column: Option<(&'a str, f32)>,
    /// A layer whose label is drawn strong.
    emphasised: Option<usize>,
    sense: Sense,
}

/// One cell as the grid hands it to the caller's drawing.
pub struct GridCell {
    pub layer: usize,
    /// The head; `None` in the layer's own column.
    pub head: Option<usize>,
    pub rect: Rect,
    pub response: Response,
}

impl GridCell {
    /// The head of this cell, unless it is the layer's own column.
    pub fn head_id(&self) -> Option<HeadId> {
        self.head.map(|h| HeadId::new(self.layer, h))
    }
}

/// What the grid reports after drawing.
pub struct HeadGridResponse {
    /// The whole grid (to label it, or for a tooltip of its own).
    pub response: Response,
    /// The head whose cell was clicked.
    pub clicked: Option<HeadId>,
    /// The rectangle of each shown layer's row of cells, top to bottom.
    pub rows: Vec<Rect>,
}

impl<'a> HeadGrid<'a> {
    /// A grid of `layers` (the rows shown) × `heads` cells of `cell` size.
    pub fn new(
        id_salt: impl std::hash::Hash + std::fmt::Debug,
        layers: &'a [usize],
        heads: usize,
        cell: Vec2,
    ) -> Self {
        Self {
            salt: egui::Id::unique(id_salt),
            layers,
            heads,
            cell,
            gap: Vec2::ZERO,
            row_header: 30.0,
            column_header: 18.0,
            caption: 0.0,
            font_size: 12.0,
            bare_numbers: false,
            layer_column: None,
            emphasised: None,
            sense: Sense::click(),
        }
    }

    /// The room between cells.
    pub fn gap(mut self, gap: Vec2) -> Self {
        self.gap = gap;
        self
    }

    /// The widths of the row labels and the height of the column titles.
    pub fn headers(mut self, row_header: f32, column_header: f32) -> Self {
        self.row_header = row_header;
        self.column_header = column_header;
        self
    }

    /// A caption band of `height` at the bottom of each cell.
    pub fn caption(mut self, height: f32) -> Self {
        self.caption = height;
        self
    }

    /// The size of the row and column titles.
    pub fn font_size(mut self, size: f32) -> Self {
        self.font_size = size;
        self
    }

    /// Column titles without the "H" (for small cells).
    pub fn bare_numbers(mut self) -> Self {
        self.bare_numbers = true;
        self
    }

    /// A last column for the layer's own figure, titled `title`, `room`
    /// apart from the heads.
    pub fn layer_column(mut self, title: &'a str, room: f32) -> Self {
        self.layer_column = Some((title, room));
        self
    }

    /// Draws the label of `layer` strong (the layer a view shows).
    pub fn emphasise(mut self, layer: Option<usize>) -> Self {
        self.emphasised = layer;
        self
    }

    /// How the cells answer the pointer (click by default).
    pub fn sense(mut self, sense: Sense) -> Self {
        self.sense = sense;
        self
    }

    /// The cell size that fills `width` with `heads` columns (and `extra`
    /// more), between `min` and `max`.
    pub fn fitted_width(width: f32, heads: usize, extra: f32, gap: f32, min: f32, max: f32) -> f32 {
        (width / (heads as f32 + extra).max(1.0) - gap).clamp(min, max)
    }

    /// The grid's whole size.
    pub fn size(&self) -> Vec2 {
        let pitch = self.cell + self.gap;
        let extra = self.layer_column.map_or(0.0, |(_, room)| room + pitch.x);
        Vec2::new(
            self.row_header + pitch.x * self.heads as f32 + extra,
            self.column_header + pitch.y * self.layers.len() as f32,
        )
    }

    /// Draws the grid; `paint` draws each cell (and sets its tooltip and
    /// accessible name) with a painter clipped a little outside the grid,
    /// so outlines around the edge cells show.
    pub fn show(
        self,
        ui: &mut egui::Ui,
        mut paint: impl FnMut(&mut egui::Ui, &Painter, GridCell),
    ) -> HeadGridResponse {
        let (rect, response) = ui.allocate_exact_size(self.size(), Sense::hover());
        let painter = ui.painter_at(rect.expand(3.0));
        let id = ui.scope_id().with(self.salt);
        let pitch = self.cell + self.gap;
        let font = FontId::proportional(self.font_size);
        let weak = ui.visuals().weak_text_color();
        let strong = ui.visuals().strong_text_color();
        let columns = self.heads + usize::from(self.layer_column.is_some());
        let left_of = |column: usize| {
            let room = if column >= self.heads {
                self.layer_column.map_or(0.0, |(_, room)| room)
            } else {
                0.0
            };
            rect.left() + self.row_header + pitch.x * column as f32 + self.gap.x / 2.0 + room
        };
        for column in 0..columns {
            let title = match (column < self.heads, self.bare_numbers) {
                (false, _) => self.layer_column.map_or("", |(t, _)| t).to_string(),
                (true, true) => column.to_string(),
                (true, false) => format!("H{column}"),
            };
            painter.text(
                egui::pos2(
                    left_of(column) + self.cell.x / 2.0,
                    rect.top() + self.column_header / 2.0,
                ),
                Align2::CENTER_CENTER,
                title,
                font.clone(),
                weak,
            );
        }
        let mut clicked = None;
        let mut rows = Vec::with_capacity(self.layers.len());
        for (row, &layer) in self.layers.iter().enumerate() {
            let top = rect.top() + self.column_header + pitch.y * row as f32;
            let colour = if self.emphasised == Some(layer) {
                strong
            } else {
                weak
            };
            painter.text(
                egui::pos2(
                    rect.left() + self.row_header / 2.0,
                    top + (self.cell.y - self.caption) / 2.0,
                ),
                Align2::CENTER_CENTER,
                format!("L{layer}"),
                font.clone(),
                colour,
            );
            for column in 0..columns {
                let cell_rect = Rect::from_min_size(egui::pos2(left_of(column), top), self.cell);
                let response = ui.interact(cell_rect, id.with(("cell", layer, column)), self.sense);
                let head = (column < self.heads).then_some(column);
                if response.clicked() {
                    clicked = head.map(|h| HeadId::new(layer, h));
                }
                paint(
                    ui,
                    &painter,
                    GridCell {
                        layer,
                        head,
                        rect: cell_rect,
                        response,
                    },
                );
            }
            rows.push(Rect::from_min_max(
                egui::pos2(rect.left(), top),
                egui::pos2(left_of(columns.max(1) - 1) + self.cell.x, top + self.cell.y),
            ));
        }
        HeadGridResponse {
            response,
            clicked,
            rows,
        }
    }
}
