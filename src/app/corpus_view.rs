//! The corpus statistics window (File → "Corpus statistics…"): the figures
//! of ANALYSIS.md §4 and §5 averaged over a folder of texts, as
//! [`crate::corpus`] computes them for `headscope corpus`.
//!
//! The user types or picks a folder and presses Run. The run goes to the
//! model thread ([`AnalysisWorker::run_corpus`]), which lends the loaded
//! model to a thread of its own, so the UI and the interactive analysis keep
//! working; progress, skipped files and the report come back on a channel
//! polled every frame (also while the window is closed). Cancel sets the
//! run's flag: it stops between windows and the report comes back marked
//! partial, and is shown as such.
//!
//! The result is drawn as one plot per per-layer figure (mean over windows
//! with its 95% interval shaded; the same-sentence plot adds the chance
//! baseline), a table of the same numbers, and a grid of every head coloured
//! by the mean of a chosen per-head figure, with each head's most common
//! category as a strip and everything else on hover. "Save JSON…" writes
//! [`CorpusReport::to_json`] through [`crate::export::save_text`].

use super::dialogs;
use super::overview::category_style;
use super::plot_export;
use super::settings::Settings;
use crate::colormap::{ColorMap, ValueRange};
use crate::corpus::{
    self, CorpusOptions, CorpusReport, FileWarning, HeadSummary, SkippedFile, Summary,
    HEAD_FIGURES, LAYER_FIGURES,
};
use crate::worker::{AnalysisWorker, CorpusProgress, CorpusUpdate, Waker};
use crossbeam_channel::{Receiver, TryRecvError};
use egui::{Color32, RichText, Sense, Stroke};
use egui_plot::{FilledArea, HLine, Line, LineStyle, MarkerShape, Plot, Points};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The File menu entry that opens the window.
pub const MENU_LABEL: &str = "Corpus statistics…";
/// The window's title.
pub const WINDOW_TITLE: &str = "Corpus statistics";
/// The accessible name of the folder field.
pub const FOLDER_LABEL: &str = "Folder of texts";
pub const RUN_LABEL: &str = "Run";
pub const CANCEL_LABEL: &str = "Cancel";
pub const SAVE_LABEL: &str = "Save JSON…";
/// The accessible name of the progress bar.
pub const PROGRESS_LABEL: &str = "Corpus progress";

const PLOT_HEIGHT: f32 = 210.0;
const MEAN_COLOUR: Color32 = Color32::from_rgb(90, 170, 250);
const CHANCE_COLOUR: Color32 = Color32::from_rgb(200, 200, 120);

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
    folder_dialog: Option<Receiver<Option<PathBuf>>>,
    save_dialog: Option<Receiver<Option<PathBuf>>>,
    run: Option<Run>,
    report: Option<Arc<CorpusReport>>,
    /// The folder the report is of.
    report_folder: String,
    /// Why the last run gave no report.
    error: Option<String>,
    /// The outcome of the last save: the message and whether it failed.
    save_message: Option<(String, bool)>,
    /// Index into [`HEAD_FIGURES`] of the figure the head grid shows.
    head_figure: usize,
    /// A plot whose save button was clicked, for the app to export.
    plot_request: Option<String>,
}

impl CorpusView {
    /// The plot the user asked to save as PNG, once.
    pub fn take_plot_request(&mut self) -> Option<String> {
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
            self.error = Some("type a folder holding .txt files, or choose one".into());
            return;
        }
        let options = CorpusOptions {
            mode: settings.input_mode,
            analysis: settings.analysis_options(),
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let updates = worker.run_corpus(vec![PathBuf::from(&folder)], options, cancel.clone());
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
    fn poll(&mut self) {
        if let Some(picked) = dialogs::poll_dialog(&mut self.folder_dialog) {
            self.folder = picked.display().to_string();
        }
        if let Some(picked) = dialogs::poll_dialog(&mut self.save_dialog) {
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
                Ok(CorpusUpdate::Finished(report)) => {
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
        self.poll();
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
            progress_ui(ui, run);
            files_ui(ui, &run.skipped, &run.warnings);
            return;
        }
        let Some(report) = self.report.clone() else {
            if self.error.is_none() {
                ui.add_space(12.0);
                ui.weak(
                    "Every .txt file under the folder (searched recursively) is cut into \
                     sentence windows that fit the model; each window is analysed like the \
                     text in the editor, and every figure is averaged over the windows with \
                     its 95% confidence interval.",
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
            if let Some(name) = layer_plots(ui, &report) {
                self.plot_request = Some(name);
            }
            ui.add_space(6.0);
            ui.columns(2, |columns| {
                layer_table(&mut columns[0], &report);
                head_grid(
                    &mut columns[1],
                    &report,
                    &mut self.head_figure,
                    settings.colormap,
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
                        .hint_text("a folder of .txt files")
                        .desired_width((ui.available_width() - 330.0).max(200.0)),
                )
                .labelled_by(label.id);
            let submitted = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
            if ui
                .add_enabled(
                    !running && self.folder_dialog.is_none(),
                    egui::Button::new("Browse…"),
                )
                .on_hover_text("Choose the folder in a dialog")
                .clicked()
            {
                let wake = wake.clone();
                self.folder_dialog = Some(dialogs::spawn_dialog(wake, || {
                    rfd::FileDialog::new()
                        .set_title("Choose a folder of .txt files")
                        .pick_folder()
                }));
            }
            if running {
                let cancelling = self
                    .run
                    .as_ref()
                    .is_some_and(|r| r.cancel.load(Ordering::SeqCst));
                if ui
                    .add_enabled(!cancelling, egui::Button::new(CANCEL_LABEL))
                    .on_hover_text("Stop after the window being analysed and show what is done")
                    .clicked()
                {
                    self.cancel();
                }
            } else {
                let can_run = model.is_some();
                let run = ui
                    .add_enabled(can_run, egui::Button::new(RUN_LABEL))
                    .on_hover_text("Analyse every .txt file under the folder")
                    .on_disabled_hover_text("Load a model first");
                if run.clicked() || (submitted && can_run) {
                    self.start(worker, settings);
                }
            }
            if ui
                .add_enabled(
                    self.report.is_some() && self.save_dialog.is_none(),
                    egui::Button::new(SAVE_LABEL),
                )
                .on_hover_text("Write the result as JSON, as `headscope corpus --json` does")
                .clicked()
            {
                let wake = wake.clone();
                self.save_dialog = Some(dialogs::spawn_dialog(wake, || {
                    rfd::FileDialog::new()
                        .set_title("Save the corpus statistics as JSON")
                        .set_file_name("corpus.json")
                        .add_filter("JSON", &["json"])
                        .save_file()
                }));
            }
        });
        let mode = match settings.input_mode {
            crate::input::InputMode::Document => "document mode",
            crate::input::InputMode::OneSentencePerLine => "one sentence per line",
            crate::input::InputMode::Plain => "plain mode",
        };
        ui.weak(format!(
            "Model: {} · the text panel's analysis settings: {mode}, {}, similarity {}, w = {}",
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

fn progress_ui(ui: &mut egui::Ui, run: &Run) {
    ui.separator();
    let Some(progress) = &run.progress else {
        ui.horizontal(|ui| {
            ui.add(egui::Spinner::new());
            ui.label(format!("Looking for .txt files in {}…", run.folder));
        });
        return;
    };
    let p = progress.progress();
    let eta = p.eta().map_or("—".to_string(), corpus::format_duration);
    let text = format!(
        "{:.0}% · {}/{} files · {} window{} · ETA {eta}",
        p.fraction() * 100.0,
        p.files_done,
        p.files_total,
        p.windows_done,
        if p.windows_done == 1 { "" } else { "s" },
    );
    let cancelling = run.cancel.load(Ordering::SeqCst);
    let bar = ui.add(
        egui::ProgressBar::new(p.fraction() as f32)
            .text(text.clone())
            .animate(true),
    );
    bar.widget_info(|| {
        egui::WidgetInfo::labeled(egui::Role::ProgressIndicator, true, PROGRESS_LABEL)
    });
    ui.horizontal(|ui| {
        if cancelling {
            ui.colored_label(
                ui.visuals().warn_fg_color,
                "Cancelling: stopping after the window being analysed…",
            );
        } else {
            ui.weak(format!("Reading {}", p.file.display()));
        }
        ui.weak(format!(
            "· {} elapsed",
            corpus::format_duration(progress.elapsed)
        ));
    });
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
    ui.label(format!(
        "{folder}: {} of {} files analysed · {} windows · {} tokens{tokens} · {} sentences{} · \
         {:.1} s · model {}",
        report.files,
        report.files_found,
        report.windows,
        report.tokens,
        report.sentences,
        match report.sentences_left_out {
            0 => String::new(),
            n => format!(" ({n} too long, left out)"),
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

/// The human name of a figure of [`LAYER_FIGURES`] or [`HEAD_FIGURES`].
pub fn figure_title(name: &str) -> &'static str {
    match name {
        "mean_distance" => "mean distance j − i",
        "same_sentence_fraction" => "same-sentence fraction",
        "separator_attention" => "separator attention",
        "focus_uniqueness" => "focus uniqueness",
        "segmentation_accuracy" => "segmentation accuracy",
        "repetition_fraction" => "repetition fraction",
        "focus_share" => "focus share",
        "local_fraction" => "local fraction",
        _ => "figure",
    }
}

/// A number as the window shows it.
pub fn format_number(value: f64) -> String {
    format!("{value:.3}")
}

/// `mean ± half-width of the 95% interval`, the mean alone when the
/// interval is undefined (one window), "—" when the figure never was.
pub fn summary_text(summary: &Summary) -> String {
    match (summary.mean, summary.ci95) {
        (Some(mean), Some([lo, hi])) => {
            format!(
                "{} ± {}",
                format_number(mean),
                format_number((hi - lo) / 2.0)
            )
        }
        (Some(mean), None) => format_number(mean),
        (None, _) => "—".into(),
    }
}

/// Everything about a summary, for a tooltip.
fn summary_details(summary: &Summary) -> String {
    let Some(mean) = summary.mean else {
        return "never defined (no window had selected pairs)".into();
    };
    let interval = match summary.ci95 {
        Some([lo, hi]) => format!("95% interval {} – {}", format_number(lo), format_number(hi)),
        None => "no interval from one window".into(),
    };
    format!(
        "mean {} · {interval} · sd {} · n {}",
        format_number(mean),
        format_number(summary.std.unwrap_or(0.0)),
        summary.n
    )
}

/// The accessible name of a cell of the per-layer table.
pub fn layer_cell_label(layer: usize, figure: &str, summary: &Summary) -> String {
    format!(
        "Corpus L{layer} {}: {}",
        figure_title(figure),
        summary_text(summary)
    )
}

/// One small plot per per-layer figure, in a row.
/// Returns the name of a plot whose save button was clicked.
fn layer_plots(ui: &mut egui::Ui, report: &CorpusReport) -> Option<String> {
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("Per layer").strong());
        ui.weak(
            "line: mean over windows · band and whiskers: its 95% confidence interval · \
             dashed: same-sentence fraction by chance (all candidate pairs), with its band · \
             hover a point for the numbers",
        );
    });
    let count = LAYER_FIGURES.len() as f32;
    let spacing = ui.spacing().item_spacing.x;
    let width = ((ui.available_width() - spacing * (count - 1.0)) / count).max(180.0);
    let layers = report.layers.len();
    let mut clicked = None;
    ui.horizontal_wrapped(|ui| {
        for (index, figure) in LAYER_FIGURES.iter().enumerate() {
            let summaries: Vec<Summary> =
                report.layers.iter().map(|l| l.figures()[index].1).collect();
            let name = format!("corpus-{figure}");
            let save = plot_export::figure(ui, &name, figure_title(figure), |ui| {
                ui.set_width(width);
                let baseline = (index == 1).then_some(report.baseline_same_sentence_fraction);
                layer_plot(ui, figure, &summaries, baseline, layers, width);
            });
            clicked = clicked.take().or(save);
        }
    });
    clicked
}

fn layer_plot(
    ui: &mut egui::Ui,
    figure: &str,
    summaries: &[Summary],
    baseline: Option<Summary>,
    layers: usize,
    width: f32,
) {
    let is_distance = figure == "mean_distance";
    let hover: Vec<Summary> = summaries.to_vec();
    let mut plot = Plot::new(format!("corpus plot {figure}"))
        .width(width)
        .height(PLOT_HEIGHT)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .include_x(-0.3)
        .include_x(layers.saturating_sub(1) as f64 + 0.3)
        .include_y(0.0)
        .x_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 5.0, 10.0]))
        .custom_x_axes(vec![egui_plot::AxisHints::new_x()
            // Every layer's label while they fit, else every fifth.
            .label_spacing(24.0..=30.0)
            .formatter(|mark, _| {
                let v = mark.value;
                if v >= 0.0 && v.fract() == 0.0 {
                    format!("L{v:.0}")
                } else {
                    String::new()
                }
            })])
        .label_formatter(move |position| match position {
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } if *plot_name == "mean" => {
                let layer = position.x.round().max(0.0) as usize;
                hover
                    .get(layer)
                    .map(|s| format!("L{layer}: {}", summary_details(s)))
            }
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } if *plot_name == "chance" => Some(format!("chance: {}", format_number(position.y))),
            _ => None,
        });
    if is_distance {
        plot = plot.y_axis_label("tokens");
    }
    plot.show(ui, |plot_ui| {
        if let Some(baseline) = baseline {
            if let Some(chance) = baseline.mean {
                let (x0, x1) = (-0.3, layers.saturating_sub(1) as f64 + 0.3);
                if let Some([lo, hi]) = baseline.ci95 {
                    plot_ui.add(
                        FilledArea::new("chance", &[x0, x1], &[lo, lo], &[hi, hi])
                            .fill_color(CHANCE_COLOUR.gamma_multiply(0.2))
                            .allow_hover(false),
                    );
                }
                plot_ui.hline(
                    HLine::new("chance", chance)
                        .color(CHANCE_COLOUR)
                        .width(1.5)
                        .style(LineStyle::dashed_loose()),
                );
            }
        }
        for segment in segments(summaries) {
            let xs: Vec<f64> = segment.iter().map(|(x, _)| *x).collect();
            let intervals: Vec<[f64; 2]> = segment
                .iter()
                .map(|(_, s)| s.ci95.unwrap_or_else(|| [s.mean.unwrap_or(0.0); 2]))
                .collect();
            if segment.iter().any(|(_, s)| s.ci95.is_some()) {
                let lo: Vec<f64> = intervals.iter().map(|i| i[0]).collect();
                let hi: Vec<f64> = intervals.iter().map(|i| i[1]).collect();
                plot_ui.add(
                    FilledArea::new("95% interval", &xs, &lo, &hi)
                        .fill_color(MEAN_COLOUR.gamma_multiply(0.25))
                        .allow_hover(false),
                );
            }
            // Whiskers, so a single layer's interval shows too.
            for ((x, _), [lo, hi]) in segment.iter().zip(&intervals) {
                if hi > lo {
                    plot_ui.line(
                        Line::new("95% interval", vec![[*x, *lo], [*x, *hi]])
                            .color(MEAN_COLOUR.gamma_multiply(0.7))
                            .width(1.0)
                            .allow_hover(false),
                    );
                }
            }
            let points: Vec<[f64; 2]> = segment
                .iter()
                .map(|(x, s)| [*x, s.mean.unwrap_or(0.0)])
                .collect();
            plot_ui.line(
                Line::new("mean", points.clone())
                    .color(MEAN_COLOUR)
                    .width(2.0),
            );
            plot_ui.points(
                Points::new("mean", points)
                    .color(MEAN_COLOUR)
                    .radius(3.0)
                    .shape(MarkerShape::Circle),
            );
        }
    });
}

/// Runs of consecutive layers whose mean is defined.
fn segments(summaries: &[Summary]) -> Vec<Vec<(f64, Summary)>> {
    let mut out: Vec<Vec<(f64, Summary)>> = vec![Vec::new()];
    for (layer, summary) in summaries.iter().enumerate() {
        if summary.mean.is_some_and(f64::is_finite) {
            out.last_mut()
                .expect("never empty")
                .push((layer as f64, *summary));
        } else if out.last().is_some_and(|s| !s.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The per-layer numbers: mean ± half the 95% interval, details on hover.
fn layer_table(ui: &mut egui::Ui, report: &CorpusReport) {
    ui.label(RichText::new("Per layer: mean ± half the 95% interval").strong());
    egui::ScrollArea::horizontal()
        .id_salt("corpus layer table")
        .show(ui, |ui| {
            egui::Grid::new("corpus layer table grid")
                .striped(true)
                .spacing(egui::vec2(14.0, 3.0))
                .show(ui, |ui| {
                    ui.strong("layer");
                    for figure in LAYER_FIGURES {
                        ui.strong(figure_title(figure));
                    }
                    ui.end_row();
                    for layer in &report.layers {
                        ui.label(format!("L{}", layer.layer));
                        for (figure, summary) in layer.figures() {
                            let label = layer_cell_label(layer.layer, figure, &summary);
                            ui.label(summary_text(&summary))
                                .on_hover_text(summary_details(&summary))
                                .widget_info(|| {
                                    egui::WidgetInfo::labeled(egui::Role::Label, true, &label)
                                });
                        }
                        ui.end_row();
                    }
                });
        });
    let baseline = &report.baseline_same_sentence_fraction;
    ui.weak(format!(
        "Same-sentence fraction by chance (all candidate pairs): {}",
        summary_text(baseline)
    ))
    .on_hover_text(summary_details(baseline));
}

/// The mean of head figure `figure` (an index into [`HEAD_FIGURES`]).
fn head_mean(head: &HeadSummary, figure: usize) -> Option<f64> {
    head.figures()[figure].1.mean.filter(|v| v.is_finite())
}

/// The accessible name of a head grid cell.
pub fn head_cell_label(layer: usize, head: &HeadSummary, figure: usize) -> String {
    let summary = head.figures()[figure].1;
    format!(
        "Corpus L{layer} H{}: {} {}, mostly {}",
        head.head,
        figure_title(HEAD_FIGURES[figure]),
        summary_text(&summary),
        category_style(head.categories.most_common).0
    )
}

fn head_tooltip(layer: usize, head: &HeadSummary) -> String {
    let mut lines = vec![format!("L{layer} H{}", head.head)];
    for (name, summary) in head.figures() {
        lines.push(format!(
            "{}: {}",
            figure_title(name),
            summary_details(&summary)
        ));
    }
    let categories = &head.categories;
    let share = |count: usize| match categories.counts.total() {
        0 => 0.0,
        total => count as f64 * 100.0 / total as f64,
    };
    match categories.most_common {
        Some(category) => lines.push(format!(
            "most common category: {} ({:.0}% of windows)",
            category_style(Some(category)).0,
            share(categories.counts.get(category))
        )),
        None => lines.push("most common category: none (no pairs)".into()),
    }
    let counts = &categories.counts;
    lines.push(format!(
        "categories: repetition {:.0}%, focus {:.0}%, local {:.0}%, mixed {:.0}%, no pairs {:.0}%",
        share(counts.repetition),
        share(counts.focus),
        share(counts.local),
        share(counts.mixed),
        share(counts.none)
    ));
    if let Some(focus) = &head.focus_token {
        lines.push(format!(
            "focus token: {} (id {}) in {:.0}% of windows",
            focus.token.as_deref().unwrap_or("?"),
            focus.id,
            focus.fraction * 100.0
        ));
    }
    lines.join("\n")
}

/// Every head as a cell coloured by the chosen figure's mean, with its
/// most common category as a strip along the bottom.
fn head_grid(ui: &mut egui::Ui, report: &CorpusReport, figure: &mut usize, map: ColorMap) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("Heads, coloured by").strong());
        egui::ComboBox::from_id_salt("corpus head figure")
            .selected_text(figure_title(HEAD_FIGURES[*figure]))
            .show_ui(ui, |ui| {
                for (index, name) in HEAD_FIGURES.iter().enumerate() {
                    ui.selectable_value(figure, index, figure_title(name));
                }
            });
    });
    let figure = (*figure).min(HEAD_FIGURES.len() - 1);
    let values: Vec<f32> = report
        .layers
        .iter()
        .flat_map(|l| l.heads.iter().filter_map(|h| head_mean(h, figure)))
        .map(|v| v as f32)
        .collect();
    let range = ValueRange::auto(map, &values);
    super::heatmap::colour_bar(ui, map, Some(range), "mean over windows");
    let heads = report
        .layers
        .iter()
        .map(|l| l.heads.len())
        .max()
        .unwrap_or(0);
    if heads == 0 {
        return;
    }
    let header = 34.0;
    let cell_w = ((ui.available_width() - header) / heads as f32 - 2.0).clamp(24.0, 64.0);
    let cell_h = 26.0;
    let font = egui::FontId::proportional(if cell_w >= 40.0 { 11.0 } else { 9.0 });
    egui::Grid::new("corpus head grid")
        .spacing(egui::vec2(2.0, 2.0))
        .min_col_width(0.0)
        .show(ui, |ui| {
            ui.label("");
            for h in 0..heads {
                ui.vertical_centered(|ui| {
                    ui.set_width(cell_w);
                    ui.small(format!("H{h}"));
                });
            }
            ui.end_row();
            for layer in &report.layers {
                ui.label(format!("L{}", layer.layer));
                for head in &layer.heads {
                    let (rect, response) =
                        ui.allocate_exact_size(egui::vec2(cell_w, cell_h), Sense::hover());
                    let painter = ui.painter_at(rect);
                    let mean = head_mean(head, figure);
                    let fill = match mean {
                        Some(v) => {
                            let [r, g, b] = map.color(v as f32, range);
                            Color32::from_rgb(r, g, b)
                        }
                        None => ui.visuals().faint_bg_color,
                    };
                    painter.rect_filled(rect, 2.0, fill);
                    let (_, strip) = category_style(head.categories.most_common);
                    let strip_rect = egui::Rect::from_min_max(
                        egui::pos2(rect.left(), rect.bottom() - 4.0),
                        rect.right_bottom(),
                    );
                    painter.rect_filled(strip_rect, 0.0, strip);
                    let text = mean.map_or("—".to_string(), |v| {
                        if v.abs() >= 10.0 {
                            format!("{v:.1}")
                        } else {
                            format!("{v:.2}")
                        }
                    });
                    let luminance =
                        0.299 * fill.r() as f32 + 0.587 * fill.g() as f32 + 0.114 * fill.b() as f32;
                    let text_colour = if luminance > 140.0 {
                        Color32::BLACK
                    } else {
                        Color32::WHITE
                    };
                    painter.text(
                        rect.center() - egui::vec2(0.0, 2.0),
                        egui::Align2::CENTER_CENTER,
                        text,
                        font.clone(),
                        text_colour,
                    );
                    if response.hovered() {
                        painter.rect_stroke(
                            rect,
                            2.0,
                            Stroke::new(2.0, ui.visuals().strong_text_color()),
                            egui::StrokeKind::Inside,
                        );
                    }
                    let label = head_cell_label(layer.layer, head, figure);
                    response
                        .on_hover_text(head_tooltip(layer.layer, head))
                        .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Cell, true, &label));
                }
                ui.end_row();
            }
        });
    ui.horizontal_wrapped(|ui| {
        ui.small("strip: most common category");
        for category in crate::analysis::Category::ALL
            .into_iter()
            .map(Some)
            .chain([None])
        {
            let (name, colour) = category_style(category);
            let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 8.0), Sense::hover());
            ui.painter().rect_filled(rect, 1.0, colour);
            ui.small(name);
        }
    });
}
