//! The egui desktop app: type or open a text, and see every head of the
//! model at once, then one head up close, then the study's views of them.
//!
//! Laid out as egui's demo app and the rerun viewer are, from the top of
//! the layering down (a module imports only the ones below it, and a view
//! never another view; `tests/layering.rs` checks it):
//!
//! - the app itself ([`HeadscopeApp`], here) and its [`shell`]: the
//!   window's layout, the menus and shortcuts, the status bar, the notice
//!   banner, and everything that acts on the app as a whole (start-up,
//!   sending analyses to the worker, opening and saving files). Only the
//!   shell holds `impl HeadscopeApp` blocks beside this file;
//! - the [`corpus`] window, and the study's [`views`]: one [`View`] trait
//!   every tab implements, the [`ViewContext`] handed to each, and the
//!   registry that knows them all ([`views::Views`]);
//! - the [`text`] (document, editor, autosave, find), the [`panels`] (the
//!   model, the analysis settings, the outline of a long document), the
//!   [`files`] (dialogs, File → Export, plots saved as PNG) and the
//!   [`runs`] (the analysis owed, in flight, on screen);
//! - the [`widgets`] every view draws with: heatmaps, one head grid,
//!   plots with "Save PNG / SVG / PDF…", tables, token text, the formatting of figures
//!   and categories;
//! - at the bottom, the persisted [`settings`], the [`startup`] options and
//!   the background [`jobs`].
//!
//! [`View`]: views::shared::View
//! [`ViewContext`]: views::shared::ViewContext

pub mod corpus;
pub mod files;
pub mod jobs;
pub mod panels;
pub mod runs;
pub mod settings;
pub mod shell;
pub mod startup;
pub mod text;
pub mod views;
pub mod widgets;

use crate::captures::HeadId;
use crate::pipeline::RunOutput;
use crate::worker::AnalysisWorker;
use corpus::CorpusView;
use files::dialogs::FileDialogs;
use files::plot_export::PlotSaving;
use panels::generate::GeneratePanel;
use panels::model::ModelState;
use panels::outline::OutlinePanel;
use runs::Runs;
use settings::{CentralView, Settings};
use shell::chrome::Chrome;
use shell::notice::Notice;
use std::path::Path;
use std::sync::Arc;
use text::TextState;
use views::compare::CompareView;
use views::shared::selection::TokenSelection;
use views::specialisation::SpecialisationView;
use views::Views;

pub use runs::DEBOUNCE_SECONDS;
pub use startup::{AppConfig, StartOptions};
pub use text::SAMPLE_TEXT;

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
    /// The outline of the document and find, on the right (Ctrl+F).
    outline: OutlinePanel,
    /// The central area's views.
    views: Views,
    /// Generate, under the text (decoders).
    generate: GeneratePanel,
    /// The corpus statistics window (File → Corpus statistics…).
    corpus: CorpusView,
    /// The file dialogs open.
    dialogs: FileDialogs,
    /// A plot being saved as PNG.
    plots: PlotSaving,
    /// The message banner above the views.
    notice: Option<Notice>,
    /// The window title, and the trace lines for scripts.
    chrome: Chrome,
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

impl HeadscopeApp {
    /// The model thread (tests use it to slow the model down).
    pub fn worker(&self) -> &AnalysisWorker {
        &self.worker
    }

    /// The corpus statistics window's state.
    pub fn corpus_view(&self) -> &CorpusView {
        &self.corpus
    }

    /// The corpus statistics window's state, to drive it (tests).
    pub fn corpus_view_mut(&mut self) -> &mut CorpusView {
        &mut self.corpus
    }

    /// The outline panel's state: the windows of the text and the matches
    /// of find.
    pub fn outline_panel(&self) -> &OutlinePanel {
        &self.outline
    }

    /// The Compare tab's state.
    pub fn compare_view(&self) -> &CompareView {
        &self.views.compare
    }

    /// The Specialisation tab's state (its table and scatter).
    pub fn specialisation_view(&self) -> &SpecialisationView {
        &self.views.specialisation
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

    /// The models loaded lately, newest first (model B's too), as the
    /// Model window and Compare's panel offer them.
    pub fn recent_models(&self) -> &[String] {
        self.model.recent()
    }

    /// Whether an analysis is owed or running.
    pub fn is_working(&self) -> bool {
        self.runs.is_working(self.model.active().is_some())
    }

    /// The result on screen, if any.
    pub fn shown_output(&self) -> Option<&Arc<RunOutput>> {
        self.runs.shown().map(|s| &s.output)
    }

    /// The generation of the result on screen (0: none).
    pub fn shown_generation(&self) -> u64 {
        self.runs.shown().map_or(0, |s| s.generation)
    }

    /// Whether the overview's pictures show the current result with the
    /// current view settings (they are built off the UI thread).
    pub fn overview_is_current(&self) -> bool {
        self.runs.shown().is_some_and(|shown| {
            self.views
                .heads
                .overview_is_current(shown.generation, &self.settings)
        })
    }

    /// The tab the central area shows.
    pub fn central_view(&self) -> CentralView {
        self.settings.view
    }

    /// The tokens picked in the study's views.
    pub fn picked_tokens(&self) -> &TokenSelection {
        &self.views.shared.selection
    }

    /// The layer the Heads grid is limited to, if any.
    pub fn grid_layer(&self) -> Option<usize> {
        self.views.heads.grid_layer
    }

    /// The heads ablated in the Heads grid, and their effect.
    pub fn ablation(&self) -> &crate::app::views::heads::ablation::AblationSlot {
        &self.views.heads.ablation
    }

    /// Shows one layer's heads in the grid, as a click on a layer in the
    /// Layers view does.
    pub fn show_layer(&mut self, layer: usize) {
        self.settings.view = CentralView::Heads;
        self.views.heads.detail = None;
        self.views.heads.grid_layer = Some(layer);
    }

    /// The head open in the detail view.
    pub fn detail_head(&self) -> Option<HeadId> {
        self.views.heads.detail
    }

    /// Where the text panel marks the tokens of the heatmap cell under the
    /// pointer (screen), if it does.
    pub fn text_marks(&self) -> Option<egui::Rect> {
        self.text.marked()
    }

    /// The detail view's map of its head (its zoom level, its tiles).
    pub fn head_map(&self) -> &crate::app::widgets::zoom_map::ZoomMap {
        &self.views.heads.head_view.map
    }

    /// Whether a generation is running.
    pub fn is_generating(&self) -> bool {
        self.generate.is_running()
    }

    /// The Logit lens tab's table, once computed for the result on screen.
    pub fn logit_lens_table(&self) -> Option<&crate::worker::LensTable> {
        self.views.logit_lens.table(self.runs.shown()?.generation)
    }

    /// The token the Steps tab is at, in the result on screen.
    pub fn step_position(&self) -> Option<usize> {
        Some(self.views.steps.position(&self.runs.shown()?.output))
    }

    /// The model's own top 5 next tokens at every position of the result
    /// on screen (a decoder's), once computed.
    pub fn next_tokens_table(&self) -> Option<&crate::worker::LensTable> {
        self.views
            .shared
            .next_tokens
            .of(self.runs.shown()?.generation)
    }

    /// Where the text the model generated starts, while it is marked.
    pub fn generated_from(&self) -> Option<usize> {
        self.views.shared.generated_from
    }

    /// The whole text (empty while a file is being read).
    pub fn text(&self) -> &str {
        self.text.text()
    }

    /// How far the central area's content reached past its right edge in
    /// the last frame, in points: 0 when nothing is cut.
    pub fn central_overflow(&self) -> f32 {
        self.chrome.central_overflow
    }

    /// The message banner, if one is showing.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|n| n.text.as_str())
    }

    /// Opens a text file (or a capture file, as the model): what File →
    /// Open, Ctrl+O, drag and drop and the command line all end in. The
    /// file is read off the UI thread; a file that cannot be used leaves
    /// the current text as it is.
    pub fn open_file(&mut self, path: &Path) {
        // A capture file (docs/CAPTURE.md) replaces the model, with its text.
        if crate::capture_file::is_capture_path(path) {
            return self.load_model(crate::model::ModelSource::Folder(path.to_path_buf()));
        }
        self.text
            .open_file(path, self.settings.input_mode, &self.wake);
    }
}

impl eframe::App for HeadscopeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.handle_worker_events(&ctx);
        self.poll_text_job(&ctx);
        self.poll_dialogs(&ctx);
        self.handle_input(&ctx);
        self.send_due_request(&ctx);
        self.update_outline(&ctx);
        self.text.autosave_if_due(&ctx);
        self.chrome.update_title(&ctx, &self.text);
        self.layout(ui);
        self.chrome
            .trace_view(self.views.heads.detail, self.settings.view);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        self.persist(storage);
    }
}

impl Drop for HeadscopeApp {
    fn drop(&mut self) {
        // An edit younger than the autosave pause is written now.
        self.text.autosave_pending_now();
    }
}
