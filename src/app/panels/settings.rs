//! The analysis settings panel at the bottom of the text panel: every
//! option of ANALYSIS.md, applied live to the persisted [`Settings`].

use crate::analysis::SimilarityVariant;
use crate::app::settings::{SelectionRule, Settings, MEMORY_LIMIT_LABEL, TOKEN_LIMIT_LABEL};
use crate::input::InputMode;

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
