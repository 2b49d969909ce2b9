//! Value-weighted attention (ANALYSIS.md §9) against transformers:
//! `headscope analyze` on the cases of `tests/fixtures/value_weighting.json`
//! (made by `reference/value_weighting_ref.py`: hooks read each head's v
//! and the output projection's W_O) gives the same input ids, each head's
//! value norms ‖v_j W_O^h‖ in its NPZ within 1e-4 of the largest (§7), and
//! every `_vw` figure within §7's tolerance (1e-3; the segmentation
//! figures up to the reference's knife-edge tokens on N′): the real
//! encoder MiniLM, the real decoder SmolLM2 (grouped-query attention) and
//! the Llama, GPT-2 and BERT fixtures. The plain P figures are those of
//! the parity tests; value weighting leaves them as they were.

mod common;

use common::*;
use headscope::npz::read_npz;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// §7: figures within 1e-3.
const FIGURE_TOLERANCE: f64 = 1e-3;
/// §7: tensors within 1e-4 of their largest magnitude.
const TENSOR_TOLERANCE: f32 = 1e-4;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("value_weighting.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["cases"].as_array().unwrap().clone()
}

/// The model folder a case names: a real model in the cache, or a fixture.
fn model_of(case: &Value) -> PathBuf {
    let model = case["model"].as_str().unwrap();
    match model.rsplit('/').next().unwrap() {
        "all-MiniLM-L6-v2" => test_model(),
        "SmolLM2-135M-Instruct" => smollm2_model(),
        _ => repo().join(model),
    }
}

/// `headscope analyze` on a case's text, one sentence per line: its
/// figures and its value norms (with their shape).
fn analyze(model: &Path, case: &Value) -> (Value, Vec<usize>, Vec<f32>) {
    let dir = tempfile::tempdir().unwrap();
    let (json, npz) = (dir.path().join("out.json"), dir.path().join("out.npz"));
    let mut command = headscope_command();
    command
        .arg("analyze")
        .arg("--model")
        .arg(model)
        .arg("--one-sentence-per-line")
        .arg("--json")
        .arg(&json)
        .arg("--npz")
        .arg(&npz)
        .arg(fixture(case["text"].as_str().unwrap()));
    run_ok(&mut command, case["name"].as_str().unwrap());
    let figures = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arrays = read_npz(&npz).unwrap();
    let (shape, norms) = f32s(&arrays["value_norms"]);
    (figures, shape.to_vec(), norms.to_vec())
}

#[test]
fn value_weighting_matches_transformers() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let (ours, shape, norms) = analyze(&model_of(&case), &case);
        assert_eq!(ours["input_ids"], case["input_ids"], "{name}: input ids");
        let reference: Vec<f32> = flatten(&case["value_norms"]);
        let (layers, heads) = (ours["layers"].as_array().unwrap().len(), shape[1]);
        assert_eq!(shape, [layers, heads, reference.len() / (layers * heads)]);
        let worst = assert_close(
            &format!("{name}: value norms"),
            &norms,
            &reference,
            TENSOR_TOLERANCE,
        );

        let content = ours["content_tokens"].as_f64().unwrap();
        let mut largest = 0.0f64;
        let mut compared = 0;
        let their_layers = case["layers"].as_array().unwrap();
        for (l, (mine, theirs)) in ours["layers"]
            .as_array()
            .unwrap()
            .iter()
            .zip(their_layers)
            .enumerate()
        {
            let edge = theirs["segmentation_edge_tokens_vw"].as_f64().unwrap() / content;
            for (key, value) in theirs.as_object().unwrap() {
                let allowance = match key.as_str() {
                    "heads" | "segmentation_edge_tokens_vw" => continue,
                    "segmentation_accuracy_vw" | "segmentation_undecided_vw" => edge,
                    _ => 0.0,
                };
                let path = format!("{name} L{l} {key}");
                let mine = mine.get(key).unwrap_or_else(|| panic!("{path} missing"));
                largest = largest.max(assert_json_close(
                    &path,
                    mine,
                    value,
                    FIGURE_TOLERANCE + allowance,
                ));
            }
            compared += 1;
            let their_heads = theirs["heads"].as_array().unwrap();
            for (h, (mine, theirs)) in mine["heads"]
                .as_array()
                .unwrap()
                .iter()
                .zip(their_heads)
                .enumerate()
            {
                let path = format!("{name} L{l} H{h}");
                largest = largest.max(assert_json_close(&path, mine, theirs, FIGURE_TOLERANCE));
                compared += 1;
            }
        }
        // Every head and layer of the reference, each with its `_vw` figures.
        assert_eq!(compared, layers * (heads + 1), "{name}");
        eprintln!("{name}: value norms within {worst:.1e} of the largest, `_vw` figures within {largest:.1e}");
    }
}

/// SmolLM2's Q4_1 GGUF file, on candle's ops (its output projection's
/// blocks dequantized for the Gram matrices), gives the value norms and
/// `_vw` figures of its converted folder on the tuned CPU pass.
#[test]
fn gguf_value_weighting_matches_the_folder() {
    let case = cases()
        .into_iter()
        .find(|case| case["name"] == "smollm2")
        .unwrap();
    let (folder, folder_shape, folder_norms) = analyze(&smollm2_model(), &case);
    let (gguf, shape, norms) = analyze(&smollm2_gguf(), &case);
    assert_eq!(shape, folder_shape);
    assert_close("gguf value norms", &norms, &folder_norms, TENSOR_TOLERANCE);
    for (l, (mine, theirs)) in gguf["layers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(folder["layers"].as_array().unwrap())
        .enumerate()
    {
        for key in ["sink_attention_vw", "separator_attention_vw"] {
            assert_json_close(
                &format!("gguf L{l} {key}"),
                &mine[key],
                &theirs[key],
                FIGURE_TOLERANCE,
            );
        }
        for (h, (mine, theirs)) in mine["heads"]
            .as_array()
            .unwrap()
            .iter()
            .zip(theirs["heads"].as_array().unwrap())
            .enumerate()
        {
            for key in ["previous_token_score_vw", "self_score_vw", "role_vw"] {
                assert_json_close(
                    &format!("gguf L{l} H{h} {key}"),
                    &mine[key],
                    &theirs[key],
                    FIGURE_TOLERANCE,
                );
            }
        }
    }
}

/// A nested JSON list of numbers, flattened in order.
fn flatten(value: &Value) -> Vec<f32> {
    match value {
        Value::Array(items) => items.iter().flat_map(flatten).collect(),
        number => vec![number.as_f64().unwrap() as f32],
    }
}
