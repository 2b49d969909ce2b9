//! The central area: the notice and run error banners, the model panel
//! while no model is in use, and otherwise the tabs: the Heads grid or one
//! head up close, and the study's views (see [`super::views`]).

use super::compare_view::CompareView;
use super::corpus_view::CorpusView;
use super::head_view::{HeadAction, HeadView};
use super::heatmap;
use super::overview::{Overview, ViewKey};
use super::plot_export::PlotExport;
use super::settings::{MatrixKind, Settings};
use super::views::{CentralView, ViewAction, ViewsState};
use super::HeadscopeApp;
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use crate::pipeline::RunOutput;
use std::path::PathBuf;

/// The views' runtime state (not persisted).
#[derive(Default)]
pub struct Views {
    pub overview: Overview,
    pub head_view: HeadView,
    /// The head open in the detail view; `None`: the grid.
    pub detail: Option<HeadId>,
    /// The study's views: picked tokens, chosen layer, filters.
    pub study: ViewsState,
    /// The corpus statistics window (File → Corpus statistics…).
    pub corpus: CorpusView,
    /// The Compare tab: model B and the comparison.
    pub compare: CompareView,
    /// A plot being saved as PNG (see [`super::plot_export`]).
    pub plot_export: Option<PlotExport>,
    /// Save plots here instead of asking (tests cannot open dialogs).
    pub plot_export_target: Option<PathBuf>,
}

impl Views {
    /// Everything the grid's pictures depend on.
    pub fn view_key(generation: u64, settings: &Settings) -> ViewKey {
        ViewKey {
            generation,
            kind: settings.matrix,
            variant: settings.similarity,
            colormap: settings.colormap,
            shared_scale: settings.shared_scale,
        }
    }

    pub fn overview_is_current(&self, generation: u64, settings: &Settings) -> bool {
        self.overview
            .is_current(Self::view_key(generation, settings))
    }

    /// Closes the detail when a new result has no such head.
    pub fn keep_detail_within(&mut self, output: &RunOutput) {
        if let Some(head) = self.detail {
            let (layers, heads) = (output.captures.layers, output.captures.heads);
            if head.layer >= layers || head.head >= heads {
                self.detail = None;
            }
        }
    }

    fn open_head(&mut self, head: HeadId) {
        self.detail = Some(head);
        self.head_view.request_focus();
    }
}

impl HeadscopeApp {
    pub(super) fn central(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        super::notice::banner_ui(ui, &mut self.notice);
        if let Some(error) = self.runs.error() {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.add(
                    egui::Label::new(egui::RichText::new(error).color(ui.visuals().error_fg_color))
                        .wrap(),
                );
                if self.runs.shown().is_some() {
                    ui.weak("The heatmaps below are from the last text that could be analysed.");
                }
            });
        }

        if self.model.active().is_none() {
            ui.add_space(24.0);
            let heading = if matches!(
                self.model.load_state(),
                super::model_panel::LoadState::Loading { .. }
            ) {
                "Loading the model"
            } else {
                "Choose a model"
            };
            ui.vertical_centered(|ui| ui.heading(heading));
            ui.add_space(8.0);
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.set_max_width(640.0);
                self.model_panel_ui(ui);
            });
            return;
        }

        let Some(shown) = self.runs.shown() else {
            if self.runs.error().is_none() {
                ui.add_space(24.0);
                ui.horizontal(|ui| {
                    ui.add(egui::Spinner::new());
                    ui.label("Analysing…");
                });
            }
            return;
        };
        let output = shown.output.clone();
        let generation = shown.generation;
        let key = Views::view_key(generation, &self.settings);
        let working = self.is_working();
        self.views.study.sync(generation, &output);
        if self
            .views
            .study
            .tab_row(ui, &mut self.settings.view, &output, working)
        {
            self.views.detail = None;
        }
        if self.settings.view == CentralView::Compare {
            ui.separator();
            self.compare_ui(ui, &output);
            return;
        }
        if self.settings.view != CentralView::Heads {
            ui.separator();
            let view = self.settings.view;
            if let Some(action) = self
                .views
                .study
                .ui(ui, view, &output, generation, &self.settings)
            {
                self.view_action(&ctx, action);
            }
            return;
        }
        match self.views.detail {
            Some(head) => self.head_detail(ui, &output, key, head, working),
            None => self.heads_grid(ui, &output, key, working),
        }
    }

    fn head_detail(
        &mut self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        key: ViewKey,
        head: HeadId,
        working: bool,
    ) {
        self.views.head_view.update(ui.ctx(), output, key, head);
        let picked: Vec<usize> = self.views.study.selection.positions().collect();
        let caption = match self.settings.matrix {
            MatrixKind::Similarity => format!(
                "L{} H{}: similarity S, {}",
                head.layer,
                head.head,
                self.settings.similarity.label()
            ),
            MatrixKind::Attention => format!(
                "L{} H{}: attention P (rows: query, columns: key)",
                head.layer, head.head
            ),
        };
        let range = self.views.head_view.range();
        view_controls(ui, &mut self.settings, working, Some(range), &caption);
        ui.separator();
        match self
            .views
            .head_view
            .ui(ui, output, head, &self.settings, working, &picked)
        {
            Some(HeadAction::Back) => self.views.detail = None,
            Some(HeadAction::Show(next)) => self.views.detail = Some(next),
            None => {}
        }
    }

    fn heads_grid(
        &mut self,
        ui: &mut egui::Ui,
        output: &std::sync::Arc<RunOutput>,
        key: ViewKey,
        working: bool,
    ) {
        self.views
            .overview
            .update(ui.ctx(), output, key, &self.wake);
        let range = self.views.overview.shared_range();
        let caption = match (self.settings.matrix, range.is_some()) {
            (MatrixKind::Similarity, true) => "similarity S, one scale for all heads",
            (MatrixKind::Similarity, false) => "similarity S, each head from its own min to max",
            (MatrixKind::Attention, true) => "attention P, one scale for all heads",
            (MatrixKind::Attention, false) => "attention P, each head from its own min to max",
        };
        view_controls(ui, &mut self.settings, working, range, caption);
        self.views.study.grid_controls(ui, &mut self.settings);
        ui.separator();
        let marks = self.views.study.grid_marks(output, &self.settings);
        if let Some(head) = self
            .views
            .overview
            .ui(ui, output, self.views.detail, &marks)
        {
            self.views.open_head(head);
        }
    }

    /// Does what one of the study's views asked for.
    fn view_action(&mut self, ctx: &egui::Context, action: ViewAction) {
        if let ViewAction::SavePlot(name) = action {
            self.save_plot(ctx, &name);
            return;
        }
        self.settings.view = CentralView::Heads;
        match action {
            ViewAction::OpenHead(head) => self.views.open_head(head),
            ViewAction::ShowLayer(layer) => {
                self.views.detail = None;
                self.views.study.grid_layer = Some(layer);
            }
            ViewAction::ShowSeparatorOverlay => {
                self.views.detail = None;
                self.settings.separator_overlay = true;
            }
            ViewAction::SavePlot(_) => {}
        }
    }

    /// The model panel; does what it asked for.
    pub(super) fn model_panel_ui(&mut self, ui: &mut egui::Ui) {
        let action = self.model.panel_ui(ui);
        self.model_action(action);
    }

    pub(super) fn model_action(&mut self, action: Option<super::model_panel::ModelAction>) {
        match action {
            Some(super::model_panel::ModelAction::PickFolder) => {
                self.dialogs.model_folder(&self.wake);
            }
            Some(super::model_panel::ModelAction::Load(source)) => self.load_model(source),
            None => {}
        }
    }
}

/// Similarity or attention, the colour map and its scale, above the grid
/// and the detail.
fn view_controls(
    ui: &mut egui::Ui,
    settings: &mut Settings,
    working: bool,
    range: Option<ValueRange>,
    caption: &str,
) {
    ui.horizontal(|ui| {
        ui.selectable_value(&mut settings.matrix, MatrixKind::Similarity, "Similarity")
            .on_hover_text("The context similarity S of each head's output vectors");
        ui.selectable_value(&mut settings.matrix, MatrixKind::Attention, "Attention")
            .on_hover_text("The attention probabilities P (rows: query, columns: key)");
        ui.separator();
        let label = ui.label("Colour map");
        egui::ComboBox::from_id_salt("colour map")
            .selected_text(settings.colormap.name())
            .show_ui(ui, |ui| {
                for map in ColorMap::all() {
                    ui.selectable_value(&mut settings.colormap, map, map.name());
                }
            })
            .response
            .labelled_by(label.id);
        ui.checkbox(&mut settings.shared_scale, "One scale for all heads")
            .on_hover_text("Off: each thumbnail spans its own min to max");
        ui.separator();
        heatmap::colour_bar(ui, settings.colormap, range, caption);
        if working {
            ui.add(egui::Spinner::new());
            ui.weak("updating…");
        }
    });
}
