//! The window at the sizes researchers use, 1280 × 720 and the app's own
//! 1600 × 1000, with an error banner showing: nothing cut, everything
//! reachable, every tab with a scroll position of its own; the Compare tab
//! fitting its plots and grids; Open and Export working through the
//! window's own file dialog on a desktop without one.
//!
//! The windows are rendered (wgpu, Mesa's software Vulkan here) into
//! `$CARGO_TARGET_TMPDIR/app_sizes/` for a person to look at.

use crate::common;

use common::app::*;
use egui_kittest::kittest::{NodeT, Queryable};
use headscope::app::views::CentralView;
use headscope::app::{AppConfig, StartOptions};
use headscope::model::ModelSource;
use std::path::PathBuf;

const SIZES: [egui::Vec2; 2] = [egui::vec2(1280.0, 720.0), egui::vec2(1600.0, 1000.0)];

fn picture_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app_sizes");
    std::fs::create_dir_all(&dir).expect("picture folder");
    dir.join(name)
}

fn save_picture(harness: &mut AppHarness, name: &str) {
    let image = harness.render().expect("wgpu renders the window");
    image.save(picture_path(name)).expect("save the picture");
}

/// The app on the test model in a window of `size`, showing `file`.
fn start_at(size: egui::Vec2, file: Option<PathBuf>) -> AppHarness {
    let config = AppConfig {
        start: StartOptions {
            model: Some(model_arg()),
            file,
        },
        autosave_path: None,
        restore_text: false,
    };
    let mut harness = start_sized(config, size);
    wait_for_result(&mut harness);
    harness
}

/// The banner of a model that could not be loaded.
fn show_banner(harness: &mut AppHarness) {
    harness
        .state_mut()
        .load_model(ModelSource::Folder(PathBuf::from("/nonexistent/model")));
    step_until(harness, "the banner", |h| h.state().notice().is_some());
    // (The Model window opens to say why; it is closed to see the rest.)
    if let Some(close) = harness.query_by_label("Close window") {
        close.click();
        harness.step();
    }
}

/// The rect of the widget labelled `label`, scrolled into view.
fn scrolled_to(harness: &mut AppHarness, label: &str) -> egui::Rect {
    harness.get_by_label_contains(label).scroll_to_me();
    for _ in 0..3 {
        harness.step();
    }
    harness.get_by_label_contains(label).rect()
}

/// Whether the central area drew nothing past its right edge.
fn assert_nothing_cut(harness: &AppHarness, what: &str) {
    let overflow = harness.state().central_overflow();
    assert!(
        overflow < 0.5,
        "{what}: the central area is {overflow} points too wide"
    );
}

fn assert_inside(rect: egui::Rect, size: egui::Vec2, what: &str) {
    let window = egui::Rect::from_min_size(egui::Pos2::ZERO, size);
    assert!(
        window.expand(0.5).contains_rect(rect),
        "{what} at {rect:?} is cut by the {}×{} window",
        size.x,
        size.y
    );
}

#[test]
fn with_a_banner_nothing_is_cut_at_either_size() {
    for size in SIZES {
        let tag = format!("{}x{}", size.x, size.y);
        let mut harness = start_at(size, None);
        show_banner(&mut harness);
        step_until(&mut harness, "the thumbnails", |h| {
            h.state().overview_is_current()
        });
        save_picture(&mut harness, &format!("{tag}-heads.png"));
        // The banner's ×, and the grid's last column, stay in the window:
        // the banner does not widen the central panel. (A widget's rect is
        // clipped to what shows: the last thumbnail is as wide as the
        // first when it is not cut.)
        assert_nothing_cut(&harness, &format!("{tag} Heads"));
        let dismiss = harness.get_by_label("×").rect();
        assert_inside(dismiss, size, "the banner's ×");
        assert!(dismiss.width() >= 10.0, "the × is cut: {dismiss:?}");
        let first_column = harness.get_by_label_contains("L0 H0 ").rect();
        let last_column = harness.get_by_label_contains("L0 H11 ").rect();
        assert_inside(last_column, size, "L0 H11");
        assert!(
            (last_column.width() - first_column.width()).abs() < 1.0,
            "L0 H11 is cut: {last_column:?}, L0 H0 {first_column:?}"
        );
        assert_inside(scrolled_to(&mut harness, "L5 H11 "), size, "L5 H11");
        assert_inside(
            scrolled_to(&mut harness, "Categories, from each head"),
            size,
            "the category legend",
        );

        // The Layers table's rows end inside the window (its last column
        // shown, not scrolled to).
        open_tab(&mut harness, CentralView::Layers);
        let heading = harness.get_by_label("Inter-layer comparison").rect();
        let row = scrolled_to(&mut harness, "L5: mean distance");
        save_picture(&mut harness, &format!("{tag}-layers-table.png"));
        assert_nothing_cut(&harness, &format!("{tag} Layers"));
        assert_inside(row, size, "the Layers table's L5 row");
        // Reached without scrolling sideways: the whole row fits.
        let heading_now = harness.get_by_label("Inter-layer comparison").rect();
        assert!(
            (heading_now.left() - heading.left()).abs() < 1.0,
            "the Layers view scrolled sideways to show its table"
        );
        for view in [
            CentralView::Separators,
            CentralView::TokenFocus,
            CentralView::Specialisation,
        ] {
            open_tab(&mut harness, view);
            save_picture(&mut harness, &format!("{tag}-{}.png", view.label()));
            assert_nothing_cut(&harness, &format!("{tag} {}", view.label()));
            let tab = harness
                .get_by(|n| {
                    n.role() == egui::Role::Button && n.label().as_deref() == Some(view.label())
                })
                .rect();
            assert_inside(tab, size, view.label());
        }
        // Dismissed, the banner is gone.
        harness.get_by_label("×").click();
        harness.step();
        assert!(harness.state().notice().is_none());
    }
}

/// The rects of the tab row's tabs and of what shares their row: the
/// pick hint, "updating…".
fn tab_row_rects(harness: &AppHarness) -> Vec<(String, egui::Rect)> {
    let mut rects: Vec<(String, egui::Rect)> = CentralView::ALL
        .iter()
        .filter_map(|view| {
            harness
                .query_by(|n| {
                    n.role() == egui::Role::Button && n.label().as_deref() == Some(view.label())
                })
                .map(|node| (view.label().to_string(), node.rect()))
        })
        .collect();
    for text in ["Click tokens to pick them", "updating…"] {
        for node in harness.query_all_by_label_contains(text) {
            rects.push((text.to_string(), node.rect()));
        }
    }
    rects
}

/// A decoder's eight tabs, the pick hint and the spinner's note never
/// overlap, at 1280 × 720 and, with the outline open, at 1600 × 1000:
/// the hint moves below the tabs where the row is too narrow for it.
#[test]
fn a_decoders_tabs_and_the_pick_hint_never_overlap() {
    for (size, outline) in [(SIZES[0], false), (SIZES[1], true), (SIZES[0], true)] {
        let tag = format!(
            "{}x{}{}",
            size.x,
            size.y,
            if outline { "-outline" } else { "" }
        );
        let mut harness = start_sized_with_outline(
            common::family_fixture("llama").display().to_string(),
            Some(common::fixture("families/llama.txt")),
            size,
            outline,
        );
        save_picture(&mut harness, &format!("{tag}-decoder-tabs.png"));
        // The grid's last column and the colour bar are not under the
        // outline either.
        let right = if outline {
            harness.get_by_label("Outline").rect().left()
        } else {
            size.x
        };
        for label in ["L0 H3 ", "colour bar "] {
            let rect = harness.get_by_label_contains(label).rect();
            assert!(
                rect.right() <= right + 0.5 && rect.width() > 10.0,
                "{tag}: {label} at {rect:?} is cut"
            );
        }
        open_tab(&mut harness, CentralView::LogitLens);
        harness.step();
        save_picture(&mut harness, &format!("{tag}-decoder-logit-lens.png"));
        let rects = tab_row_rects(&harness);
        assert!(
            rects.iter().any(|(name, _)| name == "Logit lens")
                && rects
                    .iter()
                    .any(|(name, _)| name.starts_with("Click tokens")),
            "{tag}: {rects:?}"
        );
        assert_nothing_cut(&harness, &format!("{tag} decoder tabs"));
        // Beside the outline, not under it.
        for (i, (a, ra)) in rects.iter().enumerate() {
            assert_inside(*ra, size, &format!("{tag} {a}"));
            assert!(
                ra.right() <= right + 0.5,
                "{tag}: {a} at {ra:?} is under the outline"
            );
            for (b, rb) in &rects[i + 1..] {
                let overlap = ra.intersect(*rb);
                assert!(
                    overlap.width() <= 0.5 || overlap.height() <= 0.5,
                    "{tag}: {a} at {ra:?} overlaps {b} at {rb:?}"
                );
            }
        }
    }
}

#[test]
fn every_tab_keeps_its_own_scroll_position() {
    let size = SIZES[0];
    let mut harness = start_at(size, None);
    open_tab(&mut harness, CentralView::Layers);
    let top = harness.get_by_label("Inter-layer comparison").rect();
    let grid = scrolled_to(&mut harness, "layer correlation grid");
    assert_inside(grid, size, "the correlation grid");
    let scrolled = harness.get_by_label("Inter-layer comparison").rect();
    assert!(
        scrolled.top() < top.top() - 100.0,
        "the Layers view scrolled"
    );

    // The Separators view opens at its own top, not the Layers offset.
    open_tab(&mut harness, CentralView::Separators);
    let tab = harness
        .get_by(|n| n.role() == egui::Role::Button && n.label().as_deref() == Some("Separators"))
        .rect();
    let title = harness.get_by_label("Separator attention per head").rect();
    assert_inside(title, size, "the Separators view's first title");
    assert!(title.top() < tab.bottom() + 120.0, "{title:?}");

    // Back in Layers, the grid is where it was left.
    open_tab(&mut harness, CentralView::Layers);
    harness.step();
    let again = harness
        .get_by_label_contains("layer correlation grid")
        .rect();
    assert!(
        (again.top() - grid.top()).abs() < 2.0,
        "{again:?} vs {grid:?}"
    );
}

#[test]
fn compare_fits_the_window_and_names_the_models_it_shows() {
    let size = SIZES[0];
    let mut harness = start_at(size, None);
    open_tab(&mut harness, CentralView::Compare);
    // Before B is chosen: what to do, not "no model is loaded".
    assert!(shows(&harness, "Load a second model (B)"));
    assert!(!shows(&harness, "No model is loaded"));
    assert!(!shows(&harness, "BERT-like encoder"));

    // B: a 12 × 12 model beside A's 6 × 12.
    let dir = tempfile::tempdir().expect("temp dir");
    let deep = dir.path().join("deep");
    write_random_model(&deep, 12, 12);
    harness
        .state_mut()
        .load_comparison_model(ModelSource::Folder(deep));
    step_until(&mut harness, "the comparison", |h| {
        let compare = h.state().compare_view();
        compare.shown().is_some() && !compare.is_working()
    });
    save_picture(&mut harness, "compare-grids.png");
    assert_nothing_cut(&harness, "Compare");
    assert!(shows(&harness, "B: deep (12 × 12)"));
    assert_inside(
        scrolled_to(&mut harness, "B L11 H11 "),
        size,
        "B's last head",
    );
    // Every per-layer plot's title is inside the window: the rows of
    // plots fit its width.
    harness
        .get_by_label_contains("Per-layer figures of both models")
        .scroll_to_me();
    for _ in 0..3 {
        harness.step();
    }
    save_picture(&mut harness, "compare-curves.png");
    for title in [
        "mean distance j − i",
        "separator attention",
        "focus uniqueness",
    ] {
        for node in harness.query_all_by_label(title) {
            let rect = node.rect();
            assert!(rect.right() <= size.x, "{title} ends at {}", rect.right());
        }
    }
    assert_inside(scrolled_to(&mut harness, "CKA grid"), size, "the CKA grid");
    save_picture(&mut harness, "compare-cka.png");

    // While another B loads (slowly), the header names the B whose
    // comparison is on screen.
    harness
        .state()
        .worker()
        .set_artificial_delay(std::time::Duration::from_millis(400));
    let other = dir.path().join("other");
    write_random_model(&other, 2, 4);
    harness
        .state_mut()
        .load_comparison_model(ModelSource::Folder(other));
    step_until(&mut harness, "model B reloaded", |h| {
        h.state().compare_view().model_b() == Some("other")
    });
    if harness.state().compare_view().is_working() {
        assert!(
            shows(&harness, "B: deep (12 × 12)"),
            "the header moved on early"
        );
    }
    harness
        .state()
        .worker()
        .set_artificial_delay(std::time::Duration::ZERO);
    step_until(&mut harness, "the new comparison", |h| {
        let compare = h.state().compare_view();
        !compare.is_working() && compare.shown().is_some_and(|c| c.b_name == "other")
    });
    assert!(shows(&harness, "B: other (2 × 4)"));
}

#[test]
fn without_a_desktop_dialog_open_and_export_happen_in_the_window() {
    headscope::app::files::dialogs::use_in_app_dialogs();
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("first.txt");
    let second = dir.path().join("second.txt");
    std::fs::write(&first, "The first text. It has two sentences.").unwrap();
    std::fs::write(&second, "The second text is here. It replaces the first.").unwrap();
    let size = SIZES[0];
    let config = AppConfig {
        start: StartOptions {
            model: Some(model_arg()),
            file: Some(first.clone()),
        },
        autosave_path: None,
        restore_text: false,
    };
    // Every glyph of the dialog is in the window's fonts (no empty boxes
    // for icons): the harness fails on a missing one.
    let mut harness = egui_kittest::Harness::builder()
        .with_size(size)
        .build_eframe(move |cc| headscope::app::HeadscopeApp::new(cc, config).expect("the app"));
    wait_for_result(&mut harness);
    step_until(&mut harness, "the first text", |h| {
        h.state().text().starts_with("The first")
    });

    // File → Open text file…: the window's own dialog, in the text's folder.
    assert_nothing_cut(&harness, "a short text at 1280 × 720");
    harness.get_by_label("File").click();
    step_until(&mut harness, "the File menu", |h| {
        h.query_by_label_contains("Open text file").is_some()
    });
    harness.get_by_label_contains("Open text file").click();
    step_until(&mut harness, "the in-app dialog", |h| {
        h.query_by_label_contains("second.txt").is_some()
    });
    save_picture(&mut harness, "in-app-open.png");
    // A name typed, then Open clicked (not Enter): the file opens.
    fn name_field(n: &egui_kittest::kittest::AccessKitNode<'_>) -> bool {
        n.role() == egui::Role::TextInput && n.label().is_some_and(|l| l.starts_with("File name"))
    }
    harness.get_by(name_field).focus();
    harness.step();
    harness.get_by(name_field).type_text("second.txt");
    harness.step();
    harness.get_by_label("Open").click();
    step_until(&mut harness, "the second text", |h| {
        h.state().text().starts_with("The second")
    });
    wait_for_result(&mut harness);

    // File → Export → the analysis as JSON, saved from the same dialog.
    harness.get_by_label("File").click();
    step_until(&mut harness, "the File menu", |h| {
        h.query_by_label("Export").is_some()
    });
    harness.get_by_label("Export").click();
    harness.step();
    harness.get_by_label("Analysis figures (JSON)…").click();
    step_until(&mut harness, "the save dialog", |h| {
        h.query_by_label("Save").is_some()
    });
    save_picture(&mut harness, "in-app-export.png");
    harness.get_by_label("Save").click();
    let written = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"));
    step_until(&mut harness, "the export's banner", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.starts_with("Exported"))
    });
    let written = written.or_else(|| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "json"))
    });
    let written = written.expect("a JSON file in the text's folder");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
    assert!(
        json.get("layers").is_some(),
        "{written:?} holds the analysis"
    );

    // File → Open model folder…: a short title, in the folder of the
    // model in use, listing folders (and GGUF files), not the model's
    // .json and .safetensors files.
    harness.get_by_label("File").click();
    step_until(&mut harness, "the File menu", |h| {
        h.query_by_label("Open model folder…").is_some()
    });
    harness.get_by_label("Open model folder…").click();
    let model = std::path::PathBuf::from(model_arg());
    let model_folder = format!("{}/", model.file_name().unwrap().to_str().unwrap());
    step_until(&mut harness, "the model dialog", |h| {
        h.query_by_label(&model_folder).is_some()
    });
    assert!(shows(&harness, "Open a model folder"));
    // (The export's passing note still names its .json: only entries.)
    assert!(harness
        .query_all_by_label_contains(".json")
        .all(|n| n.accesskit_node().role() != egui::Role::Button));
    save_picture(&mut harness, "in-app-model-folder.png");
    harness.get_by_label("Cancel").click();
    harness.step();
}
