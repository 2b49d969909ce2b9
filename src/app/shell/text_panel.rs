//! The text panel on the left: the editor with its sentence window, the
//! analysis settings below it, and what the app does when the text changes
//! (a run after the pause, an autosave) or a text read off the UI thread
//! arrives.

use super::notice::Notice;
use crate::app::panels::generate::GenerateAction;
use crate::app::panels::settings::settings_ui;
use crate::app::text::editor::WindowMove;
use crate::app::text::Prepared;
use crate::app::widgets::pane;
use crate::app::HeadscopeApp;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

impl HeadscopeApp {
    /// Puts a text read (or split) off the UI thread on screen once it is
    /// there.
    pub(crate) fn poll_text_job(&mut self, ctx: &egui::Context) {
        let Some(prepared) = self.text.poll_job(ctx, self.settings.input_mode) else {
            return;
        };
        match prepared {
            Prepared::Opened {
                warning,
                kept_edits,
            } => {
                let said: Vec<String> = kept_edits.into_iter().chain(warning).collect();
                self.notice = (!said.is_empty()).then(|| Notice::info(said.join(" ")));
                // A new text starts on every layer.
                self.views.heads.grid_layer = None;
                self.runs.schedule_now(ctx);
            }
            Prepared::Replaced | Prepared::FellBack => self.runs.schedule_now(ctx),
            Prepared::Failed(message) => self.notice = Some(Notice::error(message)),
        }
    }

    /// After an edit: a run after the pause, and an autosave.
    fn text_changed(&mut self, ctx: &egui::Context) {
        self.runs.schedule(ctx);
        self.text.edited(ctx);
    }

    /// Whether the model can continue the text now, or why not.
    fn generation_available(&self) -> Result<(), &'static str> {
        match self.text.document() {
            _ if self.model.active().is_none() => Err("No model is loaded"),
            Some(document) if document.edits_whole_text() => Ok(()),
            Some(_) => Err("The text is too long to be continued here: use headscope generate"),
            None => Err("The text is being read"),
        }
    }

    /// Starts or stops a generation of the whole text.
    fn generate_action(&mut self, ctx: &egui::Context, action: Option<GenerateAction>) {
        match action {
            Some(GenerateAction::Start(options)) => {
                let prompt = self.text.text().trim_end().to_string();
                if prompt.is_empty() {
                    self.notice = Some(Notice::info("Type a prompt first: the text is empty."));
                    return;
                }
                let cancel = Arc::new(AtomicBool::new(false));
                let updates = self
                    .worker
                    .generate(prompt.clone(), options, cancel.clone());
                self.generate.started(updates, cancel, prompt.len());
                self.views.shared.generated_from = Some(prompt.len());
                ctx.request_repaint();
            }
            Some(GenerateAction::Stop) => self.generate.stop(),
            None => {}
        }
    }

    /// Puts the continuation so far into the text: the prompt, then what
    /// the model wrote; the analysis follows after the pause.
    fn take_continuation(&mut self, ctx: &egui::Context) {
        let Some(continuation) = self.generate.poll() else {
            return;
        };
        let text = self.text.text();
        let prompt = text.get(..continuation.prompt_bytes).unwrap_or(text);
        let whole = format!("{prompt}{}", continuation.text);
        if self.text.set_whole_text(whole) {
            self.views.shared.generated_from = Some(continuation.prompt_bytes);
            if continuation.finished {
                self.runs.schedule_now(ctx);
                self.text.edited(ctx);
            } else {
                self.text_changed(ctx);
            }
        }
    }

    /// Steps the sentence window and analyses the new one at once.
    fn move_window(&mut self, ctx: &egui::Context, step: WindowMove) {
        let info = self.text.window_info(self.runs.shown());
        self.text.move_window(step, info);
        self.runs.schedule_now(ctx);
    }

    /// The text panel: the analysis settings at the bottom, the editor
    /// above them.
    pub(super) fn text_panel(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        let settings_change = egui::Panel::bottom("analysis settings")
            .resizable(false)
            .show(ui, |ui| {
                pane::mark(ui);
                ui.add_space(4.0);
                egui::CollapsingHeader::new("Analysis settings")
                    .default_open(true)
                    .show(ui, |ui| settings_ui(ui, &mut self.settings))
                    .body_returned
                    .unwrap_or_default()
            })
            .inner;
        let causal = self
            .runs
            .shown()
            .is_some_and(|shown| shown.output.input.tokens.causal);
        if causal || self.generate.is_running() {
            let action = egui::Panel::bottom("generate")
                .resizable(false)
                .show(ui, |ui| {
                    pane::mark(ui);
                    ui.add_space(4.0);
                    let available = self.generation_available();
                    self.generate.ui(ui, available)
                })
                .inner;
            self.generate_action(&ctx, action);
        }
        self.take_continuation(&ctx);
        if settings_change.input {
            self.text.resplit(self.settings.input_mode, &self.wake);
        }
        if settings_change.analysis {
            self.runs.schedule(&ctx);
        }
        let window = self.text.window_info(self.runs.shown());
        // The tokens of the heatmap cell under the pointer, marked.
        let follow = self
            .text
            .follow(self.views.shared.hovered_cell, self.runs.shown());
        let output = self.text.editor_ui(ui, window, &follow);
        if output.replaced_whole {
            self.text.forget_file();
        }
        if output.text_changed {
            // The user's edit: the generated text is no longer marked.
            self.views.shared.generated_from = None;
            self.text_changed(&ctx);
        }
        if let Some(step) = output.window_move {
            self.move_window(&ctx, step);
        }
    }
}
