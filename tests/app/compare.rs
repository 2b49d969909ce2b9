//! The Compare tab driven through the app's accessibility tree, like a
//! user: open the tab, load a model B that fails (model A keeps working),
//! then the 12-layer bge-small-en-v1.5 as B, see both models, click a head
//! of A and find its best match outlined in B's grid, with the CKA the
//! library computes, and the same matching from `headscope compare --json`
//! on the same text; save a figure as PNG.
//!
//! Needs the models of `scripts/fetch-test-model.sh` and
//! `scripts/fetch-bge-model.sh`.

use crate::common;

use common::app::*;
use egui::Role;
use egui_kittest::kittest::Queryable;
use headscope::app::views::compare::{match_label, Which};
use headscope::app::views::CentralView;
use headscope::app::widgets::format::category_style;
use headscope::app::widgets::plots::SAVE_LABEL;
use headscope::captures::HeadId;

#[test]
fn model_b_loads_beside_a_and_a_clicked_head_shows_its_best_match() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let a_name = harness.state().model_name().unwrap().to_string();
    harness
        .get_by(|n| n.role() == Role::Button && n.label().as_deref() == Some("Compare"))
        .click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), CentralView::Compare);
    assert!(shows(&harness, "Compare with a second model"));

    // A folder without a model: the error is shown, A is untouched.
    let empty = tempfile::tempdir().unwrap();
    load_model_b(&mut harness, empty.path().to_str().unwrap());
    step_until(&mut harness, "model B's failure", |h| {
        h.state().compare_view().error().is_some()
    });
    let error = harness.state().compare_view().error().unwrap();
    assert!(error.starts_with("Model B"), "{error}");
    assert!(shows(&harness, "could not be loaded"));
    assert_eq!(harness.state().model_name(), Some(a_name.as_str()));
    assert!(harness.state().shown_output().is_some());
    assert!(harness.state().compare_view().model_b().is_none());

    // The 12-layer model as B.
    let bge = common::bge_model();
    load_model_b(&mut harness, bge.to_str().unwrap());
    step_until(&mut harness, "the comparison", |h| {
        let compare = h.state().compare_view();
        compare.shown().is_some() && !compare.is_working()
    });
    let output = harness.state().compare_view().shown().unwrap().clone();
    assert_eq!(harness.state().compare_view().error(), None);
    assert_eq!(output.a.captures.layers, 6);
    assert_eq!(output.b.captures.layers, 12);
    assert!(shows(&harness, &format!("B: {}", output.b_name)));
    // Both grids, whole: every head of each model is a cell.
    for (which, layers) in [("A", 6), ("B", 12)] {
        for l in 0..layers {
            for h in 0..12 {
                let label = format!("{which} L{l} H{h} ");
                assert!(
                    harness.query_by_label_contains(&label).is_some(),
                    "no cell {label}"
                );
            }
        }
    }

    // Click A L1 H3: its best match in B is outlined and named.
    let head = HeadId::new(1, 3);
    harness.get_by_label_contains("A L1 H3 ").click();
    harness.step();
    harness.step();
    let matching = &output.comparison.head_matching;
    let best = matching.ranked_for_a(head, 3)[0];
    assert_eq!(Some(best), matching.best_for_a[12 + 3]);
    let category = category_style(
        output
            .b
            .analysis
            .head(best.head_id())
            .and_then(|f| f.category),
    )
    .0;
    let expected = match_label(
        Which::B,
        best.head_id(),
        category,
        false,
        Some((0, head, best.cka)),
    );
    assert!(
        harness.query_by_label(&expected).is_some(),
        "no cell labelled {expected:?}"
    );
    let line = label_containing(&harness, "best matches in B:");
    assert!(
        line.contains(&format!("{} (CKA {:.3})", best.head_id(), best.cka)),
        "{line}"
    );
    // Only the three best are marked.
    let marked = harness
        .query_all_by_label_contains(" of A L1 H3, CKA ")
        .count();
    assert_eq!(marked, 3);

    // `headscope compare --json` on the same text says what the view shows.
    let scratch = tempfile::tempdir().unwrap();
    let (text, json) = (
        scratch.path().join("text.txt"),
        scratch.path().join("compare.json"),
    );
    std::fs::write(&text, harness.state().text()).unwrap();
    common::run_ok(
        common::headscope_command()
            .args(["compare", "--model", &model_arg(), "--model"])
            .arg(&bge)
            .arg("--json")
            .arg(&json)
            .arg(&text),
        "compare",
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cli_matching: headscope::comparison::HeadMatching =
        serde_json::from_value(report["head_matching"].clone()).unwrap();
    assert_eq!(cli_matching.units, matching.units);
    for (row, (ours, theirs)) in matching.cka.iter().zip(&cli_matching.cka).enumerate() {
        for (column, (a, b)) in ours.iter().zip(theirs).enumerate() {
            match (a, b) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "A{row} B{column}: {a} vs {b}"),
                _ => assert_eq!(a, b, "A{row} B{column}"),
            }
        }
    }
    let heads = |best: &[Option<headscope::comparison::BestMatch>]| -> Vec<Option<HeadId>> {
        best.iter()
            .map(|b| b.as_ref().map(|b| b.head_id()))
            .collect()
    };
    assert_eq!(heads(&cli_matching.best_for_a), heads(&matching.best_for_a));
    assert_eq!(heads(&cli_matching.best_for_b), heads(&matching.best_for_b));

    // The curves switch from depth to raw layer numbers.
    assert!(!harness.state().compare_view().raw_layers);
    harness.get_by_label("Raw layer numbers").click();
    harness.step();
    assert!(harness.state().compare_view().raw_layers);

    // The head grids figure saves as PNG.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grids.png");
    harness
        .state_mut()
        .set_plot_export_target(Some(png.clone()));
    harness
        .query_all_by_label(SAVE_LABEL)
        .next()
        .unwrap()
        .click();
    step_until(&mut harness, "the plot export", |h| {
        h.state().notice().is_some_and(|n| n.contains("xport"))
    });
    let notice = harness.state().notice().unwrap().to_string();
    assert!(notice.starts_with("Exported"), "{notice}");
    let picture = image::open(&png).expect("a PNG").to_rgb8();
    assert!(picture.width() > 400 && picture.height() > 200);
    // Every Compare figure saves as PDF, its text as text.
    let pdf_label =
        headscope::app::widgets::plots::save_label(headscope::export::FigureFormat::Pdf);
    let figures = harness.query_all_by_label(pdf_label).count();
    assert_eq!(figures, 4);
    // (Tall enough that every button is on screen to be clicked.)
    harness.set_size(egui::vec2(1400.0, 3200.0));
    harness.step();
    for k in 0..figures {
        let pdf = dir.path().join(format!("compare-{k}.pdf"));
        harness
            .state_mut()
            .set_plot_export_target(Some(pdf.clone()));
        harness
            .query_all_by_label(pdf_label)
            .nth(k)
            .unwrap()
            .click();
        step_until(&mut harness, "the PDF export", |h| {
            h.state().notice().is_some_and(|n| {
                n.contains(&pdf.display().to_string()) || n.starts_with("Export failed")
            })
        });
        let notice = harness.state().notice().unwrap().to_string();
        assert!(notice.starts_with("Exported"), "figure {k}: {notice}");
        let keep = std::env::temp_dir().join("headscope-exports");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&pdf, keep.join(format!("compare-{k}.pdf"))).unwrap();
        let text = std::process::Command::new("pdftotext")
            .args([pdf.to_str().unwrap(), "-"])
            .output()
            .expect("pdftotext (poppler-utils) runs");
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains("L0") || text.contains("A"),
            "figure {k}: {text}"
        );
    }

    // A picture of the whole window, to look at (HEADSCOPE_COMPARE_PNG).
    if let Some(path) = std::env::var_os("HEADSCOPE_COMPARE_PNG") {
        harness.set_size(egui::vec2(1600.0, 2000.0));
        harness.step();
        harness.step();
        let image = harness.render().expect("wgpu renders the window");
        image.save(path).unwrap();
    }
}

#[test]
fn compare_offers_the_recent_models_and_model_b_joins_them() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let a_folder = model_arg();
    assert_eq!(harness.state().recent_models().first(), Some(&a_folder));
    open_tab(&mut harness, CentralView::Compare);
    // B's panel lists model A's folder among the models found, as the
    // Model window does, rather than "None found".
    let a_dir = std::path::Path::new(&a_folder);
    let a_link = a_dir.file_name().unwrap().to_str().unwrap().to_string();
    step_until(&mut harness, "the recent models in Compare", |h| {
        h.query_by(|n| n.role() == Role::Link && n.label().as_deref() == Some(a_link.as_str()))
            .is_some()
    });
    assert!(!shows(
        &harness,
        "None found in the Hugging Face cache, Ollama's store or LM Studio's folders."
    ));

    // A model B loaded joins the recent models, first.
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("small-b");
    std::fs::create_dir_all(&b).unwrap();
    write_random_model(&b, 2, 4);
    load_model_b(&mut harness, b.to_str().unwrap());
    step_until(&mut harness, "model B", |h| {
        h.state().compare_view().model_b().is_some()
    });
    harness.step();
    let recent = harness.state().recent_models().to_vec();
    assert_eq!(recent.first().map(String::as_str), b.to_str(), "{recent:?}");
    assert!(recent.contains(&a_folder), "{recent:?}");
}

/// While model B runs, Compare shows the progress row every slow stage
/// shows (B's layers done of all, the time left) and Cancel, which stops
/// it and offers to compare again; compared again, the comparison comes.
#[test]
fn a_comparison_shows_its_progress_and_can_be_cancelled() {
    use headscope::app::views::compare::COMPARE_AGAIN_LABEL;
    use headscope::app::widgets::progress::CANCEL_LABEL;
    use std::time::Duration;
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::Compare);
    // A slow model: each layer of B's run waits 5 s first (Cancel lands
    // inside the wait even when a busy machine draws a frame a second;
    // the wait ends at the cancel).
    harness
        .state()
        .worker()
        .set_layer_delay(Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("small-b");
    std::fs::create_dir_all(&b).unwrap();
    write_random_model(&b, 2, 4);
    load_model_b(&mut harness, b.to_str().unwrap());
    let second_layer = " on the text · 1 of 2 layers · ~";
    step_until(&mut harness, "the comparison's progress", |h| {
        shows(h, second_layer)
    });
    let row = label_containing(&harness, second_layer);
    assert!(row.starts_with("Running "), "{row}");
    assert!(row.ends_with(" s left"), "{row}");
    assert!(harness.state().compare_view().is_working());
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-progress.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");

    harness.get_by_label(CANCEL_LABEL).click();
    harness.step();
    harness.step();
    assert!(shows(&harness, "The comparison was cancelled."));
    assert!(!shows(&harness, second_layer));
    assert!(!harness.state().compare_view().is_working());
    // It stays cancelled: nothing comes, nothing is asked for again.
    for _ in 0..30 {
        harness.step();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(harness.state().compare_view().shown().is_none());
    assert!(!harness.state().compare_view().is_working());

    harness.state().worker().set_layer_delay(Duration::ZERO);
    harness.get_by_label(COMPARE_AGAIN_LABEL).click();
    step_until(&mut harness, "the comparison asked again", |h| {
        let compare = h.state().compare_view();
        compare.shown().is_some() && !compare.is_working()
    });
    assert_eq!(harness.state().compare_view().error(), None);
    assert!(!shows(&harness, "The comparison was cancelled."));
}
