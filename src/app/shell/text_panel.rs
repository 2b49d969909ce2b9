//! The text panel on the left: the editor with its sentence window, the
//! analysis settings below it, and what the app does when the text changes
//! (a run after the pause, an autosave) or a text read off the UI thread
//! arrives.

use super::notice::Notice;
use crate::app::panels::settings::settings_ui;
use crate::app::text::editor::WindowMove;
use crate::app::text::Prepared;
use crate::app::HeadscopeApp;

impl HeadscopeApp {
    /// Puts a text read (or split) off the UI thread on screen once it is
    /// there.
    pub(crate) fn poll_text_job(&mut self, ctx: &egui::Context) {
        let Some(prepared) = self.text.poll_job(ctx, self.settings.input_mode) else {
            return;
        };
        match prepared {
            Prepared::Opened { warning } => {
                self.notice = warning.map(Notice::info);
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
                ui.add_space(4.0);
                egui::CollapsingHeader::new("Analysis settings")
                    .default_open(true)
                    .show(ui, |ui| settings_ui(ui, &mut self.settings))
                    .body_returned
                    .unwrap_or_default()
            })
            .inner;
        if settings_change.input {
            self.text.resplit(self.settings.input_mode, &self.wake);
        }
        if settings_change.analysis {
            self.runs.schedule(&ctx);
        }
        let window = self.text.window_info(self.runs.shown());
        let output = self.text.editor_ui(ui, window);
        if output.replaced_whole {
            self.text.forget_file();
        }
        if output.text_changed {
            self.text_changed(&ctx);
        }
        if let Some(step) = output.window_move {
            self.move_window(&ctx, step);
        }
    }
}
