//! Plots: each figure titled with buttons that save it as PNG, SVG or PDF
//! beside its title ([`figure`], saved by
//! [`crate::app::files::plot_export`] from the shapes it drew on screen),
//! per-layer curves that break where a figure is undefined, and the legend
//! drawn under a plot.

use crate::export::{ticks, FigureFormat};
use egui::{Color32, FontId, Id, Pos2, Rect, Sense, Stroke, Vec2};
use egui_plot::{Line, MarkerShape, Plot, PlotPoints, Points};

/// The accessible name of every figure's PNG save button.
pub const SAVE_LABEL: &str = "PNG…";

/// The button that saves a figure as `format` (after a "Save" label: short,
/// so that a title and its three buttons fit a plot a quarter of the
/// window wide).
pub fn save_label(format: FigureFormat) -> &'static str {
    match format {
        FigureFormat::Png => SAVE_LABEL,
        FigureFormat::Svg => "SVG…",
        FigureFormat::Pdf => "PDF…",
    }
}

/// A click on a figure's save button: which figure, in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveRequest {
    pub name: String,
    pub format: FigureFormat,
}

/// The figure being saved, and the width (points on screen) it is laid
/// out in while it is: its save buttons are hidden meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Saving {
    pub name: String,
    pub width: f32,
}

pub(crate) fn saving_id() -> Id {
    Id::unique("headscope plot export hides buttons")
}

pub(crate) fn drawn_id(name: &str) -> Id {
    Id::unique(("headscope plot drawn", name))
}

/// Where a figure was drawn in a pass: its rectangle, its layer and the
/// range of shapes it added there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Drawn {
    pub pass: u64,
    pub rect: Rect,
    pub layer: egui::LayerId,
    pub shapes: (usize, usize),
}

fn next_shape(ui: &egui::Ui) -> usize {
    let layer = ui.layer_id();
    ui.ctx()
        .graphics(|g| g.get(layer).map_or(0, |list| list.next_idx().0))
}

/// Draws one figure: `title` and save buttons (PNG, SVG, PDF), then
/// `content`. Returns the request when a save button was clicked. `name`
/// names the file offered in the save dialog and must be unique among the
/// figures on screen.
pub fn figure(
    ui: &mut egui::Ui,
    name: &str,
    title: &str,
    content: impl FnOnce(&mut egui::Ui),
) -> Option<SaveRequest> {
    let saving = ui.ctx().data(|d| d.get_temp::<Saving>(saving_id()));
    let hidden = saving.is_some();
    let mut clicked = None;
    let first = next_shape(ui);
    let response = ui
        .vertical(|ui| {
            if let Some(saving) = saving.as_ref().filter(|s| s.name == name) {
                // Laid out for the paper while it is saved, and drawn whole
                // even where it is scrolled out of view (egui leaves out
                // what is not visible), for that one frame.
                ui.set_max_width(saving.width);
                ui.set_clip_rect(Rect::EVERYTHING);
            }
            ui.horizontal_wrapped(|ui| {
                ui.strong(title);
                // While a figure is saved the buttons are drawn invisible,
                // so the layout stays the same.
                ui.add_visible(!hidden, egui::Label::new(egui::RichText::new("Save").weak().small()));
                for format in FigureFormat::ALL {
                    let button = egui::Button::new(save_label(format)).small();
                    if ui
                        .add_visible(!hidden, button)
                        .on_hover_text(format!(
                            "Save this figure as {}, sized for a paper (File → Export → Figure size)",
                            format.name()
                        ))
                        .clicked()
                    {
                        clicked = Some(format);
                    }
                }
            });
            content(ui);
        })
        .response;
    let drawn = Drawn {
        // (The pass number is read first: egui's context is locked inside
        // `data_mut`.)
        pass: ui.ctx().cumulative_pass_nr(),
        rect: response.rect,
        layer: ui.layer_id(),
        shapes: (first, next_shape(ui)),
    };
    ui.ctx().data_mut(|d| d.insert_temp(drawn_id(name), drawn));
    clicked.map(|format| SaveRequest {
        name: name.to_owned(),
        format,
    })
}

/// The points of a figure against layer, split where it is undefined so a
/// curve never bridges a gap.
pub fn segments(values: impl Iterator<Item = Option<f64>>) -> Vec<Vec<[f64; 2]>> {
    let mut out: Vec<Vec<[f64; 2]>> = vec![Vec::new()];
    for (layer, value) in values.enumerate() {
        match value.filter(|v| v.is_finite()) {
            Some(v) => out.last_mut().expect("never empty").push([layer as f64, v]),
            None => {
                if out.last().is_some_and(|s| !s.is_empty()) {
                    out.push(Vec::new());
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// A curve with markers, named `name` in the legend.
pub fn add_curve(
    plot_ui: &mut egui_plot::PlotUi<'_>,
    name: &str,
    colour: Color32,
    values: impl Iterator<Item = Option<f64>>,
) {
    add_segments(plot_ui, name, colour, segments(values));
}

/// The pieces of a curve (see [`segments`]) as lines with markers.
pub fn add_segments(
    plot_ui: &mut egui_plot::PlotUi<'_>,
    name: &str,
    colour: Color32,
    segments: Vec<Vec<[f64; 2]>>,
) {
    for segment in segments {
        plot_ui.line(
            Line::new(name, PlotPoints::from(segment.clone()))
                .color(colour)
                .width(2.0),
        );
        plot_ui.points(
            Points::new(name, PlotPoints::from(segment))
                .color(colour)
                .radius(3.5)
                .shape(MarkerShape::Circle),
        );
    }
}

/// The curves' names under a plot (a legend inside would hide points).
/// Each entry (swatch and name) is one piece, so a line break never
/// separates them.
pub fn legend(ui: &mut egui::Ui, entries: &[(Color32, &str, bool)]) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 14.0;
        let font = FontId::proportional(13.0);
        let text_colour = ui.visuals().text_color();
        for &(colour, name, dashed) in entries {
            let galley = ui
                .painter()
                .layout_no_wrap(name.to_owned(), font.clone(), text_colour);
            let swatch = 22.0;
            let size = Vec2::new(swatch + 6.0 + galley.size().x, galley.size().y.max(14.0));
            let (rect, response) = ui.allocate_exact_size(size, Sense::hover());
            response.widget_info(|| {
                egui::WidgetInfo::labeled(egui::Role::Label, true, format!("legend: {name}"))
            });
            let painter = ui.painter();
            let y = rect.center().y;
            if dashed {
                for k in 0..3 {
                    let x = rect.left() + k as f32 * 8.0;
                    painter.line_segment(
                        [Pos2::new(x, y), Pos2::new(x + 5.0, y)],
                        Stroke::new(2.0, colour),
                    );
                }
            } else {
                painter.line_segment(
                    [
                        Pos2::new(rect.left(), y),
                        Pos2::new(rect.left() + swatch, y),
                    ],
                    Stroke::new(2.0, colour),
                );
                painter.circle_filled(Pos2::new(rect.left() + swatch / 2.0, y), 3.5, colour);
            }
            painter.galley(
                Pos2::new(rect.left() + swatch + 6.0, y - galley.size().y / 2.0),
                galley,
                text_colour,
            );
        }
    });
}

pub fn layer_plot(id: &str, layers: usize, height: f32) -> Plot<'static> {
    let plot = Plot::new(id.to_owned())
        .height(height)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .show_x(false)
        .include_x(-0.3)
        .include_x(layers.saturating_sub(1) as f64 + 0.3)
        .x_axis_label("layer")
        .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
        .x_axis_formatter(move |mark, _| layer_tick(mark.value, layers));
    round_y_axis(plot)
}

/// `plot`'s value axis labelled at round values ([`round_grid_spacer`]),
/// each label at full strength.
pub fn round_y_axis(plot: Plot<'_>) -> Plot<'_> {
    plot.y_grid_spacer(round_grid_spacer)
        .custom_y_axes(vec![egui_plot::AxisHints::new_y()
            .label_spacing((LABEL_SPACING as f32 - 4.0)..=LABEL_SPACING as f32)
            .formatter(|mark, _| round_label(mark.value, mark.step_size))])
}

/// A grid value with the decimals its step needs. egui_plot's own
/// formatter rounds −log₁₀ of the step, which gives a step of 0.5 no
/// decimal: 0, 0.5, 1 would read "0", "0", "1".
pub fn round_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10()).ceil().max(0.0) as usize;
    let text = format!("{value:.decimals$}");
    // −0.0 reads as 0.
    if text
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        text.trim_start_matches('-').to_string()
    } else {
        text
    }
}

/// The least distance between two labelled grid values, in points.
const LABEL_SPACING: f64 = 22.0;

/// Grid lines at round values (steps of 1, 2 or 5 × 10ᵏ), labelled ones at
/// least [`LABEL_SPACING`] apart, and fainter ones between: an axis reads
/// 0, 0.2, 0.4 … 1 on screen and in a saved figure, not only 0 and 1.
pub fn round_grid_spacer(input: egui_plot::GridInput) -> Vec<egui_plot::GridMark> {
    // egui_plot's base step is a value per point times its least grid
    // spacing (8 points).
    let per_point = input.base_step_size / 8.0;
    let (min, max) = input.bounds;
    let step = ticks::nice_step(per_point * LABEL_SPACING);
    // Between labels: fifths of a step of 1 or 5 × 10ᵏ, halves of a 2.
    let mantissa = step / 10f64.powf(step.log10().floor());
    let fine = step
        / if (mantissa - 2.0).abs() < 1e-6 {
            2.0
        } else {
            5.0
        };
    let mut marks: Vec<egui_plot::GridMark> = ticks::multiples(min, max, fine)
        .into_iter()
        .map(|value| egui_plot::GridMark {
            value,
            step_size: fine,
        })
        .collect();
    marks.extend(
        ticks::multiples(min, max, step)
            .into_iter()
            .map(|value| egui_plot::GridMark {
                value,
                step_size: step,
            }),
    );
    marks
}

/// A layer axis's label at `value`: L0 … L(layers − 1), none elsewhere
/// (the margin around the last layer is no layer L(layers)).
pub fn layer_tick(value: f64, layers: usize) -> String {
    if value >= 0.0 && value.fract() == 0.0 && value < layers as f64 {
        format!("L{value:.0}")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_labels_keep_the_decimals_their_step_needs() {
        assert_eq!(round_label(0.5, 0.5), "0.5");
        assert_eq!(round_label(1.0, 0.5), "1.0");
        assert_eq!(round_label(0.15, 0.05), "0.15");
        assert_eq!(round_label(20.0, 10.0), "20");
        assert_eq!(round_label(-0.0, 0.2), "0.0");
        assert_eq!(round_label(0.30000000000000004, 0.1), "0.3");
    }

    #[test]
    fn a_value_axis_is_labelled_at_round_steps() {
        // A fraction plot 150 points tall: 0 … 1.1 in about 130 points.
        let per_point = 1.1 / 130.0;
        let marks = round_grid_spacer(egui_plot::GridInput {
            bounds: (-0.05, 1.1),
            base_step_size: per_point * 8.0,
        });
        let mut labelled: Vec<f64> = marks
            .iter()
            .filter(|m| m.step_size / per_point >= LABEL_SPACING)
            .map(|m| m.value)
            .collect();
        labelled.sort_by(f64::total_cmp);
        assert_eq!(labelled, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
    }

    #[test]
    fn a_layer_axis_names_only_the_layers_there_are() {
        assert_eq!(layer_tick(0.0, 30), "L0");
        assert_eq!(layer_tick(29.0, 30), "L29");
        assert_eq!(layer_tick(30.0, 30), "");
        assert_eq!(layer_tick(-1.0, 30), "");
        assert_eq!(layer_tick(2.5, 30), "");
    }

    #[test]
    fn undefined_figures_break_a_curve() {
        let s = segments([Some(1.0), None, Some(2.0), Some(3.0), None].into_iter());
        assert_eq!(s, vec![vec![[0.0, 1.0]], vec![[2.0, 2.0], [3.0, 3.0]]]);
        assert!(segments([None, None].into_iter()).is_empty());
    }
}
