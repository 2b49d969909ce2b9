//! The Steps tab: a decoder's tokens one step at a time. A slider goes
//! over the steps of the last generation (or, with none, over every
//! token); at the step of token t the grid shows every head's attention
//! row of t (the top strip of its cell) and its similarity row (the
//! bottom strip), each over the tokens 0 … t, and the text is tinted by
//! one head's row (the one clicked in the grid; the mean of every head
//! until then), the tokens after t dimmed as not yet written.
//!
//! A causal model's row of token t is the same in the whole text's pass
//! as at the step that wrote t (no token sees a later one), so stepping
//! back reads the rows of the result on screen; the strips are built once
//! per step, as one small texture per head.

use super::shared::{picked_colour, Shared, View, ViewAction, ViewContext};
use crate::app::widgets::format::figure;
use crate::app::widgets::head_grid::HeadGrid;
use crate::app::widgets::heatmap::{range_of, row_range};
use crate::app::widgets::token_text::{ChipStyle, TokenFlow};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use crate::pipeline::RunOutput;
use egui::{Color32, ColorImage, Rect, Stroke, TextureHandle, TextureOptions, Vec2};
use std::ops::Range;

/// The step buttons (their text and accessible names).
pub const STEP_BACK: &str = "◀ Back";
pub const STEP_FORWARD: &str = "Forward ▶";

/// Where the tab is, and the strips of the step on screen.
#[derive(Default)]
pub struct StepsView {
    /// The token stepped to; `None`: the newest (followed as the text
    /// grows while the model writes).
    position: Option<usize>,
    /// The head whose row tints the text; `None`: the mean of every head.
    head: Option<HeadId>,
    /// The text is tinted by similarity rather than attention.
    by_similarity: bool,
    rows: Option<StepRows>,
}

/// Every head's rows of one token, and their strips.
struct StepRows {
    /// The result, the token and the colour map they are of.
    key: (u64, usize, ColorMap),
    /// Heads per layer.
    heads: usize,
    /// Per head (layer-major), its attention row over 0 ..= t.
    attention: Vec<Vec<f32>>,
    /// Per head, its similarity row over 0 ..= t.
    similarity: Vec<Vec<f32>>,
    /// Per head, a (t + 1) × 2 picture: attention above, similarity below.
    strips: Vec<TextureHandle>,
}

impl StepsView {
    /// The token stepped to in `output`: the one chosen, else the last.
    pub fn position(&self, output: &RunOutput) -> usize {
        let last = output.captures.tokens.saturating_sub(1);
        self.position.map_or(last, |p| p.min(last))
    }
}

/// The positions the slider goes over: the generated tokens while the
/// text ends with a generation, else every token.
fn step_range(shared: &Shared, output: &RunOutput) -> (Range<usize>, bool) {
    let tokens = output.captures.tokens;
    match shared.first_generated(output) {
        Some(first) if first < tokens => (first..tokens, true),
        _ => (0..tokens, false),
    }
}

impl View for StepsView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        let output = cx.output;
        if output.captures.tokens == 0 {
            ui.label("No tokens to step through.");
            return None;
        }
        let (range, generated) = step_range(cx.shared, output);
        let mut t = self.position(output).clamp(range.start, range.end - 1);
        let steps = range.len();
        ui.horizontal(|ui| {
            let noun = if generated { "Step" } else { "Token" };
            let back = ui
                .add_enabled(t > range.start, egui::Button::new(STEP_BACK))
                .on_hover_text("The token before");
            if back.clicked() {
                t -= 1;
            }
            let mut step = t - range.start + 1;
            let slider = ui.add(egui::Slider::new(&mut step, 1..=steps.max(1)).show_value(false));
            if slider.changed() {
                t = range.start + step - 1;
            }
            let forward = ui
                .add_enabled(t + 1 < range.end, egui::Button::new(STEP_FORWARD))
                .on_hover_text("The token after");
            if forward.clicked() {
                t += 1;
            }
            ui.strong(format!("{noun} {} of {steps}", t - range.start + 1));
        });
        // Back at the newest token, follow the text as it grows.
        self.position = (t + 1 < output.captures.tokens).then_some(t);

        let tokens = &output.input.tokens;
        let origin = if generated {
            "written by the model"
        } else {
            "no generation: every token is a step"
        };
        ui.label(format!(
            "Token {t} “{}” ({origin}). Each head's cell: its attention row of this token \
             (top strip) and its similarity row (bottom strip), over the tokens 0 … {t}.",
            tokens.readable(t)
        ));
        if let Some(next) = cx.shared.predicted_after(t) {
            ui.weak(format!("The model's next token after it: {next}"));
        }

        let map = cx.settings.colormap;
        let key = (cx.generation, t, map);
        if self.rows.as_ref().is_none_or(|rows| rows.key != key) {
            self.rows = Some(StepRows::new(ui.ctx(), output, key));
        }
        let rows = self.rows.as_ref().expect("made above");
        ui.add_space(4.0);
        if let Some(head) = strip_grid(ui, output, rows, self.head) {
            self.head = (self.head != Some(head)).then_some(head);
        }
        ui.add_space(6.0);
        ui.horizontal(|ui| {
            ui.label("Over the text:");
            ui.selectable_value(&mut self.by_similarity, false, "attention");
            ui.selectable_value(&mut self.by_similarity, true, "similarity");
            let whose = match self.head {
                Some(head) => format!("of {head} (click it again for every head's mean)"),
                None => "the mean of every head (click a head for its own)".into(),
            };
            ui.weak(whose);
        });
        let values = text_values(rows, self.head, self.by_similarity);
        if let Some(clicked) = tinted_text(ui, cx, &values, t, map, self.by_similarity) {
            if range.contains(&clicked) {
                self.position = Some(clicked);
            }
        }
        None
    }
}

impl StepRows {
    fn new(ctx: &egui::Context, output: &RunOutput, key: (u64, usize, ColorMap)) -> Self {
        let (_, t, map) = key;
        let captures = &output.captures;
        let seen = t + 1;
        let mut rows = StepRows {
            key,
            heads: captures.heads,
            attention: Vec::new(),
            similarity: Vec::new(),
            strips: Vec::new(),
        };
        for id in captures.head_ids() {
            let mut attention = captures.attention_row(id, t);
            let mut similarity = captures.similarity_row(id, t);
            attention.truncate(seen);
            similarity.truncate(seen);
            let attention_range = row_range(map, &attention, output.input.tokens.causal);
            let similarity_range = range_of(map, &similarity);
            let colour = |value: f32, range: ValueRange| {
                let [r, g, b] = map.color(value, range);
                Color32::from_rgb(r, g, b)
            };
            let pixels = attention
                .iter()
                .map(|&a| colour(a, attention_range))
                .chain(similarity.iter().map(|&s| colour(s, similarity_range)))
                .collect();
            let image = ColorImage::new([seen, 2], pixels);
            rows.strips.push(ctx.load_texture(
                format!("step strip {id}"),
                image,
                TextureOptions::NEAREST,
            ));
            rows.attention.push(attention);
            rows.similarity.push(similarity);
        }
        rows
    }
}

/// The grid of strips; returns the head clicked.
fn strip_grid(
    ui: &mut egui::Ui,
    output: &RunOutput,
    rows: &StepRows,
    chosen: Option<HeadId>,
) -> Option<HeadId> {
    let captures = &output.captures;
    let layers: Vec<usize> = (0..captures.layers).collect();
    let heads = captures.heads;
    let width = HeadGrid::fitted_width(ui.available_width() - 40.0, heads, 0.0, 4.0, 30.0, 160.0);
    let cell = Vec2::new(width, 18.0);
    let tokens = &output.input.tokens;
    let chosen_stroke = Stroke::new(2.0, picked_colour(ui));
    let divider = ui.visuals().panel_fill;
    let grid = HeadGrid::new("step strips", &layers, heads, cell)
        .gap(Vec2::new(4.0, 3.0))
        .bare_numbers();
    let scroll_height = (ui.available_height() * 0.6).max(120.0);
    egui::ScrollArea::vertical()
        .id_salt("step strips")
        .max_height(scroll_height)
        .show(ui, |ui| {
            grid.show(ui, |_, painter, cell| {
                let Some(id) = cell.head_id() else {
                    return;
                };
                let index = id.layer * heads + id.head;
                painter.image(
                    rows.strips[index].id(),
                    cell.rect,
                    Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                    Color32::WHITE,
                );
                // A hairline between the two strips, so they read apart.
                let middle = cell.rect.center().y;
                painter.hline(cell.rect.x_range(), middle, Stroke::new(1.0, divider));
                if chosen == Some(id) {
                    painter.rect_stroke(cell.rect, 1.0, chosen_stroke, egui::StrokeKind::Outside);
                }
                let attention = &rows.attention[index];
                let similarity = &rows.similarity[index];
                cell.response.widget_info(|| {
                    egui::WidgetInfo::labeled(egui::Role::Button, true, format!("step strip {id}"))
                });
                let Some(pointer) = cell.response.hover_pos() else {
                    return;
                };
                let seen = attention.len();
                let x = (pointer.x - cell.rect.left()) / cell.rect.width().max(1.0);
                let j = ((x * seen as f32) as usize).min(seen - 1);
                cell.response.clone().on_hover_text(format!(
                    "{id}, key {j} “{}”: attention {}, similarity {}\nmost attended: {}",
                    tokens.readable(j),
                    figure(attention.get(j).map(|&v| f64::from(v)), 3),
                    figure(similarity.get(j).map(|&v| f64::from(v)), 3),
                    most(attention, tokens)
                ));
            })
            .clicked
        })
        .inner
}

/// "“token” j (p)" of the largest value in `row`.
fn most(row: &[f32], tokens: &crate::tokens::TokenSequence) -> String {
    match row
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
    {
        Some((j, v)) => format!("“{}” {j} ({v:.3})", tokens.readable(j)),
        None => String::new(),
    }
}

/// The values that tint the text: `head`'s row, or every head's mean.
fn text_values(rows: &StepRows, head: Option<HeadId>, by_similarity: bool) -> Vec<f32> {
    let all = if by_similarity {
        &rows.similarity
    } else {
        &rows.attention
    };
    match head {
        Some(id) => all
            .get(id.layer * rows.heads + id.head)
            .cloned()
            .unwrap_or_default(),
        None => {
            let seen = all.first().map_or(0, Vec::len);
            let mut mean = vec![0.0f32; seen];
            for row in all {
                for (m, v) in mean.iter_mut().zip(row) {
                    *m += v / all.len() as f32;
                }
            }
            mean
        }
    }
}

/// The text tinted by `values` over the tokens 0 ..= t (t outlined, the
/// rest dimmed); returns the token clicked.
fn tinted_text(
    ui: &mut egui::Ui,
    cx: &ViewContext<'_>,
    values: &[f32],
    t: usize,
    map: ColorMap,
    by_similarity: bool,
) -> Option<usize> {
    let output = cx.output;
    let range = if by_similarity {
        range_of(map, values)
    } else {
        row_range(map, values, output.input.tokens.causal)
    };
    let visuals = ui.visuals().clone();
    let outline = Stroke::new(2.5, picked_colour(ui));
    let style = |i: usize| match values.get(i) {
        Some(&value) if i <= t => {
            let [r, g, b] = map.color(value, range);
            let mut chip = ChipStyle::filled(Color32::from_rgb(r, g, b));
            if i == t {
                chip.outline = Some(outline);
            }
            chip
        }
        _ => ChipStyle::plain(visuals.weak_text_color()),
    };
    let what = if by_similarity {
        "similarity"
    } else {
        "attention"
    };
    let tooltip = |i: usize| {
        let mut text = cx.shared.token_tooltip(output, i);
        match values.get(i) {
            Some(&value) if i <= t => {
                text.push_str(&format!("\n{what} from token {t}: {value:.3}"))
            }
            _ => text.push_str(&format!("\nnot yet written at token {t}")),
        }
        text
    };
    let labels = cx.shared.labels(output);
    let flow = TokenFlow {
        id_salt: "steps text",
        tokens: &labels,
        font_size: 15.0,
        chip_prefix: Some("step token"),
        name: "the text at this step",
        wrap: true,
    };
    let mut clicked = None;
    egui::ScrollArea::vertical()
        .id_salt("steps text")
        .show(ui, |ui| {
            clicked = flow.show(ui, &style, &tooltip).clicked.map(|(i, _)| i);
        });
    clicked
}
