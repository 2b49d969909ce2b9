//! What the command line asks the app for, and what eframe keeps between
//! sessions (the app starts from them in [`super::shell::startup`]).

use crate::app::settings::Settings;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the command line asked the app to open.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub model: Option<String>,
    pub file: Option<PathBuf>,
}

/// Everything [`HeadscopeApp::new`](super::HeadscopeApp::new) needs beyond
/// eframe's context.
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub start: StartOptions,
    /// Where the text is autosaved; `None` neither saves nor restores it.
    pub autosave_path: Option<PathBuf>,
    /// Restore the autosaved (or persisted) text when no file is given.
    pub restore_text: bool,
}

impl AppConfig {
    /// The configuration of the real app: autosave in the cache folder.
    pub fn new(start: StartOptions) -> Self {
        Self {
            start,
            autosave_path: Some(crate::app::text::autosave::default_autosave_path()),
            restore_text: true,
        }
    }
}

/// What eframe stores between sessions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Persisted {
    pub settings: Settings,
    pub text: Option<String>,
    pub file: Option<PathBuf>,
    pub first_sentence: usize,
    /// The last model that loaded, as the user would type it.
    pub model: Option<String>,
    /// The models loaded lately, newest first.
    pub recent_models: Vec<String>,
    /// The folder the last export (File → Export, or a figure's Save)
    /// went to, where the next one's dialog starts.
    pub export_folder: Option<PathBuf>,
}

impl Persisted {
    pub fn load(storage: Option<&dyn eframe::Storage>) -> Self {
        storage
            .and_then(|storage| eframe::get_value(storage, eframe::APP_KEY))
            .unwrap_or_default()
    }

    pub fn store(&self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, self);
    }
}
