//! The outline panel on the right (View → Outline and find, Ctrl+F): its
//! jobs each frame while it is open, and the window it asks to analyse.

use crate::app::panels::outline::OutlineKey;
use crate::app::text::document::Document;
use crate::app::HeadscopeApp;
use crate::input::WindowStart;

impl HeadscopeApp {
    /// Cuts the outline again and searches once the text has rested, while
    /// the panel is open.
    pub(crate) fn update_outline(&mut self, ctx: &egui::Context) {
        if !self.outline.open {
            return;
        }
        let key = self.model.active().map(|model| OutlineKey {
            version: self.text.document().map_or(0, Document::version),
            input: self.settings.input_options(WindowStart::default()),
            model: model.name.clone(),
        });
        self.outline
            .update(ctx, &self.worker, &self.wake, self.text.document(), key);
    }

    /// The panel, with the analysed window (or the one asked for, until it
    /// is) highlighted; a jump analyses the window at once, and "Previous
    /// window" comes back.
    pub(super) fn outline_panel_ui(&mut self, ui: &mut egui::Ui) {
        let analysed = self
            .text
            .window_info(self.runs.shown())
            .map_or(self.text.window_start(), |w| w.first);
        let jump = self.outline.ui(ui, self.text.document(), analysed);
        if let Some(start) = jump {
            self.text.jump_to(start);
            self.runs.schedule_now(ui.ctx());
        }
    }
}
