//! The text panel: the editor, and the window buttons for texts longer
//! than the model's limit ("sentences a–b of n"), with a note for each
//! sentence longer than a window that the window holds pieces of.
//!
//! A small text is edited whole. A large one is edited one chunk of whole
//! sentences at a time (see [`super::document`]), so the editor never holds
//! megabytes and typing stays instant.

use super::document::Document;
use crate::app::widgets::busy;
use crate::input::WindowStart;

/// What the analysis of the current window covered, once it is known, in
/// sentences of the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowInfo {
    /// Where the window starts: a sentence (0-based), and the piece of it
    /// when it was cut.
    pub first: WindowStart,
    /// The last sentence of which the window holds something.
    pub last: usize,
    /// Where the next window starts, if one does.
    pub next: Option<WindowStart>,
    /// Sentences in the whole text.
    pub total: usize,
    /// The limit the window was cut to (the model's, the user's, or the
    /// memory's).
    pub limit: crate::input::TokenLimit,
    /// One note per sentence longer than a window that this window holds
    /// pieces of.
    pub split_notes: Vec<String>,
}

impl WindowInfo {
    /// "sentences 3–9 of 40", "sentence 4 of 40", or "all 7 sentences"
    /// when everything fits.
    pub fn describe(&self) -> String {
        if self.first == WindowStart::default() && self.next.is_none() {
            format!(
                "all {} sentence{}",
                self.total,
                if self.total == 1 { "" } else { "s" }
            )
        } else if self.first.sentence == self.last {
            format!("sentence {} of {}", self.first.sentence + 1, self.total)
        } else {
            format!(
                "sentences {}–{} of {}",
                self.first.sentence + 1,
                self.last + 1,
                self.total
            )
        }
    }

    /// Whether a window follows this one.
    pub fn has_next(&self) -> bool {
        self.next.is_some()
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
    /// Where the tokens followed were marked on screen.
    pub marked: Option<egui::Rect>,
}

/// Tokens the editor marks, as byte ranges of the text it shows (a
/// heatmap cell's two tokens), and whether to scroll them into view (when
/// they change).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextFollow {
    pub ranges: Vec<std::ops::Range<usize>>,
    pub scroll: bool,
}

/// Names the editor by its label and marks the followed tokens in it,
/// unless its text just changed (the ranges are of the text analysed);
/// whether it changed.
fn labelled_and_marked(
    ui: &egui::Ui,
    shown: &egui::text_edit::TextEditOutput,
    label: egui::Id,
    text: &str,
    follow: &TextFollow,
    output: &mut EditorOutput,
) -> bool {
    let changed = shown.response.response.clone().labelled_by(label).changed();
    if !changed {
        output.marked = mark_followed(ui, shown, text, follow);
    }
    changed
}

/// Marks `follow`'s ranges of `text` over the editor's galley and, when
/// asked, scrolls the first into view; where the marks are.
fn mark_followed(
    ui: &egui::Ui,
    shown: &egui::text_edit::TextEditOutput,
    text: &str,
    follow: &TextFollow,
) -> Option<egui::Rect> {
    let cursor = |byte: usize| {
        let chars = text.get(..byte.min(text.len()))?.chars().count();
        Some(
            shown
                .galley
                .pos_from_cursor(egui::text::CCursor::new(chars))
                .translate(shown.galley_pos.to_vec2()),
        )
    };
    let stroke = ui.visuals().selection.stroke;
    let fill = stroke.color.gamma_multiply(0.25);
    let mut marked: Option<egui::Rect> = None;
    for range in &follow.ranges {
        let (Some(start), Some(end)) = (cursor(range.start), cursor(range.end)) else {
            continue;
        };
        // One row: the token's width; wrapped, its start to the row's end.
        let right = if (end.min.y - start.min.y).abs() < 1.0 {
            end.max.x
        } else {
            shown.text_clip_rect.right()
        };
        let rect = egui::Rect::from_min_max(
            start.min,
            egui::pos2(right.max(start.min.x + 4.0), start.max.y),
        );
        let painter = ui.painter().with_clip_rect(shown.text_clip_rect);
        painter.rect_filled(rect, 2.0, fill);
        painter.rect_stroke(rect, 2.0, stroke, egui::StrokeKind::Outside);
        marked = Some(marked.map_or(rect, |m| m.union(rect)));
    }
    if follow.scroll {
        if let Some(rect) = marked {
            ui.scroll_to_rect(rect, Some(egui::Align::Center));
        }
    }
    marked
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

/// `note` with its first letter in upper case.
fn sentence_case(note: &str) -> String {
    let mut chars = note.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

/// What the editor says and does beside the text: what is being done
/// to it, where it comes from, whether it is read-only (a capture's), and
/// the tokens it marks.
pub struct EditorFrame<'a> {
    pub busy: Option<&'a str>,
    pub source: &'a str,
    pub read_only: bool,
    pub follow: &'a TextFollow,
}

pub fn editor_ui(
    ui: &mut egui::Ui,
    document: Option<&mut Document>,
    first: WindowStart,
    window: Option<&WindowInfo>,
    frame: EditorFrame<'_>,
) -> EditorOutput {
    let EditorFrame {
        busy,
        source,
        read_only,
        follow,
    } = frame;
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
            busy::spinner(ui);
            ui.label(busy.unwrap_or("Preparing the text…"));
        });
        return output;
    };

    // The window row, when the text does not fit the model at once.
    let first_sentence = first.sentence;
    let window_known = window.filter(|w| w.first == first);
    let needs_windows =
        first != WindowStart::default() || window_known.is_some_and(|w| w.has_next());
    if needs_windows {
        ui.horizontal(|ui| {
            if ui
                .add_enabled(
                    first != WindowStart::default(),
                    egui::Button::new("◀ Previous window"),
                )
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
        for note in window_known.iter().flat_map(|w| &w.split_notes) {
            ui.label(egui::RichText::new(sentence_case(note)).color(ui.visuals().warn_fg_color));
        }
    }
    if let Some(message) = busy {
        ui.horizontal(|ui| {
            busy::spinner(ui);
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
            let changed = if read_only {
                // A capture's text: selectable and copyable, never edited.
                let mut text: &str = document.text();
                let shown = egui::TextEdit::multiline(&mut text)
                    .id_salt("text editor")
                    .desired_width(f32::INFINITY)
                    .desired_rows(rows)
                    .show(ui);
                // Never edited: it does not change.
                labelled_and_marked(ui, &shown, label.id, text, follow, &mut output);
                false
            } else if edit_whole {
                // (At most WHOLE_TEXT_EDIT_LIMIT bytes: kept to tell an
                // edit from a replacement of the whole text.)
                let before = document.text().to_owned();
                let shown = egui::TextEdit::multiline(document.whole_text_mut())
                    .id_salt("text editor")
                    .desired_width(f32::INFINITY)
                    .desired_rows(rows)
                    .hint_text("Type or paste English text here, or open a file (Ctrl+O).")
                    .show(ui);
                let changed =
                    labelled_and_marked(ui, &shown, label.id, document.text(), follow, &mut output);
                output.replaced_whole = changed && replaces_whole(&before, document.text());
                changed
            } else {
                match document.chunk_at(first_sentence) {
                    Some(chunk) => {
                        let editable = chunk.editable;
                        let shown = egui::TextEdit::multiline(&mut chunk.text)
                            .id_salt("text editor")
                            .interactive(editable)
                            .desired_width(f32::INFINITY)
                            .desired_rows(rows)
                            .show(ui);
                        if !editable {
                            ui.weak("This sentence is too long to edit here.");
                        }
                        labelled_and_marked(ui, &shown, label.id, &chunk.text, follow, &mut output)
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
