//! The window's layout: menu bar on top, status bar at the bottom, the
//! text panel on the left, the central area, and the windows over them
//! (Model, Corpus statistics); plus the window title and, for scripts that
//! drive the real window, trace lines on stderr.

use super::runs::Shown;
use super::status_bar::{self, StatusInfo};
use super::text::TextState;
use super::views::CentralView;
use super::HeadscopeApp;
use crate::captures::HeadId;

impl HeadscopeApp {
    /// Draws one frame's panels and windows.
    pub(super) fn layout(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        egui::Panel::top("menu bar").show(ui, |ui| self.menu_bar(ui));
        let status = StatusInfo {
            working: self.is_working(),
            model: self.model.active(),
            load: self.model.load_state(),
            shown: self.runs.shown().map(|s| s.output.as_ref()),
            window: self.text.window_info(self.runs.shown()),
            autosave_error: self.text.autosave_error(),
        };
        egui::Panel::bottom("status bar").show(ui, |ui| status_bar::status_bar_ui(ui, &status));
        if self.settings.show_text_panel {
            egui::Panel::left("text panel")
                .resizable(true)
                .default_size(380.0)
                .size_range(260.0..=760.0)
                .show(ui, |ui| self.text_panel(ui));
        }
        egui::CentralPanel::default().show(ui, |ui| self.central(ui));

        let model = self.model.active().map(|m| m.name.as_str());
        self.views
            .corpus
            .show(&ctx, &self.worker, &self.settings, model, &self.wake);
        if let Some(name) = self.views.corpus.take_plot_request() {
            self.save_plot(&ctx, &name);
        }
        self.update_plot_export(&ctx);

        let action = self.model.window(&ctx);
        self.model_action(action);
        self.drop_overlay(&ctx);
    }
}

/// The window title sent, and the trace (`HEADSCOPE_TRACE=1`).
pub struct Chrome {
    title: String,
    title_sent: String,
    /// One stderr line per result and per head or tab shown, for scripts
    /// that drive the real window (screenshots).
    trace: bool,
    traced_detail: Option<HeadId>,
    traced_view: Option<CentralView>,
}

impl Chrome {
    pub fn from_env() -> Self {
        Self {
            title: String::new(),
            title_sent: String::new(),
            trace: std::env::var_os("HEADSCOPE_TRACE").is_some_and(|v| v == "1"),
            traced_detail: None,
            traced_view: None,
        }
    }

    /// A trace line of its own (`headscope: {line}`), when tracing.
    pub fn trace_line(&self, line: &str) {
        if self.trace {
            eprintln!("headscope: {line}");
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    /// "headscope — file (folder)", sent to the window when it changed.
    pub fn update_title(&mut self, ctx: &egui::Context, text: &TextState) {
        self.title = format!("headscope — {}", text.title_name());
        if self.title != self.title_sent {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(self.title.clone()));
            self.title_sent = self.title.clone();
        }
    }

    /// Traces a new result.
    pub fn trace_result(&self, shown: Option<&Shown>) {
        if let (true, Some(shown)) = (self.trace, shown) {
            eprintln!(
                "headscope: result {}: {} tokens, {:.0} ms",
                shown.generation, shown.output.analysis.tokens, shown.output.timings.total_ms
            );
        }
    }

    /// Traces the head or tab shown when it changed.
    pub fn trace_view(&mut self, detail: Option<HeadId>, view: CentralView) {
        if !self.trace {
            return;
        }
        if detail != self.traced_detail {
            match detail {
                Some(head) => eprintln!("headscope: showing head {head}"),
                None => eprintln!("headscope: showing the overview"),
            }
            self.traced_detail = detail;
        }
        if self.traced_view != Some(view) {
            eprintln!("headscope: showing the {} tab", view.label());
            self.traced_view = Some(view);
        }
    }
}
