//! Parity with Hugging Face transformers on a 12-layer model,
//! bge-small-en-v1.5 (12 layers × 12 heads, fetched and converted by
//! `scripts/fetch-bge-model.sh`), for two texts: the harbour fixture and the
//! longer `observatory.txt`, whose deep layers spread their attention over
//! the `[SEP]`s evenly enough for undecided segmentation (ANALYSIS.md §5).
//! Same input ids, every figure within 1e-3 (categories and focus tokens
//! equal), and for harbour the attentions within 1e-4 of their largest value.

mod common;

use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::{Model, ModelSource};
use headscope::npz::{read_npz, NpyArray};
use headscope::pipeline::{self, InputOptions, RunOutput};
use serde_json::Value;
use std::sync::OnceLock;

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::load(&ModelSource::Folder(bge_model()), &mut |_| {}).unwrap())
}

/// `headscope analyze --one-sentence-per-line` on a fixture text.
fn analyse(text_file: &str) -> RunOutput {
    let text = std::fs::read_to_string(fixture(text_file)).unwrap();
    let input = InputOptions {
        mode: InputMode::OneSentencePerLine,
        first_sentence: 0,
    };
    pipeline::run(model(), &text, &input, &AnalysisOptions::default(), &|| {
        false
    })
    .unwrap()
}

/// Our figures against the reference's: ids first (a clearer message), then
/// every number within 1e-3 and every category equal.
fn assert_figures_match(output: &RunOutput, reference_file: &str) -> Value {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(reference_file)).unwrap()).unwrap();
    let ours = serde_json::to_value(&output.analysis).unwrap();
    assert_eq!(ours["input_ids"], expected["input_ids"], "input ids");
    assert_eq!(
        ours["layers"].as_array().map(Vec::len),
        Some(12),
        "layers analysed"
    );
    assert_json_close("figures", &ours, &expected, 1e-3);
    expected
}

/// Layers of the reference where some content token is undecided.
fn layers_with_undecided_tokens(reference: &Value) -> usize {
    reference["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|layer| layer["segmentation_undecided"].as_f64().unwrap() > 0.0)
        .count()
}

#[test]
fn harbour_matches_hugging_face_on_twelve_layers() {
    let output = analyse("harbour.txt");
    let reference = read_npz(&fixture("harbour.bge.npz")).unwrap();
    let ids: Vec<i64> = match &reference["input_ids"] {
        NpyArray::I64 { data, .. } => data.clone(),
        other => panic!("input_ids: {other:?}"),
    };
    let ours: Vec<i64> = output
        .input
        .tokens
        .input_ids
        .iter()
        .map(|&i| i as i64)
        .collect();
    assert_eq!(ours, ids, "input ids");
    let c = &output.captures;
    let (shape, attentions) = f32s(&reference["attentions"]);
    assert_eq!(shape, [12, 12, c.tokens, c.tokens]);
    assert_close("attentions", &c.attentions, attentions, 1e-4);

    let expected = assert_figures_match(&output, "harbour.bge.json");
    assert!(layers_with_undecided_tokens(&expected) > 0);
}

#[test]
fn long_text_matches_hugging_face_with_undecided_segmentation() {
    let output = analyse("observatory.txt");
    let expected = assert_figures_match(&output, "observatory.bge.json");
    // the deep layers' ties are what this text is for
    assert!(layers_with_undecided_tokens(&expected) >= 6);
}
