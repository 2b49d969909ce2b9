//! The corpus statistics and Compare over capture files (docs/CAPTURE.md),
//! with captures made by the binary (`headscope analyze --save-capture`):
//! `headscope corpus` on a folder of captures gives what the corpus of the
//! same texts gives with the live model (counts equal, figures within
//! ANALYSIS.md §7's 1e-3); a capture without P leaves the figures made from
//! P `null`; a folder mixing two models is refused naming both;
//! `headscope compare` with a capture for A, for B or for both gives what
//! the live model compared with itself gives.
//!
//! Needs the models of `scripts/fetch-test-model.sh` and (for the mixed
//! folder) `scripts/fetch-bge-model.sh`.

mod common;

use common::*;
use headscope::corpus::{self, CorpusOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Three short texts of two to three sentences.
const TEXTS: [&str; 3] = [
    "The lighthouse keeper climbed the stairs before dawn. A storm had passed over the \
     harbour during the night.",
    "Fishing boats rocked gently against the wooden pier. She wrote the weather in a small \
     leather notebook. Gulls circled above the nets.",
    "The village baker opened his shop at six o'clock. Children ran along the beach looking \
     for shells.",
];

/// Writes the texts into `dir/texts` and their captures, made by the
/// binary with `model`, into `dir/captures`; returns both folders.
fn texts_and_captures(dir: &Path, model: &Path) -> (PathBuf, PathBuf) {
    let (texts, captures) = (dir.join("texts"), dir.join("captures"));
    std::fs::create_dir_all(&texts).unwrap();
    std::fs::create_dir_all(&captures).unwrap();
    for (i, text) in TEXTS.iter().enumerate() {
        let file = texts.join(format!("text{i}.txt"));
        std::fs::write(&file, text).unwrap();
        save_capture(
            model,
            &file,
            &captures.join(format!("text{i}.safetensors")),
            &[],
        );
    }
    (texts, captures)
}

/// `headscope analyze --model MODEL [FLAGS] --save-capture CAPTURE FILE`.
fn save_capture(model: &Path, file: &Path, capture: &Path, flags: &[&str]) {
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(model)
            .args(flags)
            .arg("--save-capture")
            .arg(capture)
            .arg(file),
        "analyze --save-capture",
    );
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `headscope corpus --json OUT PATHS…` without a model; its report.
fn capture_corpus(dir: &Path, paths: &[&Path]) -> Value {
    let out = dir.join("corpus.json");
    run_ok(
        headscope_command()
            .args(["corpus", "--json"])
            .arg(&out)
            .args(paths),
        "corpus of captures",
    );
    read_json(&out)
}

#[test]
fn the_corpus_of_captures_equals_the_corpus_of_their_texts() {
    let dir = tempfile::tempdir().unwrap();
    let (texts, captures) = texts_and_captures(dir.path(), &test_model());
    let ours = capture_corpus(dir.path(), &[&captures]);

    let live = corpus::run(
        loaded_test_model(),
        &[texts],
        &CorpusOptions::default(),
        &mut |_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    let live = serde_json::to_value(&live).unwrap();
    assert_eq!(ours["model"], "all-MiniLM-L6-v2 (captures)");
    for key in [
        "files",
        "windows",
        "tokens",
        "content_tokens",
        "sentences",
        "partial",
    ] {
        assert_eq!(ours[key], live[key], "{key}");
    }
    assert_eq!(ours["windows"], 3);
    assert_eq!(ours["skipped"], Value::Array(vec![]));
    assert_eq!(ours["warnings"], Value::Array(vec![]));
    // Every summary (mean, std, interval, n), category count and focus
    // token of every layer and head, within ANALYSIS.md §7's tolerance.
    for key in [
        "tokens_per_window",
        "baseline_same_sentence_fraction",
        "layers",
    ] {
        assert_json_close(key, &ours[key], &live[key], 1e-3);
    }
    let documents = ours["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 3);
    for (document, live) in documents.iter().zip(live["documents"].as_array().unwrap()) {
        for key in ["sentences", "windows", "tokens", "complete"] {
            assert_eq!(document[key], live[key], "{key} of {document}");
        }
    }

    // A list of captures gives the same report as their folder.
    let files: Vec<PathBuf> = (0..3)
        .map(|i| captures.join(format!("text{i}.safetensors")))
        .collect();
    let listed = capture_corpus(
        dir.path(),
        &files.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    );
    assert_eq!(listed["layers"], ours["layers"]);
}

#[test]
fn captures_without_attention_give_null_for_the_figures_made_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let captures = dir.path().join("captures");
    std::fs::create_dir_all(&captures).unwrap();
    let model = loaded_test_model();
    for (i, text) in TEXTS.iter().enumerate() {
        let output = headscope::pipeline::run(
            model,
            text,
            &Default::default(),
            &Default::default(),
            &|| false,
        )
        .unwrap();
        save_test_capture(
            &captures.join(format!("{i}.safetensors")),
            text,
            &output,
            false,
        );
    }
    let report = capture_corpus(dir.path(), &[&captures]);
    assert_eq!(report["windows"], 3);
    let layer = &report["layers"][0];
    for figure in [
        "separator_attention",
        "sink_attention",
        "segmentation_accuracy",
    ] {
        assert!(
            layer[figure]["mean"].is_null(),
            "{figure}: {}",
            layer[figure]
        );
        assert_eq!(layer[figure]["n"], 0, "{figure}");
    }
    assert!(layer["heads"][0]["separator_attention"]["mean"].is_null());
    // What O alone gives is there.
    assert_eq!(layer["mean_distance"]["n"], 3);
    assert!(layer["heads"][0]["mean_distance"]["mean"].is_number());
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 3);
    assert!(warnings[0]["warning"]
        .as_str()
        .unwrap()
        .contains("no attention P"));
}

#[test]
fn a_folder_mixing_two_models_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("text.txt");
    std::fs::write(&text, TEXTS[0]).unwrap();
    let captures = dir.path().join("captures");
    std::fs::create_dir_all(&captures).unwrap();
    let (minilm, bge) = (
        captures.join("a.safetensors"),
        captures.join("b.safetensors"),
    );
    save_capture(&test_model(), &text, &minilm, &[]);
    save_capture(&bge_model(), &text, &bge, &[]);
    let output = headscope_command()
        .args(["corpus", "--json"])
        .arg(dir.path().join("out.json"))
        .arg(&captures)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for needle in [
        "different models",
        "all-MiniLM-L6-v2",
        "bge-small-en-v1.5",
        "a.safetensors",
        "b.safetensors",
    ] {
        assert!(stderr.contains(needle), "{needle} in: {stderr}");
    }
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!dir.path().join("out.json").exists());

    // Neither a folder without captures nor a capture with --model.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = headscope(&["corpus", "--json", "-", empty.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("no capture file found"),
        "{stderr}"
    );
    assert!(stderr.contains("--model"), "{stderr}");
    let output = headscope(&[
        "corpus",
        "--model",
        &model_arg(),
        "--json",
        "-",
        minilm.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("takes no --model"),
        "{stderr}"
    );
}

/// `headscope compare --model A --model B --one-sentence-per-line --json
/// OUT [FILE]`; its JSON without the two names.
fn compare(dir: &Path, a: &Path, b: &Path, file: Option<&Path>) -> Value {
    let out = dir.join("compare.json");
    run_ok(
        headscope_command()
            .arg("compare")
            .arg("--model")
            .arg(a)
            .arg("--model")
            .arg(b)
            .args(["--one-sentence-per-line", "--json"])
            .arg(&out)
            .args(file),
        "compare",
    );
    let mut json = read_json(&out);
    for side in ["model_a", "model_b"] {
        json[side].as_object_mut().unwrap().remove("name");
    }
    json
}

#[test]
fn compare_with_captures_equals_the_live_model_compared_with_itself() {
    let dir = tempfile::tempdir().unwrap();
    let harbour = fixture("harbour.txt");
    let capture = dir.path().join("harbour.safetensors");
    save_capture(
        &test_model(),
        &harbour,
        &capture,
        &["--one-sentence-per-line"],
    );
    let model = test_model();
    let live = compare(dir.path(), &model, &model, Some(&harbour));
    for (what, a, b, file) in [
        (
            "capture A, live B",
            &capture,
            &model,
            Some(harbour.as_path()),
        ),
        (
            "live A, capture B",
            &model,
            &capture,
            Some(harbour.as_path()),
        ),
        ("two captures, no FILE", &capture, &capture, None),
    ] {
        let ours = compare(dir.path(), a, b, file);
        assert_json_close(what, &ours, &live, 1e-3);
    }

    // A capture of another text than FILE is refused, naming both.
    let other = dir.path().join("other.txt");
    std::fs::write(&other, TEXTS[1]).unwrap();
    let output = headscope(&[
        "compare",
        "--model",
        capture.to_str().unwrap(),
        "--model",
        &model_arg(),
        other.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("another text") && stderr.contains("other.txt"),
        "{stderr}"
    );
    // Two live models still need a FILE.
    let output = headscope(&["compare", "--model", &model_arg(), "--model", &model_arg()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("needs a text FILE"),
        "{stderr}"
    );
}
