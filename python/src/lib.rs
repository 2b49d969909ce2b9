//! `headscope._native`: the Python package's bridge to the Rust engine.
//! It stays thin — every computation is the headscope library's own:
//!
//! - [`analyze`] runs a model folder (or hub id) on a text through the
//!   pipeline the CLI uses, with the CLI's own option parsing
//!   ([`headscope::cli::options_from_flags`]); the result ([`Run`]) hands
//!   out the figures as `analyze --json` writes them and the tensors as
//!   little-endian float32 bytes, which the Python side views as numpy
//!   arrays;
//! - [`input_header`] builds the input of a text for any tokenizer exactly
//!   as headscope builds a model's (ANALYSIS.md §1, §8) and returns the
//!   capture header (docs/CAPTURE.md) for it, so that a PyTorch model's
//!   capture reads the same tokens;
//! - [`ablate`] runs `headscope ablate` on a text (ANALYSIS.md §9) with
//!   its own option parsing and returns its JSON;
//! - [`analyze_capture`] gives a capture file's figures;
//! - [`view`] opens the desktop app on a capture file (blocking; the
//!   Python side runs it in a process of its own).
//!
//! Errors become Python exceptions with headscope's one-line message.

use headscope::capture_file::ModelDescription;
use headscope::capture_file::{header_of, write_capture, CaptureFile, CaptureSource};
use headscope::captures::{Captures, HeadId};
use headscope::model::{Model, ModelConfig, ModelSource};
use headscope::pipeline::{self, RunOutput};
use headscope::report::AnalysisReport;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::borrow::Cow;
use std::path::PathBuf;

fn error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// One run of the Rust engine on a text.
#[pyclass(module = "headscope._native", frozen)]
struct Run {
    output: RunOutput,
    model: ModelDescription,
    text: String,
}

#[pymethods]
impl Run {
    /// The figures, exactly as `headscope analyze --json` writes them.
    fn figures_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.output.report()).map_err(error)
    }

    /// (L, H, T, d).
    fn shape(&self) -> (usize, usize, usize, usize) {
        let c = &self.output.captures;
        (c.layers, c.heads, c.tokens, c.head_dim)
    }

    /// The input as a capture header's token table (JSON).
    fn header_json(&self) -> PyResult<String> {
        let header = header_of(&self.source());
        serde_json::to_string(&header).map_err(error)
    }

    /// L×H×T×T attention probabilities, float32 little-endian.
    fn attentions<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let c = &self.output.captures;
        squares(py, c, |id| c.attention(id))
    }

    /// L×H×T×T raw similarity O·Oᵀ, float32 little-endian.
    fn similarity<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let c = &self.output.captures;
        squares(py, c, |id| c.similarity(id))
    }

    /// L×H×T×d head outputs, float32 little-endian.
    fn head_outputs<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let c = &self.output.captures;
        per_head(py, c, c.tokens * c.head_dim, |id| c.head_output(id))
    }

    /// L×H×T value norms ‖v_j W_O^h‖ (ANALYSIS.md §9), float32
    /// little-endian.
    fn value_norms<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        float_bytes(py, &self.output.captures.value_norms)
    }

    /// Stores the run as a capture file (with P).
    fn save_capture(&self, path: PathBuf) -> PyResult<()> {
        write_capture(&path, &self.source()).map_err(error)
    }
}

impl Run {
    fn source(&self) -> CaptureSource<'_> {
        CaptureSource {
            model: self.model.clone(),
            text: &self.text,
            tokens: &self.output.input.tokens,
            captures: &self.output.captures,
            with_attention: true,
            sentences_left_out: self.output.input.sentences_left_out,
            tokens_left_out: self.output.input.tokens_left_out,
        }
    }
}

fn float_bytes<'py>(py: Python<'py>, values: &[f32]) -> Bound<'py, PyBytes> {
    PyBytes::new_with(py, values.len() * 4, |out| {
        for (chunk, v) in out.chunks_exact_mut(4).zip(values) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        Ok(())
    })
    .expect("filling bytes cannot fail")
}

/// Every head's T×T matrix in layer-major order, one head at a time (a
/// decoder's long run recomputes P and S per head).
fn squares<'py, 'c>(
    py: Python<'py>,
    captures: &'c Captures,
    square: impl Fn(HeadId) -> Cow<'c, [f32]>,
) -> Bound<'py, PyBytes> {
    per_head(py, captures, captures.tokens * captures.tokens, square)
}

/// Every head's `values` values in layer-major order, one head at a time
/// (a long run recomputes P and S per head and reads O from disk).
fn per_head<'py, 'c>(
    py: Python<'py>,
    captures: &'c Captures,
    values: usize,
    head: impl Fn(HeadId) -> Cow<'c, [f32]>,
) -> Bound<'py, PyBytes> {
    let size = values * 4;
    let heads: Vec<HeadId> = captures.head_ids().collect();
    PyBytes::new_with(py, heads.len() * size, |out| {
        for (part, &id) in out.chunks_exact_mut(size.max(1)).zip(&heads) {
            for (chunk, v) in part.chunks_exact_mut(4).zip(head(id).iter()) {
                chunk.copy_from_slice(&v.to_le_bytes());
            }
        }
        Ok(())
    })
    .expect("filling bytes cannot fail")
}

/// Runs the model folder or hub id `model` on `text` with `analyze`'s
/// flags (`["--one-sentence-per-line", "--q", "0.02"]`).
#[pyfunction]
fn analyze(py: Python<'_>, model: &str, text: &str, flags: Vec<String>) -> PyResult<Run> {
    let (input, options) = headscope::cli::options_from_flags(&flags)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let text = text.to_string();
    let source = ModelSource::parse(model).map_err(error)?;
    py.detach(move || {
        let loaded = Model::load(&source, &mut |_| {}).map_err(|e| error(format!("{e:#}")))?;
        let output = pipeline::run(&loaded, &text, &input, &options, &|| false).map_err(error)?;
        Ok(Run {
            output,
            model: ModelDescription {
                name: loaded.name.clone(),
                kind: loaded.config.family.model_type().to_string(),
            },
            text,
        })
    })
}

/// `headscope ablate`'s JSON of the model folder, GGUF file or hub id
/// `model` on `text` (`None` with `--probe induction`), with its flags
/// (`["--heads", "3.4,5.1", "--mode", "mean"]`, or `["--importance"]`).
#[pyfunction]
#[pyo3(signature = (model, text, flags))]
fn ablate(
    py: Python<'_>,
    model: &str,
    text: Option<String>,
    flags: Vec<String>,
) -> PyResult<String> {
    let source = ModelSource::parse(model).map_err(error)?;
    py.detach(move || {
        let loaded = Model::load(&source, &mut |_| {}).map_err(|e| error(format!("{e:#}")))?;
        headscope::cli::ablation_json_from_flags(&loaded, text.as_deref(), &flags)
            .map_err(|e| error(format!("{e:#}")))
    })
}

/// The capture header (JSON, docs/CAPTURE.md) of `text` as a model with
/// this `tokenizer.json` reads it: its tokens, cut to `max_tokens`, built
/// as headscope builds an encoder's input or, with `causal`, a decoder's;
/// with `bidirectional` too, a decoder's input whose attention goes both
/// ways (EmbeddingGemma: separators at sentence ends, the header not causal).
/// Layers, heads and the model are left for the caller to fill in.
#[pyfunction]
#[pyo3(signature = (tokenizer_json, text, flags, causal, pad_id=None, max_tokens=None, bidirectional=false))]
fn input_header(
    tokenizer_json: &str,
    text: &str,
    flags: Vec<String>,
    causal: bool,
    pad_id: Option<u32>,
    max_tokens: Option<usize>,
    bidirectional: bool,
) -> PyResult<String> {
    let (input, _) = headscope::cli::options_from_flags(&flags)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    // The tokenizer is read by the model loader's own code, which wants a
    // file and a config: a config of the right kind that takes any id.
    let mut config = ModelConfig::like(if causal {
        "smollm2-135m"
    } else {
        "all-minilm-l6-v2"
    })
    .expect("a known shape");
    config.vocab_size = usize::MAX;
    config.pad_token_id = pad_id;
    let dir = std::env::temp_dir().join(format!(
        "headscope-tokenizer-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).map_err(error)?;
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, tokenizer_json).map_err(error)?;
    let loaded = headscope::model::tokenizer::load_tokenizer(&path, &config);
    let _ = std::fs::remove_dir_all(&dir);
    let (tokenizer, mut specials) = loaded.map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    specials.bidirectional_decoder = causal && bidirectional;
    let limit = max_tokens
        .into_iter()
        .chain(input.max_tokens)
        .min()
        .unwrap_or(usize::MAX);
    let built = headscope::input::build_input(&tokenizer, text, input.mode, limit, 0, &specials)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let captures = Captures::default();
    let header = header_of(&CaptureSource {
        model: ModelDescription {
            name: String::new(),
            kind: String::new(),
        },
        text,
        tokens: &built.tokens,
        captures: &captures,
        with_attention: false,
        sentences_left_out: built.sentences_left_out,
        tokens_left_out: built.tokens_left_out,
    });
    serde_json::to_string(&header).map_err(error)
}

/// The figures of a capture file (JSON, as `analyze --capture --json`
/// writes them) under `analyze`'s flags.
#[pyfunction]
fn analyze_capture(py: Python<'_>, path: PathBuf, flags: Vec<String>) -> PyResult<String> {
    let (_, options) = headscope::cli::options_from_flags(&flags)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.detach(move || {
        let capture = CaptureFile::read(&path).map_err(|e| PyValueError::new_err(e.to_string()))?;
        // A capture records no sentence cut into pieces: the report
        // `analyze --capture --json` writes, without copying the captures.
        let report = AnalysisReport {
            analysis: &capture.analyze(&options),
            sentences_split: &[],
        };
        serde_json::to_string_pretty(&report).map_err(error)
    })
}

/// Opens the desktop app on a capture file (or a text file) and returns
/// when its window closes.
#[pyfunction]
fn view(py: Python<'_>, path: PathBuf) -> PyResult<()> {
    py.detach(move || {
        headscope::cli::open_app(None, Some(path)).map_err(|e| error(format!("{e:#}")))
    })
}

/// The version of the headscope library inside.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(ablate, m)?)?;
    m.add_function(wrap_pyfunction!(input_header, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_capture, m)?)?;
    m.add_function(wrap_pyfunction!(view, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
