//! A decoder's whole 16k context in the app: a small random Llama (two
//! layers of one head, so the suite stays fast) on a text of over 16,000
//! tokens. The head's map opens as blocks, zooms from the overview down
//! to single cells with token labels, reads a hovered cell's exact value,
//! and saves the region in view as a figure. The grid's thumbnails are
//! those the pass made.

use crate::common;

use common::app::*;
use common::*;
use egui_kittest::kittest::Queryable;
use headscope::app::views::CentralView;
use headscope::app::{AppConfig, StartOptions};
use headscope::captures::HeadId;
use headscope::export::FigureFormat;
use std::path::Path;

/// The positions the model takes, and the least the text must fill.
const POSITIONS: usize = 16_400;
const TOKENS: usize = 16_000;

/// A random Llama of two layers of one head taking
/// [`POSITIONS`] tokens, with the Llama fixture's tokenizer.
fn write_long_context_llama(dir: &Path) {
    let fixture = family_fixture("llama");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("config.json")).unwrap())
            .unwrap();
    for (key, value) in [
        ("num_hidden_layers", 2),
        ("num_attention_heads", 1),
        ("num_key_value_heads", 1),
        ("hidden_size", 8),
        ("intermediate_size", 16),
        ("max_position_embeddings", POSITIONS),
    ] {
        json[key] = value.into();
    }
    let config_path = dir.join("source-config.json");
    std::fs::write(&config_path, json.to_string()).unwrap();
    let config = headscope::model::ModelConfig::from_file(&config_path).unwrap();
    headscope::model::random::write_random_model(
        &config,
        &fixture.join("tokenizer.json"),
        &dir.join("model"),
        5,
        Default::default(),
    )
    .unwrap();
}

fn wheel(harness: &mut AppHarness, at: egui::Pos2, delta: f32) {
    harness.hover_at(at);
    harness.event(egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, delta),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Unknown,
        modifiers: egui::Modifiers::NONE,
    });
    for _ in 0..6 {
        harness.step();
    }
}

#[test]
fn a_16k_head_map_zooms_from_blocks_to_cells_and_saves_the_region() {
    let dir = tempfile::tempdir().unwrap();
    write_long_context_llama(dir.path());
    let sentences = std::fs::read_to_string(fixture("families/llama.txt")).unwrap();
    let text = dir.path().join("long.txt");
    std::fs::write(&text, sentences.repeat(1 + 4 * TOKENS / sentences.len())).unwrap();
    let mut harness = start_config(AppConfig {
        start: StartOptions {
            model: Some(dir.path().join("model").display().to_string()),
            file: Some(text),
        },
        autosave_path: None,
        restore_text: false,
    });
    // P and S of 16k tokens are 2 GB a head: the pass keeps what
    // recomputes them, and within the default memory limit the window
    // is the model's whole context.
    wait_for_result(&mut harness);
    let output = harness.state().shown_output().unwrap().clone();
    let tokens = output.captures.tokens;
    assert!(tokens >= TOKENS, "{tokens} tokens analysed");
    assert!(!output.captures.stores_squares());
    // The pass drew the grid's thumbnails as it went: the grid makes no
    // head's matrix again.
    assert!(output.thumbnails.is_complete());

    // The head opens as blocks: 16 × 16 cells a pixel, the max of each.
    open_tab(&mut harness, CentralView::Heads);
    step_until(&mut harness, "the grid's thumbnails", |h| {
        h.state().overview_is_current()
    });
    save_window(&mut harness, "app_long_map-grid.png");
    harness.get_by_label_contains("L1 H0 ").click();
    step_until(&mut harness, "the head's map", |h| {
        h.state().detail_head() == Some(HeadId::new(1, 0)) && h.state().head_map().is_ready()
    });
    let overview_level = harness.state().head_map().shown_level().unwrap();
    assert!(overview_level >= 4, "level {overview_level}");
    let side = 1 << overview_level;
    assert!(shows(
        &harness,
        &format!("a pixel shows the max of {side} × {side} cells")
    ));
    save_window(&mut harness, "app_long_map-overview.png");

    // A head's 1.3 million selected pairs are not kept at 16k, only their
    // number: the detail makes them again off the UI thread and lists them.
    let pairs = &output
        .analysis
        .head(HeadId::new(1, 0))
        .unwrap()
        .selected_pairs;
    assert!(!pairs.is_kept() && pairs.len() > 1_000_000);
    step_until(&mut harness, "the head's pairs made again", |h| {
        shows(h, &format!("… and {} more", pairs.len() - 40))
    });

    // Zoom in about a point near the diagonal until a pixel is a cell and
    // more: tiles of finer levels are made on the way down.
    let plot = harness.get_by_label("heatmap of L1 H0").rect();
    let at = plot.min + plot.size() * egui::vec2(0.45, 0.55);
    let mut levels_seen = vec![overview_level];
    for _ in 0..30 {
        wheel(&mut harness, at, 240.0);
        let level = harness.state().head_map().shown_level().unwrap();
        if levels_seen.last() != Some(&level) {
            levels_seen.push(level);
        }
        if level == 0 && shows(&harness, "Rows ") && visible_cells(&harness) <= 64 {
            break;
        }
    }
    assert_eq!(levels_seen.last(), Some(&0), "levels {levels_seen:?}");
    assert!(levels_seen.len() >= 3, "levels {levels_seen:?}");
    step_until(&mut harness, "the cells' tiles", |h| {
        let map = h.state().head_map();
        map.tiles_at(0) > 0 && !map.is_drawing_tiles()
    });
    // At cell level no pixel stands for a block, and the token labels
    // are drawn.
    assert!(!shows(&harness, "a pixel shows"));

    // A hovered cell's read-out: its two tokens and its exact value.
    harness.hover_at(at);
    harness.step();
    harness.step();
    let readout = label_containing(&harness, " · value ");
    let (i, j, value) = parse_readout(&readout);
    let causal_masked = j > i;
    let head = HeadId::new(1, 0);
    let expected = if causal_masked {
        f32::NAN
    } else {
        output.captures.similarity_row(head, i)[j]
    };
    if causal_masked {
        assert!(readout.contains("masked"), "{readout}");
    } else {
        let value = value.expect("a number");
        assert!(
            (value - expected).abs() <= 1e-2 * expected.abs().max(1e-3),
            "{readout}: expected {expected}"
        );
    }
    save_window(&mut harness, "app_long_map-cells.png");

    // The region in view saved as SVG: the title names its rows and the
    // token labels of the cells shown are text.
    let title = label_containing(&harness, "Rows ");
    let path = dir.path().join("region.svg");
    harness
        .state_mut()
        .set_plot_export_target(Some(path.clone()));
    harness
        .query_all_by_label(headscope::app::widgets::plots::save_label(
            FigureFormat::Svg,
        ))
        .next()
        .expect("the map's Save SVG button")
        .click();
    step_until(&mut harness, "the region's export", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.contains(&path.display().to_string()))
    });
    let svg = std::fs::read_to_string(&path).unwrap();
    let keep = std::env::temp_dir().join("headscope-exports");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::copy(&path, keep.join("long-map-region.svg")).unwrap();
    // The text of the SVG's <text> elements, in order (a line of the
    // screen is cut into runs where its glyphs change), without spaces.
    let texts: String = svg
        .lines()
        .filter(|l| l.starts_with("<text"))
        .filter_map(|l| {
            l.split_once('>')
                .and_then(|(_, rest)| rest.split_once("</text>"))
        })
        .map(|(text, _)| text.replace(' ', ""))
        .collect();
    let rows = title.split(" · ").next().unwrap().replace(' ', "");
    assert!(
        texts.contains(&rows),
        "{rows} not in the SVG's texts {texts}"
    );
    assert!(svg.contains("<image"), "the map's picture is in the SVG");
    let label = output.input.tokens.readable(i);
    assert!(
        texts.contains(&xml_escape(&label).replace(' ', "")),
        "token {i} {label:?}"
    );
}

/// How many cells a side the map shows, from its title "Rows a–b · …".
fn visible_cells(harness: &AppHarness) -> usize {
    let title = label_containing(harness, "Rows ");
    let rows = title
        .trim_start_matches("Rows ")
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let (a, b) = rows.split_once('–').unwrap();
    b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1
}

/// (row, column, value) of "token i “…” · token j “…” · value v".
fn parse_readout(readout: &str) -> (usize, usize, Option<f32>) {
    let number_after = |word: &str, from: &str| -> usize {
        let rest = &from[from.find(word).unwrap() + word.len()..];
        rest.split(' ').next().unwrap().parse().unwrap()
    };
    let i = number_after("token ", readout);
    let second = &readout[readout.find(" · ").unwrap() + 3..];
    let j = number_after("token ", second);
    let value = readout.rsplit("value ").next().unwrap().parse().ok();
    (i, j, value)
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The text panel follows the map: hovering a cell marks its two tokens in
/// the editor and scrolls them into view, at either end of a text longer
/// than the editor shows.
#[test]
fn hovering_a_cell_marks_and_shows_its_tokens_in_the_text() {
    use headscope::app::text::editor::EDITOR_LABEL;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("harbour.txt");
    let sentence = "The keeper watched the boats come into the harbour at dusk.\n";
    std::fs::write(&file, sentence.repeat(36)).unwrap();
    let mut harness = start(Some(file), None);
    wait_for_result(&mut harness);
    harness.get_by_label_contains("L0 H0 ").click();
    step_until(&mut harness, "the detail view", |h| {
        h.state().detail_head().is_some() && h.state().head_map().is_ready()
    });
    let plot = harness.get_by_label("heatmap of L0 H0").rect();
    let editor = harness.get_by_label(EDITOR_LABEL).rect();
    // Token 96% of the way is far below the editor's first screenful (36
    // lines), token 3% far above its last: each is visible only if the
    // editor scrolled to it.
    for fraction in [0.96, 0.03] {
        let at = plot.min + plot.size() * egui::vec2(fraction * 0.9, fraction);
        harness.hover_at(at);
        for _ in 0..4 {
            harness.step();
        }
        let marks = harness.state().text_marks().expect("the tokens marked");
        // Scrolled into the editor's view.
        let visible = harness.get_by_label(EDITOR_LABEL).rect().intersect(editor);
        assert!(visible.intersects(marks), "{marks:?} outside {visible:?}");
        if fraction > 0.5 {
            save_window(&mut harness, "app_long_map-text-follows.png");
        }
    }
    // The pointer off the map: no marks.
    harness.hover_at(egui::pos2(plot.right() + 200.0, plot.top()));
    harness.step();
    harness.step();
    assert!(harness.state().text_marks().is_none());
}
