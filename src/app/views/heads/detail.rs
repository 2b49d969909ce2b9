//! One head up close: its large heatmap with token labels on both axes,
//! zoom (scroll) and pan (drag), the value under the pointer, the selected
//! pairs outlined, and the head's and layer's figures (ANALYSIS.md §4–§5)
//! beside it, "—" where a figure is undefined.
//!
//! The heatmap is a [`ZoomMap`]: one texture for a short input, an
//! overview and tiles made off the UI thread for a long one. Labels and
//! outlines are drawn only for the visible cells. The map is a figure
//! whose Save buttons write the region in view.

use super::ablation::toggle_label;
use crate::analysis::SelectedPairs;
use crate::app::settings::{MatrixKind, Settings};
use crate::app::views::shared::pairs::HeadPairs;
use crate::app::widgets::busy;
use crate::app::widgets::format::{category_style, figure};
use crate::app::widgets::heatmap::{self, ViewKey};
use crate::app::widgets::pane;
use crate::app::widgets::plots::{self, SaveRequest};
use crate::app::widgets::zoom_map::{Viewport, ZoomMap, OVERVIEW_BLOCKS};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use crate::head_map::BlockReduction;
use crate::pipeline::RunOutput;
use crate::worker::Waker;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use std::sync::Arc;

/// Labels need this many pixels per cell to be drawn for every token.
const LABEL_MIN_CELL: f32 = 7.0;
/// Room for the token labels left of and above the heatmap.
const LABEL_MARGIN: f32 = 72.0;

/// What the detail marks on the head shown.
#[derive(Clone, Copy)]
pub struct HeadMarks<'a> {
    /// The tokens picked in the text: their rows and columns outlined.
    pub picked: &'a [usize],
    /// The head is ablated (its switch says so).
    pub ablated: bool,
}

/// What the user asked for in the detail view this frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadAction {
    Show(HeadId),
    Back,
    /// Ablate the head shown, or give it back (ANALYSIS.md §9).
    ToggleAblation,
    /// Save the region of the map in view as a figure.
    SaveRegion(SaveRequest),
}

/// The detail view's map and zoom state.
pub struct HeadView {
    /// The head's heatmap at any zoom.
    pub map: ZoomMap,
    tokens: usize,
    /// 1 shows every token; 2 shows half of them, larger.
    zoom: f32,
    /// Centre of the view, in cells.
    centre: Vec2,
    /// Whether to give the heatmap keyboard focus next frame.
    focus_next_frame: bool,
    /// Wakes the UI when a tile of the map is there.
    wake: Option<Waker>,
    /// The result shown (its generation).
    generation: u64,
    /// The cells of the shown head's selected pairs, by row.
    outlined: OutlinedCells,
    /// The head's selected pairs, where the analysis did not keep them.
    pairs: HeadPairs,
    /// The cell under the pointer this frame (row, column).
    hovered: Option<(usize, usize)>,
}

/// The cells that outline a head's selected pairs, sorted by row and
/// column: in both triangles (S is symmetric), or below the diagonal
/// only for a causal model, whose upper triangle is masked.
#[derive(Default)]
struct OutlinedCells {
    /// The result, the head, and whether its pairs were there.
    of: Option<(u64, HeadId, bool)>,
    cells: Vec<(u32, u32)>,
}

impl OutlinedCells {
    fn cells(
        &mut self,
        (generation, head): (u64, HeadId),
        output: &RunOutput,
        pairs: Option<&SelectedPairs>,
    ) -> &[(u32, u32)] {
        let of = Some((generation, head, pairs.is_some()));
        if self.of != of {
            let causal = output.input.tokens.causal;
            let pairs = pairs.map(SelectedPairs::iter);
            self.cells = pairs
                .into_iter()
                .flatten()
                .flat_map(|(i, j)| {
                    let lower = (j, i);
                    std::iter::once(lower).chain((!causal).then_some((i, j)))
                })
                .collect();
            self.cells.sort_unstable();
            self.of = of;
        }
        &self.cells
    }
}

impl Default for HeadView {
    fn default() -> Self {
        Self {
            map: ZoomMap::default(),
            tokens: 0,
            zoom: 1.0,
            centre: Vec2::ZERO,
            focus_next_frame: false,
            wake: None,
            generation: 0,
            outlined: OutlinedCells::default(),
            pairs: HeadPairs::default(),
            hovered: None,
        }
    }
}

impl HeadView {
    /// Makes the map again if the head or a view choice changed.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        output: &Arc<RunOutput>,
        (key, head): (ViewKey, HeadId),
        reduction: BlockReduction,
        wake: &Waker,
    ) {
        self.map.update(ctx, output, key, head, reduction, wake);
        self.pairs.request(output, key.generation, head, wake);
        self.wake = Some(wake.clone());
        self.generation = key.generation;
        let tokens = output.captures.tokens;
        if tokens != self.tokens {
            self.zoom = 1.0;
            self.centre = Vec2::splat(tokens as f32 / 2.0);
        }
        self.tokens = tokens;
    }

    /// The cell under the pointer (row, column), if any.
    pub fn hovered_cell(&self) -> Option<(usize, usize)> {
        self.hovered
    }

    /// The colour range of the shown head.
    pub fn range(&self) -> ValueRange {
        self.map.range().unwrap_or_default()
    }

    /// Gives the heatmap the keyboard focus (so arrow keys step heads).
    pub fn request_focus(&mut self) {
        self.focus_next_frame = true;
    }

    /// The whole detail view for `head`.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        head: HeadId,
        settings: &mut Settings,
        working: bool,
        marks: HeadMarks<'_>,
    ) -> Option<HeadAction> {
        let HeadMarks { picked, ablated } = marks;
        let mut action = None;
        let (layers, heads) = (output.captures.layers, output.captures.heads);
        // Wrapped: beside the outline at 1280 px the row is wider than the
        // area, and its end was drawn over the head's figures.
        ui.horizontal_wrapped(|ui| {
            if ui
                .button("⬅ Overview")
                .on_hover_text("Back to the grid of all heads (Esc)")
                .clicked()
            {
                action = Some(HeadAction::Back);
            }
            ui.separator();
            let previous = step(head, layers, heads, 0, -1);
            let next = step(head, layers, heads, 0, 1);
            if ui
                .add_enabled(previous != head, egui::Button::new("◀ Previous head"))
                .on_hover_text("Left arrow; up / down arrows change the layer")
                .clicked()
            {
                action = Some(HeadAction::Show(previous));
            }
            if ui
                .add_enabled(next != head, egui::Button::new("Next head ▶"))
                .on_hover_text("Right arrow; up / down arrows change the layer")
                .clicked()
            {
                action = Some(HeadAction::Show(next));
            }
            ui.separator();
            let category = output.analysis.head(head).and_then(|f| f.category);
            let (name, colour) = category_style(category);
            ui.heading(format!("Layer {} · Head {}", head.layer, head.head));
            ui.label(egui::RichText::new(name).color(colour).strong());
            if working {
                busy::spinner(ui);
            }
            if ui
                .button(toggle_label(head, ablated))
                .on_hover_text(
                    "Run the input with this head's output zero (or its mean), and see how \
                     the model's output moves (key A)",
                )
                .clicked()
            {
                action = Some(HeadAction::ToggleAblation);
            }
            ui.separator();
            if ui
                .add_enabled(self.zoom > 1.0, egui::Button::new("Fit"))
                .on_hover_text("Show the whole matrix again (or double-click it)")
                .clicked()
            {
                self.zoom = 1.0;
            }
            if self.tokens > OVERVIEW_BLOCKS {
                // A long input's map shows blocks of cells until zoomed in.
                let label = ui.label("Blocks");
                for reduction in BlockReduction::ALL {
                    ui.selectable_value(&mut settings.map_reduction, reduction, reduction.label())
                        .on_hover_text(match reduction {
                            BlockReduction::Max => {
                                "Each pixel of a zoomed-out map shows the largest value of its \
                                 block of cells: a strong cell stays visible"
                            }
                            BlockReduction::Mean => {
                                "Each pixel of a zoomed-out map shows the mean of its block of cells"
                            }
                        })
                        .labelled_by(label.id);
                }
            }
            ui.weak("scroll: zoom · drag: pan · arrow keys: heads and layers");
        });
        ui.separator();

        egui::Panel::right("head figures")
            .resizable(true)
            .default_size(300.0)
            .size_range(240.0..=480.0)
            .show(ui, |ui| {
                pane::mark(ui);
                egui::ScrollArea::vertical().show(ui, |ui| {
                    figures_ui(ui, output, head, settings, &self.pairs);
                });
            });
        egui::CentralPanel::no_frame().show(ui, |ui| {
            pane::mark(ui);
            // A figure: its Save buttons write the region in view, with its
            // token labels, as PNG, SVG or PDF.
            let name = format!(
                "L{}H{}-{}-region",
                head.layer,
                head.head,
                settings.matrix.name()
            );
            let title = self.region_title(settings.map_reduction);
            let save = plots::figure(ui, &name, &title, |ui| {
                self.heatmap_ui(ui, output, head, settings, picked)
            });
            if let Some(request) = save {
                action = Some(HeadAction::SaveRegion(request));
            }
        });
        action
    }

    /// What the map shows: the cells in view, and a pixel's block where
    /// it is coarser than a cell.
    fn region_title(&self, reduction: BlockReduction) -> String {
        let (origin, n) = self.view_cells();
        let t = self.tokens;
        let cells = |start: f32| {
            let first = (start.floor().max(0.0) as usize).min(t);
            let last = ((start + n).ceil() as usize).min(t);
            format!("{first}–{}", last.saturating_sub(1))
        };
        let mut title = format!(
            "Rows {} · columns {} of {t}",
            cells(origin.y),
            cells(origin.x)
        );
        if let Some(level) = self.map.shown_level().filter(|&l| l > 0) {
            let side = 1usize << level;
            title.push_str(&format!(
                " · a pixel shows the {} of {side} × {side} cells",
                reduction.label().to_lowercase()
            ));
        }
        title
    }

    /// The first cell in view (fractional) and how many cells a side.
    fn view_cells(&self) -> (Vec2, f32) {
        let n = self.tokens as f32 / self.zoom;
        (self.centre - Vec2::splat(n / 2.0), n)
    }

    fn heatmap_ui(
        &mut self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        head: HeadId,
        settings: &Settings,
        picked: &[usize],
    ) {
        let tokens = self.tokens;
        if tokens == 0 {
            return;
        }
        let texts = &output.input.tokens;
        let hover_line_height = 20.0;
        let available = ui.available_size() - Vec2::new(0.0, hover_line_height);
        let side = (available.x - LABEL_MARGIN)
            .min(available.y - LABEL_MARGIN)
            .max(120.0);
        let (outer, _) = ui.allocate_exact_size(
            Vec2::new(side + LABEL_MARGIN, side + LABEL_MARGIN + hover_line_height),
            Sense::hover(),
        );
        let plot = Rect::from_min_size(outer.min + Vec2::splat(LABEL_MARGIN), Vec2::splat(side));
        let id = ui.scope_id().with("head heatmap");
        let response = ui.interact(plot, id, Sense::click_and_drag());
        response.widget_info(|| {
            egui::WidgetInfo::labeled(
                egui::Role::Image,
                true,
                format!("heatmap of L{} H{}", head.layer, head.head),
            )
        });
        if self.focus_next_frame {
            response.request_focus();
            self.focus_next_frame = false;
        }
        if response.clicked() {
            response.request_focus();
        }

        // Zoom about the pointer, pan by dragging.
        let max_zoom = (tokens as f32 / 4.0).max(1.0);
        let visible = |zoom: f32| tokens as f32 / zoom;
        if response.double_clicked() {
            self.zoom = 1.0;
        }
        if let Some(pointer) = response.hover_pos() {
            let (scroll, pinch) = ui.input(|i| (i.smooth_scroll_delta.y, i.zoom_delta()));
            let factor = (scroll * 0.003).exp() * pinch;
            if factor != 1.0 {
                let before = self.cell_at(plot, pointer);
                self.zoom = (self.zoom * factor).clamp(1.0, max_zoom);
                self.clamp_centre();
                let after = self.cell_at(plot, pointer);
                self.centre += before - after;
            }
        }
        if response.dragged() {
            let cell_px = side / visible(self.zoom);
            self.centre -= response.drag_delta() / cell_px;
        }
        self.clamp_centre();

        let (origin, n) = self.view_cells();
        let cell_px = side / n;
        let painter = ui.painter_at(outer);
        let viewport = Viewport {
            plot,
            origin,
            cells: n,
        };
        if let Some(wake) = &self.wake {
            self.map.paint(&painter, viewport, wake);
        }
        if !self.map.is_ready() {
            painter.text(
                plot.center(),
                Align2::CENTER_CENTER,
                "Drawing the map…",
                FontId::proportional(14.0),
                ui.visuals().text_color(),
            );
        }
        painter.rect_stroke(
            plot,
            0.0,
            Stroke::new(1.0, ui.visuals().weak_text_color()),
            egui::StrokeKind::Outside,
        );

        // Which cells are visible, and every how many a label fits.
        let first = origin.x.floor().max(0.0) as usize;
        let last = ((origin.x + n).ceil() as usize).min(tokens);
        let first_row = origin.y.floor().max(0.0) as usize;
        let last_row = ((origin.y + n).ceil() as usize).min(tokens);
        let stride = if cell_px >= LABEL_MIN_CELL {
            1
        } else {
            (LABEL_MIN_CELL / cell_px).ceil() as usize
        };
        let font = FontId::proportional((cell_px * 0.95).clamp(7.0, 13.0));
        let label_colour = ui.visuals().text_color();
        let special_colour = ui.visuals().weak_text_color();
        let cell_x = |j: usize| plot.left() + (j as f32 - origin.x) * cell_px;
        let cell_y = |i: usize| plot.top() + (i as f32 - origin.y) * cell_px;
        let special = &output.input.tokens.special;
        let picked_colour = ui.visuals().selection.stroke.color;
        let colour_of = |i: usize| {
            if picked.contains(&i) {
                picked_colour
            } else if special.get(i).copied().unwrap_or(false) {
                special_colour
            } else {
                label_colour
            }
        };
        for i in (first_row..last_row).filter(|i| i % stride == 0 || picked.contains(i)) {
            let y = cell_y(i) + cell_px / 2.0;
            painter.text(
                Pos2::new(plot.left() - 4.0, y),
                Align2::RIGHT_CENTER,
                short_token(&texts.readable(i)),
                font.clone(),
                colour_of(i),
            );
        }
        for j in (first..last).filter(|j| j % stride == 0 || picked.contains(j)) {
            let galley =
                painter.layout_no_wrap(short_token(&texts.readable(j)), font.clone(), colour_of(j));
            // Rotated a quarter turn: the text runs upwards from the plot,
            // its height spreading to the right of `pos`.
            let x = cell_x(j) + cell_px / 2.0 - galley.size().y / 2.0;
            let pos = Pos2::new(x, plot.top() - 4.0);
            painter.add(
                egui::epaint::TextShape::new(pos, galley, label_colour)
                    .with_angle(-std::f32::consts::FRAC_PI_2),
            );
        }

        // The selected pairs, outlined.
        if settings.mark_pairs && cell_px >= 2.0 {
            let stroke = Stroke::new(
                (cell_px * 0.12).clamp(1.0, 2.0),
                outline_colour(settings.colormap),
            );
            let pairs = self.pairs.get(output, head);
            let cells = self.outlined.cells((self.generation, head), output, pairs);
            // Only the visible rows' cells are looked at: a long input's
            // head selects millions of pairs.
            let rows = first_row as u32..last_row as u32;
            let from = cells.partition_point(|&(row, _)| row < rows.start);
            for &(row, column) in cells[from..]
                .iter()
                .take_while(|(row, _)| rows.contains(row))
            {
                let (row, column) = (row as usize, column as usize);
                if !(first..last).contains(&column) {
                    continue;
                }
                let rect = Rect::from_min_size(
                    Pos2::new(cell_x(column), cell_y(row)),
                    Vec2::splat(cell_px),
                );
                painter.rect_stroke(rect, 0.0, stroke, egui::StrokeKind::Inside);
            }
        }

        // The picked tokens' rows and columns (see the study's views).
        for &p in picked.iter().filter(|&&p| p < tokens) {
            let stroke = Stroke::new(1.5, picked_colour);
            let row_rect =
                Rect::from_min_size(Pos2::new(plot.left(), cell_y(p)), Vec2::new(side, cell_px));
            let column_rect =
                Rect::from_min_size(Pos2::new(cell_x(p), plot.top()), Vec2::new(cell_px, side));
            for rect in [row_rect, column_rect] {
                if plot.intersects(rect) {
                    painter.with_clip_rect(plot.expand(2.0)).rect_stroke(
                        rect,
                        0.0,
                        stroke,
                        egui::StrokeKind::Outside,
                    );
                }
            }
        }

        // The value under the pointer.
        self.hovered = None;
        let hover_text = response
            .hover_pos()
            .filter(|_| self.map.is_ready())
            .and_then(|pointer| {
                let cell = self.cell_at(plot, pointer);
                let (i, j) = (cell.y.floor(), cell.x.floor());
                (i >= 0.0 && j >= 0.0 && (i as usize) < tokens && (j as usize) < tokens)
                    .then_some((i as usize, j as usize))
            })
            .map(|(i, j)| {
                self.hovered = Some((i, j));
                let row_rect = Rect::from_min_size(
                    Pos2::new(plot.left(), cell_y(i)),
                    Vec2::new(side, cell_px),
                );
                let column_rect =
                    Rect::from_min_size(Pos2::new(cell_x(j), plot.top()), Vec2::new(cell_px, side));
                let guide = Stroke::new(1.0, Color32::from_white_alpha(110));
                painter.rect_stroke(row_rect, 0.0, guide, egui::StrokeKind::Inside);
                painter.rect_stroke(column_rect, 0.0, guide, egui::StrokeKind::Inside);
                let value = self.map.value(i, j);
                let (row_name, column_name) = if settings.matrix.is_attention() {
                    ("query", "key")
                } else {
                    ("token", "token")
                };
                let readout = format!(
                    "{row_name} {i} “{}” · {column_name} {j} “{}” · value {}",
                    texts.readable(i),
                    texts.readable(j),
                    heatmap::format_value(value)
                );
                let raw = hover_tip(
                    settings.matrix,
                    heatmap::format_value(value),
                    (i, &texts.raw_and_id(i)),
                    (j, &texts.raw_and_id(j)),
                );
                (readout, raw)
            });
        // The value, and the tokenizer's own texts and the ids of the pair,
        // beside the pointer.
        let (hover_text, hover_raw) = hover_text.unzip();
        if let Some(raw) = hover_raw {
            response.clone().on_hover_text_at_pointer(raw);
        }
        let text = hover_text
            .unwrap_or_else(|| "Point at a cell to read its token pair and value.".into());
        // A real label, so screen readers (and tests) can read it.
        let readout = Rect::from_min_size(
            Pos2::new(plot.left(), plot.bottom() + 2.0),
            Vec2::new(side, hover_line_height),
        );
        ui.scope_builder(
            egui::UiBuilder::new()
                .max_rect(readout)
                .layout(egui::Layout::left_to_right(egui::Align::Center)),
            |ui| ui.add(egui::Label::new(egui::RichText::new(text).size(13.0)).truncate()),
        );
    }

    /// The cell coordinates (fractional) under a screen position.
    fn cell_at(&self, plot: Rect, pointer: Pos2) -> Vec2 {
        let (origin, n) = self.view_cells();
        origin + (pointer - plot.min) / plot.width() * n
    }

    fn clamp_centre(&mut self) {
        let n = self.tokens as f32 / self.zoom;
        let half = n / 2.0;
        let t = self.tokens as f32;
        self.centre.x = self.centre.x.clamp(half, (t - half).max(half));
        self.centre.y = self.centre.y.clamp(half, (t - half).max(half));
    }
}

/// The next head `d_layer` layers and `d_head` heads away (heads wrap into
/// the neighbouring layer; the ends stay put).
pub fn step(head: HeadId, layers: usize, heads: usize, d_layer: isize, d_head: isize) -> HeadId {
    if layers == 0 || heads == 0 {
        return head;
    }
    let index = (head.layer * heads + head.head) as isize + d_head;
    let index = index.clamp(0, (layers * heads) as isize - 1) as usize;
    let (layer, h) = (index / heads, index % heads);
    let layer = (layer as isize + d_layer).clamp(0, layers as isize - 1) as usize;
    HeadId::new(layer, h)
}

fn outline_colour(map: ColorMap) -> Color32 {
    match map {
        ColorMap::Greys => Color32::from_rgb(230, 40, 40),
        ColorMap::RdBu => Color32::BLACK,
        _ => Color32::WHITE,
    }
}

/// A token label of at most 14 characters.
fn short_token(text: &str) -> String {
    if text.chars().count() <= 14 {
        text.to_string()
    } else {
        let cut: String = text.chars().take(13).collect();
        format!("{cut}…")
    }
}

fn figures_ui(
    ui: &mut egui::Ui,
    output: &RunOutput,
    head: HeadId,
    settings: &Settings,
    made_pairs: &HeadPairs,
) {
    let pairs = made_pairs.get(output, head);
    let analysis = &output.analysis;
    let Some(f) = analysis.head(head) else {
        ui.label("No figures for this head.");
        return;
    };
    ui.heading("Head figures");
    let selected = f.selected_pairs.len();
    ui.weak(format!(
        "over the {selected} selected pair{} of {} candidates",
        if selected == 1 { "" } else { "s" },
        analysis.pairs
    ));
    // Pairs within float noise of the last place share it (ANALYSIS.md §3).
    if let Some(ties) = f.ties.filter(|t| t.weight < 1.0) {
        let places = selected.saturating_sub(ties.above);
        ui.weak(format!(
            "the last {places} place{} shared by {} pairs whose S ties within {} of the largest (each weighs {:.3})",
            if places == 1 { " is" } else { "s are" },
            ties.tied,
            crate::analysis::TIE_BAND,
            ties.weight
        ));
    }
    let (name, colour) = category_style(f.category);
    egui::Grid::new("head figures grid")
        .num_columns(2)
        .striped(true)
        .spacing([12.0, 4.0])
        .show(ui, |ui| {
            ui.label("category");
            ui.colored_label(colour, name);
            ui.end_row();
            row(ui, "mean distance", figure(f.mean_distance, 2));
            row(
                ui,
                "same-sentence fraction",
                format!(
                    "{} (chance {})",
                    figure(f.same_sentence_fraction, 3),
                    figure(analysis.baseline_same_sentence_fraction, 3)
                ),
            );
            row(ui, "repetition fraction", figure(f.repetition_fraction, 3));
            // Its readable text and id; the tokenizer's own text on hover.
            let tokens = &output.input.tokens;
            ui.label("focus token");
            match f.focus_token_id {
                Some(id) => {
                    let readable = tokens.readable_of(id).unwrap_or_default();
                    ui.label(format!("“{readable}” (id {id})"))
                        .on_hover_text(tokens.describe_id(id));
                }
                None => {
                    ui.label("—");
                }
            }
            ui.end_row();
            row(ui, "focus share", figure(f.focus_share, 3));
            row(
                ui,
                &format!("local fraction (w = {})", settings.local_window),
                figure(f.local_fraction, 3),
            );
            // The P-figures beside their value-weighted twins (N′,
            // ANALYSIS.md §9), where the result has them.
            let twin = |plain: Option<f64>, weighted: Option<f64>| match weighted {
                Some(_) => format!("{} · N′ {}", figure(plain, 3), figure(weighted, 3)),
                None => figure(plain, 3),
            };
            let separator = twin(f.separator_attention, f.separator_attention_vw);
            row(ui, "separator attention", separator);
            row(
                ui,
                "sink attention",
                twin(f.sink_attention, f.sink_attention_vw),
            );
            // The role scores of ANALYSIS.md §9 and the role they give.
            let role =
                |role: Option<crate::analysis::Role>| role.map_or("—".into(), |r| r.to_string());
            let roles = match f.role_vw {
                Some(weighted) => format!("{} · N′ {weighted}", role(f.role)),
                None => role(f.role),
            };
            row(ui, "role", roles);
            let previous = twin(f.previous_token_score, f.previous_token_score_vw);
            row(ui, "previous-token score", previous);
            let duplicate = twin(f.duplicate_token_score, f.duplicate_token_score_vw);
            row(ui, "duplicate-token score", duplicate);
            row(
                ui,
                "induction score",
                twin(f.induction_score, f.induction_score_vw),
            );
            row(ui, "self score", twin(f.self_score, f.self_score_vw));
        });

    ui.add_space(8.0);
    ui.strong("Attention statistics");
    match &f.attention_stats {
        Some(s) => attention_stats_grid(ui, s, output),
        None => {
            ui.label(format!("— {}", crate::capture_file::NO_ATTENTION));
        }
    }

    if let Some(layer) = analysis.layers.get(head.layer) {
        ui.add_space(8.0);
        ui.strong(format!("Layer {} (all heads pooled)", head.layer));
        egui::Grid::new("layer figures grid")
            .num_columns(2)
            .striped(true)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                row(ui, "mean distance", figure(layer.mean_distance, 2));
                row(
                    ui,
                    "same-sentence fraction",
                    figure(layer.same_sentence_fraction, 3),
                );
                row(
                    ui,
                    "separator attention",
                    figure(layer.separator_attention, 3),
                );
                row(ui, "focus uniqueness", figure(layer.focus_uniqueness, 3));
                row(
                    ui,
                    "segmentation accuracy",
                    figure(layer.segmentation_accuracy, 3),
                );
                row(
                    ui,
                    "segmentation undecided",
                    figure(layer.segmentation_undecided, 3),
                );
                row(
                    ui,
                    "own-separator share (chance)",
                    format!(
                        "{} ({})",
                        figure(layer.segmentation_share, 3),
                        figure(layer.segmentation_share_chance, 3)
                    ),
                );
                row(ui, "sink attention", figure(layer.sink_attention, 3));
            });
    }

    ui.add_space(8.0);
    ui.strong("Selected pairs");
    let tokens = &output.input.tokens;
    let shown = 40;
    egui::Grid::new("selected pairs grid")
        .num_columns(5)
        .striped(true)
        .spacing([8.0, 2.0])
        .show(ui, |ui| {
            for header in ["i", "token", "j", "token", "j − i"] {
                ui.weak(header);
            }
            ui.end_row();
            for (i, j) in pairs.into_iter().flat_map(SelectedPairs::iter).take(shown) {
                let (i, j) = (i as usize, j as usize);
                ui.label(i.to_string());
                ui.label(short_token(&tokens.readable(i)))
                    .on_hover_text(tokens.raw_and_id(i));
                ui.label(j.to_string());
                ui.label(short_token(&tokens.readable(j)))
                    .on_hover_text(tokens.raw_and_id(j));
                ui.label((j - i).to_string());
                ui.end_row();
            }
        });
    if pairs.is_none() && selected > 0 {
        if made_pairs.failed(head) {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                format!("the {selected} pairs could not be made again (a long input keeps only their number)"),
            );
        } else {
            ui.horizontal(|ui| {
                busy::spinner(ui);
                ui.weak(format!(
                    "making the {selected} pairs again (a long input keeps only their number)"
                ));
            });
        }
    } else if selected > shown {
        ui.weak(format!("… and {} more", selected - shown));
    }
    if selected == 0 {
        ui.weak("none (fewer than two content tokens)");
    }
}

fn row(ui: &mut egui::Ui, name: &str, value: String) {
    ui.label(name);
    ui.label(value);
    ui.end_row();
}

fn attention_stats_grid(
    ui: &mut egui::Ui,
    s: &crate::analysis::AttentionStats,
    output: &crate::pipeline::RunOutput,
) {
    egui::Grid::new("attention stats grid")
        .num_columns(2)
        .striped(true)
        .spacing([12.0, 4.0])
        .show(ui, |ui| {
            row(ui, "entropy (nats)", format!("{:.3}", s.entropy));
            // The model's own start and separator tokens: a decoder's BOS
            // if its tokenizer adds one (else no row) and its
            // sentence-final tokens (ANALYSIS.md §8).
            let tokens = &output.input.tokens;
            let start = tokens.cls_positions().first().map(|&i| tokens.readable(i));
            if let Some(start) = start {
                row(ui, &format!("to {start}"), format!("{:.3}", s.cls));
            }
            let separators = if tokens.sentence_final_separators() {
                "to sentence ends".to_string()
            } else {
                format!("to {}", tokens.text_of(tokens.sep_id).unwrap_or("[SEP]"))
            };
            row(ui, &separators, format!("{:.3}", s.sep));
            row(ui, "to punctuation", format!("{:.3}", s.punctuation));
            row(ui, "to itself", format!("{:.3}", s.self_attention));
            row(ui, "to previous token", format!("{:.3}", s.previous));
            row(ui, "to next token", format!("{:.3}", s.next));
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_wraps_heads_into_layers_and_stops_at_the_ends() {
        let h = |l, h| HeadId::new(l, h);
        assert_eq!(step(h(0, 11), 6, 12, 0, 1), h(1, 0));
        assert_eq!(step(h(1, 0), 6, 12, 0, -1), h(0, 11));
        assert_eq!(step(h(0, 0), 6, 12, 0, -1), h(0, 0));
        assert_eq!(step(h(5, 11), 6, 12, 0, 1), h(5, 11));
        assert_eq!(step(h(2, 3), 6, 12, 1, 0), h(3, 3));
        assert_eq!(step(h(5, 3), 6, 12, 1, 0), h(5, 3));
        assert_eq!(step(h(0, 3), 6, 12, -1, 0), h(0, 3));
    }

    #[test]
    fn missing_figures_show_a_dash() {
        assert_eq!(figure(None, 2), "—");
        assert_eq!(figure(Some(f64::NAN), 2), "—");
        assert_eq!(figure(Some(0.5), 2), "0.50");
    }
}

/// The tooltip beside the pointer on the matrix: the cell's value, then the
/// query's (row's) and key's (column's) tokens as the tokenizer has them.
fn hover_tip(
    matrix: MatrixKind,
    value: String,
    (i, row): (usize, &str),
    (j, column): (usize, &str),
) -> String {
    let (row_name, column_name) = if matrix.is_attention() {
        ("query", "key")
    } else {
        ("token", "token")
    };
    let name = matrix.name();
    format!("{name} {value}\n{row_name} {i}: {row}\n{column_name} {j}: {column}")
}

#[cfg(test)]
mod hover_tests {
    use super::*;

    #[test]
    fn the_matrix_tooltip_says_the_value() {
        let tip = hover_tip(
            MatrixKind::Attention,
            "0.125".into(),
            (3, "Ġon"),
            (1, "Ġthe"),
        );
        assert_eq!(tip, "attention 0.125\nquery 3: Ġon\nkey 1: Ġthe");
    }
}
