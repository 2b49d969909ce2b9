//! Shared by the integration tests: the real test model (fetched once by
//! `scripts/fetch-test-model.sh` when the cache lacks it), the reference
//! fixtures, and tiny random models written on the spot.
#![allow(dead_code)]

pub mod parity;

use headscope::model::{random, EncoderConfig};
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
pub fn tiny_config() -> EncoderConfig {
    EncoderConfig {
        hidden_size: 8,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        intermediate_size: 16,
        max_position_embeddings: 40,
        ..EncoderConfig::bert_base_uncased()
    }
}

/// Writes a random model of `config` into `dir` with the given name style.
pub fn write_tiny_model(dir: &Path, config: &EncoderConfig, style: random::NameStyle) {
    random::write_random_model(config, &tokenizer_file(), dir, 7, style)
        .expect("write random model");
}

/// The per-family fixtures of `reference/make_family_fixtures.py`: a model
/// folder `families/NAME` and `NAME.txt`, `NAME.json`, `NAME.npz`.
pub const FAMILY_FIXTURES: [&str; 7] = [
    "bert",
    "roberta",
    "xlm-roberta",
    "camembert",
    "distilbert",
    "electra",
    "albert",
];

pub fn family_fixture(name: &str) -> PathBuf {
    fixture("families").join(name)
}

/// The binary under test.
pub fn headscope_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_headscope"))
}
