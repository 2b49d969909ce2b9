//! Ablation in the Heads tab (ANALYSIS.md §9): a head's context menu in
//! the grid, or [`ABLATE_KEY`] over it, ablates it or gives it back; the worker runs the shown input
//! (the text, or the induction probe where the tab shows it) without and
//! with the ablated heads ([`crate::worker::AnalysisWorker::ablate`]), with
//! the progress row and Cancel; above the grid a row says which heads are
//! ablated and how the output moved, with Undo, Clear and the mode, and the
//! input's tokens are coloured by how much each moved: a decoder's change
//! of the loss of predicting each token, an encoder's 1 − cos of its last
//! hidden state. Ablated heads are marked on the grid, and
//! [`SHOW_ABLATED_LABEL`] shows the ablated run's pictures and figures in
//! place of the unablated ones (the layers after the ablated heads move):
//! a third pass, which runs only then.
//! [`IMPORTANCE_LABEL`] ablates each head alone and draws the effect on
//! its thumbnail.

use crate::app::jobs::JobProgress;
use crate::app::widgets::format::figure;
use crate::app::widgets::progress;
use crate::app::widgets::token_text::{ChipStyle, TokenFlow};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use crate::model::ablation::{Ablation, AblationEffect, AblationMode, HeadImportance};
use crate::pipeline::RunOutput;
use crate::worker::{
    AblatedRunResult, AblationResult, ImportanceResult, JobError, ABLATION_PASSES,
};
use crossbeam_channel::{Receiver, TryRecvError};
use std::sync::Arc;

/// What the ablation's progress rows say they do.
pub const ABLATION_PROGRESS_LABEL: &str = "Ablating heads";
pub const ABLATED_RUN_PROGRESS_LABEL: &str = "Running the ablated model";
/// The buttons of the ablation row.
pub const UNDO_LABEL: &str = "Undo";
pub const CLEAR_LABEL: &str = "Give every head back";
/// The switch that shows the ablated run in place of the unablated one.
pub const SHOW_ABLATED_LABEL: &str = "Show the ablated run";

/// The bit of an ablated run's generation ([`AblationSlot::shown_run`]):
/// no text result, and no probe, reaches it.
const ABLATED_GENERATIONS: u64 = 1 << 62;

/// The key that ablates the head under the pointer in the grid, or the
/// head shown in the detail, or gives it back.
pub const ABLATE_KEY: egui::Key = egui::Key::A;

/// The context-menu entry that ablates `head` (or gives it back).
pub fn toggle_label(head: HeadId, ablated: bool) -> String {
    if ablated {
        format!("Give L{} H{} back", head.layer, head.head)
    } else {
        format!("Ablate L{} H{}", head.layer, head.head)
    }
}

/// What an answer is for: the shown result, the heads and the mode.
#[derive(Clone, Debug, PartialEq)]
struct Asked {
    generation: u64,
    ablation: Ablation,
}

/// One of the ablation's jobs (its effect, or its run): asked, running,
/// answered, failed or stopped by the user.
#[derive(Default)]
enum JobState<T> {
    #[default]
    Idle,
    Running {
        asked: Asked,
        answer: Receiver<Result<Arc<T>, JobError>>,
        progress: Arc<JobProgress>,
    },
    Done {
        asked: Asked,
        answer: Arc<T>,
        /// Counts the answers: the ablated run's pictures are keyed by it.
        number: u64,
    },
    Failed {
        asked: Asked,
        message: String,
    },
    /// The user stopped it: not asked for again until the heads or the
    /// mode change.
    Cancelled {
        asked: Asked,
    },
}

impl<T> JobState<T> {
    /// Whether it is (or was) for `wanted`: asked again, it would give the
    /// same answer.
    fn is_for(&self, wanted: &Asked) -> bool {
        match self {
            Self::Idle => false,
            Self::Running { asked, .. }
            | Self::Done { asked, .. }
            | Self::Failed { asked, .. }
            | Self::Cancelled { asked } => asked == wanted,
        }
    }

    fn requested(
        &mut self,
        asked: Asked,
        answer: Receiver<Result<Arc<T>, JobError>>,
        progress: Arc<JobProgress>,
    ) {
        *self = Self::Running {
            asked,
            answer,
            progress,
        };
    }

    /// Takes the worker's answer, if it came; `answers` counts them.
    fn poll(&mut self, answers: &mut u64, what: &str) {
        let Self::Running { asked, answer, .. } = self else {
            return;
        };
        let result = match answer.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Err(JobError::Failed(format!(
                "{what}'s thread stopped without an answer"
            ))),
        };
        let asked = asked.clone();
        *self = match result {
            Ok(answer) => {
                *answers += 1;
                Self::Done {
                    asked,
                    answer,
                    number: *answers,
                }
            }
            Err(error) => Self::Failed {
                asked,
                message: error.to_string(),
            },
        };
    }

    /// Stops it if it runs.
    fn cancel(&mut self) {
        if let Self::Running { progress, .. } = self {
            progress.cancel();
            *self = Self::Idle;
        }
    }

    /// The answer, once done, if it is for `wanted`.
    fn answer_for(&self, wanted: &Asked) -> Option<(&Arc<T>, u64)> {
        match self {
            Self::Done {
                asked,
                answer,
                number,
            } if asked == wanted => Some((answer, *number)),
            _ => None,
        }
    }

    /// Its progress row while it runs (with `stop` to stop it), its error,
    /// or that the user stopped it (`stopped` says how to run it again).
    fn status_row(&mut self, ui: &mut egui::Ui, stop: &str, stopped: &str) {
        let stop_asked = match self {
            Self::Running { progress, .. } => progress::job_row(ui, progress, stop),
            Self::Failed { message, .. } => {
                ui.colored_label(ui.visuals().error_fg_color, message.as_str());
                false
            }
            Self::Cancelled { .. } => {
                ui.weak(stopped);
                false
            }
            _ => false,
        };
        if stop_asked {
            if let Self::Running { asked, .. } = self {
                let asked = asked.clone();
                self.cancel();
                *self = Self::Cancelled { asked };
            }
        }
    }
}

/// The heads the user ablated, their history for Undo, and the effect;
/// the ablated run once the user asks to see it; and each head's
/// importance.
#[derive(Default)]
pub struct AblationSlot {
    pub mode: AblationMode,
    heads: Vec<HeadId>,
    undo: Vec<Vec<HeadId>>,
    effect: JobState<AblationEffect>,
    /// The ablated run, captured and analysed: a third pass, run only
    /// while the grid is to show it.
    run: JobState<RunOutput>,
    /// Answers taken so far.
    answers: u64,
    /// The grid shows the ablated run (once there is one).
    pub show_ablated: bool,
    pub importance: ImportanceSlot,
}

impl AblationSlot {
    /// A progress for an ablation's passes.
    pub fn progress() -> Arc<JobProgress> {
        JobProgress::counting(ABLATION_PROGRESS_LABEL, "passes", ABLATION_PASSES)
    }

    /// A progress for the ablated run's one pass.
    pub fn run_progress() -> Arc<JobProgress> {
        JobProgress::counting(ABLATED_RUN_PROGRESS_LABEL, "passes", 1)
    }

    pub fn heads(&self) -> &[HeadId] {
        &self.heads
    }

    pub fn is_ablated(&self, head: HeadId) -> bool {
        self.heads.contains(&head)
    }

    /// Ablates `head`, or gives it back.
    pub fn toggle(&mut self, head: HeadId) {
        self.undo.push(self.heads.clone());
        match self.heads.iter().position(|&h| h == head) {
            Some(i) => {
                self.heads.remove(i);
            }
            None => self.heads.push(head),
        }
    }

    /// Back to the heads before the last change.
    pub fn undo(&mut self) {
        if let Some(heads) = self.undo.pop() {
            self.heads = heads;
        }
    }

    /// Every head back (undoable).
    pub fn clear(&mut self) {
        if !self.heads.is_empty() {
            self.undo.push(std::mem::take(&mut self.heads));
        }
    }

    /// Another model is loaded: its heads are others.
    pub fn forget(&mut self) {
        self.cancel();
        self.importance.hide();
        *self = Self {
            mode: self.mode,
            answers: self.answers,
            ..Self::default()
        };
    }

    fn ablation(&self) -> Ablation {
        Ablation::new(self.mode, self.heads.iter().map(|h| (h.layer, h.head)))
    }

    /// What the current heads ask of result `generation`.
    fn asked(&self, generation: u64) -> Asked {
        Asked {
            generation,
            ablation: self.ablation(),
        }
    }

    /// The ablation to ask the worker for, for the result `generation`
    /// shown: `None` when none is ablated, or its answer is there or on its
    /// way (a running job for other heads is stopped).
    pub fn wanted(&mut self, generation: u64) -> Option<Ablation> {
        self.poll();
        if self.heads.is_empty() {
            self.cancel();
            return None;
        }
        let wanted = self.asked(generation);
        if self.effect.is_for(&wanted) {
            return None;
        }
        self.effect.cancel();
        Some(wanted.ablation)
    }

    /// The ablated run to ask the worker for: only while the grid is to
    /// show it, once the effect of the same heads is there (so a change of
    /// heads runs the two cheaper passes first), and not while its answer
    /// is there or on its way.
    pub fn wanted_run(&mut self, generation: u64) -> Option<Ablation> {
        let wanted = self.asked(generation);
        if !self.show_ablated || self.effect.answer_for(&wanted).is_none() {
            return None;
        }
        if self.run.is_for(&wanted) {
            return None;
        }
        self.run.cancel();
        Some(wanted.ablation)
    }

    /// The worker's answer to `ablation` on result `generation` will come
    /// on `answer`.
    pub fn requested(
        &mut self,
        generation: u64,
        ablation: Ablation,
        answer: Receiver<AblationResult>,
        progress: Arc<JobProgress>,
    ) {
        let asked = Asked {
            generation,
            ablation,
        };
        self.effect.requested(asked, answer, progress);
    }

    /// The ablated run of `ablation` on result `generation` will come on
    /// `answer`.
    pub fn requested_run(
        &mut self,
        generation: u64,
        ablation: Ablation,
        answer: Receiver<AblatedRunResult>,
        progress: Arc<JobProgress>,
    ) {
        let asked = Asked {
            generation,
            ablation,
        };
        self.run.requested(asked, answer, progress);
    }

    /// Takes the worker's answers, if they came.
    pub fn poll(&mut self) {
        self.effect.poll(&mut self.answers, "the ablation");
        self.run.poll(&mut self.answers, "the ablated run");
    }

    /// Stops a running ablation, and its run.
    pub fn cancel(&mut self) {
        self.effect.cancel();
        self.run.cancel();
    }

    /// The effect of the current heads on result `generation`, once done.
    pub fn effect(&self, generation: u64) -> Option<&AblationEffect> {
        let wanted = self.asked(generation);
        self.effect.answer_for(&wanted).map(|(effect, _)| &**effect)
    }

    /// The ablated run of result `generation`, and the generation its
    /// pictures are keyed by, while the grid is to show it
    /// ([`SHOW_ABLATED_LABEL`]) and it is done.
    pub fn shown_run(&self, generation: u64) -> Option<(&Arc<RunOutput>, u64)> {
        if !self.show_ablated || self.heads.is_empty() {
            return None;
        }
        let (run, number) = self.run.answer_for(&self.asked(generation))?;
        Some((run, ABLATED_GENERATIONS | number))
    }

    /// The row above the grid while any head is ablated: which, how, the
    /// effect (or its progress), Undo and Clear; then the tokens coloured
    /// by how much each moved. `output` is the result the grid shows.
    pub fn ui(&mut self, ui: &mut egui::Ui, output: &RunOutput, generation: u64) {
        if self.heads.is_empty() && self.undo.is_empty() {
            return;
        }
        ui.horizontal_wrapped(|ui| {
            if self.heads.is_empty() {
                ui.weak("No head is ablated (a head's menu, right click, ablates it).");
            } else {
                let mut names: Vec<String> = self
                    .heads
                    .iter()
                    .map(|h| format!("L{} H{}", h.layer, h.head))
                    .collect();
                names.sort();
                ui.strong(format!("Ablated: {}", names.join(", ")));
                ui.label("output");
                ui.selectable_value(&mut self.mode, AblationMode::Zero, "zero")
                    .on_hover_text("The heads' outputs are zero before the output projection");
                ui.selectable_value(&mut self.mode, AblationMode::Mean, "mean")
                    .on_hover_text("Each head's output is its mean over the input's positions");
            }
            if ui
                .add_enabled(!self.undo.is_empty(), egui::Button::new(UNDO_LABEL))
                .clicked()
            {
                self.undo();
            }
            if ui
                .add_enabled(!self.heads.is_empty(), egui::Button::new(CLEAR_LABEL))
                .clicked()
            {
                self.clear();
            }
        });
        if self.heads.is_empty() {
            return;
        }
        self.effect.status_row(
            ui,
            "Stop the ablation",
            "The ablation was stopped; ablating another head, or the mode, runs it again.",
        );
        let wanted = self.asked(generation);
        if let Some((effect, _)) = self.effect.answer_for(&wanted) {
            let effect = effect.clone();
            ui.horizontal_wrapped(|ui| {
                ui.checkbox(&mut self.show_ablated, SHOW_ABLATED_LABEL)
                    .on_hover_text(
                        "The grid, its captions and a head's detail show the ablated model's \
                         run (one more pass, captured and analysed): the pictures and figures \
                         of the layers after the ablated heads change",
                    );
                effect_summary(ui, &effect);
            });
            if self.show_ablated {
                self.run.status_row(
                    ui,
                    "Stop the ablated run",
                    "The ablated run was stopped; ablating another head, or the mode, runs it \
                     again.",
                );
            }
            effect_tokens(ui, output, &effect);
        }
    }
}

/// The effect in words: the loss before and after, and the output change.
fn effect_summary(ui: &mut egui::Ui, effect: &AblationEffect) {
    let mut text = String::new();
    if let (Some(delta), Some((before, after))) = (effect.delta_loss, effect.mean_losses()) {
        text.push_str(&format!(
            "next-token loss {} → {} nats ({delta:+.4}) · ",
            figure(Some(before), 4),
            figure(Some(after), 4),
        ));
    }
    text.push_str(&format!(
        "output change {} (mean 1 − cos of the last hidden states)",
        figure(Some(effect.output_change), 5)
    ));
    ui.label(text);
}

/// The input's tokens, each coloured by how much it moved: the change of
/// the loss of predicting it (a decoder; red: harder, blue: easier), or the
/// change of its last hidden state (an encoder).
fn effect_tokens(ui: &mut egui::Ui, output: &RunOutput, effect: &AblationEffect) {
    let tokens = &output.input.tokens;
    let labels = tokens.readable_tokens();
    // Token i + 1's loss change is predicted at position i.
    let values: Vec<Option<f64>> = if effect.delta_loss.is_some() {
        std::iter::once(None)
            .chain(
                effect
                    .ablated_loss
                    .iter()
                    .zip(&effect.loss)
                    .map(|(a, b)| Some(a - b)),
            )
            .collect()
    } else {
        effect.token_change.iter().map(|&v| Some(v)).collect()
    };
    let decoder = effect.delta_loss.is_some();
    let largest = values
        .iter()
        .flatten()
        .fold(0f64, |m, v| m.max(v.abs()))
        .max(1e-12);
    // Red for harder (RdBu runs red → white → blue): the scale turned over.
    let colour = |v: f64| {
        let [r, g, b] = if decoder {
            let range = ValueRange::new(-largest as f32, largest as f32);
            ColorMap::RdBu.rgb(1.0 - range.normalise(v as f32))
        } else {
            let range = ValueRange::new(0.0, largest as f32);
            ColorMap::Viridis.rgb(range.normalise(v as f32))
        };
        egui::Color32::from_rgb(r, g, b)
    };
    ui.weak(if decoder {
        "Each token by how much harder (red) or easier (blue) it got to predict"
    } else {
        "Each token by how far its last hidden state turned (1 − cos)"
    });
    let text = ui.visuals().text_color();
    let style = |i: usize| match values.get(i).copied().flatten() {
        Some(v) => ChipStyle::filled(colour(v)),
        None => ChipStyle::plain(text),
    };
    let tooltip = |i: usize| match values.get(i).copied().flatten() {
        Some(v) if decoder => format!("loss of predicting it {v:+.4} nats"),
        Some(v) => format!("1 − cos {v:.6}"),
        None => "nothing predicts the first token".into(),
    };
    egui::ScrollArea::vertical()
        .id_salt("ablation tokens")
        .max_height(90.0)
        .show(ui, |ui| {
            TokenFlow {
                id_salt: "ablation tokens",
                tokens: &labels,
                font_size: 13.0,
                chip_prefix: None,
                name: "tokens coloured by the ablation's effect",
                wrap: true,
            }
            .show(ui, &style, &tooltip);
        });
}

/// The button that asks for every head's importance.
pub const IMPORTANCE_LABEL: &str = "Each head's importance";
/// What the importance's progress row says it does.
pub const IMPORTANCE_PROGRESS_LABEL: &str = "Ablating each head alone";
/// The button that takes the importance off the grid.
pub const HIDE_IMPORTANCE_LABEL: &str = "Hide the importance";

/// What an importance answer is for: the shown result and the mode.
type ImportanceKey = (u64, AblationMode);

#[derive(Default)]
enum ImportanceState {
    #[default]
    Idle,
    Running {
        key: ImportanceKey,
        answer: Receiver<ImportanceResult>,
        progress: Arc<JobProgress>,
    },
    Done {
        key: ImportanceKey,
        importance: Arc<HeadImportance>,
    },
    Failed {
        key: ImportanceKey,
        message: String,
    },
    /// Stopped by the user: not asked for again until shown again.
    Cancelled,
}

/// `head_importance` on the grid (ANALYSIS.md §9): each head ablated alone
/// on the shown input, asked for by [`IMPORTANCE_LABEL`], drawn on each
/// thumbnail until hidden.
#[derive(Default)]
pub struct ImportanceSlot {
    shown: bool,
    state: ImportanceState,
}

impl ImportanceSlot {
    /// A progress for ablating each of `heads` heads.
    pub fn progress(heads: usize) -> Arc<JobProgress> {
        JobProgress::counting(IMPORTANCE_PROGRESS_LABEL, "heads", heads)
    }

    /// Puts the importance on the grid (computing it where needed).
    pub fn show(&mut self) {
        self.shown = true;
        if matches!(self.state, ImportanceState::Cancelled) {
            self.state = ImportanceState::Idle;
        }
    }

    /// Takes it off (and stops its computation).
    pub fn hide(&mut self) {
        self.shown = false;
        self.cancel();
        if matches!(self.state, ImportanceState::Cancelled) {
            self.state = ImportanceState::Idle;
        }
    }

    fn cancel(&mut self) {
        if let ImportanceState::Running { progress, .. } = &self.state {
            progress.cancel();
            self.state = ImportanceState::Cancelled;
        }
    }

    /// Whether the worker must be asked for the importance of result
    /// `generation` in `mode`.
    pub fn wanted(&mut self, generation: u64, mode: AblationMode) -> bool {
        self.poll();
        if !self.shown {
            return false;
        }
        let wanted = (generation, mode);
        match &self.state {
            ImportanceState::Running { key, .. }
            | ImportanceState::Done { key, .. }
            | ImportanceState::Failed { key, .. }
                if *key == wanted =>
            {
                false
            }
            ImportanceState::Cancelled => false,
            _ => {
                self.cancel();
                true
            }
        }
    }

    /// The worker's answer for result `generation` in `mode` will come on
    /// `answer`.
    pub fn requested(
        &mut self,
        generation: u64,
        mode: AblationMode,
        answer: Receiver<ImportanceResult>,
        progress: Arc<JobProgress>,
    ) {
        self.state = ImportanceState::Running {
            key: (generation, mode),
            answer,
            progress,
        };
    }

    fn poll(&mut self) {
        let ImportanceState::Running { key, answer, .. } = &self.state else {
            return;
        };
        let result = match answer.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Err(JobError::Failed(
                "the importance's thread stopped without an answer".into(),
            )),
        };
        let key = *key;
        self.state = match result {
            Ok(importance) => ImportanceState::Done { key, importance },
            Err(error) => ImportanceState::Failed {
                key,
                message: error.to_string(),
            },
        };
    }

    /// Each head's importance (layer-major) on result `generation` in
    /// `mode`, while shown: a decoder's `delta_loss`, an encoder's
    /// `output_change`.
    pub fn values(&self, generation: u64, mode: AblationMode) -> Option<&[f64]> {
        match &self.state {
            ImportanceState::Done { key, importance }
                if self.shown && *key == (generation, mode) =>
            {
                Some(importance.ranking().0)
            }
            _ => None,
        }
    }

    /// What the importance on the grid is, while shown: its progress, why
    /// it failed, or what its numbers mean, with a button to hide it.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        if !self.shown {
            return;
        }
        let mut stopped = false;
        ui.horizontal_wrapped(|ui| match &self.state {
            ImportanceState::Running { progress, .. } => {
                stopped = progress::job_row(ui, progress, "Stop; the grid shows no importance");
            }
            ImportanceState::Failed { message, .. } => {
                ui.colored_label(ui.visuals().error_fg_color, message);
            }
            ImportanceState::Done { importance, .. } => {
                ui.weak(if importance.delta_loss.is_some() {
                    "Importance: how much the next-token loss rises (nats) with the head \
                     ablated alone; bar: its share of the largest"
                } else {
                    "Importance: how far the last hidden states turn (mean 1 − cos) with \
                     the head ablated alone; bar: its share of the largest"
                });
            }
            _ => {}
        });
        if stopped {
            self.cancel();
        }
        if ui.small_button(HIDE_IMPORTANCE_LABEL).clicked() {
            self.hide();
        }
    }
}
