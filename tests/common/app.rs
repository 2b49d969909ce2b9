//! The desktop app under egui_kittest, shared by the `tests/app_*.rs`
//! files: start it on a model in a 1600 × 1000 window with no persisted
//! state, run frames until something holds (a bounded loop, never a fixed
//! sleep), and find widgets by their labels as a screen reader would.

use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use headscope::app::{AppConfig, HeadscopeApp, StartOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A bound for waiting on the model, not a speed requirement.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// The window size of every app test: the app's own default.
pub const WINDOW: egui::Vec2 = egui::vec2(1600.0, 1000.0);

pub type AppHarness = Harness<'static, HeadscopeApp>;

/// The test model's folder as the command line would name it.
pub use super::model_arg;

/// The app on `model`, showing `file` when given (else the sample text),
/// with no persisted state; the text is autosaved to `autosave` (and
/// restored from it) only when that is given.
pub fn start_with(
    model: Option<String>,
    file: Option<PathBuf>,
    autosave: Option<PathBuf>,
) -> AppHarness {
    let restore_text = autosave.is_some();
    start_config(AppConfig {
        start: StartOptions { model, file },
        autosave_path: autosave,
        restore_text,
    })
}

/// The app on the test model (see [`start_with`]).
pub fn start(file: Option<PathBuf>, autosave: Option<PathBuf>) -> AppHarness {
    start_with(Some(model_arg()), file, autosave)
}

/// The app on the model folder `model`, with the sample text, once its
/// first result is on screen.
pub fn start_on_model(model: &Path) -> AppHarness {
    let mut harness = start_with(Some(model.display().to_string()), None, None);
    wait_for_result(&mut harness);
    harness
}

/// The app with `config`, in a [`WINDOW`]-sized window.
pub fn start_config(config: AppConfig) -> AppHarness {
    start_sized(config, WINDOW)
}

/// The app with `config`, drawing the characters its fonts lack as boxes
/// instead of failing: for text no test chooses (model names from the
/// hub's cache, the induction probe's random tokens, CJK pieces among
/// them).
pub fn start_allowing_missing_glyphs(config: AppConfig) -> AppHarness {
    Harness::builder()
        .with_size(WINDOW)
        .allow_missing_glyphs()
        .build_eframe(move |cc| HeadscopeApp::new(cc, config).expect("the app starts"))
}

/// The app with `config`, in a window of `size`.
pub fn start_sized(config: AppConfig, size: egui::Vec2) -> AppHarness {
    Harness::builder()
        .with_size(size)
        .build_eframe(move |cc| HeadscopeApp::new(cc, config).expect("the app starts"))
}

/// The app on `model` showing `file` in a window of `size`, its first
/// result on screen, with the outline (Ctrl+F) open where `outline`.
pub fn start_sized_with_outline(
    model: String,
    file: Option<PathBuf>,
    size: egui::Vec2,
    outline: bool,
) -> AppHarness {
    let config = AppConfig {
        start: StartOptions {
            model: Some(model),
            file,
        },
        autosave_path: None,
        restore_text: false,
    };
    let mut harness = start_sized(config, size);
    wait_for_result(&mut harness);
    if outline {
        harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::F);
        step_until(&mut harness, "the outline", |h| {
            h.state().outline_panel().windows().is_some()
        });
    }
    harness
}

/// Runs frames until `done` holds; panics with `what` after [`PATIENCE`].
pub fn step_until(harness: &mut AppHarness, what: &str, mut done: impl FnMut(&AppHarness) -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done(harness) {
        if Instant::now() >= deadline {
            // What the window showed, for the person reading the failure.
            save_window(harness, "timed-out.png");
            panic!(
                "timed out waiting for {what} (the window: timed-out.png in CARGO_TARGET_TMPDIR)"
            );
        }
        harness.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    // One more frame so the UI shows what the state now holds.
    harness.step();
}

/// Renders the window (through Mesa) into the tests' scratch folder as
/// `name`, for a person to look at.
pub fn save_window(harness: &mut AppHarness, name: &str) {
    let picture = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");
}

/// Waits until a result is on screen and no run is owed.
pub fn wait_for_result(harness: &mut AppHarness) {
    step_until(harness, "a result", |h| {
        h.state().shown_output().is_some() && !h.state().is_working()
    });
}

/// Whether some widget's label contains `text` (several may: the status bar
/// repeats what the panels say).
pub fn shows(harness: &AppHarness, text: &str) -> bool {
    harness.query_all_by_label_contains(text).next().is_some()
}

/// Opens File → Choose model…, the model panel.
pub fn open_model_panel(harness: &mut AppHarness) {
    harness.get_by_label("File").click();
    harness.step();
    harness.step();
    harness.get_by_label("Choose model…").click();
    harness.step();
    harness.step();
}

/// The model panel names the loaded model's family: "(GPT-2)".
pub fn assert_model_panel_names(harness: &mut AppHarness, family: headscope::model::Family) {
    open_model_panel(harness);
    let loaded = format!("({})", family.display_name());
    assert!(shows(harness, &loaded), "the model panel lacks {loaded}");
}

/// The label (or a plain label's text) of a node.
pub fn text_of(node: &egui_kittest::Node<'_>) -> String {
    let node = node.accesskit_node();
    node.label().or_else(|| node.value()).unwrap_or_default()
}

/// The first label containing `text`.
pub fn label_containing(harness: &AppHarness, text: &str) -> String {
    harness
        .get_all_by_label_contains(text)
        .next()
        .map(|n| text_of(&n))
        .unwrap_or_default()
}

/// Writes a random BERT of `layers` × `heads` (hidden size 8 per head) with
/// the test model's tokenizer into `dir`: a deep model for layout tests,
/// small enough to run in moments.
pub fn write_random_model(dir: &Path, layers: usize, heads: usize) {
    use headscope::model::{random, ModelConfig};
    let config = ModelConfig {
        hidden_size: 8 * heads,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        intermediate_size: 16 * heads,
        ..ModelConfig::all_minilm_l6_v2()
    };
    let tokenizer = super::test_model().join("tokenizer.json");
    random::write_random_model(&config, &tokenizer, dir, 11, random::NameStyle::default())
        .expect("write the random model");
}

/// The app on the family fixture `name` (tests/fixtures/families/),
/// showing its text, with no persisted state.
pub fn start_on_family(name: &str) -> AppHarness {
    start_config(AppConfig {
        start: StartOptions {
            model: Some(super::family_fixture(name).display().to_string()),
            file: Some(super::fixture(&format!("families/{name}.txt"))),
        },
        autosave_path: None,
        restore_text: false,
    })
}

/// Clicks the tab of `view` and waits until it shows.
pub fn open_tab(harness: &mut AppHarness, view: headscope::app::views::CentralView) {
    harness
        .get_by(|n| n.role() == egui::Role::Button && n.label().as_deref() == Some(view.label()))
        .click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), view);
}

/// Types `mb` into the settings' Memory limit field.
pub fn set_memory_limit(harness: &mut AppHarness, mb: u64) {
    use headscope::app::settings::MEMORY_LIMIT_LABEL;
    type_number(harness, MEMORY_LIMIT_LABEL, &mb.to_string());
    assert_eq!(harness.state().settings().capture_memory_mb, mb);
}

/// Replaces the number in the field labelled `label` (a drag value) with
/// `number`, as a user types it.
pub fn type_number(harness: &mut AppHarness, label: &str, number: &str) {
    let field = harness
        .query_all_by_label(label)
        .find(|n| n.accesskit_node().role() == egui::Role::SpinButton)
        .unwrap_or_else(|| panic!("the field {label}"));
    field.click();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness
        .query_all_by_label(label)
        .find(|n| n.accesskit_node().role() != egui::Role::Label)
        .unwrap_or_else(|| panic!("the field {label}"))
        .type_text(number);
    harness.key_press(egui::Key::Enter);
    harness.step();
}

/// Types `path` into Compare's model B field (replacing what an earlier
/// attempt left there) and presses Load.
pub fn load_model_b(harness: &mut AppHarness, path: &str) {
    fn id_field(n: &egui_kittest::kittest::AccessKitNode<'_>) -> bool {
        n.role() == egui::accesskit::Role::TextInput
            && n.label()
                .is_some_and(|l| l.contains("Hugging Face model id"))
    }
    harness.get_by(id_field).focus();
    harness.step();
    // Replace what an earlier attempt left in the field.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness.step();
    harness.get_by(id_field).type_text(path);
    harness.step();
    harness
        .get_by(|n| {
            n.role() == egui::accesskit::Role::Button && n.label().as_deref() == Some("Load")
        })
        .click();
    harness.step();
}
