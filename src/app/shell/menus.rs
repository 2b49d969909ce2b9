//! The menu bar, the keyboard shortcuts, and files dropped on the window.

use crate::app::corpus;
use crate::app::files::export_menu::ExportKind;
use crate::app::panels::outline;
use crate::app::settings::{CentralView, MatrixKind};
use crate::app::views::heads::ablation::ABLATE_KEY;
use crate::app::views::heads::detail;
use crate::app::HeadscopeApp;
use crate::export::{FigureFormat, FigureStyle, PaperWidth};
use egui::{Key, KeyboardShortcut, Modifiers};

impl HeadscopeApp {
    pub(super) fn menu_bar(&mut self, ui: &mut egui::Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| self.file_menu(ui));
            ui.menu_button("View", |ui| {
                ui.radio_value(
                    &mut self.settings.matrix,
                    MatrixKind::Similarity,
                    "Similarity S",
                );
                ui.radio_value(
                    &mut self.settings.matrix,
                    MatrixKind::Attention,
                    "Attention P",
                );
                ui.radio_value(
                    &mut self.settings.matrix,
                    MatrixKind::ValueWeighted,
                    "Value-weighted attention N′",
                );
                ui.separator();
                ui.checkbox(&mut self.settings.show_text_panel, "Text panel");
                if ui
                    .add(egui::Button::new(outline::MENU_LABEL).shortcut_text("Ctrl+F"))
                    .clicked()
                {
                    self.outline.open_find();
                    ui.close();
                }
                ui.checkbox(&mut self.settings.mark_pairs, "Outline selected pairs");
                ui.checkbox(
                    &mut self.settings.shared_scale,
                    "One colour scale for all heads",
                );
            });
        });
    }

    fn file_menu(&mut self, ui: &mut egui::Ui) {
        if ui
            .add(egui::Button::new("Open text file…").shortcut_text("Ctrl+O"))
            .clicked()
        {
            self.dialogs.open_text(&self.wake);
            ui.close();
        }
        if ui
            .add_enabled(
                self.text.document().is_some() && !self.text.is_capture(),
                egui::Button::new("Save text").shortcut_text("Ctrl+S"),
            )
            .on_hover_text("Save the text to the file it was opened from or saved to")
            .clicked()
        {
            self.save_text();
            ui.close();
        }
        if ui
            .add_enabled(
                self.text.document().is_some(),
                egui::Button::new("Save text as…").shortcut_text("Ctrl+Shift+S"),
            )
            .clicked()
        {
            self.pick_text_save_path();
            ui.close();
        }
        if ui.button("Open model folder…").clicked() {
            self.dialogs
                .model(&self.wake, false, self.model.remembered());
            ui.close();
        }
        if ui.button("Open GGUF file…").clicked() {
            self.dialogs
                .model(&self.wake, true, self.model.remembered());
            ui.close();
        }
        if ui.button("Choose model…").clicked() {
            self.model.open_window();
            ui.close();
        }
        if ui.button(corpus::MENU_LABEL).clicked() {
            self.corpus.open();
            ui.close();
        }
        ui.menu_button("Export", |ui| {
            let ready = self.runs.shown().is_some();
            for kind in ExportKind::ALL {
                if kind.is_figure() {
                    // One entry per format: the figure as PNG, SVG or PDF.
                    ui.add_enabled_ui(ready, |ui| {
                        ui.menu_button(kind.label(), |ui| {
                            for format in FigureFormat::ALL {
                                if ui.button(format!("{}…", format.name())).clicked() {
                                    self.pick_export_path(kind, format.extension());
                                    ui.close();
                                }
                            }
                        });
                    });
                } else if ui
                    .add_enabled(ready, egui::Button::new(kind.label()))
                    .clicked()
                {
                    self.pick_export_path(kind, kind.extension());
                    ui.close();
                }
            }
            ui.separator();
            ui.menu_button("Figure size", |ui| {
                figure_style_controls(ui, &mut self.settings.figure_style);
            });
        });
        ui.separator();
        if ui.button("Quit").clicked() {
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }

    /// Shortcuts, dropped files, and the arrow keys in a head's detail.
    pub(crate) fn handle_input(&mut self, ctx: &egui::Context) {
        let open = KeyboardShortcut::new(Modifiers::COMMAND, Key::O);
        if ctx.input_mut(|i| i.consume_shortcut(&open)) {
            self.dialogs.open_text(&self.wake);
        }
        let find = KeyboardShortcut::new(Modifiers::COMMAND, Key::F);
        if ctx.input_mut(|i| i.consume_shortcut(&find)) {
            self.outline.open_find();
        }
        // (Save as first: Ctrl+S would also match Ctrl+Shift+S.)
        let save_as = KeyboardShortcut::new(Modifiers::COMMAND | Modifiers::SHIFT, Key::S);
        if ctx.input_mut(|i| i.consume_shortcut(&save_as)) {
            self.pick_text_save_path();
        }
        let save = KeyboardShortcut::new(Modifiers::COMMAND, Key::S);
        if ctx.input_mut(|i| i.consume_shortcut(&save)) {
            self.save_text();
        }
        let dropped = ctx.input(|i| {
            i.raw
                .dropped_files
                .first()
                .map(|file| file.path().to_path_buf())
        });
        if let Some(path) = dropped {
            self.open_file(&path);
        }
        self.step_through_heads(ctx);
    }

    /// Arrow keys step through heads, A ablates the one shown or gives it
    /// back, Escape goes back to the grid, unless the user is typing.
    fn step_through_heads(&mut self, ctx: &egui::Context) {
        let (Some(head), Some(shown), CentralView::Heads) = (
            self.views.heads.detail,
            self.runs.shown(),
            self.settings.view,
        ) else {
            return;
        };
        if ctx.text_edit_focused() {
            return;
        }
        let (layers, heads) = (shown.output.captures.layers, shown.output.captures.heads);
        let mut target = head;
        let mut back = false;
        let mut toggle_ablation = false;
        ctx.input_mut(|i| {
            for (key, d_layer, d_head) in [
                (Key::ArrowLeft, 0, -1),
                (Key::ArrowRight, 0, 1),
                (Key::ArrowUp, -1, 0),
                (Key::ArrowDown, 1, 0),
            ] {
                if i.consume_key(Modifiers::NONE, key) {
                    target = detail::step(target, layers, heads, d_layer, d_head);
                }
            }
            back = i.consume_key(Modifiers::NONE, Key::Escape);
            toggle_ablation = i.consume_key(Modifiers::NONE, ABLATE_KEY);
        });
        if toggle_ablation {
            self.views.heads.ablation.toggle(head);
        }
        if back {
            self.views.heads.detail = None;
        } else if target != head {
            self.views.heads.detail = Some(target);
        }
    }

    /// The hint drawn over the window while files are dragged over it.
    pub(super) fn drop_overlay(&self, ctx: &egui::Context) {
        let hovering_files = ctx.input(|i| !i.raw.hovered_files.is_empty());
        if !hovering_files {
            return;
        }
        let painter = ctx.layer_painter(egui::LayerId::new(
            egui::Order::Foreground,
            egui::Id::unique("drop overlay"),
        ));
        let rect = ctx.content_rect();
        painter.rect_filled(rect, 0.0, egui::Color32::from_black_alpha(180));
        painter.text(
            rect.center(),
            egui::Align2::CENTER_CENTER,
            "Drop a text file to open it",
            egui::FontId::proportional(28.0),
            egui::Color32::WHITE,
        );
    }
}

/// The printed size of exported figures: a paper's column or page, and the
/// size of their text.
pub(crate) fn figure_style_controls(ui: &mut egui::Ui, style: &mut FigureStyle) {
    ui.label("Width in the paper");
    for width in PaperWidth::ALL {
        ui.radio_value(&mut style.width, width, width.label());
    }
    ui.add(
        egui::Slider::new(&mut style.font_size, FigureStyle::FONT_SIZES)
            .step_by(0.5)
            .fixed_decimals(1)
            .text("pt text"),
    );
}
