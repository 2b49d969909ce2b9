//! The egui desktop app: type or open a text, and see every head of the
//! model at once, then one head up close.
//!
//! The window is laid out as a menu bar, a text panel on the left (editor,
//! window buttons, analysis settings), the overview grid or one head's
//! detail in the middle, and a status bar. Each view lives in its own file,
//! and so does each of the app's concerns:
//!
//! - [`startup`]: the command line's options, what eframe persists, and
//!   choosing the first model and text;
//! - [`model_panel`]: the model in use and the loads asked of the worker;
//! - [`text`]: the document, reading files off the UI thread, sentence
//!   windows; [`autosave`]: keeping the text on disk;
//! - [`runs`]: scheduling analyses on the [`AnalysisWorker`], which runs the
//!   model on its own thread: every edit schedules a run after a short
//!   pause, the newest request wins, and the last result stays on screen
//!   with a working indicator until the next one arrives;
//! - [`dialogs`]: the platform's file dialogs; [`saving`]: exports, plots
//!   and the text written to files;
//! - [`menus`]: the menu bar, shortcuts and dropped files; [`layout`]: the
//!   panels; [`central`]: the central area and its views;
//!   [`compare_view`]: a second model and the comparison with it.
//!
//! [`HeadscopeApp`] holds these as a few named parts, in the style of
//! egui's demo app and the rerun viewer: the persisted [`Settings`] apart
//! from the runtime state, the worker handle, the model, the text, the runs,
//! the views and the dialogs.

pub mod autosave;
pub mod central;
pub mod compare_view;
pub mod corpus_view;
pub mod derived;
pub mod dialogs;
pub mod document;
pub mod editor;
pub mod export_menu;
pub mod head_view;
pub mod heatmap;
pub mod layer_correlation;
pub mod layers_view;
pub mod layout;
pub mod menus;
pub mod model_panel;
pub mod notice;
pub mod overview;
pub mod plot_export;
pub mod runs;
pub mod saving;
pub mod selection;
pub mod separators_view;
pub mod settings;
pub mod specialisation_view;
pub mod startup;
pub mod status_bar;
pub mod table;
pub mod text;
pub mod token_focus_view;
pub mod token_text;
pub mod views;

use crate::captures::HeadId;
use crate::pipeline::RunOutput;
use crate::worker::{AnalysisWorker, WorkerEvent};
use central::Views;
use dialogs::FileDialogs;
use layout::Chrome;
use model_panel::{ModelChange, ModelState};
use notice::Notice;
use runs::Runs;
use settings::Settings;
use std::path::Path;
use std::sync::Arc;
use text::TextState;
use views::CentralView;

pub use runs::DEBOUNCE_SECONDS;
pub use startup::{run, AppConfig, StartOptions, SAMPLE_TEXT};

/// The app: the persisted settings, and the runtime state in named parts.
pub struct HeadscopeApp {
    /// The user's choices; persisted through eframe's storage (with the
    /// text, its file and the last model: see [`startup`]).
    settings: Settings,
    /// The model thread.
    worker: AnalysisWorker,
    /// Repaints the window; handed to every thread that answers the UI.
    wake: crate::worker::Waker,
    /// The model in use and the load in progress.
    model: ModelState,
    /// The text, its file, its sentence window and its autosave.
    text: TextState,
    /// The analysis owed, the one in flight, and the result on screen.
    runs: Runs,
    /// The central area's views and the corpus window.
    views: Views,
    /// The file dialogs open, and a plot being saved.
    dialogs: FileDialogs,
    /// The message banner above the views.
    notice: Option<Notice>,
    /// The window title, and the trace lines for scripts.
    chrome: Chrome,
}

impl HeadscopeApp {
    /// The model thread (tests use it to slow the model down).
    pub fn worker(&self) -> &AnalysisWorker {
        &self.worker
    }

    /// The corpus statistics window's state.
    pub fn corpus_view(&self) -> &corpus_view::CorpusView {
        &self.views.corpus
    }

    /// The corpus statistics window's state, to drive it (tests).
    pub fn corpus_view_mut(&mut self) -> &mut corpus_view::CorpusView {
        &mut self.views.corpus
    }

    /// The user's settings as they stand.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The window title the app asks for.
    pub fn window_title(&self) -> &str {
        self.chrome.title()
    }

    /// The model the analyses run on: the last one that loaded (a failed
    /// load keeps it).
    pub fn model_name(&self) -> Option<&str> {
        self.model.active().map(|m| m.name.as_str())
    }

    /// Whether an analysis is owed or running.
    pub fn is_working(&self) -> bool {
        self.runs.is_working(self.model.active().is_some())
    }

    /// The result on screen, if any.
    pub fn shown_output(&self) -> Option<&Arc<RunOutput>> {
        self.runs.shown().map(|s| &s.output)
    }

    /// Whether the overview's pictures show the current result with the
    /// current view settings (they are built off the UI thread).
    pub fn overview_is_current(&self) -> bool {
        self.runs.shown().is_some_and(|shown| {
            self.views
                .overview_is_current(shown.generation, &self.settings)
        })
    }

    /// The tab the central area shows.
    pub fn central_view(&self) -> CentralView {
        self.settings.view
    }

    /// The tokens picked in the study's views.
    pub fn picked_tokens(&self) -> &selection::TokenSelection {
        &self.views.study.selection
    }

    /// The layer the Heads grid is limited to, if any.
    pub fn grid_layer(&self) -> Option<usize> {
        self.views.study.grid_layer
    }

    /// The head open in the detail view.
    pub fn detail_head(&self) -> Option<HeadId> {
        self.views.detail
    }

    /// The whole text (empty while a file is being read).
    pub fn text(&self) -> &str {
        self.text.text()
    }

    /// The message banner, if one is showing.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|n| n.text.as_str())
    }

    /// Opens a text file: what File → Open, Ctrl+O, drag and drop and the
    /// command line all end in. The file is read off the UI thread; a file
    /// that cannot be used leaves the current text as it is.
    pub fn open_file(&mut self, path: &Path) {
        self.text
            .open_file(path, self.settings.input_mode, &self.wake);
    }

    /// Loads another model on the worker; the current one stays in use
    /// until the new one is ready, and stays if it fails.
    pub fn load_model(&mut self, source: crate::model::ModelSource) {
        self.model.loading(source.clone());
        self.worker.load_model(source);
    }

    /// Takes what the worker reported since the last frame.
    fn handle_worker_events(&mut self, ctx: &egui::Context) {
        while let Some(event) = self.worker.try_recv() {
            match event {
                WorkerEvent::ModelLoading { .. }
                | WorkerEvent::ModelProgress(_)
                | WorkerEvent::ModelReady(_)
                | WorkerEvent::ModelFailed { .. } => match self.model.on_event(event) {
                    Some(ModelChange::Ready) => self.runs.schedule_now(ctx),
                    Some(ModelChange::LoadFailed(message)) => {
                        self.notice = Some(Notice::error(message));
                    }
                    None => {}
                },
                WorkerEvent::ComparisonModel(event) => self.views.compare.on_model_event(*event),
                WorkerEvent::Comparison { generation, event } => {
                    if self.views.compare.on_comparison_event(generation, event) {
                        self.chrome.trace_line("comparison on screen");
                    }
                }
                WorkerEvent::RunStarted { .. }
                | WorkerEvent::RunFinished { .. }
                | WorkerEvent::RunAbandoned { .. }
                | WorkerEvent::RunFailed { .. } => {
                    if let Some(output) = self.runs.on_event(event) {
                        self.views.keep_detail_within(&output);
                        self.chrome.trace_result(self.runs.shown());
                    }
                }
            }
        }
    }
}

impl eframe::App for HeadscopeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.handle_worker_events(&ctx);
        self.poll_text_job(&ctx);
        self.poll_dialogs();
        self.handle_input(&ctx);
        self.send_due_request(&ctx);
        self.text.autosave_if_due(&ctx);
        self.chrome.update_title(&ctx, &self.text);
        self.layout(ui);
        self.chrome
            .trace_view(self.views.detail, self.settings.view);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        startup::Persisted::of(self).store(storage);
    }
}

impl Drop for HeadscopeApp {
    fn drop(&mut self) {
        // An edit younger than the autosave pause is written now.
        self.text.autosave_pending_now();
    }
}
