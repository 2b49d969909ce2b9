//! The models already on this computer ([`places`]: the Hugging Face
//! cache, Ollama's store, LM Studio's folders) and the folders and files
//! the app opened recently, each described from its headers alone — a
//! folder's `config.json` and safetensors headers, a GGUF file's metadata
//! and tensor table — without loading a weight: its family, size
//! (parameters and bytes on disk), precision, and, for one headscope cannot
//! open, the reason. `headscope models` prints the list; the app's Model
//! window shows it and opens one on a click.

pub mod places;

use super::checkpoint;
use super::config::ModelConfig;
use super::gguf::{self, file::GgufFile};
use super::ModelSource;
use places::{Candidate, Roots};
use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::Path;

/// Where a model was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Place {
    Recent,
    HuggingFaceCache,
    Ollama,
    LmStudio,
}

impl Place {
    pub fn label(self) -> &'static str {
        match self {
            Place::Recent => "recent",
            Place::HuggingFaceCache => "Hugging Face cache",
            Place::Ollama => "Ollama",
            Place::LmStudio => "LM Studio",
        }
    }
}

/// A model found on this computer, described from its headers.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundModel {
    /// As its place names it: `ORG/NAME`, `NAME:TAG`, `PUBLISHER/REPO/FILE.gguf`.
    pub name: String,
    pub place: Place,
    /// What opens it.
    pub source: ModelSource,
    /// `model_type` of a folder, architecture of a GGUF file.
    pub family: Option<String>,
    pub parameters: Option<u64>,
    /// Bytes on disk of its weights.
    pub bytes: u64,
    /// The type most of its parameters are stored in: `float32`, `bfloat16`, `Q4_K`, …
    pub precision: Option<String>,
    /// Why headscope cannot open it; `None` when it can.
    pub unsupported: Option<String>,
}

impl FoundModel {
    /// Its size as a line says it: "135M parameters, 98 MB".
    pub fn size_text(&self, bytes: impl Fn(u64) -> String) -> String {
        match self.parameters {
            Some(count) => format!(
                "{} parameters, {}",
                parameters_text(count),
                bytes(self.bytes)
            ),
            None => bytes(self.bytes),
        }
    }
}

/// Three significant digits: 135M, 22.7M, 7.24B, 5.12K.
pub fn parameters_text(count: u64) -> String {
    let c = count as f64;
    let Some((value, unit)) = [(1e9, "B"), (1e6, "M"), (1e3, "K")]
        .into_iter()
        .find(|(scale, _)| c >= *scale)
        .map(|(scale, unit)| (c / scale, unit))
    else {
        return count.to_string();
    };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}{unit}")
}

/// Every model in `roots`, and the `recent` folders and files (as the user
/// typed them; hub ids are left to the cache), recent ones first, each
/// path once.
pub fn scan(roots: &Roots, recent: &[String]) -> Vec<FoundModel> {
    let mut candidates: Vec<Candidate> = recent
        .iter()
        .filter_map(|text| match ModelSource::parse(text).ok()? {
            ModelSource::Folder(path) | ModelSource::Gguf(path) => Some(Candidate {
                name: path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                ),
                place: Place::Recent,
                path,
            }),
            ModelSource::Hub(_) => None,
        })
        .collect();
    candidates.extend(places::hugging_face(&roots.hugging_face));
    candidates.extend(places::ollama(&roots.ollama));
    candidates.extend(places::lm_studio(&roots.lm_studio));
    let mut seen = HashSet::new();
    candidates
        .into_iter()
        .filter(|c| seen.insert(std::fs::canonicalize(&c.path).unwrap_or(c.path.clone())))
        .map(describe)
        .collect()
}

/// A candidate described from its headers.
pub fn describe(candidate: Candidate) -> FoundModel {
    let Candidate { name, place, path } = candidate;
    let found = FoundModel {
        name,
        place,
        source: ModelSource::Folder(path.clone()),
        family: None,
        parameters: None,
        bytes: 0,
        precision: None,
        unsupported: None,
    };
    if path.is_file() {
        describe_gguf(found, &path)
    } else {
        describe_folder(found, &path)
    }
}

/// The error's text without the path it starts with (the list names it).
fn reason(error: &anyhow::Error, path: &Path) -> String {
    let text = format!("{error:#}");
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

fn describe_gguf(mut found: FoundModel, path: &Path) -> FoundModel {
    found.source = ModelSource::Gguf(path.to_path_buf());
    found.bytes = path.metadata().map(|m| m.len()).unwrap_or(0);
    let mut file = match GgufFile::open(path) {
        Ok(file) => file,
        Err(error) => {
            found.unsupported = Some(reason(&error, path));
            return found;
        }
    };
    found.family = file.string("general.architecture").ok().map(str::to_string);
    let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
    for info in file.content.tensor_infos.values() {
        *by_type.entry(info.dtype.name()).or_default() += info.shape.elem_count() as u64;
    }
    found.parameters = Some(by_type.values().sum());
    found.precision = by_type
        .iter()
        .max_by_key(|(_, count)| **count)
        .map(|(name, _)| name.clone());
    // The config as loading builds it: an architecture, rope scaling
    // (YaRN, LongRoPE) or metadata headscope refuses is shown as the reason.
    let check = file
        .check_tensor_types()
        .and_then(|_| gguf::config::encoder_config(&mut file).map(|_| ()))
        .and_then(|_| match file.string("tokenizer.ggml.model")? {
            "gpt2" | "llama" => Ok(()),
            other => anyhow::bail!("tokenizer.ggml.model {other} is not supported"),
        });
    found.unsupported = check.err().map(|e| reason(&e, path));
    found
}

fn describe_folder(mut found: FoundModel, folder: &Path) -> FoundModel {
    let config_text = std::fs::read_to_string(folder.join("config.json"));
    found.family = config_text
        .as_ref()
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|config| config["model_type"].as_str().map(str::to_string));
    let weights = checkpoint::weight_files(folder);
    if let Ok(Some(files)) = &weights {
        let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
        for file in files {
            found.bytes += file.metadata().map(|m| m.len()).unwrap_or(0);
            for (dtype, count) in safetensors_counts(file).unwrap_or_default() {
                *by_type.entry(dtype).or_default() += count;
            }
        }
        if !by_type.is_empty() {
            found.parameters = Some(by_type.values().sum());
            found.precision = by_type
                .iter()
                .max_by_key(|(_, count)| **count)
                .map(|(name, _)| name.clone());
        }
    }
    found.unsupported = match (&config_text, &weights) {
        (Err(_), _) => Some("no config.json".into()),
        (_, Err(error)) => Some(reason(error, folder)),
        (_, Ok(None)) if folder.join("pytorch_model.bin").is_file() => {
            Some("only pytorch_model.bin: headscope reads safetensors weights".into())
        }
        (_, Ok(None)) => Some("no model.safetensors".into()),
        _ if !folder.join("tokenizer.json").is_file() => Some("no tokenizer.json".into()),
        (Ok(text), _) => ModelConfig::from_json(text).err().map(|e| e.to_string()),
    };
    found
}

/// Parameters per stored type in a safetensors file, from its header
/// (integer tensors, such as BERT's `position_ids`, are buffers, not
/// parameters).
fn safetensors_counts(path: &Path) -> std::io::Result<Vec<(String, u64)>> {
    let mut file = std::fs::File::open(path)?;
    let mut prefix = [0u8; 8];
    file.read_exact(&mut prefix)?;
    let length = u64::from_le_bytes(prefix);
    if length > 100 << 20 {
        return Ok(Vec::new());
    }
    let mut header = vec![0u8; length as usize];
    file.read_exact(&mut header)?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).unwrap_or_default();
    Ok(header
        .iter()
        .filter(|(name, _)| *name != "__metadata__")
        .filter_map(|(_, info)| {
            let dtype = info["dtype"]
                .as_str()
                .filter(|d| d.starts_with('F') || d.starts_with("BF"))?;
            let count = info["shape"]
                .as_array()?
                .iter()
                .map(|d| d.as_u64().unwrap_or(0))
                .product();
            Some((precision_name(dtype).to_string(), count))
        })
        .collect())
}

/// safetensors' type names as the list says them.
fn precision_name(dtype: &str) -> &str {
    match dtype {
        "F32" => "float32",
        "F16" => "float16",
        "BF16" => "bfloat16",
        "F64" => "float64",
        other => other,
    }
}
