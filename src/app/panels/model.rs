//! The model: the one in use, the load in progress, and the panel to pick
//! another — from the models on this computer ([`super::found_models`]),
//! by folder or GGUF file (native dialog) or by Hugging Face model id — with
//! the families that load.
//!
//! The app says what the worker does. A load replaces the model only once
//! the new one is ready; a load that fails (a hub id offline, a broken
//! folder) leaves the worker on the model it had, and the window keeps
//! naming that model, keeps analysing with it, and shows the error as a
//! notice that says what to do in the window.

use super::found_models::FoundModels;
use crate::app::widgets::busy;
use crate::model::family::Family;
use crate::model::{LoadProgress, ModelSource};
use crate::worker::{ModelEvent, ModelInfo};

/// What to do after a failed load, in the window's own terms.
pub const LOAD_HINT: &str = "To use another model, choose a model folder with config.json, \
    model.safetensors and tokenizer.json in the Model window (File → Choose model…), or enter \
    a Hugging Face model id there.";

/// The latest load asked of the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadState {
    /// None in progress, and the last one (if any) succeeded.
    Idle,
    Loading {
        source: ModelSource,
        progress: Option<LoadProgress>,
    },
    Failed {
        source: Option<ModelSource>,
        message: String,
    },
}

/// What a model event changed, for the app to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChange {
    /// A model is ready: analyse with it.
    Ready,
    /// A load failed while another model stays in use: the notice to show.
    LoadFailed(String),
}

/// What the user asked the model panel for.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelAction {
    PickFolder,
    PickGguf,
    Load(ModelSource),
}

/// The model in use, the latest load, and the panel's own state.
pub struct ModelState {
    /// The model the worker analyses with, as the worker last reported it.
    active: Option<ModelInfo>,
    load: LoadState,
    panel: ModelPanel,
    /// The Model window (File → Choose model…) is open.
    window_open: bool,
    /// The last model that loaded, as the user would type it (persisted).
    remembered: Option<String>,
    /// The models loaded lately, newest first (persisted).
    recent: Vec<String>,
}

/// How many recent models are remembered.
const RECENT_MODELS: usize = 8;

impl ModelState {
    /// The model in use: the panel says when there is none.
    pub fn new(remembered: Option<String>, recent: Vec<String>) -> Self {
        Self {
            active: None,
            load: LoadState::Idle,
            panel: ModelPanel {
                intro: Some(NO_MODEL),
                ..ModelPanel::default()
            },
            window_open: false,
            remembered,
            recent,
        }
    }

    /// A second model (Compare's B), whose panel the view introduces.
    pub fn second() -> Self {
        Self {
            panel: ModelPanel::default(),
            ..Self::new(None, Vec::new())
        }
    }

    /// The model the analyses run on.
    pub fn active(&self) -> Option<&ModelInfo> {
        self.active.as_ref()
    }

    pub fn load_state(&self) -> &LoadState {
        &self.load
    }

    /// The last model that loaded, as the user would type it.
    pub fn remembered(&self) -> Option<&str> {
        self.remembered.as_deref()
    }

    /// The models loaded lately, newest first.
    pub fn recent(&self) -> &[String] {
        &self.recent
    }

    /// `typed` (a model as the user would type it) becomes the newest
    /// recent model: a model loaded elsewhere (Compare's B) joins the list.
    pub fn add_recent(&mut self, typed: String) {
        self.recent.retain(|recent| *recent != typed);
        self.recent.insert(0, typed);
        self.recent.truncate(RECENT_MODELS);
    }

    /// The recent models are `recent` (another panel's list, shared, so
    /// that every model panel offers the same models).
    pub fn share_recent(&mut self, recent: &[String]) {
        if self.recent != recent {
            self.recent = recent.to_vec();
        }
    }

    /// A load of `source` was sent to the worker.
    pub fn loading(&mut self, source: ModelSource) {
        self.load = LoadState::Loading {
            source,
            progress: None,
        };
    }

    /// The model named at start could not even be parsed.
    pub fn failed_to_start(&mut self, message: String) {
        self.load = LoadState::Failed {
            source: None,
            message,
        };
    }

    pub fn open_window(&mut self) {
        self.window_open = true;
    }

    /// Takes a model event from the worker.
    pub fn on_event(&mut self, event: ModelEvent) -> Option<ModelChange> {
        match event {
            ModelEvent::Loading { source } => self.loading(source),
            ModelEvent::Progress(progress) => {
                if let LoadState::Loading { progress: slot, .. } = &mut self.load {
                    *slot = Some(progress);
                }
            }
            ModelEvent::Ready(info) => {
                let typed = info.source.to_string();
                self.add_recent(typed.clone());
                self.remembered = Some(typed);
                self.active = Some(info);
                self.load = LoadState::Idle;
                self.window_open = false;
                return Some(ModelChange::Ready);
            }
            ModelEvent::Failed {
                source,
                message,
                kept,
            } => {
                // The worker's word on what it still uses.
                self.active = kept;
                let notice = self.active.as_ref().map(|kept| {
                    format!(
                        "Model {source} could not be loaded: {message}. Still using {}. {LOAD_HINT}",
                        kept.name
                    )
                });
                self.load = LoadState::Failed {
                    source: Some(source),
                    message,
                };
                if let Some(notice) = notice {
                    self.window_open = true;
                    return Some(ModelChange::LoadFailed(notice));
                }
            }
        }
        None
    }

    /// The panel inside the central area (no model yet) or the Model
    /// window.
    pub fn panel_ui(&mut self, ui: &mut egui::Ui) -> Option<ModelAction> {
        self.panel
            .ui(ui, self.active.as_ref(), &self.load, &self.recent)
    }

    /// The Model window, while it is open and a model is in use (without
    /// one the panel fills the central area).
    pub fn window(&mut self, ctx: &egui::Context) -> Option<ModelAction> {
        if !self.window_open || self.active.is_none() {
            return None;
        }
        let mut open = true;
        let action = egui::Window::new("Model")
            .open(&mut open)
            .collapsible(false)
            .default_width(640.0)
            .show(ctx, |ui| self.panel_ui(ui))
            .and_then(|r| r.inner.flatten());
        self.window_open &= open;
        action
    }
}

/// What the panel says while no model is loaded.
const NO_MODEL: &str = "No model is loaded. Choose a transformer (an encoder or a causal \
    decoder of the families below): a folder with config.json, model.safetensors and \
    tokenizer.json, or a Hugging Face model id.";

/// The model panel's own input state.
#[derive(Debug, Default)]
pub struct ModelPanel {
    /// What the panel says while no model is loaded (none: its place says).
    intro: Option<&'static str>,
    hub_id: String,
    /// Why the typed id could not be used.
    input_error: Option<String>,
    found: FoundModels,
}

impl ModelPanel {
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        active: Option<&ModelInfo>,
        load: &LoadState,
        recent: &[String],
    ) -> Option<ModelAction> {
        let mut action = None;
        match active {
            Some(info) => {
                ui.label(format!(
                    "Using {} ({}): {} layers × {} heads, up to {} tokens.",
                    info.name, info.family, info.layers, info.heads, info.max_tokens
                ));
            }
            None if *load == LoadState::Idle => {
                if let Some(intro) = self.intro {
                    ui.add(egui::Label::new(intro).wrap());
                }
            }
            None => {}
        }
        match load {
            LoadState::Idle => {}
            LoadState::Loading { source, progress } => {
                ui.horizontal(|ui| {
                    busy::spinner(ui);
                    ui.label(format!("Loading model {source}…"));
                });
                progress_ui(ui, progress.as_ref());
            }
            LoadState::Failed { source, message } => {
                let what = source
                    .as_ref()
                    .map_or_else(|| "The model".to_string(), |s| format!("Model {s}"));
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    format!("{what} could not be loaded:"),
                );
                ui.add(egui::Label::new(message.as_str()).wrap());
                ui.weak(
                    "Choose a model folder with config.json, model.safetensors and \
                     tokenizer.json below, or enter a Hugging Face model id.",
                );
            }
        }
        ui.weak(families_line());
        let loading = matches!(load, LoadState::Loading { .. });
        ui.add_space(8.0);
        ui.add_enabled_ui(!loading, |ui| {
            ui.horizontal(|ui| {
                if ui
                    .button("Open model folder…")
                    .on_hover_text(
                        "A folder with config.json, model.safetensors and tokenizer.json",
                    )
                    .clicked()
                {
                    action = Some(ModelAction::PickFolder);
                }
                if ui
                    .button("Open GGUF file…")
                    .on_hover_text(
                        "A llama.cpp GGUF file of any family headscope runs, or a capture \
                         file (.safetensors, docs/CAPTURE.md) of a run made elsewhere",
                    )
                    .clicked()
                {
                    action = Some(ModelAction::PickGguf);
                }
            });
            ui.add_space(4.0);
            let label = ui.label("or a Hugging Face model id (downloaded once, then cached):");
            ui.horizontal(|ui| {
                let edit = ui.add(
                    // A fixed id: an automatic one would change with the
                    // widgets laid out before it, and the field lose its
                    // focus and what is being typed.
                    egui::TextEdit::singleline(&mut self.hub_id)
                        .id_salt("hub model id")
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
        // Below the buttons and the field: the list fills in when the
        // search of this computer ends, and would move them under the
        // pointer (a click on Load became one on "Open GGUF file…").
        ui.add_space(8.0);
        if let Some(source) = self.found.ui(ui, recent, !loading) {
            action = Some(ModelAction::Load(source));
        }
        action
    }
}

/// The download or reading progress of the model being loaded.
fn progress_ui(ui: &mut egui::Ui, progress: Option<&LoadProgress>) {
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
                        crate::app::widgets::format::human_bytes(*done),
                        crate::app::widgets::format::human_bytes(*total)
                    )),
            );
        }
        Some(LoadProgress::Reading(path)) => {
            ui.weak(format!("Reading {}", path.display()));
        }
        None => {}
    }
}

/// The families that load, as the panel lists them.
pub fn families_line() -> String {
    let prose = |families: &[Family]| {
        let names: Vec<&str> = families.iter().map(|f| f.display_name()).collect();
        let (last, rest) = names.split_last().expect("families");
        format!("{} and {last}", rest.join(", "))
    };
    let architectures = crate::model::gguf::config::architectures();
    let (last, rest) = architectures.split_last().expect("GGUF architectures");
    format!(
        "Loads {} encoders and {} decoders (model_type in config.json), and GGUF files of \
         the {} and {last} architectures.",
        prose(&Family::ENCODERS),
        prose(&Family::DECODERS),
        rest.join(", ")
    )
}
