//! The analysed text drawn token by token, as flowing chips that wrap like
//! prose: each chip can be tinted (a value through a colour map, a
//! sentence colour), outlined (picked) and underlined (a mark such as "in
//! the wrong sentence").
//!
//! Tokens show their readable text ([`crate::tokens::ReadableTokens`]:
//! `·the`, `↵`); a token that continues a word is glued to the one before
//! it so the text reads as words. Token texts are laid out through egui's
//! galley cache, so a frame costs one cached lookup and one rectangle per
//! token. In the interactive form each chip is a button for screen readers and tests,
//! named "{prefix} {position} “{text}”", and a click reports whether shift
//! (or Ctrl/Cmd) was held; the display form is one widget with a
//! tooltip for the chip under the pointer.

use crate::tokens::ReadableTokens;
use egui::{Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};

/// How one chip looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChipStyle {
    pub fill: Option<Color32>,
    pub text: Color32,
    /// Drawn around the chip (the picked tokens).
    pub outline: Option<Stroke>,
    /// Drawn under the chip (a mark, e.g. "placed in the wrong sentence").
    pub underline: Option<Stroke>,
    /// The token is picked (reported to screen readers as selected).
    pub picked: bool,
}

impl ChipStyle {
    /// Plain text in `text` colour.
    pub fn plain(text: Color32) -> Self {
        Self {
            fill: None,
            text,
            outline: None,
            underline: None,
            picked: false,
        }
    }

    /// A chip filled with `fill`, its text black or white for contrast.
    pub fn filled(fill: Color32) -> Self {
        Self {
            fill: Some(fill),
            text: text_on(fill),
            outline: None,
            underline: None,
            picked: false,
        }
    }
}

/// Black or white, whichever reads better on `fill`.
pub fn text_on(fill: Color32) -> Color32 {
    let [r, g, b, _] = fill.to_array();
    let luminance = 0.299 * f32::from(r) + 0.587 * f32::from(g) + 0.114 * f32::from(b);
    if luminance > 140.0 {
        Color32::BLACK
    } else {
        Color32::WHITE
    }
}

/// What happened to a token flow this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowOutput {
    /// A chip was clicked: its position, and whether it adds to the
    /// selection (shift, Ctrl or Cmd held).
    pub clicked: Option<(usize, bool)>,
}

/// A token flow's fixed parts.
pub struct TokenFlow<'a> {
    /// Names the widget ids; two flows on screen need different salts.
    pub id_salt: &'a str,
    pub tokens: &'a ReadableTokens,
    pub font_size: f32,
    /// `Some(prefix)`: every chip is a button named "{prefix} {i} “{text}”".
    /// `None`: the flow is one widget named `name`.
    pub chip_prefix: Option<&'a str>,
    /// The accessible name of a display-only flow.
    pub name: &'a str,
    /// Wrap into lines like prose; `false` puts every token on one line.
    pub wrap: bool,
}

/// Where the chips of a flow go, relative to its top left.
pub struct FlowLayout {
    chips: Vec<(Rect, std::sync::Arc<egui::Galley>)>,
    pub size: Vec2,
}

impl FlowLayout {
    /// The rectangle of token `i`, relative to the flow's top left.
    pub fn chip(&self, i: usize) -> Option<Rect> {
        self.chips.get(i).map(|(rect, _)| *rect)
    }
}

/// Gap between words, and between a word and the piece glued to it.
const WORD_GAP: f32 = 4.0;
const PIECE_GAP: f32 = 1.0;
const PAD: Vec2 = Vec2::new(3.0, 1.5);
const LINE_GAP: f32 = 3.0;

/// The height of one line of chips in a font of `font_size`.
pub fn line_height(ui: &egui::Ui, font_size: f32) -> f32 {
    ui.ctx()
        .fonts_mut(|f| f.row_height(&FontId::proportional(font_size)))
        + 2.0 * PAD.y
}

impl TokenFlow<'_> {
    /// Where the chips go in `ui`'s available width (galleys are cached
    /// by egui, so this is cheap to repeat).
    pub fn layout(&self, ui: &egui::Ui) -> FlowLayout {
        let font = FontId::proportional(self.font_size);
        let width = if self.wrap {
            ui.available_width().max(60.0)
        } else {
            f32::INFINITY
        };
        let line_height = line_height(ui, self.font_size);

        // Lay the chips out in lines (positions relative to the top left).
        let mut placed: Vec<(Rect, std::sync::Arc<egui::Galley>)> =
            Vec::with_capacity(self.tokens.texts.len());
        let (mut x, mut y) = (0.0f32, 0.0f32);
        for (i, text) in self.tokens.texts.iter().enumerate() {
            let galley = ui
                .painter()
                .layout_no_wrap(text.clone(), font.clone(), Color32::WHITE);
            let size = galley.size() + 2.0 * PAD;
            let glued = self.tokens.continues_word.get(i) == Some(&true);
            let gap = if i == 0 {
                0.0
            } else if glued {
                PIECE_GAP
            } else {
                WORD_GAP
            };
            if x > 0.0 && x + gap + size.x > width {
                x = 0.0;
                y += line_height + LINE_GAP;
            } else {
                x += gap;
            }
            placed.push((
                Rect::from_min_size(Pos2::new(x, y), Vec2::new(size.x, line_height)),
                galley,
            ));
            x += size.x;
        }
        let height = if placed.is_empty() {
            line_height
        } else {
            y + line_height
        };
        let width = if self.wrap { width } else { x };
        FlowLayout {
            chips: placed,
            size: Vec2::new(width, height),
        }
    }

    /// Draws the tokens, styled by `style(i)`; `tooltip(i)` is the hover
    /// text of token i.
    pub fn show(
        &self,
        ui: &mut egui::Ui,
        style: &dyn Fn(usize) -> ChipStyle,
        tooltip: &dyn Fn(usize) -> String,
    ) -> FlowOutput {
        let layout = self.layout(ui);
        self.show_laid_out(ui, &layout, style, tooltip)
    }

    /// [`TokenFlow::show`] with a layout made before by
    /// [`TokenFlow::layout`] (flows of the same tokens share one).
    pub fn show_laid_out(
        &self,
        ui: &mut egui::Ui,
        layout: &FlowLayout,
        style: &dyn Fn(usize) -> ChipStyle,
        tooltip: &dyn Fn(usize) -> String,
    ) -> FlowOutput {
        let mut output = FlowOutput::default();
        let (placed, size) = (&layout.chips, layout.size);
        let (width, height) = (size.x, size.y);
        let sense = if self.chip_prefix.is_some() {
            Sense::hover()
        } else {
            Sense::click()
        };
        let (area, area_response) = ui.allocate_exact_size(Vec2::new(width, height + 2.0), sense);
        let painter = ui.painter_at(area.expand(3.0));
        let base = ui.scope_id().with(self.id_salt);
        let adds = |ui: &egui::Ui| {
            ui.input(|i| i.modifiers.shift || i.modifiers.command || i.modifiers.ctrl)
        };

        let mut hovered = None;
        for (i, (rect, galley)) in placed.iter().enumerate() {
            let rect = rect.translate(area.min.to_vec2());
            if !ui.is_rect_visible(rect.expand(3.0)) && self.chip_prefix.is_none() {
                continue;
            }
            let chip = style(i);
            if let Some(fill) = chip.fill {
                painter.rect_filled(rect, 3.0, fill);
            }
            let text_pos = Pos2::new(rect.left() + PAD.x, rect.center().y - galley.size().y / 2.0);
            painter.galley_with_override_text_color(text_pos, galley.clone(), chip.text);
            if let Some(stroke) = chip.underline {
                let y = rect.bottom() + 0.5;
                painter.line_segment(
                    [Pos2::new(rect.left(), y), Pos2::new(rect.right(), y)],
                    stroke,
                );
            }
            if let Some(stroke) = chip.outline {
                painter.rect_stroke(rect.expand(1.0), 3.0, stroke, egui::StrokeKind::Outside);
            }
            match self.chip_prefix {
                Some(prefix) => {
                    let response = ui.interact(rect, base.with(i), Sense::click());
                    let selected = chip.picked;
                    let text = &self.tokens.texts[i];
                    response.widget_info(|| {
                        egui::WidgetInfo::selected(
                            egui::Role::Button,
                            true,
                            selected,
                            format!("{prefix} {i} “{text}”"),
                        )
                    });
                    if response.hovered() {
                        painter.rect_stroke(
                            rect,
                            3.0,
                            Stroke::new(1.0, ui.visuals().text_color()),
                            egui::StrokeKind::Outside,
                        );
                    }
                    if response.clicked() {
                        output.clicked = Some((i, adds(ui)));
                    }
                    response.on_hover_text(tooltip(i));
                }
                None => {
                    if area_response
                        .hover_pos()
                        .is_some_and(|pointer| rect.contains(pointer))
                    {
                        hovered = Some(i);
                    }
                }
            }
        }
        if self.chip_prefix.is_none() {
            let name = self.name;
            area_response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Image, true, name));
            if let Some(i) = hovered {
                if area_response.clicked() {
                    output.clicked = Some((i, adds(ui)));
                }
                area_response.on_hover_text_at_pointer(tooltip(i));
            }
        }
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_contrasts_with_its_fill() {
        assert_eq!(text_on(Color32::from_rgb(253, 231, 37)), Color32::BLACK);
        assert_eq!(text_on(Color32::from_rgb(68, 1, 84)), Color32::WHITE);
    }
}
