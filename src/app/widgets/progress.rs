//! The one way a slow stage shows itself: a progress bar with what it
//! does, how far it is and the time left, and a Cancel button. The status
//! bar's analysis, the grid's thumbnails, the logit lens, Compare and the
//! corpus window draw it; anything slow that comes later should too.

use crate::app::jobs::JobProgress;
use std::time::Duration;

/// The label of every progress row's Cancel button.
pub const CANCEL_LABEL: &str = "Cancel";

/// How often a shown progress is redrawn (its job wakes the UI only when
/// it ends): twice a second reads as live, and under a software renderer
/// each frame costs CPU the job itself needs.
const REDRAW: Duration = Duration::from_millis(500);

/// A progress bar and its Cancel button, built up and then shown with
/// [`ProgressRow::show`]: `ProgressRow::new(0.4, text).cancel(hint)`.
pub struct ProgressRow<'a> {
    fraction: f32,
    text: String,
    width: f32,
    accessible_name: Option<&'a str>,
    cancel_hint: Option<&'a str>,
    cancelling: bool,
}

impl<'a> ProgressRow<'a> {
    /// A bar at `fraction` (0 to 1) reading `text`, 320 points wide and
    /// without Cancel.
    pub fn new(fraction: f32, text: String) -> Self {
        Self {
            fraction,
            text,
            width: 320.0,
            accessible_name: None,
            cancel_hint: None,
            cancelling: false,
        }
    }

    pub fn width(mut self, width: f32) -> Self {
        self.width = width;
        self
    }

    /// Names the bar for screen readers and UI tests, before its text
    /// (which changes with the progress): "Corpus progress: Analysing…".
    pub fn accessible_name(mut self, name: &'a str) -> Self {
        self.accessible_name = Some(name);
        self
    }

    /// Adds a Cancel button that says `hint` on hover.
    pub fn cancel(mut self, hint: &'a str) -> Self {
        self.cancel_hint = Some(hint);
        self
    }

    /// Cancel was asked for and the job is still winding down: the button
    /// is greyed out.
    pub fn cancelling(mut self, cancelling: bool) -> Self {
        self.cancelling = cancelling;
        self
    }

    /// Draws the bar and the button side by side; true when Cancel was
    /// clicked. Asks for the next frame a moment later, so a progress on
    /// screen moves while nothing else wakes the UI, and an app with none
    /// stays idle.
    pub fn show(self, ui: &mut egui::Ui) -> bool {
        ui.horizontal(|ui| {
            // Wide enough for its text (a long model name in Compare's),
            // within the room left beside Cancel.
            let text_width = egui::WidgetText::from(self.text.as_str())
                .into_galley(
                    ui,
                    Some(egui::TextWrapMode::Extend),
                    f32::INFINITY,
                    egui::TextStyle::Button,
                )
                .size()
                .x;
            let room = (ui.available_width() - 80.0).max(self.width);
            let width = self.width.max(text_width + 24.0).min(room);
            let bar = ui.add(
                egui::ProgressBar::new(self.fraction)
                    .desired_width(width)
                    .text(self.text.clone()),
            );
            if let Some(name) = self.accessible_name {
                let label = format!("{name}: {}", self.text);
                bar.widget_info(|| {
                    egui::WidgetInfo::labeled(egui::Role::ProgressIndicator, true, &label)
                });
            }
            ui.ctx().request_repaint_after(REDRAW);
            self.cancel_hint.is_some_and(|hint| {
                ui.add_enabled(!self.cancelling, egui::Button::new(CANCEL_LABEL).small())
                    .on_hover_text(hint)
                    .clicked()
            })
        })
        .inner
    }
}

/// "What · 3 of 10 documents · ~8 s left": a progress row's text, the
/// time left once it is known.
pub fn row_text(what: &str, count: &str, left: Option<Duration>) -> String {
    match left {
        Some(left) => format!(
            "{what} · {count} · ~{} left",
            crate::pipeline::seconds(left)
        ),
        None => format!("{what} · {count}"),
    }
}

/// A progress bar `width` wide reading `text` at `fraction`, and, with
/// `cancel_hint`, a Cancel button that says it on hover; true when Cancel
/// was clicked.
pub fn progress_bar(
    ui: &mut egui::Ui,
    fraction: f32,
    text: String,
    width: f32,
    cancel_hint: Option<&str>,
) -> bool {
    let row = ProgressRow::new(fraction, text).width(width);
    match cancel_hint {
        Some(hint) => row.cancel(hint).show(ui),
        None => row.show(ui),
    }
}

/// A job's progress row: "What · 120 of 270 · ~8 s left" and Cancel,
/// which asks the job to stop; true when it was clicked.
pub fn job_row(ui: &mut egui::Ui, job: &JobProgress, cancel_hint: &str) -> bool {
    let cancelled = ProgressRow::new(job.fraction(), format!("{} · {}", job.what, job.describe()))
        .cancel(cancel_hint)
        .cancelling(job.is_cancelled())
        .show(ui);
    if cancelled {
        job.cancel();
    }
    cancelled
}
