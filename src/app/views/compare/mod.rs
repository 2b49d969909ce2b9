//! The Compare tab: a second model beside the first, run on the same text,
//! and how their heads compare (docs/COMPARE.md).
//!
//! Model B is chosen with the same panel as the first model (a folder or a
//! Hugging Face id, [`ModelState`]) and loads on the worker; a failed load
//! says why here and leaves model A, and the rest of the app, as they
//! were. Whenever a new result of model A is on screen and nothing is owed,
//! the tab asks the worker for B's run on that text and the comparison
//! ([`crate::pipeline::run_comparison`]); the last comparison stays on
//! screen, marked as being updated, until the next one arrives. While B
//! runs, the progress row every slow stage shows counts its layers, with
//! the time left and Cancel; a cancelled comparison is not asked for again
//! until the text, the settings or B change, or the user asks
//! ([`COMPARE_AGAIN_LABEL`]).
//!
//! From top to bottom: the two models and the alignment; the two head
//! grids side by side, where clicking a head shows its best matches in the
//! other grid ([`grids`]); the per-layer curves of both on one plot per
//! figure, against depth layer / (L − 1) or raw layer numbers
//! ([`curves`]); the A × B CKA grid; the specialisation table, one column
//! per model.
//! Each figure saves as PNG like every other plot.

mod curves;
mod grids;

use crate::app::jobs::JobProgress;
use crate::app::panels::model::{LoadState, ModelAction, ModelChange, ModelState};
use crate::app::views::shared::{save_plot, View, ViewAction, ViewContext};
use crate::app::widgets::busy;
use crate::app::widgets::{plots, progress};
use crate::captures::HeadId;
use crate::model::ModelSource;
use crate::pipeline::{ComparisonOutput, RunOutput};
use crate::worker::{ComparisonEvent, ModelEvent};
use std::sync::Arc;

pub use grids::{match_label, Which};

/// The title of the window that changes model B.
pub const MODEL_B_WINDOW: &str = "Model B";

/// The button that asks again for a comparison that was cancelled.
pub const COMPARE_AGAIN_LABEL: &str = "Compare again";

/// The comparison being computed: its request's generation, and model B's
/// layers counted as its run passes them.
struct InFlight {
    generation: u64,
    progress: Arc<JobProgress>,
}

/// The Compare tab's runtime state (not persisted).
pub struct CompareView {
    /// Model B and its loads, tracked like the first model.
    model: ModelState,
    /// The Model B window is open.
    window_open: bool,
    /// Counts B's successful loads, so a new B asks for a new comparison.
    b_loads: u64,
    /// What the newest request was for: (A's result generation, B's load).
    requested_for: Option<(u64, u64)>,
    /// The newest request, while it runs.
    in_flight: Option<InFlight>,
    /// The user cancelled the newest request: it is not asked for again
    /// until something changes or [`COMPARE_AGAIN_LABEL`] is clicked.
    cancelled: bool,
    /// The comparison on screen, with the A generation it was made for.
    shown: Option<(u64, Arc<ComparisonOutput>)>,
    /// Why the last comparison gave nothing.
    error: Option<String>,
    /// Curves against raw layer numbers instead of depth.
    pub raw_layers: bool,
    /// The head clicked in one of the grids.
    pub selected: Option<(Which, HeadId)>,
    cka_texture: grids::CkaTexture,
}

impl Default for CompareView {
    fn default() -> Self {
        Self {
            model: ModelState::second(),
            window_open: false,
            b_loads: 0,
            requested_for: None,
            in_flight: None,
            cancelled: false,
            shown: None,
            error: None,
            raw_layers: false,
            selected: None,
            cka_texture: Default::default(),
        }
    }
}

impl CompareView {
    /// The comparison on screen.
    pub fn shown(&self) -> Option<&Arc<ComparisonOutput>> {
        self.shown.as_ref().map(|(_, output)| output)
    }

    /// The name of model B, once one is loaded.
    pub fn model_b(&self) -> Option<&str> {
        self.model.active().map(|m| m.name.as_str())
    }

    /// Whether a comparison is owed or running.
    pub fn is_working(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Why model B or the last comparison failed, if one did.
    pub fn error(&self) -> Option<String> {
        if let LoadState::Failed { source, message } = self.model.load_state() {
            let what = source
                .as_ref()
                .map_or_else(|| "Model B".to_string(), |s| format!("Model B ({s})"));
            return Some(format!("{what} could not be loaded: {message}"));
        }
        self.error.clone()
    }

    /// Model B's panel offers the `recent` models (the first model's list,
    /// which B's loads join too), found like the Model window's.
    pub fn share_recent(&mut self, recent: &[String]) {
        self.model.share_recent(recent);
    }

    /// Takes a model event about model B.
    pub fn on_model_event(&mut self, event: ModelEvent) {
        match self.model.on_event(event) {
            Some(ModelChange::Ready) => {
                self.b_loads += 1;
                self.window_open = false;
                self.selected = None;
            }
            Some(ModelChange::LoadFailed(_)) => self.window_open = true,
            None => {}
        }
    }

    /// Takes news of a comparison request; true when a new comparison is
    /// on screen.
    pub fn on_comparison_event(&mut self, generation: u64, event: ComparisonEvent) -> bool {
        if self.in_flight.as_ref().map(|job| job.generation) != Some(generation) {
            return false;
        }
        match event {
            ComparisonEvent::Started => {}
            ComparisonEvent::Finished(output) => {
                let a_generation = self.requested_for.map_or(0, |(a, _)| a);
                self.keep_selection_within(&output);
                self.shown = Some((a_generation, output));
                self.error = None;
                self.in_flight = None;
                return true;
            }
            ComparisonEvent::Abandoned => self.in_flight = None,
            ComparisonEvent::Failed(error) => {
                self.error = Some(format!("The comparison failed: {error}"));
                self.in_flight = None;
            }
        }
        false
    }

    fn keep_selection_within(&mut self, output: &ComparisonOutput) {
        if let Some((which, head)) = self.selected {
            let captures = match which {
                Which::A => &output.a.captures,
                Which::B => &output.b.captures,
            };
            if head.layer >= captures.layers || head.head >= captures.heads {
                self.selected = None;
            }
        }
    }
}

impl CompareView {
    /// Model B starts loading from `source`; the one loaded stays until
    /// then.
    pub fn loading(&mut self, source: ModelSource) {
        self.model.loading(source);
    }

    /// The (A result, B load) a comparison is owed for: when model B is
    /// loaded and A's result of `generation` has not been compared yet.
    pub fn owed(&self, generation: u64) -> Option<(u64, u64)> {
        self.model.active()?;
        let wanted = (generation, self.b_loads);
        (self.requested_for != Some(wanted)).then_some(wanted)
    }

    /// A progress for the comparison owed: model B's layers, which its
    /// run counts; for [`CompareView::requested`].
    pub fn progress(&self) -> Arc<JobProgress> {
        let (name, layers) = self
            .model
            .active()
            .map_or(("model B", 0), |b| (b.name.as_str(), b.layers));
        JobProgress::counting(format!("Running {name} on the text"), "layers", layers)
    }

    /// The comparison for `wanted` was asked for, as request `generation`,
    /// counted in `progress`.
    pub fn requested(&mut self, wanted: (u64, u64), generation: u64, progress: Arc<JobProgress>) {
        self.requested_for = Some(wanted);
        self.in_flight = Some(InFlight {
            generation,
            progress,
        });
        self.cancelled = false;
    }

    /// Stops the comparison being computed (B's run stops before its next
    /// layer); what is on screen stays.
    fn cancel(&mut self) {
        if let Some(job) = self.in_flight.take() {
            job.progress.cancel();
            self.cancelled = true;
        }
    }

    /// Lets a cancelled comparison be asked for again.
    fn compare_again(&mut self) {
        self.cancelled = false;
        self.requested_for = None;
    }
}

impl View for CompareView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        let mut model_action = None;
        let mut action = None;
        if self.window_open && self.model.active().is_some() {
            let mut open = true;
            model_action = egui::Window::new(MODEL_B_WINDOW)
                .open(&mut open)
                .collapsible(false)
                .default_width(460.0)
                .show(ui.ctx(), |ui| self.model.panel_ui(ui))
                .and_then(|r| r.inner.flatten());
            self.window_open &= open;
        }
        // Both ways: a grid of many heads (270 of a decoder) stays reachable.
        egui::ScrollArea::both()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.heading("Compare with a second model");
                if self.model.active().is_none() {
                    ui.label(
                        "Load a second model (B) to see how its heads work on this text \
                         beside the heads of the model in use (A).",
                    );
                    egui::Frame::group(ui.style()).show(ui, |ui| {
                        ui.set_max_width(640.0);
                        model_action = self.model.panel_ui(ui);
                    });
                    return;
                }
                action = self.body(ui, cx.model_name, cx.output);
            });
        match model_action {
            Some(ModelAction::PickFolder) => Some(ViewAction::PickComparisonModel { file: false }),
            Some(ModelAction::PickGguf) => Some(ViewAction::PickComparisonModel { file: true }),
            Some(ModelAction::Load(source)) => Some(ViewAction::LoadComparisonModel(source)),
            None => action,
        }
    }
}

impl CompareView {
    /// Everything below the heading, once model B is loaded.
    fn body(
        &mut self,
        ui: &mut egui::Ui,
        a_name: &str,
        current_a: &Arc<RunOutput>,
    ) -> Option<ViewAction> {
        let b = self.model.active().cloned()?;
        // The header names the B of the comparison on screen; a B loaded
        // since is named as the one on its way.
        let shown_b = self.shown.as_ref().map(|(_, output)| {
            let captures = &output.b.captures;
            (output.b_name.clone(), captures.layers, captures.heads)
        });
        let (b_name, b_layers, b_heads) =
            shown_b.unwrap_or_else(|| (b.name.clone(), b.layers, b.heads));
        ui.horizontal_wrapped(|ui| {
            ui.label(format!(
                "A: {a_name} · B: {b_name} ({b_layers} × {b_heads})"
            ));
            if ui
                .button("Change model B…")
                .on_hover_text("Load another model to compare with (a folder or a Hugging Face id)")
                .clicked()
            {
                self.window_open = true;
            }
            if let LoadState::Loading { source, .. } = self.model.load_state() {
                busy::spinner(ui);
                ui.weak(format!("loading model B {source}…"));
            }
        });
        // B's run, counted by layer, as every slow stage shows itself: a
        // row redrawn a few times a second (a spinner would redraw every
        // frame, taking the CPU from the run).
        if let Some(job) = &self.in_flight {
            if progress::job_row(
                ui,
                &job.progress,
                "Stop this comparison; what is on screen stays",
            ) {
                self.cancel();
            }
        } else if self.cancelled {
            ui.horizontal(|ui| {
                ui.weak("The comparison was cancelled.");
                if ui.button(COMPARE_AGAIN_LABEL).clicked() {
                    self.compare_again();
                    ui.ctx().request_repaint();
                }
            });
        }
        if let Some(error) = self.error() {
            ui.colored_label(ui.visuals().error_fg_color, error);
        }
        let Some((_, output)) = self.shown.clone() else {
            if self.error.is_none() && self.in_flight.is_none() && !self.cancelled {
                // Owed, and asked for once the analysis in progress is done
                // (whose end wakes the UI): nothing here needs redrawing.
                ui.weak(format!("Running {} on the text…", b.name));
            }
            return None;
        };
        if !Arc::ptr_eq(&output.a, current_a) {
            ui.weak("Showing the comparison of an earlier result; a new one is on its way.");
        }
        let names = [a_name, output.b_name.as_str()];
        ui.weak(alignment_summary(&output));
        ui.add_space(6.0);
        let mut action = None;
        let save = plots::figure(
            ui,
            "compare-head-grids",
            "Heads of both models (click a head to see its best matches in the other)",
            |ui| grids::head_grids(ui, &output, names, &mut self.selected),
        );
        save_plot(&mut action, save);
        ui.add_space(8.0);
        ui.checkbox(&mut self.raw_layers, "Raw layer numbers")
            .on_hover_text("Off: each model's layers spread over depth 0 to 1, layer / (L − 1)");
        let save = plots::figure(
            ui,
            "compare-layer-curves",
            "Per-layer figures of both models",
            |ui| curves::layer_curves(ui, &output, names, self.raw_layers),
        );
        save_plot(&mut action, save);
        ui.add_space(8.0);
        let save = plots::figure(
            ui,
            "compare-cka",
            "Head matching: linear CKA of every head of A (rows) with every head of B (columns)",
            |ui| {
                grids::cka_grid(
                    ui,
                    &output,
                    names,
                    &mut self.selected,
                    &mut self.cka_texture,
                )
            },
        );
        save_plot(&mut action, save);
        ui.add_space(8.0);
        let save = plots::figure(
            ui,
            "compare-specialisation",
            "Specialisation: every head of each model",
            |ui| curves::specialisation_table(ui, &output, names),
        );
        save_plot(&mut action, save);
        action
    }
}

/// "n aligned units · A: … content tokens (… unaligned) · B: …".
fn alignment_summary(output: &ComparisonOutput) -> String {
    let alignment = &output.comparison.alignment;
    let one_to_one = alignment
        .units
        .iter()
        .filter(|u| u.a_positions.len() == 1 && u.b_positions.len() == 1)
        .count();
    format!(
        "{} aligned units ({one_to_one} one token each) · A: {} content tokens, {} unaligned · \
         B: {} content tokens, {} unaligned. CKA compares each head's similarity S over the \
         aligned units (S averaged over a unit's tokens).",
        alignment.len(),
        output.a.analysis.content_tokens,
        alignment.a_unaligned.len(),
        output.b.analysis.content_tokens,
        alignment.b_unaligned.len()
    )
}
