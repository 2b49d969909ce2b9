//! Plots: each figure titled with a "Save PNG…" button beside its title
//! ([`figure`], saved by [`crate::app::files::plot_export`] exactly as it
//! is on screen), per-layer curves that break where a figure is undefined,
//! and the legend drawn under a plot.

use egui::{Color32, FontId, Id, Pos2, Sense, Stroke, Vec2};
use egui_plot::{Line, MarkerShape, Plot, PlotPoints, Points};

/// The accessible name of every figure's save button.
pub const SAVE_LABEL: &str = "Save PNG…";

pub(crate) fn hidden_id() -> Id {
    Id::unique("headscope plot export hides buttons")
}

pub(crate) fn rect_id(name: &str) -> Id {
    Id::unique(("headscope plot rect", name))
}

/// Draws one figure: `title` and a save button, then `content`. Returns
/// `name` when the save button was clicked. `name` names the file offered
/// in the save dialog and must be unique among the figures on screen.
pub fn figure(
    ui: &mut egui::Ui,
    name: &str,
    title: &str,
    content: impl FnOnce(&mut egui::Ui),
) -> Option<String> {
    let hidden = ui
        .ctx()
        .data(|d| d.get_temp::<bool>(hidden_id()).unwrap_or(false));
    let mut clicked = false;
    let response = ui
        .vertical(|ui| {
            ui.horizontal(|ui| {
                ui.strong(title);
                // While a screenshot is taken the button is drawn invisible,
                // so the layout, and the cut-out, stay the same.
                clicked = ui
                    .add_visible(!hidden, egui::Button::new(SAVE_LABEL).small())
                    .on_hover_text("Save this plot as a PNG image, as it is on screen")
                    .clicked();
            });
            content(ui);
        })
        .response;
    let rect = response.rect.intersect(ui.clip_rect());
    // (The pass number is read first: egui's context is locked inside
    // `data_mut`.)
    let pass = ui.ctx().cumulative_pass_nr();
    ui.ctx()
        .data_mut(|d| d.insert_temp(rect_id(name), (pass, rect)));
    clicked.then(|| name.to_owned())
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
    Plot::new(id.to_owned())
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
        .x_axis_formatter(|mark, _| {
            let v = mark.value;
            if v >= 0.0 && v.fract() == 0.0 {
                format!("L{v:.0}")
            } else {
                String::new()
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_figures_break_a_curve() {
        let s = segments([Some(1.0), None, Some(2.0), Some(3.0), None].into_iter());
        assert_eq!(s, vec![vec![[0.0, 1.0]], vec![[2.0, 2.0], [3.0, 3.0]]]);
        assert!(segments([None, None].into_iter()).is_empty());
    }
}
