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
//! pass; bad head lists are refused by name. `headscope corpus
//! --importance` gives each head's mean over the corpus's windows of the
//! grids `ablate --importance` gives each, whole or merged from shards.

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

/// `--importance` over several texts: each head's mean over them, with its
/// sample std, 95% interval and n, equals the mean of the texts' own
/// grids (run alone); `--csv` has a row per head and figure.
#[test]
fn importance_over_several_texts_is_their_mean_with_an_interval() {
    let model = repo().join("tests/fixtures/families/llama");
    let texts = [fixture("families/llama.txt"), fixture("families/gpt2.txt")];
    let dir = tempfile::tempdir().unwrap();
    let run = |files: &[&std::path::Path], name: &str| -> Value {
        let json = dir.path().join(format!("{name}.json"));
        let csv = dir.path().join(format!("{name}.csv"));
        let mut command = headscope_command();
        command
            .args(["ablate", "--importance", "--model"])
            .arg(&model)
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .args(files);
        let output = run_ok(&mut command, name);
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        value["csv"] = Value::String(std::fs::read_to_string(csv).unwrap());
        value["stdout"] = Value::String(String::from_utf8_lossy(&output.stdout).into_owned());
        value
    };
    let alone: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(k, text)| run(&[text.as_path()], &format!("alone{k}")))
        .collect();
    let both = run(&[texts[0].as_path(), texts[1].as_path()], "both");
    assert_eq!(both["files"].as_array().unwrap().len(), 2);
    assert!(
        both["stdout"]
            .as_str()
            .unwrap()
            .contains("mean over 2 texts"),
        "{}",
        both["stdout"]
    );
    let mut compared = 0;
    for key in [
        "head_importance_delta_loss",
        "head_importance_output_change",
    ] {
        let grid = both[key].as_array().unwrap();
        for (l, row) in grid.iter().enumerate() {
            for (h, summary) in row.as_array().unwrap().iter().enumerate() {
                let values: Vec<f64> = alone
                    .iter()
                    .map(|a| a[key][l][h].as_f64().unwrap())
                    .collect();
                let mean = (values[0] + values[1]) / 2.0;
                let got = summary["mean"].as_f64().unwrap();
                assert!((got - mean).abs() < 1e-12, "{key} {l}.{h}: {got} != {mean}");
                assert_eq!(summary["n"], 2);
                let std = summary["std"].as_f64().unwrap();
                assert!((std - (values[0] - values[1]).abs() / 2f64.sqrt()).abs() < 1e-12);
                let [lo, hi] = [0, 1].map(|i| summary["ci95"][i].as_f64().unwrap());
                assert!(lo <= mean && mean <= hi, "{key} {l}.{h}: {lo} {mean} {hi}");
                // Each text's own report is kept, as run alone.
                for (k, text_alone) in alone.iter().enumerate() {
                    assert_eq!(both["texts"][k][key][l][h], text_alone[key][l][h]);
                }
                compared += 1;
            }
        }
    }
    // A decoder: both figures, for each of its 2 × 4 heads.
    assert_eq!(compared, 2 * 2 * 4, "{both}");
    let csv = both["csv"].as_str().unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("layer,head,figure,mean,std,ci95_lo,ci95_hi,n")
    );
    assert_eq!(lines.clone().count(), compared);
    assert!(lines.all(|row| row.ends_with(",2")), "{csv}");
    // One text: n = 1, no interval.
    let one = alone[0]["csv"].as_str().unwrap();
    assert!(
        one.lines().skip(1).all(|row| row.ends_with(",,,1")),
        "{one}"
    );

    // Several texts need --importance.
    let output = headscope(&[
        "ablate",
        "--model",
        model.to_str().unwrap(),
        "--heads",
        "0.1",
        texts[0].to_str().unwrap(),
        texts[1].to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("several texts need --importance"));
}

/// `headscope corpus --importance` on a folder of two texts (one window
/// each): each head's importance is the mean of the two texts' own grids
/// (`ablate --importance`, run alone), in the JSON and the CSV; two shards
/// merge into the same report; a corpus of captures has no model to ablate.
#[test]
fn corpus_importance_is_the_mean_of_each_windows_grid() {
    let model = repo().join("tests/fixtures/families/llama");
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    for name in ["llama", "gpt2"] {
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        std::fs::write(corpus.join(format!("{name}.txt")), text).unwrap();
    }
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
    };
    let model_arg = model.to_str().unwrap();
    let corpus_arg = corpus.to_str().unwrap();
    let mut command = headscope_command();
    command.args(["corpus", "--importance", "--model", model_arg, "--json"]);
    command.args([path("whole.json").as_str(), "--csv", &path("whole.csv")]);
    let output = run_ok(command.arg(corpus_arg), "corpus --importance");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("importance: 8/8 heads"), "{stderr}");
    let whole = read("whole.json");
    assert_eq!(whole["importance"], "zero");
    assert_eq!(whole["windows"], 2);

    // The texts alone, in the corpus's order (by path).
    let alone: Vec<Value> = ["gpt2", "llama"]
        .iter()
        .map(|name| {
            let json = path(&format!("{name}-alone.json"));
            let mut command = headscope_command();
            command.args([
                "ablate",
                "--importance",
                "--model",
                model_arg,
                "--json",
                &json,
            ]);
            run_ok(command.arg(corpus.join(format!("{name}.txt"))), name);
            read(&format!("{name}-alone.json"))
        })
        .collect();
    let csv = std::fs::read_to_string(path("whole.csv")).unwrap();
    let mut compared = 0;
    for (figure, key) in [
        ("importance_delta_loss", "head_importance_delta_loss"),
        ("importance_output_change", "head_importance_output_change"),
    ] {
        for (l, layer) in whole["layers"].as_array().unwrap().iter().enumerate() {
            for (h, head) in layer["heads"].as_array().unwrap().iter().enumerate() {
                let values: Vec<f64> = alone
                    .iter()
                    .map(|a| a[key][l][h].as_f64().unwrap())
                    .collect();
                let mean = (values[0] + values[1]) / 2.0;
                let got = head[figure]["mean"].as_f64().unwrap();
                assert!(
                    (got - mean).abs() < 1e-12,
                    "{figure} {l}.{h}: {got} != {mean}"
                );
                assert_eq!(head[figure]["n"], 2);
                let row = format!("{l},{h},{figure},{got},");
                assert!(csv.contains(&row), "{row} not in the CSV");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 2 * 2 * 4);

    // Two shards, merged: the same figures.
    for k in 0..2 {
        let mut command = headscope_command();
        command.args(["corpus", "--importance", "--model", model_arg]);
        command.args([
            "--shard",
            &format!("{k}/2"),
            "--part",
            &path(&format!("part{k}.json")),
        ]);
        run_ok(command.arg(corpus_arg), "a shard");
    }
    let mut command = headscope_command();
    command.args([
        "merge",
        &path("part0.json"),
        &path("part1.json"),
        "--json",
        &path("merged.json"),
    ]);
    run_ok(&mut command, "merge");
    let merged = read("merged.json");
    assert_eq!(merged["importance"], "zero");
    for (a, b) in whole["layers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(merged["layers"].as_array().unwrap())
    {
        for (x, y) in a["heads"]
            .as_array()
            .unwrap()
            .iter()
            .zip(b["heads"].as_array().unwrap())
        {
            for figure in ["importance_delta_loss", "importance_output_change"] {
                let (x, y) = (
                    x[figure]["mean"].as_f64().unwrap(),
                    y[figure]["mean"].as_f64().unwrap(),
                );
                assert!((x - y).abs() < 1e-12, "{figure}: {x} vs {y}");
            }
        }
    }

    // Without --importance the figures are there, never defined.
    let mut command = headscope_command();
    command.args([
        "corpus",
        "--model",
        model_arg,
        "--json",
        &path("plain.json"),
    ]);
    run_ok(command.arg(corpus_arg), "corpus");
    let plain = read("plain.json");
    assert_eq!(plain["importance"], Value::Null);
    assert_eq!(
        plain["layers"][0]["heads"][0]["importance_output_change"]["n"],
        0
    );

    // A corpus of captures has no model to ablate.
    let output = headscope(&[
        "corpus",
        "--importance",
        "--json",
        &path("c.json"),
        corpus_arg,
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--importance ablates heads"), "{stderr}");
}
