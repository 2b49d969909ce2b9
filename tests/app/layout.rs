//! The app's layout on a deep model, in the app's own 1600 × 1000 window:
//! a random BERT of 12 layers × 12 heads (the depth of the paper's BERT-12)
//! with the test model's tokenizer. Every head's thumbnail and the whole
//! layer-to-layer correlation grid must be reachable (scrolled to, then
//! inside the window) and the Heads grid must use the width.
//!
//! The window is rendered through wgpu (Mesa's software Vulkan here) and
//! the pictures are checked and written to
//! `$CARGO_TARGET_TMPDIR/app_layout/` for a person to look at.

use crate::common;

use common::app::*;
use egui::Role;
use egui_kittest::kittest::Queryable;
use headscope::app::views::CentralView;
use headscope::colormap::{ColorMap, ValueRange};
use std::path::PathBuf;

const LAYERS: usize = 12;
const HEADS: usize = 12;

/// The app on a fresh 12 × 12 random model, its first result on screen.
fn start_deep() -> (tempfile::TempDir, AppHarness) {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = dir.path().join("deep-random-bert");
    write_random_model(&model, LAYERS, HEADS);
    let harness = start_on_model(&model);
    let shown = harness.state().shown_output().expect("a result").clone();
    assert_eq!(
        (shown.captures.layers, shown.captures.heads),
        (LAYERS, HEADS)
    );
    (dir, harness)
}

/// Where the pictures go for a person to look at.
fn picture_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("app_layout");
    std::fs::create_dir_all(&dir).expect("picture folder");
    dir.join(name)
}

/// Whether `rect` lies wholly inside the window.
fn inside_window(rect: egui::Rect) -> bool {
    egui::Rect::from_min_size(egui::Pos2::ZERO, WINDOW).contains_rect(rect)
}

/// The rect of the widget labelled `label` after asking to scroll it into
/// view.
fn scrolled_to(harness: &mut AppHarness, label: &str) -> egui::Rect {
    harness.get_by_label_contains(label).scroll_to_me();
    // A frame takes the request, the next scrolls, the third reports the
    // new place.
    for _ in 0..3 {
        harness.step();
    }
    harness.get_by_label_contains(label).rect()
}

fn distinct_colours(image: &image::RgbaImage, rect: egui::Rect) -> usize {
    let mut pixels = Vec::new();
    for y in 0..16 {
        for x in 0..16 {
            let px = rect.left() + (x as f32 + 0.5) * rect.width() / 16.0;
            let py = rect.top() + (y as f32 + 0.5) * rect.height() / 16.0;
            pixels.push(image.get_pixel(px as u32, py as u32).0);
        }
    }
    pixels.sort_unstable();
    pixels.dedup();
    pixels.len()
}

#[test]
fn the_heads_grid_of_a_deep_model_fills_the_width_and_reaches_the_last_layer() {
    let (_dir, mut harness) = start_deep();
    step_until(&mut harness, "the thumbnails", |h| {
        h.state().overview_is_current()
    });
    let thumbnails = harness
        .query_all_by_role(Role::Button)
        .filter(|n| text_of(n).starts_with('L') && text_of(n).contains(" H"))
        .count();
    assert_eq!(thumbnails, LAYERS * HEADS);

    // The columns span the central area: the last one ends near the
    // window's right edge, and the pictures are not squeezed to fit
    // twelve rows into the height.
    let first_row_last = harness.get_by_label_contains("L0 H11 ").rect();
    let first_row_first = harness.get_by_label_contains("L0 H0 ").rect();
    assert!(
        first_row_last.right() > WINDOW.x - 80.0,
        "the grid ends at x = {}, far from the right edge",
        first_row_last.right()
    );
    assert!(
        first_row_last.right() - first_row_first.left() > 0.6 * WINDOW.x,
        "the grid spans {} of {} points",
        first_row_last.right() - first_row_first.left(),
        WINDOW.x
    );
    assert!(first_row_last.width() >= 80.0, "{first_row_last:?}");
    let image = harness.render().expect("wgpu renders the window");
    image
        .save(picture_path("heads-grid-top.png"))
        .expect("save the picture");

    // The last layer is below the fold; scrolled to, it is on screen.
    let last = scrolled_to(&mut harness, "L11 H11 ");
    assert!(inside_window(last), "L11 H11 at {last:?}");
    let image = harness.render().expect("wgpu renders the window");
    image
        .save(picture_path("heads-grid-last-layer.png"))
        .expect("save the picture");
    let picture = egui::Rect::from_min_size(last.min, egui::vec2(last.width(), last.width()));
    assert!(
        distinct_colours(&image, picture) > 8,
        "the last head's thumbnail shows a heatmap"
    );
    // And it still opens.
    harness.get_by_label_contains("L11 H11 ").click();
    harness.step();
    assert_eq!(
        harness.state().detail_head(),
        Some(headscope::captures::HeadId::new(11, 11))
    );
}

#[test]
fn the_layers_view_of_a_deep_model_shows_the_whole_correlation_grid() {
    let (_dir, mut harness) = start_deep();
    harness
        .get_by(|n| n.role() == Role::Button && n.label().as_deref() == Some("Layers"))
        .click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), CentralView::Layers);

    // The table's last layer and the whole grid are reachable.
    let last_row = scrolled_to(&mut harness, "L11: ");
    assert!(inside_window(last_row), "the L11 row at {last_row:?}");
    let grid = scrolled_to(&mut harness, "layer correlation grid");
    assert!(inside_window(grid), "the grid at {grid:?}");
    let cells = LAYERS as f32 + 1.0;
    let cell = grid.width() / cells;
    assert!(
        cell >= 28.0,
        "cells of {cell} points are too small for values"
    );

    // The last layer's own cell, L11 with L11 (r = 1), shows its colour:
    // sampled inside the cell, away from the value written on it.
    let image = harness.render().expect("wgpu renders the window");
    image
        .save(picture_path("layers-view-correlation.png"))
        .expect("save the picture");
    let corner = grid.min + egui::vec2(cells - 1.0, cells - 1.0) * cell + egui::vec2(3.0, 3.0);
    let pixel = image.get_pixel(corner.x as u32, corner.y as u32).0;
    let expected = ColorMap::RdBu.color(1.0, ValueRange::new(-1.0, 1.0));
    for channel in 0..3 {
        assert!(
            pixel[channel].abs_diff(expected[channel]) <= 3,
            "the L11–L11 cell is {pixel:?}, r = 1 is {expected:?}"
        );
    }
}
