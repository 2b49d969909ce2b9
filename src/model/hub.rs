//! Models by Hugging Face id, through hf-hub and its standard cache
//! (`~/.cache/huggingface/hub`, or `$HF_HOME`).
//!
//! A model already in the cache is used without touching the network.
//! Otherwise the three files are downloaded with progress reported to the
//! caller; when the hub cannot be reached (offline, firewalled) the error
//! names the id and says how to pass a local folder instead.

use super::LoadProgress;
use hf_hub::api::Progress;
use std::path::PathBuf;

/// The hub could not give model `id`. Its message ends with how to pass a
/// local folder on the command line; [`HubUnavailable::without_hint`] is
/// the message without that advice, for the app's window.
#[derive(Debug)]
pub struct HubUnavailable {
    pub id: String,
    pub reason: String,
}

impl std::error::Error for HubUnavailable {}

impl std::fmt::Display for HubUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}. Without the hub, pass a local folder that holds config.json, \
             model.safetensors and tokenizer.json: --model /path/to/{}",
            self.without_hint(),
            self.id
        )
    }
}

impl HubUnavailable {
    pub fn without_hint(&self) -> String {
        format!(
            "cannot get model '{}' from the Hugging Face hub: {}",
            self.id, self.reason
        )
    }
}

/// The files a model folder needs, in download order (small ones first so
/// that a wrong id fails before the large download starts).
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The folder of a complete cached copy of `id`, if there is one.
pub fn cached_folder(id: &str) -> Option<PathBuf> {
    let cache = hf_hub::Cache::from_env();
    let repo = cache.model(id.to_string());
    let paths: Vec<PathBuf> = FILES.iter().filter_map(|f| repo.get(f)).collect();
    if paths.len() != FILES.len() {
        return None;
    }
    let folder = paths[0].parent()?.to_path_buf();
    paths
        .iter()
        .all(|p| p.parent() == Some(folder.as_path()))
        .then_some(folder)
}

/// Forwards hf-hub's byte counts to headscope's progress callback.
struct Reporter<'a> {
    file: String,
    done: u64,
    total: u64,
    progress: &'a mut dyn FnMut(LoadProgress),
}

impl Progress for Reporter<'_> {
    fn init(&mut self, size: usize, filename: &str) {
        self.file = filename.to_string();
        self.total = size as u64;
        self.done = 0;
        self.report();
    }

    fn update(&mut self, size: usize) {
        self.done += size as u64;
        self.report();
    }

    fn finish(&mut self) {
        self.done = self.total;
        self.report();
    }
}

impl Reporter<'_> {
    fn report(&mut self) {
        (self.progress)(LoadProgress::Downloading {
            file: self.file.clone(),
            done: self.done,
            total: self.total,
        });
    }
}

/// The local folder of `id`, downloading what the cache lacks.
pub fn fetch(id: &str, progress: &mut dyn FnMut(LoadProgress)) -> anyhow::Result<PathBuf> {
    if let Some(folder) = cached_folder(id) {
        return Ok(folder);
    }
    let offline_hint = |reason: String| {
        anyhow::Error::new(HubUnavailable {
            id: id.to_string(),
            reason,
        })
    };
    if std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1" || v == "true") {
        return Err(offline_hint(
            "HF_HUB_OFFLINE is set and it is not in the local cache".into(),
        ));
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(false)
        .with_retries(0)
        .build()
        .map_err(|e| offline_hint(e.to_string()))?;
    let repo = api.model(id.to_string());
    let mut folder = None;
    for file in FILES {
        let reporter = Reporter {
            file: file.to_string(),
            done: 0,
            total: 0,
            progress: &mut *progress,
        };
        let path = repo
            .download_with_progress(file, reporter)
            .map_err(|e| offline_hint(format!("{file}: {e}")))?;
        folder = path.parent().map(|p| p.to_path_buf());
    }
    folder.ok_or_else(|| offline_hint("the download gave no folder".into()))
}
