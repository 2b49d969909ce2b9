//! The layer-to-layer correlation grid of the Layers view (ANALYSIS.md §5:
//! Pearson r of the head-averaged, z-scored S of every two layers),
//! coloured on RdBu from −1 to 1, and where it goes: beside the per-layer
//! table when both fit, else below it, so a deep model's grid is never cut
//! off.

use super::table::{figures_table, layer_columns};
use crate::analysis::Analysis;
use crate::app::views::shared::{save_plot, ViewAction};
use crate::app::widgets::format::figure;
use crate::app::widgets::plots;
use crate::colormap::{ColorMap, ValueRange};
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};

/// Correlation cells at least this wide show their value.
const LABELLED_CELL: f32 = 28.0;
/// The correlation cells' size range.
const CELL_RANGE: std::ops::RangeInclusive<f32> = 18.0..=46.0;

/// The per-layer table and the layer-to-layer correlation grid: side by
/// side when both fit the width with the grid's values readable, else the
/// grid below the table at full size, so a deep model's grid (12 layers)
/// is never cut off beside a wide table; the table's figures made from P,
/// or with `weighted` from N′. Returns what was asked for.
pub fn table_and_correlation(
    ui: &mut egui::Ui,
    analysis: &Analysis,
    weighted: bool,
) -> Option<ViewAction> {
    let mut action = None;
    let layers = analysis.layers.len();
    let available = ui.available_width();
    let gap = 16.0 + 2.0 * ui.spacing().item_spacing.x;
    let table_needed: f32 = layer_columns(weighted).iter().map(|c| c.width).sum();
    let beside = (available - table_needed - gap).min(available * 0.4);
    let side_by_side = beside / (layers as f32 + 1.0) >= LABELLED_CELL;
    let mut table = |ui: &mut egui::Ui, width: f32| {
        ui.strong("Per-layer figures");
        if let Some(layer) = figures_table(ui, analysis, width, weighted) {
            action = Some(ViewAction::ShowLayer(layer));
        }
    };
    let mut save = None;
    let mut grid = |ui: &mut egui::Ui, room: f32| {
        let side = correlation_grid_side(room, layers);
        save = plots::figure(
            ui,
            "layer-correlation",
            "Layer-to-layer correlation",
            |ui| {
                ui.weak("Pearson r of the head-averaged, z-scored S");
                correlation_grid(ui, &analysis.layer_correlation, side);
            },
        );
    };
    if side_by_side {
        let side = correlation_grid_side(beside, layers);
        let table_width = available - side - gap;
        ui.horizontal_top(|ui| {
            ui.vertical(|ui| {
                ui.set_width(table_width);
                table(ui, table_width);
            });
            ui.add_space(16.0);
            grid(ui, side);
        });
    } else {
        table(ui, available);
        ui.add_space(8.0);
        grid(ui, available);
    }
    save_plot(&mut action, save);
    action
}

/// The side of a correlation grid of `layers` (plus a row and a column of
/// labels) that fits in `room`.
fn correlation_grid_side(room: f32, layers: usize) -> f32 {
    let cells = layers as f32 + 1.0;
    (room / cells)
        .floor()
        .clamp(*CELL_RANGE.start(), *CELL_RANGE.end())
        * cells
}

/// The L×L grid of correlations, coloured on RdBu from −1 to 1.
fn correlation_grid(ui: &mut egui::Ui, grid: &[Vec<Option<f64>>], side: f32) {
    let layers = grid.len();
    if layers == 0 {
        ui.weak("—");
        return;
    }
    let cell = side / (layers as f32 + 1.0);
    let (rect, response) = ui.allocate_exact_size(Vec2::splat(side), Sense::hover());
    response.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::Image, true, "layer correlation grid")
    });
    let painter = ui.painter_at(rect);
    let visuals = ui.visuals();
    let range = ValueRange::new(-1.0, 1.0);
    let label_font = FontId::proportional((cell * 0.36).clamp(9.0, 13.0));
    let value_font = FontId::proportional((cell * 0.3).clamp(8.0, 12.0));
    let origin = rect.min + Vec2::splat(cell);
    for l in 0..layers {
        painter.text(
            Pos2::new(origin.x + (l as f32 + 0.5) * cell, rect.top() + cell / 2.0),
            Align2::CENTER_CENTER,
            format!("L{l}"),
            label_font.clone(),
            visuals.weak_text_color(),
        );
        painter.text(
            Pos2::new(rect.left() + cell / 2.0, origin.y + (l as f32 + 0.5) * cell),
            Align2::CENTER_CENTER,
            format!("L{l}"),
            label_font.clone(),
            visuals.weak_text_color(),
        );
    }
    let mut hovered = None;
    for (a, row) in grid.iter().enumerate() {
        for b in 0..layers {
            let value = row.get(b).copied().flatten().filter(|v| v.is_finite());
            let square = Rect::from_min_size(
                origin + Vec2::new(b as f32 * cell, a as f32 * cell),
                Vec2::splat(cell),
            );
            let fill = match value {
                Some(v) => {
                    let [r, g, bl] = ColorMap::RdBu.color(v as f32, range);
                    Color32::from_rgb(r, g, bl)
                }
                None => visuals.faint_bg_color,
            };
            painter.rect_filled(square.shrink(0.5), 0.0, fill);
            if cell >= 28.0 {
                let text = match value {
                    Some(v) => format!("{v:.2}"),
                    None => "—".into(),
                };
                let colour = if value.is_some() {
                    crate::app::widgets::token_text::text_on(fill)
                } else {
                    visuals.text_color()
                };
                painter.text(
                    square.center(),
                    Align2::CENTER_CENTER,
                    text,
                    value_font.clone(),
                    colour,
                );
            }
            if response.hover_pos().is_some_and(|p| square.contains(p)) {
                hovered = Some((a, b, value));
                painter.rect_stroke(
                    square,
                    0.0,
                    Stroke::new(1.5, visuals.strong_text_color()),
                    egui::StrokeKind::Inside,
                );
            }
        }
    }
    if let Some((a, b, value)) = hovered {
        response.on_hover_text_at_pointer(format!("L{a} and L{b}: r = {}", figure(value, 3)));
    }
}
