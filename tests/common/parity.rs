//! Comparing headscope's run of a text with a reference made by
//! Hugging Face transformers (`reference/ref_analysis.py`): the same input
//! ids; attentions, head outputs and similarity within 1e-4 of each
//! tensor's largest magnitude; every figure within 1e-3 (ANALYSIS.md §7).

use super::{assert_close, assert_json_close, f32s};
use headscope::captures::Captures;
use headscope::npz::{read_captures_npz, read_npz, NpyArray};
use headscope::pipeline::RunOutput;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// How far a run was from its reference: the largest relative difference
/// of each tensor, and of any figure.
#[derive(Debug)]
pub struct Agreement {
    pub attentions: f32,
    pub heads: f32,
    pub similarity: f32,
    pub figures: f64,
}

/// Asserts that a run in-process matches the reference `npz` (input_ids,
/// attentions, heads, similarity) and `json` (the figures) within the
/// tolerances of ANALYSIS.md §7.
pub fn assert_matches_reference(output: &RunOutput, npz: &Path, json: &Path) -> Agreement {
    let analysis = serde_json::to_value(&output.analysis).unwrap();
    assert_agrees(
        &output.input.tokens.input_ids,
        &output.captures,
        &analysis,
        npz,
        json,
    )
}

/// The same for what `headscope analyze --json OURS_JSON --npz OURS_NPZ` wrote.
pub fn assert_files_match_reference(ours: (&Path, &Path), reference: (&Path, &Path)) -> Agreement {
    let (ids, captures) = read_captures_npz(ours.1).unwrap();
    let analysis: Value = serde_json::from_str(&std::fs::read_to_string(ours.0).unwrap()).unwrap();
    assert_agrees(&ids, &captures, &analysis, reference.1, reference.0)
}

/// Runs `headscope analyze --one-sentence-per-line --json --npz` on the
/// text of the family fixture `name` (tests/fixtures/families/) and checks
/// both files against the transformers reference made for it; returns our
/// JSON.
pub fn analyze_family_fixture(name: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (json, npz) = (dir.path().join("ours.json"), dir.path().join("ours.npz"));
    super::run_ok(
        super::headscope_command()
            .arg("analyze")
            .arg("--model")
            .arg(super::family_fixture(name))
            .arg("--one-sentence-per-line")
            .arg("--json")
            .arg(&json)
            .arg("--npz")
            .arg(&npz)
            .arg(super::fixture(&format!("families/{name}.txt"))),
        name,
    );
    let reference = (
        super::fixture(&format!("families/{name}.json")),
        super::fixture(&format!("families/{name}.npz")),
    );
    let agreement = assert_files_match_reference((&json, &npz), (&reference.0, &reference.1));
    eprintln!("{name}: {agreement:?}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// The same input ids as a reference `.npz`, and attentions within 1e-4 of
/// its largest value; returns that largest relative difference.
pub fn assert_ids_and_attentions(
    input_ids: &[u32],
    c: &Captures,
    reference: &BTreeMap<String, NpyArray>,
) -> f32 {
    let ids: Vec<i64> = match &reference["input_ids"] {
        NpyArray::I64 { data, .. } => data.clone(),
        other => panic!("input_ids: {other:?}"),
    };
    let ours: Vec<i64> = input_ids.iter().map(|&i| i64::from(i)).collect();
    assert_eq!(ours, ids, "input ids");
    let (shape, attentions) = f32s(&reference["attentions"]);
    assert_eq!(shape, [c.layers, c.heads, c.tokens, c.tokens]);
    assert_close("attentions", &c.attentions, attentions, 1e-4)
}

fn assert_agrees(
    input_ids: &[u32],
    c: &Captures,
    analysis: &Value,
    npz: &Path,
    json: &Path,
) -> Agreement {
    let reference = read_npz(npz).unwrap();
    let attentions = assert_ids_and_attentions(input_ids, c, &reference);
    let (shape, heads) = f32s(&reference["heads"]);
    assert_eq!(shape, [c.layers, c.heads, c.tokens, c.head_dim]);
    let heads = assert_close("heads", &c.head_outputs, heads, 1e-4);
    let (_, similarity) = f32s(&reference["similarity"]);
    let similarity = assert_close("similarity", &c.similarity, similarity, 1e-4);

    let expected: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let figures = assert_json_close("figures", analysis, &expected, 1e-3);
    Agreement {
        attentions,
        heads,
        similarity,
        figures,
    }
}
