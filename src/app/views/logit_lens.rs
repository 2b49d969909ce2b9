//! The Logit lens tab: for a decoder, what each layer would predict next at
//! every position — the final norm and the LM head applied to the residual
//! stream after the layer — as the classic layer × position table: the
//! top-1 token and its probability in each cell (shaded by it), the cell
//! outlined where it is the true next token, the top 5 on hover; hovering
//! a token of the header gives the model's own top 5 next tokens. Tokens
//! the model generated are marked in the header. Computed by the worker
//! on its own thread for each new result while the tab is open.

use super::shared::{View, ViewAction, ViewContext};
use crate::worker::LensTable;
use crossbeam_channel::Receiver;
use egui::{Color32, RichText, Stroke};

/// The most positions the table shows (a cell per layer and position).
const MAX_POSITIONS: usize = 400;

/// The table of the result on screen, or the one being computed.
#[derive(Default)]
pub struct LogitLensView {
    /// The result generation the table (or its error) is of.
    table: Option<(u64, Result<LensTable, String>)>,
    /// The result generation being computed, and its answer.
    pending: Option<(u64, Receiver<Result<LensTable, String>>)>,
}

impl LogitLensView {
    /// The worker's answer for the result `generation` will come on
    /// `answer`.
    pub fn requested(&mut self, generation: u64, answer: Receiver<Result<LensTable, String>>) {
        self.pending = Some((generation, answer));
    }

    /// The table on screen, if it is computed.
    pub fn table(&self) -> Option<&LensTable> {
        self.table.as_ref().and_then(|(_, t)| t.as_ref().ok())
    }

    fn poll(&mut self) {
        let Some((generation, answer)) = &self.pending else {
            return;
        };
        match answer.try_recv() {
            Ok(result) => {
                self.table = Some((*generation, result));
                self.pending = None;
            }
            Err(crossbeam_channel::TryRecvError::Empty) => {}
            Err(crossbeam_channel::TryRecvError::Disconnected) => {
                self.table = Some((*generation, Err("the logit lens stopped".into())));
                self.pending = None;
            }
        }
    }
}

impl View for LogitLensView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        let tokens = &cx.output.input.tokens;
        if !tokens.causal {
            ui.label(
                "The logit lens reads a decoder's next-token predictions: this model \
                 is an encoder, which predicts none.",
            );
            return None;
        }
        self.poll();
        let current = self
            .table
            .as_ref()
            .is_some_and(|(g, _)| *g == cx.generation);
        let asked = self
            .pending
            .as_ref()
            .is_some_and(|(g, _)| *g == cx.generation);
        let mut action = None;
        // One lens at a time: while the text grows (a generation), the
        // newest result's is asked for once the one in flight is done.
        if !current && !asked && self.pending.is_none() {
            action = Some(ViewAction::ComputeLogitLens(tokens.input_ids.clone()));
        }
        ui.label(
            "Each row is a layer, each column a position: the token the final norm and the \
             LM head read from the residual stream after that layer, and its probability. \
             A framed cell is the true next token; hover a cell for the top 5.",
        );
        match self.table.as_ref().filter(|_| current) {
            None => {
                ui.horizontal(|ui| {
                    ui.add(egui::Spinner::new());
                    ui.label("Computing the logit lens…");
                });
            }
            Some((_, Err(message))) => {
                ui.colored_label(ui.visuals().error_fg_color, message);
            }
            Some((_, Ok(table))) => lens_table(ui, cx, table),
        }
        action
    }
}

/// A readable token (`·the`, `↵`) cut to one short cell.
fn shown(text: &str) -> String {
    let mut chars = text.chars();
    let short: String = chars.by_ref().take(12).collect();
    if chars.next().is_some() {
        format!("{short}…")
    } else {
        short
    }
}

/// Layer `l`'s top 5 at position `t`: “text” p, ….
fn top_five(table: &LensTable, l: usize, t: usize) -> String {
    let (Some(layer), Some(texts)) = (
        table.lens.layers.get(l),
        table.top_texts.get(l).and_then(|layer| layer.get(t)),
    ) else {
        return String::new();
    };
    let probs = layer.top_probs.get(t).map_or(&[][..], Vec::as_slice);
    texts
        .iter()
        .zip(probs)
        .map(|(text, p)| format!("“{}” {p:.3}", shown(text)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn lens_table(ui: &mut egui::Ui, cx: &ViewContext<'_>, table: &LensTable) {
    let tokens = &cx.output.input.tokens;
    let positions = table.input_ids.len().min(MAX_POSITIONS);
    if table.input_ids.len() > MAX_POSITIONS {
        ui.weak(format!(
            "The first {MAX_POSITIONS} of {} positions.",
            table.input_ids.len()
        ));
    }
    let generated_from = cx.shared.generated_from;
    let generated = |t: usize| {
        generated_from.is_some_and(|from| {
            tokens
                .offsets
                .get(t)
                .copied()
                .flatten()
                .is_some_and(|(s, _)| s >= from)
        })
    };
    let colormap = cx.settings.colormap;
    let marked = ui.visuals().selection.stroke.color;
    let right = Color32::from_rgb(40, 170, 80);
    egui::ScrollArea::both().show(ui, |ui| {
        egui::Grid::new("logit lens table")
            .spacing([2.0, 2.0])
            .show(ui, |ui| {
                ui.strong("layer \\ token");
                for t in 0..positions {
                    let mut label = RichText::new(shown(&tokens.readable(t))).monospace();
                    if generated(t) {
                        label = label.color(marked).italics();
                    }
                    let origin = if generated(t) {
                        " · generated by the model"
                    } else {
                        ""
                    };
                    let hint = format!(
                        "position {t}: {}{origin}\nthe model's next token: {}",
                        tokens.raw_and_id(t),
                        top_five(table, table.lens.layers.len().saturating_sub(1), t)
                    );
                    ui.label(label).on_hover_text(hint);
                }
                ui.end_row();
                for (l, layer) in table.lens.layers.iter().enumerate() {
                    ui.strong(format!("L{l}"));
                    for t in 0..positions {
                        let (Some(ids), Some(probs)) =
                            (layer.top_ids.get(t), layer.top_probs.get(t))
                        else {
                            continue;
                        };
                        let p = probs.first().copied().unwrap_or_default();
                        let [r, g, b] = colormap.rgb(p);
                        let fill = Color32::from_rgb(r, g, b);
                        let ink = if r as u32 + g as u32 + b as u32 > 380 {
                            Color32::BLACK
                        } else {
                            Color32::WHITE
                        };
                        let next = table.input_ids.get(t + 1).copied();
                        let is_next = next.is_some() && ids.first().copied() == next;
                        let text = table.top_texts[l]
                            .get(t)
                            .and_then(|top| top.first())
                            .map_or("?", String::as_str);
                        let frame =
                            egui::Frame::new()
                                .fill(fill)
                                .inner_margin(2.0)
                                .stroke(if is_next {
                                    Stroke::new(2.0, right)
                                } else {
                                    Stroke::NONE
                                });
                        let response = frame
                            .show(ui, |ui| {
                                ui.vertical(|ui| {
                                    let token = RichText::new(shown(text)).monospace().color(ink);
                                    ui.add(egui::Label::new(token).extend());
                                    let probability =
                                        RichText::new(format!("{p:.2}")).small().color(ink);
                                    ui.add(egui::Label::new(probability).extend());
                                });
                            })
                            .response;
                        let truth = match next {
                            Some(id) if is_next => format!("the true next token (id {id})"),
                            Some(id) => format!("the true next token is id {id}"),
                            None => "the last position: no next token".into(),
                        };
                        response.on_hover_text(format!(
                            "L{l}, position {t}: “{text}” {p:.3}\n{truth}\ntop 5: {}",
                            top_five(table, l, t)
                        ));
                    }
                    ui.end_row();
                }
            });
    });
}
