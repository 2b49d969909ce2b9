//! The Compare tab's per-layer curves (both models on one plot per figure,
//! against depth or raw layer) and its specialisation table (one column
//! per model).

use crate::analysis::{Analysis, LayerFigures};
use crate::app::widgets::format::figure;
use crate::app::widgets::plots::{add_segments, legend, round_y_axis, segments};
use crate::comparison::{depth, MATCHED_SAME_ROLE};
use crate::pipeline::ComparisonOutput;
use egui::Color32;
use egui_plot::Plot;

/// The colours of model A's and model B's curves and columns.
pub const A_COLOUR: Color32 = Color32::from_rgb(90, 170, 255);
pub const B_COLOUR: Color32 = Color32::from_rgb(255, 160, 50);

/// Reads one per-layer figure.
type LayerFigure = fn(&LayerFigures) -> Option<f64>;

/// The per-layer figures plotted, with their titles (ANALYSIS.md §5), and
/// whether each is a fraction (plotted from 0 to 1).
const FIGURES: [(&str, LayerFigure, bool); 7] = [
    ("mean distance j − i", |l| l.mean_distance, false),
    ("same-sentence fraction", |l| l.same_sentence_fraction, true),
    ("separator attention", |l| l.separator_attention, true),
    ("sink attention", |l| l.sink_attention, true),
    ("focus uniqueness", |l| l.focus_uniqueness, true),
    ("segmentation accuracy", |l| l.segmentation_accuracy, true),
    ("own-separator share", |l| l.segmentation_share, true),
];

/// The points of one model's curve: x is depth, or the layer when `raw`.
fn curve(analysis: &Analysis, value: LayerFigure, raw: bool) -> Vec<Vec<[f64; 2]>> {
    let layers = analysis.layers.len();
    segments(analysis.layers.iter().map(value))
        .into_iter()
        .map(|segment| {
            segment
                .into_iter()
                .map(|[layer, y]| {
                    let x = if raw {
                        layer
                    } else {
                        depth(layer as usize, layers)
                    };
                    [x, y]
                })
                .collect()
        })
        .collect()
}

/// The narrowest a plot of the per-layer curves gets before the row wraps.
const MIN_PLOT_WIDTH: f32 = 220.0;

/// One small plot per figure, up to three to a row, both models on each.
pub fn layer_curves(ui: &mut egui::Ui, output: &ComparisonOutput, names: [&str; 2], raw: bool) {
    let analyses = [&output.a.analysis, &output.b.analysis];
    let deepest = analyses.iter().map(|a| a.layers.len()).max().unwrap_or(1);
    let x_max = if raw {
        deepest.saturating_sub(1) as f64
    } else {
        1.0
    };
    // As many plots a row as fit at a readable width, at most three; the
    // row and the room between its plots fill the width, no more.
    let spacing = ui.spacing().item_spacing.x;
    let available = ui.available_width();
    let per_row =
        (((available + spacing) / (MIN_PLOT_WIDTH + spacing)).floor() as usize).clamp(1, 3);
    let width = ((available - spacing * (per_row as f32 - 1.0)) / per_row as f32).floor();
    for row in FIGURES.chunks(per_row) {
        ui.horizontal(|ui| {
            for &(title, value, fraction) in row {
                ui.vertical(|ui| {
                    ui.set_width(width);
                    ui.label(title);
                    let mut plot = Plot::new(("compare curve", title))
                        .height(150.0)
                        .width(width)
                        .allow_zoom(false)
                        .allow_drag(false)
                        .allow_scroll(false)
                        .allow_boxed_zoom(false)
                        .allow_double_click_reset(false)
                        .include_x(-0.03 * x_max.max(1.0))
                        .include_x(x_max * 1.03)
                        .include_y(0.0)
                        .x_axis_label(if raw {
                            "layer"
                        } else {
                            "depth, layer / (L − 1)"
                        });
                    if fraction {
                        plot = plot.include_y(1.0);
                    }
                    let plot = round_y_axis(plot);
                    plot.show(ui, |plot_ui| {
                        for ((analysis, name), colour) in
                            analyses.iter().zip(names).zip([A_COLOUR, B_COLOUR])
                        {
                            add_segments(plot_ui, name, colour, curve(analysis, value, raw));
                        }
                    });
                });
            }
        });
    }
    let a = format!("A: {} ({} layers)", names[0], analyses[0].layers.len());
    let b = format!("B: {} ({} layers)", names[1], analyses[1].layers.len());
    legend(ui, &[(A_COLOUR, &a, false), (B_COLOUR, &b, false)]);
}

/// How a row of the specialisation table is labelled and formatted.
fn row_label(figure: &str) -> (String, bool) {
    match figure {
        "repetition" | "focus" | "local" | "mixed" => (format!("{figure} heads"), true),
        // A share of the heads with a role and a match, not of all heads.
        MATCHED_SAME_ROLE => (
            "share of heads whose best match has their role".to_string(),
            false,
        ),
        role if role.starts_with("role_") => (
            format!("{} role heads", role["role_".len()..].replace('_', "-")),
            true,
        ),
        other => (
            format!("{} (mean over heads)", other.replace('_', " ")),
            false,
        ),
    }
}

/// Total heads of an analysis.
fn head_count(analysis: &Analysis) -> usize {
    analysis.layers.iter().map(|l| l.heads.len()).sum()
}

/// The specialisation table: one row per figure, one column per model.
pub fn specialisation_table(ui: &mut egui::Ui, output: &ComparisonOutput, names: [&str; 2]) {
    let totals = [
        head_count(&output.a.analysis),
        head_count(&output.b.analysis),
    ];
    egui::Grid::new("compare specialisation")
        .striped(true)
        .min_col_width(120.0)
        .show(ui, |ui| {
            ui.strong("figure");
            ui.colored_label(A_COLOUR, format!("A: {}", names[0]));
            ui.colored_label(B_COLOUR, format!("B: {}", names[1]));
            ui.end_row();
            for row in &output.comparison.specialisation {
                let (label, share) = row_label(&row.figure);
                ui.label(label);
                for (value, total) in [row.a, row.b].into_iter().zip(totals) {
                    ui.label(cell_text(value, share, total));
                }
                ui.end_row();
            }
        });
}

/// A cell as shown: a share as a percentage with the head count, a mean
/// with three decimals, "—" when undefined.
pub fn cell_text(value: Option<f64>, share: bool, total: usize) -> String {
    match (value, share) {
        (Some(v), true) => format!(
            "{:.0}% ({} of {total})",
            v * 100.0,
            (v * total as f64).round() as usize
        ),
        (v, _) => figure(v, 3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_run_over_depth_or_raw_layers_and_break_where_undefined() {
        let layer = |v: Option<f64>| LayerFigures {
            mean_distance: v,
            ..LayerFigures::default()
        };
        let analysis = Analysis {
            layers: vec![
                layer(Some(1.0)),
                layer(None),
                layer(Some(3.0)),
                layer(Some(4.0)),
            ],
            ..Analysis::default()
        };
        let by_depth = curve(&analysis, |l| l.mean_distance, false);
        let third = 2.0 / 3.0;
        assert_eq!(
            by_depth,
            vec![vec![[0.0, 1.0]], vec![[third, 3.0], [1.0, 4.0]]]
        );
        let raw = curve(&analysis, |l| l.mean_distance, true);
        assert_eq!(raw, vec![vec![[0.0, 1.0]], vec![[2.0, 3.0], [3.0, 4.0]]]);
    }
}
