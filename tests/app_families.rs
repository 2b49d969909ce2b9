//! The app on every encoder family: each fixture model of
//! `tests/fixtures/families` (BERT, RoBERTa, XLM-RoBERTa, CamemBERT,
//! DistilBERT, ELECTRA, ALBERT) opened with its text, driven through the
//! accessibility tree like `tests/app_ui.rs`: the grid shows every head of
//! every attention layer, each of the study's views opens and shows the
//! model's own tokens (`<s>` and `</s>` for the RoBERTa family), a head
//! opens, and the model panel names the family.

mod common;

use common::*;
use egui::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use headscope::app::views::CentralView;
use headscope::app::{AppConfig, HeadscopeApp, StartOptions};
use headscope::captures::HeadId;
use headscope::model::{EncoderConfig, Family};
use std::time::{Duration, Instant};

/// A bound for waiting on the model, not a speed requirement.
const PATIENCE: Duration = Duration::from_secs(300);

type AppHarness = Harness<'static, HeadscopeApp>;

/// The app on a family fixture, showing its text, with no persisted state.
fn start(name: &str) -> AppHarness {
    let config = AppConfig {
        start: StartOptions {
            model: Some(family_fixture(name).display().to_string()),
            file: Some(fixture(&format!("families/{name}.txt"))),
        },
        autosave_path: None,
        restore_text: false,
    };
    Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_eframe(move |cc| HeadscopeApp::new(cc, config).expect("the app starts"))
}

/// Runs frames until `done` holds; panics with `what` after [`PATIENCE`].
fn step_until(harness: &mut AppHarness, what: &str, mut done: impl FnMut(&AppHarness) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done(harness) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        harness.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    harness.step();
}

fn open_tab(harness: &mut AppHarness, view: CentralView) {
    harness
        .get_by(|n| n.role() == Role::Button && n.label().as_deref() == Some(view.label()))
        .click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), view);
}

fn check_family(name: &str) {
    let config = EncoderConfig::from_file(&family_fixture(name).join("config.json")).unwrap();
    let (layers, heads) = (config.attention_layers(), config.num_attention_heads);
    let mut harness = start(name);
    step_until(&mut harness, &format!("{name}'s result"), |h| {
        h.state().shown_output().is_some() && !h.state().is_working()
    });
    let output = harness.state().shown_output().unwrap().clone();
    assert_eq!(output.analysis.layers.len(), layers, "{name}");
    let tokens = &output.input.tokens;
    let (start, separator) = match config.family {
        Family::Roberta | Family::XlmRoberta | Family::Camembert => ("<s>", "</s>"),
        _ => ("[CLS]", "[SEP]"),
    };
    assert_eq!(tokens.token_texts[0], start, "{name}");
    let last = tokens.len() - 1;
    assert_eq!(tokens.token_texts[last], separator, "{name}");

    // The grid: every head of every attention layer (ALBERT's shared layers
    // each time they run).
    for l in 0..layers {
        for h in 0..heads {
            let label = format!("L{l} H{h} ");
            let node = harness.get_by_label_contains(&label);
            assert_eq!(node.accesskit_node().role(), Role::Button, "{name} {label}");
        }
    }

    open_tab(&mut harness, CentralView::Layers);
    for l in 0..layers {
        assert!(
            harness
                .query_by_label_contains(&format!("L{l}: mean distance"))
                .is_some(),
            "{name}: the Layers row of L{l}"
        );
    }

    // The separators view lists the tokens with the tokenizer's texts.
    open_tab(&mut harness, CentralView::Separators);
    let chip = format!("token {last} “{separator}”");
    assert!(
        harness.query_by_label(&chip).is_some(),
        "{name}: no chip {chip:?}"
    );
    assert!(harness
        .query_by_label(&format!("token 0 “{start}”"))
        .is_some());

    open_tab(&mut harness, CentralView::TokenFocus);
    open_tab(&mut harness, CentralView::Specialisation);
    let rows = harness
        .query_all_by_role(Role::Button)
        .filter(|n| {
            n.accesskit_node()
                .label()
                .is_some_and(|l| l.contains(": category "))
        })
        .count();
    assert_eq!(rows, layers * heads, "{name}: one row per head");

    // A head of the last layer opens from the grid.
    open_tab(&mut harness, CentralView::Heads);
    let head = HeadId::new(layers - 1, heads - 1);
    harness
        .get_by_label_contains(&format!("L{} H{} ", head.layer, head.head))
        .click();
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(head)
    });
    assert!(harness
        .query_by_label(&format!("Layer {} · Head {}", head.layer, head.head))
        .is_some());

    // The model panel names the family and the families that load.
    harness.get_by_label("File").click();
    harness.step();
    harness.step();
    harness.get_by_label("Choose model…").click();
    harness.step();
    harness.step();
    let loaded = format!("({})", config.family.display_name());
    assert!(
        harness
            .query_all_by_label_contains(&loaded)
            .next()
            .is_some(),
        "{name}: the model panel lacks {loaded}"
    );
    assert!(harness
        .query_all_by_label_contains("Loads BERT, RoBERTa")
        .next()
        .is_some());
}

#[test]
fn the_app_opens_every_family() {
    for name in FAMILY_FIXTURES {
        check_family(name);
    }
}
