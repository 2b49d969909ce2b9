//! Generate and the logit lens in the app, on SmolLM2-135M-Instruct: a
//! prompt continued greedily as transformers continues it (the text grows
//! token by token, the analysis follows), a generation stopped midway, and
//! the Logit lens tab's table of the result (the last layer's top-1 at the
//! prompt's last position is the first generated token).

mod common;

use common::app::{open_tab, shows, start_with, step_until, wait_for_result};
use common::*;
use egui_kittest::kittest::Queryable;
use headscope::app::panels::generate::{GENERATE_BUTTON, STOP_BUTTON};
use headscope::app::views::CentralView;
use serde_json::Value;

#[test]
fn generate_stop_and_read_the_logit_lens() {
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("generation.json")).unwrap())
            .unwrap();
    let entry = &reference["greedy"][0];
    let prompt = entry["prompt"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompt.txt");
    std::fs::write(&file, prompt).unwrap();
    let mut harness = start_with(
        Some(smollm2_model().display().to_string()),
        Some(file),
        None,
    );
    wait_for_result(&mut harness);

    // Greedy, 12 tokens: transformers' continuation, marked as generated.
    harness.get_by_label(GENERATE_BUTTON).click();
    harness.step();
    assert!(harness.state().is_generating());
    step_until(&mut harness, "the generation", |h| {
        !h.state().is_generating()
    });
    let generated: Vec<u32> = entry["generated_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let model =
        headscope::model::Model::load_folder(&smollm2_model(), &candle_core::Device::Cpu).unwrap();
    let continuation = model.tokenizer.decode(&generated[..12], true).unwrap();
    // The panel asks 20 tokens by default; the first 12 are the fixture's.
    let text = harness.state().text().to_string();
    assert!(
        text.starts_with(&format!("{prompt}{continuation}")),
        "{text:?}"
    );
    assert_eq!(harness.state().generated_from(), Some(prompt.len()));
    assert!(shows(&harness, "20 new tokens"));
    wait_for_result(&mut harness);
    let tokens = harness.state().shown_output().unwrap().input.tokens.len();
    assert!(
        tokens > 20,
        "the analysis covers the continuation: {tokens}"
    );

    // The logit lens of the result: one row per layer, the last layer's
    // top-1 after the prompt is the first generated token.
    open_tab(&mut harness, CentralView::LogitLens);
    step_until(&mut harness, "the logit lens", |h| {
        h.state().logit_lens_table().is_some()
    });
    let table = harness.state().logit_lens_table().unwrap().clone();
    assert_eq!(table.lens.layers.len(), 30);
    let last = table.lens.layers.last().unwrap();
    assert_eq!(last.top_ids[4][0], generated[0]);
    assert!(shows(&harness, "L29"));
    // Hovering the prompt's last token gives the model's own top 5 next
    // tokens, the first generated one first.
    let output = harness.state().shown_output().unwrap().clone();
    let header = output.input.tokens.readable(4);
    harness
        .query_all_by_label(&header)
        .next()
        .expect("the prompt's last token in the header")
        .hover();
    let first = model.tokenizer.id_to_token(generated[0]).unwrap();
    let expected = format!(
        "the model's next token: “{}”",
        model.specials.style.readable(&first)
    );
    step_until(&mut harness, "the top 5 on hover", |h| shows(h, &expected));
    let image = harness.render().expect("wgpu renders the window");
    let shots = repo().join("target").join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    image.save(shots.join("logit-lens.png")).unwrap();

    // Stopped midway: fewer tokens than asked, the text kept so far.
    let before = harness.state().text().len();
    harness.get_by_label(GENERATE_BUTTON).click();
    step_until(&mut harness, "a first new token", |h| {
        h.state().text().len() > before
    });
    harness.get_by_label(STOP_BUTTON).click();
    step_until(&mut harness, "the stop", |h| !h.state().is_generating());
    assert!(shows(&harness, "stopped"), "the panel says it stopped");
    assert!(!shows(&harness, "20 new tokens, stopped"));
    let image = harness.render().expect("wgpu renders the window");
    image.save(shots.join("generated.png")).unwrap();
}
