//! The central area's tabs and the runtime state the study's views share.
//!
//! "Heads" is the overview grid and the head detail (owned by the app);
//! "Layers", "Separators", "Token focus" and "Specialisation" are the
//! study's views, one file each. They all draw the result on screen and
//! follow one [`TokenSelection`]; the Heads grid follows it too (heads
//! whose focus token is picked are highlighted), as it follows the
//! specialisation table's category filter and can show each head's
//! separator attention. "Compare" (a second model beside the first,
//! [`super::compare_view`]) is drawn by the app, as it talks to the worker.
//!
//! [`ViewsState::sync`] runs every frame but only does work when a new
//! result arrives: it derives the per-layer token arrays once
//! ([`Derived`]) and moves the selection onto the new tokens.

use super::derived::Derived;
use super::overview::{category_style, GridMarks};
use super::selection::TokenSelection;
use super::settings::Settings;
use super::specialisation_view::SpecialisationState;
use super::token_text::ChipStyle;
use crate::analysis::Category;
use crate::captures::HeadId;
use crate::pipeline::RunOutput;
use egui::{Color32, Stroke};
use serde::{Deserialize, Serialize};

/// What the central area shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum CentralView {
    /// Every head's heatmap, or one head up close.
    #[default]
    Heads,
    /// The inter-layer comparison.
    Layers,
    /// Attention to the separators and the segmentation it implies.
    Separators,
    /// Each head's similarity row for picked tokens, and the focus tokens.
    TokenFocus,
    /// The table of every head's figures.
    Specialisation,
    /// A second model on the same text, and how its heads compare.
    Compare,
}

impl CentralView {
    pub const ALL: [CentralView; 6] = [
        CentralView::Heads,
        CentralView::Layers,
        CentralView::Separators,
        CentralView::TokenFocus,
        CentralView::Specialisation,
        CentralView::Compare,
    ];

    /// The tab's title (also its accessible name).
    pub fn label(self) -> &'static str {
        match self {
            CentralView::Heads => "Heads",
            CentralView::Layers => "Layers",
            CentralView::Separators => "Separators",
            CentralView::TokenFocus => "Token focus",
            CentralView::Specialisation => "Specialisation",
            CentralView::Compare => "Compare",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            CentralView::Heads => "Every head's heatmap; click one to open it",
            CentralView::Layers => {
                "How the strongly similar pairs change with depth: distances, fractions, \
                 layer-to-layer correlation"
            }
            CentralView::Separators => {
                "Attention to [SEP] per head and per token, and the sentences it recovers"
            }
            CentralView::TokenFocus => {
                "Pick tokens in the text and see each head's similarity row for them"
            }
            CentralView::Specialisation => {
                "Every head's figures and attention statistics, sortable and filterable"
            }
            CentralView::Compare => {
                "A second model on the same text: per-layer curves, heads side by side, \
                 heads matched by CKA"
            }
        }
    }
}

/// What a view asks the app to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewAction {
    /// Open the head's detail (Heads tab).
    OpenHead(HeadId),
    /// Show the Heads grid with only this layer.
    ShowLayer(usize),
    /// Show the Heads grid with the separator attention overlay on.
    ShowSeparatorOverlay,
    /// Save the figure of this name as a PNG (see [`super::plot_export`]).
    SavePlot(String),
}

/// The runtime state of the study's views (not persisted).
#[derive(Default)]
pub struct ViewsState {
    /// The picked tokens; every view follows them.
    pub selection: TokenSelection,
    /// The layer the Separators and Token focus views show.
    pub layer: usize,
    /// The specialisation table's filter, also highlighted in the grid.
    pub category: Option<Category>,
    /// The Heads grid shows only this layer.
    pub grid_layer: Option<usize>,
    pub specialisation: SpecialisationState,
    pub(super) derived: Option<Derived>,
    /// (position, layer) of the token focus lines already scrolled to
    /// their token once (after that the user scrolls).
    pub(super) centred: Vec<(usize, usize)>,
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

impl ViewsState {
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
        self.grid_layer = self.grid_layer.filter(|&l| l < layers);
    }

    /// Applies a click on the token at `position` of `output`.
    pub fn click_token(&mut self, output: &RunOutput, clicked: Option<(usize, bool)>) {
        if let Some((position, add)) = clicked {
            if let Some(&id) = output.input.tokens.input_ids.get(position) {
                self.selection.click(position, id, add);
            }
        }
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
        // Ctrl+1 … Ctrl+5 switch tabs.
        for (index, tab) in CentralView::ALL.into_iter().enumerate() {
            let shortcut = egui::KeyboardShortcut::new(egui::Modifiers::COMMAND, TAB_KEYS[index]);
            if ui.input_mut(|i| i.consume_shortcut(&shortcut)) {
                heads_clicked |= tab == CentralView::Heads;
                *view = tab;
            }
        }
        ui.horizontal(|ui| {
            for (index, tab) in CentralView::ALL.into_iter().enumerate() {
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
                ui.add(egui::Spinner::new());
                ui.weak("updating…");
            }
            self.selection_summary(ui, output);
        });
        heads_clicked
    }

    /// "Picked: “cat” 5, “dog” 9 ✕" at the right of the tab row.
    fn selection_summary(&mut self, ui: &mut egui::Ui, output: &RunOutput) {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if self.selection.is_empty() {
                ui.weak("Click tokens to pick them (shift-click: several)");
                return;
            }
            if ui
                .small_button("Clear picked tokens")
                .on_hover_text("Unpick every token")
                .clicked()
            {
                self.selection.clear();
                return;
            }
            let texts = &output.input.tokens.token_texts;
            let mut names: Vec<String> = self
                .selection
                .positions()
                .take(6)
                .map(|p| format!("“{}” {p}", texts.get(p).map_or("?", String::as_str)))
                .collect();
            if self.selection.len() > 6 {
                names.push(format!("+{} more", self.selection.len() - 6));
            }
            ui.label(
                egui::RichText::new(format!("Picked: {}", names.join(", ")))
                    .color(picked_colour(ui)),
            );
        });
    }

    /// The extra controls above the Heads grid.
    pub fn grid_controls(&mut self, ui: &mut egui::Ui, settings: &mut Settings) {
        ui.horizontal(|ui| {
            let label = ui.label("Highlight");
            let current = match self.category {
                Some(c) => format!("{c} heads"),
                None => "no category".to_string(),
            };
            egui::ComboBox::from_id_salt("highlight category")
                .selected_text(current)
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.category, None, "no category");
                    for c in Category::ALL {
                        let (_, colour) = category_style(Some(c));
                        ui.selectable_value(
                            &mut self.category,
                            Some(c),
                            egui::RichText::new(format!("{c} heads")).color(colour),
                        );
                    }
                })
                .response
                .labelled_by(label.id)
                .on_hover_text(
                    "Outline the heads of a category (the Specialisation table's filter)",
                );
            ui.checkbox(&mut settings.separator_overlay, "Separator attention")
                .on_hover_text(
                    "Show each head's separator attention on its thumbnail (bar: 0 to 1)",
                );
            if let Some(layer) = self.grid_layer {
                ui.separator();
                ui.label(format!("Showing layer {layer} only"));
                if ui.button("Show all layers").clicked() {
                    self.grid_layer = None;
                }
            }
            if !self.selection.is_empty() {
                ui.separator();
                ui.label(
                    egui::RichText::new("outlined: heads whose focus token is picked")
                        .color(HIGHLIGHT),
                );
            }
        });
    }

    /// What the grid draws over its thumbnails.
    pub fn grid_marks(&self, output: &RunOutput, settings: &Settings) -> GridMarks {
        let analysis = &output.analysis;
        let ids = output.captures.head_ids();
        let texts = &output.input.tokens;
        let mut highlights = Vec::new();
        if !self.selection.is_empty() || self.category.is_some() {
            highlights = ids
                .map(|id| {
                    let f = analysis.head(id)?;
                    let mut why = Vec::new();
                    if let Some(token) = f.focus_token_id.filter(|&t| self.selection.contains_id(t))
                    {
                        let text = texts.text_of(token).unwrap_or("?");
                        why.push(format!("its focus token “{text}” is picked"));
                    }
                    if self.category.is_some() && f.category == self.category {
                        why.push(format!("category {}", category_style(f.category).0));
                    }
                    (!why.is_empty()).then(|| why.join("; "))
                })
                .collect();
        }
        let separator_attention = settings.separator_overlay.then(|| {
            output
                .captures
                .head_ids()
                .map(|id| analysis.head(id).and_then(|f| f.separator_attention))
                .collect()
        });
        GridMarks {
            highlights,
            separator_attention,
            only_layer: self.grid_layer,
        }
    }

    /// One of the study's views (not Heads); returns what it asks for.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        view: CentralView,
        output: &RunOutput,
        generation: u64,
        settings: &Settings,
    ) -> Option<ViewAction> {
        match view {
            // (The Compare tab needs the worker: the app draws it.)
            CentralView::Heads | CentralView::Compare => None,
            CentralView::Layers => super::layers_view::ui(ui, output),
            CentralView::Separators => super::separators_view::ui(ui, output, self, settings),
            CentralView::TokenFocus => super::token_focus_view::ui(ui, output, self, settings),
            CentralView::Specialisation => super::specialisation_view::ui(
                ui,
                output,
                generation,
                &mut self.specialisation,
                &mut self.category,
                &self.selection,
            ),
        }
    }
}

/// The keys that, with Ctrl (Cmd), switch to each tab.
const TAB_KEYS: [egui::Key; 6] = [
    egui::Key::Num1,
    egui::Key::Num2,
    egui::Key::Num3,
    egui::Key::Num4,
    egui::Key::Num5,
    egui::Key::Num6,
];

/// The colour of highlighted heads in the grid.
pub const HIGHLIGHT: Color32 = Color32::from_rgb(255, 200, 40);

/// "Layer  L0 L1 …": picks the layer a view shows.
pub fn layer_picker(ui: &mut egui::Ui, layer: &mut usize, layers: usize, hint: &str) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Layer").on_hover_text(hint);
        for l in 0..layers {
            ui.selectable_value(layer, l, format!("L{l}"));
        }
    });
}

/// A token's tooltip: its text, position, id and sentence.
pub fn token_tooltip(output: &RunOutput, position: usize) -> String {
    let tokens = &output.input.tokens;
    let text = tokens.token_texts.get(position).map_or("?", String::as_str);
    let id = tokens.input_ids.get(position).copied().unwrap_or_default();
    let sentence = match tokens.sentence_ids.get(position).copied().flatten() {
        Some(s) => format!("sentence {}", s + 1),
        None => "no sentence".to_string(),
    };
    format!("“{text}” · position {position} · id {id} · {sentence}")
}
