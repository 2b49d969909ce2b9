//! Capture files (docs/CAPTURE.md): a run of the real test model stored and
//! read back is the same input and the same tensors, and analyses to the
//! same figures, in-process and through `headscope analyze --capture`;
//! without P the figures made from P are null and the rest unchanged; a
//! damaged file, a wrong version and inconsistent shapes are refused with
//! a message that says which.

mod common;

use common::parity::assert_figures_close;
use headscope::analysis::AnalysisOptions;
use headscope::capture_file::{header_of, CaptureFile, CaptureSource, HEADER_KEY};
use headscope::pipeline::RunOutput;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

fn harbour_run() -> (String, RunOutput) {
    let text = std::fs::read_to_string(common::fixture("harbour.txt")).unwrap();
    let output = common::analyse_fixture_lines(common::loaded_test_model(), "harbour.txt");
    (text, output)
}

fn save(path: &Path, text: &str, output: &RunOutput, with_attention: bool) {
    common::save_test_capture(path, text, output, with_attention);
}

fn source<'a>(text: &'a str, output: &'a RunOutput, with_attention: bool) -> CaptureSource<'a> {
    common::test_capture_source(text, output, with_attention)
}

/// The harbour run, and what reading it back from a capture file gives.
fn harbour_read_back(with_attention: bool) -> (RunOutput, CaptureFile) {
    let (text, output) = harbour_run();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("harbour.safetensors");
    save(&path, &text, &output, with_attention);
    let capture = CaptureFile::read(&path).unwrap();
    (output, capture)
}

#[test]
fn a_capture_reads_back_as_the_run_and_gives_its_figures() {
    let (output, capture) = harbour_read_back(true);
    assert!(capture.has_attention());
    assert_eq!(capture.tokens, output.input.tokens);
    assert_eq!(capture.captures.head_outputs, output.captures.head_outputs);
    assert_eq!(capture.captures.attentions, output.captures.attentions);
    assert!(capture.header.value_norms);
    assert_eq!(capture.captures.value_norms, output.captures.value_norms);
    common::assert_close(
        "similarity",
        &capture.captures.similarity,
        &output.captures.similarity,
        1e-5,
    );
    let figures = capture.analyze(&AnalysisOptions::default());
    assert_eq!(
        figures.sentences_analysed,
        output.analysis.sentences_analysed
    );
    assert_figures_close(
        &serde_json::to_value(&figures).unwrap(),
        &serde_json::to_value(&output.analysis).unwrap(),
    );
}

#[test]
fn without_attention_the_figures_made_from_it_are_null() {
    let (output, capture) = harbour_read_back(false);
    assert!(!capture.has_attention());
    assert!(capture.captures.attentions.is_empty());
    assert!(!capture.header.value_norms && capture.captures.value_norms.is_empty());
    let without = capture.analyze(&AnalysisOptions::default());
    for (layer, full) in without.layers.iter().zip(&output.analysis.layers) {
        assert_eq!(layer.separator_attention, None);
        assert_eq!(layer.sink_attention, None);
        assert_eq!(layer.segmentation_accuracy, None);
        assert_eq!(layer.segmentation_share, None);
        for (head, full) in layer.heads.iter().zip(&full.heads) {
            assert_eq!(head.attention_stats, None);
            assert_eq!(head.separator_attention, None);
            assert_eq!(head.category, full.category);
            assert_eq!(head.focus_token, full.focus_token);
            assert_eq!(head.mean_distance, full.mean_distance);
        }
        assert_eq!(layer.mean_distance, full.mean_distance);
        assert_eq!(layer.focus_uniqueness, full.focus_uniqueness);
    }
    let json = serde_json::to_value(&without).unwrap();
    assert!(json["layers"][0]["heads"][0]["attention_stats"].is_null());
    assert!(json["layers"][0]["separator_attention"].is_null());
}

/// Writes a capture whose header has been changed by `edit`.
fn write_edited(path: &Path, text: &str, output: &RunOutput, edit: impl FnOnce(&mut Value)) {
    save(path, text, output, true);
    let bytes = std::fs::read(path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut header = serde_json::to_value(header_of(&source(text, output, true))).unwrap();
    edit(&mut header);
    let metadata = HashMap::from([(HEADER_KEY.to_string(), header.to_string())]);
    let tensors: Vec<(String, safetensors::tensor::TensorView)> = file
        .names()
        .into_iter()
        .map(|name| (name.to_string(), file.tensor(name).unwrap()))
        .collect();
    let out = safetensors::serialize(tensors, Some(metadata)).unwrap();
    std::fs::write(path, out).unwrap();
}

fn read_error(path: &Path) -> String {
    CaptureFile::read(path)
        .map(|_| ())
        .expect_err("the capture is refused")
        .to_string()
}

#[test]
fn damaged_and_inconsistent_captures_are_refused_clearly() {
    let (text, output) = harbour_run();
    let dir = tempfile::tempdir().unwrap();

    let cut = dir.path().join("cut.safetensors");
    save(&cut, &text, &output, true);
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let message = read_error(&cut);
    assert!(message.contains("is not a safetensors file"), "{message}");
    assert!(message.contains("cut.safetensors"), "{message}");

    let newer = dir.path().join("newer.safetensors");
    write_edited(&newer, &text, &output, |h| h["version"] = 99.into());
    let message = read_error(&newer);
    assert!(message.contains("version 99"), "{message}");

    let heads = dir.path().join("heads.safetensors");
    write_edited(&heads, &text, &output, |h| {
        h["heads"] = (output.captures.heads + 1).into()
    });
    let message = read_error(&heads);
    assert!(
        message.contains("layers.0.head_outputs has shape"),
        "{message}"
    );

    let ids = dir.path().join("ids.safetensors");
    write_edited(&ids, &text, &output, |h| {
        h["tokens"]["ids"].as_array_mut().unwrap().pop();
    });
    let message = read_error(&ids);
    assert!(message.contains("tokens.texts has"), "{message}");

    let separators = dir.path().join("separators.safetensors");
    write_edited(&separators, &text, &output, |h| {
        h["tokens"]["separator_positions"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    let message = read_error(&separators);
    assert!(message.contains("are not the separators"), "{message}");

    let missing = dir.path().join("no-such.safetensors");
    assert!(read_error(&missing).contains("cannot read capture"));

    let plain = dir.path().join("model.safetensors");
    let out = safetensors::serialize(
        Vec::<(String, safetensors::tensor::TensorView)>::new(),
        None,
    )
    .unwrap();
    std::fs::write(&plain, out).unwrap();
    assert!(read_error(&plain).contains("no headscope capture"));
}

/// `analyze --capture` of what `analyze --save-capture` stored equals
/// `analyze --model` on the text, JSON and NPZ.
#[test]
fn analyze_capture_equals_analyze_model_on_minilm() {
    let dir = tempfile::tempdir().unwrap();
    let (capture, model_json, model_npz, capture_json, capture_npz) = (
        dir.path().join("run.safetensors"),
        dir.path().join("model.json"),
        dir.path().join("model.npz"),
        dir.path().join("capture.json"),
        dir.path().join("capture.npz"),
    );
    let fixture = common::fixture("harbour.txt");
    common::run_ok(
        common::headscope_command()
            .args(["analyze", "--model", &common::model_arg()])
            .arg("--one-sentence-per-line")
            .arg("--json")
            .arg(&model_json)
            .arg("--npz")
            .arg(&model_npz)
            .arg("--save-capture")
            .arg(&capture)
            .arg(&fixture),
        "analyze --model",
    );
    common::run_ok(
        common::headscope_command()
            .arg("analyze")
            .arg("--capture")
            .arg(&capture)
            .arg("--json")
            .arg(&capture_json)
            .arg("--npz")
            .arg(&capture_npz),
        "analyze --capture",
    );
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    assert_figures_close(&read(&capture_json), &read(&model_json));
    let (ids, ours) = headscope::npz::read_captures_npz(&capture_npz).unwrap();
    let (model_ids, theirs) = headscope::npz::read_captures_npz(&model_npz).unwrap();
    assert_eq!(ids, model_ids);
    assert_eq!(ours.head_outputs, theirs.head_outputs);
    assert_eq!(ours.attentions, theirs.attentions);
    common::assert_close("similarity", &ours.similarity, &theirs.similarity, 1e-4);

    // The table names the capture, and a capture without a file is refused.
    let table = common::run_ok(
        common::headscope_command()
            .arg("analyze")
            .arg("--capture")
            .arg(&capture),
        "analyze --capture (table)",
    );
    assert!(String::from_utf8_lossy(&table.stdout).contains("all-MiniLM-L6-v2 (capture)"));
    let refused = common::headscope(&["analyze", "--capture", "/no/such.safetensors"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot read capture"));
}
