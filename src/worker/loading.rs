//! Model loads on the model thread, into one of its two [`Slot`]s: a
//! model folder or GGUF file ([`Model::load`]), a model from the hub, or a
//! capture file in a model's place. Each load's news goes out as
//! [`super::WorkerEvent::Model`] with its slot; a failed load keeps what
//! the slot held.
//!
//! A hub model that the cache lacks downloads on a thread of its own
//! ([`fetch_on_thread`]): hf-hub's download cannot be told to stop (its
//! progress hook has no answer), so when the handle is dropped the model
//! thread stops waiting for it and ends, as an ordinary cancelled load.

use super::{panic_message, ModelEvent, ModelInfo, Slot, WorkerThread};
use crate::capture_file::{is_capture_path, CaptureFile};
use crate::model::{hub, LoadProgress, Model, ModelSource};
use crossbeam_channel::RecvTimeoutError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a slot holds: a model, or a capture file in its place.
#[derive(Clone)]
pub(super) enum Loaded {
    Model(Arc<Model>),
    Capture(Arc<CaptureFile>),
}

/// One of the worker's two models, and what it is as reported when it
/// loaded; empty until a load succeeds.
#[derive(Default)]
pub(super) struct ModelSlot {
    loaded: Option<Loaded>,
    pub(super) info: Option<ModelInfo>,
}

impl ModelSlot {
    pub(super) fn model(&self) -> Option<Arc<Model>> {
        match &self.loaded {
            Some(Loaded::Model(model)) => Some(model.clone()),
            _ => None,
        }
    }

    pub(super) fn capture(&self) -> Option<Arc<CaptureFile>> {
        match &self.loaded {
            Some(Loaded::Capture(capture)) => Some(capture.clone()),
            _ => None,
        }
    }
}

/// Why a load gave no model.
#[derive(Debug)]
enum LoadError {
    /// The handle was dropped while the model downloaded: nobody is left
    /// to tell.
    Cancelled,
    Failed(anyhow::Error),
    /// A bug: the load panicked (the panic's message).
    Crashed(String),
}

impl From<anyhow::Error> for LoadError {
    fn from(error: anyhow::Error) -> Self {
        Self::Failed(error)
    }
}

/// What a download thread sends back: progress, then its end.
enum DownloadNews {
    Progress(LoadProgress),
    Done(Result<PathBuf, LoadError>),
}

impl WorkerThread {
    pub(super) fn load(&mut self, slot: Slot, source: ModelSource) {
        let kept = self.slot(slot).info.clone();
        self.emit_model(
            slot,
            ModelEvent::Loading {
                source: source.clone(),
            },
        );
        if let ModelSource::Folder(path) = &source {
            if is_capture_path(path) {
                return self.load_capture(slot, source.clone(), path.clone(), kept);
            }
        }
        let mut last_report = None::<Instant>;
        let mut report = |progress: LoadProgress| {
            // Downloads report every chunk: pass on a few per second.
            let finished =
                matches!(&progress, LoadProgress::Downloading { done, total, .. } if done >= total);
            let due = last_report.is_none_or(|t| t.elapsed() >= Duration::from_millis(100));
            if due || finished || matches!(progress, LoadProgress::Reading(_)) {
                last_report = Some(Instant::now());
                self.emit_model(slot, ModelEvent::Progress(progress));
            }
        };
        let stopped = || self.shutting_down();
        let result = catch_unwind(AssertUnwindSafe(|| {
            load_model(&source, &mut report, &stopped)
        }))
        .unwrap_or_else(|payload| Err(LoadError::Crashed(panic_message(payload.as_ref()))));
        let message = match result {
            Ok(model) => {
                let info = ModelInfo {
                    source,
                    name: model.name.clone(),
                    family: model.config.family.to_string(),
                    layers: model.layers(),
                    heads: model.heads(),
                    max_tokens: model.max_tokens(),
                    capture_text: None,
                };
                self.install(slot, Loaded::Model(Arc::new(model)), info.clone());
                return self.emit_model(slot, ModelEvent::Ready(info));
            }
            Err(LoadError::Cancelled) => return,
            Err(LoadError::Failed(error)) => load_error_message(&error),
            Err(LoadError::Crashed(panic)) => format!(
                "loading the model crashed (a bug in headscope: {panic}); \
                 the app is still usable, try another model"
            ),
        };
        // A failed load leaves the model in use as it was.
        self.emit_model(
            slot,
            ModelEvent::Failed {
                source,
                message,
                kept,
            },
        );
    }

    /// Reads a capture file into `slot`, in place of its model.
    fn load_capture(
        &mut self,
        slot: Slot,
        source: ModelSource,
        path: PathBuf,
        kept: Option<ModelInfo>,
    ) {
        self.emit_model(
            slot,
            ModelEvent::Progress(LoadProgress::Reading(path.clone())),
        );
        let capture = match CaptureFile::read(&path) {
            Ok(capture) => capture,
            Err(error) => {
                return self.emit_model(
                    slot,
                    ModelEvent::Failed {
                        source,
                        message: error.to_string(),
                        kept,
                    },
                )
            }
        };
        let info = ModelInfo {
            source,
            name: capture.name(),
            family: capture.header.model.kind.clone(),
            layers: capture.captures.layers,
            heads: capture.captures.heads,
            max_tokens: capture.tokens.len(),
            capture_text: Some(capture.header.text.clone()),
        };
        self.install(slot, Loaded::Capture(Arc::new(capture)), info.clone());
        self.emit_model(slot, ModelEvent::Ready(info));
    }

    /// Puts what was loaded in `slot`, replacing the model or capture there.
    fn install(&mut self, slot: Slot, loaded: Loaded, info: ModelInfo) {
        self.slots[slot.index()] = ModelSlot {
            loaded: Some(loaded),
            info: Some(info),
        };
    }
}

/// Loads `source`; a hub model that the cache lacks is downloaded first,
/// on a thread of its own, until `stopped` says so.
fn load_model(
    source: &ModelSource,
    progress: &mut dyn FnMut(LoadProgress),
    stopped: &dyn Fn() -> bool,
) -> Result<Model, LoadError> {
    let ModelSource::Hub(id) = source else {
        return Ok(Model::load(source, progress)?);
    };
    let folder = match hub::cached_folder(id) {
        Some(folder) => folder,
        None => {
            let id = id.clone();
            fetch_on_thread(move |report| hub::fetch(&id, report), progress, stopped)?
        }
    };
    let mut model = Model::load(&ModelSource::Folder(folder), progress)?;
    // Named by its id, as `Model::load` names a model from the hub.
    model.name = id.clone();
    Ok(model)
}

/// Runs `fetch` on a `headscope-download` thread, passing on its progress,
/// and gives the folder it fetched; [`LoadError::Cancelled`] as soon as
/// `stopped` says so, leaving the thread to finish (into the hub's cache,
/// where the next load finds it) or to end with the process.
fn fetch_on_thread<F>(
    fetch: F,
    progress: &mut dyn FnMut(LoadProgress),
    stopped: &dyn Fn() -> bool,
) -> Result<PathBuf, LoadError>
where
    F: FnOnce(&mut dyn FnMut(LoadProgress)) -> anyhow::Result<PathBuf> + Send + 'static,
{
    let (news, receiver) = crossbeam_channel::unbounded();
    let spawned = std::thread::Builder::new()
        .name("headscope-download".into())
        .spawn(move || {
            let fetched = catch_unwind(AssertUnwindSafe(|| {
                fetch(&mut |step| {
                    let _ = news.send(DownloadNews::Progress(step));
                })
            }));
            let done = match fetched {
                Ok(fetched) => fetched.map_err(LoadError::Failed),
                Err(payload) => Err(LoadError::Crashed(panic_message(payload.as_ref()))),
            };
            let _ = news.send(DownloadNews::Done(done));
        });
    if let Err(error) = spawned {
        return Err(anyhow::anyhow!("cannot start the download thread: {error}").into());
    }
    loop {
        if stopped() {
            return Err(LoadError::Cancelled);
        }
        match receiver.recv_timeout(Duration::from_millis(50)) {
            Ok(DownloadNews::Progress(step)) => progress(step),
            Ok(DownloadNews::Done(done)) => return done,
            Err(RecvTimeoutError::Timeout) => {}
            // The thread sends `Done` before it ends, even after a panic.
            Err(RecvTimeoutError::Disconnected) => {
                return Err(LoadError::Crashed("the download thread ended".into()))
            }
        }
    }
}

/// Why a load failed, for the window: the command line's advice (pass a
/// folder with `--model`) is left out, since the window has its own way to
/// choose one.
fn load_error_message(error: &anyhow::Error) -> String {
    match error.downcast_ref::<crate::model::hub::HubUnavailable>() {
        Some(hub) => hub.without_hint(),
        None => format!("{error:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::hub::HubUnavailable;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_hub_failure_is_told_to_the_window_without_the_command_line_advice() {
        let error = anyhow::Error::new(HubUnavailable {
            id: "bert-base-uncased".into(),
            reason: "HF_HUB_OFFLINE is set and it is not in the local cache".into(),
        });
        // The command line keeps its advice...
        assert!(format!("{error:#}").contains("--model /path/to/bert-base-uncased"));
        // ...the window gets the reason alone, and adds its own.
        let message = load_error_message(&error);
        assert_eq!(
            message,
            "cannot get model 'bert-base-uncased' from the Hugging Face hub: \
             HF_HUB_OFFLINE is set and it is not in the local cache"
        );
        // Wrapped in context, it is still found.
        let wrapped = error.context("loading the model");
        assert!(!load_error_message(&wrapped).contains("--model"));
    }

    #[test]
    fn a_download_passes_on_its_progress_and_gives_its_folder() {
        let mut seen = Vec::new();
        let folder = fetch_on_thread(
            |report| {
                report(LoadProgress::Reading("config.json".into()));
                Ok(PathBuf::from("/models/tiny"))
            },
            &mut |step| seen.push(step),
            &|| false,
        );
        assert_eq!(folder.unwrap(), PathBuf::from("/models/tiny"));
        assert_eq!(seen, [LoadProgress::Reading("config.json".into())]);
    }

    #[test]
    fn a_download_that_hangs_is_left_when_the_worker_stops() {
        // A download that ends only once the test is over.
        let (hold, held) = crossbeam_channel::bounded::<()>(0);
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let result = fetch_on_thread(
            move |report| {
                report(LoadProgress::Reading("model.safetensors".into()));
                let _ = held.recv();
                Ok(PathBuf::new())
            },
            &mut |_| stop.store(true, Ordering::SeqCst),
            &|| stop.load(Ordering::SeqCst),
        );
        assert!(matches!(result, Err(LoadError::Cancelled)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(hold);
    }

    #[test]
    fn a_download_that_panics_is_told_as_a_crash() {
        let result = fetch_on_thread(|_| panic!("no bytes"), &mut |_| {}, &|| false);
        assert!(
            matches!(&result, Err(LoadError::Crashed(message)) if message == "no bytes"),
            "{result:?}"
        );
    }
}
