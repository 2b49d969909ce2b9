//! The window's chrome: its title ("headscope — file (folder)"), and, for
//! scripts that drive the real window (`HEADSCOPE_TRACE=1`), a line on
//! stderr per result and per head or tab shown.

use crate::app::runs::Shown;
use crate::app::settings::CentralView;
use crate::app::text::TextState;
use crate::captures::HeadId;

/// The window title sent, and the trace (`HEADSCOPE_TRACE=1`).
pub struct Chrome {
    title: String,
    title_sent: String,
    /// One stderr line per result and per head or tab shown, for scripts
    /// that drive the real window (screenshots).
    trace: bool,
    traced_detail: Option<HeadId>,
    traced_view: Option<CentralView>,
    /// How far the central area's content reached past its right edge in
    /// the last frame (points; 0 when it fits).
    pub central_overflow: f32,
}

impl Chrome {
    pub fn from_env() -> Self {
        Self {
            title: String::new(),
            title_sent: String::new(),
            trace: std::env::var_os("HEADSCOPE_TRACE").is_some_and(|v| v == "1"),
            traced_detail: None,
            traced_view: None,
            central_overflow: 0.0,
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
