//! No widget is drawn over another: every tab of the app, with an encoder
//! (the test model) and with a decoder (the llama family fixture, whose
//! Steps and Logit lens tabs make the tab row longest), at 1280 × 720 and
//! 1600 × 1000, with the outline open and closed. Siblings in the
//! accessibility tree — the widgets one layout placed side by side — must
//! not overlap, and none may lie outside the window. The check reads the
//! rects egui reports, which are clipped to what shows, so a widget
//! scrolled out of view or hidden under a panel is caught by its siblings
//! or the window, not by its pixels. The windows are rendered into
//! `$CARGO_TARGET_TMPDIR/app_overlaps/` for a person to look at.

mod common;

use common::app::*;
use egui::accesskit::Role;
use egui_kittest::kittest::NodeT;
use headscope::app::views::CentralView;
use headscope::app::{AppConfig, StartOptions};
use std::path::PathBuf;

const SIZES: [egui::Vec2; 2] = [egui::vec2(1280.0, 720.0), egui::vec2(1600.0, 1000.0)];

/// The roles of the widgets a person reads or clicks.
fn is_widget(role: Role) -> bool {
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
            | Role::Label
            | Role::ProgressIndicator
            | Role::Link
            | Role::Tab
    )
}

/// Every pair of sibling widgets that overlap by more than a hair, and
/// every widget outside the window.
fn layout_faults(harness: &AppHarness, size: egui::Vec2) -> Vec<String> {
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, size).expand(0.5);
    let mut faults = Vec::new();
    let mut stack = vec![harness.root()];
    while let Some(node) = stack.pop() {
        let children: Vec<_> = node.children().collect();
        let widgets: Vec<(String, egui::Rect)> = children
            .iter()
            .filter(|c| is_widget(c.accesskit_node().role()))
            .filter_map(|c| {
                let rect = c.rect();
                // A widget clipped away entirely reports an empty rect.
                (rect.width() > 0.5 && rect.height() > 0.5).then(|| {
                    let name = c.accesskit_node().label().unwrap_or_default();
                    (format!("{:?} “{name}”", c.accesskit_node().role()), rect)
                })
            })
            .collect();
        for (i, (a, ra)) in widgets.iter().enumerate() {
            if !window.contains_rect(*ra) {
                faults.push(format!("{a} at {ra:?} leaves the window"));
            }
            for (b, rb) in &widgets[i + 1..] {
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
            let config = AppConfig {
                start: StartOptions {
                    model: Some(model.clone()),
                    file: file.clone(),
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
