//! The text panel: the editor, and the window buttons for texts longer
//! than the model's limit ("sentences a–b of n").
//!
//! A small text is edited whole. A large one is edited one chunk of whole
//! sentences at a time (see [`super::document`]), so the editor never holds
//! megabytes and typing stays instant.

use super::document::Document;

/// What the analysis of the current window covered, once it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowInfo {
    /// First sentence of the window (0-based).
    pub first: usize,
    /// Sentences the model saw.
    pub analysed: usize,
    /// Sentences in the whole text.
    pub total: usize,
    /// The limit the window was cut to (the model's, the user's, or the
    /// memory's).
    pub limit: crate::input::TokenLimit,
}

impl WindowInfo {
    /// "sentences 3–9 of 40", or "all 7 sentences" when everything fits.
    pub fn describe(&self) -> String {
        if self.first == 0 && self.analysed >= self.total {
            format!(
                "all {} sentence{}",
                self.total,
                if self.total == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "sentences {}–{} of {}",
                self.first + 1,
                self.first + self.analysed,
                self.total
            )
        }
    }

    /// Whether a window follows this one.
    pub fn has_next(&self) -> bool {
        self.first + self.analysed < self.total
    }
}

/// Moving the window through the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowMove {
    Previous,
    Next,
}

/// What happened in the text panel this frame.
#[derive(Debug, Default)]
pub struct EditorOutput {
    pub text_changed: bool,
    /// The edit replaced the whole text: it is no longer its file's.
    pub replaced_whole: bool,
    pub window_move: Option<WindowMove>,
}

/// Whether `after` replaced `before` rather than edited it (select all,
/// then type or paste another text): less than a tenth of `before` is
/// left at either end.
pub fn replaces_whole(before: &str, after: &str) -> bool {
    let prefix = before
        .chars()
        .zip(after.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = before
        .chars()
        .rev()
        .zip(after.chars().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let length = before.chars().count();
    let kept = (prefix + suffix).min(length);
    length > 0 && kept * 10 < length
}

/// The label the text editor is known by (screen readers, UI tests).
pub const EDITOR_LABEL: &str = "Text to analyse";

pub fn editor_ui(
    ui: &mut egui::Ui,
    document: Option<&mut Document>,
    first_sentence: usize,
    window: Option<WindowInfo>,
    busy: Option<&str>,
    source: &str,
) -> EditorOutput {
    let mut output = EditorOutput::default();
    let label = ui
        .horizontal(|ui| {
            let label = ui.strong(EDITOR_LABEL);
            ui.weak(source);
            label
        })
        .inner;
    let Some(document) = document else {
        ui.horizontal(|ui| {
            ui.add(egui::Spinner::new());
            ui.label(busy.unwrap_or("Preparing the text…"));
        });
        return output;
    };

    // The window row, when the text does not fit the model at once.
    let window_known = window.filter(|w| w.first == first_sentence);
    let needs_windows = first_sentence > 0 || window_known.is_some_and(|w| w.has_next());
    if needs_windows {
        ui.horizontal(|ui| {
            if ui
                .add_enabled(first_sentence > 0, egui::Button::new("◀ Previous window"))
                .on_hover_text("Analyse the sentences before this window")
                .clicked()
            {
                output.window_move = Some(WindowMove::Previous);
            }
            let has_next = window_known.is_some_and(|w| w.has_next());
            if ui
                .add_enabled(has_next, egui::Button::new("Next window ▶"))
                .on_hover_text("Analyse the sentences after this window")
                .clicked()
            {
                output.window_move = Some(WindowMove::Next);
            }
        });
        let text = match window_known {
            Some(w) => w.describe(),
            None => format!(
                "from sentence {} of {}",
                first_sentence + 1,
                document.sentence_count()
            ),
        };
        let label = ui.label(egui::RichText::new(text).strong());
        if let Some(w) = window_known.filter(|w| w.has_next()) {
            let why = format!("cut at {}", w.limit);
            label.on_hover_text(&why);
            if !matches!(w.limit.by, crate::input::LimitedBy::Model) {
                ui.weak(why);
            }
        }
    }
    if let Some(message) = busy {
        ui.horizontal(|ui| {
            ui.add(egui::Spinner::new());
            ui.label(message);
        });
    }

    let edit_whole = document.edits_whole_text();
    if !edit_whole {
        ui.weak(format!(
            "Large text ({}): the editor shows the sentences from the window's start; \
             edits go back into the whole text.",
            document.size_description()
        ));
    }
    // Enough rows to fill the panel, so a click anywhere below the text
    // still lands in the editor.
    let row_height = ui.text_style_height(&egui::TextStyle::Body);
    let rows = ((ui.available_height() - 12.0) / row_height).max(4.0) as usize;
    egui::ScrollArea::vertical()
        .id_salt("editor scroll")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let changed = if edit_whole {
                // (At most WHOLE_TEXT_EDIT_LIMIT bytes: kept to tell an
                // edit from a replacement of the whole text.)
                let before = document.text().to_owned();
                let response = ui.add(
                    egui::TextEdit::multiline(document.whole_text_mut())
                        .id_salt("text editor")
                        .desired_width(f32::INFINITY)
                        .desired_rows(rows)
                        .hint_text("Type or paste English text here, or open a file (Ctrl+O)."),
                );
                let changed = response.labelled_by(label.id).changed();
                output.replaced_whole = changed && replaces_whole(&before, document.text());
                changed
            } else {
                match document.chunk_at(first_sentence) {
                    Some(chunk) => {
                        let editable = chunk.editable;
                        let response = ui.add(
                            egui::TextEdit::multiline(&mut chunk.text)
                                .id_salt("text editor")
                                .interactive(editable)
                                .desired_width(f32::INFINITY)
                                .desired_rows(rows),
                        );
                        if !editable {
                            ui.weak("This sentence is too long to edit here.");
                        }
                        response.labelled_by(label.id).changed()
                    }
                    None => false,
                }
            };
            if changed {
                if edit_whole {
                    document.whole_text_edited();
                } else {
                    document.chunk_edited();
                }
                output.text_changed = true;
            }
        });
    output
}

#[cfg(test)]
mod tests {
    use super::replaces_whole;

    #[test]
    fn an_edit_is_not_a_replacement() {
        let text = "The harbour was quiet. Boats rocked gently.";
        assert!(!replaces_whole(
            text,
            "The harbour was quiet. Boats rocked."
        ));
        assert!(!replaces_whole(text, &format!("Dawn. {text}")));
        assert!(replaces_whole(text, "A different text altogether!"));
        assert!(replaces_whole(text, ""));
        assert!(!replaces_whole("", "typed into an empty editor"));
    }
}
