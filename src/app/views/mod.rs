//! The central area's tabs: the registry of the views, which knows each of
//! them (and is the only module besides the shell that does), hands each
//! its [`ViewContext`], and draws the tab row.
//!
//! "Heads" is the overview grid and one head up close ([`heads`]);
//! "Layers", "Separators", "Token focus" and "Specialisation" are the
//! study's views, a file or folder each; "Compare" is a second model beside
//! the first ([`compare`]); a decoder's "Steps" go through its tokens one
//! at a time, every head's rows of one ([`steps`]), and its "Logit lens"
//! reads its predictions layer by layer ([`logit_lens`]). They all draw
//! the result on screen and follow one [`Shared`] state: the picked
//! tokens, the chosen layer, the category filter, the per-layer token
//! arrays derived once per result.

pub mod compare;
pub mod heads;
pub mod layers;
pub mod logit_lens;
pub mod separators;
pub mod shared;
pub mod specialisation;
pub mod steps;
pub mod token_focus;

pub use crate::app::settings::CentralView;

use crate::app::widgets::busy;
use crate::pipeline::RunOutput;
use compare::CompareView;
use heads::HeadsView;
use layers::LayersView;
use logit_lens::LogitLensView;
use separators::SeparatorsView;
use shared::selection::TokenSelection;
use shared::{picked_colour, Shared, View, ViewAction, ViewContext};
use specialisation::SpecialisationView;
use steps::StepsView;
use token_focus::TokenFocusView;

/// Every view's runtime state (not persisted), and the state they share.
#[derive(Default)]
pub struct Views {
    pub shared: Shared,
    pub heads: HeadsView,
    pub layers: LayersView,
    pub separators: SeparatorsView,
    pub token_focus: TokenFocusView,
    pub specialisation: SpecialisationView,
    pub compare: CompareView,
    pub steps: StepsView,
    pub logit_lens: LogitLensView,
}

/// What the shell hands the views each frame, besides the shared state.
pub struct ViewFrame<'a> {
    pub output: &'a std::sync::Arc<RunOutput>,
    pub generation: u64,
    pub settings: &'a mut crate::app::settings::Settings,
    pub working: bool,
    pub wake: &'a crate::worker::Waker,
    pub model_name: &'a str,
}

impl Views {
    /// Derives the per-layer arrays and moves the selection when a new
    /// result (`generation`) is on screen; nothing otherwise.
    pub fn sync(&mut self, generation: u64, output: &RunOutput) {
        self.shared.sync(generation, output);
    }

    /// Draws the view of tab `id`; returns what it asks of the app.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        id: CentralView,
        frame: ViewFrame<'_>,
    ) -> Option<ViewAction> {
        let Views {
            shared,
            heads,
            layers,
            separators,
            token_focus,
            specialisation,
            compare,
            steps,
            logit_lens,
        } = self;
        let view: &mut dyn View = match id {
            CentralView::Heads => heads,
            CentralView::Layers => layers,
            CentralView::Separators => separators,
            CentralView::TokenFocus => token_focus,
            CentralView::Specialisation => specialisation,
            CentralView::Compare => compare,
            CentralView::Steps => steps,
            CentralView::LogitLens => logit_lens,
        };
        let mut cx = ViewContext {
            output: frame.output,
            generation: frame.generation,
            settings: frame.settings,
            shared,
            working: frame.working,
            wake: frame.wake,
            model_name: frame.model_name,
        };
        // Each tab's own ids: its scroll areas keep their own positions.
        ui.push_id(("tab", id), |ui| view.ui(ui, &mut cx)).inner
    }

    /// The tab row, with the picked tokens on the right. Returns true when
    /// the Heads tab was clicked (so the app can go back to the grid).
    pub fn tab_row(
        &mut self,
        ui: &mut egui::Ui,
        view: &mut CentralView,
        output: &RunOutput,
        working: bool,
    ) -> bool {
        let mut heads_clicked = false;
        // Steps and the logit lens are a decoder's: an encoder has neither.
        let decoder_tabs = [CentralView::Steps, CentralView::LogitLens];
        let tabs = CentralView::ALL
            .into_iter()
            .filter(|tab| !decoder_tabs.contains(tab) || output.input.tokens.causal);
        // Ctrl+1 … Ctrl+8 switch tabs.
        for (index, tab) in tabs.clone().enumerate() {
            let shortcut = egui::KeyboardShortcut::new(egui::Modifiers::COMMAND, TAB_KEYS[index]);
            if ui.input_mut(|i| i.consume_shortcut(&shortcut)) {
                heads_clicked |= tab == CentralView::Heads;
                *view = tab;
            }
        }
        // Wrapped: a row wider than the central area (a decoder's eight
        // tabs beside the outline at 1280 points) would widen it, and every
        // view below would be drawn past its right edge.
        let summary_fitted = ui
            .horizontal_wrapped(|ui| {
                for (index, tab) in tabs.enumerate() {
                    let text = egui::RichText::new(tab.label()).size(15.0);
                    let response = ui
                        .selectable_label(*view == tab, text)
                        .on_hover_text(format!("{} (Ctrl+{})", tab.hint(), index + 1));
                    if response.clicked() {
                        heads_clicked |= tab == CentralView::Heads;
                        *view = tab;
                    }
                }
                if working && *view != CentralView::Heads {
                    busy::spinner(ui);
                    ui.weak("updating…");
                }
                // At the right of the row where it fits; a right-to-left
                // layout narrower than its text would draw over the tabs.
                let fits = ui.available_size_before_wrap().x
                    >= selection_width(ui, &self.shared.selection, output);
                if fits {
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        selection_summary(ui, &mut self.shared.selection, output);
                    });
                }
                fits
            })
            .inner;
        if !summary_fitted {
            ui.horizontal_wrapped(|ui| selection_summary(ui, &mut self.shared.selection, output));
        }
        heads_clicked
    }
}

/// The text of the selection summary: the hint, or the picked tokens.
fn selection_text(selection: &TokenSelection, output: &RunOutput) -> String {
    if selection.is_empty() {
        return SELECTION_HINT.to_string();
    }
    let tokens = &output.input.tokens;
    let mut names: Vec<String> = selection
        .positions()
        .take(6)
        .map(|p| format!("“{}” {p}", tokens.readable(p)))
        .collect();
    if selection.len() > 6 {
        names.push(format!("+{} more", selection.len() - 6));
    }
    format!("Picked: {}", names.join(", "))
}

const SELECTION_HINT: &str = "Click tokens to pick them (shift-click: several)";

/// The width the selection summary takes in `ui`: its text and, with a
/// selection, the clear button.
fn selection_width(ui: &egui::Ui, selection: &TokenSelection, output: &RunOutput) -> f32 {
    let text = selection_text(selection, output);
    let font = egui::TextStyle::Body.resolve(ui.style());
    let text_width = ui
        .fonts_mut(|fonts| fonts.layout_no_wrap(text, font, egui::Color32::WHITE))
        .size()
        .x;
    let button = if selection.is_empty() { 0.0 } else { 160.0 };
    text_width + button + 2.0 * ui.spacing().item_spacing.x
}

/// The keys that, with Ctrl (Cmd), switch to each tab.
const TAB_KEYS: [egui::Key; 8] = [
    egui::Key::Num1,
    egui::Key::Num2,
    egui::Key::Num3,
    egui::Key::Num4,
    egui::Key::Num5,
    egui::Key::Num6,
    egui::Key::Num7,
    egui::Key::Num8,
];

/// "Picked: “cat” 5, “dog” 9" and a button to clear them, or the hint.
fn selection_summary(ui: &mut egui::Ui, selection: &mut TokenSelection, output: &RunOutput) {
    if selection.is_empty() {
        ui.weak(SELECTION_HINT);
        return;
    }
    let text = selection_text(selection, output);
    let clear = |ui: &mut egui::Ui, selection: &mut TokenSelection| {
        if ui
            .small_button("Clear picked tokens")
            .on_hover_text("Unpick every token")
            .clicked()
        {
            selection.clear();
        }
    };
    // In a right-to-left layout the first widget is the rightmost.
    if ui.layout().main_dir() == egui::Direction::RightToLeft {
        clear(ui, selection);
        ui.label(egui::RichText::new(text).color(picked_colour(ui)));
    } else {
        ui.label(egui::RichText::new(text).color(picked_colour(ui)));
        clear(ui, selection);
    }
}
