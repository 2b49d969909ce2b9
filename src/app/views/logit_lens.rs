//! The Logit lens tab: for a decoder, what each layer would predict next at
//! every position — the final norm and the LM head applied to the residual
//! stream after the layer — as the classic layer × position table: the
//! top-1 token and its probability in each cell (shaded by it), the cell
//! outlined where it is the true next token, the top 5 on hover; hovering
//! a token of the header gives the model's own top 5 next tokens. Above
//! it, the true next token's rank by layer: the median over the positions,
//! and the position the pointer was last on. Tokens the model generated
//! are marked in the header. Computed by the worker on its own thread for
//! each new result while the tab is open, with a progress row (layer k of
//! L, the time left) and Cancel, after which the tab offers to compute it
//! again.

use super::shared::lens::{short, top_text, LensSlot};
use super::shared::{save_plot, View, ViewAction, ViewContext};
use crate::app::jobs::JobProgress;
use crate::app::widgets::plots::{self, add_curve, layer_plot, legend};
use crate::app::widgets::progress;
use crate::worker::{LensResult, LensTable};
use egui::{Color32, RichText, Stroke};
use std::sync::Arc;

/// What the logit lens' progress row says it does.
pub const LENS_PROGRESS_LABEL: &str = "Computing the logit lens";

/// The button that computes a cancelled logit lens again.
pub const COMPUTE_LENS_LABEL: &str = "Compute the logit lens";

/// The most positions the table shows (a cell per layer and position).
const MAX_POSITIONS: usize = 400;

/// The rank curve of the median over positions.
const MEDIAN_RANK: Color32 = Color32::from_rgb(70, 110, 200);
/// The rank curve of one position.
const POSITION_RANK: Color32 = Color32::from_rgb(230, 120, 30);

/// The table of the result on screen, or the one being computed.
#[derive(Default)]
pub struct LogitLensView {
    slot: LensSlot,
    /// The position whose rank curve is drawn (the last one hovered).
    position: Option<usize>,
}

impl LogitLensView {
    /// The worker's answer for the result `generation` will come on
    /// `answer`.
    pub fn requested(
        &mut self,
        generation: u64,
        answer: crossbeam_channel::Receiver<LensResult>,
        progress: Arc<JobProgress>,
    ) {
        self.slot.requested(generation, answer, Some(progress));
    }

    /// A progress for a lens of `layers` layers, for [`Self::requested`].
    pub fn progress(layers: usize) -> Arc<JobProgress> {
        JobProgress::counting(LENS_PROGRESS_LABEL, "layers", layers)
    }

    /// The table of the result `generation`, if it is computed.
    pub fn table(&self, generation: u64) -> Option<&LensTable> {
        self.slot.of(generation)
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
        let mut action = None;
        if self.slot.wanted(cx.generation) {
            action = Some(ViewAction::ComputeLogitLens);
        }
        ui.label(
            "Each row is a layer, each column a position: the token the final norm and the \
             LM head read from the residual stream after that layer, and its probability. \
             A framed cell is the true next token; hover a cell for the top 5.",
        );
        if let Some(message) = self.slot.error(cx.generation) {
            ui.colored_label(ui.visuals().error_fg_color, message);
        } else if let Some(table) = self.slot.of(cx.generation) {
            let save = plots::figure(
                ui,
                "next-token-rank",
                "Rank of the true next token against layer",
                |ui| rank_plot(ui, table, self.position),
            );
            save_plot(&mut action, save);
            if let Some(hovered) = lens_table(ui, cx, table) {
                self.position = Some(hovered);
            }
        } else if let Some(job) = self.slot.progress(cx.generation) {
            // A progress row, redrawn a few times a second: a spinner
            // would redraw the window every frame, taking the CPU from
            // the computation.
            if progress::job_row(ui, job, "Stop computing the logit lens") {
                self.slot.cancel();
            }
        } else if self.slot.is_cancelled(cx.generation) {
            ui.horizontal(|ui| {
                ui.weak("The logit lens was cancelled.");
                if ui.button(COMPUTE_LENS_LABEL).clicked() {
                    self.slot.compute_again();
                    ui.ctx().request_repaint();
                }
            });
        } else {
            // Asked for this frame: its progress row shows from the next.
            ui.weak(format!("{LENS_PROGRESS_LABEL}…"));
            ui.ctx().request_repaint();
        }
        action
    }
}

/// The true next token's rank (log scale) by layer: the median over every
/// position that has a next token, and `position`'s.
fn rank_plot(ui: &mut egui::Ui, table: &LensTable, position: Option<usize>) {
    let layers = &table.lens.layers;
    let log_rank = |rank: u32| f64::from(rank).log10();
    let median = |ranks: &[u32]| {
        let mut sorted = ranks.to_vec();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    };
    let position = position.filter(|&t| t + 1 < table.input_ids.len());
    layer_plot("next-token-rank", layers.len(), 150.0)
        .y_axis_label("rank")
        .include_y(0.0)
        .y_axis_formatter(|mark, _| {
            let rank = 10f64.powf(mark.value);
            if mark.value >= 0.0 && mark.value.fract() == 0.0 {
                format!("{rank:.0}")
            } else {
                String::new()
            }
        })
        .show(ui, |plot_ui| {
            add_curve(
                plot_ui,
                "median over positions",
                MEDIAN_RANK,
                layers
                    .iter()
                    .map(|l| median(&l.next_token_ranks).map(log_rank)),
            );
            if let Some(t) = position {
                add_curve(
                    plot_ui,
                    "position",
                    POSITION_RANK,
                    layers
                        .iter()
                        .map(|l| l.next_token_ranks.get(t).copied().map(log_rank)),
                );
            }
        });
    let position_name = position.map(|t| format!("position {t} (the last hovered)"));
    let mut entries = vec![(MEDIAN_RANK, "median over positions", false)];
    if let Some(name) = position_name.as_deref() {
        entries.push((POSITION_RANK, name, false));
    }
    legend(ui, &entries);
}

/// The layer × position table; returns the position under the pointer.
fn lens_table(ui: &mut egui::Ui, cx: &ViewContext<'_>, table: &LensTable) -> Option<usize> {
    let tokens = &cx.output.input.tokens;
    let positions = table.input_ids.len().min(MAX_POSITIONS);
    if table.input_ids.len() > MAX_POSITIONS {
        ui.weak(format!(
            "The first {MAX_POSITIONS} of {} positions.",
            table.input_ids.len()
        ));
    }
    let first_generated = cx.shared.first_generated(cx.output);
    let generated = |t: usize| first_generated.is_some_and(|first| t >= first);
    let colormap = cx.settings.colormap;
    let marked = ui.visuals().selection.stroke.color;
    let right = Color32::from_rgb(40, 170, 80);
    let mut hovered = None;
    egui::ScrollArea::both().show(ui, |ui| {
        egui::Grid::new("logit lens table")
            .spacing([4.0, 2.0])
            .show(ui, |ui| {
                ui.strong("layer \\ token");
                for t in 0..positions {
                    let mut label = RichText::new(short(&tokens.readable(t))).monospace();
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
                        top_text(&table.top(table.lens.layers.len().saturating_sub(1), t))
                    );
                    // Each header in a cell of its own, so that tokens that
                    // begin with a space (·on) never read as one run.
                    let response = header_cell(ui, label);
                    if response.hovered() {
                        hovered = Some(t);
                    }
                    response.on_hover_text(hint);
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
                                    let token = RichText::new(short(text)).monospace().color(ink);
                                    ui.add(egui::Label::new(token).extend());
                                    let probability =
                                        RichText::new(format!("{p:.2}")).small().color(ink);
                                    ui.add(egui::Label::new(probability).extend());
                                });
                            })
                            .response;
                        let rank = layer.next_token_ranks.get(t);
                        let truth = truth_text(next, tokens.readable(t + 1), is_next, rank);
                        if response.hovered() {
                            hovered = Some(t);
                        }
                        response.on_hover_text(format!(
                            "L{l}, position {t}: “{text}” {p:.3}\n{truth}\ntop 5: {}",
                            top_text(&table.top(l, t))
                        ));
                    }
                    ui.end_row();
                }
            });
    });
    hovered
}

/// A header cell: the token in a frame of its own.
fn header_cell(ui: &mut egui::Ui, label: RichText) -> egui::Response {
    let fill = ui.visuals().faint_bg_color;
    let stroke = ui.visuals().widgets.noninteractive.bg_stroke;
    egui::Frame::new()
        .fill(fill)
        .stroke(stroke)
        .inner_margin(egui::Margin::symmetric(3, 1))
        .show(ui, |ui| ui.add(egui::Label::new(label).extend()))
        .inner
}

/// What a cell's hover says of the true next token: its text, id and rank
/// at this layer (`next`: its id, none at the last position; `text`: it
/// readable).
fn truth_text(next: Option<u32>, text: String, is_next: bool, rank: Option<&u32>) -> String {
    match (next, rank) {
        (Some(id), _) if is_next => format!("the true next token “{text}” (id {id}), ranked 1"),
        (Some(id), Some(rank)) => {
            format!("the true next token “{text}” (id {id}) ranks {rank}")
        }
        (Some(id), None) => format!("the true next token is “{text}” (id {id})"),
        (None, _) => "the last position: no next token".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hover_names_the_true_next_token_by_its_text() {
        let text = truth_text(Some(260), "·on".into(), false, Some(&6));
        assert_eq!(text, "the true next token “·on” (id 260) ranks 6");
        let text = truth_text(Some(260), "·on".into(), true, Some(&1));
        assert!(text.contains("“·on”"), "{text}");
        let text = truth_text(None, String::new(), false, None);
        assert_eq!(text, "the last position: no next token");
    }
}
