//! The window's layout: menu bar on top, status bar at the bottom, the
//! text panel on the left, the outline on the right when it is open, the
//! central area, and the windows over them (Model, Corpus statistics).

use super::status_bar::{self, StatusAction, StatusInfo};
use crate::app::widgets::pane;
use crate::app::HeadscopeApp;

impl HeadscopeApp {
    /// Draws one frame's panels and windows.
    pub(in crate::app) fn layout(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        egui::Panel::top("menu bar").show(ui, |ui| {
            pane::mark(ui);
            self.menu_bar(ui)
        });
        let status = StatusInfo {
            working: self.is_working(),
            running: self.runs.in_flight(),
            progress: self.runs.progress(),
            model: self.model.active(),
            load: self.model.load_state(),
            shown: self.runs.shown().map(|s| s.output.as_ref()),
            window: self.text.window_info(self.runs.shown()),
            autosave_error: self.text.autosave_error(),
        };
        let action = egui::Panel::bottom("status bar")
            .show(ui, |ui| {
                pane::mark(ui);
                status_bar::status_bar_ui(ui, &status)
            })
            .inner;
        if action == Some(StatusAction::CancelRun) {
            self.cancel_run();
        }
        if self.settings.show_text_panel {
            egui::Panel::left("text panel")
                .resizable(true)
                .default_size(380.0)
                .size_range(260.0..=760.0)
                .show(ui, |ui| {
                    pane::mark(ui);
                    self.text_panel(ui)
                });
        }
        if self.outline.open {
            egui::Panel::right("outline panel")
                .resizable(true)
                .default_size(360.0)
                .size_range(260.0..=640.0)
                .show(ui, |ui| {
                    pane::mark(ui);
                    self.outline_panel_ui(ui)
                });
        }
        egui::CentralPanel::default().show(ui, |ui| {
            pane::mark(ui);
            let room = ui.available_rect_before_wrap();
            self.central(ui);
            // Whatever the central area drew past its right edge is cut.
            self.chrome.central_overflow = (ui.min_rect().right() - room.right()).max(0.0);
        });

        let model = self.model.active().map(|m| m.name.as_str());
        self.corpus
            .show(&ctx, &self.worker, &self.settings, model, &self.wake);
        if let Some(request) = self.corpus.take_plot_request() {
            self.save_plot(&ctx, request);
        }
        self.update_plot_export(&ctx);

        let action = self.model.window(&ctx);
        self.model_action(action);
        self.drop_overlay(&ctx);
    }
}
