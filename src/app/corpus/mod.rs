//! The corpus statistics window (File → "Corpus statistics…"): the figures
//! of ANALYSIS.md §4 and §5 averaged over a corpus, as [`crate::corpus`]
//! computes them for `headscope corpus`: a folder of texts (`.txt`, `.md`,
//! gzip-compressed or not), or a JSON Lines or Parquet file whose `text`
//! field holds the documents; or a folder of capture files (`.safetensors`,
//! docs/CAPTURE.md), each one window analysed as stored, without a model
//! ([`crate::corpus::captures`]).
//!
//! The user types or picks a folder or file and presses Run. The run goes to the
//! model thread ([`AnalysisWorker::run_corpus`]), which lends the loaded
//! model to a thread of its own, so the UI and the interactive analysis keep
//! working; progress, skipped files and the report come back on a channel
//! polled every frame (also while the window is closed). The progress shows
//! as every slow stage's does ([`crate::app::widgets::progress`]: documents
//! k of n, windows, the time left, Cancel). Cancel sets the run's flag: it
//! stops between windows and the report comes back marked partial, and is
//! shown as such.
//!
//! The result is drawn as one plot per per-layer figure (mean over windows
//! with its 95% interval shaded; the same-sentence plot adds the chance
//! baseline), a table of the same numbers, and a grid of every head coloured
//! by the mean of a chosen per-head figure, with each head's most common
//! category as a strip and everything else on hover. With "Ablate each head
//! alone" ticked, every window also runs L × H ablated passes (ANALYSIS.md
//! §9), and the grid opens on each head's importance. "Save JSON…" writes
//! [`CorpusReport::to_json`] through [`crate::export::save_text`].

mod charts;

pub use charts::{figure_title, format_number, head_cell_label, layer_cell_label, summary_text};

use crate::app::files::dialogs::{self, Dialog, DialogRequest};
use crate::app::settings::Settings;
use crate::app::widgets::progress::{row_text, ProgressRow};
use crate::corpus::{self, CorpusReport, FileWarning, SkippedFile};
use crate::model::ablation::AblationMode;
use crate::tokens::VocabularyStyle;
use crate::worker::{AnalysisWorker, CorpusProgress, CorpusUpdate, Waker};
use crossbeam_channel::{Receiver, TryRecvError};
use egui::RichText;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The File menu entry that opens the window.
pub const MENU_LABEL: &str = "Corpus statistics…";
/// The window's title.
pub const WINDOW_TITLE: &str = "Corpus statistics";
/// The accessible name of the folder field.
pub const FOLDER_LABEL: &str = "Corpus folder or file";
/// The accessible name of the field naming the JSON Lines field or Parquet
/// column that holds each document's text.
pub const TEXT_FIELD_LABEL: &str = "Text field";
pub const RUN_LABEL: &str = "Run";
pub use crate::app::widgets::progress::CANCEL_LABEL;
pub const SAVE_LABEL: &str = "Save JSON…";
/// The accessible name of the progress bar.
pub const PROGRESS_LABEL: &str = "Corpus progress";
/// What the progress row says the run does.
pub const PROGRESS_WHAT: &str = "Analysing the corpus";
/// The check box that ablates each head alone in every window.
pub const IMPORTANCE_LABEL: &str = "Ablate each head alone (importance)";

/// A run in progress.
struct Run {
    updates: Receiver<CorpusUpdate>,
    cancel: Arc<AtomicBool>,
    progress: Option<CorpusProgress>,
    skipped: Vec<SkippedFile>,
    warnings: Vec<FileWarning>,
    folder: String,
}

/// The window's state. Not persisted, except the folder typed last while
/// the app runs.
#[derive(Default)]
pub struct CorpusView {
    open: bool,
    folder: String,
    /// The JSON Lines field or Parquet column of the text; blank means
    /// [`corpus::DEFAULT_TEXT_FIELD`].
    text_field: String,
    folder_dialog: Option<dialogs::Dialog>,
    save_dialog: Option<dialogs::Dialog>,
    run: Option<Run>,
    report: Option<Arc<CorpusReport>>,
    /// How the model of the report spells its tokens.
    style: VocabularyStyle,
    /// The folder the report is of.
    report_folder: String,
    /// Why the last run gave no report.
    error: Option<String>,
    /// The outcome of the last save: the message and whether it failed.
    save_message: Option<(String, bool)>,
    /// Index into [`crate::corpus::HEAD_FIGURES`] of the figure the head grid shows.
    head_figure: usize,
    /// A plot whose save button was clicked, for the app to export.
    plot_request: Option<crate::app::widgets::plots::SaveRequest>,
    /// Whether a run ablates each head alone in every window, and how.
    importance: bool,
    importance_mode: AblationMode,
}

impl CorpusView {
    /// The plot the user asked to save as PNG, once.
    pub fn take_plot_request(&mut self) -> Option<crate::app::widgets::plots::SaveRequest> {
        self.plot_request.take()
    }

    /// Shows the window.
    pub fn open(&mut self) {
        self.open = true;
    }

    /// Whether the window is showing.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Windows analysed so far by the run in progress.
    pub fn windows_done(&self) -> Option<usize> {
        let run = self.run.as_ref()?;
        Some(run.progress.as_ref().map_or(0, |p| p.windows_done))
    }

    /// The report of the last run that finished (or was cancelled).
    pub fn report(&self) -> Option<&Arc<CorpusReport>> {
        self.report.as_ref()
    }

    /// Why the last run gave no report.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The message of the last save and whether it was an error.
    pub fn save_message(&self) -> Option<(&str, bool)> {
        self.save_message.as_ref().map(|(m, e)| (m.as_str(), *e))
    }

    /// Writes the report as JSON to `path` (what "Save JSON…" ends in);
    /// the outcome is shown in the window.
    pub fn save_json(&mut self, path: &Path) {
        let Some(report) = &self.report else {
            self.save_message = Some(("there is no result to save yet".into(), true));
            return;
        };
        self.save_message = Some(match crate::export::save_text(&report.to_json(), path) {
            Ok(()) => (format!("Saved {}", path.display()), false),
            Err(error) => (format!("Could not save: {error}"), true),
        });
    }

    /// Starts a run on the folder typed in the field.
    fn start(&mut self, worker: &AnalysisWorker, settings: &Settings) {
        let folder = self.folder.trim().to_string();
        self.error = None;
        self.save_message = None;
        if folder.is_empty() {
            self.error = Some(
                "type a folder of texts (or of capture files) or a .jsonl or .parquet file, \
                 or choose one"
                    .into(),
            );
            return;
        }
        let mut options = settings.corpus_options();
        options.importance = self.importance.then_some(self.importance_mode);
        let text_field = self.text_field.trim();
        let sources = corpus::SourceOptions {
            text_field: if text_field.is_empty() {
                corpus::DEFAULT_TEXT_FIELD.into()
            } else {
                text_field.into()
            },
            ..Default::default()
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let updates = worker.run_corpus(
            vec![PathBuf::from(&folder)],
            sources,
            options,
            cancel.clone(),
        );
        self.report = None;
        self.run = Some(Run {
            updates,
            cancel,
            progress: None,
            skipped: Vec::new(),
            warnings: Vec::new(),
            folder,
        });
    }

    /// Stops the run in progress between two windows.
    fn cancel(&mut self) {
        if let Some(run) = &self.run {
            run.cancel.store(true, Ordering::SeqCst);
        }
    }

    /// Reads what the run and the dialogs sent since the last frame.
    fn poll(&mut self, ctx: &egui::Context) {
        if let Some(picked) = dialogs::poll_dialog(ctx, &mut self.folder_dialog) {
            self.folder = picked.display().to_string();
        }
        if let Some(picked) = dialogs::poll_dialog(ctx, &mut self.save_dialog) {
            self.save_json(&picked);
        }
        let Some(run) = &mut self.run else {
            return;
        };
        let mut ended = None;
        loop {
            match run.updates.try_recv() {
                Ok(CorpusUpdate::Progress(progress)) => run.progress = Some(progress),
                Ok(CorpusUpdate::Skipped(skipped)) => run.skipped.push(skipped),
                Ok(CorpusUpdate::Warning(warning)) => run.warnings.push(warning),
                Ok(CorpusUpdate::Finished(report, style)) => {
                    self.style = style;
                    ended = Some(Ok(report));
                    break;
                }
                Ok(CorpusUpdate::Failed(message)) => {
                    ended = Some(Err(message));
                    break;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    ended = Some(Err("the corpus run stopped unexpectedly".into()));
                    break;
                }
            }
        }
        match ended {
            Some(Ok(report)) => {
                // For scripts that drive the real window (screenshots).
                if std::env::var_os("HEADSCOPE_TRACE").is_some_and(|v| v == "1") {
                    eprintln!(
                        "headscope: corpus finished: {} windows{}",
                        report.windows,
                        if report.partial { ", partial" } else { "" }
                    );
                }
                self.report_folder = run.folder.clone();
                if report.importance.is_some() {
                    // What the run was asked for: the heads' importance,
                    // by the loss where the model has one.
                    self.head_figure = charts::importance_figure(&report);
                }
                self.report = Some(report);
                self.run = None;
            }
            Some(Err(message)) => {
                self.error = Some(message);
                self.run = None;
            }
            None => {}
        }
    }

    /// Polls the run and, when open, draws the window.
    pub fn show(
        &mut self,
        ctx: &egui::Context,
        worker: &AnalysisWorker,
        settings: &Settings,
        model: Option<&str>,
        wake: &Waker,
    ) {
        self.poll(ctx);
        if !self.open {
            return;
        }
        let mut open = true;
        let available = ctx.content_rect();
        egui::Window::new(WINDOW_TITLE)
            .open(&mut open)
            .collapsible(false)
            .resizable(true)
            .default_width((available.width() - 60.0).clamp(600.0, 1500.0))
            .default_height((available.height() - 90.0).clamp(400.0, 900.0))
            .default_pos(available.left_top() + egui::vec2(30.0, 40.0))
            .show(ctx, |ui| {
                egui::ScrollArea::vertical()
                    .auto_shrink(false)
                    .show(ui, |ui| self.body(ui, worker, settings, model, wake));
            });
        self.open &= open;
    }

    fn body(
        &mut self,
        ui: &mut egui::Ui,
        worker: &AnalysisWorker,
        settings: &Settings,
        model: Option<&str>,
        wake: &Waker,
    ) {
        self.controls(ui, worker, settings, model, wake);
        if let Some(error) = &self.error {
            ui.colored_label(ui.visuals().error_fg_color, error);
        }
        if let Some((message, failed)) = &self.save_message {
            let colour = if *failed {
                ui.visuals().error_fg_color
            } else {
                ui.visuals().weak_text_color()
            };
            ui.colored_label(colour, message);
        }
        if let Some(run) = &self.run {
            let cancelled = progress_ui(ui, run);
            files_ui(ui, &run.skipped, &run.warnings);
            if cancelled {
                self.cancel();
            }
            return;
        }
        let Some(report) = self.report.clone() else {
            if self.error.is_none() {
                ui.add_space(12.0);
                ui.weak(
                    "Every document is cut into sentence windows that fit the model: each \
                     .txt or .md file under the folder (searched recursively, .gz read too), \
                     each line of a JSON Lines file and each row of a Parquet file (their \
                     \"text\" field). Each window is analysed like the text in the editor, and \
                     every figure is averaged over the windows with its 95% confidence interval. \
                     A folder of capture files (.safetensors) needs no model: each capture is \
                     one window, analysed as stored.",
                );
            }
            return;
        };
        ui.separator();
        summary_ui(ui, &report, &self.report_folder);
        ui.separator();
        if report.layers.is_empty() {
            ui.weak("No window was analysed, so there are no figures to show.");
        } else {
            if let Some(name) = charts::layer_plots(ui, &report) {
                self.plot_request = Some(name);
            }
            ui.add_space(6.0);
            ui.columns(2, |columns| {
                charts::layer_table(&mut columns[0], &report);
                charts::head_grid(
                    &mut columns[1],
                    &report,
                    &mut self.head_figure,
                    settings.colormap,
                    self.style,
                );
            });
        }
        ui.add_space(4.0);
        files_ui(ui, &report.skipped, &report.warnings);
    }

    fn controls(
        &mut self,
        ui: &mut egui::Ui,
        worker: &AnalysisWorker,
        settings: &Settings,
        model: Option<&str>,
        wake: &Waker,
    ) {
        let running = self.run.is_some();
        ui.horizontal(|ui| {
            let label = ui.label(FOLDER_LABEL);
            let field = ui
                .add_enabled(
                    !running,
                    egui::TextEdit::singleline(&mut self.folder)
                        .hint_text(
                            "a folder of .txt files or captures, or a .jsonl or .parquet file",
                        )
                        .desired_width((ui.available_width() - 400.0).max(200.0)),
                )
                .labelled_by(label.id);
            let submitted = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if ui
                .add_enabled(
                    !running && self.folder_dialog.is_none(),
                    egui::Button::new("Browse…"),
                )
                .on_hover_text("Choose a folder of texts, or of capture files, in a dialog")
                .clicked()
            {
                let request =
                    DialogRequest::folder("Choose a folder of .txt files or capture files");
                self.folder_dialog = Some(Dialog::open(wake, request));
            }
            if ui
                .add_enabled(
                    !running && self.folder_dialog.is_none(),
                    egui::Button::new("File…"),
                )
                .on_hover_text(
                    "Choose a JSON Lines or Parquet file (or one text, or one capture) in a dialog",
                )
                .clicked()
            {
                let request = DialogRequest::file("Choose a corpus file").filter(
                    "Corpus",
                    &[
                        "jsonl",
                        "ndjson",
                        "parquet",
                        "gz",
                        "txt",
                        "md",
                        "safetensors",
                    ],
                );
                self.folder_dialog = Some(Dialog::open(wake, request));
            }
            // A folder of captures needs no model; the run says so when a
            // folder of texts has none. While a run goes on, its progress
            // row below has Cancel.
            let can_run = !running && (model.is_some() || !self.folder.trim().is_empty());
            let run = ui
                .add_enabled(can_run, egui::Button::new(RUN_LABEL))
                .on_hover_text("Analyse every document of the folder or file")
                .on_disabled_hover_text(if running {
                    "A run is going on: Cancel it below, or wait for it"
                } else {
                    "Load a model first, or type a folder of capture files"
                });
            if run.clicked() || (submitted && can_run) {
                self.start(worker, settings);
            }
            if ui
                .add_enabled(
                    self.report.is_some() && self.save_dialog.is_none(),
                    egui::Button::new(SAVE_LABEL),
                )
                .on_hover_text("Write the result as JSON, as `headscope corpus --json` does")
                .clicked()
            {
                let request =
                    DialogRequest::save("Save the corpus statistics as JSON", "corpus.json")
                        .filter("JSON", &["json"]);
                self.save_dialog = Some(Dialog::open(wake, request));
            }
        });
        ui.horizontal(|ui| {
            let label = ui.label(TEXT_FIELD_LABEL);
            ui.add_enabled(
                !running,
                egui::TextEdit::singleline(&mut self.text_field)
                    .hint_text(corpus::DEFAULT_TEXT_FIELD)
                    .desired_width(120.0),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "The JSON Lines field or Parquet column that holds each document's text",
            );
            ui.weak("for JSON Lines and Parquet files; a record's \"id\" names it in the result");
        });
        ui.horizontal(|ui| {
            ui.add_enabled(
                !running,
                egui::Checkbox::new(&mut self.importance, IMPORTANCE_LABEL),
            )
            .on_hover_text(
                "In every window, run the model once more for each head with that head \
                 ablated (ANALYSIS.md §9), and average over the windows how much the \
                 next-token loss (a decoder's) and the last hidden states moved: L × H \
                 passes a window, so this takes many times longer",
            );
            ui.add_enabled_ui(!running && self.importance, |ui| {
                for mode in [AblationMode::Zero, AblationMode::Mean] {
                    ui.radio_value(&mut self.importance_mode, mode, mode.name())
                        .on_hover_text(match mode {
                            AblationMode::Zero => "The head writes nothing",
                            AblationMode::Mean => {
                                "The head writes its mean output over the window's positions"
                            }
                        });
                }
            });
        });
        let mode = match settings.input_mode {
            crate::input::InputMode::Document => "document mode",
            crate::input::InputMode::OneSentencePerLine => "one sentence per line",
            crate::input::InputMode::Plain => "plain mode",
        };
        ui.weak(format!(
            "Model: {} (captures bring their own) · the text panel's analysis settings: {mode} \
             (texts only), {}, similarity {}, w = {}",
            model.unwrap_or("none loaded"),
            selection_text(&settings.analysis_options().selection),
            settings.similarity.label(),
            settings.local_window
        ));
    }
}

fn selection_text(selection: &crate::analysis::Selection) -> String {
    use crate::analysis::Selection;
    match selection {
        Selection::TopFraction { q } => format!("top {}% of pairs", q * 100.0),
        Selection::AboveMean { z } => format!("pairs above mean + {z}·std"),
        Selection::TopKPerRow { k } => format!("top {k} per row"),
    }
}

/// The run's progress row (the one widget every slow stage shows), with
/// Cancel, and below it the file being read and the time so far. Returns
/// true when Cancel was clicked.
fn progress_ui(ui: &mut egui::Ui, run: &Run) -> bool {
    ui.separator();
    let cancelling = run.cancel.load(Ordering::SeqCst);
    // The bar fills the window as the earlier one did, less room for Cancel.
    let width = (ui.available_width() - 90.0).max(200.0);
    let (fraction, text) = match &run.progress {
        Some(progress) => {
            let p = progress.progress();
            let ablating = match p.heads_ablated {
                Some((done, total)) => format!(" · importance: {done} of {total} heads"),
                None => String::new(),
            };
            let count = format!(
                "{} of {} documents · {} window{}{ablating}",
                p.files_done,
                p.files_total,
                p.windows_done,
                if p.windows_done == 1 { "" } else { "s" },
            );
            (
                p.fraction() as f32,
                row_text(PROGRESS_WHAT, &count, p.eta()),
            )
        }
        None => (
            0.0,
            format!("{PROGRESS_WHAT} · looking for documents in {}…", run.folder),
        ),
    };
    let cancelled = ProgressRow::new(fraction, text)
        .width(width)
        .accessible_name(PROGRESS_LABEL)
        .cancel("Stop after the window being analysed and show what is done")
        .cancelling(cancelling)
        .show(ui);
    let Some(progress) = &run.progress else {
        return cancelled;
    };
    ui.horizontal(|ui| {
        if cancelling {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                "Cancelling: stopping after the window being analysed…",
            );
        } else {
            ui.weak(format!("Reading {}", progress.file.display()));
        }
        ui.weak(format!(
            "· {} elapsed",
            corpus::format_duration(progress.elapsed)
        ));
    });
    cancelled
}

fn summary_ui(ui: &mut egui::Ui, report: &CorpusReport, folder: &str) {
    if report.partial {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            RichText::new(format!(
                "Partial result: the run was cancelled after {} window{}; the figures cover \
                 only those.",
                report.windows,
                if report.windows == 1 { "" } else { "s" }
            ))
            .strong(),
        );
    } else {
        ui.label(RichText::new("Complete result").strong());
    }
    let tokens = match report.tokens_per_window.mean {
        Some(mean) => format!(" ({mean:.0} per window)"),
        None => String::new(),
    };
    let importance = match report.importance {
        Some(mode) => format!(" · each head ablated alone ({} ablation)", mode.name()),
        None => String::new(),
    };
    ui.label(format!(
        "{folder}: {} of {} documents analysed · {} windows · {} tokens{tokens} · {} sentences{} · \
         {:.1} s{importance} · model {}",
        report.files,
        report.files_found,
        report.windows,
        report.tokens,
        report.sentences,
        match report.sentences_split {
            0 => String::new(),
            1 => " (1 longer than a window, cut into pieces)".to_string(),
            n => format!(" ({n} longer than a window, cut into pieces)"),
        },
        report.elapsed_seconds,
        report.model
    ));
}

fn files_ui(ui: &mut egui::Ui, skipped: &[SkippedFile], warnings: &[FileWarning]) {
    if !skipped.is_empty() {
        egui::CollapsingHeader::new(format!("Skipped files ({})", skipped.len()))
            .default_open(true)
            .show(ui, |ui| {
                for file in skipped {
                    ui.label(format!("{}: {}", file.path, file.reason));
                }
            });
    }
    if !warnings.is_empty() {
        egui::CollapsingHeader::new(format!("Warnings ({})", warnings.len()))
            .default_open(false)
            .show(ui, |ui| {
                for warning in warnings {
                    ui.label(format!("{}: {}", warning.path, warning.warning));
                }
            });
    }
}
