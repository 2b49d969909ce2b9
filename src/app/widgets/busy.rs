//! The app's spinner: egui's arc, turned a few times a second. egui's own
//! [`egui::Spinner`] asks for the next frame at once, so while it is on
//! screen the window repaints as fast as it can; under a software
//! renderer (Mesa's llvmpipe, on a machine without a GPU) those frames
//! take the cores the job it waits for needs, and a long analysis ran
//! twice as long in a real window as headless.

use std::time::Duration;

/// How long one picture of the spinner stays: eight steps a second read as
/// turning.
const STEP: Duration = Duration::from_millis(125);

/// Draws the spinner at the height of a row and asks for the next step's
/// frame.
pub fn spinner(ui: &mut egui::Ui) -> egui::Response {
    let side = ui.style().spacing.interact_size.y;
    spinner_of_side(ui, side)
}

/// [`spinner`], `side` points square.
pub fn spinner_of_side(ui: &mut egui::Ui, side: f32) -> egui::Response {
    let (rect, response) = ui.allocate_exact_size(egui::vec2(side, side), egui::Sense::hover());
    response.widget_info(|| egui::WidgetInfo::new(egui::Role::ProgressIndicator));
    if ui.is_rect_visible(rect) {
        let step = STEP.as_secs_f64();
        let time = (ui.input(|i| i.time) / step).floor() * step;
        let start = time * std::f64::consts::TAU;
        let end = start + 240f64.to_radians() * time.sin();
        let radius = rect.height().min(rect.width()) * 0.5 - 2.0;
        let points = (radius.round() as u32).clamp(8, 128);
        let arc = (0..points)
            .map(|i| {
                let angle = egui::emath::lerp(start..=end, i as f64 / points as f64);
                let (sin, cos) = angle.sin_cos();
                rect.center() + radius * egui::vec2(cos as f32, sin as f32)
            })
            .collect();
        let colour = ui.visuals().strong_text_color();
        ui.painter()
            .add(egui::Shape::line(arc, egui::Stroke::new(3.0, colour)));
        ui.ctx().request_repaint_after(STEP);
    }
    response
}
