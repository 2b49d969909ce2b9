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
//!
//! The head roles of §9 are checked against the reference on the text (in
//! `smollm2.json`) and on the induction probe (`smollm2.probe.json`, from
//! `reference/make_probe_fixture.py`), where a trained decoder has
//! induction heads and previous-token heads.

mod common;

use common::parity::{assert_figures_close, assert_matches_reference};
use common::*;
use headscope::analysis::{AnalysisOptions, HeadFigures, Role};
use headscope::captures::{CaptureMode, Captures};
use headscope::model::{Model, ModelSource};
use headscope::pipeline::{self, InputOptions};
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

/// The induction probe (ANALYSIS.md §9) on SmolLM2: 50 random ids and the
/// same 50 again (SmolLM2's tokenizer adds no BOS). Its role scores equal
/// transformers' on the same ids, and the known heads are there: some
/// score above 0.4 on induction and on the previous token, and take those
/// roles.
#[test]
fn induction_probe_finds_induction_and_previous_token_heads() {
    let model = model();
    let built = pipeline::prepare_probe(model, &InputOptions::default()).unwrap();
    let ids = &built.tokens.input_ids;
    assert_eq!(ids.len(), 100, "no BOS, R, R");
    assert_eq!(ids[..50], ids[50..]);
    assert!(built.tokens.special.iter().all(|&s| !s));
    let tokens = built.tokens.clone();
    let output =
        pipeline::run_prepared(model, built, &AnalysisOptions::default(), &|| false).unwrap();
    // The same bits when each head is analysed during the pass, on the
    // pass's threads (`LayerAnalyser::add_head`), as when P is kept.
    let (during_pass, _, _) = pipeline::capture_and_analyze(
        model,
        &tokens,
        CaptureMode::Recomputed,
        Default::default(),
        &AnalysisOptions::default(),
        &mut Captures::default(),
        &|| false,
    )
    .unwrap();
    let figures =
        |a: &headscope::analysis::Analysis| format!("{:?} {:?}", a.layers, a.layer_correlation);
    assert_eq!(
        figures(&during_pass),
        figures(&output.analysis),
        "figures made during the pass"
    );
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("smollm2.probe.json")).unwrap())
            .unwrap();
    let ours = serde_json::to_value(&output.analysis).unwrap();
    let largest = assert_figures_close(&ours, &reference);
    eprintln!("probe: largest difference from the reference {largest:e}");

    let heads: Vec<&HeadFigures> = output
        .analysis
        .layers
        .iter()
        .flat_map(|layer| &layer.heads)
        .collect();
    let best = |score: fn(&HeadFigures) -> Option<f64>| {
        heads.iter().filter_map(|&h| score(h)).fold(0.0, f64::max)
    };
    let with_role = |role: Role| heads.iter().filter(|h| h.role == Some(role)).count();
    let induction = best(|h| h.induction_score);
    let previous = best(|h| h.previous_token_score);
    assert!(induction > 0.4, "the best induction score is {induction}");
    assert!(
        previous > 0.4,
        "the best previous-token score is {previous}"
    );
    assert!(with_role(Role::Induction) >= 1, "no induction head");
    assert!(
        with_role(Role::PreviousToken) >= 1,
        "no previous-token head"
    );
}

/// The analysis of one run's P (a capture file of SmolLM2 on the text)
/// writes the same bytes at 1 and at 2 threads, the role scores included.
/// (The model's own pass may differ in the last bits of P between thread
/// counts; the analysis of a given P may not.)
#[test]
fn the_analysis_of_a_capture_is_the_same_at_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("smollm2.safetensors");
    run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(smollm2_model())
            .arg("--one-sentence-per-line")
            .arg("--save-capture")
            .arg(&capture)
            .arg("--json")
            .arg(dir.path().join("run.json"))
            .arg(fixture(TEXT)),
        "headscope analyze --save-capture",
    );
    let analyse = |threads: &str| {
        let json = dir.path().join(format!("capture-{threads}.json"));
        run_ok(
            headscope_command()
                .env("HEADSCOPE_THREADS", threads)
                .arg("analyze")
                .arg("--capture")
                .arg(&capture)
                .arg("--json")
                .arg(&json),
            "headscope analyze --capture",
        );
        std::fs::read_to_string(json).unwrap()
    };
    let one = analyse("1");
    assert!(one.contains("\"induction_score\""), "{one}");
    assert_eq!(one, analyse("2"), "1 and 2 threads");
}

/// `analyze --probe induction` prints its table: 100 tokens, one row per
/// layer with its role counts.
#[test]
fn cli_analyzes_the_probe() {
    let output = run_ok(
        headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(smollm2_model())
            .arg("--probe")
            .arg("induction"),
        "headscope analyze --probe induction",
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let header = stdout.lines().next().unwrap();
    assert!(header.contains("· 100 tokens ("), "{header}");
    assert!(stdout.contains("roles (previous/duplicate/induction/sink/separator/self/mixed)"));
    // Every layer row ends with its 9 heads' roles: seven counts.
    let counts: Vec<usize> = stdout
        .lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<usize>().is_ok())
        })
        .map(|line| {
            let roles = line.split_whitespace().last().unwrap();
            roles.split('/').map(|n| n.parse::<usize>().unwrap()).sum()
        })
        .collect();
    assert_eq!(counts, vec![9; 30], "{stdout}");
}
