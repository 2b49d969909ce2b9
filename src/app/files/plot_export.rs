//! Plots as PNG images, exactly as they are on screen.
//!
//! Each plot of the study's views is drawn through the widget
//! [`figure`](crate::app::widgets::plots::figure): a title with a
//! "Save PNG…" button, then the plot and its legend. A click starts a
//! [`PlotExport`]: the next frame is drawn without the buttons, a
//! screenshot of the window is taken (egui's `ViewportCommand::Screenshot`),
//! the figure's rectangle is cut out of it, and after the save dialog the
//! image is written atomically like every other export. Cutting from the
//! screen, rather than re-drawing the plot elsewhere, keeps the picture
//! identical to what the user saw: egui_plot's axes, legend and colours.
//!
//! Figures report where they are through egui's per-frame memory (keyed by
//! the figure's name), so the views need no extra plumbing beyond the one
//! [`ViewAction`](crate::app::views::shared::ViewAction) that asks for the
//! export.

use super::dialogs::Dialog;
use crate::app::widgets::plots::{hidden_id, rect_id};
use crate::export;
use crossbeam_channel::{Receiver, TryRecvError};
use egui::{ColorImage, Rect};
use image::RgbImage;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the figure `name` was drawn in the current pass, if it was.
fn drawn_rect(ctx: &egui::Context, name: &str) -> Option<Rect> {
    let (pass, rect) = ctx.data(|d| d.get_temp::<(u64, Rect)>(rect_id(name)))?;
    (pass == ctx.cumulative_pass_nr() && rect.is_positive()).then_some(rect)
}

/// What an export is waiting for.
enum Stage {
    /// A frame drawn without the save buttons: one after this pass.
    HideButtons { asked_in_pass: u64 },
    /// The screenshot of that frame, to cut `rect` (points) out of.
    Screenshot {
        rect: Rect,
        pixels_per_point: f32,
        image: Receiver<Arc<ColorImage>>,
    },
    /// The save dialog, with the picture ready.
    Dialog { picture: RgbImage, path: Dialog },
}

/// The plot being saved, if any, and where tests save plots.
#[derive(Default)]
pub struct PlotSaving {
    /// The plot being saved (one at a time).
    pub export: Option<PlotExport>,
    /// Save plots here instead of asking (tests cannot open dialogs).
    pub target: Option<PathBuf>,
}

/// One plot being exported.
pub struct PlotExport {
    name: String,
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
    /// Starts exporting the figure `name`; `target` skips the save dialog.
    pub fn start(ctx: &egui::Context, name: &str, target: Option<PathBuf>) -> Self {
        ctx.data_mut(|d| d.insert_temp(hidden_id(), true));
        ctx.request_repaint();
        PlotExport {
            name: name.to_owned(),
            target,
            stage: Stage::HideButtons {
                asked_in_pass: ctx.cumulative_pass_nr(),
            },
        }
    }

    /// Moves the export on; call once per frame after the views are drawn.
    /// `ask_path` opens the save dialog for a suggested file name.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        ask_path: impl FnOnce(String) -> Dialog,
    ) -> Option<Outcome> {
        match &mut self.stage {
            Stage::HideButtons { asked_in_pass } => {
                if ctx.cumulative_pass_nr() <= *asked_in_pass {
                    // This pass drew the buttons before the export began.
                    ctx.request_repaint();
                    return None;
                }
                let Some(rect) = drawn_rect(ctx, &self.name) else {
                    show_buttons(ctx);
                    return Some(Outcome::Failed("the plot is no longer on screen".into()));
                };
                let (sender, image) = crossbeam_channel::bounded(1);
                let repaint = ctx.clone();
                ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                    egui::ScreenshotCallback::new(move |image| {
                        let _ = sender.send(image);
                        repaint.request_repaint();
                    }),
                ));
                self.stage = Stage::Screenshot {
                    rect,
                    pixels_per_point: ctx.pixels_per_point(),
                    image,
                };
                None
            }
            Stage::Screenshot {
                rect,
                pixels_per_point,
                image,
            } => {
                let image = match image.try_recv() {
                    Err(TryRecvError::Empty) => return None,
                    captured => {
                        // Captured or not, the buttons may come back.
                        show_buttons(ctx);
                        match captured {
                            Ok(image) => image,
                            Err(_) => {
                                return Some(Outcome::Failed(
                                    "the window could not be captured".into(),
                                ))
                            }
                        }
                    }
                };
                let picture = cut_out(&image, *rect, *pixels_per_point);
                if picture.width() == 0 || picture.height() == 0 {
                    return Some(Outcome::Failed(
                        "the plot is not visible in the window".into(),
                    ));
                }
                if let Some(target) = self.target.take() {
                    return Some(save(&picture, &target));
                }
                let path = ask_path(format!("{}.png", self.name));
                self.stage = Stage::Dialog { picture, path };
                None
            }
            Stage::Dialog { picture, path } => match path.poll(ctx)? {
                Some(path) => Some(save(picture, &path)),
                None => Some(Outcome::Cancelled),
            },
        }
    }
}

/// Ends the frames drawn without save buttons.
fn show_buttons(ctx: &egui::Context) {
    ctx.data_mut(|d| d.remove::<bool>(hidden_id()));
}

fn save(picture: &RgbImage, path: &Path) -> Outcome {
    match export::save_png(picture, path) {
        Ok(()) => Outcome::Saved(path.to_path_buf()),
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// The pixels of `rect` (in points) in a screenshot, as RGB.
pub fn cut_out(image: &ColorImage, rect: Rect, pixels_per_point: f32) -> RgbImage {
    let [width, height] = image.size;
    let to_pixel =
        |v: f32, limit: usize| ((v * pixels_per_point).round().max(0.0) as usize).min(limit);
    let (left, right) = (to_pixel(rect.min.x, width), to_pixel(rect.max.x, width));
    let (top, bottom) = (to_pixel(rect.min.y, height), to_pixel(rect.max.y, height));
    let mut picture = RgbImage::new((right - left) as u32, (bottom - top) as u32);
    for (y, row) in (top..bottom).enumerate() {
        for (x, pixel) in image.pixels[row * width + left..row * width + right]
            .iter()
            .enumerate()
        {
            picture.put_pixel(
                x as u32,
                y as u32,
                image::Rgb([pixel.r(), pixel.g(), pixel.b()]),
            );
        }
    }
    picture
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Color32, Pos2};

    #[test]
    fn the_cut_out_is_the_rectangle_in_pixels() {
        // 4 × 3 pixels, each red value its x, green its y.
        let pixels = (0..3)
            .flat_map(|y| (0..4).map(move |x| Color32::from_rgb(x, y, 7)))
            .collect();
        let image = ColorImage::new([4, 3], pixels);
        let rect = Rect::from_min_max(Pos2::new(0.5, 0.5), Pos2::new(1.5, 1.5));
        let picture = cut_out(&image, rect, 2.0);
        assert_eq!(picture.dimensions(), (2, 2));
        assert_eq!(picture.get_pixel(0, 0).0, [1, 1, 7]);
        assert_eq!(picture.get_pixel(1, 1).0, [2, 2, 7]);
        // A rectangle reaching past the window is cut at its edge.
        let wide = Rect::from_min_max(Pos2::new(1.0, 0.0), Pos2::new(9.0, 9.0));
        assert_eq!(cut_out(&image, wide, 1.0).dimensions(), (3, 3));
    }
}
