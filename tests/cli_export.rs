//! `headscope export` as a script uses it, on the real model: the bare
//! heatmap read back follows the order of `analyze --npz`'s similarity, the
//! labelled figure, the grid of every head, the CSV, and clear failures.

mod common;

use common::*;
use headscope::colormap::ColorMap;
use headscope::npz::read_npz;
use std::process::Output;

fn ok(output: Output) -> Output {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn plain_heatmap_cells_follow_the_npz_similarity_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = test_model();
    let model = model.to_str().unwrap();
    let text = fixture("harbour.txt");
    let text = text.to_str().unwrap();
    let npz = dir.path().join("h.npz");
    let png = dir.path().join("h.png");
    ok(headscope(&[
        "analyze",
        "--model",
        model,
        "--one-sentence-per-line",
        "--npz",
        npz.to_str().unwrap(),
        "--json",
        dir.path().join("h.json").to_str().unwrap(),
        text,
    ]));
    let (layer, head) = (2usize, 7usize);
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--one-sentence-per-line",
        "--layer",
        "2",
        "--head",
        "7",
        "--png",
        png.to_str().unwrap(),
        text,
    ]));

    let arrays = read_npz(&npz).unwrap();
    let shape = arrays["similarity"].shape().to_vec();
    let (heads, t) = (shape[1], shape[2]);
    let all = arrays["similarity"].as_f32().unwrap();
    let start = (layer * heads + head) * t * t;
    let similarity = &all[start..start + t * t];

    let image = image::open(&png).unwrap().to_rgb8();
    let scale = headscope::export::default_scale(t) as usize;
    assert_eq!(image.width() as usize, t * scale);
    assert_eq!(image.height() as usize, t * scale);
    let map = ColorMap::default();
    let mut cells: Vec<(f32, usize)> = Vec::with_capacity(t * t);
    for i in 0..t {
        for j in 0..t {
            let pixel = image
                .get_pixel(
                    (j * scale + scale / 2) as u32,
                    (i * scale + scale / 2) as u32,
                )
                .0;
            cells.push((similarity[i * t + j], map.index_of(pixel)));
        }
    }
    cells.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in cells.windows(2) {
        assert!(
            pair[0].1 <= pair[1].1,
            "colour order breaks value order: {pair:?}"
        );
    }
    // The colours span the map: lowest value darkest, highest brightest.
    assert_eq!(cells.first().unwrap().1, 0);
    assert_eq!(cells.last().unwrap().1, 255);
}

#[test]
fn labelled_figure_grid_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let model = test_model();
    let model = model.to_str().unwrap();
    let text = fixture("harbour.txt");
    let text = text.to_str().unwrap();
    let labelled = dir.path().join("labelled.png");
    let csv = dir.path().join("m.csv");
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--layer",
        "0",
        "--head",
        "3",
        "--attention",
        "--labels",
        "--png",
        labelled.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        text,
    ]));
    let figure = image::open(&labelled).unwrap().to_rgb8();
    assert!(figure.width() > 600 && figure.height() > 600);

    let table = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert!(rows[0].contains("[CLS]") && rows[0].contains("harbour"));
    // Attention rows sum to one.
    let first: f32 = rows[1]
        .split(',')
        .skip(1)
        .map(|v| v.parse::<f32>().unwrap())
        .sum();
    assert!((first - 1.0).abs() < 1e-4, "{first}");

    let grid = dir.path().join("grid.png");
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--grid",
        "--png",
        grid.to_str().unwrap(),
        text,
    ]));
    let grid = image::open(&grid).unwrap().to_rgb8();
    // 6 layers × 12 heads of ~128-pixel panels.
    assert!(
        grid.width() > 12 * 128 && grid.height() > 6 * 128,
        "{}x{}",
        grid.width(),
        grid.height()
    );
}

#[test]
fn export_failures_are_one_clear_line() {
    let model = test_model();
    let model = model.to_str().unwrap();
    let text = fixture("harbour.txt");
    let text = text.to_str().unwrap();
    for (args, needle) in [
        (
            vec![
                "--layer",
                "0",
                "--head",
                "0",
                "--png",
                "/no/such/folder/x.png",
            ],
            "/no/such/folder",
        ),
        (
            vec![
                "--layer",
                "6",
                "--head",
                "0",
                "--png",
                "/tmp/headscope-x.png",
            ],
            "--layer 6",
        ),
        (
            vec![
                "--layer",
                "0",
                "--head",
                "12",
                "--png",
                "/tmp/headscope-x.png",
            ],
            "--head 12",
        ),
        (vec!["--layer", "0", "--head", "0"], "--png"),
        (
            vec![
                "--layer",
                "0",
                "--head",
                "0",
                "--png",
                "/tmp/x.png",
                "--colormap",
                "rainbow",
            ],
            "rainbow",
        ),
    ] {
        let mut all = vec!["export", "--model", model];
        all.extend(args);
        all.push(text);
        let output = headscope(&all);
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(message.contains(needle), "{message}");
        assert!(!message.contains("panicked"));
    }
}
