//! Text in exported figures measured with `ab_glyph` in egui's own
//! default fonts (the ones the SVG names and the PDF embeds), so a figure
//! can make room for its labels and shorten what does not fit.

use ab_glyph::{Font, FontRef, GlyphId, PxScale, ScaleFont};

/// Text drawn with egui's default proportional font, falling back to its
/// monospace font for characters the first lacks.
pub(super) struct Typesetter {
    main: FontRef<'static>,
    fallback: FontRef<'static>,
}

impl Typesetter {
    /// `None` only if the bundled font bytes were unreadable; callers then
    /// draw figures without text rather than fail.
    pub(super) fn new() -> Option<Self> {
        Some(Typesetter {
            main: FontRef::try_from_slice(epaint_default_fonts::UBUNTU_LIGHT).ok()?,
            fallback: FontRef::try_from_slice(epaint_default_fonts::HACK_REGULAR).ok()?,
        })
    }

    pub(super) fn font_for(&self, c: char) -> (&FontRef<'static>, GlyphId) {
        let id = self.main.glyph_id(c);
        if id.0 != 0 {
            return (&self.main, id);
        }
        let id = self.fallback.glyph_id(c);
        if id.0 != 0 {
            (&self.fallback, id)
        } else {
            (&self.main, self.main.glyph_id('?'))
        }
    }

    /// Width of `text` at size `px` (in the size's unit: pixels or points).
    pub(super) fn width(&self, text: &str, px: f32) -> f32 {
        self.layout(text, px).1
    }

    /// Glyph positions along the baseline and the total advance.
    pub(super) fn layout(
        &self,
        text: &str,
        px: f32,
    ) -> (Vec<(&FontRef<'static>, GlyphId, f32)>, f32) {
        let mut glyphs = Vec::new();
        let mut x = 0.0;
        let mut previous: Option<(&FontRef<'static>, GlyphId)> = None;
        for c in text.chars().filter(|c| !c.is_control()) {
            let (font, id) = self.font_for(c);
            let scaled = font.as_scaled(PxScale::from(px));
            if let Some((pf, pid)) = previous {
                if std::ptr::eq(pf, font) {
                    x += scaled.kern(pid, id);
                }
            }
            glyphs.push((font, id, x));
            x += scaled.h_advance(id);
            previous = Some((font, id));
        }
        (glyphs, x)
    }

    /// `text`, shortened with an ellipsis if needed to fit `max_width`.
    pub(super) fn fit(&self, text: &str, px: f32, max_width: f32) -> String {
        if self.width(text, px) <= max_width {
            return text.to_string();
        }
        // Nothing longer than this fits any figure; it bounds the search.
        let mut chars: Vec<char> = text.chars().take(400).collect();
        while !chars.is_empty() {
            chars.pop();
            let candidate: String = chars.iter().chain(['…'].iter()).collect();
            if self.width(&candidate, px) <= max_width {
                return candidate;
            }
        }
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{CARRIAGE_RETURN, NEWLINE, TAB, WORD_START};

    /// The marks of readable tokens are drawn, not replaced by `?`: in
    /// the figures, and in the app, whose proportional text falls back
    /// to Hack as these do.
    #[test]
    fn the_token_marks_have_glyphs() {
        let typesetter = Typesetter::new().expect("the bundled fonts");
        for mark in [WORD_START, NEWLINE, TAB, CARRIAGE_RETURN, '…'] {
            let in_main = typesetter.main.glyph_id(mark).0 != 0;
            let in_fallback = typesetter.fallback.glyph_id(mark).0 != 0;
            assert!(in_main || in_fallback, "no glyph for {mark:?}");
        }
    }
}
