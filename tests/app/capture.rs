//! The app on capture files (docs/CAPTURE.md), as `headscope view FILE`
//! opens it: the capture takes the model's place and brings its text;
//! every view shows the capture's figures (the same as the library's);
//! without P the views say why; Compare puts a second capture, or a live
//! model, beside it, and a capture as model B beside a live model.

use crate::common;

use common::app::*;
use headscope::analysis::AnalysisOptions;
use headscope::app::views::CentralView;
use headscope::app::{AppConfig, StartOptions};
use headscope::capture_file::CaptureFile;
use headscope::model::ModelSource;
use std::path::{Path, PathBuf};

/// The test model's run on the harbour text, stored as a capture in `dir`.
fn write_harbour_capture(dir: &Path, name: &str, with_attention: bool) -> (PathBuf, String) {
    let text = std::fs::read_to_string(common::fixture("harbour.txt")).unwrap();
    let output = common::analyse_fixture_lines(common::loaded_test_model(), "harbour.txt");
    let path = dir.join(name);
    common::save_test_capture(&path, &text, &output, with_attention);
    (path, text)
}

/// The app as `headscope view FILE` starts it, with no persisted state.
fn open_capture(path: &Path) -> AppHarness {
    start_config(AppConfig {
        start: StartOptions {
            model: Some(path.display().to_string()),
            file: None,
        },
        autosave_path: None,
        restore_text: false,
    })
}

/// Renders the window (a real wgpu render) into $HEADSCOPE_SCREENSHOT_DIR
/// when set, to look at.
fn screenshot(harness: &mut AppHarness, name: &str) {
    let image = harness.render().expect("wgpu renders the window");
    if let Ok(out) = std::env::var("HEADSCOPE_SCREENSHOT_DIR") {
        image.save(Path::new(&out).join(name)).unwrap();
    }
}

fn start_on_capture(path: &Path) -> AppHarness {
    let mut harness = open_capture(path);
    wait_for_result(&mut harness);
    harness
}

#[test]
fn a_capture_opens_with_its_text_and_every_view_shows_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = write_harbour_capture(dir.path(), "harbour.safetensors", true);
    let mut harness = start_on_capture(&path);
    assert_eq!(
        harness.state().model_name(),
        Some("all-MiniLM-L6-v2 (capture)")
    );
    assert_eq!(harness.state().text(), text);
    let capture = CaptureFile::read(&path).unwrap();
    let expected = capture.analyze(&AnalysisOptions::default());
    let shown = harness.state().shown_output().unwrap().clone();
    assert_eq!(shown.analysis, expected);
    assert_eq!(shown.input.tokens, capture.tokens);
    for view in [
        CentralView::Layers,
        CentralView::Separators,
        CentralView::TokenFocus,
        CentralView::Specialisation,
        CentralView::Heads,
    ] {
        open_tab(&mut harness, view);
        harness.step();
    }
    assert!(harness.state().notice().is_none());
    screenshot(&mut harness, "capture.png");

    // A second capture beside it in Compare: every head matches itself.
    let (other, _) = write_harbour_capture(dir.path(), "again.safetensors", true);
    harness
        .state_mut()
        .load_comparison_model(ModelSource::Folder(other));
    open_tab(&mut harness, CentralView::Compare);
    step_until(&mut harness, "the comparison of two captures", |h| {
        h.state().compare_view().shown().is_some() || h.state().compare_view().error().is_some()
    });
    assert_eq!(harness.state().compare_view().error(), None);
    let comparison = harness.state().compare_view().shown().unwrap().clone();
    assert_eq!(comparison.b_name, "all-MiniLM-L6-v2 (capture)");
    assert_eq!(comparison.b.analysis, expected);

    // And the live model beside the capture.
    harness
        .state_mut()
        .load_comparison_model(ModelSource::Folder(common::test_model()));
    step_until(&mut harness, "the capture beside the live model", |h| {
        h.state()
            .compare_view()
            .shown()
            .is_some_and(|c| c.b_name != comparison.b_name)
            || h.state().compare_view().error().is_some()
    });
    assert_eq!(harness.state().compare_view().error(), None);
}

#[test]
fn a_capture_without_attention_says_why_its_views_are_empty() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_harbour_capture(dir.path(), "no-p.safetensors", false);
    let mut harness = start_on_capture(&path);
    let shown = harness.state().shown_output().unwrap().clone();
    assert!(shown.analysis.layers[0].separator_attention.is_none());
    open_tab(&mut harness, CentralView::Separators);
    assert!(shows(&harness, "without the attention P"));
    screenshot(&mut harness, "capture-no-p-separators.png");
    open_tab(&mut harness, CentralView::Specialisation);
    open_tab(&mut harness, CentralView::Layers);
    open_tab(&mut harness, CentralView::Heads);
    assert!(harness.state().notice().is_none());
}

#[test]
fn a_damaged_capture_is_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.safetensors");
    std::fs::write(&path, b"not a capture at all").unwrap();
    let mut harness = open_capture(&path);
    step_until(&mut harness, "the refusal", |h| {
        shows(h, "is not a safetensors file")
    });
}

#[test]
fn a_capture_is_model_b_beside_the_live_model() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(common::fixture("harbour.txt")).unwrap();
    let file = dir.path().join("harbour.txt");
    std::fs::write(&file, &text).unwrap();
    // The run the app makes of the text (document mode, the defaults),
    // stored as a capture.
    let output = headscope::pipeline::run(
        common::loaded_test_model(),
        &text,
        &Default::default(),
        &AnalysisOptions::default(),
        &|| false,
    )
    .unwrap();
    let capture = dir.path().join("harbour.safetensors");
    common::save_test_capture(&capture, &text, &output, true);

    let mut harness = start(Some(file), None);
    wait_for_result(&mut harness);
    harness
        .state_mut()
        .load_comparison_model(ModelSource::local(capture));
    open_tab(&mut harness, CentralView::Compare);
    step_until(&mut harness, "the live model beside a capture", |h| {
        h.state().compare_view().shown().is_some() || h.state().compare_view().error().is_some()
    });
    assert_eq!(harness.state().compare_view().error(), None);
    let comparison = harness.state().compare_view().shown().unwrap().clone();
    assert_eq!(comparison.b_name, "all-MiniLM-L6-v2 (capture)");
    // The same model on the same input: every head of A matches itself.
    let matching = &comparison.comparison.head_matching;
    for (index, best) in matching.best_for_a.iter().enumerate() {
        let best = best.as_ref().expect("a match");
        let head =
            headscope::captures::HeadId::new(index / matching.a_heads, index % matching.a_heads);
        assert_eq!(best.head_id(), head);
        assert!(best.cka > 0.999, "{head}: {}", best.cka);
    }
}

#[test]
fn a_captures_text_is_named_after_it_and_read_only() {
    use egui_kittest::kittest::Queryable;
    use headscope::app::text::editor::EDITOR_LABEL;
    let dir = tempfile::tempdir().unwrap();
    let (path, text) = write_harbour_capture(dir.path(), "harbour.safetensors", true);
    let mut harness = start_on_capture(&path);
    harness.step();
    let title = harness.state().window_title().to_string();
    assert!(title.contains("harbour.safetensors"), "{title}");
    assert!(!title.contains("untitled"), "{title}");
    assert!(harness.query_by_label_contains("read-only").is_some());
    // Typing changes nothing, and no run is asked of the capture.
    harness.get_by_label(EDITOR_LABEL).click();
    harness.step();
    harness.get_by_label(EDITOR_LABEL).type_text("More words.");
    harness.step();
    harness.step();
    assert_eq!(harness.state().text(), text);
    assert!(harness.state().notice().is_none());
    screenshot(&mut harness, "capture-read-only.png");
}
