//! Start-up: what the command line asks for, what eframe keeps between
//! sessions, and the first model and text.
//!
//! The model is the command line's, else the last one that loaded, else
//! whatever headscope finds. The text is the command line's file, else the
//! autosave, else the text eframe persisted, else the sample.

use super::central::Views;
use super::dialogs::FileDialogs;
use super::layout::Chrome;
use super::model_panel::ModelState;
use super::runs::Runs;
use super::settings::Settings;
use super::text::TextState;
use super::HeadscopeApp;
use crate::model::{find_default_model, ModelSource};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// The text the editor starts with the first time.
pub const SAMPLE_TEXT: &str = include_str!("../../assets/sample.txt");

/// Texts up to this size are also kept in eframe's storage; larger ones
/// only in the autosave file.
const PERSISTED_TEXT_LIMIT: usize = 1024 * 1024;

/// What the command line asked the app to open.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub model: Option<String>,
    pub file: Option<PathBuf>,
}

/// Everything [`HeadscopeApp::new`] needs beyond eframe's context.
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
            autosave_path: Some(super::autosave::default_autosave_path()),
            restore_text: true,
        }
    }
}

/// Opens the window and runs until it is closed.
pub fn run(options: StartOptions) -> anyhow::Result<()> {
    let native = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("headscope")
            .with_app_id("headscope")
            .with_inner_size([1600.0, 1000.0])
            .with_min_inner_size([900.0, 560.0])
            .with_drag_and_drop(true),
        ..Default::default()
    };
    let config = AppConfig::new(options);
    eframe::run_native(
        "headscope",
        native,
        Box::new(move |cc| {
            let app = HeadscopeApp::new(cc, config)?;
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow::anyhow!("cannot open the headscope window: {e}"))
}

/// What eframe stores between sessions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Persisted {
    settings: Settings,
    text: Option<String>,
    file: Option<PathBuf>,
    first_sentence: usize,
    /// The last model that loaded, as the user would type it.
    model: Option<String>,
}

impl Persisted {
    fn load(storage: Option<&dyn eframe::Storage>) -> Self {
        storage
            .and_then(|storage| eframe::get_value(storage, eframe::APP_KEY))
            .unwrap_or_default()
    }

    /// What `app` leaves for the next session.
    pub(super) fn of(app: &HeadscopeApp) -> Self {
        let text = app
            .text
            .document()
            .map(super::document::Document::text)
            .filter(|text| text.len() <= PERSISTED_TEXT_LIMIT)
            .map(str::to_string);
        Persisted {
            settings: app.settings.clone(),
            text,
            file: app.text.file().map(PathBuf::from),
            first_sentence: app.text.first_sentence(),
            model: app.model.remembered().map(str::to_string),
        }
    }

    pub(super) fn store(&self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, eframe::APP_KEY, self);
    }
}

impl HeadscopeApp {
    pub fn new(cc: &eframe::CreationContext<'_>, config: AppConfig) -> anyhow::Result<Self> {
        let ctx = cc.egui_ctx.clone();
        install_fonts(&ctx);
        let persisted = Persisted::load(cc.storage);
        let wake_ctx = ctx.clone();
        let wake: crate::worker::Waker = Arc::new(move || wake_ctx.request_repaint());
        let worker = crate::worker::AnalysisWorker::spawn(wake.clone())
            .map_err(|e| anyhow::anyhow!("cannot start the model thread: {e}"))?;
        let fallback_text = persisted
            .text
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| SAMPLE_TEXT.to_string());
        let mut app = Self {
            settings: persisted.settings.clone(),
            worker,
            wake,
            model: ModelState::new(persisted.model.clone()),
            text: TextState::new(
                fallback_text,
                persisted.file.clone(),
                persisted.first_sentence,
                config.autosave_path.clone(),
            ),
            runs: Runs::default(),
            views: Views::default(),
            dialogs: FileDialogs::default(),
            notice: None,
            chrome: Chrome::from_env(),
        };

        let source = match &config.start.model {
            Some(text) => Some(ModelSource::parse(text)),
            None => app
                .model
                .remembered()
                .and_then(|text| ModelSource::parse(text).ok())
                .or_else(find_default_model)
                .map(Ok),
        };
        match source {
            Some(Ok(source)) => app.load_model(source),
            Some(Err(error)) => app.model.failed_to_start(error.to_string()),
            None => {}
        }

        let autosave = config
            .autosave_path
            .as_ref()
            .filter(|path| config.restore_text && path.is_file());
        let mode = app.settings.input_mode;
        if let Some(file) = &config.start.file {
            app.text.show_fallback(mode);
            app.text.set_first_sentence(0);
            app.open_file(file);
        } else if let Some(path) = autosave {
            app.text.restore_autosave(path.clone(), mode, &app.wake);
        } else {
            if !config.restore_text {
                app.text.forget_persisted();
            }
            app.text.show_fallback(mode);
        }
        app.runs.schedule_now(&ctx);
        Ok(app)
    }
}

/// egui's default fonts, with Hack (already bundled) as a fallback for
/// the proportional text too, so arrows and box-drawing characters in labels
/// and token texts render.
fn install_fonts(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    if let Some(family) = fonts.families.get_mut(&egui::FontFamily::Proportional) {
        if !family.iter().any(|name| name == "Hack") {
            family.push("Hack".to_owned());
        }
    }
    ctx.set_fonts(fonts);
}
