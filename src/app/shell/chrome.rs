//! The window's chrome: its title ("headscope — file (folder)"), and, for
//! scripts that drive the real window (`HEADSCOPE_TRACE=1`), a line on
//! stderr per result and per head or tab shown, and
//! (`HEADSCOPE_TRACE_WIDGETS=<file>`) where each named control is.

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

/// With `HEADSCOPE_TRACE_WIDGETS=<file>`, each frame whose controls moved
/// writes every named control or grid cell (as the accessibility tree
/// names it) with
/// its centre in points to `file`, one "name<TAB>x<TAB>y" a line, so that
/// a script driving the real window clicks widgets by their labels, not
/// by places read off a screenshot (`scripts/screenshots.sh`).
pub struct WidgetTrace {
    path: std::path::PathBuf,
    written: String,
}

impl WidgetTrace {
    /// Adds the trace to `ctx` when the variable names a file.
    pub fn install_from_env(ctx: &egui::Context) {
        if let Some(path) = std::env::var_os("HEADSCOPE_TRACE_WIDGETS") {
            Self::install(ctx, path.into());
        }
    }

    /// Adds the trace to `ctx`, writing to `path`.
    pub fn install(ctx: &egui::Context, path: std::path::PathBuf) {
        ctx.add_plugin(Self {
            path,
            written: String::new(),
        });
    }

    /// Writes `lines` whole (through a file beside it, renamed), so that a
    /// reader never sees half a list.
    fn write(&self, lines: &str) -> std::io::Result<()> {
        let partial = self.path.with_extension("partial");
        std::fs::write(&partial, lines)?;
        std::fs::rename(&partial, &self.path)
    }
}

impl egui::Plugin for WidgetTrace {
    fn debug_name(&self) -> &'static str {
        "headscope widget trace"
    }

    fn setup(&mut self, ctx: &egui::Context) {
        // egui builds the tree only for a screen reader, or when asked.
        ctx.enable_accesskit();
    }

    fn output_hook(&mut self, _ctx: &egui::Context, output: &mut egui::FullOutput) {
        let Some(update) = &output.platform_output.accesskit_update else {
            return;
        };
        let by_id: std::collections::HashMap<_, _> =
            update.nodes.iter().map(|(id, node)| (*id, node)).collect();
        // A field's name is often a label beside it (`labelled_by`), as a
        // screen reader reads it.
        let name_of = |node: &egui::accesskit::Node| -> Option<String> {
            node.label().map(str::to_string).or_else(|| {
                let label = by_id.get(node.labelled_by().first()?)?;
                label.label().or_else(|| label.value()).map(str::to_string)
            })
        };
        let mut lines: Vec<String> = update
            .nodes
            .iter()
            // What a person clicks or types in, and the cells of a grid
            // (pointed at for their hover read-out).
            .filter(|(_, node)| {
                egui::accessibility::is_input(node.role()) || node.role() == egui::Role::Cell
            })
            .filter_map(|(_, node)| {
                let (name, bounds) = (name_of(node)?, node.bounds()?);
                let name = name.replace(['\t', '\n'], " ");
                let (x, y) = ((bounds.x0 + bounds.x1) / 2.0, (bounds.y0 + bounds.y1) / 2.0);
                Some(format!("{name}\t{x:.0}\t{y:.0}"))
            })
            .collect();
        lines.sort();
        let lines = lines.join("\n") + "\n";
        if lines != self.written {
            if let Err(error) = self.write(&lines) {
                eprintln!("headscope: cannot write the widget trace: {error}");
            }
            self.written = lines;
        }
    }
}
