//! The inter-layer comparison (ANALYSIS.md §5): how the pairs of strongly
//! similar tokens change from layer to layer.
//!
//! From top to bottom: small multiples of each layer's distance histogram
//! (j − i over the pooled selected pairs, one shared scale so the layers
//! compare), curves against layer of the pooled mean distance and of the
//! fractions (same-sentence share beside its chance baseline, separator
//! attention, focus uniqueness, segmentation accuracy), a table of the
//! same figures, and the layer-to-layer correlation grid (its own file,
//! [`correlation`]). Every number is the analysis' own; "—"
//! marks an undefined figure and breaks a curve. A switch shows the
//! figures made from P, in the fractions plot and the table, as their
//! value-weighted twins (ANALYSIS.md §9). Clicking a histogram or a table
//! row shows that layer's heads.

pub mod correlation;
pub mod table;

use crate::analysis::{Analysis, LayerFigures};
use crate::app::views::shared::{save_plot, View, ViewAction, ViewContext};
use crate::app::widgets::format::figure;
use crate::app::widgets::plots::{self, add_curve, layer_plot, legend};
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use egui_plot::{HLine, LineStyle};

/// At most this many bars per histogram; longer distances share a bar.
const MAX_BARS: usize = 40;

/// Colours of the curves, also used by the table's headers' tooltips.
const SAME_SENTENCE: Color32 = Color32::from_rgb(90, 170, 255);
const CHANCE: Color32 = Color32::from_gray(160);
const SEPARATOR: Color32 = Color32::from_rgb(255, 160, 50);
const FOCUS_UNIQUENESS: Color32 = Color32::from_rgb(235, 110, 200);
const SEGMENTATION: Color32 = Color32::from_rgb(110, 210, 120);
const UNDECIDED: Color32 = Color32::from_rgb(180, 140, 255);
const SINK: Color32 = Color32::from_rgb(240, 90, 90);
const OWN_SEPARATOR: Color32 = Color32::from_rgb(80, 210, 210);
const MEAN_DISTANCE: Color32 = Color32::from_rgb(250, 220, 90);

/// The Layers tab.
#[derive(Default)]
pub struct LayersView {
    /// The fractions plot and the table show the value-weighted twins of
    /// the figures made from P.
    value_weighted: bool,
}

impl View for LayersView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        layers_ui(ui, &cx.output.analysis, &mut self.value_weighted)
    }
}

/// The whole view; returns what the user asked for.
fn layers_ui(ui: &mut egui::Ui, analysis: &Analysis, weighted: &mut bool) -> Option<ViewAction> {
    let mut action = None;
    if analysis.layers.is_empty() {
        ui.label("This result has no layers.");
        return None;
    }
    // Both ways: a narrow window still reaches the table's last column.
    egui::ScrollArea::both()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            ui.heading("Inter-layer comparison");
            ui.weak(summary(analysis));
            ui.horizontal(|ui| {
                ui.label("Attention figures");
                table::weighting_switch(ui, analysis, weighted);
            });
            ui.add_space(6.0);

            let save = plots::figure(
                ui,
                "distance-histograms",
                "Distance j − i between strongly similar tokens, per layer",
                |ui| {
                    ui.weak(
                        "The selected pairs of all heads pooled; one scale for all layers; \
                         the orange line is the layer's mean distance. Click a layer to see \
                         its heads.",
                    );
                    if let Some(layer) = histograms(ui, analysis) {
                        action = Some(ViewAction::ShowLayer(layer));
                    }
                },
            );
            save_plot(&mut action, save);
            ui.add_space(8.0);

            let plot_height = 210.0;
            ui.columns(2, |columns| {
                let save = plots::figure(
                    &mut columns[0],
                    "mean-distance",
                    "Mean distance against layer",
                    |ui| {
                        mean_distance_plot(ui, analysis, plot_height);
                        legend(
                            ui,
                            &[(MEAN_DISTANCE, "mean j − i over the pooled pairs", false)],
                        );
                    },
                );
                save_plot(&mut action, save);
                let save = plots::figure(
                    &mut columns[1],
                    "fractions",
                    "Fractions against layer",
                    |ui| {
                        fractions_plot(ui, analysis, plot_height, *weighted);
                        legend(ui, &fractions_legend(analysis, *weighted));
                    },
                );
                save_plot(&mut action, save);
            });
            ui.add_space(8.0);

            if let Some(clicked) = correlation::table_and_correlation(ui, analysis, *weighted) {
                action = Some(clicked);
            }
        });
    action
}

fn summary(analysis: &Analysis) -> String {
    let heads = analysis.layers.first().map_or(0, |l| l.heads.len());
    let per_head = match analysis.selected_per_head {
        Some(k) => format!(
            "{k} selected pairs per head, {} pooled per layer",
            k * heads
        ),
        None => "a varying number of selected pairs per head".to_string(),
    };
    format!(
        "{} layers × {heads} heads · {} content tokens, {} candidate pairs · {per_head} · \
         same-sentence share by chance {}",
        analysis.layers.len(),
        analysis.content_tokens,
        analysis.pairs,
        figure(analysis.baseline_same_sentence_fraction, 3)
    )
}

/// The histograms binned alike: bar width in distance units, and the bars
/// of every layer (bar b covers distances 1 + b·width ..= (b + 1)·width).
fn binned_histograms(analysis: &Analysis) -> (usize, Vec<Vec<f64>>) {
    let longest = analysis
        .layers
        .iter()
        .filter_map(|l| l.distance_histogram.iter().rposition(|&c| c > 0.0))
        .max()
        .unwrap_or(0);
    let width = longest.div_ceil(MAX_BARS).max(1);
    let bars = longest.div_ceil(width);
    let binned = analysis
        .layers
        .iter()
        .map(|layer| {
            let mut counts = vec![0.0f64; bars];
            for (distance, &count) in layer.distance_histogram.iter().enumerate().skip(1) {
                if let Some(bar) = counts.get_mut((distance - 1) / width) {
                    *bar += count;
                }
            }
            counts
        })
        .collect();
    (width, binned)
}

/// The small multiples; returns the layer clicked.
fn histograms(ui: &mut egui::Ui, analysis: &Analysis) -> Option<usize> {
    let layers = analysis.layers.len();
    let (bar_width, binned) = binned_histograms(analysis);
    let bars = binned.first().map_or(0, Vec::len);
    if bars == 0 {
        ui.weak("No pairs were selected (fewer than two content tokens).");
        return None;
    }
    let tallest = binned.iter().flatten().copied().fold(1.0, f64::max);
    let per_row = if layers > 12 { 8 } else { layers.min(6) };
    let gap = 8.0;
    let panel_width = ((ui.available_width() - gap * (per_row as f32 - 1.0)) / per_row as f32)
        .floor()
        .max(90.0);
    let panel_height = 118.0;
    let longest = bars * bar_width;
    let mut clicked = None;
    for row in 0..layers.div_ceil(per_row) {
        ui.horizontal(|ui| {
            ui.spacing_mut().item_spacing.x = gap;
            let end = ((row + 1) * per_row).min(layers);
            for (layer, counts) in binned.iter().enumerate().take(end).skip(row * per_row) {
                let (rect, response) =
                    ui.allocate_exact_size(Vec2::new(panel_width, panel_height), Sense::click());
                response.widget_info(|| {
                    egui::WidgetInfo::labeled(
                        egui::Role::Button,
                        true,
                        format!("distance histogram of L{layer}"),
                    )
                });
                let mean = analysis.layers[layer].mean_distance;
                let hovered_bar = draw_histogram(
                    ui,
                    rect,
                    counts,
                    tallest,
                    bar_width,
                    mean,
                    layer,
                    response.hover_pos(),
                    response.hovered(),
                );
                if let Some(bar) = hovered_bar {
                    let from = 1 + bar * bar_width;
                    let to = (bar + 1) * bar_width;
                    let span = if from == to {
                        format!("distance {from}")
                    } else {
                        format!("distances {from}–{to}")
                    };
                    // Tied pairs count with their share of the last places.
                    let count = pair_count(counts[bar]);
                    response.clone().on_hover_text_at_pointer(format!(
                        "L{layer}: {span}: {count} pair{}\nclick to see the heads of L{layer}",
                        if count == "1" { "" } else { "s" }
                    ));
                }
                if response.clicked() {
                    clicked = Some(layer);
                }
            }
        });
        ui.add_space(4.0);
    }
    ui.weak(format!(
        "x: distance 1 to {longest}{} · y: pairs, 0 to {}",
        if bar_width > 1 {
            format!(" ({bar_width} distances a bar)")
        } else {
            String::new()
        },
        pair_count(tallest)
    ));
    clicked
}

/// A weighted pair count (ANALYSIS.md §3): whole when it is, else to 0.1.
fn pair_count(count: f64) -> String {
    if (count - count.round()).abs() < 1e-9 {
        format!("{count:.0}")
    } else {
        format!("{count:.1}")
    }
}

/// Draws one histogram panel; returns the bar under the pointer.
#[allow(clippy::too_many_arguments)]
fn draw_histogram(
    ui: &egui::Ui,
    rect: Rect,
    counts: &[f64],
    tallest: f64,
    bar_width: usize,
    mean: Option<f64>,
    layer: usize,
    pointer: Option<Pos2>,
    hovered: bool,
) -> Option<usize> {
    let painter = ui.painter_at(rect);
    let visuals = ui.visuals();
    painter.rect_filled(rect, 3.0, visuals.extreme_bg_color);
    let outline = if hovered {
        Stroke::new(1.5, visuals.text_color())
    } else {
        Stroke::new(1.0, visuals.widgets.noninteractive.bg_stroke.color)
    };
    painter.rect_stroke(rect, 3.0, outline, egui::StrokeKind::Inside);
    painter.text(
        rect.left_top() + Vec2::new(6.0, 4.0),
        Align2::LEFT_TOP,
        format!("L{layer}"),
        FontId::proportional(13.0),
        visuals.strong_text_color(),
    );
    painter.text(
        rect.right_top() + Vec2::new(-6.0, 4.0),
        Align2::RIGHT_TOP,
        format!("mean {}", figure(mean, 2)),
        FontId::proportional(11.5),
        visuals.text_color(),
    );
    let plot = Rect::from_min_max(
        rect.left_top() + Vec2::new(6.0, 22.0),
        rect.right_bottom() - Vec2::new(6.0, 6.0),
    );
    let n = counts.len().max(1) as f32;
    let step = plot.width() / n;
    let mut under_pointer = None;
    for (bar, &count) in counts.iter().enumerate() {
        let x0 = plot.left() + bar as f32 * step;
        let column = Rect::from_min_max(
            Pos2::new(x0, plot.top()),
            Pos2::new(x0 + step, plot.bottom()),
        );
        if pointer.is_some_and(|p| column.x_range().contains(p.x) && plot.y_range().contains(p.y)) {
            under_pointer = Some(bar);
        }
        if count <= 0.0 {
            continue;
        }
        let height = plot.height() * (count / tallest) as f32;
        let fill = if under_pointer == Some(bar) {
            Color32::from_rgb(150, 200, 255)
        } else {
            SAME_SENTENCE
        };
        painter.rect_filled(
            Rect::from_min_max(
                Pos2::new(x0 + step * 0.1, plot.bottom() - height.max(1.0)),
                Pos2::new(x0 + step * 0.9, plot.bottom()),
            ),
            0.0,
            fill,
        );
    }
    painter.line_segment(
        [plot.left_bottom(), plot.right_bottom()],
        Stroke::new(1.0, visuals.weak_text_color()),
    );
    if let Some(mean) = mean.filter(|m| m.is_finite()) {
        // Bar b spans distances 1 + b·w ..= (b + 1)·w.
        let x = plot.left() + ((mean as f32 - 0.5) / bar_width as f32) * step;
        if plot.x_range().contains(x) {
            painter.line_segment(
                [Pos2::new(x, plot.top()), Pos2::new(x, plot.bottom())],
                Stroke::new(1.5, SEPARATOR),
            );
        }
    }
    under_pointer
}

/// Reads one per-layer figure.
type LayerValue = fn(&LayerFigures) -> Option<f64>;

/// The fractions plot's curves, in legend order.
const FRACTION_CURVES: [(Color32, &str, LayerValue); 7] = [
    (SAME_SENTENCE, "same sentence", |l| l.same_sentence_fraction),
    (SEPARATOR, "separator attention", |l| l.separator_attention),
    (FOCUS_UNIQUENESS, "focus uniqueness", |l| l.focus_uniqueness),
    (SEGMENTATION, "segmentation accuracy", |l| {
        l.segmentation_accuracy
    }),
    (UNDECIDED, "segmentation undecided", |l| {
        l.segmentation_undecided
    }),
    (OWN_SEPARATOR, "own-separator share", |l| {
        l.segmentation_share
    }),
    (SINK, "sink attention", |l| l.sink_attention),
];

/// The same curves, those made from P as their value-weighted twins (made
/// from N′, ANALYSIS.md §9).
const FRACTION_CURVES_VW: [(Color32, &str, LayerValue); 7] = [
    (SAME_SENTENCE, "same sentence", |l| l.same_sentence_fraction),
    (SEPARATOR, "separator attention N′", |l| {
        l.separator_attention_vw
    }),
    (FOCUS_UNIQUENESS, "focus uniqueness", |l| l.focus_uniqueness),
    (SEGMENTATION, "segmentation accuracy N′", |l| {
        l.segmentation_accuracy_vw
    }),
    (UNDECIDED, "segmentation undecided N′", |l| {
        l.segmentation_undecided_vw
    }),
    (OWN_SEPARATOR, "own-separator share N′", |l| {
        l.segmentation_share_vw
    }),
    (SINK, "sink attention N′", |l| l.sink_attention_vw),
];

/// The fractions plot's curves: of P, or with `weighted` of N′.
fn fraction_curves(weighted: bool) -> [(Color32, &'static str, LayerValue); 7] {
    if weighted {
        FRACTION_CURVES_VW
    } else {
        FRACTION_CURVES
    }
}

/// The fractions plot's dashed chance lines: (colour, name, value), each
/// drawn after the curve of the same colour in the legend.
fn chance_lines(analysis: &Analysis) -> [(Color32, &'static str, Option<f64>); 2] {
    [
        (
            CHANCE,
            "same sentence by chance",
            analysis.baseline_same_sentence_fraction,
        ),
        // One window's separators: the same chance in every layer.
        (
            OWN_SEPARATOR,
            "own-separator share by chance",
            analysis
                .layers
                .iter()
                .find_map(|l| l.segmentation_share_chance),
        ),
    ]
    .map(|(colour, name, value)| (colour, name, value.filter(|v| v.is_finite())))
}

/// The fractions plot's legend: only the curves drawn, so a decoder's
/// plot names no segmentation (which it does not have).
fn fractions_legend(analysis: &Analysis, weighted: bool) -> Vec<(Color32, &'static str, bool)> {
    let chances = chance_lines(analysis);
    let mut entries = Vec::new();
    for (colour, name, value) in fraction_curves(weighted) {
        if analysis
            .layers
            .iter()
            .any(|l| value(l).is_some_and(f64::is_finite))
        {
            entries.push((colour, name, false));
        }
        // The same-sentence chance follows its curve; the own-separator
        // share's follows its own.
        let chance = if name == "same sentence" {
            &chances[0]
        } else if colour == OWN_SEPARATOR {
            &chances[1]
        } else {
            continue;
        };
        if chance.2.is_some() {
            entries.push((chance.0, chance.1, true));
        }
    }
    entries
}

fn mean_distance_plot(ui: &mut egui::Ui, analysis: &Analysis, height: f32) {
    let layers = analysis.layers.len();
    layer_plot("layers mean distance", layers, height)
        .include_y(0.0)
        .y_axis_label("tokens")
        .show(ui, |plot_ui| {
            add_curve(
                plot_ui,
                "mean distance j − i",
                MEAN_DISTANCE,
                analysis.layers.iter().map(|l| l.mean_distance),
            );
        });
}

fn fractions_plot(ui: &mut egui::Ui, analysis: &Analysis, height: f32, weighted: bool) {
    let layers = analysis.layers.len();
    layer_plot("layers fractions", layers, height)
        .include_y(0.0)
        .include_y(1.0)
        .show(ui, |plot_ui| {
            for (colour, name, value) in chance_lines(analysis) {
                if let Some(value) = value {
                    plot_ui.hline(
                        HLine::new(name, value)
                            .color(colour)
                            .width(1.5)
                            .style(LineStyle::dashed_loose()),
                    );
                }
            }
            for (colour, name, value) in fraction_curves(weighted) {
                add_curve(plot_ui, name, colour, analysis.layers.iter().map(value));
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::LayerFigures;

    #[test]
    fn long_histograms_are_binned_alike() {
        let mut histogram = vec![0.0; 100];
        histogram[1] = 3.0;
        histogram[2] = 1.0;
        histogram[90] = 2.0;
        let analysis = Analysis {
            layers: vec![
                LayerFigures {
                    distance_histogram: histogram,
                    ..LayerFigures::default()
                },
                LayerFigures {
                    distance_histogram: vec![0.0, 5.0],
                    ..LayerFigures::default()
                },
            ],
            ..Analysis::default()
        };
        let (width, bins) = binned_histograms(&analysis);
        assert_eq!(width, 3);
        assert_eq!(bins[0].len(), 30);
        assert_eq!(bins[0][0], 4.0, "distances 1..=3 share the first bar");
        assert_eq!(bins[0][29], 2.0, "distance 90 is in the last bar");
        assert_eq!(bins[1][0], 5.0);
        let (_, empty) = binned_histograms(&Analysis::default());
        assert!(empty.is_empty());
    }
}
