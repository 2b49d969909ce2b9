//! Token focus: what each head of a layer sees from the picked tokens.
//!
//! The text is shown as token chips; clicking one picks it (shift-click
//! picks several). For each picked token and each head of the chosen layer
//! the head's similarity row S[i, ·] (under the similarity variant the
//! analysis ranks pairs by) is drawn as tinted text, one line per head,
//! scaled from its smallest to its largest value over the other content
//! tokens; the token itself is outlined and its partners among the head's
//! selected pairs are underlined. Beside it, every head's focus token and
//! focus_share and the layer's focus_uniqueness, from the analysis; heads
//! whose focus token is a picked token are tinted here, starred in the
//! rows and outlined in the Heads grid.

use crate::analysis::SelectedPairs;
use crate::app::settings::Settings;
use crate::app::views::shared::pairs::HeadPairs;
use crate::app::views::shared::{
    layer_picker, picked_colour, save_plot, with_pick, Shared, View, ViewAction, ViewContext,
};
use crate::app::widgets::format::{category_style, figure};
use crate::app::widgets::heatmap;
use crate::app::widgets::pane;
use crate::app::widgets::plots;
use crate::app::widgets::table::{self, Cell, Column, RowLook};
use crate::app::widgets::token_text::{self, ChipStyle, TokenFlow};
use crate::captures::HeadId;
use crate::colormap::ValueRange;
use crate::pipeline::RunOutput;
use egui::{Color32, Stroke};
use std::borrow::Cow;

/// The colour that underlines focus tokens in the text.
const FOCUS_MARK: Color32 = Color32::from_rgb(235, 110, 200);

const FOCUS_COLUMNS: [Column; 4] = [
    Column {
        title: Cow::Borrowed("head"),
        width: 46.0,
        tooltip: "Click to open the head",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("focus token"),
        width: 104.0,
        tooltip: "The token id most frequent among the head's pair endpoints",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("focus share"),
        width: 80.0,
        tooltip: "Share of the head's pairs with an endpoint on the focus token",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("category"),
        width: 92.0,
        tooltip: "The head's category",
        numeric: false,
    },
];

/// The accessible name of a head's similarity row for the token at `position`.
pub fn row_name(position: usize, text: &str, head: HeadId) -> String {
    format!("similarity row of token {position} “{text}” in {head}")
}

/// The label of the layer's focus uniqueness.
pub fn uniqueness_label(layer: usize, value: Option<f64>) -> String {
    format!("focus uniqueness of L{layer}: {}", figure(value, 3))
}

/// The Token focus tab's own state (not persisted).
#[derive(Default)]
pub struct TokenFocusView {
    /// (position, layer) of the lines already scrolled to their token once
    /// (after that the user scrolls).
    centred: Vec<(usize, usize)>,
    /// The layer's heads' selected pairs, where the analysis did not keep
    /// them (a long input).
    pairs: HeadPairs,
}

impl View for TokenFocusView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        if !cx.shared.selection.is_empty() {
            for h in 0..cx.output.captures.heads {
                let head = HeadId::new(cx.shared.layer, h);
                self.pairs.request(cx.output, cx.generation, head, cx.wake);
            }
        }
        let state = (&mut self.centred, &self.pairs);
        focus_ui(ui, cx.output, cx.shared, cx.settings, state)
    }
}

/// The whole view.
fn focus_ui(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &mut Shared,
    settings: &Settings,
    (centred, pairs): (&mut Vec<(usize, usize)>, &HeadPairs),
) -> Option<ViewAction> {
    let layers = output.captures.layers;
    if layers == 0 || output.analysis.layers.is_empty() {
        ui.label("This result has no layers.");
        return None;
    }
    let mut action = None;
    ui.horizontal(|ui| {
        ui.heading("Token focus");
        ui.weak("click a token to pick it, shift-click to pick several");
    });
    layer_picker(
        ui,
        &mut views.layer,
        layers,
        "The layer whose heads are shown",
    );
    let layer = views.layer;
    if let Some(derived) = views.derived.as_mut() {
        derived.prepare_similarity(output, layer, settings.similarity);
    }
    ui.separator();

    egui::Panel::right("focus tokens")
        .resizable(true)
        .default_size(360.0)
        .size_range(280.0..=520.0)
        .show(ui, |ui| {
            pane::mark(ui);
            if let Some(head) = focus_table(ui, output, views, layer) {
                action = Some(ViewAction::OpenHead(head));
            }
        });
    egui::CentralPanel::no_frame().show(ui, |ui| {
        pane::mark(ui);
        egui::ScrollArea::vertical()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let clicked = text_chips(ui, output, views, layer);
                views.click_token(output, clicked);
                ui.add_space(8.0);
                if !views.selection.is_empty() {
                    let save = plots::figure(
                        ui,
                        &format!("token-focus-rows-L{layer}"),
                        &format!("Similarity rows of the picked tokens, L{layer}"),
                        |ui| picked_rows(ui, output, views, settings, layer, (centred, pairs)),
                    );
                    save_plot(&mut action, save);
                } else {
                    picked_rows(ui, output, views, settings, layer, (centred, pairs));
                }
            });
    });
    action
}

/// The whole text as chips, focus tokens of the layer underlined.
fn text_chips(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &Shared,
    layer: usize,
) -> Option<(usize, bool)> {
    let input = &output.input.tokens;
    let focus_ids: Vec<u32> = output
        .analysis
        .layers
        .get(layer)
        .map(|l| l.heads.iter().filter_map(|f| f.focus_token_id).collect())
        .unwrap_or_default();
    ui.horizontal_wrapped(|ui| {
        ui.strong("Text");
        ui.weak("underlined: the focus token of a head in");
        ui.weak(format!("L{layer}"));
    });
    let visuals = ui.visuals().clone();
    let picked_stroke = picked_colour(ui);
    let style = |i: usize| {
        let special = input.special.get(i).copied().unwrap_or(true);
        let mut chip = if special {
            ChipStyle::plain(visuals.weak_text_color())
        } else {
            ChipStyle {
                fill: Some(visuals.faint_bg_color),
                ..ChipStyle::plain(visuals.text_color())
            }
        };
        if input
            .input_ids
            .get(i)
            .is_some_and(|id| focus_ids.contains(id))
        {
            chip.underline = Some(Stroke::new(2.5, FOCUS_MARK));
        }
        let picked = views.selection.contains(i);
        if picked {
            chip.fill = Some(visuals.selection.bg_fill);
            chip.text = Color32::WHITE;
        }
        with_pick(chip, picked, picked_stroke)
    };
    let tooltip = |i: usize| {
        let id = input.input_ids.get(i).copied();
        let heads: Vec<String> = output
            .analysis
            .layers
            .get(layer)
            .map(|l| {
                l.heads
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.focus_token_id.is_some() && f.focus_token_id == id)
                    .map(|(h, _)| format!("H{h}"))
                    .collect()
            })
            .unwrap_or_default();
        let mut text = views.token_tooltip(output, i);
        if !heads.is_empty() {
            text.push_str(&format!("\nfocus token of L{layer} {}", heads.join(", ")));
        }
        text
    };
    let labels = views.labels(output);
    TokenFlow {
        id_salt: "focus text",
        tokens: &labels,
        font_size: 15.0,
        chip_prefix: Some("token"),
        name: "",
        wrap: true,
    }
    .show(ui, &style, &tooltip)
    .clicked
}

/// Space between the lines of the heads.
const ROW_GAP: f32 = 2.0;
/// Width of the head labels left of the lines.
const LABEL_WIDTH: f32 = 46.0;

/// For each picked token, each head's similarity row as one line of tinted
/// text. The lines of one token share a horizontal scroll, so a column is
/// one token across the heads; it starts centred on the picked token.
fn picked_rows(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &Shared,
    settings: &Settings,
    layer: usize,
    (centred, pairs): (&mut Vec<(usize, usize)>, &HeadPairs),
) {
    let input = &output.input.tokens;
    if views.selection.is_empty() {
        ui.weak("Pick a token above to see each head's similarity row for it.");
        return;
    }
    let Some(derived) = views.derived.as_ref() else {
        return;
    };
    let Some(figures) = output.analysis.layers.get(layer) else {
        return;
    };
    heatmap::colour_bar(
        ui,
        settings.colormap,
        None,
        &format!(
            "similarity S ({}), each line from its min to its max over the other content tokens",
            settings.similarity.label()
        ),
    );
    ui.horizontal_wrapped(|ui| {
        ui.weak("outlined: the picked token ·");
        ui.label(
            egui::RichText::new("underlined")
                .color(FOCUS_MARK)
                .underline(),
        );
        ui.weak("its partners among the head's selected pairs ·");
        ui.weak(
            "◆ the head's focus token is this token · scroll sideways for the rest of the text",
        );
    });
    let heads = output.captures.heads;
    let line_height = token_text::line_height(ui, ROW_FONT);
    let (weak, picked) = (ui.visuals().weak_text_color(), picked_colour(ui));
    centred.retain(|&(p, l)| l == layer && views.selection.contains(p));
    for &(position, token_id) in views.selection.entries() {
        let text = input.readable(position);
        let focused: Vec<String> = figures
            .heads
            .iter()
            .enumerate()
            .filter(|(_, f)| f.focus_token_id == Some(token_id))
            .map(|(h, _)| format!("H{h}"))
            .collect();
        ui.add_space(8.0);
        ui.horizontal_wrapped(|ui| {
            ui.label(
                egui::RichText::new(format!("“{text}”"))
                    .strong()
                    .size(16.0)
                    .color(picked),
            )
            .on_hover_text(format!("token {}", input.raw_and_id(position)));
            ui.weak(format!("position {position} · id {token_id}"));
            if focused.is_empty() {
                ui.weak(format!("· the focus token of no head in L{layer}"));
            } else {
                ui.label(format!(
                    "· the focus token of L{layer} {} ◆",
                    focused.join(", ")
                ));
            }
        });
        let rows: Vec<(usize, Cow<[f32]>)> = (0..heads)
            .filter_map(|h| {
                let head = HeadId::new(layer, h);
                Some((
                    h,
                    derived.similarity_row(output, head, settings.similarity, position)?,
                ))
            })
            .collect();
        let flow = |name: &'static str| TokenFlow {
            id_salt: name,
            tokens: &derived.labels,
            font_size: ROW_FONT,
            chip_prefix: None,
            name,
            wrap: false,
        };
        ui.horizontal_top(|ui| {
            ui.vertical(|ui| {
                ui.spacing_mut().item_spacing.y = ROW_GAP;
                for &(h, _) in &rows {
                    let f = figures.heads.get(h);
                    let is_focus = f.is_some_and(|f| f.focus_token_id == Some(token_id));
                    let label =
                        egui::RichText::new(format!("H{h}{}", if is_focus { " ◆" } else { "" }))
                            .monospace();
                    let label = if is_focus { label.color(picked) } else { label };
                    // Same height as a line of chips (plus the flow's margin).
                    ui.add_sized([LABEL_WIDTH, line_height + 2.0], egui::Label::new(label))
                        .on_hover_text(format!(
                            "L{layer} H{h}: {}",
                            category_style(f.and_then(|f| f.category)).0
                        ));
                }
            });
            let mut area = egui::ScrollArea::horizontal()
                .id_salt(("similarity lines", position))
                .auto_shrink([false, true]);
            // One layout for all the heads' lines: the same tokens, one line.
            let layout = flow("").layout(ui);
            if !centred.contains(&(position, layer)) {
                let centre = layout.chip(position).map_or(0.0, |r| r.center().x);
                area =
                    area.horizontal_scroll_offset((centre - ui.available_width() / 2.0).max(0.0));
                centred.push((position, layer));
            }
            area.show(ui, |ui| {
                // One line per head, stacked (the scroll area would
                // otherwise inherit the row's left-to-right layout).
                ui.vertical(|ui| {
                    ui.spacing_mut().item_spacing.y = ROW_GAP;
                    for (h, row) in &rows {
                        let (h, row) = (*h, &row[..]);
                        let head = HeadId::new(layer, h);
                        let partners = pairs.get(output, head);
                        similarity_line(
                            ui,
                            (output, partners),
                            head,
                            row,
                            position,
                            settings,
                            weak,
                            picked,
                            &flow,
                            &layout,
                        );
                    }
                });
            });
        });
    }
}

/// The font size of the similarity lines.
const ROW_FONT: f32 = 12.5;

/// One head's similarity row for the token at `position`, as one line.
#[allow(clippy::too_many_arguments)]
fn similarity_line<'a>(
    ui: &mut egui::Ui,
    (output, pairs): (&RunOutput, Option<&SelectedPairs>),
    head: HeadId,
    row: &[f32],
    position: usize,
    settings: &Settings,
    weak: Color32,
    picked: Color32,
    flow: &dyn Fn(&'static str) -> TokenFlow<'a>,
    layout: &token_text::FlowLayout,
) {
    let input = &output.input.tokens;
    let text = input.readable(position);
    let partners: Vec<usize> = pairs
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|(i, j)| {
                    let (i, j) = (i as usize, j as usize);
                    if i == position {
                        Some(j)
                    } else if j == position {
                        Some(i)
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let others: Vec<f32> = row
        .iter()
        .enumerate()
        .filter(|&(j, v)| j != position && input.special.get(j) == Some(&false) && v.is_finite())
        .map(|(_, &v)| v)
        .collect();
    let range = ValueRange::auto(settings.colormap, &others);
    let style = |j: usize| {
        let special = input.special.get(j).copied().unwrap_or(true);
        let mut chip = if special || j == position {
            ChipStyle::plain(weak)
        } else {
            let value = row.get(j).copied().unwrap_or(f32::NAN);
            let [r, g, b] = settings.colormap.color(value, range);
            ChipStyle::filled(Color32::from_rgb(r, g, b))
        };
        if j == position {
            chip.outline = Some(Stroke::new(2.0, picked));
            chip.text = picked;
        }
        if partners.contains(&j) {
            chip.underline = Some(Stroke::new(2.5, FOCUS_MARK));
        }
        chip
    };
    let tooltip = |j: usize| {
        format!(
            "{head}: S[“{text}” {position}, “{}” {j}] = {}{}\ntoken {}",
            input.readable(j),
            heatmap::format_value(row.get(j).copied().unwrap_or(f32::NAN)),
            if partners.contains(&j) {
                " · a selected pair"
            } else {
                ""
            },
            input.raw_and_id(j)
        )
    };
    let name = row_name(position, &text, head);
    TokenFlow {
        name: &name,
        id_salt: &name,
        ..flow("")
    }
    .show_laid_out(ui, layout, &style, &tooltip);
}

/// Every head's focus token and share, and the layer's focus uniqueness.
fn focus_table(
    ui: &mut egui::Ui,
    output: &RunOutput,
    views: &Shared,
    layer: usize,
) -> Option<HeadId> {
    let figures = output.analysis.layers.get(layer)?;
    ui.strong(format!("Focus tokens of L{layer}"));
    ui.label(egui::RichText::new(uniqueness_label(layer, figures.focus_uniqueness)).strong());
    let (distinct, with_focus) = figures.focus_counts();
    ui.weak(format!(
        "{distinct} distinct focus token{} among {with_focus} head{}",
        if distinct == 1 { "" } else { "s" },
        if with_focus == 1 { "" } else { "s" }
    ));
    ui.add_space(4.0);
    let widths = table::fit_widths(&FOCUS_COLUMNS, ui.available_width());
    let tint = ui.visuals().selection.bg_fill.gamma_multiply(0.55);
    let mut clicked = None;
    ui.spacing_mut().item_spacing.y = 0.0;
    table::header_row(ui, "focus header", &FOCUS_COLUMNS, &widths, None);
    egui::ScrollArea::vertical()
        .id_salt("focus table")
        .auto_shrink([false, true])
        .show(ui, |ui| {
            for (h, f) in figures.heads.iter().enumerate() {
                let head = HeadId::new(layer, h);
                let (category, colour) = category_style(f.category);
                let cells = [
                    Cell::new(format!("H{h}")),
                    // The token whole, wrapped in its column if need be.
                    Cell::wrapping(match f.focus_token_id {
                        Some(id) => format!(
                            "“{}”",
                            output.input.tokens.readable_of(id).unwrap_or_default()
                        ),
                        None => "—".into(),
                    }),
                    Cell::new(figure(f.focus_share, 3)),
                    Cell::coloured(category, colour),
                ];
                let picked = f
                    .focus_token_id
                    .is_some_and(|id| views.selection.contains_id(id));
                let name = format!(
                    "focus of {head}: {}",
                    table::describe(&FOCUS_COLUMNS[1..], &cells[1..])
                );
                let response = table::data_row(
                    ui,
                    ui.scope_id().with(("focus row", h)),
                    &widths,
                    &FOCUS_COLUMNS,
                    &cells,
                    &name,
                    RowLook {
                        striped: h % 2 == 1,
                        tint: picked.then_some(tint),
                    },
                );
                let hover = match f.focus_token_id {
                    Some(id) => format!(
                        "Open {head}\nfocus token {}",
                        output.input.tokens.describe_id(id)
                    ),
                    None => format!("Open {head}"),
                };
                if response.on_hover_text(hover).clicked() {
                    clicked = Some(head);
                }
            }
        });
    clicked
}
