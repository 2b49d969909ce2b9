//! A home folder holding models where people keep them, for the tests of
//! `headscope models` and the Model window: a Hugging Face cache with
//! all-MiniLM-L6-v2 (its files linked into a snapshot, as the hub does) and
//! a model of a type headscope does not open, an Ollama store with
//! SmolLM2's GGUF file as a blob, and an LM Studio folder with the tiny
//! Qwen2 GGUF fixture.

use std::path::{Path, PathBuf};

/// What [`build`] put where.
pub struct Stores {
    pub hugging_face_snapshot: PathBuf,
    pub unsupported_snapshot: PathBuf,
    pub ollama_blob: PathBuf,
    pub lm_studio_file: PathBuf,
}

fn link(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Builds the three stores under `home` (as `~`).
pub fn build(home: &Path) -> Stores {
    let hub = home.join(".cache/huggingface/hub");
    let repo = hub.join("models--sentence-transformers--all-MiniLM-L6-v2");
    let revision = "8b3219a92973c328a8e22fadcfa821b5dc75636a";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), revision).unwrap();
    let snapshot = repo.join("snapshots").join(revision);
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        link(&super::test_model().join(file), &snapshot.join(file));
    }
    // An older revision refs/main does not name is not listed.
    std::fs::create_dir_all(repo.join("snapshots/0000000000000000000000000000000000000000"))
        .unwrap();

    let other = hub.join(
        "models--state-spaces--mamba-130m-hf/snapshots/1111111111111111111111111111111111111111",
    );
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("config.json"),
        r#"{"model_type": "mamba", "hidden_size": 768}"#,
    )
    .unwrap();
    link(&super::tokenizer_file(), &other.join("tokenizer.json"));
    link(
        &super::test_model().join("model.safetensors"),
        &other.join("model.safetensors"),
    );

    let ollama = home.join(".ollama/models");
    let digest = "3f1a0fa3c2c7ad4d1b1f6e2b3c2d36c2e4b7f1f0e4b9f36d1e0a1c0e5b1c9d2a";
    let blob = ollama.join(format!("blobs/sha256-{digest}"));
    link(&super::smollm2_gguf(), &blob);
    let manifest = ollama.join("manifests/registry.ollama.ai/library/smollm2/135m");
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::write(
        &manifest,
        format!(
            r#"{{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
  "config": {{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:00", "size": 10}},
  "layers": [
    {{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:{digest}", "size": 98362432}},
    {{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:11", "size": 100}}
  ]}}"#
        ),
    )
    .unwrap();

    let lm_studio = home.join(".lmstudio/models/tiny-models/Qwen2-Tiny-GGUF/qwen2-tiny-Q8_0.gguf");
    link(&super::fixture("gguf/qwen2.gguf"), &lm_studio);
    Stores {
        hugging_face_snapshot: snapshot,
        unsupported_snapshot: other,
        ollama_blob: blob,
        lm_studio_file: lm_studio,
    }
}

/// `headscope ARGS` with `home` as the home folder and no other model
/// places set.
pub fn headscope_at_home(home: &Path) -> std::process::Command {
    let mut command = super::headscope_command();
    command.env("HOME", home);
    for var in ["HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"] {
        command.env_remove(var);
    }
    command
}
