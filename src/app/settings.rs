//! The user's choices that survive a restart, and the panel that edits them.
//!
//! [`Settings`] holds every option of ANALYSIS.md (input mode, selection
//! rule with its q / z / k, similarity variant, local window w) and the view
//! choices (matrix, colour map, scale). It is plain serde data stored through
//! eframe's storage, kept apart from the runtime state in [`super::HeadscopeApp`].
//! The parameters of the rules not in use are kept too, so switching rules
//! back and forth does not lose a value the user typed.

use super::views::CentralView;
use crate::analysis::{AnalysisOptions, Selection, SimilarityVariant};
use crate::colormap::ColorMap;
use crate::input::InputMode;
use serde::{Deserialize, Serialize};

/// Which of the selection rules of ANALYSIS.md §3 is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SelectionRule {
    #[default]
    TopFraction,
    AboveMean,
    TopKPerRow,
}

/// Which per-head matrix the heatmaps show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum MatrixKind {
    /// The context similarity S (after the chosen variant).
    #[default]
    Similarity,
    /// The attention probabilities P.
    Attention,
}

impl MatrixKind {
    pub fn label(self) -> &'static str {
        match self {
            MatrixKind::Similarity => "Similarity",
            MatrixKind::Attention => "Attention",
        }
    }
}

/// The accessible names of the window limits in the settings panel.
pub const TOKEN_LIMIT_LABEL: &str = "Token limit";
pub const MEMORY_LIMIT_LABEL: &str = "Memory limit";

/// Everything the user set, persisted between sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub input_mode: InputMode,
    pub rule: SelectionRule,
    /// q of the top-fraction rule, as a fraction (0.01 = 1 %).
    pub q: f64,
    /// z of the above-mean rule.
    pub z: f64,
    /// k of the top-k-per-row rule.
    pub k: usize,
    pub similarity: SimilarityVariant,
    /// w of the local fraction.
    pub local_window: usize,
    pub matrix: MatrixKind,
    pub colormap: ColorMap,
    /// One colour range for all thumbnails instead of one per head.
    pub shared_scale: bool,
    /// Outline the selected pairs on the large heatmap.
    pub mark_pairs: bool,
    /// Show the text panel on the left.
    pub show_text_panel: bool,
    /// The tab the central area shows.
    pub view: CentralView,
    /// Draw each head's separator attention on its grid thumbnail.
    pub separator_overlay: bool,
    /// At most this many tokens per window; 0: the model's own limit.
    pub max_tokens: usize,
    /// At most this much memory (MB) for one window's attentions and
    /// similarities; a longer text is cut to fit.
    pub capture_memory_mb: u64,
}

impl Default for Settings {
    fn default() -> Self {
        let analysis = AnalysisOptions::default();
        Self {
            input_mode: InputMode::default(),
            rule: SelectionRule::TopFraction,
            q: Selection::DEFAULT_Q,
            z: Selection::DEFAULT_Z,
            k: Selection::DEFAULT_K,
            similarity: analysis.similarity,
            local_window: analysis.local_window,
            matrix: MatrixKind::default(),
            colormap: ColorMap::default(),
            shared_scale: false,
            mark_pairs: true,
            show_text_panel: true,
            view: CentralView::default(),
            separator_overlay: false,
            max_tokens: 0,
            capture_memory_mb: crate::pipeline::DEFAULT_CAPTURE_MEMORY_MB,
        }
    }
}

impl Settings {
    /// The analysis options these settings stand for.
    pub fn analysis_options(&self) -> AnalysisOptions {
        let selection = match self.rule {
            SelectionRule::TopFraction => Selection::TopFraction { q: self.q },
            SelectionRule::AboveMean => Selection::AboveMean { z: self.z },
            SelectionRule::TopKPerRow => Selection::TopKPerRow { k: self.k },
        };
        AnalysisOptions {
            selection,
            similarity: self.similarity,
            local_window: self.local_window,
        }
    }

    /// The window's limits these settings stand for, on top of the mode
    /// and the first sentence.
    pub fn input_options(&self, first_sentence: usize) -> crate::pipeline::InputOptions {
        crate::pipeline::InputOptions {
            mode: self.input_mode,
            first_sentence,
            max_tokens: (self.max_tokens > 0).then_some(self.max_tokens),
            capture_memory_mb: Some(self.capture_memory_mb.max(1)),
        }
    }

    /// How the corpus window runs its documents: as one text is run.
    pub fn corpus_options(&self) -> crate::corpus::CorpusOptions {
        let input = self.input_options(0);
        crate::corpus::CorpusOptions {
            mode: input.mode,
            analysis: self.analysis_options(),
            limits: crate::corpus::WindowLimits {
                max_tokens: input.max_tokens,
                capture_memory_mb: input.capture_memory_mb,
            },
        }
    }

    /// Puts the analysis options back to ANALYSIS.md's defaults (view
    /// choices stay).
    pub fn reset_analysis(&mut self) {
        let defaults = Settings::default();
        self.input_mode = defaults.input_mode;
        self.max_tokens = defaults.max_tokens;
        self.capture_memory_mb = defaults.capture_memory_mb;
        self.rule = defaults.rule;
        self.q = defaults.q;
        self.z = defaults.z;
        self.k = defaults.k;
        self.similarity = defaults.similarity;
        self.local_window = defaults.local_window;
    }
}

/// What changed in the settings panel this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsChange {
    /// The text must be split again (input mode).
    pub input: bool,
    /// The analysis must run again.
    pub analysis: bool,
}

/// The analysis settings panel: every option of ANALYSIS.md, applied live.
pub fn settings_ui(ui: &mut egui::Ui, settings: &mut Settings) -> SettingsChange {
    let before = settings.clone();
    ui.label(egui::RichText::new("Input").strong());
    for (mode, label, hint) in [
        (
            InputMode::Document,
            "Document",
            "Split into sentences (Unicode rules); [CLS] s1 [SEP] s2 [SEP] …",
        ),
        (
            InputMode::OneSentencePerLine,
            "One sentence per line",
            "Each non-empty line is one sentence",
        ),
        (
            InputMode::Plain,
            "Plain",
            "The tokenizer's own encoding of the whole text: one [CLS] … [SEP]",
        ),
    ] {
        ui.radio_value(&mut settings.input_mode, mode, label)
            .on_hover_text(hint);
    }
    egui::Grid::new("input limits")
        .num_columns(2)
        .spacing([8.0, 4.0])
        .show(ui, |ui| {
            let label = ui.label(TOKEN_LIMIT_LABEL);
            ui.add(
                egui::DragValue::new(&mut settings.max_tokens)
                    .range(0..=1_000_000)
                    .speed(4.0)
                    .custom_formatter(|n, _| {
                        if n == 0.0 {
                            "the model's".into()
                        } else {
                            format!("{n}")
                        }
                    })
                    .custom_parser(|text| match text.trim() {
                        "" | "0" | "the model's" => Some(0.0),
                        text => text.parse::<f64>().ok(),
                    }),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "At most this many tokens per window (0: the model's own limit); \
                 a longer text is cut at the last whole sentence that fits",
            );
            ui.end_row();
            let label = ui.label(MEMORY_LIMIT_LABEL);
            ui.add(
                egui::DragValue::new(&mut settings.capture_memory_mb)
                    .range(1..=1_048_576)
                    .speed(16.0)
                    .suffix(" MB"),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "The attentions and similarities of every head take L·H·T²·8 bytes. \
                 When they need more, a decoder keeps only what recomputes them \
                 (each head's queries, keys and outputs) and recomputes the head a \
                 view shows; a window that needs more even so is cut to fit",
            );
            ui.end_row();
        });

    ui.add_space(6.0);
    ui.label(egui::RichText::new("Pair selection").strong());
    egui::Grid::new("selection rule")
        .num_columns(2)
        .spacing([8.0, 4.0])
        .show(ui, |ui| {
            ui.radio_value(
                &mut settings.rule,
                SelectionRule::TopFraction,
                "Top fraction",
            )
            .on_hover_text("The top q of the candidate pairs by similarity");
            let mut percent = settings.q * 100.0;
            let response = ui
                .add_enabled(
                    settings.rule == SelectionRule::TopFraction,
                    egui::DragValue::new(&mut percent)
                        .range(0.01..=100.0)
                        .speed(0.05)
                        .max_decimals(2)
                        .prefix("q = ")
                        .suffix(" %"),
                )
                .on_hover_text("q: share of candidate pairs selected, k = max(1, ⌊q·N⌋)");
            if response.changed() {
                settings.q = percent / 100.0;
            }
            ui.end_row();

            ui.radio_value(&mut settings.rule, SelectionRule::AboveMean, "Above mean")
                .on_hover_text("Every pair with S > mean + z·std over the candidates");
            ui.add_enabled(
                settings.rule == SelectionRule::AboveMean,
                egui::DragValue::new(&mut settings.z)
                    .range(-10.0..=20.0)
                    .speed(0.05)
                    .max_decimals(2)
                    .prefix("z = "),
            )
            .on_hover_text("z: standard deviations above the mean");
            ui.end_row();

            ui.radio_value(
                &mut settings.rule,
                SelectionRule::TopKPerRow,
                "Top k per row",
            )
            .on_hover_text("Each content token's k most similar partners");
            ui.add_enabled(
                settings.rule == SelectionRule::TopKPerRow,
                egui::DragValue::new(&mut settings.k)
                    .range(1..=64)
                    .speed(0.1)
                    .prefix("k = "),
            )
            .on_hover_text("k: partners per token");
            ui.end_row();
        });

    ui.add_space(6.0);
    ui.horizontal(|ui| {
        let label = ui.label("Similarity");
        egui::ComboBox::from_id_salt("similarity variant")
            .selected_text(settings.similarity.label())
            .show_ui(ui, |ui| {
                for variant in SimilarityVariant::ALL {
                    ui.selectable_value(&mut settings.similarity, variant, variant.label());
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text("The similarity that ranks the pairs and that the heatmaps show");
    });
    ui.horizontal(|ui| {
        let label = ui.label("Local window");
        ui.add(
            egui::DragValue::new(&mut settings.local_window)
                .range(0..=128)
                .speed(0.1)
                .prefix("w = "),
        )
        .labelled_by(label.id)
        .on_hover_text("A same-sentence pair with j − i ≤ w counts as local");
    });
    ui.add_space(4.0);
    if ui
        .button("Reset to defaults")
        .on_hover_text("The defaults of ANALYSIS.md: document mode, top 1 %, raw similarity, w = 4")
        .clicked()
    {
        settings.reset_analysis();
    }

    let input = settings.input_options(0) != before.input_options(0);
    SettingsChange {
        input,
        analysis: settings.analysis_options() != before.analysis_options() || input,
    }
}
