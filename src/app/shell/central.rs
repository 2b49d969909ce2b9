//! The central area: the notice and run error banners, the model panel
//! while no model is in use, and otherwise the tab row and the tab's view
//! (see [`crate::app::views`]), and what the views ask of the app.

use crate::app::panels::model::{LoadState, ModelAction};
use crate::app::settings::CentralView;
use crate::app::views::heads::ablation::{AblationSlot, ImportanceSlot};
use crate::app::views::heads::probe::ProbeSlot;
use crate::app::views::logit_lens::LogitLensView;
use crate::app::views::shared::ViewAction;
use crate::app::views::ViewFrame;
use crate::app::widgets::busy;
use crate::app::HeadscopeApp;

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
            let heading = if matches!(self.model.load_state(), LoadState::Loading { .. }) {
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
                    busy::spinner(ui);
                    ui.label("Analysing…");
                });
            }
            return;
        };
        let output = shown.output.clone();
        let generation = shown.generation;
        let working = self.is_working();
        self.views.sync(generation, &output);
        if self
            .views
            .tab_row(ui, &mut self.settings.view, &output, working)
        {
            self.views.heads.detail = None;
        }
        let view = self.settings.view;
        if view == CentralView::Compare {
            self.request_comparison();
        }
        if view != CentralView::Heads {
            ui.separator();
        }
        let model_name = self.model.active().map_or("", |m| m.name.as_str());
        let frame = ViewFrame {
            output: &output,
            generation,
            settings: &mut self.settings,
            working,
            wake: &self.wake,
            model_name,
        };
        self.views.shared.hovered_cell = None;
        if let Some(action) = self.views.ui(ui, view, frame) {
            self.view_action(&ctx, action);
        }
        // A decoder's own next tokens, once a token's tooltip wanted them
        // (this frame or before); not while it generates, which makes a
        // new result per token.
        let next_tokens = &mut self.views.shared.next_tokens;
        if output.input.tokens.causal
            && next_tokens.is_asked()
            && !self.generate.is_running()
            && next_tokens.wanted(generation)
        {
            let answer = self.worker.next_tokens(output.clone());
            next_tokens.requested(generation, answer, None);
        }
    }

    /// Does what one of the views asked for.
    fn view_action(&mut self, ctx: &egui::Context, action: ViewAction) {
        match action {
            ViewAction::SavePlot(request) => self.save_plot(ctx, request),
            ViewAction::PickComparisonModel { file } => {
                self.dialogs
                    .comparison_model(&self.wake, file, self.model.remembered())
            }
            ViewAction::LoadComparisonModel(source) => self.load_comparison_model(source),
            ViewAction::ComputeLogitLens => {
                if let Some(shown) = self.runs.shown() {
                    let progress = LogitLensView::progress(shown.output.captures.layers);
                    let answer = self
                        .worker
                        .logit_lens(shown.output.clone(), progress.clone());
                    self.views
                        .logit_lens
                        .requested(shown.generation, answer, progress);
                }
            }
            ViewAction::RunInductionProbe => {
                if let Some(shown) = self.runs.shown() {
                    let progress = ProbeSlot::progress(shown.output.captures.layers);
                    // The roles need no residual stream.
                    let input = crate::pipeline::InputOptions {
                        keep_residuals: false,
                        ..self.settings.input_options(0)
                    };
                    let answer = self.worker.induction_probe(
                        input,
                        self.settings.analysis_options(),
                        progress.clone(),
                    );
                    self.views.heads.probe.requested(answer, progress);
                }
            }
            ViewAction::Ablate {
                input_ids,
                generation,
                ablation,
            } => {
                let progress = AblationSlot::progress();
                let answer = self
                    .worker
                    .ablate(input_ids, ablation.clone(), progress.clone());
                self.views
                    .heads
                    .ablation
                    .requested(generation, ablation, answer, progress);
            }
            ViewAction::AblatedRun {
                input,
                generation,
                ablation,
            } => {
                let progress = AblationSlot::run_progress();
                let asked = (*input, self.settings.analysis_options());
                let answer = self
                    .worker
                    .ablated_run(asked, ablation.clone(), progress.clone());
                self.views
                    .heads
                    .ablation
                    .requested_run(generation, ablation, answer, progress);
            }
            ViewAction::HeadImportance {
                input_ids,
                generation,
                mode,
            } => {
                // The probe, when shown, has the text's layers and heads.
                let heads = self
                    .runs
                    .shown()
                    .map_or(0, |s| s.output.captures.layers * s.output.captures.heads);
                let progress = ImportanceSlot::progress(heads);
                let answer = self
                    .worker
                    .head_importance(input_ids, mode, progress.clone());
                self.views
                    .heads
                    .ablation
                    .importance
                    .requested(generation, mode, answer, progress);
            }
            ViewAction::OpenHead(head) => {
                self.settings.view = CentralView::Heads;
                self.views.heads.open_head(head);
            }
            ViewAction::ShowLayer(layer) => self.show_layer(layer),
            ViewAction::ShowSeparatorOverlay => {
                self.settings.view = CentralView::Heads;
                self.views.heads.detail = None;
                self.settings.separator_overlay = true;
            }
        }
    }

    /// The model panel; does what it asked for.
    pub(super) fn model_panel_ui(&mut self, ui: &mut egui::Ui) {
        let action = self.model.panel_ui(ui);
        self.model_action(action);
    }

    pub(super) fn model_action(&mut self, action: Option<ModelAction>) {
        match action {
            Some(ModelAction::PickFolder) => {
                self.dialogs
                    .model(&self.wake, false, self.model.remembered())
            }
            Some(ModelAction::PickGguf) => {
                self.dialogs
                    .model(&self.wake, true, self.model.remembered())
            }
            Some(ModelAction::Load(source)) => self.load_model(source),
            None => {}
        }
    }
}
