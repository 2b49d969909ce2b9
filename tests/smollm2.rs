//! Parity with Hugging Face transformers on a real trained decoder,
//! SmolLM2-135M-Instruct (Llama: 30 layers, 9 query heads sharing 3
//! key/value heads, hidden 576, tied embeddings; fetched and converted from
//! its Q4_1 GGUF by `scripts/fetch-smollm2-model.sh`), on
//! `tests/fixtures/smollm2.txt` one sentence per line, against the
//! reference `reference/make_smollm2_fixture.py` made with transformers'
//! own GGUF loading: the same input ids; attentions, head outputs and
//! similarity within 1e-4 of each tensor's largest magnitude; the figures
//! as ANALYSIS.md §7 and §8 say. Unlike the tiny random decoders, a trained
//! one has heads that attend to the first token alone.

mod common;

use common::parity::assert_matches_reference;
use common::*;
use headscope::model::{Model, ModelSource};
use std::sync::OnceLock;

const TEXT: &str = "smollm2.txt";

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::load(&ModelSource::Folder(smollm2_model()), &mut |_| {}).unwrap())
}

#[test]
fn smollm2_matches_hugging_face() {
    let output = analyse_fixture_lines(model(), TEXT);
    let captures = &output.captures;
    assert_eq!(
        (captures.layers, captures.heads, captures.head_dim),
        (30, 9, 64)
    );
    assert!(output.input.tokens.causal);
    let agreement =
        assert_matches_reference(&output, &fixture("smollm2.npz"), &fixture("smollm2.json"));
    eprintln!("smollm2: {agreement:?}");

    // A causal model has no segmentation (§8); a trained decoder sinks much
    // of its attention into the first token.
    let analysis = &output.analysis;
    assert!(analysis
        .layers
        .iter()
        .all(|layer| layer.segmentation_accuracy.is_none()));
    let deepest_sink = analysis
        .layers
        .iter()
        .filter_map(|layer| layer.sink_attention)
        .fold(0.0, f64::max);
    assert!(deepest_sink > 0.5, "sink attention at most {deepest_sink}");
}

/// `headscope analyze --model DIR` prints its table for the real decoder:
/// the fixture's token count and one row per layer.
#[test]
fn cli_analyzes_smollm2() {
    let output = run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(smollm2_model())
            .arg("--one-sentence-per-line")
            .arg(fixture(TEXT)),
        "headscope analyze on SmolLM2",
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("smollm2.json")).unwrap()).unwrap();
    let tokens = reference["tokens"].as_u64().unwrap();
    let header = stdout.lines().next().unwrap();
    assert!(header.contains(&format!("· {tokens} tokens (")), "{header}");
    let layer_rows: Vec<usize> = stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(layer_rows, (0..30).collect::<Vec<_>>(), "{stdout}");
}
