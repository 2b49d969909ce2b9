//! The overview: one heatmap thumbnail per head, L rows × H columns.
//!
//! Each thumbnail is a texture built once per result and view choice
//! ([`ViewKey`]), never per frame; a frame only draws L·H textured
//! rectangles and their labels. Each thumbnail is a clickable widget named
//! "L{layer} H{head} {category}" for screen readers and UI tests.

use super::heatmap::{self, THUMBNAIL_PIXELS};
use super::settings::MatrixKind;
use crate::analysis::{Category, SimilarityVariant};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use crate::pipeline::RunOutput;
use egui::{Align2, Color32, FontId, Rect, Sense, Stroke, TextureHandle};

/// Everything the pictures depend on; a change rebuilds the textures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewKey {
    pub generation: u64,
    pub kind: MatrixKind,
    pub variant: SimilarityVariant,
    pub colormap: ColorMap,
    pub shared_scale: bool,
}

/// The grid's textures and colour ranges.
#[derive(Default)]
pub struct Overview {
    key: Option<ViewKey>,
    textures: Vec<Option<TextureHandle>>,
    ranges: Vec<ValueRange>,
    shared: Option<ValueRange>,
}

/// Short name and colour of a head's category.
pub fn category_style(category: Option<Category>) -> (&'static str, Color32) {
    match category {
        Some(Category::Repetition) => ("repetition", Color32::from_rgb(255, 170, 60)),
        Some(Category::Focus) => ("focus", Color32::from_rgb(235, 110, 200)),
        Some(Category::Local) => ("local", Color32::from_rgb(110, 210, 120)),
        Some(Category::Mixed) => ("mixed", Color32::from_gray(170)),
        None => ("no pairs", Color32::from_gray(130)),
    }
}

/// The accessible name of a head's thumbnail.
pub fn thumbnail_label(head: HeadId, category: Option<Category>) -> String {
    format!("L{} H{} {}", head.layer, head.head, category_style(category).0)
}

impl Overview {
    /// Rebuilds the textures if the result or a view choice changed.
    pub fn update(&mut self, ctx: &egui::Context, output: &RunOutput, key: ViewKey) {
        if self.key == Some(key) {
            return;
        }
        let captures = &output.captures;
        let heads: Vec<HeadId> = captures.head_ids().collect();
        self.textures.resize_with(heads.len(), || None);
        self.textures.truncate(heads.len());
        let mut images = Vec::with_capacity(heads.len());
        self.ranges.clear();
        for &head in &heads {
            let values = heatmap::head_matrix(output, head, key.kind, key.variant);
            self.ranges.push(heatmap::range_of(key.colormap, &values));
            let (small, side) = heatmap::shrink(&values, captures.tokens, THUMBNAIL_PIXELS);
            images.push((small.into_owned(), side));
        }
        self.shared = key.shared_scale.then(|| heatmap::union(&self.ranges));
        for (index, (values, side)) in images.into_iter().enumerate() {
            let range = self.shared.unwrap_or(self.ranges[index]);
            let image = heatmap::colour_image(&values, side, key.colormap, range);
            let name = format!("thumbnail {}", heads[index]);
            heatmap::upload(ctx, &mut self.textures[index], &name, image);
        }
        self.key = Some(key);
    }

    /// The one range all thumbnails share, when shared scaling is on.
    pub fn shared_range(&self) -> Option<ValueRange> {
        self.shared
    }

    /// Draws the grid; returns the head whose thumbnail was clicked.
    pub fn ui(
        &self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        selected: Option<HeadId>,
    ) -> Option<HeadId> {
        let (layers, heads) = (output.captures.layers, output.captures.heads);
        if layers == 0 || heads == 0 || self.textures.len() != layers * heads {
            return None;
        }
        let row_header = 30.0;
        let column_header = 18.0;
        let label_height = 16.0;
        let gap = 6.0;
        let available = ui.available_size();
        let cell_width = ((available.x - row_header) / heads as f32).floor();
        let fit_height = ((available.y - column_header) / layers as f32).floor();
        let thumb = (cell_width - gap)
            .min(fit_height - label_height - gap)
            .clamp(40.0, 260.0);
        let cell = egui::vec2(thumb + gap, thumb + label_height + gap);
        let grid_size = egui::vec2(
            row_header + cell.x * heads as f32,
            column_header + cell.y * layers as f32,
        );
        let mut clicked = None;
        egui::ScrollArea::both()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let (grid_rect, _) = ui.allocate_exact_size(grid_size, Sense::hover());
                let painter = ui.painter_at(grid_rect);
                let text_colour = ui.visuals().text_color();
                let weak = ui.visuals().weak_text_color();
                for h in 0..heads {
                    let x = grid_rect.left() + row_header + cell.x * (h as f32 + 0.5);
                    painter.text(
                        egui::pos2(x, grid_rect.top() + column_header / 2.0),
                        Align2::CENTER_CENTER,
                        format!("H{h}"),
                        FontId::proportional(12.0),
                        weak,
                    );
                }
                for l in 0..layers {
                    let top = grid_rect.top() + column_header + cell.y * l as f32;
                    painter.text(
                        egui::pos2(grid_rect.left() + row_header / 2.0, top + thumb / 2.0),
                        Align2::CENTER_CENTER,
                        format!("L{l}"),
                        FontId::proportional(12.0),
                        weak,
                    );
                    for h in 0..heads {
                        let head = HeadId::new(l, h);
                        let left = grid_rect.left() + row_header + cell.x * h as f32 + gap / 2.0;
                        let rect = Rect::from_min_size(
                            egui::pos2(left, top),
                            egui::vec2(thumb, thumb + label_height),
                        );
                        let image_rect = Rect::from_min_size(rect.min, egui::vec2(thumb, thumb));
                        let response = ui.interact(rect, ui.scope_id().with(("thumbnail", l, h)), Sense::click());
                        let figures = output.analysis.head(head);
                        let category = figures.and_then(|f| f.category);
                        let label = thumbnail_label(head, category);
                        response.widget_info(|| {
                            egui::WidgetInfo::selected(
                                egui::Role::Button,
                                true,
                                selected == Some(head),
                                &label,
                            )
                        });
                        if let Some(texture) = &self.textures[l * heads + h] {
                            painter.image(
                                texture.id(),
                                image_rect,
                                Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                                Color32::WHITE,
                            );
                        }
                        let outline = if selected == Some(head) {
                            Some(Stroke::new(2.5, ui.visuals().selection.stroke.color))
                        } else if response.hovered() {
                            Some(Stroke::new(1.5, text_colour))
                        } else {
                            None
                        };
                        if let Some(stroke) = outline {
                            painter.rect_stroke(
                                image_rect.expand(1.5),
                                2.0,
                                stroke,
                                egui::StrokeKind::Outside,
                            );
                        }
                        let (name, colour) = category_style(category);
                        let caption = if thumb >= 70.0 {
                            format!("L{l} H{h} · {name}")
                        } else {
                            format!("{l}.{h} {}", &name[..name.len().min(3)])
                        };
                        painter.text(
                            egui::pos2(image_rect.center().x, image_rect.bottom() + 2.0),
                            Align2::CENTER_TOP,
                            caption,
                            FontId::proportional(11.0),
                            colour,
                        );
                        let response = response.on_hover_ui(|ui| head_tooltip(ui, output, head));
                        if response.clicked() {
                            clicked = Some(head);
                        }
                    }
                }
            });
        clicked
    }
}

fn head_tooltip(ui: &mut egui::Ui, output: &RunOutput, head: HeadId) {
    ui.strong(format!("Layer {} head {}", head.layer, head.head));
    if let Some(f) = output.analysis.head(head) {
        let (name, colour) = category_style(f.category);
        ui.colored_label(colour, name);
        ui.label(format!(
            "mean distance {} · same sentence {} · repetition {}",
            super::head_view::figure(f.mean_distance, 1),
            super::head_view::figure(f.same_sentence_fraction, 2),
            super::head_view::figure(f.repetition_fraction, 2),
        ));
        if let Some(token) = &f.focus_token {
            ui.label(format!(
                "focus token “{token}” in {} of the pairs",
                super::head_view::figure(f.focus_share, 2)
            ));
        }
    }
    ui.weak("Click to open");
}
