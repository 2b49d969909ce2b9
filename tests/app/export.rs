//! Export from the app: every File → Export kind written for the result on
//! screen (the same code the menu runs after its save dialog, which cannot
//! open headless), the numbers equal to the analysis, and an unwritable path
//! reported in the window.

use crate::common;

use common::app::*;
use egui_kittest::kittest::Queryable;
use headscope::app::files::export_menu::ExportKind;
use headscope::captures::HeadId;

#[test]
fn every_export_kind_is_written_and_failures_are_shown() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let dir = tempfile::tempdir().unwrap();
    let head = HeadId::new(2, 5);
    for (index, kind) in ExportKind::ALL.into_iter().enumerate() {
        let path = dir.path().join(format!("out-{index}.{}", kind.extension()));
        harness.state_mut().export_to(kind, head, &path);
        let notice = harness.state().notice().unwrap_or_default().to_string();
        assert!(notice.starts_with("Exported"), "{kind:?}: {notice}");
        assert!(std::fs::metadata(&path).unwrap().len() > 0, "{kind:?}");
    }
    let output = harness.state().shown_output().unwrap().clone();
    // The JSON is the analysis on screen.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out-4.json")).unwrap())
            .unwrap();
    // (Both sides through the same text parser: serde_json's float parsing
    // is not bit-exact on round trips.)
    let expected: serde_json::Value =
        serde_json::from_str(&serde_json::to_string_pretty(&output.analysis).unwrap()).unwrap();
    assert_eq!(json, expected);
    // The NPZ holds the captures on screen.
    let (ids, captures) = headscope::npz::read_captures_npz(&dir.path().join("out-5.npz")).unwrap();
    assert_eq!(ids, output.input.tokens.input_ids);
    assert_eq!(captures.similarity, output.captures.similarity);
    // The CSV is the head's similarity (raw by default), row by row.
    let csv = std::fs::read_to_string(dir.path().join("out-3.csv")).unwrap();
    let t = output.captures.tokens;
    let second_row: Vec<f32> = csv
        .lines()
        .nth(2)
        .unwrap()
        .rsplitn(t + 1, ',')
        .take(t)
        .map(|v| v.parse().unwrap())
        .collect();
    let expected = &output.captures.similarity(head)[t..2 * t];
    let mut second_row = second_row;
    second_row.reverse();
    assert_eq!(second_row, expected);
    // The bare image is exactly T × T cells.
    let image = image::open(dir.path().join("out-0.png")).unwrap();
    let scale = headscope::export::default_scale(t);
    assert_eq!(
        (image.width(), image.height()),
        (t as u32 * scale, t as u32 * scale)
    );

    // Each figure as SVG (XML, token labels as text) and PDF, a page wide
    // by default.
    for kind in ExportKind::ALL.into_iter().filter(|k| k.is_figure()) {
        for extension in ["svg", "pdf"] {
            let path = dir.path().join(format!("{kind:?}.{extension}"));
            harness.state_mut().export_to(kind, head, &path);
            let notice = harness.state().notice().unwrap_or_default().to_string();
            assert!(
                notice.starts_with("Exported"),
                "{kind:?} {extension}: {notice}"
            );
            let bytes = std::fs::read(&path).unwrap();
            if extension == "pdf" {
                assert!(bytes.starts_with(b"%PDF"), "{kind:?}");
                continue;
            }
            let svg = String::from_utf8(bytes).unwrap();
            let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
            assert_eq!(doc.root_element().attribute("width"), Some("504pt"));
            if kind == ExportKind::HeadFigure {
                let texts: Vec<&str> = doc
                    .descendants()
                    .filter(|n| n.has_tag_name("text"))
                    .filter_map(|n| n.text())
                    .collect();
                // Every token as a reader reads it (`·the`), or every
                // k-th where rows are smaller than a line of text, on
                // both axes.
                let labels = &output.input.tokens.readable_tokens().texts;
                let shown = labels
                    .iter()
                    .filter(|l| texts.contains(&l.as_str()))
                    .count();
                assert!(shown * 3 >= labels.len(), "{shown} of {}", labels.len());
                assert!(texts.contains(&labels[0].as_str()));
            }
        }
    }
    // File → Export → Figure size: a column, kept in the settings.
    for entry in ["File", "Export", "Figure size", "column (3.3 in)"] {
        harness.get_by_label(entry).click();
        harness.step();
        harness.step();
    }
    assert_eq!(
        harness.state().settings().figure_style.width,
        headscope::export::PaperWidth::Column
    );
    // The open menu, to look at (HEADSCOPE_EXPORT_MENU_PNG).
    if let Some(path) = std::env::var_os("HEADSCOPE_EXPORT_MENU_PNG") {
        for entry in ["File", "Export", "Figure size"] {
            harness.get_by_label(entry).click();
            harness.step();
            harness.step();
        }
        let image = harness.render().expect("wgpu renders the window");
        image.save(path).unwrap();
    }
    let path = dir.path().join("column.svg");
    harness
        .state_mut()
        .export_to(ExportKind::HeadFigure, head, &path);
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("width=\"237.6pt\""), "{}", &svg[..200]);
    harness.key_press(egui::Key::Escape);
    harness.step();

    // A path that cannot be written: a clear message, the app goes on.
    harness.state_mut().export_to(
        ExportKind::GridImage,
        head,
        std::path::Path::new("/no/such/folder/grid.png"),
    );
    let notice = harness.state().notice().unwrap_or_default().to_string();
    assert!(
        notice.contains("Export failed") && notice.contains("/no/such/folder"),
        "{notice}"
    );
    harness.step();
}
