//! Parity with Hugging Face transformers (PyTorch, float32) on the shared
//! reference fixture: same input ids; attentions, head outputs and similarity
//! within 1e-4 of each tensor's largest magnitude; every figure within 1e-3.

mod common;

use common::parity::assert_matches_reference;
use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::InputMode;
use headscope::model::{Model, ModelSource};
use headscope::pipeline::{self, InputOptions};

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
            ..Default::default()
        },
        &AnalysisOptions::default(),
        &|| false,
    )
    .unwrap();
    assert_matches_reference(
        &output,
        &fixture("harbour.minilm.npz"),
        &fixture("harbour.minilm.json"),
    );
    // The pass made each head's passes over P as it made P; the figures
    // from the kept captures, P read again, are the same to the bit.
    let made = &output.analysis;
    let mut again = headscope::analysis::analyze(
        &output.input.tokens,
        &output.captures,
        &AnalysisOptions::default(),
    );
    again.sentences_analysed = made.sentences_analysed;
    again.sentences_left_out = made.sentences_left_out;
    again.tokens_left_out = made.tokens_left_out;
    assert_eq!(
        serde_json::to_value(made).unwrap(),
        serde_json::to_value(&again).unwrap()
    );
}
