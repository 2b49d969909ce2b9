//! What the app asks of the model thread, and what it does with the
//! answers: the analysis owed once the text has rested, the comparison
//! with model B whenever a new result of model A is on screen, model
//! loads, the run the user cancels, and the events that come back.

use super::notice::Notice;
use crate::app::panels::model::ModelChange;
use crate::app::HeadscopeApp;
use crate::input::WindowStart;
use crate::model::ModelSource;
use crate::worker::{ModelEvent, ModelInfo, Slot, WorkerEvent};

impl HeadscopeApp {
    /// Takes what the worker reported since the last frame.
    pub(crate) fn handle_worker_events(&mut self, ctx: &egui::Context) {
        while let Some(event) = self.worker.try_recv() {
            match event {
                WorkerEvent::Model {
                    slot: Slot::Analysed,
                    event,
                } => {
                    // A capture shows the text it was taken of, read-only,
                    // named after the capture file; any other model lets
                    // the text be edited again.
                    if let ModelEvent::Ready(ModelInfo {
                        capture_text,
                        source,
                        ..
                    }) = &event
                    {
                        match (capture_text, source) {
                            (Some(text), ModelSource::Folder(path) | ModelSource::Gguf(path)) => {
                                let path = path.clone();
                                self.text.show_capture(
                                    text.clone(),
                                    self.settings.input_mode,
                                    &path,
                                );
                            }
                            (Some(text), ModelSource::Hub(_)) => {
                                self.text.show_text(text.clone(), self.settings.input_mode);
                            }
                            (None, _) => self.text.end_capture(),
                        }
                    }
                    self.on_model_event(ctx, event);
                }
                WorkerEvent::Model {
                    slot: Slot::Compared,
                    event,
                } => {
                    // Model B joins the recent models (persisted with them).
                    if let ModelEvent::Ready(info) = &event {
                        self.model.add_recent(info.source.to_string());
                    }
                    self.views.compare.on_model_event(event);
                }
                WorkerEvent::Comparison { generation, event } => {
                    if self.views.compare.on_comparison_event(generation, event) {
                        self.chrome.trace_line("comparison on screen");
                    }
                }
                WorkerEvent::RunStarted { .. }
                | WorkerEvent::RunProgress { .. }
                | WorkerEvent::RunFinished { .. }
                | WorkerEvent::RunAbandoned { .. }
                | WorkerEvent::RunFailed { .. } => {
                    if let Some(output) = self.runs.on_event(event) {
                        self.text.settle_window(self.runs.shown());
                        self.views.heads.keep_within(&output);
                        self.chrome.trace_result(self.runs.shown());
                    }
                }
            }
        }
        // Compare's panel for model B offers what the Model window offers.
        self.views.compare.share_recent(self.model.recent());
    }

    fn on_model_event(&mut self, ctx: &egui::Context, event: ModelEvent) {
        match self.model.on_event(event) {
            Some(ModelChange::Ready) => {
                // Another model's layers: no layer filter carries over, nor
                // the last model's probe.
                self.views.heads.grid_layer = None;
                self.views.heads.probe.forget();
                self.views.heads.ablation.forget();
                self.runs.schedule_now(ctx);
            }
            Some(ModelChange::LoadFailed(message)) => {
                self.notice = Some(Notice::error(message));
            }
            None => {}
        }
    }

    /// Sends the owed request once the pause is over, a model is ready and
    /// the text is not being read.
    pub(crate) fn send_due_request(&mut self, ctx: &egui::Context) {
        if !self.runs.is_due(ctx) || self.model.active().is_none() || self.text.is_busy() {
            return;
        }
        // (The request keeps the window within the text first.)
        let Some((text, input_start)) = self.text.request(self.window_tokens()) else {
            return;
        };
        let first = self.text.window_start();
        let total = self.text.document().map_or(0, |d| d.sentence_count());
        let input = self.settings.input_options(input_start);
        let generation = self
            .worker
            .analyse(text, input, self.settings.analysis_options());
        self.runs.sent(generation, first, total);
    }

    /// The most tokens a window holds: the user's limit, else the model's
    /// (what a large document's request must leave room for).
    fn window_tokens(&self) -> usize {
        let model_limit = self.model.active().map_or(0, |m| m.max_tokens);
        match self.settings.max_tokens {
            0 => model_limit,
            limit => limit.min(model_limit.max(1)),
        }
    }

    /// Abandons the run in flight (the status bar's Cancel): the worker
    /// stops it between two layers, and the last result stays on screen.
    pub(crate) fn cancel_run(&mut self) {
        if !self.runs.in_flight() {
            return;
        }
        self.worker.cancel_run();
        self.runs.forget();
        // The window asked for is not the one on screen: back to it.
        if let Some(shown) = self.runs.shown() {
            self.text.return_to_shown(&shown.first);
        }
        self.notice = Some(Notice::info(
            "Analysis cancelled: the figures on screen are from the last finished run. \
             Edit the text, change a setting or move the window to analyse again.",
        ));
    }

    /// Loads another model on the worker; the current one stays in use
    /// until the new one is ready, and stays if it fails.
    pub fn load_model(&mut self, source: ModelSource) {
        self.model.loading(source.clone());
        self.worker.load_model(source);
    }

    /// Loads model B, for the Compare tab; model A stays as it is.
    pub fn load_comparison_model(&mut self, source: ModelSource) {
        self.views.compare.loading(source.clone());
        self.worker.load_comparison_model(source);
    }

    /// Asks for a comparison when model B is loaded and a result of A that
    /// has not been compared yet is on screen with nothing owed.
    pub(super) fn request_comparison(&mut self) {
        if self.is_working() {
            return;
        }
        let Some(shown) = self.runs.shown() else {
            return;
        };
        let Some(wanted) = self.views.compare.owed(shown.generation) else {
            return;
        };
        let Some(document) = self.text.document() else {
            return;
        };
        let (text, sentence) = document.request(shown.first.sentence, self.window_tokens());
        let input = self.settings.input_options(WindowStart {
            sentence,
            piece: shown.output.input.first_piece,
        });
        let progress = self.views.compare.progress();
        let generation = self.worker.compare(
            text,
            input,
            self.settings.analysis_options(),
            shown.output.clone(),
            progress.clone(),
        );
        self.views.compare.requested(wanted, generation, progress);
    }
}
