//! What the app does with the files the user picks: the dialogs' answers
//! (open a text, load a model folder, save the text, an export), File →
//! Export of the result on screen, a plot's Save PNG / SVG / PDF…, and File → Save
//! text as…. Each outcome is reported in the notice banner; every file is
//! written atomically.

use super::notice::Notice;
use crate::app::files::dialogs::{self, Picked};
use crate::app::files::export_menu::{self, ExportKind};
use crate::app::files::plot_export::{self, PlotExport};
use crate::app::widgets::plots::SaveRequest;
use crate::app::HeadscopeApp;
use crate::captures::HeadId;
use crate::model::ModelSource;
use std::path::{Path, PathBuf};

impl HeadscopeApp {
    /// Draws the in-app dialogs open, and acts on the dialogs' answers.
    pub(crate) fn poll_dialogs(&mut self, ctx: &egui::Context) {
        self.dialogs
            .start_in(self.text.file().and_then(std::path::Path::parent));
        for picked in self.dialogs.poll(ctx) {
            match picked {
                Picked::Export(kind, head, path) => self.export_to(kind, head, &path),
                Picked::SaveText(path) => self.save_text_to(&path),
                Picked::OpenText(path) => self.open_file(&path),
                Picked::Model(path) => self.load_model(ModelSource::local(path)),
                Picked::ComparisonModel(path) => {
                    self.load_comparison_model(ModelSource::local(path));
                }
            }
        }
    }

    /// Writes the editor's whole text to `path` (atomically: a failed save
    /// leaves the old file as it was), which then becomes the text's file.
    pub fn save_text_to(&mut self, path: &Path) {
        let Some(document) = self.text.document() else {
            return;
        };
        self.notice = Some(match crate::export::save_text(document.text(), path) {
            Ok(()) => {
                self.text.set_file(path);
                Notice::passing(format!("Saved the text to {}", path.display()))
            }
            Err(error) => Notice::error(format!("Saving the text failed: {error}")),
        });
    }

    /// File → Save text (Ctrl+S): to the text's file, or where the user
    /// says when it has none (or is a capture's).
    pub fn save_text(&mut self) {
        match self.text.file().map(Path::to_path_buf) {
            Some(path) if !self.text.is_capture() => self.save_text_to(&path),
            _ => self.pick_text_save_path(),
        }
    }

    /// Asks where to save the text (File → Save text as…).
    pub(crate) fn pick_text_save_path(&mut self) {
        if self.text.document().is_none() {
            return;
        }
        let name = self
            .text
            .file()
            .map_or_else(|| "text.txt".to_string(), crate::app::text::file_name);
        self.dialogs.save_text(&self.wake, name);
    }

    /// The head an export of one head is about: the open one, else L0 H0.
    fn export_head(&self) -> HeadId {
        self.views.heads.detail.unwrap_or_default()
    }

    /// Asks where to write an export of `kind` as a file of `extension`
    /// (File → Export).
    pub(crate) fn pick_export_path(&mut self, kind: ExportKind, extension: &str) {
        let head = self.export_head();
        let name = kind.suggested_name(head, &self.settings, extension);
        self.dialogs.export(&self.wake, kind, head, name, extension);
    }

    /// Writes an export to `path` and reports the outcome in the banner.
    pub fn export_to(&mut self, kind: ExportKind, head: HeadId, path: &Path) {
        let Some(shown) = self.runs.shown() else {
            self.notice = Some(Notice::error(
                "nothing to export yet: no analysis is on screen",
            ));
            return;
        };
        let model_name = self.model.active().map_or("", |m| m.name.as_str());
        let result =
            export_menu::write_export(kind, &shown.output, head, &self.settings, model_name, path);
        self.notice = Some(Notice::export(result.map(|()| path)));
    }

    /// Starts saving a figure (one at a time).
    pub(crate) fn save_plot(&mut self, ctx: &egui::Context, request: SaveRequest) {
        if self.plots.export.is_none() {
            let target = self.plots.target.clone();
            let style = self.settings.figure_style;
            self.plots.export = Some(PlotExport::start(ctx, request, style, target));
        }
    }

    /// Saves plots to `path` from now on instead of asking where: for
    /// tests, which cannot answer a save dialog.
    pub fn set_plot_export_target(&mut self, path: Option<PathBuf>) {
        self.plots.target = path;
    }

    /// Moves a plot export on, after this frame's views are drawn.
    pub(crate) fn update_plot_export(&mut self, ctx: &egui::Context) {
        let Some(export) = &mut self.plots.export else {
            return;
        };
        let wake = self.wake.clone();
        let folder = self.dialogs.export_folder().map(Path::to_path_buf);
        let Some(outcome) = export.update(ctx, |name, format| {
            dialogs::save_figure(&wake, name, format, folder.as_deref())
        }) else {
            return;
        };
        self.plots.export = None;
        match outcome {
            plot_export::Outcome::Saved(path) => {
                // Export and Save figure start here next time.
                self.dialogs.exported_to(&path);
                self.notice = Some(Notice::export(Ok(&path)));
            }
            plot_export::Outcome::Cancelled => {}
            plot_export::Outcome::Failed(message) => {
                self.notice = Some(Notice::export(Err(message)));
            }
        }
    }
}
