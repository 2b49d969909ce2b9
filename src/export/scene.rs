//! A figure described once: a page of `width` × `height` points (1/72 in)
//! holding rectangles, embedded images, text, polylines and dots. Each
//! exported figure (the labelled heatmap, the grid of heads, a plot of the
//! app captured from the screen) is built as a [`Scene`], and
//! [`super::render`] writes the one description as SVG, PDF or PNG, so the
//! three files show the same figure.
//!
//! Text is kept as text, in egui's own font (the one the app's screen and
//! [`super::typeset`] measure with), so it stays selectable in the PDF and
//! searchable in both vector files.

use image::RgbImage;
use std::fmt::Write;

/// An sRGB colour.
pub type Colour = [u8; 3];

/// The colour of text and frames.
pub const INK: Colour = [20, 20, 20];
pub const FRAME: Colour = [60, 60, 60];

/// How a text is placed horizontally relative to its anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One thing drawn, in points from the top-left corner.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A rectangle, filled and/or outlined (outline width in points).
    Rect {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        fill: Option<Colour>,
        stroke: Option<(Colour, f32)>,
    },
    /// A picture stretched over the rectangle with crisp pixels: a heatmap
    /// holds one pixel per matrix entry.
    Image {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
        image: RgbImage,
    },
    /// One line of text. `y` is the middle of its line box; `vertical`
    /// turns it 90° anticlockwise about the anchor (reading bottom to top).
    Text {
        text: String,
        x: f32,
        y: f32,
        size: f32,
        anchor: Anchor,
        vertical: bool,
        colour: Colour,
        bold: bool,
    },
    /// Connected line segments (dashed: in short dashes).
    Polyline {
        points: Vec<[f32; 2]>,
        colour: Colour,
        width: f32,
        dashed: bool,
    },
    /// A closed, filled polygon.
    Polygon { points: Vec<[f32; 2]>, fill: Colour },
    /// A filled circle (a plot marker).
    Dot {
        x: f32,
        y: f32,
        radius: f32,
        fill: Colour,
    },
}

/// A figure of `width` × `height` points on white.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scene {
    pub width: f32,
    pub height: f32,
    pub items: Vec<Item>,
}

/// The fonts named in the files: egui's Ubuntu Light (carried by the
/// binary, so the PDF and PNG use it), then common sans-serif faces for a
/// viewer of the SVG that lacks it.
pub const FONT_FAMILY: &str = "Ubuntu, 'DejaVu Sans', Helvetica, Arial, sans-serif";

impl Scene {
    pub fn new(width: f32, height: f32) -> Self {
        Scene {
            width,
            height,
            items: Vec::new(),
        }
    }

    pub fn push(&mut self, item: Item) {
        self.items.push(item);
    }

    /// A filled rectangle.
    pub fn fill(&mut self, x: f32, y: f32, width: f32, height: f32, colour: Colour) {
        self.push(Item::Rect {
            x,
            y,
            width,
            height,
            fill: Some(colour),
            stroke: None,
        });
    }

    /// A thin frame around the rectangle.
    pub fn frame(&mut self, x: f32, y: f32, width: f32, height: f32, line: f32) {
        self.push(Item::Rect {
            x,
            y,
            width,
            height,
            fill: None,
            stroke: Some((FRAME, line)),
        });
    }

    /// A straight line.
    pub fn line(&mut self, from: [f32; 2], to: [f32; 2], colour: Colour, width: f32) {
        self.push(Item::Polyline {
            points: vec![from, to],
            colour,
            width,
            dashed: false,
        });
    }

    /// Text in ink, its line box centred on `y`.
    pub fn text(&mut self, text: &str, x: f32, y: f32, size: f32, anchor: Anchor) {
        self.push(Item::Text {
            text: text.to_string(),
            x,
            y,
            size,
            anchor,
            vertical: false,
            colour: INK,
            bold: false,
        });
    }

    /// Text read bottom to top, ending at (x, y) and centred on column x.
    pub fn vertical_text(&mut self, text: &str, x: f32, y: f32, size: f32) {
        self.push(Item::Text {
            text: text.to_string(),
            x,
            y,
            size,
            anchor: Anchor::End,
            vertical: true,
            colour: INK,
            bold: false,
        });
    }

    /// The texts of the figure, in order (for tests and accessibility).
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|item| match item {
            Item::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
    }

    /// The figure as an SVG document, sized in points.
    pub fn to_svg(&self) -> String {
        let (w, h) = (num(self.width), num(self.height));
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}pt\" height=\"{h}pt\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{}\">\n\
             <rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
            escape(FONT_FAMILY)
        );
        for item in &self.items {
            item.write_svg(&mut out);
        }
        out.push_str("</svg>\n");
        out
    }
}

impl Item {
    /// Appends this item as one SVG element on a line of its own.
    fn write_svg(&self, out: &mut String) {
        // (Writing to a String cannot fail.)
        let _ = match self {
            Item::Rect {
                x,
                y,
                width,
                height,
                fill,
                stroke,
            } => {
                let stroke = stroke.map_or(String::new(), |(colour, line)| {
                    format!(" stroke=\"{}\" stroke-width=\"{}\"", hex(colour), num(line))
                });
                writeln!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{stroke}/>",
                    num(*x),
                    num(*y),
                    num(*width),
                    num(*height),
                    fill.map_or("none".into(), hex),
                )
            }
            Item::Image {
                x,
                y,
                width,
                height,
                image,
            } => writeln!(
                out,
                "<image x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" \
                 preserveAspectRatio=\"none\" image-rendering=\"pixelated\" \
                 style=\"image-rendering:pixelated\" href=\"{}\"/>",
                num(*x),
                num(*y),
                num(*width),
                num(*height),
                png_data_uri(image),
            ),
            Item::Text {
                text,
                x,
                y,
                size,
                anchor,
                vertical,
                colour,
                bold,
            } => {
                // The line box is centred on the anchor: the baseline sits
                // 0.37 em below it (Ubuntu's ascent is 0.93 em, its
                // descent 0.19 em).
                let shift = size * 0.37;
                let (tx, ty) = if *vertical {
                    (x + shift, *y)
                } else {
                    (*x, y + shift)
                };
                let anchor = match anchor {
                    Anchor::Start => "",
                    Anchor::Middle => " text-anchor=\"middle\"",
                    Anchor::End => " text-anchor=\"end\"",
                };
                let rotate = if *vertical {
                    format!(" transform=\"rotate(-90 {} {})\"", num(tx), num(ty))
                } else {
                    String::new()
                };
                // XML holds no control characters (a token may be one).
                let text: String = text.chars().filter(|c| !c.is_control()).collect();
                writeln!(
                    out,
                    "<text x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"{}\" \
                     fill=\"{}\" xml:space=\"preserve\"{anchor}{rotate}>{}</text>",
                    num(tx),
                    num(ty),
                    num(*size),
                    if *bold { "bold" } else { "300" },
                    hex(*colour),
                    escape(&text),
                )
            }
            Item::Polyline {
                points,
                colour,
                width,
                dashed,
            } => {
                let dashes = if *dashed {
                    format!(
                        " stroke-dasharray=\"{} {}\"",
                        num(width * 2.5),
                        num(width * 2.0)
                    )
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" \
                     stroke-linejoin=\"round\" stroke-linecap=\"round\"{dashes}/>",
                    points_attribute(points),
                    hex(*colour),
                    num(*width),
                )
            }
            Item::Polygon { points, fill } => writeln!(
                out,
                "<polygon points=\"{}\" fill=\"{}\"/>",
                points_attribute(points),
                hex(*fill)
            ),
            Item::Dot { x, y, radius, fill } => writeln!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"/>",
                num(*x),
                num(*y),
                num(*radius),
                hex(*fill)
            ),
        };
    }
}

/// Text or an attribute value with XML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most three decimals (a thousandth of a point).
fn num(v: f32) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

fn hex([r, g, b]: Colour) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn points_attribute(points: &[[f32; 2]]) -> String {
    let mut out = String::new();
    for [x, y] in points {
        let _ = write!(out, "{},{} ", num(*x), num(*y));
    }
    out.trim_end().to_string()
}

/// The image as a PNG `data:` URI.
fn png_data_uri(image: &RgbImage) -> String {
    use base64::Engine;
    use image::ImageEncoder;
    let mut png = Vec::new();
    let encoded = image::codecs::png::PngEncoder::new(&mut png).write_image(
        image.as_raw(),
        image.width(),
        image.height(),
        image::ExtendedColorType::Rgb8,
    );
    if encoded.is_err() {
        return String::new();
    }
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.12345), "0.123");
        assert_eq!(num(-0.0001), "0");
        assert_eq!(num(f32::NAN), "0");
    }

    #[test]
    fn text_is_escaped_and_kept_as_text() {
        let mut scene = Scene::new(100.0, 50.0);
        scene.text("a<b & \"c\"", 10.0, 10.0, 9.0, Anchor::Start);
        let svg = scene.to_svg();
        assert!(svg.contains(">a&lt;b &amp; &quot;c&quot;</text>"));
        assert!(svg.contains("width=\"100pt\""));
    }
}
