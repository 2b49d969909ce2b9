//! Matrices to pictures: their colour ranges and images (through
//! [`crate::colormap`], so the screen matches exported PNGs), and the
//! colour bar legend.
//!
//! For a causal model the cells above the diagonal are masked: a query
//! cannot see a later key, so its attention there is not a low value but
//! none at all, and the similarity there mirrors the cell below. Those
//! cells are NaN in a head's map ([`crate::head_map`]) and drawn hatched in grey
//! ([`MASKED_LIGHT`], [`MASKED_DARK`]), never in the colour map's colours.
//!
//! Everything here runs only when a result or a view choice changes; the
//! images become textures that the views draw every frame at no cost.

use crate::analysis::SimilarityVariant;
use crate::app::settings::{MatrixKind, Settings};
use crate::colormap::{ColorMap, ColourScale, RangeRule, ValueRange};
use crate::pipeline::RunOutput;
use egui::{Color32, ColorImage, Rect, Stroke, TextureHandle, TextureOptions};
use std::sync::Arc;

/// The grey stripes of a masked cell.
pub const MASKED_LIGHT: Color32 = Color32::from_rgb(118, 118, 118);
pub const MASKED_DARK: Color32 = Color32::from_rgb(72, 72, 72);

/// Everything a head's picture depends on: the result on screen and the
/// view choices; a change rebuilds the textures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewKey {
    pub generation: u64,
    pub kind: MatrixKind,
    pub variant: SimilarityVariant,
    pub colormap: ColorMap,
    pub shared_scale: bool,
    pub range_rule: RangeRule,
    pub without_first_token: bool,
    pub log_attention: bool,
}

impl ViewKey {
    /// The key of result `generation` under `settings`.
    pub fn new(generation: u64, settings: &Settings) -> Self {
        ViewKey {
            generation,
            kind: settings.matrix,
            variant: settings.similarity,
            colormap: settings.colormap,
            shared_scale: settings.shared_scale,
            range_rule: settings.colour_range,
            without_first_token: settings.scale_without_first_token,
            log_attention: settings.log_attention,
        }
    }
}

/// The colour range a map uses for `values` (symmetric for diverging maps).
pub fn range_of(map: ColorMap, values: &[f32]) -> ValueRange {
    ValueRange::auto(map, values)
}

/// How a head's picture of `key` spreads its colours (ANALYSIS.md's
/// views; [`ColourScale`]): the first token is left out of the range only
/// for a causal model, where it is the sink, and attention alone has a
/// log scale.
pub fn colour_scale(output: &RunOutput, key: &ViewKey) -> ColourScale {
    ColourScale {
        rule: key.range_rule,
        without_first_token: key.without_first_token && output.input.tokens.causal,
        log: key.log_attention && key.kind.is_attention(),
    }
}

/// A head's side×side picture: the values it colours (log₁₀ on a log
/// scale) and their colour range.
pub fn picture(
    map: ColorMap,
    scale: ColourScale,
    values: &[f32],
    side: usize,
) -> (Vec<f32>, ValueRange) {
    let coloured = scale.coloured(values);
    let range = scale.range(map, &coloured, side);
    (coloured, range)
}

/// The colour range of one row of attention (a step's query), without its
/// first key where `without_first_key` (a causal model's sink, whose larger
/// value then takes the top colour).
pub fn row_range(map: ColorMap, row: &[f32], without_first_key: bool) -> ValueRange {
    match row.get(1..) {
        Some(rest) if without_first_key && rest.iter().any(|v| v.is_finite()) => {
            range_of(map, rest)
        }
        _ => range_of(map, row),
    }
}

/// The smallest range holding all of `ranges`.
pub fn union(ranges: &[ValueRange]) -> ValueRange {
    let min = ranges.iter().map(|r| r.min).fold(f32::INFINITY, f32::min);
    let max = ranges
        .iter()
        .map(|r| r.max)
        .fold(f32::NEG_INFINITY, f32::max);
    if min <= max {
        ValueRange::new(min, max)
    } else {
        ValueRange::default()
    }
}

/// A side×side matrix coloured by `map` over `range`; NaN cells (masked,
/// or undefined) hatched in grey stripes.
pub fn colour_image(values: &[f32], side: usize, map: ColorMap, range: ValueRange) -> ColorImage {
    colour_image_sized(values, [side, side], map, range)
}

/// A `[width, height]` matrix (row-major) coloured as [`colour_image`].
pub fn colour_image_sized(
    values: &[f32],
    [width, height]: [usize; 2],
    map: ColorMap,
    range: ValueRange,
) -> ColorImage {
    debug_assert_eq!(values.len(), width * height);
    let pixels = values
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            if v.is_nan() {
                let (i, j) = (index / width.max(1), index % width.max(1));
                return if (i + j) % 4 < 2 {
                    MASKED_LIGHT
                } else {
                    MASKED_DARK
                };
            }
            let [r, g, b] = map.rgb(range.normalise(v));
            Color32::from_rgb(r, g, b)
        })
        .collect();
    ColorImage::new([width, height], pixels)
}

/// Replaces a texture's pixels, or makes the texture when there is none.
pub fn upload(
    ctx: &egui::Context,
    slot: &mut Option<TextureHandle>,
    name: &str,
    image: ColorImage,
) {
    // Magnified: one token pair is one crisp cell. Minified (a long input
    // in a small thumbnail): averaged through mipmaps instead of aliasing.
    let options = TextureOptions {
        magnification: egui::TextureFilter::Nearest,
        minification: egui::TextureFilter::Linear,
        mipmap_mode: Some(egui::TextureFilter::Linear),
        ..TextureOptions::NEAREST
    };
    let pixels = Arc::new(image.clone());
    match slot {
        Some(texture) => texture.set(image, options),
        None => *slot = Some(ctx.load_texture(name, image, options)),
    }
    if let Some(texture) = slot {
        remember_pixels(ctx, texture.id(), pixels);
    }
}

fn pixels_id(texture: egui::TextureId) -> egui::Id {
    egui::Id::unique(("headscope texture pixels", texture))
}

/// Keeps a texture's pixels where a figure's export finds them (egui keeps
/// them only on the GPU): a saved plot holds the heatmaps it shows.
pub fn remember_pixels(ctx: &egui::Context, texture: egui::TextureId, pixels: Arc<ColorImage>) {
    ctx.data_mut(|d| d.insert_temp(pixels_id(texture), pixels));
}

/// Drops the pixels [`upload`] kept of a texture about to go.
pub fn forget_pixels(ctx: &egui::Context, texture: egui::TextureId) {
    ctx.data_mut(|d| d.remove::<Arc<ColorImage>>(pixels_id(texture)));
}

/// The pixels of a texture made through [`upload`] or [`remember_pixels`].
pub fn texture_pixels(ctx: &egui::Context, texture: egui::TextureId) -> Option<Arc<ColorImage>> {
    ctx.data(|d| d.get_temp(pixels_id(texture)))
}

/// A one-line legend: min, the colour bar, max, and what the colours mean.
/// Without a range (each head scaled to itself) the ends read "min" / "max".
pub fn colour_bar(ui: &mut egui::Ui, map: ColorMap, range: Option<ValueRange>, caption: &str) {
    let (low, high) = match range {
        Some(range) => (format_value(range.min), format_value(range.max)),
        None => ("min".to_string(), "max".to_string()),
    };
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 6.0;
        ui.label(egui::RichText::new(low).small());
        let width = 160.0;
        let (rect, response) =
            ui.allocate_exact_size(egui::vec2(width, 14.0), egui::Sense::hover());
        let painter = ui.painter_at(rect);
        let steps = 64;
        for step in 0..steps {
            let t0 = step as f32 / steps as f32;
            let t1 = (step + 1) as f32 / steps as f32;
            let [r, g, b] = map.rgb((t0 + t1) / 2.0);
            let cell = Rect::from_min_max(
                egui::pos2(rect.left() + t0 * width, rect.top()),
                egui::pos2(rect.left() + t1 * width + 0.5, rect.bottom()),
            );
            painter.rect_filled(cell, 0.0, Color32::from_rgb(r, g, b));
        }
        painter.rect_stroke(
            rect,
            0.0,
            Stroke::new(1.0, ui.visuals().weak_text_color()),
            egui::StrokeKind::Inside,
        );
        response.widget_info(|| {
            egui::WidgetInfo::labeled(
                egui::Role::Image,
                true,
                format!("colour bar {}", map.name()),
            )
        });
        ui.label(egui::RichText::new(high).small());
        // Cut to the room left (the whole caption on hover): a caption
        // wider than the row would widen the panel it is in.
        // (Screen readers read the whole caption.)
        let caption_label = ui
            .add(egui::Label::new(egui::RichText::new(caption).small().weak()).truncate())
            .on_hover_text(caption);
        caption_label.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, caption));
    });
}

/// A matrix value in a few significant digits.
pub fn format_value(value: f32) -> String {
    let magnitude = value.abs();
    if value.is_nan() {
        "masked (a causal query does not see this key)".into()
    } else if value == 0.0 {
        "0".into()
    } else if !(0.001..10_000.0).contains(&magnitude) {
        format!("{value:.2e}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_cells_are_hatched_grey_not_colours() {
        // A causal model's 4 × 4 matrix: NaN above the diagonal.
        let values: Vec<f32> = (0..16)
            .map(|k| if k % 4 > k / 4 { f32::NAN } else { 0.5 })
            .collect();
        assert!(values[1].is_nan() && values[3 * 4 + 3] == 0.5 && values[3 * 4].is_finite());
        let range = ValueRange::new(0.0, 1.0);
        let image = colour_image(&values, 4, ColorMap::default(), range);
        let [r, g, b] = ColorMap::default().rgb(range.normalise(0.5));
        assert_eq!(image.pixels[0], Color32::from_rgb(r, g, b));
        // (0, 1) and (0, 3) fall on different stripes.
        assert_eq!(image.pixels[1], MASKED_LIGHT);
        assert_eq!(image.pixels[3], MASKED_DARK);
        // No colour of the map is one of the greys.
        for step in 0..=100 {
            let [r, g, b] = ColorMap::default().rgb(step as f32 / 100.0);
            let colour = Color32::from_rgb(r, g, b);
            assert!(colour != MASKED_LIGHT && colour != MASKED_DARK);
        }
    }

    #[test]
    fn a_decoders_attention_is_scaled_without_the_first_token() {
        // Row 0 sees only key 0 (P = 1); the rest is small.
        let values = [1.0, f32::NAN, f32::NAN, 0.7, 0.3, f32::NAN, 0.6, 0.1, 0.3];
        let map = ColorMap::Viridis;
        let full = |without_first_token| ColourScale {
            rule: RangeRule::Full,
            without_first_token,
            log: false,
        };
        let (_, clipped) = picture(map, full(true), &values, 3);
        assert_eq!((clipped.min, clipped.max), (0.1, 0.3));
        let (_, whole) = picture(map, full(false), &values, 3);
        assert_eq!((whole.min, whole.max), (0.1, 1.0));
        // One step's row: without its first key.
        let row = row_range(map, &[0.9, 0.02, 0.08], true);
        assert_eq!((row.min, row.max), (0.02, 0.08));
    }

    #[test]
    fn union_covers_all_ranges() {
        let r = union(&[ValueRange::new(-1.0, 2.0), ValueRange::new(0.0, 5.0)]);
        assert_eq!((r.min, r.max), (-1.0, 5.0));
    }
}
