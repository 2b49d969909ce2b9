//! The message banner above the views: what just happened (a file saved, a
//! model that could not be loaded), until the user dismisses it or the next
//! message replaces it. A passing note (a file saved or exported) is in the
//! ordinary text colour and goes by itself a few seconds after it is
//! shown: the window is woken once for that
//! ([`egui::Context::request_repaint_after`]), never redrawn meanwhile.
//! (Not at the next click: the banner going would move what is under the
//! pointer in the very frame that click lands.)

use std::path::Path;

/// How long a passing note stays, in seconds.
pub const PASSING_FOR: f64 = 6.0;

/// How a notice is shown, and how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A warning that stays until dismissed (the warning colour).
    Info,
    /// An error that stays until dismissed.
    Error,
    /// A passing note: goes after [`PASSING_FOR`] seconds.
    Passing,
}

/// A message shown in a banner above the heatmaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
    pub kind: Kind,
    /// When a passing note was first drawn (input time, seconds).
    shown: Option<f64>,
}

impl Notice {
    fn new(text: impl Into<String>, kind: Kind) -> Self {
        Notice {
            text: text.into(),
            error: kind == Kind::Error,
            kind,
            shown: None,
        }
    }

    pub fn info(text: impl Into<String>) -> Self {
        Self::new(text, Kind::Info)
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self::new(text, Kind::Error)
    }

    /// A note that goes by itself (a file saved or exported).
    pub fn passing(text: impl Into<String>) -> Self {
        Self::new(text, Kind::Passing)
    }

    /// The banner after an export (File → Export, or a figure's Save PNG / SVG / PDF…).
    pub fn export(result: Result<&Path, String>) -> Self {
        match result {
            Ok(path) => Notice::passing(format!("Exported {}", path.display())),
            Err(message) => Notice::error(format!("Export failed: {message}")),
        }
    }

    /// The seconds a notice has left at `now` (seconds of input time):
    /// none once a passing note has had its time, which starts when it is
    /// first asked (drawn); infinite for one that stays.
    pub fn left(&mut self, now: f64) -> Option<f64> {
        if self.kind != Kind::Passing {
            return Some(f64::INFINITY);
        }
        let since = *self.shown.get_or_insert(now);
        let left = PASSING_FOR - (now - since);
        (left > 0.0).then_some(left)
    }
}

/// Draws the banner of `slot`, if any, and clears it when dismissed.
pub fn banner_ui(ui: &mut egui::Ui, slot: &mut Option<Notice>) {
    let Some(notice) = slot.as_mut() else {
        return;
    };
    let now = ui.input(|i| i.time);
    match notice.left(now) {
        None => {
            *slot = None;
            return;
        }
        Some(left) if left.is_finite() => {
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_secs_f64(left));
        }
        Some(_) => {}
    }
    let colour = match notice.kind {
        Kind::Error => ui.visuals().error_fg_color,
        Kind::Info => ui.visuals().warn_fg_color,
        Kind::Passing => ui.visuals().text_color(),
    };
    let mut dismissed = false;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal_top(|ui| {
            // The text wraps in what the × leaves: a label wrapped at the
            // whole width pushed the × (and the central panel) past the
            // window's edge.
            let button = 24.0 + ui.spacing().item_spacing.x;
            let width = (ui.available_width() - button).max(80.0);
            ui.allocate_ui_with_layout(
                egui::vec2(width, 0.0),
                egui::Layout::top_down(egui::Align::Min),
                |ui| {
                    ui.set_max_width(width);
                    ui.add(
                        egui::Label::new(egui::RichText::new(&notice.text).color(colour)).wrap(),
                    );
                },
            );
            if ui
                .small_button("×")
                .on_hover_text("Dismiss this message")
                .clicked()
            {
                dismissed = true;
            }
        });
    });
    if dismissed {
        *slot = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passing_note_goes_after_a_while() {
        let mut note = Notice::export(Ok(Path::new("/tmp/figure.png")));
        assert_eq!(note.kind, Kind::Passing);
        assert!(!note.error);
        // First drawn at 10 s: its time runs from there.
        assert_eq!(note.left(10.0), Some(PASSING_FOR));
        assert_eq!(note.left(12.0), Some(PASSING_FOR - 2.0));
        assert_eq!(note.left(10.0 + PASSING_FOR), None);
        // Warnings and errors stay until dismissed.
        let mut error = Notice::export(Err("disk full".into()));
        assert!(error.error);
        assert_eq!(error.left(1.0e6), Some(f64::INFINITY));
        assert_eq!(Notice::info("a warning").left(1.0e6), Some(f64::INFINITY));
    }
}
