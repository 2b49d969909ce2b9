//! What every study view shares: the [`View`] trait they implement, the
//! [`ViewContext`] handed to each, the [`ViewAction`]s they ask of the app,
//! and the state they all follow ([`Shared`]: the picked tokens, the chosen
//! layer, the category filter, the per-token arrays derived from a
//! result, a decoder's own next-token predictions), with the small pieces
//! several of them draw (the layer picker, a token's tooltip, the
//! picked-token outline).
//!
//! A view imports this module and the widgets, never another view; the
//! registry ([`super::Views`]) and the app's shell are the only ones that
//! know every view.

pub mod derived;
pub mod lens;
pub mod pairs;
pub mod selection;

use crate::analysis::Category;
use crate::app::settings::Settings;
use crate::app::widgets::plots::SaveRequest;
use crate::app::widgets::token_text::ChipStyle;
use crate::captures::HeadId;
use crate::model::ModelSource;
use crate::pipeline::RunOutput;
use crate::tokens::ReadableTokens;
use crate::worker::Waker;
use derived::Derived;
use egui::{Color32, Stroke};
use lens::{top_text, LensSlot};
use selection::TokenSelection;
use std::borrow::Cow;
use std::sync::Arc;

/// One tab of the central area.
pub trait View {
    /// Draws the view for the result in `cx`; returns what it asks of the
    /// app.
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction>;
}

/// What a view is handed each frame.
pub struct ViewContext<'a> {
    /// The result on screen.
    pub output: &'a Arc<RunOutput>,
    /// Its generation (a new one is a new result).
    pub generation: u64,
    /// The user's settings; views change only the view choices.
    pub settings: &'a mut Settings,
    /// The state every view follows.
    pub shared: &'a mut Shared,
    /// Whether an analysis is owed or running.
    pub working: bool,
    /// Repaints the window; for the views' own background jobs.
    pub wake: &'a Waker,
    /// The name of the model in use.
    pub model_name: &'a str,
}

/// What a view asks the app to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewAction {
    /// Open the head's detail (Heads tab).
    OpenHead(HeadId),
    /// Show the Heads grid with only this layer.
    ShowLayer(usize),
    /// Show the Heads grid with the separator attention overlay on.
    ShowSeparatorOverlay,
    /// Save a figure as PNG, SVG or PDF (see
    /// [`crate::app::files::plot_export`]).
    SavePlot(SaveRequest),
    /// Ask for a folder (or with `file`, a GGUF file) to load as the
    /// second model (Compare).
    PickComparisonModel { file: bool },
    /// Load this model as the second model (Compare).
    LoadComparisonModel(ModelSource),
    /// Compute the logit lens of the result on screen.
    ComputeLogitLens,
    /// Analyse the induction probe with the loaded model (the Heads grid's
    /// captions name its roles).
    RunInductionProbe,
    /// Run `input_ids` (the input of the result `generation` the Heads
    /// tab shows) without and with `ablation`: its effect.
    Ablate {
        input_ids: Vec<u32>,
        generation: u64,
        ablation: crate::model::ablation::Ablation,
    },
    /// Run `input` (as above) whole with `ablation`, captured and
    /// analysed: the ablated run the grid shows.
    AblatedRun {
        input: Box<crate::input::BuiltInput>,
        generation: u64,
        ablation: crate::model::ablation::Ablation,
    },
    /// Ablate each head alone on `input_ids` (as above): `head_importance`.
    HeadImportance {
        input_ids: Vec<u32>,
        generation: u64,
        mode: crate::model::ablation::AblationMode,
    },
}

/// A click on a figure's save button (see
/// [`crate::app::widgets::plots::figure`]) becomes the view's action.
pub fn save_plot(action: &mut Option<ViewAction>, clicked: Option<SaveRequest>) {
    if let Some(request) = clicked {
        *action = Some(ViewAction::SavePlot(request));
    }
}

/// The runtime state the study's views share (not persisted).
#[derive(Default)]
pub struct Shared {
    /// The picked tokens; every view follows them.
    pub selection: TokenSelection,
    /// The layer the Separators and Token focus views show.
    pub layer: usize,
    /// The specialisation table's filter, also highlighted in the grid.
    pub category: Option<Category>,
    /// The per-token arrays of the result on screen.
    pub derived: Option<Derived>,
    /// The Separators view reads the value-weighted attention N′
    /// (ANALYSIS.md §9) instead of P.
    pub value_weighted: bool,
    /// The two tokens of the heatmap cell under the pointer (row, column),
    /// this frame: the text panel marks them and scrolls to them.
    pub hovered_cell: Option<(usize, usize)>,
    /// Where the text the model generated starts (a byte offset of the
    /// text), while the text ends with it.
    pub generated_from: Option<usize>,
    /// A decoder's top 5 next tokens at every position of the result on
    /// screen (asked by the shell once a view wants them).
    pub next_tokens: LensSlot,
}

impl Shared {
    /// Derives the per-layer arrays and moves the selection when a new
    /// result (`generation`) is on screen; nothing otherwise.
    pub fn sync(&mut self, generation: u64, output: &RunOutput) {
        if self
            .derived
            .as_ref()
            .is_some_and(|d| d.generation == generation)
        {
            return;
        }
        self.derived = Some(Derived::new(generation, output));
        self.selection.follow(&output.input.tokens.input_ids);
        let layers = output.captures.layers;
        self.layer = self.layer.min(layers.saturating_sub(1));
    }

    /// The tokens of `output` as labels: those derived once per result,
    /// or made now before the first [`Shared::sync`].
    pub fn labels<'a>(&'a self, output: &RunOutput) -> Cow<'a, ReadableTokens> {
        match &self.derived {
            Some(derived) => Cow::Borrowed(&derived.labels),
            None => Cow::Owned(output.input.tokens.readable_tokens()),
        }
    }

    /// The first token of `output` the model generated, while the text
    /// ends with a generation: the first whose text starts in it.
    pub fn first_generated(&self, output: &RunOutput) -> Option<usize> {
        let from = self.generated_from?;
        output
            .input
            .tokens
            .offsets
            .iter()
            .position(|offset| offset.is_some_and(|(start, _)| start >= from))
    }

    /// The model's top 5 next tokens after `position` of the result on
    /// screen, as “text” p, …, once computed (decoders only).
    /// Asks for them the first time (see [`LensSlot::ask`]).
    pub fn predicted_after(&self, position: usize) -> Option<String> {
        let generation = self.derived.as_ref()?.generation;
        let Some(table) = self.next_tokens.of(generation) else {
            self.next_tokens.ask();
            return None;
        };
        let top = table.top(0, position);
        (!top.is_empty()).then(|| top_text(&top))
    }

    /// Whether the next tokens of the result on screen could not be had
    /// (a capture file opened without its model, say).
    fn predictions_failed(&self) -> bool {
        self.derived
            .as_ref()
            .is_some_and(|d| self.next_tokens.error(d.generation).is_some())
    }

    /// [`token_tooltip`], with the model's top 5 next tokens where it has
    /// them.
    pub fn token_tooltip(&self, output: &RunOutput, position: usize) -> String {
        let mut text = token_tooltip(output, position);
        if let Some(next) = self.predicted_after(position) {
            text.push_str(&format!("\nthe model's next token: {next}"));
        } else if output.input.tokens.causal && !self.predictions_failed() {
            text.push_str("\nthe model's next token: computing…");
        }
        text
    }

    /// Applies a click on the token at `position` of `output`.
    pub fn click_token(&mut self, output: &RunOutput, clicked: Option<(usize, bool)>) {
        if let Some((position, add)) = clicked {
            if let Some(&id) = output.input.tokens.input_ids.get(position) {
                self.selection.click(position, id, add);
            }
        }
    }
}

/// The colour that marks picked tokens (and what follows them).
pub fn picked_colour(ui: &egui::Ui) -> Color32 {
    ui.visuals().selection.stroke.color
}

/// `style` with the picked-token outline (in `colour`) when `picked`.
pub fn with_pick(mut style: ChipStyle, picked: bool, colour: Color32) -> ChipStyle {
    if picked {
        style.outline = Some(Stroke::new(2.5, colour));
        style.picked = true;
    }
    style
}

/// "Layer  L0 L1 …": picks the layer a view shows.
pub fn layer_picker(ui: &mut egui::Ui, layer: &mut usize, layers: usize, hint: &str) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Layer").on_hover_text(hint);
        for l in 0..layers {
            ui.selectable_value(layer, l, format!("L{l}"));
        }
    });
}

/// A token's tooltip: its readable text, position and sentence, then the
/// tokenizer's own text and the id.
pub fn token_tooltip(output: &RunOutput, position: usize) -> String {
    let tokens = &output.input.tokens;
    let sentence = match tokens.sentence_ids.get(position).copied().flatten() {
        Some(s) => format!("sentence {}", s + 1),
        None => "no sentence".to_string(),
    };
    format!(
        "“{}” · position {position} · {sentence}\ntoken {}",
        tokens.readable(position),
        tokens.raw_and_id(position)
    )
}
