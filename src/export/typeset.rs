//! Text in exported figures: egui's own default fonts drawn with
//! `ab_glyph` into an image (titles, token labels, tick labels), so a
//! figure's text looks like the app's and needs no window.

use ab_glyph::{point, Font, FontRef, GlyphId, PxScale, ScaleFont};
use image::RgbImage;

/// The colour of text.
const INK: [u8; 3] = [20, 20, 20];

/// Text drawn with egui's default proportional font, falling back to its
/// monospace font for characters the first lacks.
pub(super) struct Typesetter {
    main: FontRef<'static>,
    fallback: FontRef<'static>,
}

/// Coverage of rendered text, `width`×`height`, row-major in [0, 1].
pub(super) struct Mask {
    width: usize,
    height: usize,
    alpha: Vec<f32>,
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

    /// Width in pixels of `text` at height `px`.
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

    /// Ascent and full line height at `px`, of the main font.
    pub(super) fn metrics(&self, px: f32) -> (f32, usize) {
        let scaled = self.main.as_scaled(PxScale::from(px));
        (
            scaled.ascent(),
            (scaled.ascent() - scaled.descent()).ceil() as usize,
        )
    }

    pub(super) fn render(&self, text: &str, px: f32) -> Mask {
        let (glyphs, advance) = self.layout(text, px);
        let (ascent, height) = self.metrics(px);
        let width = advance.ceil().max(0.0) as usize + 2;
        let mut alpha = vec![0.0f32; width * height];
        for (font, id, x) in glyphs {
            let glyph = id.with_scale_and_position(PxScale::from(px), point(x, ascent.round()));
            if let Some(outlined) = font.outline_glyph(glyph) {
                let bounds = outlined.px_bounds();
                outlined.draw(|gx, gy, c| {
                    let px = bounds.min.x as i64 + i64::from(gx);
                    let py = bounds.min.y as i64 + i64::from(gy);
                    if px >= 0 && py >= 0 && (px as usize) < width && (py as usize) < height {
                        let a = &mut alpha[py as usize * width + px as usize];
                        *a = (*a + c).min(1.0);
                    }
                });
            }
        }
        Mask {
            width,
            height,
            alpha,
        }
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

/// How a text mask is placed relative to its anchor point.
#[derive(Clone, Copy)]
pub(super) enum Align {
    Left,
    Centre,
    Right,
}

/// Draws `text` with its line box vertically centred on `y` and placed
/// horizontally on `x` by `align`.
pub(super) fn draw_text(
    img: &mut RgbImage,
    ts: &Typesetter,
    text: &str,
    px: f32,
    x: f32,
    y: f32,
    align: Align,
) {
    let mask = ts.render(text, px);
    let advance = ts.width(text, px);
    let left = match align {
        Align::Left => x,
        Align::Centre => x - advance / 2.0,
        Align::Right => x - advance,
    };
    let top = y - mask.height as f32 / 2.0;
    blit(img, &mask, left.round() as i64, top.round() as i64, false);
}

/// Draws `text` rotated 90° anticlockwise (reading bottom to top, as
/// matplotlib's `rotation=90`), its end at `top` and its line box centred
/// on column `x`.
pub(super) fn draw_text_vertical(
    img: &mut RgbImage,
    ts: &Typesetter,
    text: &str,
    px: f32,
    x: f32,
    top: f32,
) {
    let mask = ts.render(text, px);
    let advance = ts.width(text, px);
    // After rotation the mask's width runs upwards; its last column of ink
    // (advance) should land on `top`.
    let left = x - mask.height as f32 / 2.0;
    let upper = top - (mask.width as f32 - advance);
    blit(img, &mask, left.round() as i64, upper.round() as i64, true);
}

pub(super) fn blit(img: &mut RgbImage, mask: &Mask, left: i64, top: i64, rotated: bool) {
    for my in 0..mask.height {
        for mx in 0..mask.width {
            let a = mask.alpha[my * mask.width + mx];
            if a <= 0.0 {
                continue;
            }
            // Ubuntu Light is thin; a gamma below 1 darkens the strokes'
            // edges so small labels survive printing and downscaling.
            let a = a.powf(0.7);
            // Rotating anticlockwise sends mask (mx, my) to (my, width-1-mx).
            let (dx, dy) = if rotated {
                (my as i64, (mask.width - 1 - mx) as i64)
            } else {
                (mx as i64, my as i64)
            };
            let (px, py) = (left + dx, top + dy);
            if px < 0 || py < 0 || px >= i64::from(img.width()) || py >= i64::from(img.height()) {
                continue;
            }
            let pixel = img.get_pixel_mut(px as u32, py as u32);
            for (channel, ink) in pixel.0.iter_mut().zip(INK) {
                let blended = f32::from(*channel) * (1.0 - a) + f32::from(ink) * a;
                *channel = blended.round().clamp(0.0, 255.0) as u8;
            }
        }
    }
}
