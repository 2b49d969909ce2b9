//! Comparing headscope's run of a text with a reference made by
//! Hugging Face transformers (`reference/ref_analysis.py`): the same input
//! ids; attentions, head outputs and similarity within 1e-4 of each
//! tensor's largest magnitude; every figure within 1e-3, but where the
//! reference says a rule's edge lies within float noise (ANALYSIS.md §7).

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
    let figures = assert_figures_close(analysis, &expected);
    Agreement {
        attentions,
        heads,
        similarity,
        figures,
    }
}

/// Tolerance of a figure against the reference (ANALYSIS.md §7).
const FIGURE_TOLERANCE: f64 = 1e-3;

/// The per-head figures that come from the selected pairs: the ones a head
/// on the tie rule's edge (`selection_edge`) may have differently.
const PAIR_FIGURES: [&str; 7] = [
    "mean_distance",
    "same_sentence_fraction",
    "repetition_fraction",
    "focus_token_id",
    "focus_share",
    "local_fraction",
    "category",
];

/// Our figures (`analyze --json`) against a reference's, as ANALYSIS.md §7
/// says: every figure within 1e-3 and every category and focus token equal,
/// except exactly what the reference marks as on a rule's knife edge. A
/// head with `selection_edge` may select differently: its pair figures are
/// not compared, and a layer's pooled figures may differ by what those
/// heads contribute. A layer's `segmentation_accuracy` and
/// `segmentation_undecided` may differ by its `segmentation_edge_tokens`
/// over the content tokens. Returns the largest difference compared.
pub fn assert_figures_close(ours: &Value, reference: &Value) -> f64 {
    let mut largest = 0.0f64;
    for (key, theirs) in reference.as_object().expect("figures are an object") {
        if key != "layers" {
            let mine = ours.get(key).unwrap_or_else(|| panic!("{key} missing"));
            largest = largest.max(assert_json_close(key, mine, theirs, FIGURE_TOLERANCE));
        }
    }
    let content = reference["content_tokens"]
        .as_f64()
        .expect("content_tokens");
    let (our_layers, their_layers) = (
        ours["layers"].as_array().expect("layers"),
        reference["layers"].as_array().expect("reference layers"),
    );
    assert_eq!(our_layers.len(), their_layers.len(), "layers");
    for (l, (mine, theirs)) in our_layers.iter().zip(their_layers).enumerate() {
        largest = largest.max(assert_layer_close(l, mine, theirs, content));
    }
    largest
}

fn assert_layer_close(l: usize, ours: &Value, reference: &Value, content: f64) -> f64 {
    let (our_heads, their_heads) = (
        ours["heads"].as_array().expect("heads"),
        reference["heads"].as_array().expect("reference heads"),
    );
    assert_eq!(our_heads.len(), their_heads.len(), "L{l} heads");
    let heads = their_heads.len().max(1) as f64;
    let mut largest = 0.0f64;
    // What the heads on the tie rule's edge may move a pooled figure by.
    let mut edge_heads = 0usize;
    let edge_share = |key: &str| {
        our_heads
            .iter()
            .zip(their_heads)
            .filter(|(_, theirs)| on_selection_edge(theirs))
            .map(|(mine, theirs)| (number(&mine[key]) - number(&theirs[key])).abs() / heads)
            .sum::<f64>()
    };
    let allowances = [
        ("mean_distance", edge_share("mean_distance")),
        (
            "same_sentence_fraction",
            edge_share("same_sentence_fraction"),
        ),
    ];
    for (h, (mine, theirs)) in our_heads.iter().zip(their_heads).enumerate() {
        let edge = on_selection_edge(theirs);
        edge_heads += usize::from(edge);
        for (key, value) in theirs.as_object().expect("a head is an object") {
            if key == "selection_edge" || (edge && PAIR_FIGURES.contains(&key.as_str())) {
                continue;
            }
            let path = format!("L{l} H{h} {key}");
            let mine = mine.get(key).unwrap_or_else(|| panic!("{path} missing"));
            largest = largest.max(assert_json_close(&path, mine, value, FIGURE_TOLERANCE));
        }
    }
    let segmentation_edge = reference["segmentation_edge_tokens"]
        .as_f64()
        .unwrap_or(0.0)
        / content;
    for (key, value) in reference.as_object().expect("a layer is an object") {
        let allowance = match key.as_str() {
            "heads" | "segmentation_edge_tokens" => continue,
            "focus_uniqueness" => edge_heads as f64 / heads,
            "segmentation_accuracy" | "segmentation_undecided" => segmentation_edge,
            other => allowances
                .iter()
                .find(|(name, _)| *name == other)
                .map_or(0.0, |&(_, allowance)| allowance),
        };
        let path = format!("L{l} {key}");
        let mine = ours.get(key).unwrap_or_else(|| panic!("{path} missing"));
        largest = largest.max(assert_json_close(
            &path,
            mine,
            value,
            FIGURE_TOLERANCE + allowance,
        ));
    }
    largest
}

fn on_selection_edge(head: &Value) -> bool {
    head["selection_edge"].as_bool().unwrap_or(false)
}

fn number(value: &Value) -> f64 {
    value.as_f64().unwrap_or(0.0)
}
