//! The Model window lists the models on this computer — a Hugging Face
//! cache, an Ollama store and an LM Studio folder built under a temporary
//! home — with family, size and precision, greys the one headscope cannot
//! open, and opens one on a click (a GGUF file from Ollama's store).

mod common;

use common::app::*;
use common::stores;
use egui_kittest::kittest::{NodeT, Queryable};

#[test]
fn the_model_window_lists_the_models_on_this_computer_and_opens_one() {
    // Everything that reads the real cache, before the home moves.
    let model = model_arg();
    let cache = headscope::model::cache_dir();
    let home = tempfile::tempdir().unwrap();
    stores::build(home.path());
    std::env::set_var("HEADSCOPE_CACHE", &cache);
    std::env::set_var("HOME", home.path());
    std::env::set_var("HEADSCOPE_FILE_DIALOG", "in-app");
    for var in ["HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"] {
        std::env::remove_var(var);
    }

    // (Model names from the hub's cache may hold characters egui's fonts
    // lack; the window draws them as boxes and must not fail on them.)
    let config = headscope::app::AppConfig {
        start: headscope::app::StartOptions {
            model: Some(model),
            file: None,
        },
        autosave_path: None,
        restore_text: false,
    };
    let mut harness = start_allowing_missing_glyphs(config);
    wait_for_result(&mut harness);
    harness.get_by_label("File").click();
    harness.step();
    harness.step();
    harness.get_by_label("Choose model…").click();
    step_until(&mut harness, "the models found", |h| {
        shows(h, "smollm2:135m") && shows(h, "sentence-transformers/all-MiniLM-L6-v2")
    });
    for text in [
        "tiny-models/Qwen2-Tiny-GGUF/qwen2-tiny-Q8_0.gguf",
        "135M parameters, 98.4 MB",
        "Q4_1",
        "Ollama",
        "LM Studio",
        "Hugging Face cache",
        "22.7M parameters",
        "float32",
    ] {
        assert!(shows(&harness, text), "the list lacks {text}");
    }
    // The model headscope cannot open is listed, greyed (disabled).
    save_picture(&mut harness, "model-window.png");
    let mamba = harness.get_by_label("state-spaces/mamba-130m-hf");
    assert!(mamba.accesskit_node().is_disabled());
    mamba.hover();
    step_until(&mut harness, "the reason on hover", |h| {
        shows(h, "headscope cannot open state-spaces/mamba-130m-hf: ")
    });
    assert!(label_containing(&harness, "headscope cannot open").contains("mamba"));

    save_picture(&mut harness, "model-window-reason.png");

    harness.get_by_label("smollm2:135m").click();
    step_until(&mut harness, "the GGUF model from Ollama's store", |h| {
        h.state()
            .model_name()
            .is_some_and(|name| name.starts_with("Smollm2 135M"))
    });
    wait_for_result(&mut harness);
    let output = harness.state().shown_output().unwrap();
    assert_eq!((output.captures.layers, output.captures.heads), (30, 9));

    // File → Open GGUF file… asks for a file (the window's own dialog here).
    harness.get_by_label("File").click();
    step_until(&mut harness, "the File menu", |h| {
        h.query_by_label("Open GGUF file…").is_some()
    });
    harness.get_by_label("Open GGUF file…").click();
    step_until(&mut harness, "the GGUF dialog", |h| {
        shows(h, "Open a model: GGUF or capture file")
    });
    save_picture(&mut harness, "gguf-dialog.png");
}

/// Saves the window as `name` in the tests' target folder.
fn save_picture(harness: &mut AppHarness, name: &str) {
    let image = harness.render().expect("wgpu renders the window");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    image.save(&path).expect("save the picture");
    eprintln!("picture: {}", path.display());
}
