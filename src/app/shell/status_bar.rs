//! The status bar: whether a run is in progress (for a long one, layer k
//! of L and the time left on a progress bar, and Cancel), the model the
//! analyses run on (and one being loaded), and the size and timing of the
//! result on screen.

use crate::app::panels::model::LoadState;
use crate::app::text::editor::WindowInfo;
use crate::app::widgets::busy;
use crate::app::widgets::progress::progress_bar;
use crate::pipeline::{RunOutput, RunProgress};
use crate::worker::ModelInfo;

/// What the status bar reports.
pub struct StatusInfo<'a> {
    pub working: bool,
    /// Whether a run is in flight on the worker (it can be cancelled).
    pub running: bool,
    /// Where that run stands, once it has said.
    pub progress: Option<RunProgress>,
    /// The model in use (a failed load keeps it).
    pub model: Option<&'a ModelInfo>,
    pub load: &'a LoadState,
    pub shown: Option<&'a RunOutput>,
    pub window: Option<WindowInfo>,
    pub autosave_error: Option<String>,
}

/// The label shown while an analysis is pending or running.
pub const WORKING_LABEL: &str = "Working…";

/// The button that abandons the run in flight.
pub use crate::app::widgets::progress::CANCEL_LABEL;

/// What the user asked of the status bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusAction {
    /// Abandon the run in flight; the last result stays on screen.
    CancelRun,
}

pub fn status_bar_ui(ui: &mut egui::Ui, info: &StatusInfo<'_>) -> Option<StatusAction> {
    let mut action = None;
    ui.horizontal(|ui| {
        let cancel_hint = (info.working && info.running)
            .then_some("Stop this analysis; the result on screen stays");
        match (info.working, info.progress) {
            (true, Some(progress)) => {
                if progress_bar(
                    ui,
                    progress.fraction(),
                    progress.describe(),
                    260.0,
                    cancel_hint,
                ) {
                    action = Some(StatusAction::CancelRun);
                }
            }
            (true, None) => {
                busy::spinner_of_side(ui, 14.0);
                ui.label(WORKING_LABEL);
                // Cancel alone, before the run's first progress.
                if let Some(hint) = cancel_hint {
                    if ui.small_button(CANCEL_LABEL).on_hover_text(hint).clicked() {
                        action = Some(StatusAction::CancelRun);
                    }
                }
            }
            (false, _) => {
                ui.weak("Ready");
            }
        }
        ui.separator();
        if let Some(model) = info.model {
            ui.label(format!(
                "{} · {} layers × {} heads",
                model.name, model.layers, model.heads
            ));
        }
        match (info.model, info.load) {
            (_, LoadState::Loading { source, .. }) => {
                if info.model.is_some() {
                    ui.separator();
                }
                ui.label(format!("loading {source}…"));
            }
            (None, LoadState::Failed { .. }) => {
                ui.colored_label(ui.visuals().error_fg_color, "model not loaded");
            }
            (None, LoadState::Idle) => {
                ui.weak("no model");
            }
            // A failed load with a model in use: the notice explains it.
            (Some(_), _) => {}
        }
        if let Some(output) = info.shown {
            let analysis = &output.analysis;
            ui.separator();
            ui.label(format!(
                "{} tokens ({} content) · {} candidate pairs",
                analysis.tokens, analysis.content_tokens, analysis.pairs
            ));
            ui.separator();
            let t = &output.timings;
            ui.label(format!("{:.0} ms", t.total_ms))
                .on_hover_text(format!(
                    "input {:.1} ms · model {:.1} ms · figures {:.1} ms",
                    t.input_ms, t.model_ms, t.analysis_ms
                ));
            if !output.captures.stores_squares() {
                ui.separator();
                let note = match output.input.scratch_note() {
                    Some(scratch) => format!("{}; {scratch}", crate::input::RECOMPUTED_NOTE),
                    None => crate::input::RECOMPUTED_NOTE.to_string(),
                };
                ui.label(crate::input::RECOMPUTED_NOTE_SHORT)
                    .on_hover_text(note);
            }
        }
        if let Some(window) = &info.window {
            ui.separator();
            ui.label(window.describe());
        }
        if let Some(error) = &info.autosave_error {
            ui.separator();
            ui.colored_label(ui.visuals().warn_fg_color, error);
        }
    });
    action
}
