//! The message banner above the views: what just happened (a file saved, a
//! model that could not be loaded), until the user dismisses it or the next
//! message replaces it.

use std::path::Path;

/// A message shown in a banner above the heatmaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub text: String,
    pub error: bool,
}

impl Notice {
    pub fn info(text: impl Into<String>) -> Self {
        Notice {
            text: text.into(),
            error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        Notice {
            text: text.into(),
            error: true,
        }
    }

    /// The banner after an export (File → Export, or a figure's Save PNG / SVG / PDF…).
    pub fn export(result: Result<&Path, String>) -> Self {
        match result {
            Ok(path) => Notice::info(format!("Exported {}", path.display())),
            Err(message) => Notice::error(format!("Export failed: {message}")),
        }
    }
}

/// Draws the banner of `slot`, if any, and clears it when dismissed.
pub fn banner_ui(ui: &mut egui::Ui, slot: &mut Option<Notice>) {
    let Some(notice) = slot.as_ref() else {
        return;
    };
    let colour = if notice.error {
        ui.visuals().error_fg_color
    } else {
        ui.visuals().warn_fg_color
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
