//! Separators: how much the heads attend to `[SEP]`, and what that
//! attention says about where sentences end (ANALYSIS.md §4–§5).
//!
//! Three parts: every head's separator_attention as a grid of coloured
//! numbers (rows: layers, with the layer's own figure at the end; a click
//! opens the head), the text tinted token by token by its attention to the
//! separators in the chosen layer (mean over heads of Σ over `[SEP]` keys
//! of P[i, ·], a display computed once per result), and the segmentation:
//! each content token coloured by the sentence of the `[SEP]` it attends to
//! most (head-averaged P, as segmentation_accuracy assigns it), tokens
//! placed in the wrong sentence outlined in red, and every layer's
//! segmentation_accuracy, from the analysis, to choose the layer by.
//!
//! **Value-weighted (N′)** shows all three from the value-weighted
//! attention N′ of ANALYSIS.md §9 (the `_vw` figures, and the chosen
//! layer's tokens from N′), where the result has value norms.
//!
//! A causal decoder's separators are each sentence's last token, and it has
//! no segmentation (a token cannot attend to the end of its own sentence,
//! which comes after it: ANALYSIS.md §8); the view says so where the
//! segmentation would be, and shows the sentences with their separators.

use crate::analysis::{HeadFigures, LayerFigures, SeparatorChoice};
use crate::app::settings::Settings;
use crate::app::views::shared::derived::{Derived, LayerTokens};
use crate::app::views::shared::{
    layer_picker, picked_colour, save_plot, token_tooltip, with_pick, Shared, View, ViewAction,
    ViewContext,
};
use crate::app::widgets::format::figure;
use crate::app::widgets::head_grid::HeadGrid;
use crate::app::widgets::heatmap;
use crate::app::widgets::plots;
use crate::app::widgets::token_text::{text_on, ChipStyle, TokenFlow};
use crate::colormap::{ColorMap, ValueRange};
use crate::pipeline::RunOutput;
use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};

/// Sentence colours for the segmentation (no red: red marks mistakes).
const SENTENCE_COLOURS: [Color32; 8] = [
    Color32::from_rgb(52, 120, 190),
    Color32::from_rgb(230, 140, 40),
    Color32::from_rgb(60, 160, 80),
    Color32::from_rgb(150, 105, 200),
    Color32::from_rgb(30, 170, 190),
    Color32::from_rgb(150, 95, 80),
    Color32::from_rgb(220, 120, 190),
    Color32::from_rgb(170, 170, 50),
];

/// The colour that marks a token placed in the wrong sentence.
pub const MISPLACED: Color32 = Color32::from_rgb(255, 70, 70);
/// The outline of a token whose attention ties between separators.
pub const UNDECIDED: Color32 = Color32::from_rgb(150, 150, 150);

/// The colour of sentence `s` (0-based).
pub fn sentence_colour(s: usize) -> Color32 {
    SENTENCE_COLOURS[s % SENTENCE_COLOURS.len()]
}

/// Why a causal model has no segmentation, as the view says it.
pub const NO_CAUSAL_SEGMENTATION: &str = "No segmentation for a causal model: a token sees only \
     itself and the tokens before it, so it cannot attend to the separator that ends its own \
     sentence (ANALYSIS.md §8). Its separators are each sentence's last token, and its \
     separator attention counts only those at or before the query.";

/// Whether the view reads P or the value-weighted N′ (ANALYSIS.md §9):
/// which figures, and which per-token arrays.
#[derive(Clone, Copy)]
struct Weighting {
    weighted: bool,
}

impl Weighting {
    fn head(self, f: &HeadFigures) -> Option<f64> {
        if self.weighted {
            f.separator_attention_vw
        } else {
            f.separator_attention
        }
    }

    fn layer(self, l: &LayerFigures) -> Option<f64> {
        if self.weighted {
            l.separator_attention_vw
        } else {
            l.separator_attention
        }
    }

    fn accuracy(self, l: &LayerFigures) -> Option<f64> {
        if self.weighted {
            l.segmentation_accuracy_vw
        } else {
            l.segmentation_accuracy
        }
    }

    fn undecided(self, l: &LayerFigures) -> Option<f64> {
        if self.weighted {
            l.segmentation_undecided_vw
        } else {
            l.segmentation_undecided
        }
    }

    fn tokens(self, derived: &Derived, layer: usize) -> Option<&LayerTokens> {
        if self.weighted {
            derived.weighted_layer(layer)
        } else {
            derived.layer(layer)
        }
    }

    /// The matrix read, as the captions write it.
    fn symbol(self) -> &'static str {
        if self.weighted {
            "N′"
        } else {
            "P"
        }
    }
}

/// The Separators tab (no state of its own: the layer is shared).
#[derive(Default)]
pub struct SeparatorsView;

impl View for SeparatorsView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        separators_ui(ui, cx.output, cx.shared, cx.settings)
    }
}

/// The whole view.
fn separators_ui(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &mut Shared,
    settings: &Settings,
) -> Option<ViewAction> {
    let layers = output.captures.layers;
    if layers == 0 || output.analysis.layers.is_empty() {
        ui.label("This result has no layers.");
        return None;
    }
    if !output.captures.has_attention() {
        ui.heading("Separators");
        ui.label(format!(
            "Nothing to show: {}. Capture with attentions to see the separator attention and the segmentation.",
            crate::capture_file::NO_ATTENTION
        ));
        return None;
    }
    let mut action = None;
    let has_norms = output.captures.has_value_norms();
    views.value_weighted &= has_norms;
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let causal = output.input.tokens.causal;
            ui.horizontal_wrapped(|ui| {
                ui.heading("Separators");
                if causal {
                    ui.weak("how much each head attends to the sentence-final tokens seen so far");
                } else {
                    ui.weak("how much each head attends to [SEP], and the sentences that attention recovers");
                }
            });
            ui.add_enabled(
                has_norms,
                egui::Checkbox::new(&mut views.value_weighted, "Value-weighted (N′)"),
            )
            .on_hover_text(
                "Read the value-weighted attention N′ instead of P: each key's attention \
                 weighted by the size of what it writes through the head, rows summing to 1 \
                 (ANALYSIS.md §9). A [SEP] that takes attention but writes little fades",
            )
            .on_disabled_hover_text("This result has no value norms (a capture file without them)");
            let weighting = Weighting {
                weighted: views.value_weighted,
            };
            ui.add_space(4.0);
            ui.horizontal_wrapped(|ui| {
                ui.strong("Separator attention per head");
                ui.weak(if causal {
                    "mean over content tokens of the attention to the separators at or before them; \
                     click a head to open it"
                } else {
                    "mean over content tokens of the attention to [SEP]; click a head to open it"
                });
                if ui
                    .button("Show on the Heads grid")
                    .on_hover_text("Turn on the separator attention overlay of the Heads grid")
                    .clicked()
                {
                    action = Some(ViewAction::ShowSeparatorOverlay);
                }
            });
            let head_range = head_range(output, weighting);
            heatmap::colour_bar(
                ui,
                settings.colormap,
                Some(head_range),
                &format!(
                    "separator attention from {}, 0 to the largest head's",
                    weighting.symbol()
                ),
            );
            let grid = (views.layer, settings.colormap, head_range);
            if let Some(a) = head_grid(ui, output, grid, weighting) {
                action = Some(a);
            }
            ui.add_space(8.0);

            ui.strong("Segmentation accuracy per layer");
            if causal {
                ui.label(NO_CAUSAL_SEGMENTATION);
            } else {
                ui.weak(
                    "share of content tokens whose most attended [SEP] (head-averaged) closes \
                     their own sentence; click a layer to show it below",
                );
                accuracy_strip(ui, output, &mut views.layer, weighting);
            }
            ui.add_space(8.0);

            layer_picker(
                ui,
                &mut views.layer,
                layers,
                "The layer whose attention the texts below show",
            );
            ui.add_space(4.0);
            let layer = views.layer;
            let clicked = ui
                .columns(2, |columns| {
                    let mut a = None;
                    let save = plots::figure(
                        &mut columns[0],
                        &format!("separator-attention-text-L{layer}"),
                        &format!("Attention to {}, L{layer}", separators_name(output)),
                        |ui| a = separator_text(ui, output, (views, settings), layer, weighting),
                    );
                    save_plot(&mut action, save);
                    let b = if causal {
                        sentences_text(&mut columns[1], output, views)
                    } else {
                        segmentation_text(&mut columns[1], output, views, layer, weighting)
                    };
                    a.or(b)
                });
            views.click_token(output, clicked);
        });
    action
}

/// The colour range of the head grid: 0 to the largest head's value, so
/// the small values most heads have still differ in colour.
fn head_range(output: &RunOutput, weighting: Weighting) -> ValueRange {
    let largest = output
        .analysis
        .layers
        .iter()
        .flat_map(|l| &l.heads)
        .filter_map(|f| weighting.head(f))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    ValueRange::new(0.0, largest.max(0.01) as f32)
}

/// Every head's separator_attention: rows are layers, the last column the
/// layer's figure. Returns the head clicked.
fn head_grid(
    ui: &mut egui::Ui,
    output: &RunOutput,
    (chosen, map, range): (usize, ColorMap, ValueRange),
    weighting: Weighting,
) -> Option<ViewAction> {
    let analysis = &output.analysis;
    let heads = analysis
        .layers
        .iter()
        .map(|l| l.heads.len())
        .max()
        .unwrap_or(0);
    if heads == 0 {
        return None;
    }
    let rows: Vec<usize> = (0..analysis.layers.len()).collect();
    let (row_header, room, cell_h) = (34.0, 10.0, 22.0);
    let cell_w = HeadGrid::fitted_width(
        ui.available_width() - row_header - room,
        heads,
        1.0,
        0.0,
        30.0,
        80.0,
    );
    let picked = picked_colour(ui);
    let answer = HeadGrid::new("separator grid", &rows, heads, Vec2::new(cell_w, cell_h))
        .headers(row_header, cell_h)
        .layer_column("layer", room)
        .emphasise(Some(chosen))
        .show(ui, |ui, painter, cell| {
            let layer = &analysis.layers[cell.layer];
            let value = match cell.head {
                None => weighting.layer(layer),
                Some(h) => layer.heads.get(h).and_then(|f| weighting.head(f)),
            };
            let visuals = ui.visuals();
            let fill = match value.filter(|v| v.is_finite()) {
                Some(v) => {
                    let [r, g, b] = map.color(v as f32, range);
                    Color32::from_rgb(r, g, b)
                }
                None => visuals.faint_bg_color,
            };
            painter.rect_filled(cell.rect.shrink(0.5), 0.0, fill);
            painter.text(
                cell.rect.center(),
                Align2::CENTER_CENTER,
                figure(value, 2),
                FontId::proportional(12.0),
                if value.is_some() {
                    text_on(fill)
                } else {
                    visuals.text_color()
                },
            );
            let Some(head) = cell.head_id() else {
                return;
            };
            if cell.response.hovered() {
                painter.rect_stroke(
                    cell.rect,
                    0.0,
                    Stroke::new(1.5, visuals.strong_text_color()),
                    egui::StrokeKind::Inside,
                );
            }
            cell.response.on_hover_text_at_pointer(format!(
                "{head}: separator attention {}\nclick to open the head",
                figure(value, 3)
            ));
        });
    answer.response.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::Image, true, "separator attention per head")
    });
    if let Some(row) = rows.iter().position(|&l| l == chosen) {
        ui.painter().rect_stroke(
            answer.rows[row],
            2.0,
            Stroke::new(1.5, picked),
            egui::StrokeKind::Outside,
        );
    }
    answer.clicked.map(ViewAction::OpenHead)
}

/// The accessible name of a layer's accuracy chip.
pub fn accuracy_label(layer: usize, accuracy: Option<f64>) -> String {
    format!("L{layer} segmentation accuracy {}", figure(accuracy, 3))
}

/// Every layer's segmentation_accuracy as a small bar; a click picks the layer.
fn accuracy_strip(ui: &mut egui::Ui, output: &RunOutput, chosen: &mut usize, weighting: Weighting) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 6.0;
        for (l, layer) in output.analysis.layers.iter().enumerate() {
            let accuracy = weighting.accuracy(layer);
            let (rect, response) = ui.allocate_exact_size(Vec2::new(78.0, 40.0), Sense::click());
            let name = accuracy_label(l, accuracy);
            let selected = *chosen == l;
            response.widget_info(|| {
                egui::WidgetInfo::selected(egui::Role::Button, true, selected, &name)
            });
            let painter = ui.painter_at(rect);
            let visuals = ui.visuals();
            painter.rect_filled(rect, 3.0, visuals.extreme_bg_color);
            if let Some(a) = accuracy.filter(|a| a.is_finite()) {
                let bar = Rect::from_min_max(
                    Pos2::new(rect.left() + 4.0, rect.bottom() - 8.0),
                    Pos2::new(
                        rect.left() + 4.0 + (rect.width() - 8.0) * a.clamp(0.0, 1.0) as f32,
                        rect.bottom() - 4.0,
                    ),
                );
                painter.rect_filled(bar, 1.0, Color32::from_rgb(110, 210, 120));
            }
            painter.text(
                rect.left_top() + Vec2::new(6.0, 4.0),
                Align2::LEFT_TOP,
                format!("L{l}"),
                FontId::proportional(12.0),
                visuals.weak_text_color(),
            );
            painter.text(
                rect.right_top() + Vec2::new(-6.0, 4.0),
                Align2::RIGHT_TOP,
                figure(accuracy, 3),
                FontId::proportional(13.0),
                visuals.strong_text_color(),
            );
            let stroke = if selected {
                Stroke::new(2.0, picked_colour(ui))
            } else if response.hovered() {
                Stroke::new(1.0, visuals.text_color())
            } else {
                Stroke::new(1.0, visuals.widgets.noninteractive.bg_stroke.color)
            };
            painter.rect_stroke(rect, 3.0, stroke, egui::StrokeKind::Inside);
            if response.clicked() {
                *chosen = l;
            }
        }
    });
}

/// What the separators are called in a title.
fn separators_name(output: &RunOutput) -> &'static str {
    if output.input.tokens.causal {
        "the separators (sentence-final tokens)"
    } else {
        "[SEP]"
    }
}

/// The text tinted by its attention to the separators in `layer` (its
/// title is the figure's).
fn separator_text(
    ui: &mut egui::Ui,
    output: &RunOutput,
    (views, settings): (&Shared, &Settings),
    layer: usize,
    weighting: Weighting,
) -> Option<(usize, bool)> {
    ui.weak("each token's attention to the separators, mean over the layer's heads");
    let tokens = views
        .derived
        .as_ref()
        .and_then(|d| weighting.tokens(d, layer));
    let Some(tokens) = tokens else {
        ui.weak("—");
        return None;
    };
    // 0 to the largest content token's value: most tokens pay little
    // attention to [SEP], and a 0–1 scale would paint them all alike.
    let special = &output.input.tokens.special;
    let largest = tokens
        .separator_attention
        .iter()
        .zip(special)
        .filter(|&(v, &s)| !s && v.is_finite())
        .fold(0.0f64, |m, (&v, _)| m.max(v));
    let range = ValueRange::new(0.0, largest.max(0.01) as f32);
    heatmap::colour_bar(
        ui,
        settings.colormap,
        Some(range),
        &format!(
            "Σ over [SEP] of {}[i, ·], 0 to the largest content token's",
            weighting.symbol()
        ),
    );
    let labels = views.labels(output);
    let map = settings.colormap;
    let (weak, picked) = (ui.visuals().weak_text_color(), picked_colour(ui));
    let style = |i: usize| {
        let value = tokens
            .separator_attention
            .get(i)
            .copied()
            .unwrap_or(f64::NAN);
        let base = if value.is_finite() {
            let [r, g, b] = map.color(value as f32, range);
            ChipStyle::filled(Color32::from_rgb(r, g, b))
        } else {
            ChipStyle::plain(weak)
        };
        with_pick(base, views.selection.contains(i), picked)
    };
    let tooltip = |i: usize| {
        let value = tokens.separator_attention.get(i).copied();
        format!(
            "{}\nattention to [SEP] in L{layer}: {}",
            token_tooltip(output, i),
            figure(value, 3)
        )
    };
    ui.add_space(2.0);
    TokenFlow {
        id_salt: "separator tokens",
        tokens: &labels,
        font_size: 14.0,
        chip_prefix: Some("token"),
        name: "",
        wrap: true,
    }
    .show(ui, &style, &tooltip)
    .clicked
}

/// A causal model's sentences: each token coloured by its own sentence,
/// the separators (each sentence's last token) outlined.
fn sentences_text(ui: &mut egui::Ui, output: &RunOutput, views: &Shared) -> Option<(usize, bool)> {
    let input = &output.input.tokens;
    ui.strong("Sentences and their separators");
    ui.weak("colour = the token's sentence; outlined = its separator, the sentence's last token");
    let separators = input.separator_positions();
    let (weak, strong, picked) = (
        ui.visuals().weak_text_color(),
        ui.visuals().strong_text_color(),
        picked_colour(ui),
    );
    let style = |i: usize| {
        let base = match input.sentence_ids.get(i).copied().flatten() {
            Some(s) => {
                let mut chip = ChipStyle::filled(sentence_colour(s));
                if separators.binary_search(&i).is_ok() {
                    chip.outline = Some(Stroke::new(2.0, strong));
                }
                chip
            }
            None => ChipStyle::plain(weak),
        };
        with_pick(base, views.selection.contains(i), picked)
    };
    let tooltip = |i: usize| {
        let mut text = token_tooltip(output, i);
        if separators.binary_search(&i).is_ok() {
            text.push_str("\nseparator: the last token of its sentence");
        }
        text
    };
    ui.add_space(2.0);
    let labels = views.labels(output);
    TokenFlow {
        id_salt: "segmentation tokens",
        tokens: &labels,
        font_size: 14.0,
        chip_prefix: Some("sentence token"),
        name: "",
        wrap: true,
    }
    .show(ui, &style, &tooltip)
    .clicked
}

/// The segmentation of `layer`: tokens coloured by the sentence of the
/// `[SEP]` they attend to most, misplaced ones outlined in red.
fn segmentation_text(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &Shared,
    layer: usize,
    weighting: Weighting,
) -> Option<(usize, bool)> {
    let analysis = &output.analysis;
    let figures = analysis.layers.get(layer);
    let accuracy = figures.and_then(|l| weighting.accuracy(l));
    let undecided = figures.and_then(|l| weighting.undecided(l));
    ui.strong(format!("Segmentation by L{layer}'s {}", weighting.symbol()));
    let summary = ui.label(
        egui::RichText::new(format!(
            "segmentation accuracy of L{layer}: {}, undecided: {}",
            figure(accuracy, 3),
            figure(undecided, 3)
        ))
        .strong(),
    );
    let derived = views.derived.as_ref()?;
    let Some(tokens) = weighting.tokens(derived, layer) else {
        ui.weak("—");
        return None;
    };
    let input = &output.input.tokens;
    let misplaced = derived.content - tokens.correct - tokens.undecided;
    summary.on_hover_text("segmentation_accuracy as `headscope analyze` reports it");
    if derived.separators.is_empty() || derived.content == 0 {
        ui.weak("No content token or no separator: nothing to assign.");
    } else {
        ui.weak(format!(
            "{} of {} content tokens attend most to the [SEP] closing their own sentence; \
             {misplaced} misplaced, outlined in red; {} undecided (their attention ties \
             between separators), outlined in grey",
            tokens.correct, derived.content, tokens.undecided
        ));
    }
    // The legend: one chip per sentence in the window.
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        ui.weak("colour = sentence of the most attended [SEP]:");
        for &k in &derived.separators {
            if let Some(s) = input.sentence_ids.get(k).copied().flatten() {
                let colour = sentence_colour(s);
                ui.label(
                    egui::RichText::new(format!(" S{} ", s + 1))
                        .background_color(colour)
                        .color(text_on(colour)),
                );
            }
        }
        ui.label(egui::RichText::new(" wrong ").color(MISPLACED).underline());
        ui.label(egui::RichText::new(" tie ").color(UNDECIDED).italics());
    });
    let sentence_of = |i: usize| input.sentence_ids.get(i).copied().flatten();
    let (weak, strong, picked) = (
        ui.visuals().weak_text_color(),
        ui.visuals().strong_text_color(),
        picked_colour(ui),
    );
    let assigned_sentence = |i: usize| match tokens.assigned.get(i).copied().flatten()? {
        SeparatorChoice::Separator(s) => sentence_of(*derived.separators.get(s)?),
        SeparatorChoice::Undecided => None,
    };
    let style = |i: usize| {
        let misplaced = tokens.misplaced(derived, output, i);
        let base = if let Some(s) = assigned_sentence(i) {
            ChipStyle::filled(sentence_colour(s))
        } else if input.input_ids.get(i) == Some(&input.sep_id) {
            // A separator shows the colour of the sentence it closes.
            match sentence_of(i) {
                Some(s) => {
                    let mut chip = ChipStyle::filled(sentence_colour(s));
                    chip.outline = Some(Stroke::new(1.0, strong));
                    chip
                }
                None => ChipStyle::plain(weak),
            }
        } else {
            ChipStyle::plain(weak)
        };
        let mut chip = with_pick(base, views.selection.contains(i), picked);
        if misplaced {
            chip.underline = Some(Stroke::new(3.0, MISPLACED));
            if chip.outline.is_none() {
                chip.outline = Some(Stroke::new(2.0, MISPLACED));
            }
        } else if tokens.undecided_at(i) {
            chip.outline = Some(Stroke::new(1.5, UNDECIDED));
        }
        chip
    };
    let tooltip = |i: usize| {
        let mut text = token_tooltip(output, i);
        if let Some(s) = assigned_sentence(i) {
            text.push_str(&format!(
                "\nattends most to the [SEP] closing sentence {}",
                s + 1
            ));
            if tokens.misplaced(derived, output, i) {
                text.push_str(" — the wrong sentence");
            }
        } else if tokens.undecided_at(i) {
            text.push_str(
                "\nundecided: its two largest [SEP] attentions are within 1e-4 of each other",
            );
        }
        text
    };
    ui.add_space(2.0);
    let labels = views.labels(output);
    TokenFlow {
        id_salt: "segmentation tokens",
        tokens: &labels,
        font_size: 14.0,
        chip_prefix: Some("segmentation token"),
        name: "",
        wrap: true,
    }
    .show(ui, &style, &tooltip)
    .clicked
}
