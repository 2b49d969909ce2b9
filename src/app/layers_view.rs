//! The inter-layer comparison (ANALYSIS.md §5): how the pairs of strongly
//! similar tokens change from layer to layer.
//!
//! From top to bottom: small multiples of each layer's distance histogram
//! (j − i over the pooled selected pairs, one shared scale so the layers
//! compare), curves against layer of the pooled mean distance and of the
//! fractions (same-sentence share beside its chance baseline, separator
//! attention, focus uniqueness, segmentation accuracy), a table of the
//! same figures, and the layer-to-layer correlation grid (its own file,
//! [`super::layer_correlation`]). Every number is the analysis' own; "—"
//! marks an undefined figure and breaks a curve. Clicking a histogram or a
//! table row shows that layer's heads.

use super::head_view::figure;
use super::plot_export;
use super::table::{self, Cell, Column, RowLook};
use super::views::ViewAction;
use crate::analysis::Analysis;
use crate::pipeline::RunOutput;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use egui_plot::{HLine, Line, LineStyle, MarkerShape, Plot, PlotPoints, Points};

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

/// The whole view; returns what the user asked for.
pub fn ui(ui: &mut egui::Ui, output: &RunOutput) -> Option<ViewAction> {
    let analysis = &output.analysis;
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
            ui.add_space(6.0);

            let save = plot_export::figure(
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
                let save = plot_export::figure(
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
                let save = plot_export::figure(
                    &mut columns[1],
                    "fractions",
                    "Fractions against layer",
                    |ui| {
                        fractions_plot(ui, analysis, plot_height);
                        legend(
                            ui,
                            &[
                                (SAME_SENTENCE, "same sentence", false),
                                (CHANCE, "same sentence by chance", true),
                                (SEPARATOR, "separator attention", false),
                                (FOCUS_UNIQUENESS, "focus uniqueness", false),
                                (SEGMENTATION, "segmentation accuracy", false),
                                (UNDECIDED, "segmentation undecided", false),
                                (OWN_SEPARATOR, "own-separator share", false),
                                (OWN_SEPARATOR, "own-separator share by chance", true),
                                (SINK, "sink attention", false),
                            ],
                        );
                    },
                );
                save_plot(&mut action, save);
            });
            ui.add_space(8.0);

            if let Some(clicked) = super::layer_correlation::table_and_correlation(ui, analysis) {
                action = Some(clicked);
            }
        });
    action
}

/// A click on a figure's save button becomes the view's action.
pub(super) fn save_plot(action: &mut Option<ViewAction>, clicked: Option<String>) {
    if let Some(name) = clicked {
        *action = Some(ViewAction::SavePlot(name));
    }
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

/// The points of a figure against layer, split where it is undefined so a
/// curve never bridges a gap.
pub(super) fn segments(values: impl Iterator<Item = Option<f64>>) -> Vec<Vec<[f64; 2]>> {
    let mut out: Vec<Vec<[f64; 2]>> = vec![Vec::new()];
    for (layer, value) in values.enumerate() {
        match value.filter(|v| v.is_finite()) {
            Some(v) => out.last_mut().expect("never empty").push([layer as f64, v]),
            None => {
                if out.last().is_some_and(|s| !s.is_empty()) {
                    out.push(Vec::new());
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// A curve with markers, named `name` in the legend.
fn add_curve(
    plot_ui: &mut egui_plot::PlotUi<'_>,
    name: &str,
    colour: Color32,
    values: impl Iterator<Item = Option<f64>>,
) {
    add_segments(plot_ui, name, colour, segments(values));
}

/// The pieces of a curve (see [`segments`]) as lines with markers.
pub(super) fn add_segments(
    plot_ui: &mut egui_plot::PlotUi<'_>,
    name: &str,
    colour: Color32,
    segments: Vec<Vec<[f64; 2]>>,
) {
    for segment in segments {
        plot_ui.line(
            Line::new(name, PlotPoints::from(segment.clone()))
                .color(colour)
                .width(2.0),
        );
        plot_ui.points(
            Points::new(name, PlotPoints::from(segment))
                .color(colour)
                .radius(3.5)
                .shape(MarkerShape::Circle),
        );
    }
}

/// The curves' names under a plot (a legend inside would hide points).
/// Each entry (swatch and name) is one piece, so a line break never
/// separates them.
pub(super) fn legend(ui: &mut egui::Ui, entries: &[(Color32, &str, bool)]) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 14.0;
        let font = FontId::proportional(13.0);
        let text_colour = ui.visuals().text_color();
        for &(colour, name, dashed) in entries {
            let galley = ui
                .painter()
                .layout_no_wrap(name.to_owned(), font.clone(), text_colour);
            let swatch = 22.0;
            let size = Vec2::new(swatch + 6.0 + galley.size().x, galley.size().y.max(14.0));
            let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
            let painter = ui.painter();
            let y = rect.center().y;
            if dashed {
                for k in 0..3 {
                    let x = rect.left() + k as f32 * 8.0;
                    painter.line_segment(
                        [Pos2::new(x, y), Pos2::new(x + 5.0, y)],
                        Stroke::new(2.0, colour),
                    );
                }
            } else {
                painter.line_segment(
                    [
                        Pos2::new(rect.left(), y),
                        Pos2::new(rect.left() + swatch, y),
                    ],
                    Stroke::new(2.0, colour),
                );
                painter.circle_filled(Pos2::new(rect.left() + swatch / 2.0, y), 3.5, colour);
            }
            painter.galley(
                Pos2::new(rect.left() + swatch + 6.0, y - galley.size().y / 2.0),
                galley,
                text_colour,
            );
        }
    });
}

fn layer_plot(id: &str, layers: usize, height: f32) -> Plot<'static> {
    Plot::new(id.to_owned())
        .height(height)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .show_x(false)
        .include_x(-0.3)
        .include_x(layers.saturating_sub(1) as f64 + 0.3)
        .x_axis_label("layer")
        .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
        .x_axis_formatter(|mark, _| {
            let v = mark.value;
            if v >= 0.0 && v.fract() == 0.0 {
                format!("L{v:.0}")
            } else {
                String::new()
            }
        })
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

fn fractions_plot(ui: &mut egui::Ui, analysis: &Analysis, height: f32) {
    let layers = analysis.layers.len();
    layer_plot("layers fractions", layers, height)
        .include_y(0.0)
        .include_y(1.0)
        .show(ui, |plot_ui| {
            if let Some(chance) = analysis
                .baseline_same_sentence_fraction
                .filter(|v| v.is_finite())
            {
                plot_ui.hline(
                    HLine::new("same sentence by chance", chance)
                        .color(CHANCE)
                        .width(1.5)
                        .style(LineStyle::dashed_loose()),
                );
            }
            // One window's separators: the same chance in every layer.
            if let Some(chance) = analysis
                .layers
                .iter()
                .find_map(|l| l.segmentation_share_chance)
            {
                plot_ui.hline(
                    HLine::new("own-separator share by chance", chance)
                        .color(OWN_SEPARATOR)
                        .width(1.5)
                        .style(LineStyle::dashed_loose()),
                );
            }
            let l = &analysis.layers;
            add_curve(
                plot_ui,
                "same sentence",
                SAME_SENTENCE,
                l.iter().map(|l| l.same_sentence_fraction),
            );
            add_curve(
                plot_ui,
                "separator attention",
                SEPARATOR,
                l.iter().map(|l| l.separator_attention),
            );
            add_curve(
                plot_ui,
                "focus uniqueness",
                FOCUS_UNIQUENESS,
                l.iter().map(|l| l.focus_uniqueness),
            );
            add_curve(
                plot_ui,
                "segmentation accuracy",
                SEGMENTATION,
                l.iter().map(|l| l.segmentation_accuracy),
            );
            add_curve(
                plot_ui,
                "segmentation undecided",
                UNDECIDED,
                l.iter().map(|l| l.segmentation_undecided),
            );
            add_curve(
                plot_ui,
                "own-separator share",
                OWN_SEPARATOR,
                l.iter().map(|l| l.segmentation_share),
            );
            add_curve(
                plot_ui,
                "sink attention",
                SINK,
                l.iter().map(|l| l.sink_attention),
            );
        });
}

pub(super) const LAYER_COLUMNS: [Column; 10] = [
    Column {
        title: "layer",
        width: 56.0,
        tooltip: "Click a row to see the layer's heads",
        numeric: false,
    },
    Column {
        title: "mean distance",
        width: 100.0,
        tooltip: "Mean of j − i over the selected pairs of all heads, pooled",
        numeric: true,
    },
    Column {
        title: "same sentence",
        width: 104.0,
        tooltip: "Share of the pooled pairs within one sentence (chance: the share over all candidate pairs)",
        numeric: true,
    },
    Column {
        title: "separator attention",
        width: 128.0,
        tooltip: "Mean over heads of the attention content tokens pay to [SEP]",
        numeric: true,
    },
    Column {
        title: "focus uniqueness",
        width: 116.0,
        tooltip: "Distinct focus tokens among the heads that have one, divided by the number of such heads",
        numeric: true,
    },
    Column {
        title: "segmentation accuracy",
        width: 150.0,
        tooltip: "Share of content tokens whose most attended [SEP] (head-averaged) closes their own sentence",
        numeric: true,
    },
    Column {
        title: "undecided",
        width: 84.0,
        tooltip: "Share of content tokens whose two largest [SEP] attentions tie (within 1e-4): assigned to no separator",
        numeric: true,
    },
    Column {
        title: "own separator",
        width: 104.0,
        tooltip: "Mean share of a content token's [SEP] attention (head-averaged) that goes to the [SEP] closing its own sentence; in brackets what an even spread gives",
        numeric: true,
    },
    Column {
        title: "sink attention",
        width: 104.0,
        tooltip: "Mean over heads of the attention content tokens pay to the first position ([CLS])",
        numeric: true,
    },
    Column {
        title: "pairs",
        width: 60.0,
        tooltip: "Selected pairs of all heads, pooled",
        numeric: true,
    },
];

/// The cells of one layer's row, as displayed.
pub fn layer_cells(analysis: &Analysis, layer: usize) -> Vec<Cell> {
    let Some(l) = analysis.layers.get(layer) else {
        return Vec::new();
    };
    // Each head's selected places (k under the top-fraction rule, however
    // its last places were shared among tied pairs).
    let pooled: usize = l.heads.iter().map(|h| h.selected_pairs.len()).sum();
    vec![
        Cell::new(format!("L{layer}")),
        Cell::new(figure(l.mean_distance, 2)),
        Cell::new(figure(l.same_sentence_fraction, 3)),
        Cell::new(figure(l.separator_attention, 3)),
        Cell::new(figure(l.focus_uniqueness, 3)),
        Cell::new(figure(l.segmentation_accuracy, 3)),
        Cell::new(figure(l.segmentation_undecided, 3)),
        Cell::new(match l.segmentation_share {
            Some(_) => format!(
                "{} ({})",
                figure(l.segmentation_share, 3),
                figure(l.segmentation_share_chance, 3)
            ),
            None => figure(None, 3),
        }),
        Cell::new(figure(l.sink_attention, 3)),
        Cell::new(pooled.to_string()),
    ]
}

/// The per-layer table; returns the layer whose row was clicked.
pub(super) fn figures_table(ui: &mut egui::Ui, analysis: &Analysis, width: f32) -> Option<usize> {
    let widths = table::fit_widths(&LAYER_COLUMNS, width);
    let mut clicked = None;
    ui.spacing_mut().item_spacing.y = 0.0;
    table::header_row(ui, "layer table header", &LAYER_COLUMNS, &widths, None);
    for layer in 0..analysis.layers.len() {
        let cells = layer_cells(analysis, layer);
        let name = format!(
            "L{layer}: {}",
            table::describe(&LAYER_COLUMNS[1..], &cells[1..])
        );
        let response = table::data_row(
            ui,
            ui.scope_id().with(("layer row", layer)),
            &widths,
            &LAYER_COLUMNS,
            &cells,
            &name,
            RowLook {
                striped: layer % 2 == 1,
                tint: None,
            },
        );
        if response
            .on_hover_text(format!("Show the heads of L{layer}"))
            .clicked()
        {
            clicked = Some(layer);
        }
    }
    ui.add_space(4.0);
    ui.weak(format!(
        "same sentence by chance: {}",
        figure(analysis.baseline_same_sentence_fraction, 3)
    ));
    clicked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::LayerFigures;

    #[test]
    fn undefined_figures_break_a_curve() {
        let s = segments([Some(1.0), None, Some(2.0), Some(3.0), None].into_iter());
        assert_eq!(s, vec![vec![[0.0, 1.0]], vec![[2.0, 2.0], [3.0, 3.0]]]);
        assert!(segments([None, None].into_iter()).is_empty());
    }

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
