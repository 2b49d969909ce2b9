//! The exported pictures: a plain heatmap that holds exactly the matrix
//! (one cell per token pair, a raster image), and the figures for papers,
//! each described once as a [`Scene`] sized by a [`FigureStyle`]: the
//! labelled heatmap (title, token labels on both axes, colour bar with
//! ticks) and the grid of every head.

use super::scene::{Anchor, Scene};
use super::style::FigureStyle;
use super::typeset::Typesetter;
use crate::colormap::{ColorMap, ColourScale, ValueRange};
use image::{Rgb, RgbImage};

/// Smallest whole-pixel cell size that makes a `tokens`-wide heatmap at
/// least 512 pixels across (at least 1).
pub fn default_scale(tokens: usize) -> u32 {
    if tokens == 0 {
        return 1;
    }
    u32::try_from(512usize.div_ceil(tokens)).unwrap_or(1).max(1)
}

/// Exactly the matrix and nothing else: T×T cells of `scale`×`scale` pixels,
/// row i (query/token i) top to bottom, column j left to right. Missing
/// values (a short `matrix`) show the NaN colour; `scale` 0 is taken as 1,
/// and a scale that would make the image wider than 32768 pixels is reduced
/// (to no less than 1) rather than exhaust memory.
pub fn heatmap_image(
    matrix: &[f32],
    tokens: usize,
    map: ColorMap,
    range: ValueRange,
    scale: u32,
) -> RgbImage {
    let most = u32::try_from(32768 / tokens.max(1)).unwrap_or(1).max(1);
    let scale = scale.clamp(1, most);
    let side = u32::try_from(tokens)
        .unwrap_or(u32::MAX)
        .saturating_mul(scale);
    RgbImage::from_fn(side, side, |x, y| {
        let (i, j) = ((y / scale) as usize, (x / scale) as usize);
        let value = matrix.get(i * tokens + j).copied().unwrap_or(f32::NAN);
        Rgb(map.color(value, range))
    })
}

/// Tick labels at round values (steps of 1, 2 or 5 × 10ᵏ, see
/// [`super::ticks`]) within `range.min`..`range.max`, at most `count` of
/// them, each with the decimals its step needs, and where each falls on
/// the bar (0 at `min`, 1 at `max`).
fn tick_labels(range: ValueRange, count: usize) -> Vec<(f32, String)> {
    let (min, max) = (f64::from(range.min), f64::from(range.max));
    let ticks = super::ticks::nice_ticks(min, max, count.max(2));
    let step = match ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    let biggest = min.abs().max(max.abs());
    let scientific = biggest >= 1e5 || (biggest > 0.0 && biggest < 1e-3);
    let decimals = super::ticks::decimals(step);
    ticks
        .into_iter()
        .map(|v| {
            let text = if scientific {
                format!("{v:.2e}").replace('-', "\u{2212}")
            } else {
                let s = format!("{v:.decimals$}");
                match s.strip_prefix('-') {
                    // "-0.000" reads as a sign error; show zero unsigned.
                    Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
                    // A typographic minus, as in printed figures.
                    Some(rest) => format!("\u{2212}{rest}"),
                    None => s,
                }
            };
            let t = if max > min {
                ((v - min) / (max - min)) as f32
            } else {
                0.5
            };
            (t, text)
        })
        .collect()
}

pub(super) fn label_of(labels: &[String], i: usize) -> String {
    labels.get(i).cloned().unwrap_or_else(|| i.to_string())
}

/// The parts shared by the figures: measuring text, the margins and the
/// colour bar.
struct Layout {
    ts: Option<Typesetter>,
    /// The font size of titles, in points.
    font: f32,
    /// The font size of token and tick labels.
    small: f32,
    margin: f32,
    /// A hairline: frames and ticks.
    line: f32,
}

impl Layout {
    fn new(style: FigureStyle) -> Self {
        let style = style.clamped();
        let font = style.font_size;
        Layout {
            ts: Typesetter::new(),
            font,
            small: (font * 0.85).max(6.5),
            margin: (font * 0.6).round(),
            line: 0.5,
        }
    }

    fn width(&self, text: &str, size: f32) -> f32 {
        self.ts.as_ref().map_or(0.0, |t| t.width(text, size))
    }

    fn fit(&self, text: &str, size: f32, room: f32) -> String {
        self.ts
            .as_ref()
            .map_or_else(|| text.to_string(), |t| t.fit(text, size, room))
    }

    /// The height of a line of text of `size`.
    fn line_height(&self, size: f32) -> f32 {
        size * 1.2
    }

    /// The width a colour bar with its tick labels takes, from its left edge.
    fn colour_bar_width(&self, range: ValueRange) -> f32 {
        let labels = tick_labels(range, 5)
            .iter()
            .map(|(_, text)| self.width(text, self.small))
            .fold(0.0, f32::max);
        self.bar_width() + self.tick() + 2.0 + labels
    }

    fn bar_width(&self) -> f32 {
        (self.font * 0.9).round()
    }

    fn tick(&self) -> f32 {
        (self.font * 0.3).max(2.0)
    }

    /// A vertical colour bar (high at the top) with five tick values on its
    /// right, at (x, y), `height` tall.
    fn colour_bar(
        &self,
        scene: &mut Scene,
        x: f32,
        y: f32,
        height: f32,
        map: ColorMap,
        range: ValueRange,
    ) {
        // 256 rows sample the map from 1 (top) down to 0 (bottom).
        let steps = 256u32;
        let gradient = RgbImage::from_fn(1, steps, |_, row| {
            Rgb(map.rgb(1.0 - (row as f32 + 0.5) / steps as f32))
        });
        let width = self.bar_width();
        scene.push(super::scene::Item::Image {
            x,
            y,
            width,
            height,
            image: gradient,
        });
        scene.frame(x, y, width, height, self.line);
        for (t, text) in tick_labels(range, 5) {
            let ty = y + (1.0 - t) * height;
            scene.line(
                [x + width, ty],
                [x + width + self.tick(), ty],
                super::scene::FRAME,
                self.line,
            );
            scene.text(
                &text,
                x + width + self.tick() + 2.0,
                ty,
                self.small,
                Anchor::Start,
            );
        }
    }
}

/// A figure for a paper, `style.width` wide: `title` on top, token labels
/// on the left (rows, queries) and below (columns, keys, reading upwards),
/// the heatmap itself (one image, a pixel per matrix entry) framed in the
/// middle and a colour bar with five tick values on the right, on white.
/// Where cells are smaller than a line of text only every k-th token is
/// labelled. Missing labels fall back to position numbers; long labels and
/// titles are shortened with an ellipsis.
pub fn labelled_figure(
    matrix: &[f32],
    tokens: usize,
    labels: &[String],
    title: &str,
    map: ColorMap,
    range: ValueRange,
    style: FigureStyle,
) -> Scene {
    let layout = Layout::new(style);
    let width = style.clamped().width_points();
    let m = layout.margin;
    let small = layout.small;
    let tick = layout.tick();
    let bar = layout.colour_bar_width(range);
    let bar_gap = layout.font;
    let label_texts = |max: f32| -> Vec<String> {
        (0..tokens)
            .map(|i| layout.fit(&label_of(labels, i), small, max))
            .collect()
    };
    // Long labels may take up to eight ems, fewer if the heatmap would
    // shrink below half the width.
    let mut texts = label_texts(small * 8.0);
    let widest = |texts: &[String]| {
        texts
            .iter()
            .map(|t| layout.width(t, small))
            .fold(0.0, f32::max)
    };
    let mut label_width = widest(&texts);
    let room = |label_width: f32| width - 2.0 * m - label_width - tick - 2.0 - bar_gap - bar;
    if room(label_width) < width * 0.5 {
        texts = label_texts(small * 4.0);
        label_width = widest(&texts);
    }
    let side = room(label_width).max(tokens.min(1) as f32);
    let cell = side / tokens.max(1) as f32;
    // Labels as large as a row, between 6 pt and the small size; where
    // rows are smaller still, every k-th token is labelled so neighbouring
    // labels do not overlap.
    let label_size = cell.clamp(6.0, small);
    let step = ((label_size / cell).ceil() as usize).max(1);

    let title_size = layout.font;
    let title = layout.fit(title, title_size, width - 2.0 * m);
    let title_height = if title.is_empty() {
        0.0
    } else {
        layout.line_height(title_size) + m / 2.0
    };
    let hx = m + label_width + tick + 2.0;
    let hy = m + title_height;
    let height = hy + side + tick + 2.0 + label_width + m;
    let mut scene = Scene::new(width, height);
    if tokens == 0 {
        return scene;
    }
    scene.push(super::scene::Item::Image {
        x: hx,
        y: hy,
        width: side,
        height: side,
        image: heatmap_image(matrix, tokens, map, range, 1),
    });
    scene.frame(hx, hy, side, side, layout.line);
    layout.colour_bar(&mut scene, hx + side + bar_gap, hy, side, map, range);
    if !title.is_empty() {
        // Centred over the heatmap unless that would cut it off.
        let half = layout.width(&title, title_size) / 2.0;
        let centre = (hx + side / 2.0).min(width - m - half).max(m + half);
        scene.text(
            &title,
            centre,
            m + layout.line_height(title_size) / 2.0,
            title_size,
            Anchor::Middle,
        );
    }
    for i in (0..tokens).step_by(step) {
        let mid = (i as f32 + 0.5) * cell;
        let (row_y, col_x) = (hy + mid, hx + mid);
        scene.line(
            [hx - tick, row_y],
            [hx, row_y],
            super::scene::FRAME,
            layout.line,
        );
        scene.text(&texts[i], hx - tick - 2.0, row_y, label_size, Anchor::End);
        scene.line(
            [col_x, hy + side],
            [col_x, hy + side + tick],
            super::scene::FRAME,
            layout.line,
        );
        scene.vertical_text(&texts[i], col_x, hy + side + tick + 2.0, label_size);
    }
    scene
}

/// How the panels of a [`grid_figure`] are coloured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GridRange {
    /// One range for every panel, so colours compare across heads; a colour
    /// bar for it is drawn on the right.
    Shared(ValueRange),
    /// Each panel has its own range by the [`ColourScale`]'s rule (the
    /// panels' values already as it colours them), which shows every
    /// head's pattern but makes colours incomparable; no colour bar.
    PerPanel(ColourScale),
}

/// Every panel as a small heatmap (one image each) with its label above
/// it, `columns` panels a row (the head count, for layers as rows), on
/// white, `style.width` wide; with a shared range, a colour bar on the
/// right.
pub fn grid_figure(
    panels: &[(String, Vec<f32>)],
    tokens: usize,
    columns: usize,
    map: ColorMap,
    ranges: GridRange,
    style: FigureStyle,
) -> Scene {
    let layout = Layout::new(style);
    let width = style.clamped().width_points();
    let m = layout.margin;
    let columns = columns.max(1).min(panels.len().max(1));
    let rows = panels.len().div_ceil(columns);
    let label_size = (layout.small * 0.9).max(6.0);
    let label_height = layout.line_height(label_size);
    let gap = (layout.font * 0.5).round();
    let bar = match ranges {
        GridRange::Shared(range) => layout.font + layout.colour_bar_width(range),
        GridRange::PerPanel(_) => 0.0,
    };
    let side = ((width - 2.0 * m - bar - gap * (columns as f32 - 1.0)) / columns as f32).max(1.0);
    let pitch_x = side + gap;
    let pitch_y = label_height + side + gap;
    let height = 2.0 * m + rows as f32 * pitch_y - gap;
    let mut scene = Scene::new(width, height.max(2.0 * m));
    if tokens == 0 {
        return scene;
    }
    for (k, (label, matrix)) in panels.iter().enumerate() {
        let x = m + (k % columns) as f32 * pitch_x;
        let y = m + (k / columns) as f32 * pitch_y;
        let range = match ranges {
            GridRange::Shared(range) => range,
            GridRange::PerPanel(scale) => scale.range(map, matrix, tokens),
        };
        let text = layout.fit(label, label_size, side + gap * 0.8);
        scene.text(
            &text,
            x + side / 2.0,
            y + label_height / 2.0,
            label_size,
            Anchor::Middle,
        );
        scene.push(super::scene::Item::Image {
            x,
            y: y + label_height,
            width: side,
            height: side,
            image: heatmap_image(matrix, tokens, map, range, 1),
        });
        scene.frame(x, y + label_height, side, side, layout.line);
    }
    if let GridRange::Shared(range) = ranges {
        let x = m + columns as f32 * pitch_x - gap + layout.font;
        let top = m + label_height;
        let bar_height = (rows as f32 * pitch_y - gap - label_height).max(side);
        layout.colour_bar(&mut scene, x, top, bar_height, map, range);
    }
    scene
}

/// The bare matrix as a figure `style.width` wide: the heatmap alone, one
/// image with a pixel per entry.
pub fn bare_figure(
    matrix: &[f32],
    tokens: usize,
    map: ColorMap,
    range: ValueRange,
    style: FigureStyle,
) -> Scene {
    let side = style.clamped().width_points();
    let mut scene = Scene::new(side, side);
    if tokens > 0 {
        scene.push(super::scene::Item::Image {
            x: 0.0,
            y: 0.0,
            width: side,
            height: side,
            image: heatmap_image(matrix, tokens, map, range, 1),
        });
    }
    scene
}
