//! The corpus window's charts: one plot per per-layer figure (mean over
//! windows with its 95% interval), the per-layer table, and the grid of
//! heads coloured by a per-head figure; plus the texts and accessible names
//! they share.

use crate::app::widgets::format::category_style;
use crate::app::widgets::head_grid::HeadGrid;
use crate::app::widgets::heatmap;
use crate::app::widgets::plots;
use crate::colormap::{ColorMap, ValueRange};
use crate::corpus::{
    CorpusReport, HeadSummary, Summary, HEAD_FIGURES, IMPORTANCE_FIGURES, LAYER_FIGURES,
};
use crate::tokens::VocabularyStyle;
use egui::{Color32, RichText, Sense, Stroke};
use egui_plot::{FilledArea, HLine, Line, LineStyle, MarkerShape, Plot, Points};

const PLOT_HEIGHT: f32 = 210.0;
const MEAN_COLOUR: Color32 = Color32::from_rgb(90, 170, 250);
const CHANCE_COLOUR: Color32 = Color32::from_rgb(200, 200, 120);

/// The human name of a figure of [`LAYER_FIGURES`] or [`HEAD_FIGURES`].
pub fn figure_title(name: &str) -> &'static str {
    match name {
        "mean_distance" => "mean distance j − i",
        "same_sentence_fraction" => "same-sentence fraction",
        "separator_attention" => "separator attention",
        "focus_uniqueness" => "focus uniqueness",
        "segmentation_accuracy" => "segmentation accuracy",
        "segmentation_undecided" => "segmentation undecided",
        "segmentation_share" => "own-separator share",
        "segmentation_share_chance" => "own-separator share by chance",
        "sink_attention" => "sink attention",
        "repetition_fraction" => "repetition fraction",
        "focus_share" => "focus share",
        "local_fraction" => "local fraction",
        "previous_token_score" => "previous-token score",
        "duplicate_token_score" => "duplicate-token score",
        "induction_score" => "induction score",
        "self_score" => "self score",
        "separator_attention_vw" => "separator attention (N′)",
        "sink_attention_vw" => "sink attention (N′)",
        "segmentation_accuracy_vw" => "segmentation accuracy (N′)",
        "segmentation_undecided_vw" => "segmentation undecided (N′)",
        "segmentation_share_vw" => "own-separator share (N′)",
        "previous_token_score_vw" => "previous-token score (N′)",
        "duplicate_token_score_vw" => "duplicate-token score (N′)",
        "induction_score_vw" => "induction score (N′)",
        "self_score_vw" => "self score (N′)",
        "importance_delta_loss" => "importance: loss change (nats)",
        "importance_output_change" => "importance: output change",
        _ => "figure",
    }
}

/// A number as the window shows it.
pub fn format_number(value: f64) -> String {
    format!("{value:.3}")
}

/// `mean ± half-width of the 95% interval`, the mean alone when the
/// interval is undefined (one window), "—" when the figure never was.
pub fn summary_text(summary: &Summary) -> String {
    match (summary.mean, summary.ci95) {
        (Some(mean), Some([lo, hi])) => {
            format!(
                "{} ± {}",
                format_number(mean),
                format_number((hi - lo) / 2.0)
            )
        }
        (Some(mean), None) => format_number(mean),
        (None, _) => "—".into(),
    }
}

/// Everything about a summary, for a tooltip.
fn summary_details(summary: &Summary) -> String {
    let Some(mean) = summary.mean else {
        return "never defined (no window had selected pairs)".into();
    };
    let interval = match summary.ci95 {
        Some([lo, hi]) => format!("95% interval {} – {}", format_number(lo), format_number(hi)),
        None => "no interval from one window".into(),
    };
    format!(
        "mean {} · {interval} · sd {} · n {}",
        format_number(mean),
        format_number(summary.std.unwrap_or(0.0)),
        summary.n
    )
}

/// The accessible name of a cell of the per-layer table.
pub fn layer_cell_label(layer: usize, figure: &str, summary: &Summary) -> String {
    format!(
        "Corpus L{layer} {}: {}",
        figure_title(figure),
        summary_text(summary)
    )
}

/// One small plot per per-layer figure, in a row.
/// Returns the name of a plot whose save button was clicked.
pub(super) fn layer_plots(
    ui: &mut egui::Ui,
    report: &CorpusReport,
) -> Option<crate::app::widgets::plots::SaveRequest> {
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("Per layer").strong());
        ui.weak(
            "line: mean over windows · band and whiskers: its 95% confidence interval · \
             dashed: same-sentence fraction by chance (all candidate pairs), with its band · \
             hover a point for the numbers",
        );
    });
    // As many plots a row as fit at a readable width (the longest title and
    // its save buttons need about 300 points); the rows share the width
    // evenly.
    // The chance of the own-separator share is drawn as that plot's chance
    // line, not as a plot of its own.
    // A figure no window defines (the segmentation figures of a causal
    // decoder, ANALYSIS.md §8) is named, not drawn as an empty box.
    let defined = |index: usize| report.layers.iter().any(|l| l.figures()[index].1.n > 0);
    type Figures<'a> = Vec<(usize, &'a str)>;
    let (figures, undefined): (Figures, Figures) = LAYER_FIGURES
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, figure)| figure != "segmentation_share_chance")
        .partition(|&(index, _)| defined(index) || report.layers.is_empty());
    if !undefined.is_empty() {
        let names: Vec<&str> = undefined.iter().map(|&(_, f)| figure_title(f)).collect();
        let causal = undefined.iter().all(|(_, f)| f.starts_with("segmentation"));
        ui.weak(format!(
            "Not defined in any window, so not drawn: {}{}",
            names.join(", "),
            if causal {
                " (a causal model's token cannot attend to the end of its own sentence, \
                 ANALYSIS.md §8)"
            } else {
                ""
            }
        ));
    }
    if figures.is_empty() {
        return None;
    }
    let spacing = ui.spacing().item_spacing.x;
    let available = ui.available_width();
    let per_row = (((available + spacing) / (MIN_PLOT_WIDTH + spacing)).floor() as usize)
        .clamp(1, figures.len());
    let rows = figures.len().div_ceil(per_row);
    let per_row = figures.len().div_ceil(rows);
    let width = (available - spacing * (per_row as f32 - 1.0)) / per_row as f32;
    let layers = report.layers.len();
    let mut clicked = None;
    for row in figures.chunks(per_row) {
        ui.horizontal(|ui| {
            for &(index, figure) in row {
                let summaries: Vec<Summary> =
                    report.layers.iter().map(|l| l.figures()[index].1).collect();
                let name = format!("corpus-{figure}");
                let save = plots::figure(ui, &name, figure_title(figure), |ui| {
                    // (Narrower while it is laid out for a paper.)
                    ui.set_width(width.min(ui.available_width()));
                    let baseline = match figure {
                        "same_sentence_fraction" => Some(report.baseline_same_sentence_fraction),
                        // The same in every layer: one window's separators.
                        "segmentation_share" => {
                            report.layers.first().map(|l| l.segmentation_share_chance)
                        }
                        _ => None,
                    };
                    layer_plot(ui, figure, &summaries, baseline, layers, width);
                });
                clicked = clicked.take().or(save);
            }
        });
    }
    clicked
}

/// The narrowest a per-layer plot gets before the row wraps.
const MIN_PLOT_WIDTH: f32 = 300.0;

fn layer_plot(
    ui: &mut egui::Ui,
    figure: &str,
    summaries: &[Summary],
    baseline: Option<Summary>,
    layers: usize,
    width: f32,
) {
    let is_distance = figure == "mean_distance";
    let hover: Vec<Summary> = summaries.to_vec();
    let mut plot = Plot::new(format!("corpus plot {figure}"))
        .width(width)
        .height(PLOT_HEIGHT)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .include_x(-0.3)
        .include_x(layers.saturating_sub(1) as f64 + 0.3)
        .include_y(0.0)
        .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
        .custom_x_axes(vec![egui_plot::AxisHints::new_x()
            // Every layer's label while they fit, else every fifth.
            .label_spacing(24.0..=30.0)
            .formatter(|mark, _| {
                let v = mark.value;
                if v >= 0.0 && v.fract() == 0.0 {
                    format!("L{v:.0}")
                } else {
                    String::new()
                }
            })])
        .label_formatter(move |position| match position {
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } if *plot_name == "mean" => {
                let layer = position.x.round().max(0.0) as usize;
                hover
                    .get(layer)
                    .map(|s| format!("L{layer}: {}", summary_details(s)))
            }
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } if *plot_name == "chance" => Some(format!("chance: {}", format_number(position.y))),
            _ => None,
        });
    if is_distance {
        plot = plot.y_axis_label("tokens");
    }
    plot.show(ui, |plot_ui| {
        if let Some(baseline) = baseline {
            if let Some(chance) = baseline.mean {
                let (x0, x1) = (-0.3, layers.saturating_sub(1) as f64 + 0.3);
                if let Some([lo, hi]) = baseline.ci95 {
                    plot_ui.add(
                        FilledArea::new("chance", &[x0, x1], &[lo, lo], &[hi, hi])
                            .fill_color(CHANCE_COLOUR.gamma_multiply(0.2))
                            .allow_hover(false),
                    );
                }
                plot_ui.hline(
                    HLine::new("chance", chance)
                        .color(CHANCE_COLOUR)
                        .width(1.5)
                        .style(LineStyle::dashed_loose()),
                );
            }
        }
        for segment in segments(summaries) {
            let xs: Vec<f64> = segment.iter().map(|(x, _)| *x).collect();
            let intervals: Vec<[f64; 2]> = segment
                .iter()
                .map(|(_, s)| s.ci95.unwrap_or_else(|| [s.mean.unwrap_or(0.0); 2]))
                .collect();
            if segment.iter().any(|(_, s)| s.ci95.is_some()) {
                let lo: Vec<f64> = intervals.iter().map(|i| i[0]).collect();
                let hi: Vec<f64> = intervals.iter().map(|i| i[1]).collect();
                plot_ui.add(
                    FilledArea::new("95% interval", &xs, &lo, &hi)
                        .fill_color(MEAN_COLOUR.gamma_multiply(0.25))
                        .allow_hover(false),
                );
            }
            // Whiskers, so a single layer's interval shows too.
            for ((x, _), [lo, hi]) in segment.iter().zip(&intervals) {
                if hi > lo {
                    plot_ui.line(
                        Line::new("95% interval", vec![[*x, *lo], [*x, *hi]])
                            .color(MEAN_COLOUR.gamma_multiply(0.7))
                            .width(1.0)
                            .allow_hover(false),
                    );
                }
            }
            let points: Vec<[f64; 2]> = segment
                .iter()
                .map(|(x, s)| [*x, s.mean.unwrap_or(0.0)])
                .collect();
            plot_ui.line(
                Line::new("mean", points.clone())
                    .color(MEAN_COLOUR)
                    .width(2.0),
            );
            plot_ui.points(
                Points::new("mean", points)
                    .color(MEAN_COLOUR)
                    .radius(3.0)
                    .shape(MarkerShape::Circle),
            );
        }
    });
}

/// Runs of consecutive layers whose mean is defined.
fn segments(summaries: &[Summary]) -> Vec<Vec<(f64, Summary)>> {
    let mut out: Vec<Vec<(f64, Summary)>> = vec![Vec::new()];
    for (layer, summary) in summaries.iter().enumerate() {
        if summary.mean.is_some_and(f64::is_finite) {
            out.last_mut()
                .expect("never empty")
                .push((layer as f64, *summary));
        } else if out.last().is_some_and(|s| !s.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The per-layer numbers: mean ± half the 95% interval, details on hover.
pub(super) fn layer_table(ui: &mut egui::Ui, report: &CorpusReport) {
    ui.label(RichText::new("Per layer: mean ± half the 95% interval").strong());
    egui::ScrollArea::horizontal()
        .id_salt("corpus layer table")
        .show(ui, |ui| {
            egui::Grid::new("corpus layer table grid")
                .striped(true)
                .spacing(egui::vec2(14.0, 3.0))
                .show(ui, |ui| {
                    ui.strong("layer");
                    for figure in LAYER_FIGURES {
                        ui.strong(figure_title(figure));
                    }
                    ui.end_row();
                    for layer in &report.layers {
                        ui.label(format!("L{}", layer.layer));
                        for (figure, summary) in layer.figures() {
                            let label = layer_cell_label(layer.layer, figure, &summary);
                            ui.label(summary_text(&summary))
                                .on_hover_text(summary_details(&summary))
                                .widget_info(|| {
                                    egui::WidgetInfo::labeled(egui::Role::Label, true, &label)
                                });
                        }
                        ui.end_row();
                    }
                });
        });
    let baseline = &report.baseline_same_sentence_fraction;
    ui.weak(format!(
        "Same-sentence fraction by chance (all candidate pairs): {}",
        summary_text(baseline)
    ))
    .on_hover_text(summary_details(baseline));
}

/// The index in [`HEAD_FIGURES`] of the importance the heads are ranked
/// by: the change of the loss where the report has it, else the output's.
pub(super) fn importance_figure(report: &CorpusReport) -> usize {
    let [delta_loss, output_change] = IMPORTANCE_FIGURES;
    let name = if has_figure(report, delta_loss) {
        delta_loss
    } else {
        output_change
    };
    HEAD_FIGURES.iter().position(|&f| f == name).unwrap_or(0)
}

/// The mean of head figure `figure` (an index into [`HEAD_FIGURES`]).
fn head_mean(head: &HeadSummary, figure: usize) -> Option<f64> {
    head.figures()[figure].1.mean.filter(|v| v.is_finite())
}

/// The accessible name of a head grid cell.
pub fn head_cell_label(layer: usize, head: &HeadSummary, figure: usize) -> String {
    let summary = head.figures()[figure].1;
    format!(
        "Corpus L{layer} H{}: {} {}, mostly {}",
        head.head,
        figure_title(HEAD_FIGURES[figure]),
        summary_text(&summary),
        category_style(head.categories.most_common).0
    )
}

/// Whether `report` has head figure `name`: what the run measured
/// ([`CorpusReport::measures`]), the loss change only for a model with a
/// loss.
fn has_figure(report: &CorpusReport, name: &str) -> bool {
    let [delta_loss, _] = IMPORTANCE_FIGURES;
    report.measures(name)
        && (name != delta_loss
            || (report.layers.iter())
                .flat_map(|l| &l.heads)
                .any(|h| h.importance_delta_loss.n > 0))
}

fn head_tooltip(
    report: &CorpusReport,
    layer: usize,
    head: &HeadSummary,
    style: VocabularyStyle,
) -> String {
    let mut lines = vec![format!("L{layer} H{}", head.head)];
    let figures = head.figures();
    for (name, summary) in figures.into_iter().filter(|(n, _)| has_figure(report, n)) {
        lines.push(format!(
            "{}: {}",
            figure_title(name),
            summary_details(&summary)
        ));
    }
    let categories = &head.categories;
    let share = |count: usize| match categories.counts.total() {
        0 => 0.0,
        total => count as f64 * 100.0 / total as f64,
    };
    match categories.most_common {
        Some(category) => lines.push(format!(
            "most common category: {} ({:.0}% of windows)",
            category_style(Some(category)).0,
            share(categories.counts.get(category))
        )),
        None => lines.push("most common category: none (no pairs)".into()),
    }
    let counts = &categories.counts;
    lines.push(format!(
        "categories: repetition {:.0}%, focus {:.0}%, local {:.0}%, mixed {:.0}%, no pairs {:.0}%",
        share(counts.repetition),
        share(counts.focus),
        share(counts.local),
        share(counts.mixed),
        share(counts.none)
    ));
    if let Some(focus) = &head.focus_token {
        lines.push(format!(
            "focus token: “{}” ({}, id {}) in {:.0}% of windows",
            focus
                .token
                .as_deref()
                .map_or("?".into(), |raw| style.readable(raw)),
            focus.token.as_deref().unwrap_or("?"),
            focus.id,
            focus.fraction * 100.0
        ));
    }
    lines.join("\n")
}

/// Every head as a cell coloured by the chosen figure's mean, with its
/// most common category as a strip along the bottom.
pub(super) fn head_grid(
    ui: &mut egui::Ui,
    report: &CorpusReport,
    figure: &mut usize,
    map: ColorMap,
    style: VocabularyStyle,
) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("Heads, coloured by").strong());
        egui::ComboBox::from_id_salt("corpus head figure")
            .selected_text(figure_title(HEAD_FIGURES[*figure]))
            .show_ui(ui, |ui| {
                for (index, name) in HEAD_FIGURES.iter().enumerate() {
                    if has_figure(report, name) {
                        ui.selectable_value(figure, index, figure_title(name));
                    }
                }
            });
    });
    let figure = (*figure).min(HEAD_FIGURES.len() - 1);
    let values: Vec<f32> = report
        .layers
        .iter()
        .flat_map(|l| l.heads.iter().filter_map(|h| head_mean(h, figure)))
        .map(|v| v as f32)
        .collect();
    let range = ValueRange::auto(map, &values);
    heatmap::colour_bar(ui, map, Some(range), "mean over windows");
    let heads = report
        .layers
        .iter()
        .map(|l| l.heads.len())
        .max()
        .unwrap_or(0);
    if heads == 0 {
        return;
    }
    let header = 34.0;
    let cell_w = HeadGrid::fitted_width(ui.available_width() - header, heads, 0.0, 2.0, 24.0, 64.0);
    let cell_h = 26.0;
    let font = egui::FontId::proportional(if cell_w >= 40.0 { 11.0 } else { 9.0 });
    let rows: Vec<usize> = (0..report.layers.len()).collect();
    HeadGrid::new("corpus head grid", &rows, heads, egui::vec2(cell_w, cell_h))
        .gap(egui::vec2(2.0, 2.0))
        .headers(header, 18.0)
        .font_size(11.0)
        .sense(Sense::hover())
        .show(ui, |ui, painter, cell| {
            let layer = &report.layers[cell.layer];
            let Some(head) = cell.head.and_then(|h| layer.heads.get(h)) else {
                return;
            };
            let rect = cell.rect;
            let mean = head_mean(head, figure);
            let fill = match mean {
                Some(v) => {
                    let [r, g, b] = map.color(v as f32, range);
                    Color32::from_rgb(r, g, b)
                }
                None => ui.visuals().faint_bg_color,
            };
            painter.rect_filled(rect, 2.0, fill);
            let (_, strip) = category_style(head.categories.most_common);
            let strip_rect = egui::Rect::from_min_max(
                egui::pos2(rect.left(), rect.bottom() - 4.0),
                rect.right_bottom(),
            );
            painter.rect_filled(strip_rect, 0.0, strip);
            let text = mean.map_or("—".to_string(), |v| {
                if v.abs() >= 10.0 {
                    format!("{v:.1}")
                } else {
                    format!("{v:.2}")
                }
            });
            painter.text(
                rect.center() - egui::vec2(0.0, 2.0),
                egui::Align2::CENTER_CENTER,
                text,
                font.clone(),
                crate::app::widgets::token_text::text_on(fill),
            );
            if cell.response.hovered() {
                painter.rect_stroke(
                    rect,
                    2.0,
                    Stroke::new(2.0, ui.visuals().strong_text_color()),
                    egui::StrokeKind::Inside,
                );
            }
            let label = head_cell_label(layer.layer, head, figure);
            cell.response
                .on_hover_text(head_tooltip(report, layer.layer, head, style))
                .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Cell, true, &label));
        });
    ui.horizontal_wrapped(|ui| {
        ui.small("strip: most common category");
        for category in crate::analysis::Category::ALL
            .into_iter()
            .map(Some)
            .chain([None])
        {
            let (name, colour) = category_style(category);
            let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 8.0), Sense::hover());
            ui.painter().rect_filled(rect, 1.0, colour);
            ui.small(name);
        }
    });
}
