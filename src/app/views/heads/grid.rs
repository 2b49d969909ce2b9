//! The overview: one heatmap thumbnail per head, L rows × H columns.
//!
//! Each thumbnail is a texture built once per result and view choice
//! ([`ViewKey`]), never per frame, and the images are computed on a short-
//! lived thread (a 12×12 model at 512 tokens has 37 million values); a
//! frame only draws L·H textured rectangles and their labels. Each
//! thumbnail is a clickable widget named "L{layer} H{head} {category}" for
//! screen readers and UI tests ("… · role {role}" added when the captions
//! name roles). The columns fill the width; the rows of a
//! deep model scroll ([`thumbnail_side`]).

use super::ablation::{toggle_label, ABLATE_KEY};
use crate::analysis::{Category, Role, ROLE_FLOOR, ROLE_MARGIN};
use crate::app::jobs::{spawn_tracked_job, JobProgress};
use crate::app::widgets::format::{category_style, figure, role_short_name, role_style, HIGHLIGHT};
use crate::app::widgets::head_grid::HeadGrid;
use crate::app::widgets::heatmap::{self, ViewKey};
use crate::app::widgets::zoom_map::map_matrix;
use crate::captures::HeadId;
use crate::colormap::ValueRange;
use crate::head_map::{self, HeadMatrix, OverviewSize, Thumbnail};
use crate::pipeline::RunOutput;
use crate::worker::Waker;
use crossbeam_channel::Receiver;
use egui::{Align2, Color32, ColorImage, FontId, Rect, Stroke, TextureHandle};
use std::borrow::Cow;
use std::sync::Arc;

/// What the study's views draw over the grid (see [`super::HeadsView`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridMarks {
    /// Per head, layer-major: why it is highlighted, if it is. Empty when
    /// nothing is; otherwise the others are dimmed.
    pub highlights: Vec<Option<String>>,
    /// Per head, layer-major: its separator attention, drawn on the
    /// thumbnail (`None`: the overlay is off).
    pub separator_attention: Option<Vec<Option<f64>>>,
    /// Show only this layer's row.
    pub only_layer: Option<usize>,
    /// The roles the captions name instead of the categories (§4).
    pub roles: Option<CaptionRoles>,
    /// The heads ablated (ANALYSIS.md §9), marked with a cross.
    pub ablated: Vec<HeadId>,
    /// Per head, layer-major: its importance (the effect of ablating it
    /// alone), drawn on the thumbnail.
    pub importance: Option<Vec<f64>>,
}

/// What the user did to the grid this frame.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct GridAnswer {
    /// The head whose thumbnail was clicked: open it.
    pub opened: Option<HeadId>,
    /// The head whose menu ablated it or gave it back.
    pub toggled_ablation: Option<HeadId>,
}

/// Each head's role (ANALYSIS.md §9), layer-major, and whether it is its
/// role on the induction probe rather than on the text.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptionRoles {
    pub roles: Vec<Option<Role>>,
    pub on_probe: bool,
    /// The roles are those of the value-weighted attention N′ (§9).
    pub weighted: bool,
}

/// The grid's textures, and the thumbnails being built for the newest key.
#[derive(Default)]
pub struct Overview {
    /// What the textures on screen show.
    shown_key: Option<ViewKey>,
    textures: Vec<Option<TextureHandle>>,
    shared: Option<ValueRange>,
    /// Thumbnails being computed off the UI thread, for this key.
    building: Option<Building>,
    /// A key whose thumbnails the user cancelled: not built again until a
    /// result or a view choice changes.
    cancelled_key: Option<ViewKey>,
}

/// A build of the thumbnails in progress.
struct Building {
    key: ViewKey,
    receiver: Receiver<Option<Thumbnails>>,
    progress: Arc<JobProgress>,
}

/// The colour images of every head, computed off the UI thread.
struct Thumbnails {
    images: Vec<ColorImage>,
    shared: Option<ValueRange>,
}

/// Room kept for the vertical scroll bar when the rows do not fit.
const SCROLL_BAR_ROOM: f32 = 10.0;

/// The side of the square thumbnails in a `width` × `height` area for
/// `heads` columns and `rows` rows, each cell `below` taller than its
/// picture and `gap` wider. The columns fill the width; the rows fit the
/// height too when that costs little (the whole grid at a glance),
/// otherwise the grid scrolls. Without this, a deep model (12 layers) got
/// thumbnails sized for its height and left half the width empty.
pub fn thumbnail_side(
    width: f32,
    height: f32,
    heads: usize,
    rows: usize,
    below: f32,
    gap: f32,
) -> f32 {
    let by_width = (width / heads.max(1) as f32).floor() - gap;
    let by_height = (height / rows.max(1) as f32).floor() - below;
    let whole_grid = by_width.min(by_height);
    let side = if whole_grid >= 0.85 * by_width {
        whole_grid
    } else {
        by_width
    };
    side.clamp(40.0, 260.0)
}

/// The accessible name of a head's thumbnail.
pub fn thumbnail_label(head: HeadId, category: Option<Category>) -> String {
    format!(
        "L{} H{} {}",
        head.layer,
        head.head,
        category_style(category).0
    )
}

/// Every head's thumbnail image for `key` (the transform, the colour
/// ranges and the shrinking touch all L·H·T² values, hence a thread).
/// `None` when cancelled.
fn build_thumbnails(
    output: &RunOutput,
    key: ViewKey,
    progress: &JobProgress,
) -> Option<Thumbnails> {
    let captures = &output.captures;
    let heads: Vec<HeadId> = captures.head_ids().collect();
    let scale = heatmap::colour_scale(output, &key);
    let causal = output.input.tokens.causal;
    // Heads in parallel: a long decoder input recomputes each head's P or S.
    // Each head leases its thread for itself alone, not the whole budget
    // for the whole grid: the logit lens and a hover's next tokens, which
    // need the budget for their passes, then go between two heads instead
    // of waiting (~30 s for a long decoder input) until every thumbnail is
    // drawn.
    let (shrunk, ranges): (Vec<_>, Vec<_>) =
        crate::threads::map_indices_in_turn(heads.len(), crate::threads::total(), |index| {
            if progress.is_cancelled() {
                return ((Vec::new(), 0), ValueRange::default());
            }
            // Blocks of at most 128 a side, averaged: made by the pass where
            // it recomputes P and S, else a band of rows at a time.
            let (head, matrix) = (heads[index], map_matrix(&key));
            let thumbnail = match output.thumbnails.get(head, matrix) {
                Some(made) => Cow::Borrowed(made),
                None => {
                    let matrix = HeadMatrix::new(captures, head, matrix, causal);
                    let cancelled = || progress.is_cancelled();
                    let size = OverviewSize::THUMBNAIL;
                    match head_map::overview(captures, &matrix, size, 1, &cancelled, &|| {}) {
                        Some(overview) => Cow::Owned(Thumbnail::of(overview)),
                        None => return ((Vec::new(), 0), ValueRange::default()),
                    }
                }
            };
            let (_, range) = heatmap::picture(
                key.colormap,
                scale,
                &thumbnail.sample,
                thumbnail.sample_side,
            );
            let values = scale.coloured(&thumbnail.means);
            progress.step();
            ((values, thumbnail.side), range)
        })
        .into_iter()
        .unzip();
    if progress.is_cancelled() {
        return None;
    }
    let shared = key.shared_scale.then(|| heatmap::union(&ranges));
    let images = shrunk
        .iter()
        .zip(&ranges)
        .map(|((values, side), &range)| {
            heatmap::colour_image(values, *side, key.colormap, shared.unwrap_or(range))
        })
        .collect();
    Some(Thumbnails { images, shared })
}

impl Overview {
    /// Starts building the thumbnails when the result or a view choice
    /// changed, and puts finished ones on screen. Until then the previous
    /// pictures stay.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        output: &Arc<RunOutput>,
        key: ViewKey,
        wake: &Waker,
    ) {
        if let Some(Building {
            key: built_key,
            receiver,
            progress,
        }) = &self.building
        {
            match receiver.try_recv() {
                Ok(None) => {
                    self.cancelled_key = Some(*built_key);
                    self.building = None;
                }
                Ok(Some(thumbnails)) => {
                    let built_key = *built_key;
                    self.building = None;
                    self.textures.resize_with(thumbnails.images.len(), || None);
                    for (index, image) in thumbnails.images.into_iter().enumerate() {
                        let name = format!("thumbnail {index}");
                        heatmap::upload(ctx, &mut self.textures[index], &name, image);
                    }
                    self.shared = thumbnails.shared;
                    self.shown_key = Some(built_key);
                }
                Err(crossbeam_channel::TryRecvError::Empty) => {
                    // A newer key: this build's pictures will not be shown.
                    if *built_key != key {
                        progress.cancel();
                    }
                }
                Err(crossbeam_channel::TryRecvError::Disconnected) => self.building = None,
            }
        }
        let wanted = Some(key);
        if self.shown_key != wanted
            && self.building.as_ref().map(|b| b.key) != wanted
            && self.cancelled_key != wanted
        {
            let output = output.clone();
            let heads = output.captures.layers * output.captures.heads;
            let (receiver, progress) = spawn_tracked_job(
                "headscope-thumbnails",
                "Drawing the thumbnails",
                heads,
                wake.clone(),
                move |progress| build_thumbnails(&output, key, progress),
            );
            self.building = Some(Building {
                key,
                receiver,
                progress,
            });
        }
    }

    /// Whether the user cancelled the thumbnails of `key`.
    pub fn is_cancelled(&self, key: ViewKey) -> bool {
        self.cancelled_key == Some(key)
    }

    /// Draws again the thumbnails whose drawing was cancelled.
    pub fn draw_again(&mut self) {
        self.cancelled_key = None;
    }

    /// The build in progress, if any, for its progress row.
    pub fn building(&self) -> Option<&JobProgress> {
        self.building.as_ref().map(|b| b.progress.as_ref())
    }

    /// Whether the pictures on screen are those of `key`.
    pub fn is_current(&self, key: ViewKey) -> bool {
        self.shown_key == Some(key)
    }

    /// The one range all thumbnails share, when shared scaling is on.
    pub fn shared_range(&self) -> Option<ValueRange> {
        self.shared
    }

    /// Draws the grid; says which head was clicked, or ablated by its
    /// menu (right click).
    pub fn ui(
        &self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        selected: Option<HeadId>,
        marks: &GridMarks,
    ) -> GridAnswer {
        let (layers, heads) = (output.captures.layers, output.captures.heads);
        if layers == 0 || heads == 0 {
            return GridAnswer::default();
        }
        // The rows drawn: every layer, or the one the Layers view asked for.
        let shown_layers: Vec<usize> = match marks.only_layer {
            Some(l) if l < layers => vec![l],
            _ => (0..layers).collect(),
        };
        let rows = shown_layers.len();
        let any_highlight = marks.highlights.iter().any(Option::is_some);
        // Textures of another model's shape are not shown (placeholders
        // until the new ones are built).
        let textures_fit = self.textures.len() == layers * heads;
        let row_header = 30.0;
        let column_header = 18.0;
        let label_height = 16.0;
        let gap = 6.0;
        let available = ui.available_size();
        let thumb = thumbnail_side(
            available.x - row_header - SCROLL_BAR_ROOM,
            available.y - column_header,
            heads,
            rows,
            label_height + gap,
            gap,
        );
        let mut clicked = None;
        let mut toggled_ablation = None;
        let largest_importance = marks
            .importance
            .iter()
            .flatten()
            .fold(0f64, |m, v| m.max(v.abs()));
        egui::ScrollArea::both()
            .auto_shrink([false, false])
            .show(ui, |ui| {
                let text_colour = ui.visuals().text_color();
                let grid = HeadGrid::new(
                    "overview grid",
                    &shown_layers,
                    heads,
                    egui::vec2(thumb, thumb + label_height),
                )
                .gap(egui::vec2(gap, gap))
                .headers(row_header, column_header)
                .caption(label_height);
                let answer = grid.show(ui, |ui, painter, cell| {
                    let Some(head) = cell.head_id() else {
                        return;
                    };
                    let (l, h) = (head.layer, head.head);
                    let rect = cell.rect;
                    let image_rect = Rect::from_min_size(rect.min, egui::vec2(thumb, thumb));
                    let response = cell.response;
                    let figures = output.analysis.head(head);
                    let category = figures.and_then(|f| f.category);
                    let role = marks
                        .roles
                        .as_ref()
                        .map(|r| r.roles.get(l * heads + h).copied().flatten());
                    let index = l * heads + h;
                    let highlight = marks.highlights.get(index).cloned().flatten();
                    let separator = marks
                        .separator_attention
                        .as_ref()
                        .map(|values| values.get(index).copied().flatten());
                    let mut label = thumbnail_label(head, category);
                    if let Some(role) = role {
                        label.push_str(&format!(" · role {}", role_style(role).0));
                    }
                    if highlight.is_some() {
                        label.push_str(" · highlighted");
                    }
                    let ablated = marks.ablated.contains(&head);
                    if ablated {
                        label.push_str(" · ablated");
                    }
                    let importance = marks
                        .importance
                        .as_ref()
                        .and_then(|values| values.get(index).copied());
                    if let Some(value) = importance {
                        label.push_str(&format!(" · importance {value:+.4}"));
                    }
                    if let Some(value) = separator {
                        label.push_str(&format!(" · separator attention {}", figure(value, 2)));
                    }
                    response.widget_info(|| {
                        egui::WidgetInfo::selected(
                            egui::Role::Button,
                            true,
                            selected == Some(head),
                            &label,
                        )
                    });
                    match self.textures.get(index).filter(|_| textures_fit) {
                        Some(Some(texture)) => {
                            painter.image(
                                texture.id(),
                                image_rect,
                                Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                                Color32::WHITE,
                            );
                        }
                        _ => {
                            painter.rect_filled(image_rect, 2.0, ui.visuals().faint_bg_color);
                        }
                    }
                    if any_highlight && highlight.is_none() {
                        // Dimmed, so the highlighted heads stand out.
                        painter.rect_filled(image_rect, 2.0, Color32::from_black_alpha(150));
                    }
                    if let Some(value) = separator {
                        separator_overlay(painter, image_rect, value);
                    }
                    if ablated {
                        ablated_mark(painter, image_rect);
                    }
                    if let Some(value) = importance {
                        importance_overlay(painter, image_rect, value, largest_importance);
                    }
                    if highlight.is_some() {
                        // Inside the picture: outside it would cover the caption.
                        painter.rect_stroke(
                            image_rect,
                            2.0,
                            Stroke::new(3.0, HIGHLIGHT),
                            egui::StrokeKind::Inside,
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
                    let ((name, colour), short) = match role {
                        Some(role) => (role_style(role), role_short_name(role)),
                        None => {
                            let style = category_style(category);
                            (style, &style.0[..style.0.len().min(3)])
                        }
                    };
                    let caption = if thumb >= 70.0 {
                        format!("L{l} H{h} · {name}")
                    } else {
                        format!("{l}.{h} {short}")
                    };
                    painter.text(
                        egui::pos2(image_rect.center().x, image_rect.bottom() + 2.0),
                        Align2::CENTER_TOP,
                        caption,
                        FontId::proportional(11.0),
                        colour,
                    );
                    // The key A ablates the head under the pointer, or gives
                    // it back, unless the user is typing.
                    if response.hovered()
                        && !ui.ctx().text_edit_focused()
                        && ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, ABLATE_KEY))
                    {
                        toggled_ablation = Some(head);
                    }
                    response.context_menu(|ui| {
                        if ui.button(toggle_label(head, ablated)).clicked() {
                            toggled_ablation = Some(head);
                            ui.close();
                        }
                    });
                    response.on_hover_ui(|ui| {
                        head_tooltip(ui, output, head);
                        if let Some(why) = &highlight {
                            ui.colored_label(HIGHLIGHT, format!("highlighted: {why}"));
                        }
                        if ablated {
                            ui.colored_label(ABLATED, "ablated");
                        }
                    });
                });
                clicked = answer.clicked;
                ui.add_space(4.0);
                match &marks.roles {
                    Some(roles) => role_legend(ui, roles),
                    None => category_legend(ui),
                }
            });
        GridAnswer {
            opened: clicked,
            toggled_ablation,
        }
    }
}

/// The colour that marks an ablated head.
const ABLATED: Color32 = Color32::from_rgb(230, 60, 60);

/// A head's importance on its thumbnail: the value in the top left corner
/// and a bar along the bottom (full width: the largest of the grid).
fn importance_overlay(painter: &egui::Painter, image: Rect, value: f64, largest: f64) {
    let bar_height = (image.height() * 0.09).clamp(4.0, 10.0);
    let track = Rect::from_min_max(
        egui::pos2(image.left(), image.bottom() - bar_height),
        image.right_bottom(),
    );
    painter.rect_filled(track, 0.0, Color32::from_black_alpha(170));
    let share = if largest > 0.0 {
        (value.abs() / largest).min(1.0)
    } else {
        0.0
    };
    let fill = Rect::from_min_max(
        track.min,
        egui::pos2(track.left() + track.width() * share as f32, track.bottom()),
    );
    painter.rect_filled(fill, 0.0, ABLATED);
    let font = FontId::proportional((image.height() * 0.16).clamp(10.0, 14.0));
    let galley = painter.layout_no_wrap(format!("{value:+.3}"), font, Color32::WHITE);
    let badge = Rect::from_min_size(
        image.min + egui::vec2(2.0, 2.0),
        galley.size() + egui::vec2(6.0, 2.0),
    );
    painter.rect_filled(badge, 2.0, Color32::from_black_alpha(190));
    painter.galley(badge.min + egui::vec2(3.0, 1.0), galley, Color32::WHITE);
}

/// An ablated head's cross over its thumbnail.
fn ablated_mark(painter: &egui::Painter, image: Rect) {
    painter.rect_filled(image, 2.0, Color32::from_black_alpha(120));
    let stroke = Stroke::new(3.0, ABLATED);
    let inset = image.shrink(image.width() * 0.2);
    painter.line_segment([inset.left_top(), inset.right_bottom()], stroke);
    painter.line_segment([inset.right_top(), inset.left_bottom()], stroke);
}

/// A head's separator attention on its thumbnail: the value in the top
/// left corner and a bar along the bottom (full width = 1).
fn separator_overlay(painter: &egui::Painter, image: Rect, value: Option<f64>) {
    let bar_height = (image.height() * 0.09).clamp(4.0, 10.0);
    let track = Rect::from_min_max(
        egui::pos2(image.left(), image.bottom() - bar_height),
        image.right_bottom(),
    );
    painter.rect_filled(track, 0.0, Color32::from_black_alpha(170));
    if let Some(v) = value.filter(|v| v.is_finite()) {
        let fill = Rect::from_min_max(
            track.min,
            egui::pos2(
                track.left() + track.width() * v.clamp(0.0, 1.0) as f32,
                track.bottom(),
            ),
        );
        painter.rect_filled(fill, 0.0, Color32::from_rgb(255, 160, 50));
    }
    let text = figure(value, 2);
    let font = FontId::proportional((image.height() * 0.16).clamp(10.0, 14.0));
    let galley = painter.layout_no_wrap(text, font, Color32::WHITE);
    let badge = Rect::from_min_size(
        image.min + egui::vec2(2.0, 2.0),
        galley.size() + egui::vec2(6.0, 2.0),
    );
    painter.rect_filled(badge, 2.0, Color32::from_black_alpha(190));
    painter.galley(badge.min + egui::vec2(3.0, 1.0), galley, Color32::WHITE);
}

/// What the category colours of the captions mean (ANALYSIS.md §4).
fn category_legend(ui: &mut egui::Ui) {
    let mut entries: Vec<_> = [
        (
            Category::Repetition,
            "half or more pair a word with itself;",
        ),
        (Category::Focus, "half or more touch one token;"),
        (Category::Local, "half or more are close, in one sentence;"),
        (Category::Mixed, "none of these;"),
    ]
    .into_iter()
    .map(|(category, rule)| (category_style(Some(category)), rule.to_string()))
    .collect();
    entries.push((
        category_style(None),
        "fewer than two content tokens.".into(),
    ));
    legend(ui, "Categories, from each head's selected pairs:", &entries);
}

/// What the role colours of the captions mean (ANALYSIS.md §9), measured
/// on the induction probe or on the text.
fn role_legend(ui: &mut egui::Ui, roles: &CaptionRoles) {
    let mut entries: Vec<_> = [
        (Role::PreviousToken, "on the token before;"),
        (Role::DuplicateToken, "on earlier copies of the token;"),
        (Role::Induction, "on what followed earlier copies;"),
        (Role::Sink, "on the first token;"),
        (Role::Separator, "on separators;"),
        (Role::SelfAttention, "on the token itself;"),
    ]
    .into_iter()
    .map(|(role, score)| (role_style(Some(role)), score.to_string()))
    .collect();
    entries.push((
        role_style(Some(Role::Mixed)),
        format!("no score at least {ROLE_FLOOR} and {ROLE_MARGIN} above the next."),
    ));
    let attention = if roles.weighted {
        "value-weighted attention N′"
    } else {
        "attention"
    };
    let heading = if roles.on_probe {
        format!(
            "Roles, from each head's {attention} on the induction probe (the model's \
             leading tokens, 50 random tokens, the same 50 again): the largest score"
        )
    } else {
        format!("Roles, from each head's {attention} on this text: the largest score")
    };
    legend(ui, &heading, &entries);
}

/// A legend's line: its heading, then each caption's name in its colour
/// and what it means.
fn legend(ui: &mut egui::Ui, heading: &str, entries: &[((&str, Color32), String)]) {
    ui.horizontal_wrapped(|ui| {
        ui.weak(heading);
        for ((name, colour), meaning) in entries {
            ui.colored_label(*colour, *name);
            ui.weak(meaning);
        }
    });
}

fn head_tooltip(ui: &mut egui::Ui, output: &RunOutput, head: HeadId) {
    ui.strong(format!("Layer {} head {}", head.layer, head.head));
    if let Some(f) = output.analysis.head(head) {
        let (name, colour) = category_style(f.category);
        let (role, role_colour) = role_style(f.role);
        ui.horizontal(|ui| {
            ui.colored_label(colour, name);
            ui.weak("·");
            ui.colored_label(role_colour, format!("role: {role}"));
        });
        ui.label(format!(
            "mean distance {} · same sentence {} · repetition {}",
            figure(f.mean_distance, 1),
            figure(f.same_sentence_fraction, 2),
            figure(f.repetition_fraction, 2),
        ));
        if let Some(id) = f.focus_token_id {
            ui.label(format!(
                "focus token {} in {} of the pairs",
                output.input.tokens.describe_id(id),
                figure(f.focus_share, 2)
            ));
        }
    }
    ui.weak("Click to open; right click (or the key A) to ablate");
}

#[cfg(test)]
mod tests {
    use super::thumbnail_side;

    #[test]
    fn thumbnails_fill_the_width_and_deep_grids_scroll() {
        // 12 heads in 1150 points: 95-point columns, 89-point pictures.
        let (width, heads, below, gap) = (1150.0, 12, 22.0, 6.0);
        // 6 layers fit the height at full width.
        assert_eq!(thumbnail_side(width, 780.0, heads, 6, below, gap), 89.0);
        // 12 layers would need 43-point pictures to fit: the grid scrolls
        // at full width instead.
        assert_eq!(thumbnail_side(width, 780.0, heads, 12, below, gap), 89.0);
        // A little short of height: the whole grid, a little narrower.
        assert_eq!(thumbnail_side(width, 600.0, heads, 6, below, gap), 78.0);
        // Never below readable nor above the thumbnail's resolution.
        assert_eq!(thumbnail_side(200.0, 780.0, heads, 12, below, gap), 40.0);
        assert_eq!(thumbnail_side(4000.0, 4000.0, 2, 2, below, gap), 260.0);
    }
}
