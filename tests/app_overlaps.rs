//! No widget is drawn over another: every tab of the app, with an encoder
//! (the test model) and with a decoder (the llama family fixture, whose
//! Steps and Logit lens tabs make the tab row longest), at 1280 × 720 and
//! 1600 × 1000, with the outline open and closed. Sibling controls in the
//! accessibility tree — the buttons, boxes and fields one layout placed
//! side by side — must not overlap where they show. (A row cut by the
//! outline is `tests/app_sizes.rs`'s to catch; a view's own columns drawn
//! over each other are not siblings: look at the pictures.) The windows
//! are rendered into `$CARGO_TARGET_TMPDIR/app_overlaps/` for a person to
//! look at.

mod common;

use common::app::*;
use egui::accesskit::Role;
use egui_kittest::kittest::NodeT;
use headscope::app::views::CentralView;
use std::path::PathBuf;

const SIZES: [egui::Vec2; 2] = [egui::vec2(1280.0, 720.0), egui::vec2(1600.0, 1000.0)];

/// The roles of the widgets a person clicks or types in.
fn is_control(role: Role) -> bool {
    matches!(
        role,
        Role::Button
            | Role::CheckBox
            | Role::RadioButton
            | Role::ComboBox
            | Role::TextInput
            | Role::MultilineTextInput
            | Role::SpinButton
            | Role::Slider
            | Role::Link
            | Role::Tab
    )
}

/// Every pair of sibling controls whose visible parts (within the window)
/// overlap by more than a hair. Only siblings are compared — the controls
/// one layout placed side by side — as what a scroll area has scrolled
/// away is laid out too, beyond what shows; text is left out, as egui
/// nests its rects.
fn layout_faults(harness: &AppHarness, size: egui::Vec2) -> Vec<String> {
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, size);
    let mut faults = Vec::new();
    let mut stack = vec![harness.root()];
    while let Some(node) = stack.pop() {
        let children: Vec<_> = node.children().collect();
        let controls: Vec<(String, egui::Rect)> = children
            .iter()
            .filter(|c| {
                is_control(c.accesskit_node().role()) && c.accesskit_node().bounding_box().is_some()
            })
            .filter_map(|c| {
                let visible = c.rect().intersect(window);
                (visible.width() > 0.5 && visible.height() > 0.5).then(|| {
                    let name = c.accesskit_node().label().unwrap_or_default();
                    (format!("{:?} “{name}”", c.accesskit_node().role()), visible)
                })
            })
            .collect();
        for (i, (a, ra)) in controls.iter().enumerate() {
            for (b, rb) in &controls[i + 1..] {
                let overlap = ra.intersect(*rb);
                if overlap.width() > 1.0 && overlap.height() > 1.0 {
                    faults.push(format!("{a} at {ra:?} overlaps {b} at {rb:?}"));
                }
            }
        }
        stack.extend(children);
    }
    faults
}

fn picture_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app_overlaps");
    std::fs::create_dir_all(&dir).expect("picture folder");
    dir.join(name)
}

fn check_every_tab(model: String, file: Option<PathBuf>, what: &str) {
    let mut all = Vec::new();
    for size in SIZES {
        for outline in [false, true] {
            let mut harness = start_sized_with_outline(model.clone(), file.clone(), size, outline);
            let causal = harness.state().shown_output().unwrap().input.tokens.causal;
            for view in CentralView::ALL {
                if !causal && matches!(view, CentralView::Steps | CentralView::LogitLens) {
                    continue;
                }
                open_tab(&mut harness, view);
                for _ in 0..3 {
                    harness.step();
                }
                let tag = format!(
                    "{what}-{}x{}{}-{}",
                    size.x,
                    size.y,
                    if outline { "-outline" } else { "" },
                    view.label()
                );
                let image = harness.render().expect("wgpu renders the window");
                image.save(picture_path(&format!("{tag}.png"))).unwrap();
                all.extend(
                    layout_faults(&harness, size)
                        .into_iter()
                        .map(|fault| format!("{tag}: {fault}")),
                );
            }
        }
    }
    assert!(all.is_empty(), "{} faults:\n{}", all.len(), all.join("\n"));
}

#[test]
fn no_widget_overlaps_another_with_an_encoder() {
    check_every_tab(model_arg(), None, "encoder");
}

#[test]
fn no_widget_overlaps_another_with_a_decoder() {
    check_every_tab(
        common::family_fixture("llama").display().to_string(),
        Some(common::fixture("families/llama.txt")),
        "decoder",
    );
}
