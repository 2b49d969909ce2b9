//! Generate, step through it and the logit lens in the app, on
//! SmolLM2-135M-Instruct: a prompt continued greedily as transformers
//! continues it (the text grows token by token, the analysis follows), the
//! Steps tab going back through the new tokens, the model's next tokens on
//! hovering a token, the Logit lens tab's table and rank curve of the
//! result (the last layer's top-1 at the prompt's last position is the
//! first generated token), and a generation stopped midway.

use crate::common;

use common::app::{
    label_containing, open_tab, shows, start_with, step_until, type_number, wait_for_result,
};
use common::*;
use egui_kittest::kittest::Queryable;
use headscope::app::panels::generate::{GENERATE_BUTTON, MAX_TOKENS_LABEL, STOP_BUTTON};
use headscope::app::views::steps::{STEP_BACK, STEP_FORWARD};
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

    let shots = repo().join("target").join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    // Step through it: the newest token first, then back one step; each
    // head's strip is a widget; hovering a token gives the model's next.
    let output = harness.state().shown_output().unwrap().clone();
    let first = (0..tokens)
        .find(|&t| output.input.tokens.offsets[t].is_some_and(|(start, _)| start >= prompt.len()))
        .expect("a generated token");
    let steps = tokens - first;
    open_tab(&mut harness, CentralView::Steps);
    assert_eq!(harness.state().step_position(), Some(tokens - 1));
    assert!(shows(&harness, &format!("Step {steps} of {steps}")));
    assert!(harness.query_by_label("step strip L29 H8").is_some());
    harness.get_by_label(STEP_BACK).click();
    harness.step();
    harness.get_by_label(STEP_BACK).click();
    harness.step();
    assert_eq!(harness.state().step_position(), Some(tokens - 3));
    assert!(shows(&harness, &format!("Step {} of {steps}", steps - 2)));
    harness.get_by_label(STEP_FORWARD).click();
    harness.step();
    assert_eq!(harness.state().step_position(), Some(tokens - 2));
    // A head's strip, clicked, tints the text by its own row.
    harness.get_by_label("step strip L1 H8").click();
    step_until(&mut harness, "the strip's tint", |h| {
        shows(h, "of L1 H8 (click it again")
    });
    step_until(&mut harness, "the model's next tokens", |h| {
        h.state().next_tokens_table().is_some()
    });
    let first_token = model.tokenizer.id_to_token(generated[0]).unwrap();
    let expected = format!(
        "the model's next token: “{}”",
        model.specials.style.readable(&first_token)
    );
    harness
        .query_all_by_label_contains("step token 4 ")
        .next()
        .expect("the prompt's last token in the text")
        .hover();
    step_until(&mut harness, "the next tokens on hover", |h| {
        shows(h, &expected)
    });
    let image = harness.render().expect("wgpu renders the window");
    image.save(shots.join("steps.png")).unwrap();

    // The logit lens of the result: one row per layer, the last layer's
    // top-1 after the prompt is the first generated token, which ranks
    // first there.
    open_tab(&mut harness, CentralView::LogitLens);
    step_until(&mut harness, "the logit lens", |h| {
        h.state().logit_lens_table().is_some()
    });
    let table = harness.state().logit_lens_table().unwrap().clone();
    assert_eq!(table.lens.layers.len(), 30);
    let last = table.lens.layers.last().unwrap();
    assert_eq!(last.top_ids[4][0], generated[0]);
    assert_eq!(last.next_token_ranks.len(), tokens - 1);
    assert_eq!(last.next_token_ranks[4], 1);
    assert!(shows(&harness, "L29"));
    assert!(shows(&harness, "Rank of the true next token against layer"));
    // Hovering the prompt's last token gives the model's own top 5 next
    // tokens, the first generated one first.
    let output = harness.state().shown_output().unwrap().clone();
    let header = output.input.tokens.readable(4);
    harness
        .query_all_by_label(&header)
        .next()
        .expect("the prompt's last token in the header")
        .hover();
    step_until(&mut harness, "the top 5 on hover", |h| shows(h, &expected));
    assert!(shows(&harness, "position 4 (the last hovered)"));
    let image = harness.render().expect("wgpu renders the window");
    image.save(shots.join("logit-lens.png")).unwrap();

    // Stopped midway: a story's beginning, which the model continues far
    // past the first new token, stopped there: fewer tokens than asked
    // (400), the text kept so far.
    open_tab(&mut harness, CentralView::Heads);
    let story = dir.path().join("story.txt");
    let story_prompt = reference["greedy"][1]["prompt"].as_str().unwrap();
    std::fs::write(&story, story_prompt).unwrap();
    harness.state_mut().open_file(&story);
    step_until(&mut harness, "the story", |h| {
        h.state().text() == story_prompt
    });
    wait_for_result(&mut harness);
    type_number(&mut harness, MAX_TOKENS_LABEL, "400");
    let before = harness.state().text().len();
    harness.get_by_label(GENERATE_BUTTON).click();
    step_until(&mut harness, "a first new token", |h| {
        h.state().text().len() > before
    });
    // (Through AccessKit, as a screen reader presses it: in this headless
    // harness a pointer click on Stop during a generation is not seen.)
    harness.get_by_label(STOP_BUTTON).click_accesskit();
    step_until(&mut harness, "the stop", |h| !h.state().is_generating());
    let status = label_containing(&harness, "new tokens");
    assert!(status.ends_with(", stopped"), "{status}");
    assert!(!status.starts_with("400 "), "{status}");
    let image = harness.render().expect("wgpu renders the window");
    image.save(shots.join("generated.png")).unwrap();
}
