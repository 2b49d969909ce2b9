//! The egui desktop app: type or open a text, and see every head of the
//! model at once, then one head up close.
//!
//! The window is laid out as a menu bar, a text panel on the left (editor,
//! window buttons, analysis settings), the overview grid or one head's
//! detail in the middle, and a status bar. Each view lives in its own file;
//! this module owns the runtime state and wires the views to the
//! [`AnalysisWorker`], which runs the model on its own thread: every edit
//! schedules a run after a short pause, the newest request wins, and the
//! last result stays on screen with a working indicator until the next one
//! arrives.
//!
//! [`Settings`] and the text persist through eframe's storage; the text is
//! also autosaved to a file in headscope's cache folder shortly after each
//! edit and restored at start, so a crash or a kill loses nothing.

pub mod corpus_view;
pub mod derived;
pub mod dialogs;
pub mod document;
pub mod editor;
pub mod export_menu;
pub mod head_view;
pub mod heatmap;
pub mod layers_view;
pub mod model_panel;
pub mod overview;
pub mod plot_export;
pub mod selection;
pub mod separators_view;
pub mod settings;
pub mod specialisation_view;
pub mod status_bar;
pub mod table;
pub mod token_focus_view;
pub mod token_text;
pub mod views;

use crate::captures::HeadId;
use crate::colormap::ColorMap;
use crate::model::{find_default_model, ModelSource};
use crate::pipeline::{InputOptions, RunOutput};
use crate::textfile::read_text_file;
use crate::worker::{AnalysisWorker, WorkerEvent};
use crossbeam_channel::Receiver;
use document::{spawn_job, Autosaver, Document};
use editor::{WindowInfo, WindowMove};
use egui::{Key, KeyboardShortcut, Modifiers};
use head_view::{HeadAction, HeadView};
use model_panel::{ModelAction, ModelPanel, ModelStatus};
use overview::{Overview, ViewKey};
use serde::{Deserialize, Serialize};
use settings::{MatrixKind, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use views::{CentralView, ViewAction, ViewsState};

/// The pause after the last edit before the analysis runs again.
pub const DEBOUNCE_SECONDS: f64 = 0.15;
/// The pause after the last edit before the text is autosaved.
const AUTOSAVE_SECONDS: f64 = 1.0;
/// Texts up to this size are also kept in eframe's storage; larger ones
/// only in the autosave file.
const PERSISTED_TEXT_LIMIT: usize = 1024 * 1024;

/// The text the editor starts with the first time.
pub const SAMPLE_TEXT: &str = include_str!("../../assets/sample.txt");

/// What the command line asked the app to open.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub model: Option<String>,
    pub file: Option<PathBuf>,
}

/// Everything [`HeadscopeApp::new`] needs beyond eframe's context.
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub start: StartOptions,
    /// Where the text is autosaved; `None` neither saves nor restores it.
    pub autosave_path: Option<PathBuf>,
    /// Restore the autosaved (or persisted) text when no file is given.
    pub restore_text: bool,
}

impl AppConfig {
    /// The configuration of the real app: autosave in the cache folder.
    pub fn new(start: StartOptions) -> Self {
        Self {
            start,
            autosave_path: Some(document::default_autosave_path()),
            restore_text: true,
        }
    }
}

/// Opens the window and runs until it is closed.
pub fn run(options: StartOptions) -> anyhow::Result<()> {
    let native = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("headscope")
            .with_app_id("headscope")
            .with_inner_size([1600.0, 1000.0])
            .with_min_inner_size([900.0, 560.0])
            .with_drag_and_drop(true),
        ..Default::default()
    };
    let config = AppConfig::new(options);
    eframe::run_native(
        "headscope",
        native,
        Box::new(move |cc| {
            let app = HeadscopeApp::new(cc, config)?;
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("cannot open the headscope window: {e}"))
}

/// What eframe stores between sessions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
struct Persisted {
    settings: Settings,
    text: Option<String>,
    file: Option<PathBuf>,
    first_sentence: usize,
    /// The last model that loaded, as the user would type it.
    model: Option<String>,
}

/// A message shown in a banner above the heatmaps.
#[derive(Debug, Clone, PartialEq)]
struct Notice {
    text: String,
    error: bool,
}

impl Notice {
    fn info(text: impl Into<String>) -> Self {
        Notice {
            text: text.into(),
            error: false,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Notice {
            text: text.into(),
            error: true,
        }
    }

    /// The banner after an export (File → Export, or a plot's Save PNG…).
    fn export(result: Result<&Path, String>) -> Self {
        match result {
            Ok(path) => Notice::info(format!("Exported {}", path.display())),
            Err(message) => Notice::error(format!("Export failed: {message}")),
        }
    }
}

/// Where a text being prepared off the UI thread comes from.
#[derive(Debug, Clone, PartialEq)]
enum TextSource {
    File(PathBuf),
    Autosave,
    /// The same text split again in another input mode.
    Resplit,
}

/// A file being read (or a text being split) on another thread.
struct TextJob {
    source: TextSource,
    result: Receiver<Result<PreparedText, String>>,
}

struct PreparedText {
    document: Document,
    warning: Option<String>,
}

/// The result on screen.
struct Shown {
    generation: u64,
    output: Arc<RunOutput>,
    first_sentence: usize,
}

/// The app: settings, runtime state and the views.
pub struct HeadscopeApp {
    settings: Settings,
    worker: AnalysisWorker,
    wake: crate::worker::Waker,
    model_status: ModelStatus,
    /// The model the worker is using (a failed load keeps the old one).
    active_model: Option<crate::worker::ModelInfo>,
    model_panel: ModelPanel,
    show_model_window: bool,
    remembered_model: Option<String>,

    document: Option<Document>,
    text_job: Option<TextJob>,
    /// Used when restoring the autosave fails.
    fallback_text: String,
    file: Option<PathBuf>,
    notice: Option<Notice>,
    first_sentence: usize,
    window_history: Vec<usize>,

    /// When the text or a setting last changed and a run is owed.
    pending_since: Option<f64>,
    /// The request in flight: generation and window start.
    in_flight: Option<(u64, usize)>,
    shown: Option<Shown>,
    run_error: Option<String>,

    overview: Overview,
    head_view: HeadView,
    detail: Option<HeadId>,
    /// The study's views: picked tokens, chosen layer, filters.
    views: ViewsState,
    /// The corpus statistics window (File → Corpus statistics…).
    corpus: corpus_view::CorpusView,

    autosaver: Option<Autosaver>,
    autosave_due: Option<f64>,
    file_dialog: Option<Receiver<Option<PathBuf>>>,
    folder_dialog: Option<Receiver<Option<PathBuf>>>,
    /// A save dialog for an export, with what it is for.
    export_dialog: Option<(export_menu::ExportKind, HeadId, Receiver<Option<PathBuf>>)>,
    /// A save dialog for File → Save text as….
    text_save_dialog: Option<Receiver<Option<PathBuf>>>,
    /// A plot being saved as PNG (see [`plot_export`]).
    plot_export: Option<plot_export::PlotExport>,
    /// Save plots here instead of asking (tests cannot open dialogs).
    plot_export_target: Option<PathBuf>,
    title: String,
    title_sent: String,
    /// `HEADSCOPE_TRACE=1`: one stderr line per result and per head opened,
    /// for scripts that drive the real window (screenshots).
    trace: bool,
    traced_detail: Option<HeadId>,
    traced_view: Option<CentralView>,
}

impl HeadscopeApp {
    pub fn new(cc: &eframe::CreationContext<'_>, config: AppConfig) -> anyhow::Result<Self> {
        let ctx = cc.egui_ctx.clone();
        install_fonts(&ctx);
        let persisted: Persisted = cc
            .storage
            .and_then(|storage| eframe::get_value(storage, eframe::APP_KEY))
            .unwrap_or_default();
        let wake_ctx = ctx.clone();
        let wake: crate::worker::Waker = Arc::new(move || wake_ctx.request_repaint());
        let worker = AnalysisWorker::spawn(wake.clone())
            .map_err(|e| anyhow::anyhow!("cannot start the model thread: {e}"))?;
        let mut app = Self {
            settings: persisted.settings.clone(),
            worker,
            wake,
            model_status: ModelStatus::NotChosen,
            active_model: None,
            model_panel: ModelPanel::default(),
            show_model_window: false,
            remembered_model: persisted.model.clone(),
            document: None,
            text_job: None,
            fallback_text: persisted
                .text
                .clone()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| SAMPLE_TEXT.to_string()),
            file: persisted.file.clone(),
            notice: None,
            first_sentence: persisted.first_sentence,
            window_history: Vec::new(),
            pending_since: None,
            in_flight: None,
            shown: None,
            run_error: None,
            overview: Overview::default(),
            head_view: HeadView::default(),
            detail: None,
            views: ViewsState::default(),
            corpus: corpus_view::CorpusView::default(),
            autosaver: config.autosave_path.clone().map(Autosaver::new),
            autosave_due: None,
            file_dialog: None,
            export_dialog: None,
            text_save_dialog: None,
            plot_export: None,
            plot_export_target: None,
            folder_dialog: None,
            title: String::new(),
            title_sent: String::new(),
            trace: std::env::var_os("HEADSCOPE_TRACE").is_some_and(|v| v == "1"),
            traced_detail: None,
            traced_view: None,
        };

        // The model: the command line's, else the last one that loaded,
        // else whatever headscope finds.
        let source = match &config.start.model {
            Some(text) => Some(ModelSource::parse(text)),
            None => app
                .remembered_model
                .as_deref()
                .and_then(|text| ModelSource::parse(text).ok())
                .or_else(find_default_model)
                .map(Ok),
        };
        match source {
            Some(Ok(source)) => app.load_model(source),
            Some(Err(error)) => {
                app.model_status = ModelStatus::Failed {
                    source: None,
                    message: error.to_string(),
                }
            }
            None => app.model_status = ModelStatus::NotChosen,
        }

        // The text: the command line's file, else the autosave, else the
        // persisted text, else the sample.
        let autosave = config
            .autosave_path
            .as_ref()
            .filter(|path| config.restore_text && path.is_file());
        if let Some(file) = &config.start.file {
            app.document = Some(Document::new(
                app.fallback_text.clone(),
                app.settings.input_mode,
            ));
            app.first_sentence = 0;
            app.open_file(file);
        } else if let Some(path) = autosave {
            app.start_text_job(TextSource::Autosave, path.clone());
        } else {
            let text = if config.restore_text {
                app.fallback_text.clone()
            } else {
                SAMPLE_TEXT.to_string()
            };
            if !config.restore_text {
                app.file = None;
                app.first_sentence = 0;
            }
            app.document = Some(Document::new(text, app.settings.input_mode));
        }
        app.schedule_run_now(&ctx);
        Ok(app)
    }

    /// The model thread (tests use it to slow the model down).
    pub fn worker(&self) -> &AnalysisWorker {
        &self.worker
    }

    /// The corpus statistics window's state.
    pub fn corpus_view(&self) -> &corpus_view::CorpusView {
        &self.corpus
    }

    /// The corpus statistics window's state, to drive it (tests).
    pub fn corpus_view_mut(&mut self) -> &mut corpus_view::CorpusView {
        &mut self.corpus
    }

    /// The user's settings as they stand.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The window title the app asks for.
    pub fn window_title(&self) -> &str {
        &self.title
    }

    /// Whether an analysis is owed or running.
    pub fn is_working(&self) -> bool {
        // A run owed while no model is loaded is not work in progress:
        // it starts once a model is ready.
        self.in_flight.is_some() || (self.pending_since.is_some() && self.active_model.is_some())
    }

    /// The result on screen, if any.
    pub fn shown_output(&self) -> Option<&Arc<RunOutput>> {
        self.shown.as_ref().map(|s| &s.output)
    }

    /// Whether the overview's pictures show the current result with the
    /// current view settings (they are built off the UI thread).
    pub fn overview_is_current(&self) -> bool {
        self.shown
            .as_ref()
            .is_some_and(|shown| self.overview.is_current(self.view_key(shown.generation)))
    }

    fn view_key(&self, generation: u64) -> ViewKey {
        ViewKey {
            generation,
            kind: self.settings.matrix,
            variant: self.settings.similarity,
            colormap: self.settings.colormap,
            shared_scale: self.settings.shared_scale,
        }
    }

    /// The tab the central area shows.
    pub fn central_view(&self) -> CentralView {
        self.settings.view
    }

    /// The tokens picked in the study's views.
    pub fn picked_tokens(&self) -> &selection::TokenSelection {
        &self.views.selection
    }

    /// The layer the Heads grid is limited to, if any.
    pub fn grid_layer(&self) -> Option<usize> {
        self.views.grid_layer
    }

    /// The head open in the detail view.
    pub fn detail_head(&self) -> Option<HeadId> {
        self.detail
    }

    /// The whole text (empty while a file is being read).
    pub fn text(&self) -> &str {
        self.document.as_ref().map_or("", Document::text)
    }

    /// The message banner, if one is showing.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|n| n.text.as_str())
    }

    /// Opens a text file: what File → Open, Ctrl+O, drag and drop and the
    /// command line all end in. The file is read off the UI thread; a file
    /// that cannot be used leaves the current text as it is.
    pub fn open_file(&mut self, path: &Path) {
        self.start_text_job(TextSource::File(path.to_path_buf()), path.to_path_buf());
    }

    /// Writes the editor's whole text to `path` (atomically: a failed save
    /// leaves the old file as it was), which then becomes the text's file.
    pub fn save_text_to(&mut self, path: &Path) {
        let Some(document) = &self.document else {
            return;
        };
        self.notice = Some(match crate::export::save_text(document.text(), path) {
            Ok(()) => {
                self.file = Some(path.to_path_buf());
                Notice::info(format!("Saved the text to {}", path.display()))
            }
            Err(error) => Notice::error(format!("Saving the text failed: {error}")),
        });
    }

    fn pick_text_save_path(&mut self) {
        if self.text_save_dialog.is_some() || self.document.is_none() {
            return;
        }
        let name = self
            .file
            .as_deref()
            .map_or_else(|| "text.txt".to_string(), file_name);
        self.text_save_dialog = Some(dialogs::spawn_dialog(self.wake.clone(), move || {
            rfd::FileDialog::new()
                .set_title("Save text as")
                .set_file_name(name)
                .add_filter("Text", &["txt"])
                .save_file()
        }));
    }

    /// Loads another model on the worker.
    pub fn load_model(&mut self, source: ModelSource) {
        self.model_status = ModelStatus::Loading {
            source: source.clone(),
            progress: None,
        };
        self.worker.load_model(source);
    }

    fn start_text_job(&mut self, source: TextSource, path: PathBuf) {
        let mode = self.settings.input_mode;
        let result = spawn_job("headscope-open", self.wake.clone(), move || {
            let file = read_text_file(&path).map_err(|e| e.to_string())?;
            Ok(PreparedText {
                document: Document::new(file.text, mode),
                warning: file.warning,
            })
        });
        self.text_job = Some(TextJob { source, result });
    }

    /// Splits the text again after the input mode changed: at once for a
    /// small text, on a thread for a large one.
    fn resplit(&mut self) {
        let mode = self.settings.input_mode;
        let Some(document) = self.document.take() else {
            return;
        };
        if document.edits_whole_text() {
            self.document = Some(document.with_mode(mode));
            return;
        }
        let result = spawn_job("headscope-split", self.wake.clone(), move || {
            Ok(PreparedText {
                document: document.with_mode(mode),
                warning: None,
            })
        });
        self.text_job = Some(TextJob {
            source: TextSource::Resplit,
            result,
        });
    }

    fn schedule_run(&mut self, ctx: &egui::Context) {
        self.pending_since = Some(ctx.input(|i| i.time));
    }

    fn schedule_run_now(&mut self, ctx: &egui::Context) {
        self.pending_since = Some(ctx.input(|i| i.time) - DEBOUNCE_SECONDS);
    }

    fn text_changed(&mut self, ctx: &egui::Context) {
        self.schedule_run(ctx);
        self.autosave_due = Some(ctx.input(|i| i.time) + AUTOSAVE_SECONDS);
        if let Some(document) = &self.document {
            let count = document.sentence_count();
            if count > 0 && self.first_sentence >= count {
                self.first_sentence = count - 1;
                self.window_history.retain(|&first| first < count);
            }
        }
    }

    // ---- Per-frame bookkeeping -------------------------------------------

    fn handle_worker_events(&mut self, ctx: &egui::Context) {
        while let Some(event) = self.worker.try_recv() {
            match event {
                WorkerEvent::ModelLoading { source } => {
                    self.model_status = ModelStatus::Loading {
                        source,
                        progress: None,
                    };
                }
                WorkerEvent::ModelProgress(progress) => {
                    if let ModelStatus::Loading { progress: slot, .. } = &mut self.model_status {
                        *slot = Some(progress);
                    }
                }
                WorkerEvent::ModelReady(info) => {
                    self.remembered_model = Some(info.source.to_string());
                    self.active_model = Some(info.clone());
                    self.model_status = ModelStatus::Ready(info);
                    self.show_model_window = false;
                    self.schedule_run_now(ctx);
                }
                WorkerEvent::ModelFailed { source, message } => {
                    self.model_status = ModelStatus::Failed {
                        source: Some(source),
                        message,
                    };
                    if self.active_model.is_some() {
                        self.show_model_window = true;
                    }
                }
                WorkerEvent::RunStarted { .. } => {}
                WorkerEvent::RunFinished { generation, output } => {
                    if let Some((expected, first_sentence)) = self.in_flight {
                        if expected == generation {
                            self.in_flight = None;
                            self.run_error = None;
                            self.keep_detail_within(&output);
                            if self.trace {
                                eprintln!(
                                    "headscope: result {generation}: {} tokens, {:.0} ms",
                                    output.analysis.tokens, output.timings.total_ms
                                );
                            }
                            self.shown = Some(Shown {
                                generation,
                                output,
                                first_sentence,
                            });
                        }
                    }
                }
                WorkerEvent::RunAbandoned { generation } => {
                    if self.in_flight.is_some_and(|(g, _)| g == generation) {
                        self.in_flight = None;
                    }
                }
                WorkerEvent::RunFailed {
                    generation,
                    message,
                    ..
                } => {
                    if self.in_flight.is_some_and(|(g, _)| g == generation) {
                        self.in_flight = None;
                        self.run_error = Some(message);
                    }
                }
            }
        }
    }

    fn keep_detail_within(&mut self, output: &RunOutput) {
        if let Some(head) = self.detail {
            let (layers, heads) = (output.captures.layers, output.captures.heads);
            if head.layer >= layers || head.head >= heads {
                self.detail = None;
            }
        }
    }

    fn poll_jobs(&mut self, ctx: &egui::Context) {
        if let Some(job) = &self.text_job {
            let outcome = match job.result.try_recv() {
                Ok(outcome) => Some(outcome),
                Err(crossbeam_channel::TryRecvError::Empty) => None,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    Some(Err("reading the text stopped unexpectedly".to_string()))
                }
            };
            if let Some(outcome) = outcome {
                let source = job.source.clone();
                self.text_job = None;
                self.text_prepared(ctx, source, outcome);
            }
        }
        self.poll_export_dialog();
        if dialogs::take_unavailable() {
            self.notice = Some(Notice::error(dialogs::UNAVAILABLE_MESSAGE));
        }
        if let Some(picked) = poll_dialog(&mut self.text_save_dialog) {
            self.save_text_to(&picked);
        }
        if let Some(picked) = poll_dialog(&mut self.file_dialog) {
            self.open_file(&picked);
        }
        if let Some(picked) = poll_dialog(&mut self.folder_dialog) {
            self.load_model(ModelSource::Folder(picked));
        }
    }

    fn text_prepared(
        &mut self,
        ctx: &egui::Context,
        source: TextSource,
        outcome: Result<PreparedText, String>,
    ) {
        match (source, outcome) {
            (TextSource::File(path), Ok(prepared)) => {
                self.document = Some(prepared.document);
                self.file = Some(path);
                self.first_sentence = 0;
                self.window_history.clear();
                self.notice = prepared.warning.map(Notice::info);
                self.text_changed(ctx);
                self.schedule_run_now(ctx);
            }
            (TextSource::File(_), Err(message)) => {
                self.notice = Some(Notice::error(format!(
                    "{message}. The text in the editor is unchanged."
                )));
            }
            (TextSource::Autosave, Ok(prepared)) => {
                self.document = Some(prepared.document);
                self.text_changed(ctx);
                self.autosave_due = None;
                self.schedule_run_now(ctx);
            }
            (TextSource::Autosave, Err(_)) => {
                // An unreadable or empty autosave: fall back quietly.
                let text = std::mem::take(&mut self.fallback_text);
                self.document = Some(Document::new(text, self.settings.input_mode));
                self.schedule_run_now(ctx);
            }
            (TextSource::Resplit, Ok(prepared)) => {
                self.document = Some(prepared.document);
                self.text_changed(ctx);
                self.autosave_due = None;
                self.schedule_run_now(ctx);
            }
            (TextSource::Resplit, Err(message)) => {
                self.notice = Some(Notice::error(message));
            }
        }
    }

    fn handle_input(&mut self, ctx: &egui::Context) {
        let open = KeyboardShortcut::new(Modifiers::COMMAND, Key::O);
        if ctx.input_mut(|i| i.consume_shortcut(&open)) {
            self.pick_text_file();
        }
        let save_as = KeyboardShortcut::new(Modifiers::COMMAND | Modifiers::SHIFT, Key::S);
        if ctx.input_mut(|i| i.consume_shortcut(&save_as)) {
            self.pick_text_save_path();
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
        // Arrow keys step through heads unless the user is typing.
        if let (Some(head), Some(shown), CentralView::Heads) =
            (self.detail, &self.shown, self.settings.view)
        {
            if !ctx.text_edit_focused() {
                let (layers, heads) = (shown.output.captures.layers, shown.output.captures.heads);
                let mut target = head;
                ctx.input_mut(|i| {
                    for (key, d_layer, d_head) in [
                        (Key::ArrowLeft, 0, -1),
                        (Key::ArrowRight, 0, 1),
                        (Key::ArrowUp, -1, 0),
                        (Key::ArrowDown, 1, 0),
                    ] {
                        if i.consume_key(Modifiers::NONE, key) {
                            target = head_view::step(target, layers, heads, d_layer, d_head);
                        }
                    }
                    if i.consume_key(Modifiers::NONE, Key::Escape) {
                        self.detail = None;
                    }
                });
                if target != head && self.detail.is_some() {
                    self.detail = Some(target);
                }
            }
        }
    }

    fn pick_text_file(&mut self) {
        if self.file_dialog.is_some() {
            return;
        }
        self.file_dialog = Some(dialogs::spawn_dialog(self.wake.clone(), || {
            rfd::FileDialog::new()
                .set_title("Open a text file")
                .add_filter("Text", &["txt", "md", "text"])
                .add_filter("All files", &["*"])
                .pick_file()
        }));
    }

    /// The head an export of one head is about: the open one, else L0 H0.
    fn export_head(&self) -> HeadId {
        self.detail.unwrap_or_default()
    }

    fn pick_export_path(&mut self, kind: export_menu::ExportKind) {
        if self.export_dialog.is_some() {
            return;
        }
        let head = self.export_head();
        let name = kind.suggested_name(head, &self.settings);
        let extension = kind.extension();
        let receiver = dialogs::spawn_dialog(self.wake.clone(), move || {
            rfd::FileDialog::new()
                .set_title("Export")
                .set_file_name(name)
                .add_filter(extension.to_uppercase(), &[extension])
                .save_file()
        });
        self.export_dialog = Some((kind, head, receiver));
    }

    /// Writes an export to `path` and reports the outcome in the banner.
    pub fn export_to(&mut self, kind: export_menu::ExportKind, head: HeadId, path: &Path) {
        let Some(shown) = &self.shown else {
            self.notice = Some(Notice::error(
                "nothing to export yet: no analysis is on screen",
            ));
            return;
        };
        let model_name = self
            .active_model
            .as_ref()
            .map_or_else(String::new, |m| m.name.clone());
        let result =
            export_menu::write_export(kind, &shown.output, head, &self.settings, &model_name, path);
        self.notice = Some(Notice::export(result.map(|()| path)));
    }

    fn poll_export_dialog(&mut self) {
        let Some((kind, head, receiver)) = &self.export_dialog else {
            return;
        };
        let (kind, head) = (*kind, *head);
        let mut slot = Some(receiver.clone());
        let picked = poll_dialog(&mut slot);
        if slot.is_none() {
            self.export_dialog = None;
        }
        if let Some(path) = picked {
            self.export_to(kind, head, &path);
        }
    }

    fn pick_model_folder(&mut self) {
        if self.folder_dialog.is_some() {
            return;
        }
        self.folder_dialog = Some(dialogs::spawn_dialog(self.wake.clone(), || {
            rfd::FileDialog::new()
                .set_title("Open a model folder (config.json, model.safetensors, tokenizer.json)")
                .pick_folder()
        }));
    }

    fn send_due_request(&mut self, ctx: &egui::Context) {
        let Some(since) = self.pending_since else {
            return;
        };
        let now = ctx.input(|i| i.time);
        let wait = since + DEBOUNCE_SECONDS - now;
        if wait > 0.0 {
            ctx.request_repaint_after(std::time::Duration::from_secs_f64(wait));
            return;
        }
        if self.active_model.is_none() || self.text_job.is_some() {
            return;
        }
        let Some(document) = &self.document else {
            return;
        };
        self.first_sentence = self
            .first_sentence
            .min(document.sentence_count().saturating_sub(1));
        let first = self.first_sentence;
        let (text, input_first) = document.request(first);
        let input = InputOptions {
            mode: self.settings.input_mode,
            first_sentence: input_first,
        };
        let generation = self
            .worker
            .analyse(text, input, self.settings.analysis_options());
        self.in_flight = Some((generation, first));
        self.pending_since = None;
    }

    fn autosave_if_due(&mut self, ctx: &egui::Context) {
        let Some(due) = self.autosave_due else {
            return;
        };
        let now = ctx.input(|i| i.time);
        if now < due {
            ctx.request_repaint_after(std::time::Duration::from_secs_f64(due - now));
            return;
        }
        self.autosave_now();
    }

    fn autosave_now(&mut self) {
        if let (Some(saver), Some(document)) = (&self.autosaver, &self.document) {
            saver.save(document.text().to_string());
        }
        self.autosave_due = None;
    }

    fn update_title(&mut self, ctx: &egui::Context) {
        let name = match (&self.text_job, &self.file) {
            (
                Some(TextJob {
                    source: TextSource::File(path),
                    ..
                }),
                _,
            ) => {
                format!("opening {}…", file_name(path))
            }
            (_, Some(path)) => match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => format!("{} ({})", file_name(path), parent.display()),
                None => file_name(path),
            },
            (_, None) => "untitled text".into(),
        };
        self.title = format!("headscope — {name}");
        if self.title != self.title_sent {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(self.title.clone()));
            self.title_sent = self.title.clone();
        }
    }

    /// The window the shown result covers, in sentences of the whole text.
    fn window_info(&self) -> Option<WindowInfo> {
        let shown = self.shown.as_ref()?;
        let document = self.document.as_ref()?;
        Some(WindowInfo {
            first: shown.first_sentence,
            analysed: shown.output.input.sentences_analysed,
            total: document.sentence_count(),
        })
    }

    fn move_window(&mut self, ctx: &egui::Context, step: WindowMove) {
        let info = self.window_info();
        match step {
            WindowMove::Next => {
                if let Some(info) = info.filter(|w| w.first == self.first_sentence && w.has_next())
                {
                    self.window_history.push(self.first_sentence);
                    self.first_sentence = info.first + info.analysed;
                }
            }
            WindowMove::Previous => {
                let fallback = info.map_or(1, |w| w.analysed.max(1));
                self.first_sentence = self
                    .window_history
                    .pop()
                    .filter(|&first| first < self.first_sentence)
                    .unwrap_or_else(|| self.first_sentence.saturating_sub(fallback));
            }
        }
        self.schedule_run_now(ctx);
    }

    // ---- Views -----------------------------------------------------------

    fn menu_bar(&mut self, ui: &mut egui::Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("File", |ui| {
                if ui
                    .add(egui::Button::new("Open text file…").shortcut_text("Ctrl+O"))
                    .clicked()
                {
                    self.pick_text_file();
                    ui.close();
                }
                if ui
                    .add_enabled(
                        self.document.is_some(),
                        egui::Button::new("Save text as…").shortcut_text("Ctrl+Shift+S"),
                    )
                    .clicked()
                {
                    self.pick_text_save_path();
                    ui.close();
                }
                if ui.button("Open model folder…").clicked() {
                    self.pick_model_folder();
                    ui.close();
                }
                if ui.button("Choose model…").clicked() {
                    self.show_model_window = true;
                    ui.close();
                }
                if ui.button(corpus_view::MENU_LABEL).clicked() {
                    self.corpus.open();
                    ui.close();
                }
                ui.menu_button("Export", |ui| {
                    let ready = self.shown.is_some();
                    for kind in export_menu::ExportKind::ALL {
                        if ui
                            .add_enabled(ready, egui::Button::new(kind.label()))
                            .clicked()
                        {
                            self.pick_export_path(kind);
                            ui.close();
                        }
                    }
                });
                ui.separator();
                if ui.button("Quit").clicked() {
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
            });
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
                ui.separator();
                ui.checkbox(&mut self.settings.show_text_panel, "Text panel");
                ui.checkbox(&mut self.settings.mark_pairs, "Outline selected pairs");
                ui.checkbox(
                    &mut self.settings.shared_scale,
                    "One colour scale for all heads",
                );
            });
        });
    }

    fn text_panel(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        let settings_change = egui::Panel::bottom("analysis settings")
            .resizable(false)
            .show(ui, |ui| {
                ui.add_space(4.0);
                egui::CollapsingHeader::new("Analysis settings")
                    .default_open(true)
                    .show(ui, |ui| settings::settings_ui(ui, &mut self.settings))
                    .body_returned
                    .unwrap_or_default()
            })
            .inner;
        if settings_change.input {
            self.resplit();
        }
        if settings_change.analysis {
            self.schedule_run(&ctx);
        }
        let busy = match &self.text_job {
            Some(TextJob {
                source: TextSource::File(path),
                ..
            }) => Some(format!("Opening {}…", file_name(path))),
            Some(TextJob {
                source: TextSource::Autosave,
                ..
            }) => Some("Restoring the last text…".to_string()),
            Some(TextJob {
                source: TextSource::Resplit,
                ..
            }) => Some("Splitting the text into sentences…".to_string()),
            None => None,
        };
        let window = self.window_info();
        let source = match (&self.file, &self.autosaver) {
            (Some(path), _) => file_name(path),
            (None, Some(_)) => "untitled, autosaved".to_string(),
            (None, None) => "untitled".to_string(),
        };
        let output = editor::editor_ui(
            ui,
            self.document.as_mut(),
            self.first_sentence,
            window,
            busy.as_deref(),
            &source,
        );
        if output.text_changed {
            self.text_changed(&ctx);
        }
        if let Some(step) = output.window_move {
            self.move_window(&ctx, step);
        }
    }

    fn central(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        if let Some(notice) = self.notice.clone() {
            let colour = if notice.error {
                ui.visuals().error_fg_color
            } else {
                ui.visuals().warn_fg_color
            };
            let mut dismissed = false;
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.add(
                        egui::Label::new(egui::RichText::new(&notice.text).color(colour)).wrap(),
                    );
                    if ui
                        .small_button("×")
                        .on_hover_text("Dismiss this message")
                        .clicked()
                    {
                        dismissed = true;
                    }
                });
            });
            if dismissed {
                self.notice = None;
            }
        }
        if let Some(error) = &self.run_error {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.add(
                    egui::Label::new(
                        egui::RichText::new(error.as_str()).color(ui.visuals().error_fg_color),
                    )
                    .wrap(),
                );
                if self.shown.is_some() {
                    ui.weak("The heatmaps below are from the last text that could be analysed.");
                }
            });
        }

        if self.active_model.is_none() {
            ui.add_space(24.0);
            let heading = if matches!(self.model_status, ModelStatus::Loading { .. }) {
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

        let Some(shown) = &self.shown else {
            if self.run_error.is_none() {
                ui.add_space(24.0);
                ui.horizontal(|ui| {
                    ui.add(egui::Spinner::new());
                    ui.label("Analysing…");
                });
            }
            return;
        };
        let output = shown.output.clone();
        let key = self.view_key(shown.generation);
        let working = self.is_working();
        let generation = shown.generation;
        self.views.sync(generation, &output);
        if self
            .views
            .tab_row(ui, &mut self.settings.view, &output, working)
        {
            self.detail = None;
        }
        if self.settings.view != CentralView::Heads {
            ui.separator();
            let view = self.settings.view;
            if let Some(action) = self.views.ui(ui, view, &output, generation, &self.settings) {
                self.view_action(&ctx, action);
            }
            return;
        }
        match self.detail {
            Some(head) => {
                self.head_view.update(&ctx, &output, key, head);
                let picked: Vec<usize> = self.views.selection.positions().collect();
                let caption = match self.settings.matrix {
                    MatrixKind::Similarity => {
                        format!(
                            "L{} H{}: similarity S, {}",
                            head.layer,
                            head.head,
                            self.settings.similarity.label()
                        )
                    }
                    MatrixKind::Attention => {
                        format!(
                            "L{} H{}: attention P (rows: query, columns: key)",
                            head.layer, head.head
                        )
                    }
                };
                self.view_controls(ui, working, Some(self.head_view.range()), &caption);
                ui.separator();
                match self
                    .head_view
                    .ui(ui, &output, head, &self.settings, working, &picked)
                {
                    Some(HeadAction::Back) => self.detail = None,
                    Some(HeadAction::Show(next)) => self.detail = Some(next),
                    None => {}
                }
            }
            None => {
                self.overview.update(&ctx, &output, key, &self.wake);
                let range = self.overview.shared_range();
                let caption = match (self.settings.matrix, range.is_some()) {
                    (MatrixKind::Similarity, true) => "similarity S, one scale for all heads",
                    (MatrixKind::Similarity, false) => {
                        "similarity S, each head from its own min to max"
                    }
                    (MatrixKind::Attention, true) => "attention P, one scale for all heads",
                    (MatrixKind::Attention, false) => {
                        "attention P, each head from its own min to max"
                    }
                };
                self.view_controls(ui, working, range, caption);
                self.views.grid_controls(ui, &mut self.settings);
                ui.separator();
                let marks = self.views.grid_marks(&output, &self.settings);
                if let Some(head) = self.overview.ui(ui, &output, self.detail, &marks) {
                    self.detail = Some(head);
                    self.head_view.request_focus();
                }
            }
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
            ViewAction::OpenHead(head) => {
                self.detail = Some(head);
                self.head_view.request_focus();
            }
            ViewAction::ShowLayer(layer) => {
                self.detail = None;
                self.views.grid_layer = Some(layer);
            }
            ViewAction::ShowSeparatorOverlay => {
                self.detail = None;
                self.settings.separator_overlay = true;
            }
            ViewAction::SavePlot(_) => {}
        }
    }

    /// Starts saving the figure `name` (one at a time).
    fn save_plot(&mut self, ctx: &egui::Context, name: &str) {
        if self.plot_export.is_none() {
            let target = self.plot_export_target.clone();
            self.plot_export = Some(plot_export::PlotExport::start(ctx, name, target));
        }
    }

    /// Saves plots to `path` from now on instead of asking where: for
    /// tests, which cannot answer a save dialog.
    pub fn set_plot_export_target(&mut self, path: Option<PathBuf>) {
        self.plot_export_target = path;
    }

    /// Moves a plot export on, after this frame's views are drawn.
    fn update_plot_export(&mut self, ctx: &egui::Context) {
        let Some(export) = &mut self.plot_export else {
            return;
        };
        let wake = self.wake.clone();
        let outcome = export.update(ctx, |name| {
            dialogs::spawn_dialog(wake, move || {
                rfd::FileDialog::new()
                    .set_title("Save plot")
                    .set_file_name(name)
                    .add_filter("PNG", &["png"])
                    .save_file()
            })
        });
        let Some(outcome) = outcome else {
            return;
        };
        self.plot_export = None;
        match outcome {
            plot_export::Outcome::Saved(path) => self.notice = Some(Notice::export(Ok(&path))),
            plot_export::Outcome::Cancelled => {}
            plot_export::Outcome::Failed(message) => {
                self.notice = Some(Notice::export(Err(message)));
            }
        }
    }

    fn view_controls(
        &mut self,
        ui: &mut egui::Ui,
        working: bool,
        range: Option<crate::colormap::ValueRange>,
        caption: &str,
    ) {
        ui.horizontal(|ui| {
            ui.selectable_value(
                &mut self.settings.matrix,
                MatrixKind::Similarity,
                "Similarity",
            )
            .on_hover_text("The context similarity S of each head's output vectors");
            ui.selectable_value(
                &mut self.settings.matrix,
                MatrixKind::Attention,
                "Attention",
            )
            .on_hover_text("The attention probabilities P (rows: query, columns: key)");
            ui.separator();
            let label = ui.label("Colour map");
            egui::ComboBox::from_id_salt("colour map")
                .selected_text(self.settings.colormap.name())
                .show_ui(ui, |ui| {
                    for map in ColorMap::all() {
                        ui.selectable_value(&mut self.settings.colormap, map, map.name());
                    }
                })
                .response
                .labelled_by(label.id);
            ui.checkbox(&mut self.settings.shared_scale, "One scale for all heads")
                .on_hover_text("Off: each thumbnail spans its own min to max");
            ui.separator();
            heatmap::colour_bar(ui, self.settings.colormap, range, caption);
            if working {
                ui.add(egui::Spinner::new());
                ui.weak("updating…");
            }
        });
    }

    fn model_panel_ui(&mut self, ui: &mut egui::Ui) {
        if let Some(action) = self.model_panel.ui(ui, &self.model_status) {
            match action {
                ModelAction::PickFolder => self.pick_model_folder(),
                ModelAction::Load(source) => self.load_model(source),
            }
        }
    }
}

impl eframe::App for HeadscopeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.handle_worker_events(&ctx);
        self.poll_jobs(&ctx);
        self.handle_input(&ctx);
        self.send_due_request(&ctx);
        self.autosave_if_due(&ctx);
        self.update_title(&ctx);

        egui::Panel::top("menu bar").show(ui, |ui| self.menu_bar(ui));
        let status = status_bar::StatusInfo {
            working: self.is_working(),
            model: &self.model_status,
            shown: self.shown.as_ref().map(|s| s.output.as_ref()),
            window: self.window_info(),
            autosave_error: self.autosaver.as_ref().and_then(Autosaver::last_error),
        };
        egui::Panel::bottom("status bar").show(ui, |ui| status_bar::status_bar_ui(ui, &status));
        if self.settings.show_text_panel {
            egui::Panel::left("text panel")
                .resizable(true)
                .default_size(380.0)
                .size_range(260.0..=760.0)
                .show(ui, |ui| self.text_panel(ui));
        }
        egui::CentralPanel::default().show(ui, |ui| self.central(ui));
        let model = self.active_model.as_ref().map(|m| m.name.as_str());
        self.corpus
            .show(&ctx, &self.worker, &self.settings, model, &self.wake);
        if let Some(name) = self.corpus.take_plot_request() {
            self.save_plot(&ctx, &name);
        }
        self.update_plot_export(&ctx);

        if self.show_model_window && self.active_model.is_some() {
            let mut open = true;
            egui::Window::new("Model")
                .open(&mut open)
                .collapsible(false)
                .default_width(460.0)
                .show(&ctx, |ui| self.model_panel_ui(ui));
            self.show_model_window &= open;
        }

        if self.trace && self.detail != self.traced_detail {
            match self.detail {
                Some(head) => eprintln!("headscope: showing head {head}"),
                None => eprintln!("headscope: showing the overview"),
            }
            self.traced_detail = self.detail;
        }
        if self.trace && self.traced_view != Some(self.settings.view) {
            eprintln!("headscope: showing the {} tab", self.settings.view.label());
            self.traced_view = Some(self.settings.view);
        }

        let hovering_files = ctx.input(|i| !i.raw.hovered_files.is_empty());
        if hovering_files {
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

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        let text = self
            .document
            .as_ref()
            .map(Document::text)
            .filter(|text| text.len() <= PERSISTED_TEXT_LIMIT)
            .map(str::to_string);
        let persisted = Persisted {
            settings: self.settings.clone(),
            text,
            file: self.file.clone(),
            first_sentence: self.first_sentence,
            model: self.remembered_model.clone(),
        };
        eframe::set_value(storage, eframe::APP_KEY, &persisted);
    }
}

impl Drop for HeadscopeApp {
    fn drop(&mut self) {
        // An edit younger than the autosave pause is written now.
        if self.autosave_due.is_some() {
            self.autosave_now();
        }
    }
}

/// egui's default fonts, with Hack (already bundled) as a fallback for
/// the proportional text too, so arrows and box-drawing characters in labels
/// and token texts render.
fn install_fonts(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    if let Some(family) = fonts.families.get_mut(&egui::FontFamily::Proportional) {
        if !family.iter().any(|name| name == "Hack") {
            family.push("Hack".to_owned());
        }
    }
    ctx.set_fonts(fonts);
}

fn poll_dialog(slot: &mut Option<Receiver<Option<PathBuf>>>) -> Option<PathBuf> {
    let receiver = slot.as_ref()?;
    match receiver.try_recv() {
        Ok(picked) => {
            *slot = None;
            picked
        }
        Err(crossbeam_channel::TryRecvError::Empty) => None,
        Err(crossbeam_channel::TryRecvError::Disconnected) => {
            *slot = None;
            None
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
