//! Choosing the model: the state of the current load in plain words, the
//! download progress, and two ways to pick another model: a folder (native
//! dialog) or a Hugging Face model id; and which encoder families load.

use crate::model::family::Family;
use crate::model::{LoadProgress, ModelSource};
use crate::worker::ModelInfo;

/// Where the model stands, as the UI sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelStatus {
    /// No model was given and none was found.
    NotChosen,
    Loading {
        source: ModelSource,
        progress: Option<LoadProgress>,
    },
    Ready(ModelInfo),
    Failed {
        source: Option<ModelSource>,
        message: String,
    },
}

impl ModelStatus {
    pub fn ready(&self) -> Option<&ModelInfo> {
        match self {
            ModelStatus::Ready(info) => Some(info),
            _ => None,
        }
    }
}

/// What the user asked the model panel for.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelAction {
    PickFolder,
    Load(ModelSource),
}

/// The model panel's own input state.
#[derive(Debug, Default)]
pub struct ModelPanel {
    hub_id: String,
    /// Why the typed id could not be used.
    input_error: Option<String>,
}

impl ModelPanel {
    pub fn ui(&mut self, ui: &mut egui::Ui, status: &ModelStatus) -> Option<ModelAction> {
        let mut action = None;
        match status {
            ModelStatus::NotChosen => {
                ui.label(
                    "No model is loaded. headscope needs a BERT-like encoder: a folder with \
                     config.json, model.safetensors and tokenizer.json, or a Hugging Face model id.",
                );
            }
            ModelStatus::Loading { source, progress } => {
                ui.horizontal(|ui| {
                    ui.add(egui::Spinner::new());
                    ui.label(format!("Loading model {source}…"));
                });
                match progress {
                    Some(LoadProgress::Downloading { file, done, total }) => {
                        let fraction = if *total > 0 {
                            *done as f32 / *total as f32
                        } else {
                            0.0
                        };
                        ui.add(
                            egui::ProgressBar::new(fraction)
                                .show_percentage()
                                .text(format!(
                                    "downloading {file}: {} of {}",
                                    super::document::human_bytes(*done),
                                    super::document::human_bytes(*total)
                                )),
                        );
                    }
                    Some(LoadProgress::Reading(path)) => {
                        ui.weak(format!("Reading {}", path.display()));
                    }
                    None => {}
                }
            }
            ModelStatus::Ready(info) => {
                ui.label(format!(
                    "Loaded {} ({}): {} layers × {} heads, up to {} tokens.",
                    info.name, info.family, info.layers, info.heads, info.max_tokens
                ));
            }
            ModelStatus::Failed { source, message } => {
                let what = source
                    .as_ref()
                    .map_or_else(|| "The model".to_string(), |s| format!("Model {s}"));
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("{what} could not be loaded:"),
                );
                ui.add(egui::Label::new(message.as_str()).wrap());
            }
        }
        ui.weak(families_line());
        let loading = matches!(status, ModelStatus::Loading { .. });
        ui.add_space(8.0);
        ui.add_enabled_ui(!loading, |ui| {
            if ui
                .button("Open model folder…")
                .on_hover_text("A folder with config.json, model.safetensors and tokenizer.json")
                .clicked()
            {
                action = Some(ModelAction::PickFolder);
            }
            ui.add_space(4.0);
            let label = ui.label("or a Hugging Face model id (downloaded once, then cached):");
            ui.horizontal(|ui| {
                let edit = ui.add(
                    egui::TextEdit::singleline(&mut self.hub_id)
                        .hint_text("bert-base-uncased")
                        .desired_width(220.0),
                );
                let edit = edit.labelled_by(label.id);
                let entered = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.button("Load").clicked() || entered {
                    match ModelSource::parse(&self.hub_id) {
                        Ok(source) => {
                            self.input_error = None;
                            action = Some(ModelAction::Load(source));
                        }
                        Err(error) => self.input_error = Some(error.to_string()),
                    }
                }
            });
            if let Some(error) = &self.input_error {
                ui.colored_label(ui.visuals().error_fg_color, error);
            }
        });
        action
    }
}

/// The families that load, as the panel lists them.
pub fn families_line() -> String {
    let names: Vec<&str> = Family::ALL.iter().map(|f| f.display_name()).collect();
    let (last, rest) = names.split_last().expect("families");
    format!(
        "Loads {} and {last} encoders (model_type in config.json).",
        rest.join(", ")
    )
}
