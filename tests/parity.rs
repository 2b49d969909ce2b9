//! Parity with Hugging Face transformers (PyTorch, float32) on the shared
//! reference fixture: same input ids; attentions, head outputs and similarity
//! within 1e-4 of each tensor's largest magnitude; every figure within 1e-3.

mod common;

use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::{Model, ModelSource};
use headscope::npz::read_npz;
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

    assert_ids_and_attentions(&output, &reference);
    let c = &output.captures;
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
