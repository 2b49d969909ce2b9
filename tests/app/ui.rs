//! The desktop app driven through its accessibility tree, with the real
//! test model (all-MiniLM-L6-v2, 6 layers × 12 heads) on the worker thread.
//!
//! Widgets are found by their labels ("Text to analyse", "L2 H5 …",
//! "Next window ▶"), clicked and typed into like a user would; waiting for
//! the model is a bounded loop of frames, never a fixed sleep. One test
//! renders the window through wgpu (Mesa's software Vulkan here) and checks
//! the picture; the others need no GPU.
//!
//! Needs the model that `scripts/fetch-test-model.sh` unpacks.

use crate::common;

use common::app::*;
use egui::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use headscope::app::shell::status_bar::WORKING_LABEL;
use headscope::app::text::editor::EDITOR_LABEL;
use headscope::app::{AppConfig, HeadscopeApp, StartOptions};
use headscope::captures::HeadId;
use std::time::Duration;

fn shown_tokens(harness: &AppHarness) -> Option<usize> {
    harness.state().shown_output().map(|o| o.analysis.tokens)
}

fn assert_grid_has_every_head(harness: &AppHarness, layers: usize, heads: usize) {
    for layer in 0..layers {
        for head in 0..heads {
            // The trailing space keeps "L0 H1 " from matching "L0 H10 …".
            let label = format!("L{layer} H{head} ");
            let node = harness.get_by_label_contains(&label);
            assert_eq!(node.accesskit_node().role(), Role::Button);
        }
    }
    let thumbnails = harness
        .query_all_by_role(Role::Button)
        .filter(|n| {
            n.accesskit_node()
                .label()
                .is_some_and(|l| l.starts_with('L') && l.contains(" H"))
        })
        .count();
    assert_eq!(thumbnails, layers * heads);
}

#[test]
fn typing_recomputes_and_the_grid_shows_every_head() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    assert_grid_has_every_head(&harness, 6, 12);
    harness.check_accessibility();
    let before = shown_tokens(&harness).expect("a result");
    assert!(
        harness.state().text().contains("lighthouse"),
        "the sample text is in the editor"
    );
    assert!(shows(&harness, &format!("{before} tokens")));

    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" The keeper smiled. The sailors waved again. ");
    harness.step();
    assert!(harness.state().text().contains("smiled. The sailors waved"));
    assert!(harness.state().is_working(), "an edit schedules a new run");
    step_until(&mut harness, "the result of the edited text", |h| {
        !h.state().is_working() && shown_tokens(h) != Some(before)
    });
    let after = shown_tokens(&harness).expect("a result");
    assert!(
        after > before,
        "{after} tokens after adding a sentence, {before} before"
    );
    let output = harness.state().shown_output().expect("a result").clone();
    assert!(output
        .input
        .tokens
        .token_texts
        .iter()
        .any(|t| t == "smiled"));
    assert_grid_has_every_head(&harness, 6, 12);

    assert_eq!(
        output.input.sentences_analysed, 9,
        "seven sample sentences and two typed"
    );

    // The input mode applies live: one sentence per line counts lines, and
    // the two typed sentences share one.
    let lines = harness
        .state()
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(lines < 9);
    harness.get_by_label("One sentence per line").click();
    step_until(&mut harness, "the result in line mode", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.input.sentences_analysed == lines)
    });
    harness.get_by_label("Document").click();
    step_until(&mut harness, "the result in document mode", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.input.sentences_analysed == 9)
    });

    // A setting applies live: top-k per row has no fixed k per head.
    harness.get_by_label("Top k per row").click();
    step_until(&mut harness, "the result under the new rule", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.analysis.selected_per_head.is_none())
    });

    // Emptying the text gives a clear message and keeps the last heatmaps.
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.key_press(egui::Key::Backspace);
    harness.step();
    assert_eq!(harness.state().text(), "");
    step_until(&mut harness, "the empty-text message", |h| {
        !h.state().is_working() && shows(h, "the text is empty")
    });
    assert!(
        harness.state().shown_output().is_some(),
        "the last result stays"
    );
    assert_grid_has_every_head(&harness, 6, 12);
}

#[test]
fn clicking_a_head_opens_its_detail_and_arrow_keys_step() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    harness.get_by_label_contains("L2 H5 ").click();
    step_until(&mut harness, "the detail view", |h| {
        h.state().detail_head() == Some(HeadId::new(2, 5))
    });
    assert!(harness.query_by_label("Layer 2 · Head 5").is_some());
    assert!(harness.query_by_label("heatmap of L2 H5").is_some());
    // The figures of ANALYSIS.md §4 beside it.
    for name in [
        "mean distance",
        "same-sentence fraction",
        "repetition fraction",
        "focus share",
    ] {
        assert!(
            harness.query_all_by_label(name).next().is_some(),
            "{name} is shown"
        );
    }
    assert!(harness.query_by_label("local fraction (w = 4)").is_some());
    // The head's role and role scores of ANALYSIS.md §9.
    let f = harness
        .state()
        .shown_output()
        .and_then(|output| output.analysis.head(HeadId::new(2, 5)).cloned())
        .expect("the head's figures");
    // Each beside its value-weighted twin (ANALYSIS.md §9).
    let score = |x: Option<f64>| x.map_or("—".into(), |x| format!("{x:.3}"));
    let twin = |plain: Option<f64>, weighted: Option<f64>| {
        format!("{} · N′ {}", score(plain), score(weighted))
    };
    let role = |r: Option<headscope::analysis::Role>| r.map_or("—".into(), |r| r.to_string());
    for (name, value) in [
        ("role", format!("{} · N′ {}", role(f.role), role(f.role_vw))),
        (
            "previous-token score",
            twin(f.previous_token_score, f.previous_token_score_vw),
        ),
        (
            "duplicate-token score",
            twin(f.duplicate_token_score, f.duplicate_token_score_vw),
        ),
        (
            "induction score",
            twin(f.induction_score, f.induction_score_vw),
        ),
        ("self score", twin(f.self_score, f.self_score_vw)),
    ] {
        assert!(
            harness.query_all_by_label(name).next().is_some(),
            "{name} is shown"
        );
        assert!(
            harness.query_all_by_label(&value).next().is_some(),
            "{name} shows {value}"
        );
    }
    harness.check_accessibility();

    harness.key_press(egui::Key::ArrowRight);
    harness.step();
    assert_eq!(harness.state().detail_head(), Some(HeadId::new(2, 6)));
    harness.key_press(egui::Key::ArrowDown);
    harness.step();
    assert_eq!(harness.state().detail_head(), Some(HeadId::new(3, 6)));
    harness.key_press(egui::Key::ArrowLeft);
    harness.key_press(egui::Key::ArrowUp);
    harness.step();
    harness.step();
    assert_eq!(harness.state().detail_head(), Some(HeadId::new(2, 5)));
    harness.step();
    assert!(harness.query_by_label("Layer 2 · Head 5").is_some());

    harness.get_by_label("Next head ▶").click();
    harness.step();
    assert_eq!(harness.state().detail_head(), Some(HeadId::new(2, 6)));
    harness.get_by_label("⬅ Overview").click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().detail_head(), None);
    assert_grid_has_every_head(&harness, 6, 12);
}

#[test]
fn opening_a_file_loads_it_and_sets_the_title() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("harbour.txt");
    let text = "The harbour was quiet before dawn. A fisherman untied his boat.\n";
    std::fs::write(&path, text).expect("write the file");

    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    harness.state_mut().open_file(&path);
    step_until(&mut harness, "the file's result", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.input.tokens.token_texts.iter().any(|t| t == "fisherman"))
    });
    assert_eq!(harness.state().text(), text);
    assert!(
        harness.state().window_title().contains("harbour.txt"),
        "title: {}",
        harness.state().window_title()
    );
    assert!(shows(&harness, "all 2 sentences"));

    // A binary file: a clear message, the text stays.
    let binary = dir.path().join("picture.png");
    std::fs::write(&binary, [0x89, b'P', b'N', b'G', 0, 0, 0, 13, 0, 1, 2, 3]).expect("write");
    harness.state_mut().open_file(&binary);
    step_until(&mut harness, "the binary-file message", |h| {
        h.state().notice().is_some()
    });
    assert!(shows(&harness, "is a binary file"));
    assert_eq!(harness.state().text(), text, "the editor text is kept");
    assert!(harness.state().window_title().contains("harbour.txt"));

    // A missing file, the same.
    harness
        .state_mut()
        .open_file(&dir.path().join("missing.txt"));
    step_until(&mut harness, "the missing-file message", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.contains("no such file"))
    });
    assert_eq!(harness.state().text(), text);

    // The command line's file is opened the same way.
    drop(harness);
    let mut harness = start(Some(path.clone()), None);
    step_until(&mut harness, "the command line's file", |h| {
        h.state().text() == text && h.state().shown_output().is_some() && !h.state().is_working()
    });
    assert!(harness.state().window_title().contains("harbour.txt"));
}

#[test]
fn a_slow_model_does_not_freeze_the_ui() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let old = shown_tokens(&harness).expect("a result");
    harness
        .state()
        .worker()
        .set_artificial_delay(Duration::from_secs(3600));

    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" Another sentence arrives slowly. ");
    // Frames keep coming while the model is busy: each step returns, the
    // working indicator shows, and the old result stays on screen.
    for _ in 0..40 {
        harness.step();
    }
    assert!(harness.state().is_working());
    assert!(
        harness.query_by_label(WORKING_LABEL).is_some(),
        "the working indicator shows"
    );
    assert_eq!(shown_tokens(&harness), Some(old), "the old result stays");
    assert_grid_has_every_head(&harness, 6, 12);
    // Its spinners ask for a few frames a second, not every frame: under a
    // software renderer each frame takes the cores the run needs.
    let next_frame = harness.output().viewport_output[&egui::ViewportId::ROOT].repaint_delay;
    assert!(
        next_frame >= Duration::from_millis(100),
        "the next frame is asked for in {next_frame:?}"
    );
    harness.get_by_label_contains("L0 H3 ").click();
    harness.step();
    harness.step();
    assert_eq!(
        harness.state().detail_head(),
        Some(HeadId::new(0, 3)),
        "the UI still answers clicks"
    );

    // Back to normal speed: the next edit supersedes the slow run.
    harness
        .state()
        .worker()
        .set_artificial_delay(Duration::ZERO);
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness.get_by_label(EDITOR_LABEL).type_text("Done. ");
    step_until(&mut harness, "the result after the slow run", |h| {
        !h.state().is_working() && shown_tokens(h) != Some(old)
    });
    assert!(harness.query_by_label(WORKING_LABEL).is_none());
}

#[test]
fn a_large_file_opens_in_sentence_windows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.txt");
    // About 10 MB of numbered sentences.
    let mut text = String::with_capacity(10_500_000);
    let mut n = 0;
    while text.len() < 10_000_000 {
        n += 1;
        text.push_str(&format!("Sentence {n} tells of the keeper and the lamp. "));
        if n % 8 == 0 {
            text.push('\n');
        }
    }
    std::fs::write(&path, &text).expect("write the file");

    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    harness.state_mut().open_file(&path);
    step_until(&mut harness, "the large file's first window", |h| {
        !h.state().is_working() && shows(h, "sentences 1–")
    });
    assert_eq!(harness.state().text().len(), text.len());
    let label = label_containing(&harness, "sentences 1–");
    assert!(label.ends_with(&format!("of {n}")), "window label: {label}");
    let analysed = harness
        .state()
        .shown_output()
        .expect("a result")
        .input
        .sentences_analysed;
    assert!(
        analysed > 5 && analysed < n,
        "{analysed} sentences fit the model"
    );
    // The editor holds a part of the text, not megabytes.
    let shown = harness
        .get_by_label(EDITOR_LABEL)
        .value()
        .unwrap_or_default();
    assert!(
        shown.starts_with("Sentence 1 tells"),
        "editor starts at the window"
    );
    assert!(
        shown.len() < 100_000,
        "the editor holds {} bytes",
        shown.len()
    );

    harness.get_by_label("Next window ▶").click();
    let next = format!("sentences {}–", analysed + 1);
    step_until(&mut harness, "the second window", |h| {
        !h.state().is_working() && shows(h, &next)
    });
    let shown = harness
        .get_by_label(EDITOR_LABEL)
        .value()
        .unwrap_or_default();
    assert!(
        shown.starts_with(&format!("Sentence {} tells", analysed + 1)),
        "the editor moved with the window: {}",
        &shown[..shown.len().min(60)]
    );
    harness.get_by_label("◀ Previous window").click();
    step_until(&mut harness, "the first window again", |h| {
        !h.state().is_working() && shows(h, "sentences 1–")
    });

    // A memory limit below what the window needs cuts it further, and the
    // panel says which limit cut it.
    let tokens_before = shown_tokens(&harness).unwrap();
    set_memory_limit(&mut harness, 64);
    step_until(&mut harness, "the window cut to the memory limit", |h| {
        !h.state().is_working() && shows(h, "memory limit of 64 MB")
    });
    let tokens = shown_tokens(&harness).unwrap();
    let bytes = |t: usize| 72 * (2 * t * t + 32 * t) * 4;
    assert!(
        tokens < tokens_before && bytes(tokens) <= 64 << 20,
        "{tokens}"
    );
}

#[test]
fn the_text_is_autosaved_and_restored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let autosave = dir.path().join("autosave.txt");
    let mut harness = start(None, Some(autosave.clone()));
    wait_for_result(&mut harness);
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text("Remember this line. ");
    harness.step();
    let edited = harness.state().text().to_string();
    assert!(edited.contains("Remember this line."));
    step_until(&mut harness, "the autosave", |_| {
        std::fs::read_to_string(&autosave).is_ok_and(|saved| saved == edited)
    });
    // A kill now loses nothing: a new app restores the text.
    drop(harness);
    let mut harness = start(None, Some(autosave.clone()));
    step_until(&mut harness, "the restored text", |h| {
        h.state().text() == edited
    });
    wait_for_result(&mut harness);
    let output = harness.state().shown_output().expect("a result").clone();
    assert!(output
        .input
        .tokens
        .token_texts
        .iter()
        .any(|t| t == "remember"));
}

#[test]
fn a_model_that_fails_to_load_is_explained_in_the_window() {
    let missing = std::env::temp_dir().join("headscope-test-no-such-model");
    let mut harness = start_with(Some(missing.display().to_string()), None, None);
    step_until(&mut harness, "the model panel", |h| {
        shows(h, "could not be loaded")
    });
    assert!(harness.query_by_label("Choose a model").is_some());
    assert!(harness.query_by_label("Open model folder…").is_some());
    assert!(shows(&harness, "does not exist"));
    // The editor stays usable without a model.
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness.get_by_label(EDITOR_LABEL).type_text("Still here. ");
    harness.step();
    assert!(harness.state().text().contains("Still here."));
    harness.check_accessibility();
}

#[test]
fn a_failed_load_keeps_the_working_model_named_and_analysing() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let name = "all-MiniLM-L6-v2";
    assert_eq!(harness.state().model_name(), Some(name));

    // A folder that looks like a model, with weights that are not.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken-model");
    std::fs::create_dir_all(&broken).unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(common::test_model().join(file), broken.join(file)).unwrap();
    }
    std::fs::write(broken.join("model.safetensors"), b"not a safetensors file").unwrap();

    // File → Choose model…, the folder typed where a model id goes, Load.
    common::app::open_model_panel(&mut harness);
    assert!(shows(&harness, &format!("Using {name}")));
    let field = "or a Hugging Face model id (downloaded once, then cached):";
    harness.get_by_label(field).focus();
    harness.step();
    harness
        .get_by_label(field)
        .type_text(&broken.display().to_string());
    harness.step();
    harness.get_by_label("Load").click();
    step_until(&mut harness, "the failed load", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.contains("could not be loaded"))
    });

    // The window says what happened and what to do, in the window.
    let notice = harness.state().notice().unwrap().to_string();
    assert!(notice.contains("model.safetensors"), "{notice}");
    assert!(notice.contains(&format!("Still using {name}")), "{notice}");
    assert!(notice.contains("Model window"), "{notice}");
    assert!(!notice.contains("--model"), "{notice}");
    assert!(shows(&harness, "Still using"), "the notice is on screen");
    // The previous model is still named, in the status bar and the panel.
    assert_eq!(harness.state().model_name(), Some(name));
    assert!(shows(&harness, &format!("{name} · 6 layers × 12 heads")));
    assert!(shows(&harness, &format!("Using {name}")));
    assert!(!shows(&harness, "model not loaded"));
    // (The picture, for a person to look at.)
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("app_ui-failed-load.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");

    // And a new analysis still runs on it.
    let before = harness
        .state()
        .shown_output()
        .expect("a result")
        .analysis
        .tokens;
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" The keeper smiled at the sea.");
    harness.step();
    step_until(&mut harness, "the result of the edited text", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.analysis.tokens != before)
    });
    let output = harness.state().shown_output().unwrap().clone();
    assert_eq!((output.captures.layers, output.captures.heads), (6, 12));
    assert!(output
        .input
        .tokens
        .token_texts
        .iter()
        .any(|t| t == "smiled"));
}

/// A 16×16 sample of the pixels of the thumbnail labelled `label`.
fn thumbnail_pixels(harness: &AppHarness, image: &image::RgbaImage, label: &str) -> Vec<[u8; 4]> {
    let rect = harness.get_by_label_contains(label).rect();
    let size = rect.width().min(rect.height());
    let mut pixels = Vec::new();
    for y in 0..16 {
        for x in 0..16 {
            let px = (rect.left() + (x as f32 + 0.5) * size / 16.0) as u32;
            let py = (rect.top() + (y as f32 + 0.5) * size / 16.0) as u32;
            pixels.push(image.get_pixel(px, py).0);
        }
    }
    pixels
}

fn distinct_colours(pixels: &[[u8; 4]]) -> usize {
    let mut pixels = pixels.to_vec();
    pixels.sort_unstable();
    pixels.dedup();
    pixels.len()
}

#[test]
fn the_window_renders_distinct_heatmaps() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    step_until(&mut harness, "the thumbnails", |h| {
        h.state().overview_is_current()
    });
    let image = harness.render().expect("wgpu renders the window");
    let similarity = thumbnail_pixels(&harness, &image, "L0 H0 ");
    let other_head = thumbnail_pixels(&harness, &image, "L5 H11 ");
    assert!(
        distinct_colours(&similarity) > 8,
        "a thumbnail shows a heatmap, not a flat colour"
    );
    assert_ne!(similarity, other_head, "different heads look different");

    // Switching to attention redraws the thumbnails.
    harness.get_by_label("Attention").click();
    harness.step();
    assert_eq!(
        harness.state().settings().matrix,
        headscope::app::settings::MatrixKind::Attention
    );
    step_until(&mut harness, "the attention thumbnails", |h| {
        h.state().overview_is_current()
    });
    let image = harness.render().expect("wgpu renders the window");
    let attention = thumbnail_pixels(&harness, &image, "L0 H0 ");
    assert!(distinct_colours(&attention) > 8);
    assert_ne!(
        similarity, attention,
        "the attention picture differs from the similarity one"
    );
}

/// eframe's storage, in memory.
#[derive(Default)]
struct MemoryStorage(std::collections::HashMap<String, String>);

impl eframe::Storage for MemoryStorage {
    fn get_string(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }

    fn set_string(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }

    fn remove_string(&mut self, key: &str) {
        self.0.remove(key);
    }

    fn flush(&mut self) {}
}

#[test]
fn settings_and_text_survive_a_restart() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    harness.get_by_label("Attention").click();
    harness.get_by_label("Top k per row").click();
    harness.step();
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness.get_by_label(EDITOR_LABEL).type_text("Persist me. ");
    harness.step();
    let text = harness.state().text().to_string();
    let settings = harness.state().settings().clone();
    assert_eq!(
        settings.matrix,
        headscope::app::settings::MatrixKind::Attention
    );
    assert_eq!(
        settings.rule,
        headscope::app::settings::SelectionRule::TopKPerRow
    );

    let mut storage = MemoryStorage::default();
    eframe::App::save(harness.state_mut(), &mut storage);
    drop(harness);

    let storage: &'static MemoryStorage = Box::leak(Box::new(storage));
    let config = AppConfig {
        start: StartOptions {
            model: Some(model_arg()),
            file: None,
        },
        autosave_path: None,
        restore_text: true,
    };
    let mut harness = Harness::builder()
        .with_size(WINDOW)
        .build_eframe(move |cc| {
            cc.storage = Some(storage);
            HeadscopeApp::new(cc, config).expect("the app starts")
        });
    assert_eq!(harness.state().text(), text);
    assert_eq!(harness.state().settings(), &settings);
    wait_for_result(&mut harness);
    let output = harness.state().shown_output().expect("a result").clone();
    assert_eq!(
        output.analysis.selected_per_head, None,
        "top-k per row is in use"
    );
    assert!(output
        .input
        .tokens
        .token_texts
        .iter()
        .any(|t| t == "persist"));
}

/// The row index in the heatmap's read-out ("token 27 “the” · …").
fn readout_row(harness: &AppHarness) -> usize {
    let text = label_containing(harness, "· value");
    text.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no cell read-out: {text:?}"))
}

#[test]
fn the_large_heatmap_zooms_and_pans() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    harness.get_by_label_contains("L0 H0 ").click();
    step_until(&mut harness, "the detail view", |h| {
        h.state().detail_head().is_some()
    });
    let tokens = shown_tokens(&harness).expect("a result");
    let plot = harness.get_by_label("heatmap of L0 H0").rect();
    let at = |fraction: f32| plot.min + plot.size() * fraction;

    harness.hover_at(at(0.75));
    harness.step();
    let fitted = readout_row(&harness);
    assert_eq!(
        fitted,
        (0.75 * tokens as f32) as usize,
        "fitted: every token is shown"
    );

    // Zoom in with the wheel, about a point in the upper left.
    harness.hover_at(at(0.25));
    harness.event(egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, 240.0),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Unknown,
        modifiers: egui::Modifiers::NONE,
    });
    for _ in 0..8 {
        harness.step();
    }
    harness.hover_at(at(0.75));
    harness.step();
    let zoomed = readout_row(&harness);
    assert!(
        zoomed < fitted,
        "zoomed in, the same spot shows an earlier token ({zoomed} vs {fitted})"
    );

    // Drag the picture to the left and up: later tokens come into view.
    harness.drag_at(at(0.75));
    harness.step();
    harness.hover_at(at(0.25));
    harness.step();
    harness.drop_at(at(0.25));
    harness.step();
    harness.hover_at(at(0.75));
    harness.step();
    let panned = readout_row(&harness);
    assert!(panned > zoomed, "panned: {panned} after {zoomed}");

    // "Fit" shows the whole matrix again.
    harness.get_by_label("Fit").click();
    harness.step();
    harness.hover_at(at(0.75));
    harness.step();
    assert_eq!(readout_row(&harness), fitted);
}

#[test]
fn an_edited_text_is_saved_as_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("harbour.txt");
    let text = "The harbour was quiet before dawn.\n";
    std::fs::write(&path, text).expect("write the file");
    let mut harness = start(Some(path.clone()), None);
    step_until(&mut harness, "the file", |h| h.state().text() == text);

    harness.get_by_label(EDITOR_LABEL).click();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::End);
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text("A gull cried.");
    harness.step();
    let edited = harness.state().text().to_string();
    assert!(edited.ends_with("A gull cried."), "{edited:?}");

    let copy = dir.path().join("edited.txt");
    harness.state_mut().save_text_to(&copy);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), edited);
    assert!(harness
        .state()
        .notice()
        .unwrap()
        .starts_with("Saved the text"));
    harness.step();
    assert!(harness.state().window_title().contains("edited.txt"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "the original is untouched"
    );

    // A folder that does not exist: the error is shown, the text is kept.
    harness
        .state_mut()
        .save_text_to(&dir.path().join("missing").join("x.txt"));
    harness.step();
    let notice = harness.state().notice().unwrap().to_string();
    assert!(notice.starts_with("Saving the text failed"), "{notice}");
    assert!(shows(&harness, &notice));
    assert_eq!(harness.state().text(), edited);
}

#[test]
fn unsaved_edits_are_marked_saved_with_ctrl_s_and_kept_when_another_file_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("gulls.txt");
    let text = "The harbour was quiet before dawn.\n";
    std::fs::write(&path, text).expect("write the file");
    let mut harness = start(Some(path.clone()), None);
    step_until(&mut harness, "the file", |h| h.state().text() == text);
    harness.step();
    let title = harness.state().window_title().to_string();
    assert!(
        title.contains("gulls.txt") && !title.contains('•'),
        "{title}"
    );

    // An edit: the title and the editor's heading mark it.
    harness.get_by_label(EDITOR_LABEL).click();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::End);
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text("A gull cried.");
    harness.step();
    harness.step();
    let title = harness.state().window_title().to_string();
    assert!(title.contains("• gulls.txt"), "{title}");
    assert!(harness.query_by_label_contains("unsaved edits").is_some());

    // Ctrl+S writes it to its file; the mark goes.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::S);
    harness.step();
    harness.step();
    let edited = harness.state().text().to_string();
    assert!(edited.ends_with("A gull cried."), "{edited:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    let title = harness.state().window_title().to_string();
    assert!(!title.contains('•'), "{title}");

    // Edited again, then another file opened: the edits are kept in a
    // file the notice names.
    harness.get_by_label(EDITOR_LABEL).click();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::End);
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" Then another.");
    harness.step();
    let unsaved = harness.state().text().to_string();
    let other = dir.path().join("other.txt");
    std::fs::write(&other, "Another text altogether.\n").unwrap();
    harness.state_mut().open_file(&other);
    step_until(&mut harness, "the other file", |h| {
        h.state().text().starts_with("Another text")
    });
    let notice = harness.state().notice().expect("a notice").to_string();
    let kept = notice
        .split(" are kept in ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix('.'))
        .unwrap_or_else(|| panic!("{notice}"));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), unsaved);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("unsaved-kept.png");
    harness.render().unwrap().save(&picture).unwrap();
}
