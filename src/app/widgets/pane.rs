//! Panels that say where they are: egui gives a panel no node of its own
//! in the accessibility tree, so a screen reader, and the layout test
//! (`tests/app/overlaps.rs`), would not know the region a widget belongs
//! in. Every panel of the app, the shell's and a view's own, marks its
//! contents with its rect through [`mark`].

/// Gives the accessibility node of a panel's contents (`ui`) the panel's
/// rect.
pub fn mark(ui: &egui::Ui) {
    let rect = ui.max_rect();
    ui.ctx().accesskit_node_builder(ui.unique_id(), |node| {
        node.set_bounds(egui::accesskit::Rect {
            x0: rect.min.x.into(),
            y0: rect.min.y.into(),
            x1: rect.max.x.into(),
            y1: rect.max.y.into(),
        });
    });
}
