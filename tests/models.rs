//! `headscope models` lists the models of a Hugging Face cache, an Ollama
//! store and an LM Studio folder built under a temporary home, with
//! family, size and precision, and a model it cannot open with the reason;
//! `headscope analyze --model` opens each it lists as openable.

mod common;

use common::stores::{build, headscope_at_home};
use common::*;

#[test]
fn models_lists_every_store_and_analyze_opens_each() {
    let home = tempfile::tempdir().unwrap();
    let stores = build(home.path());
    let output = run_ok(
        headscope_at_home(home.path()).args(["models", "--json", "-"]),
        "headscope models --json -",
    );
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let list = list.as_array().unwrap();
    let by_name = |name: &str| {
        list.iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {list:#?}"))
    };
    assert_eq!(list.len(), 4, "{list:#?}");

    let minilm = by_name("sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(minilm["where"], "Hugging Face cache");
    assert_eq!(minilm["family"], "bert");
    assert_eq!(minilm["precision"], "float32");
    assert_eq!(minilm["parameters"], 22_713_216);
    assert_eq!(minilm["supported"], true);
    assert_eq!(
        minilm["model"],
        stores.hugging_face_snapshot.display().to_string()
    );

    let mamba = by_name("state-spaces/mamba-130m-hf");
    assert_eq!(mamba["supported"], false);
    let reason = mamba["unsupported_reason"].as_str().unwrap();
    assert!(reason.contains("mamba"), "{reason}");

    let ollama = by_name("smollm2:135m");
    assert_eq!(ollama["where"], "Ollama");
    assert_eq!(ollama["family"], "llama");
    assert_eq!(ollama["precision"], "Q4_1");
    assert_eq!(ollama["bytes"], 98_362_432);
    assert_eq!(ollama["supported"], true);
    assert_eq!(ollama["model"], stores.ollama_blob.display().to_string());

    let lm_studio = by_name("tiny-models/Qwen2-Tiny-GGUF/qwen2-tiny-Q8_0.gguf");
    assert_eq!(lm_studio["where"], "LM Studio");
    assert_eq!(lm_studio["family"], "qwen2");
    assert_eq!(lm_studio["supported"], true);

    // The table says the same, with the path to pass and the reason.
    let table = run_ok(
        headscope_at_home(home.path()).arg("models"),
        "headscope models",
    );
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("4 models found, 1 of them headscope cannot open"),
        "{table}"
    );
    assert!(
        table.contains(&format!("--model {}", stores.ollama_blob.display())),
        "{table}"
    );
    assert!(table.contains("cannot open: "), "{table}");

    for model in list.iter().filter(|m| m["supported"] == true) {
        let path = model["model"].as_str().unwrap();
        let output = run_ok(
            headscope_at_home(home.path())
                .args(["analyze", "--model", path, "--one-sentence-per-line"])
                .arg(fixture("gguf/text.txt")),
            &format!("analyze --model {path}"),
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(stdout.lines().count() > 2, "{path}: {stdout}");
    }
    let refused = headscope_at_home(home.path())
        .args(["analyze", "--model"])
        .arg(&stores.unsupported_snapshot)
        .arg(fixture("gguf/text.txt"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("mamba"));
    let _ = stores.lm_studio_file;
}
