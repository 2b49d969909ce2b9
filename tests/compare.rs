//! Comparing two models on one text (docs/COMPARE.md), through the library
//! and `headscope compare`: a model compared with itself matches every
//! head with itself at CKA 1, and all-MiniLM-L6-v2 (6 × 12) against the
//! 12-layer bge-small-en-v1.5 (12 × 12) gives a JSON whose matrix agrees
//! with CKA recomputed here, independently, from each head's similarity S.
//!
//! Needs the models of `scripts/fetch-test-model.sh` and
//! `scripts/fetch-bge-model.sh`.

mod common;

use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::captures::HeadId;
use headscope::input::InputMode;
use headscope::model::Model;
use headscope::pipeline::{self, InputOptions, RunOutput};
use serde_json::Value;
use std::process::Command;
use std::sync::Arc;

fn input() -> InputOptions {
    InputOptions {
        mode: InputMode::OneSentencePerLine,
        first_sentence: 0,
        ..Default::default()
    }
}

fn harbour() -> String {
    std::fs::read_to_string(fixture("harbour.txt")).unwrap()
}

fn run(model: &Model, text: &str) -> RunOutput {
    pipeline::run(model, text, &input(), &AnalysisOptions::default(), &|| {
        false
    })
    .unwrap()
}

#[test]
fn a_model_compared_with_itself_matches_every_head_with_itself() {
    let text = harbour();
    let a = Arc::new(run(loaded_test_model(), &text));
    let output = pipeline::run_comparison(
        loaded_test_model(),
        a.clone(),
        &text,
        &input(),
        &AnalysisOptions::default(),
        &|| false,
    )
    .unwrap();
    let comparison = &output.comparison;
    // One unit per content token, nothing left over.
    assert_eq!(comparison.alignment.len(), a.analysis.content_tokens);
    assert!(comparison.alignment.a_unaligned.is_empty());
    assert!(comparison.alignment.b_unaligned.is_empty());
    for unit in &comparison.alignment.units {
        assert_eq!(unit.a_positions, unit.b_positions);
        assert_eq!(unit.a_positions.len(), 1);
    }
    let matching = &comparison.head_matching;
    assert_eq!((matching.a_layers, matching.a_heads), (6, 12));
    assert_eq!(matching.cka.len(), 72);
    let mut off_diagonal_max = 0.0f64;
    for (index, row) in matching.cka.iter().enumerate() {
        assert_eq!(row.len(), 72);
        let diagonal = row[index].expect("defined");
        assert!(
            (diagonal - 1.0).abs() < 1e-9,
            "head {index}: CKA {diagonal}"
        );
        for (other, value) in row.iter().enumerate() {
            if other != index {
                off_diagonal_max = off_diagonal_max.max(value.unwrap());
            }
        }
        let head = HeadId::new(index / 12, index % 12);
        let best = matching.best_for_a[index].expect("a best match");
        assert_eq!(best.head_id(), head, "A's best match");
        assert_eq!(matching.best_for_b[index].unwrap().head_id(), head);
    }
    // Not every head is alike: the identity is not a constant matrix.
    assert!(off_diagonal_max < 1.0 - 1e-6, "{off_diagonal_max}");
    // Both sides are the same analysis.
    assert_eq!(output.b.analysis, a.analysis);
    for row in &comparison.specialisation {
        assert_eq!(row.a, row.b, "{}", row.figure);
    }
    // Every head's best match is itself, so it has its role.
    let same_role = comparison
        .specialisation
        .iter()
        .find(|row| row.figure == "matched_same_role")
        .expect("the matched-role row");
    assert_eq!(same_role.a, Some(1.0));
}

/// Linear CKA recomputed from scratch: S of each head pooled over the
/// units (mean over the block), double-centred, Frobenius cosine.
fn cka_from_scratch(
    a: &RunOutput,
    a_head: HeadId,
    b: &RunOutput,
    b_head: HeadId,
    units: &[(Vec<usize>, Vec<usize>)],
) -> f64 {
    let pooled = |output: &RunOutput, head: HeadId, side: usize| -> Vec<Vec<f64>> {
        let s = output.captures.similarity(head);
        let t = output.captures.tokens;
        let group = |u: &(Vec<usize>, Vec<usize>)| {
            if side == 0 {
                u.0.clone()
            } else {
                u.1.clone()
            }
        };
        units
            .iter()
            .map(|u| {
                units
                    .iter()
                    .map(|v| {
                        let (rows, columns) = (group(u), group(v));
                        let mut sum = 0.0;
                        for &i in &rows {
                            for &j in &columns {
                                sum += s[i * t + j] as f64;
                            }
                        }
                        sum / (rows.len() * columns.len()) as f64
                    })
                    .collect()
            })
            .collect()
    };
    let centred = |k: Vec<Vec<f64>>| -> Vec<Vec<f64>> {
        let n = k.len() as f64;
        let rows: Vec<f64> = k.iter().map(|r| r.iter().sum::<f64>() / n).collect();
        let columns: Vec<f64> = (0..k.len())
            .map(|j| k.iter().map(|r| r[j]).sum::<f64>() / n)
            .collect();
        let all = rows.iter().sum::<f64>() / n;
        k.iter()
            .enumerate()
            .map(|(i, r)| {
                r.iter()
                    .enumerate()
                    .map(|(j, v)| v - rows[i] - columns[j] + all)
                    .collect()
            })
            .collect()
    };
    let k = centred(pooled(a, a_head, 0));
    let l = centred(pooled(b, b_head, 1));
    let inner = |x: &Vec<Vec<f64>>, y: &Vec<Vec<f64>>| -> f64 {
        x.iter()
            .flatten()
            .zip(y.iter().flatten())
            .map(|(p, q)| p * q)
            .sum()
    };
    inner(&k, &l) / (inner(&k, &k).sqrt() * inner(&l, &l).sqrt())
}

fn positions(value: &Value) -> Vec<usize> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect()
}

#[test]
fn compare_json_holds_both_models_and_the_matching_of_a_6_and_a_12_layer_model() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("compare.json");
    run_ok(
        headscope_command().args([
            "compare",
            "--model",
            test_model().to_str().unwrap(),
            "--model",
            bge_model().to_str().unwrap(),
            "--one-sentence-per-line",
            "--json",
            json_path.to_str().unwrap(),
            fixture("harbour.txt").to_str().unwrap(),
        ]),
        "compare",
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    // Both models, with the analysis `analyze --json` writes for each.
    let text = harbour();
    let a = run(loaded_test_model(), &text);
    let b = run(loaded_bge_model(), &text);
    for (key, layers, run) in [("model_a", 6, &a), ("model_b", 12, &b)] {
        let model = &json[key];
        assert_eq!(model["layers"], layers, "{key}");
        assert_eq!(model["heads"], 12, "{key}");
        let depth = model["depth"].as_array().unwrap();
        assert_eq!(depth.len(), layers);
        assert_eq!(depth[0], 0.0);
        assert_eq!(depth[layers - 1], 1.0);
        let analysis = serde_json::to_value(&run.analysis).unwrap();
        assert_json_close(key, &model["analysis"], &analysis, 1e-6);
        assert_eq!(
            model["analysis"]["layers"].as_array().unwrap().len(),
            layers
        );
    }

    // The matrix: 72 rows of 144, and each head's best match is its row's
    // (column's) largest value.
    let matching = &json["head_matching"];
    assert_eq!(matching["a_layers"], 6);
    assert_eq!(matching["b_layers"], 12);
    let cka: Vec<Vec<f64>> = matching["cka"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().expect("every CKA defined here"))
                .collect()
        })
        .collect();
    assert_eq!(cka.len(), 72);
    assert!(cka.iter().all(|row| row.len() == 144));
    assert!(cka.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
    let best_for_a = matching["best_for_a"].as_array().unwrap();
    assert_eq!(best_for_a.len(), 72);
    assert_eq!(matching["best_for_b"].as_array().unwrap().len(), 144);
    for (row, best) in cka.iter().zip(best_for_a) {
        let max = row.iter().cloned().fold(f64::MIN, f64::max);
        let column = best["layer"].as_u64().unwrap() * 12 + best["head"].as_u64().unwrap();
        assert_eq!(row[column as usize], max);
        assert_eq!(best["cka"].as_f64().unwrap(), max);
    }

    // The alignment: both tokenizers are uncased WordPiece, so nearly
    // every content token is a unit of its own.
    let units: Vec<(Vec<usize>, Vec<usize>)> = json["alignment"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (positions(&u["a_positions"]), positions(&u["b_positions"])))
        .collect();
    assert!(
        units.len() * 10 >= a.analysis.content_tokens * 9,
        "{}",
        units.len()
    );
    for (a_positions, b_positions) in &units {
        assert!(!a_positions.is_empty() && !b_positions.is_empty());
    }

    // Independently recomputed from the heads' S: a few pairs.
    for (a_head, b_head) in [
        (HeadId::new(0, 0), HeadId::new(0, 0)),
        (HeadId::new(2, 5), HeadId::new(7, 3)),
        (HeadId::new(5, 11), HeadId::new(11, 11)),
    ] {
        let ours = cka_from_scratch(&a, a_head, &b, b_head, &units);
        let written = cka[a_head.layer * 12 + a_head.head][b_head.layer * 12 + b_head.head];
        assert!(
            (ours - written).abs() < 1e-6,
            "A {a_head} × B {b_head}: recomputed {ours}, JSON {written}"
        );
    }

    // The specialisation table: category shares of each model.
    let rows = json["specialisation"].as_array().unwrap();
    let repetition = rows.iter().find(|r| r["figure"] == "repetition").unwrap();
    let share = |run: &RunOutput| {
        let heads: Vec<_> = run.analysis.layers.iter().flat_map(|l| &l.heads).collect();
        heads
            .iter()
            .filter(|h| h.category.map(|c| c.as_str()) == Some("repetition"))
            .count() as f64
            / heads.len() as f64
    };
    assert_eq!(repetition["a"].as_f64().unwrap(), share(&a));
    assert_eq!(repetition["b"].as_f64().unwrap(), share(&b));
    // Every head has one role (§9): each model's role shares add up to 1.
    for side in ["a", "b"] {
        let total: f64 = rows
            .iter()
            .filter(|r| r["figure"].as_str().unwrap().starts_with("role_"))
            .map(|r| r[side].as_f64().unwrap())
            .sum();
        assert!((total - 1.0).abs() < 1e-9, "{side}: {total}");
    }
    // The share of matched heads with the same role is a share.
    let same_role = rows
        .iter()
        .find(|r| r["figure"] == "matched_same_role")
        .unwrap();
    for side in ["a", "b"] {
        let share = same_role[side].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{side}: {share}");
    }
}

#[test]
fn compare_wants_exactly_two_models() {
    let output = Command::new(headscope_bin())
        .args([
            "compare",
            "--model",
            test_model().to_str().unwrap(),
            fixture("harbour.txt").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("compare takes two models, --model A --model B; 1 given"),
        "{stderr}"
    );
}

#[test]
fn compare_without_json_lists_each_head_of_a_with_its_best_match() {
    let model = test_model();
    let output = Command::new(headscope_bin())
        .args([
            "compare",
            "--model",
            model.to_str().unwrap(),
            "--model",
            model.to_str().unwrap(),
            fixture("harbour.txt").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("A all-MiniLM-L6-v2 (6×12) · B all-MiniLM-L6-v2 (6×12) · "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("(0 + 0 tokens unaligned)"),
        "{}",
        lines[0]
    );
    // A header, then one line per head of A: itself, at CKA 1.
    assert_eq!(lines.len(), 2 + 72);
    for (index, line) in lines[2..].iter().enumerate() {
        let head = HeadId::new(index / 12, index % 12).to_string();
        let fields: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        assert_eq!(
            fields,
            vec![head.as_str(), head.as_str(), "1.000"],
            "{line}"
        );
    }
}
