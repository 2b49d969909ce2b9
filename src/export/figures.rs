//! The exported pictures: a plain heatmap that holds exactly the matrix
//! (one cell per token pair), a labelled figure (title, token labels on
//! both axes, colour bar with ticks), and the grid of every head.

use super::typeset::{draw_text, draw_text_vertical, Align, Typesetter};
use crate::colormap::{ColorMap, ValueRange};
use image::{Rgb, RgbImage};

const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
const FRAME: Rgb<u8> = Rgb([60, 60, 60]);

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
    let mut img = RgbImage::new(side, side);
    paint_heatmap(&mut img, 0, 0, matrix, tokens, map, range, scale);
    img
}

/// Paints the heatmap with its top-left corner at (x0, y0); pixels outside
/// the image are skipped.
#[allow(clippy::too_many_arguments)]
fn paint_heatmap(
    img: &mut RgbImage,
    x0: u32,
    y0: u32,
    matrix: &[f32],
    tokens: usize,
    map: ColorMap,
    range: ValueRange,
    scale: u32,
) {
    let cell = scale as usize;
    for i in 0..tokens {
        for j in 0..tokens {
            let value = matrix.get(i * tokens + j).copied().unwrap_or(f32::NAN);
            let colour = Rgb(map.color(value, range));
            let (cx, cy) = (x0 as usize + j * cell, y0 as usize + i * cell);
            fill_rect(img, cx, cy, cell, cell, colour);
        }
    }
}

fn fill_rect(img: &mut RgbImage, x: usize, y: usize, w: usize, h: usize, colour: Rgb<u8>) {
    let (iw, ih) = (img.width() as usize, img.height() as usize);
    for py in y.min(ih)..(y + h).min(ih) {
        for px in x.min(iw)..(x + w).min(iw) {
            img.put_pixel(px as u32, py as u32, colour);
        }
    }
}

/// A one-pixel frame just outside the rectangle (x, y, w, h).
fn frame_around(img: &mut RgbImage, x: usize, y: usize, w: usize, h: usize) {
    if x == 0 || y == 0 {
        return;
    }
    fill_rect(img, x - 1, y - 1, w + 2, 1, FRAME);
    fill_rect(img, x - 1, y + h, w + 2, 1, FRAME);
    fill_rect(img, x - 1, y - 1, 1, h + 2, FRAME);
    fill_rect(img, x + w, y - 1, 1, h + 2, FRAME);
}

/// Tick labels for `count` evenly spaced values from `range.min` to
/// `range.max`, with enough decimals to tell neighbours apart and the same
/// number of decimals on every tick.
fn tick_labels(range: ValueRange, count: usize) -> Vec<(f32, String)> {
    let count = count.max(2);
    let (min, max) = (f64::from(range.min), f64::from(range.max));
    let step = (max - min) / (count - 1) as f64;
    let biggest = min.abs().max(max.abs());
    let scientific = biggest >= 1e5 || (biggest > 0.0 && biggest < 1e-3);
    let decimals = if step > 0.0 {
        (2.0 - step.log10().floor()).clamp(0.0, 8.0) as usize
    } else {
        3
    };
    (0..count)
        .map(|k| {
            let v = if k + 1 == count {
                max
            } else {
                min + step * k as f64
            };
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

/// Draws a vertical colour bar (high at the top) with a frame and five tick
/// values on its right, in space the caller reserved.
#[allow(clippy::too_many_arguments)]
fn draw_colour_bar(
    img: &mut RgbImage,
    ts: Option<&Typesetter>,
    x: usize,
    y: usize,
    width: usize,
    height: usize,
    map: ColorMap,
    range: ValueRange,
    tick_px: f32,
) {
    for row in 0..height {
        // Row centres sample the map from 1 (top) down to 0 (bottom).
        let t = 1.0 - (row as f32 + 0.5) / height as f32;
        fill_rect(img, x, y + row, width, 1, Rgb(map.rgb(t)));
    }
    frame_around(img, x, y, width, height);
    let Some(ts) = ts else { return };
    for (t, text) in tick_labels(range, 5) {
        let ty = y as f32 + (1.0 - t) * (height as f32 - 1.0);
        fill_rect(img, x + width + 1, ty.round() as usize, 4, 1, FRAME);
        draw_text(
            img,
            ts,
            &text,
            tick_px,
            (x + width + 8) as f32,
            ty,
            Align::Left,
        );
    }
}

fn colour_bar_label_width(ts: Option<&Typesetter>, range: ValueRange, tick_px: f32) -> usize {
    ts.map_or(0, |ts| {
        tick_labels(range, 5)
            .iter()
            .map(|(_, text)| ts.width(text, tick_px).ceil() as usize)
            .max()
            .unwrap_or(0)
    })
}

pub(super) fn label_of(labels: &[String], i: usize) -> String {
    labels.get(i).cloned().unwrap_or_else(|| i.to_string())
}

/// A figure for a paper: `title` on top, token labels on the left (rows,
/// queries) and below (columns, keys, reading upwards), the heatmap itself
/// framed in the middle and a colour bar with five tick values on the
/// right, on white. Cells are sized so the heatmap is about 960 pixels
/// across, but up to 128 tokens at least 12 pixels a cell so that every
/// token gets a readable label; beyond that cells shrink (to 4 pixels) and
/// only every k-th token is labelled. Missing labels fall back to position
/// numbers; long labels and titles are shortened with an ellipsis.
pub fn labelled_heatmap(
    matrix: &[f32],
    tokens: usize,
    labels: &[String],
    title: &str,
    map: ColorMap,
    range: ValueRange,
) -> RgbImage {
    let ts = Typesetter::new();
    let ts = ts.as_ref();
    let fill = 960usize.div_ceil(tokens.max(1));
    let cell = if tokens <= 128 {
        fill.clamp(12, 120)
    } else {
        fill.max(4)
    };
    let side = cell * tokens;
    let label_px = (cell as f32 * 0.95).clamp(13.0, 19.0);
    let title_px = (label_px * 1.5).max(22.0);
    let tick_px = label_px.max(15.0);
    let (_, label_line) = ts.map_or((0.0, 0), |t| t.metrics(label_px));
    // Label every k-th token so neighbouring labels do not overlap.
    let step = (label_line.saturating_sub(2)).div_ceil(cell).max(1);
    let shown: Vec<usize> = (0..tokens).step_by(step).collect();
    let max_label = label_px * 10.0;
    let texts: Vec<String> = shown
        .iter()
        .map(|&i| {
            ts.map_or_else(String::new, |t| {
                t.fit(&label_of(labels, i), label_px, max_label)
            })
        })
        .collect();
    let label_width = ts.map_or(0, |t| {
        texts
            .iter()
            .map(|s| t.width(s, label_px).ceil() as usize)
            .max()
            .unwrap_or(0)
    });

    let margin = 24;
    let tick = 4;
    let title_height = ts.map_or(0, |t| t.metrics(title_px).1);
    let bar_gap = 28;
    let bar_width = 28;
    let bar_labels = colour_bar_label_width(ts, range, tick_px);

    let left_part = margin + label_width + tick + 4;
    let content_width = left_part + side + bar_gap + bar_width + 10 + bar_labels + margin;
    // A long title may widen the figure, up to a point; the rest is cut.
    let title_room = content_width.max(1600) - 2 * margin;
    let title = ts.map_or_else(String::new, |t| t.fit(title, title_px, title_room as f32));
    let title_width = ts.map_or(0, |t| t.width(&title, title_px).ceil() as usize);
    let width = content_width.max(title_width + 2 * margin);
    // Content is centred when the title made the figure wider.
    let hx = (width - content_width) / 2 + left_part;
    let hy = margin + title_height + margin / 2;
    let height = hy + side + tick + 4 + label_width + margin;
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return RgbImage::new(0, 0);
    };
    let mut img = RgbImage::from_pixel(w, h, WHITE);

    paint_heatmap(
        &mut img,
        hx as u32,
        hy as u32,
        matrix,
        tokens,
        map,
        range,
        cell as u32,
    );
    frame_around(&mut img, hx, hy, side, side);
    draw_colour_bar(
        &mut img,
        ts,
        hx + side + bar_gap,
        hy,
        bar_width,
        side,
        map,
        range,
        tick_px,
    );

    let Some(ts) = ts else { return img };
    // The title is centred over the heatmap unless that would cut it off.
    let centre = (hx + side / 2) as f32;
    let half = title_width as f32 / 2.0;
    // max/min rather than clamp: clamp panics if the bounds cross.
    let centre = centre
        .min((width - margin) as f32 - half)
        .max(margin as f32 + half);
    let title_y = margin as f32 + title_height as f32 / 2.0;
    draw_text(
        &mut img,
        ts,
        &title,
        title_px,
        centre,
        title_y,
        Align::Centre,
    );

    for (&i, text) in shown.iter().zip(&texts) {
        let mid = (i * cell) as f32 + cell as f32 / 2.0;
        let row_y = hy as f32 + mid;
        fill_rect(&mut img, hx - 1 - tick, row_y as usize, tick, 1, FRAME);
        draw_text(
            &mut img,
            ts,
            text,
            label_px,
            (hx - 1 - tick - 3) as f32,
            row_y,
            Align::Right,
        );
        let col_x = hx as f32 + mid;
        fill_rect(&mut img, col_x as usize, hy + side + 1, 1, tick, FRAME);
        draw_text_vertical(
            &mut img,
            ts,
            text,
            label_px,
            col_x,
            (hy + side + 1 + tick + 3) as f32,
        );
    }
    img
}

/// How the panels of a [`grid_image`] are coloured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GridRange {
    /// One range for every panel, so colours compare across heads; a colour
    /// bar for it is drawn on the right.
    Shared(ValueRange),
    /// Each panel uses [`ValueRange::auto`] of its own values, which shows
    /// every head's pattern but makes colours incomparable; no colour bar.
    PerPanel,
}

/// Every panel as a small heatmap with its label above it, `columns`
/// panels a row (the head count, for layers as rows), on white. Each panel
/// has cells of `ceil(128 / tokens)` pixels, so about 128 pixels across.
pub fn grid_image(
    panels: &[(String, Vec<f32>)],
    tokens: usize,
    columns: usize,
    map: ColorMap,
    ranges: GridRange,
) -> RgbImage {
    let ts = Typesetter::new();
    let ts = ts.as_ref();
    let columns = columns.max(1).min(panels.len().max(1));
    let rows = panels.len().div_ceil(columns);
    let cell = 128usize.div_ceil(tokens.max(1)).max(1);
    let side = cell * tokens;
    let label_px = 14.0;
    let tick_px = 15.0;
    let label_height = ts.map_or(0, |t| t.metrics(label_px).1);
    let margin = 16;
    let gap_x = 14;
    let gap_y = 10;
    let pitch_x = side + gap_x;
    let pitch_y = label_height + 4 + side + gap_y;
    let bar = match ranges {
        GridRange::Shared(range) => Some((
            range,
            28 + 24 + 10 + colour_bar_label_width(ts, range, tick_px),
        )),
        GridRange::PerPanel => None,
    };
    let width = 2 * margin + columns * pitch_x - gap_x + bar.map_or(0, |(_, w)| w);
    let height = 2 * margin + rows * pitch_y - gap_y.min(rows * pitch_y);
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return RgbImage::new(0, 0);
    };
    let mut img = RgbImage::from_pixel(w, h, WHITE);

    for (k, (label, matrix)) in panels.iter().enumerate() {
        let x = margin + (k % columns) * pitch_x;
        let y = margin + (k / columns) * pitch_y;
        let hy = y + label_height + 4;
        let range = match ranges {
            GridRange::Shared(range) => range,
            GridRange::PerPanel => ValueRange::auto(map, matrix),
        };
        paint_heatmap(
            &mut img,
            x as u32,
            hy as u32,
            matrix,
            tokens,
            map,
            range,
            cell as u32,
        );
        frame_around(&mut img, x, hy, side, side);
        if let Some(ts) = ts {
            let text = ts.fit(label, label_px, (side + gap_x / 2) as f32);
            let centre = x as f32 + side as f32 / 2.0;
            draw_text(
                &mut img,
                ts,
                &text,
                label_px,
                centre,
                y as f32 + label_height as f32 / 2.0,
                Align::Centre,
            );
        }
    }
    if let Some((range, _)) = bar {
        let x = margin + columns * pitch_x - gap_x + 28;
        let top = margin + label_height + 4;
        let bar_height = (rows * pitch_y)
            .saturating_sub(gap_y + label_height + 4)
            .max(side);
        draw_colour_bar(&mut img, ts, x, top, 24, bar_height, map, range, tick_px);
    }
    img
}
