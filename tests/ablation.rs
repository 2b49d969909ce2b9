//! Ablation (ANALYSIS.md §9) against transformers: `headscope ablate`
//! on the cases of `tests/fixtures/ablation.json` (made by
//! `reference/ablation_ref.py`: a forward pre-hook on each output
//! projection replaces the ablated heads' slice) gives the same input ids
//! and, within 1e-4, the same `delta_loss`, `output_change`, loss and
//! change per position, and `head_importance` grids: the real encoder
//! MiniLM and the real decoder SmolLM2 (zero and mean), each head of the
//! Llama, GPT-2, BERT and ModernBERT fixtures alone, and EmbeddingGemma
//! (an encoder on the pre-norm stack: its last hidden states through the
//! final norm). SmolLM2's GGUF file, on
//! candle's ops, gives what its converted folder gives on the tuned CPU
//! pass; bad head lists are refused by name.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;

/// Figures within §9's tolerance (1e-4 absolute).
const TOLERANCE: f64 = 1e-4;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("ablation.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["cases"].as_array().unwrap().clone()
}

/// The model folder a case names: a real model in the cache, or a fixture.
fn model_of(case: &Value) -> PathBuf {
    match case["model"].as_str().unwrap() {
        "all-MiniLM-L6-v2" => test_model(),
        "SmolLM2-135M-Instruct" => smollm2_model(),
        fixture_folder => repo().join(fixture_folder),
    }
}

/// `headscope ablate` on a case's text, one sentence per line, as JSON.
fn ablate(model: &std::path::Path, case: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ablation.json");
    let mut command = headscope_command();
    command
        .arg("ablate")
        .arg("--model")
        .arg(model)
        .arg("--one-sentence-per-line")
        .args(["--mode", case["mode"].as_str().unwrap()])
        .arg("--json")
        .arg(&json);
    match case.get("heads") {
        Some(heads) => {
            let heads: Vec<String> = heads
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| format!("{}.{}", pair[0], pair[1]))
                .collect();
            command.args(["--heads", &heads.join(",")]);
        }
        None => {
            command.arg("--importance");
        }
    }
    command.arg(fixture(case["text"].as_str().unwrap()));
    run_ok(&mut command, case["name"].as_str().unwrap());
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn ablation_matches_transformers() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let ours = ablate(&model_of(&case), &case);
        assert_eq!(ours["input_ids"], case["input_ids"], "{name}: input ids");
        assert_eq!(ours["mode"], case["mode"], "{name}");
        let mut compared = 0;
        for (key, reference) in case.as_object().unwrap() {
            if ["name", "model", "text", "input_ids", "mode"].contains(&key.as_str()) {
                continue;
            }
            let worst =
                assert_json_close(&format!("{name}.{key}"), &ours[key], reference, TOLERANCE);
            eprintln!("{name}.{key}: largest difference {worst:.2e}");
            compared += 1;
        }
        assert!(compared >= 1, "{name}: nothing compared");
        // A decoder's effect on the loss is there; an encoder has none.
        let causal =
            case.get("delta_loss").is_some() || case.get("head_importance_delta_loss").is_some();
        let ours_has_loss = ours
            .get("delta_loss")
            .or(ours.get("head_importance_delta_loss"))
            .is_some_and(|v| !v.is_null());
        assert_eq!(
            ours_has_loss, causal,
            "{name}: a loss where the model has a head"
        );
    }
}

/// The GGUF file runs on candle's ops (its blocks dequantized per
/// product), the converted folder on the tuned CPU pass: the same ablation
/// (resumed at its first ablated layer, 17) moves both alike.
#[test]
fn gguf_ablation_matches_the_folder() {
    let case = cases()
        .into_iter()
        .find(|case| case["name"] == "smollm2")
        .unwrap();
    let folder = ablate(&smollm2_model(), &case);
    let gguf = ablate(&smollm2_gguf(), &case);
    for key in [
        "delta_loss",
        "output_change",
        "token_change",
        "ablated_loss",
    ] {
        assert_json_close(&format!("gguf.{key}"), &gguf[key], &folder[key], TOLERANCE);
    }
    assert!(folder["delta_loss"].as_f64().unwrap() > 0.001, "{folder}");
}

/// Heads outside the model, and lists that name no head, are refused
/// with what is wrong; a stack without an LM head still answers.
#[test]
fn bad_heads_are_refused() {
    let model = test_model();
    let text = fixture("harbour.txt");
    for (heads, expected) in [
        ("6.0", "head 6.0 is not in the model (6 layers × 12 heads"),
        ("0.12", "head 0.12 is not in the model"),
        ("3:4", "`3:4` is not a head: write layer.head"),
        (",", "--heads names no head"),
    ] {
        let output = headscope(&[
            "ablate",
            "--model",
            model.to_str().unwrap(),
            "--heads",
            heads,
            text.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{heads}: {stderr}");
        assert!(stderr.contains(expected), "{heads}: {stderr}");
    }
}
