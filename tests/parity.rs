//! Parity with Hugging Face transformers (PyTorch, float32) on the shared
//! reference fixture: same input ids; attentions, head outputs and similarity
//! within 1e-4 of each tensor's largest magnitude; every figure within 1e-3.

mod common;

use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::{Model, ModelSource};
use headscope::npz::{read_npz, NpyArray};
use headscope::pipeline::{self, InputOptions};
use serde_json::Value;

#[test]
fn harbour_matches_hugging_face() {
    let model = Model::load(&ModelSource::Folder(test_model()), &mut |_| {}).unwrap();
    let text = std::fs::read_to_string(fixture("harbour.txt")).unwrap();
    let output = pipeline::run(
        &model,
        &text,
        &InputOptions {
            mode: InputMode::OneSentencePerLine,
            first_sentence: 0,
        },
        &AnalysisOptions::default(),
        &|| false,
    )
    .unwrap();
    let reference = read_npz(&fixture("harbour.minilm.npz")).unwrap();

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
    assert_eq!(shape, [c.layers, c.heads, c.tokens, c.tokens]);
    assert_close("attentions", &c.attentions, attentions, 1e-4);
    let (shape, heads) = f32s(&reference["heads"]);
    assert_eq!(shape, [c.layers, c.heads, c.tokens, c.head_dim]);
    assert_close("heads", &c.head_outputs, heads, 1e-4);
    let (_, similarity) = f32s(&reference["similarity"]);
    assert_close("similarity", &c.similarity, similarity, 1e-4);

    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("harbour.minilm.json")).unwrap())
            .unwrap();
    let ours = serde_json::to_value(&output.analysis).unwrap();
    assert_json_close("figures", &ours, &expected, 1e-3);
}
