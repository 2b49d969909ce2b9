//! Start-up: the first model and text, and what is left for the next
//! session.
//!
//! The model is the command line's, else the last one that loaded, else
//! whatever headscope finds. The text is the command line's file, else the
//! autosave, else the text eframe persisted, else the sample.

use super::chrome::Chrome;
use crate::app::corpus::CorpusView;
use crate::app::files::dialogs::FileDialogs;
use crate::app::files::plot_export::PlotSaving;
use crate::app::panels::model::ModelState;
use crate::app::runs::Runs;
use crate::app::startup::{AppConfig, Persisted};
use crate::app::text::document::Document;
use crate::app::text::{TextState, SAMPLE_TEXT};
use crate::app::views::Views;
use crate::app::HeadscopeApp;
use crate::model::{find_default_model, ModelSource};
use std::path::PathBuf;
use std::sync::Arc;

/// Texts up to this size are also kept in eframe's storage; larger ones
/// only in the autosave file.
const PERSISTED_TEXT_LIMIT: usize = 1024 * 1024;

impl HeadscopeApp {
    pub fn new(cc: &eframe::CreationContext<'_>, config: AppConfig) -> anyhow::Result<Self> {
        let ctx = cc.egui_ctx.clone();
        install_fonts(&ctx);
        super::chrome::WidgetTrace::install_from_env(&ctx);
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
            model: ModelState::new(persisted.model.clone(), persisted.recent_models.clone()),
            text: TextState::new(
                fallback_text,
                persisted.file.clone(),
                persisted.first_sentence,
                config.autosave_path.clone(),
            ),
            runs: Runs::default(),
            outline: Default::default(),
            views: Views::default(),
            generate: Default::default(),
            corpus: CorpusView::default(),
            dialogs: FileDialogs::default(),
            plots: PlotSaving::default(),
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

        // A capture brings its own text, which no restored text may replace.
        let capture = (config.start.model.as_deref())
            .is_some_and(|m| crate::capture_file::is_capture_path(std::path::Path::new(m)));
        let autosave = config
            .autosave_path
            .as_ref()
            .filter(|path| config.restore_text && !capture && path.is_file());
        let mode = app.settings.input_mode;
        if let Some(file) = &config.start.file {
            app.text.show_fallback(mode);
            app.text.set_window_start(Default::default());
            app.open_file(file);
        } else if let Some(path) = autosave {
            app.text.restore_autosave(path.clone(), mode, &app.wake);
        } else {
            if !config.restore_text {
                app.text.forget_persisted();
            }
            app.text.show_fallback(mode);
        }
        app.dialogs
            .set_export_folder(persisted.export_folder.clone().filter(|f| f.is_dir()));
        app.runs.schedule_now(&ctx);
        Ok(app)
    }

    /// What the app leaves for the next session.
    fn persisted(&self) -> Persisted {
        let text = self
            .text
            .document()
            .map(Document::text)
            .filter(|text| text.len() <= PERSISTED_TEXT_LIMIT)
            .map(str::to_string);
        Persisted {
            settings: self.settings.clone(),
            text,
            file: self.text.file().map(PathBuf::from),
            first_sentence: self.text.first_sentence(),
            model: self.model.remembered().map(str::to_string),
            recent_models: self.model.recent().to_vec(),
            export_folder: self.dialogs.export_folder().map(PathBuf::from),
        }
    }

    /// Leaves the settings, the text and the model for the next session.
    pub(crate) fn persist(&self, storage: &mut dyn eframe::Storage) {
        self.persisted().store(storage);
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
