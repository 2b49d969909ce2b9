//! Where people keep models, and the candidates found there: the Hugging
//! Face cache (`HF_HUB_CACHE`, else `HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`: `models--ORG--NAME/snapshots/REV/`, the
//! revision `refs/main` names or else the newest), Ollama's store
//! (`OLLAMA_MODELS`, else `~/.ollama/models`: a manifest per
//! `manifests/REGISTRY/NAMESPACE/NAME/TAG` whose model layer names a blob,
//! a GGUF file), LM Studio's folders (`~/.lmstudio/models`,
//! `~/.cache/lm-studio/models`: `PUBLISHER/REPO/FILE.gguf`). Only folder
//! listings and small JSON files are read here.

use super::Place;
use crate::model::gguf::is_gguf_file;
use std::path::{Path, PathBuf};

/// The folders searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    pub hugging_face: PathBuf,
    pub ollama: PathBuf,
    pub lm_studio: Vec<PathBuf>,
}

impl Roots {
    /// The places as the environment and the home folder give them.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = dirs::home_dir().unwrap_or_default();
        let hugging_face = var("HF_HUB_CACHE").unwrap_or_else(|| {
            var("HF_HOME")
                .unwrap_or_else(|| {
                    var("XDG_CACHE_HOME")
                        .unwrap_or_else(|| home.join(".cache"))
                        .join("huggingface")
                })
                .join("hub")
        });
        Self {
            hugging_face,
            ollama: var("OLLAMA_MODELS").unwrap_or_else(|| home.join(".ollama").join("models")),
            lm_studio: vec![
                home.join(".lmstudio").join("models"),
                home.join(".cache").join("lm-studio").join("models"),
            ],
        }
    }
}

/// A model file or folder found, before it is described.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub place: Place,
    pub path: PathBuf,
}

fn entries(folder: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|read| read.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

/// Every model of the Hugging Face cache: a snapshot with a config.json
/// is a folder model; one without, each of its GGUF files.
pub fn hugging_face(root: &Path) -> Vec<Candidate> {
    let mut found = Vec::new();
    for repo in entries(root) {
        let Some(id) = repo
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("models--"))
            .map(|n| n.replace("--", "/"))
        else {
            continue;
        };
        let Some(snapshot) = snapshot(&repo) else {
            continue;
        };
        if snapshot.join("config.json").is_file() {
            found.push(Candidate {
                name: id,
                place: Place::HuggingFaceCache,
                path: snapshot,
            });
            continue;
        }
        for file in entries(&snapshot).into_iter().filter(|p| is_gguf_file(p)) {
            let file_name = file.file_name().unwrap_or_default().to_string_lossy();
            found.push(Candidate {
                name: format!("{id}/{file_name}"),
                place: Place::HuggingFaceCache,
                path: file,
            });
        }
    }
    found
}

/// The snapshot `refs/main` names, else the most recently written one.
fn snapshot(repo: &Path) -> Option<PathBuf> {
    let snapshots = repo.join("snapshots");
    if let Ok(revision) = std::fs::read_to_string(repo.join("refs").join("main")) {
        let named = snapshots.join(revision.trim());
        if named.is_dir() {
            return Some(named);
        }
    }
    entries(&snapshots)
        .into_iter()
        .filter(|p| p.is_dir())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

/// Every tagged model of an Ollama store, `NAME:TAG` (`NAMESPACE/NAME:TAG`
/// outside the `library` namespace, `REGISTRY/…` outside Ollama's own).
pub fn ollama(root: &Path) -> Vec<Candidate> {
    let mut found = Vec::new();
    for registry in entries(&root.join("manifests")) {
        for namespace in entries(&registry) {
            for model in entries(&namespace) {
                for tag in entries(&model).into_iter().filter(|p| p.is_file()) {
                    let Some(blob) = model_blob(root, &tag) else {
                        continue;
                    };
                    let part = |p: &Path| {
                        p.file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned()
                    };
                    let mut name = format!("{}:{}", part(&model), part(&tag));
                    if part(&namespace) != "library" {
                        name = format!("{}/{name}", part(&namespace));
                    }
                    if part(&registry) != "registry.ollama.ai" {
                        name = format!("{}/{name}", part(&registry));
                    }
                    found.push(Candidate {
                        name,
                        place: Place::Ollama,
                        path: blob,
                    });
                }
            }
        }
    }
    found
}

/// The blob of a manifest's `application/vnd.ollama.image.model` layer.
fn model_blob(root: &Path, manifest: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let digest = manifest["layers"]
        .as_array()?
        .iter()
        .find(|layer| layer["mediaType"] == "application/vnd.ollama.image.model")?["digest"]
        .as_str()?;
    let blob = root.join("blobs").join(digest.replace(':', "-"));
    blob.is_file().then_some(blob)
}

/// Every GGUF file of LM Studio's folders, `PUBLISHER/REPO/FILE.gguf`.
pub fn lm_studio(roots: &[PathBuf]) -> Vec<Candidate> {
    let mut found = Vec::new();
    for root in roots {
        for publisher in entries(root) {
            for repo in entries(&publisher) {
                for file in entries(&repo).into_iter().filter(|p| is_gguf_file(p)) {
                    let name = file
                        .strip_prefix(root)
                        .unwrap_or(&file)
                        .to_string_lossy()
                        .into_owned();
                    found.push(Candidate {
                        name,
                        place: Place::LmStudio,
                        path: file,
                    });
                }
            }
        }
    }
    found
}
