//! The one way a slow stage shows itself: a progress bar with what it
//! does, how far it is and the time left, and a Cancel button. The status
//! bar's analysis and the grid's thumbnails draw it; anything slow that
//! comes later should too.

use crate::app::jobs::JobProgress;
use std::time::Duration;

/// The label of every progress row's Cancel button.
pub const CANCEL_LABEL: &str = "Cancel";

/// How often a shown progress is redrawn (its job wakes the UI only when
/// it ends): twice a second reads as live, and under a software renderer
/// each frame costs CPU the job itself needs.
const REDRAW: Duration = Duration::from_millis(500);

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
    ui.add(
        egui::ProgressBar::new(fraction)
            .desired_width(width)
            .text(text),
    );
    ui.ctx().request_repaint_after(REDRAW);
    cancel_hint.is_some_and(|hint| ui.small_button(CANCEL_LABEL).on_hover_text(hint).clicked())
}

/// A job's progress row: "What · 120 of 270 · ~8 s left" and Cancel,
/// which asks the job to stop; true when it was clicked.
pub fn job_row(ui: &mut egui::Ui, job: &JobProgress, cancel_hint: &str) -> bool {
    let cancelled = ui
        .horizontal(|ui| {
            progress_bar(
                ui,
                job.fraction(),
                format!("{} · {}", job.what, job.describe()),
                320.0,
                Some(cancel_hint),
            )
        })
        .inner;
    if cancelled {
        job.cancel();
    }
    cancelled
}
