//! A plot of the study's views saved as PNG, SVG or PDF, from the shapes it
//! drew on screen.
//!
//! Each plot is drawn through the widget
//! [`figure`](crate::app::widgets::plots::figure): a title with save
//! buttons, then the plot and its legend; it notes which of egui's shapes
//! it added. A click starts a [`PlotExport`]: the next frame lays the
//! figure out at the width a paper gives it (see [`paper_width`]) without
//! the buttons; its shapes (egui_plot's axes, lines, markers, the legend,
//! heatmap textures) are translated into an [`export::Scene`] (text stays
//! text), scaled so its text has the chosen size, and after the save
//! dialog written in the chosen format like every other export. Those
//! frames are drawn in the light theme, so the paper gets dark ink on
//! white whatever the window's theme.
//!
//! Figures report where they are through egui's per-frame memory (keyed by
//! the figure's name), so the views need no extra plumbing beyond the one
//! [`ViewAction`](crate::app::views::shared::ViewAction) that asks for the
//! export.

use super::dialogs::Dialog;
use crate::app::widgets::heatmap::texture_pixels;
use crate::app::widgets::plots::{drawn_id, saving_id, Drawn, SaveRequest, Saving};
use crate::export::scene::{Anchor, Item};
use crate::export::{self, FigureFormat, FigureStyle, Scene};
use egui::epaint::{self, Color32, Shape};
use egui::{Pos2, Rect};
use image::{Rgb, RgbImage};
use std::path::{Path, PathBuf};

/// The size of the screen's body text, which the chosen font size replaces.
const SCREEN_TEXT: f32 = 12.5;

/// The width (screen points) a figure is laid out in while it is saved:
/// scaled to the paper's width, its body text is then `style.font_size`.
pub fn paper_width(style: FigureStyle) -> f32 {
    let style = style.clamped();
    style.width_points() * SCREEN_TEXT / style.font_size
}

/// What an export is waiting for.
enum Stage {
    /// Frames drawn at the paper's width without the save buttons: the
    /// second after this pass is captured.
    Layout { asked_in_pass: u64 },
    /// The save dialog, with the figure ready.
    Dialog { scene: Scene, path: Dialog },
}

/// The plot being saved, if any, and where tests save plots.
#[derive(Default)]
pub struct PlotSaving {
    /// The plot being saved (one at a time).
    pub export: Option<PlotExport>,
    /// Save plots here instead of asking (tests cannot open dialogs); the
    /// format is the one asked for, whatever the extension.
    pub target: Option<PathBuf>,
}

/// One plot being exported.
pub struct PlotExport {
    request: SaveRequest,
    /// The window's theme, back once the figure is captured.
    theme: egui::ThemePreference,
    style: FigureStyle,
    /// Write here instead of asking (tests, which cannot open dialogs).
    target: Option<PathBuf>,
    stage: Stage,
}

/// What became of an export this frame.
pub enum Outcome {
    Saved(PathBuf),
    Cancelled,
    Failed(String),
}

impl PlotExport {
    /// Starts exporting a figure; `target` skips the save dialog.
    pub fn start(
        ctx: &egui::Context,
        request: SaveRequest,
        style: FigureStyle,
        target: Option<PathBuf>,
    ) -> Self {
        let saving = Saving {
            name: request.name.clone(),
            width: paper_width(style),
        };
        ctx.data_mut(|d| d.insert_temp(saving_id(), saving));
        let theme = ctx.options(|o| o.theme_preference);
        ctx.set_theme(egui::Theme::Light);
        ctx.request_repaint();
        PlotExport {
            request,
            theme,
            style,
            target,
            stage: Stage::Layout {
                asked_in_pass: ctx.cumulative_pass_nr(),
            },
        }
    }

    /// Moves the export on; call once per frame after the views are drawn.
    /// `ask_path` opens the save dialog for a suggested file name.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        ask_path: impl FnOnce(String, FigureFormat) -> Dialog,
    ) -> Option<Outcome> {
        let format = self.request.format;
        match &mut self.stage {
            Stage::Layout { asked_in_pass } => {
                if ctx.cumulative_pass_nr() <= *asked_in_pass + 1 {
                    // This pass drew the figure before the export began, or
                    // at the paper's width for the first time (egui_plot
                    // sizes its axes from the frame before).
                    ctx.request_repaint();
                    return None;
                }
                let drawn = ctx
                    .data(|d| d.get_temp::<Drawn>(drawn_id(&self.request.name)))
                    .filter(|drawn| drawn.pass == ctx.cumulative_pass_nr());
                end_saving(ctx, self.theme);
                let Some(drawn) = drawn else {
                    return Some(Outcome::Failed("the plot is no longer on screen".into()));
                };
                let scene = capture(ctx, &drawn, self.style);
                if scene.items.is_empty() {
                    return Some(Outcome::Failed(
                        "the plot is not visible in the window".into(),
                    ));
                }
                if let Some(target) = self.target.take() {
                    return Some(save(&scene, format, &target));
                }
                let name = format!("{}.{}", self.request.name, format.extension());
                let path = ask_path(name, format);
                self.stage = Stage::Dialog { scene, path };
                None
            }
            Stage::Dialog { scene, path } => match path.poll(ctx)? {
                Some(path) => {
                    // The extension typed wins over the button pressed.
                    let format = FigureFormat::of_path(&path).unwrap_or(format);
                    Some(save(scene, format, &path))
                }
                None => Some(Outcome::Cancelled),
            },
        }
    }
}

/// Ends the frames drawn for the paper: the buttons and the theme come
/// back.
fn end_saving(ctx: &egui::Context, theme: egui::ThemePreference) {
    ctx.data_mut(|d| d.remove::<Saving>(saving_id()));
    ctx.set_theme(theme);
}

fn save(scene: &Scene, format: FigureFormat, path: &Path) -> Outcome {
    match export::save_scene(scene, format, path) {
        Ok(()) => Outcome::Saved(path.to_path_buf()),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// The shapes a figure drew, as a scene: moved to its top-left corner and
/// scaled so the screen's body text becomes `style.font_size` points (and
/// no wider than the paper).
fn capture(ctx: &egui::Context, drawn: &Drawn, style: FigureStyle) -> Scene {
    let style = style.clamped();
    let rect = drawn.rect;
    // A white margin all round, in points on paper.
    let margin = 4.0;
    let room = style.width_points() - 2.0 * margin;
    let scale = (style.font_size / SCREEN_TEXT).min(room / rect.width().max(1.0));
    let mut translate = Translate {
        ctx,
        origin: rect.min - egui::vec2(margin, margin) / scale,
        scale,
        scene: Scene::new(
            rect.width() * scale + 2.0 * margin,
            rect.height() * scale + 2.0 * margin,
        ),
    };
    let shapes: Vec<Shape> = ctx.graphics(|g| {
        g.get(drawn.layer).map_or_else(Vec::new, |list| {
            list.all_entries()
                .skip(drawn.shapes.0)
                .take(drawn.shapes.1.saturating_sub(drawn.shapes.0))
                .map(|clipped| clipped.shape.clone())
                .collect()
        })
    });
    for shape in &shapes {
        translate.shape(shape);
    }
    translate.scene
}

/// Turns egui's shapes into scene items.
struct Translate<'a> {
    ctx: &'a egui::Context,
    origin: Pos2,
    scale: f32,
    scene: Scene,
}

impl Translate<'_> {
    fn point(&self, p: Pos2) -> [f32; 2] {
        [
            (p.x - self.origin.x) * self.scale,
            (p.y - self.origin.y) * self.scale,
        ]
    }

    /// A colour for the paper, translucent ones over white; `None` for
    /// nothing visible.
    fn colour(&self, colour: Color32) -> Option<[u8; 3]> {
        if colour.a() == 0 {
            return None;
        }
        let [r, g, b, a] = colour.to_srgba_unmultiplied();
        let over_white = |c: u8| {
            (f32::from(c) * f32::from(a) / 255.0 + 255.0 * (1.0 - f32::from(a) / 255.0)) as u8
        };
        Some([over_white(r), over_white(g), over_white(b)])
    }

    fn shape(&mut self, shape: &Shape) {
        match shape {
            Shape::Vec(shapes) => {
                for shape in shapes {
                    self.shape(shape);
                }
            }
            Shape::Rect(rect) => self.rect(rect),
            Shape::Circle(circle) => {
                let [x, y] = self.point(circle.center);
                let radius = circle.radius * self.scale;
                if let Some(fill) = self.colour(circle.fill) {
                    self.scene.push(Item::Dot { x, y, radius, fill });
                }
            }
            Shape::LineSegment { points, stroke } => {
                self.polyline(points, stroke.width, stroke.color, false);
            }
            Shape::Path(path) => {
                if let Some(fill) = self.colour(path.fill).filter(|_| path.closed) {
                    let points = path.points.iter().map(|p| self.point(*p)).collect();
                    self.scene.push(Item::Polygon { points, fill });
                }
                if let epaint::ColorMode::Solid(colour) = path.stroke.color {
                    let mut points = path.points.clone();
                    if path.closed {
                        points.extend(path.points.first());
                    }
                    self.polyline(&points, path.stroke.width, colour, false);
                }
            }
            Shape::Text(text) => self.text(text),
            Shape::Mesh(mesh) => self.mesh(mesh),
            Shape::QuadraticBezier(curve) => {
                if let epaint::ColorMode::Solid(colour) = curve.stroke.color {
                    let points = curve.flatten(Some(0.1));
                    self.polyline(&points, curve.stroke.width, colour, false);
                }
            }
            Shape::CubicBezier(curve) => {
                if let epaint::ColorMode::Solid(colour) = curve.stroke.color {
                    let points = curve.flatten(Some(0.1));
                    self.polyline(&points, curve.stroke.width, colour, false);
                }
            }
            Shape::Noop | Shape::Ellipse(_) | Shape::Band(_) | Shape::Callback(_) => {}
        }
    }

    fn polyline(&mut self, points: &[Pos2], width: f32, colour: Color32, dashed: bool) {
        let Some(colour) = self.colour(colour) else {
            return;
        };
        if width <= 0.0 || points.len() < 2 {
            return;
        }
        let points = points.iter().map(|p| self.point(*p)).collect();
        self.scene.push(Item::Polyline {
            points,
            colour,
            width: width * self.scale,
            dashed,
        });
    }

    fn rect(&mut self, shape: &epaint::RectShape) {
        let [x, y] = self.point(shape.rect.min);
        let (width, height) = (
            shape.rect.width() * self.scale,
            shape.rect.height() * self.scale,
        );
        if let Some(brush) = &shape.brush {
            if let Some(image) = self.texture(brush.fill_texture_id, brush.uv) {
                self.scene.push(Item::Image {
                    x,
                    y,
                    width,
                    height,
                    image,
                });
                return;
            }
        }
        let fill = self.colour(shape.fill);
        let stroke = self
            .colour(shape.stroke.color)
            .filter(|_| shape.stroke.width > 0.0)
            .map(|colour| (colour, shape.stroke.width * self.scale));
        if fill.is_some() || stroke.is_some() {
            self.scene.push(Item::Rect {
                x,
                y,
                width,
                height,
                fill,
                stroke,
            });
        }
    }

    /// A texture's pixels within `uv`, on white, if the app kept them.
    fn texture(&self, id: egui::TextureId, uv: Rect) -> Option<RgbImage> {
        let pixels = texture_pixels(self.ctx, id)?;
        let [w, h] = pixels.size;
        let x0 = ((uv.min.x * w as f32).round() as usize).min(w);
        let x1 = ((uv.max.x * w as f32).round() as usize).clamp(x0, w);
        let y0 = ((uv.min.y * h as f32).round() as usize).min(h);
        let y1 = ((uv.max.y * h as f32).round() as usize).clamp(y0, h);
        if x1 == x0 || y1 == y0 {
            return None;
        }
        Some(RgbImage::from_fn(
            (x1 - x0) as u32,
            (y1 - y0) as u32,
            |x, y| {
                let colour = pixels.pixels[(y0 + y as usize) * w + x0 + x as usize];
                let [r, g, b, _] = colour.to_srgba_unmultiplied();
                Rgb([r, g, b])
            },
        ))
    }

    /// An image (a textured quad) or solid triangles.
    fn mesh(&mut self, mesh: &epaint::Mesh) {
        if mesh.texture_id != egui::TextureId::default() {
            let bounds = mesh.calc_bounds();
            let uv = mesh.vertices.iter().fold(Rect::NOTHING, |r, v| {
                r.union(Rect::from_min_max(v.uv, v.uv))
            });
            if let Some(image) = self.texture(mesh.texture_id, uv) {
                let [x, y] = self.point(bounds.min);
                self.scene.push(Item::Image {
                    x,
                    y,
                    width: bounds.width() * self.scale,
                    height: bounds.height() * self.scale,
                    image,
                });
            }
            return;
        }
        for triangle in mesh.indices.chunks_exact(3) {
            let vertices: Vec<_> = triangle
                .iter()
                .filter_map(|&i| mesh.vertices.get(i as usize))
                .collect();
            let Some(fill) = vertices.first().and_then(|v| self.colour(v.color)) else {
                continue;
            };
            let points = vertices.iter().map(|v| self.point(v.pos)).collect();
            self.scene.push(Item::Polygon { points, fill });
        }
    }

    /// Each run of a galley's rows in one format becomes one text item.
    fn text(&mut self, shape: &epaint::TextShape) {
        let galley = &shape.galley;
        let job = &galley.job;
        let vertical = (shape.angle + std::f32::consts::FRAC_PI_2).abs() < 0.01;
        if shape.angle != 0.0 && !vertical {
            return;
        }
        // Glyphs follow the text's characters in order; a row that ends
        // with a line break leaves that character out.
        let char_starts: Vec<usize> = job.text.char_indices().map(|(i, _)| i).collect();
        let mut next_char = 0;
        for placed in &galley.rows {
            let mut run: Option<(String, Pos2, usize)> = None;
            for glyph in &placed.row.glyphs {
                let byte = char_starts
                    .get(next_char)
                    .copied()
                    .unwrap_or(job.text.len());
                next_char += 1;
                let section = job
                    .sections
                    .iter()
                    .position(|s| s.byte_range.contains(&epaint::text::ByteIndex(byte)))
                    .unwrap_or(0);
                let at = placed.pos + glyph.pos.to_vec2();
                // Symbols (■, □, arrows) may come from a fallback font of
                // other widths: each is placed on its own.
                let symbol = |c: char| {
                    !(c.is_alphanumeric() || c.is_ascii_punctuation() || c.is_whitespace())
                };
                match &mut run {
                    Some((text, _, s))
                        if *s == section
                            && !symbol(glyph.chr)
                            && !text.chars().last().is_some_and(symbol) =>
                    {
                        text.push(glyph.chr);
                    }
                    _ => {
                        if let Some(done) = run.take() {
                            self.text_run(shape, done, vertical);
                        }
                        run = Some((glyph.chr.to_string(), at, section));
                    }
                }
            }
            if let Some(done) = run.take() {
                self.text_run(shape, done, vertical);
            }
            if placed.ends_with_newline {
                next_char += 1;
            }
        }
    }

    fn text_run(
        &mut self,
        shape: &epaint::TextShape,
        (text, at, section): (String, Pos2, usize),
        vertical: bool,
    ) {
        if text.trim().is_empty() {
            return;
        }
        let Some(format) = shape.galley.job.sections.get(section).map(|s| &s.format) else {
            return;
        };
        let colour = shape
            .override_text_color
            .unwrap_or(if format.color == Color32::PLACEHOLDER {
                shape.fallback_color
            } else {
                format.color
            });
        let Some(colour) = self.colour(colour) else {
            return;
        };
        let size = format.font_id.size * self.scale;
        // `at` is on the baseline, relative to the galley; the scene's text
        // is centred on its line box, 0.37 em above the baseline.
        let baseline = if vertical {
            // Rotated about the galley's position.
            let rot = egui::emath::Rot2::from_angle(shape.angle);
            shape.pos + rot * at.to_vec2()
        } else {
            shape.pos + at.to_vec2()
        };
        let [x, y] = self.point(baseline);
        let (x, y) = if vertical {
            (x - 0.37 * size, y)
        } else {
            (x, y - 0.37 * size)
        };
        self.scene.push(Item::Text {
            text: text.trim_end().to_string(),
            x,
            y,
            size,
            anchor: Anchor::Start,
            vertical,
            colour,
            bold: false,
        });
    }
}
