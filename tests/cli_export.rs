//! `headscope export` as a script uses it, on the real model: the bare
//! heatmap read back follows the order of `analyze --npz`'s similarity, the
//! labelled figure, the grid of every head, the CSV, and clear failures;
//! the same figures as SVG (read as XML) and PDF (drawn by poppler).

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
    // 7 in at 300 dpi.
    assert!(figure.width() == 2100 && figure.height() > 1500);

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

/// The pixel at (x, y) points of a page drawn at 300 dpi.
fn at(img: &image::RgbImage, x: f32, y: f32) -> [u8; 3] {
    img.get_pixel((x * 300.0 / 72.0) as u32, (y * 300.0 / 72.0) as u32)
        .0
}

#[test]
fn figures_as_svg_and_pdf() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let model = test_model();
    let model = model.to_str().unwrap();
    let text = fixture("harbour.txt");
    let text = text.to_str().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--layer",
        "2",
        "--head",
        "5",
        "--attention",
        "--labels",
        "--width",
        "column",
        "--font-size",
        "8",
        "--png",
        &out("f.png"),
        "--svg",
        &out("f.svg"),
        "--pdf",
        &out("f.pdf"),
        text,
    ]));
    // The SVG: XML, 3.3 in wide, the token labels as text, the matrix as
    // one image of T × T pixels.
    let svg = std::fs::read_to_string(out("f.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
    assert_eq!(doc.root_element().attribute("width"), Some("237.6pt"));
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"[CLS]") && texts.iter().any(|t| t.contains("layer 2 head 5")));
    let (rect, matrix) = doc
        .descendants()
        .filter(|n| n.has_tag_name("image"))
        .find_map(|n| {
            let data = n
                .attribute("href")?
                .strip_prefix("data:image/png;base64,")?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .ok()?;
            let img = image::load_from_memory(&bytes).ok()?.to_rgb8();
            let number = |name| n.attribute(name).and_then(|v| v.parse::<f32>().ok());
            (img.width() == img.height() && img.width() > 20).then(|| {
                let rect = [number("x")?, number("y")?, number("width")?];
                Some((rect, img))
            })?
        })
        .expect("the heatmap as one image");
    let tokens = matrix.width() as usize;
    // The PDF drawn by poppler and the PNG show each cell in the colour the
    // SVG's image gives it.
    let stem = out("page");
    let status = std::process::Command::new("pdftoppm")
        .args(["-r", "300", "-png", "-singlefile", &out("f.pdf"), &stem])
        .status()
        .expect("pdftoppm (poppler-utils) runs");
    assert!(status.success());
    let page = image::open(format!("{stem}.png")).unwrap().to_rgb8();
    let png = image::open(out("f.png")).unwrap().to_rgb8();
    let cell = rect[2] / tokens as f32;
    for i in 0..tokens {
        for j in 0..tokens {
            let (x, y) = (
                rect[0] + (j as f32 + 0.5) * cell,
                rect[1] + (i as f32 + 0.5) * cell,
            );
            let want = matrix.get_pixel(j as u32, i as u32).0;
            for (what, img) in [("PDF", &page), ("PNG", &png)] {
                let got = at(img, x, y);
                let off = got
                    .iter()
                    .zip(want)
                    .map(|(a, b)| a.abs_diff(b))
                    .max()
                    .unwrap();
                assert!(off <= 3, "{what} cell ({i}, {j}): {got:?} for {want:?}");
            }
        }
    }
    // The labels are text in the PDF, and its font is embedded.
    let pdf_text = std::process::Command::new("pdftotext")
        .args([&out("f.pdf"), "-"])
        .output()
        .unwrap();
    let pdf_text = String::from_utf8_lossy(&pdf_text.stdout);
    assert!(
        pdf_text.contains("[CLS]") && pdf_text.contains("head 5"),
        "{pdf_text}"
    );
    let fonts = std::process::Command::new("pdffonts")
        .arg(out("f.pdf"))
        .output()
        .unwrap();
    let fonts = String::from_utf8_lossy(&fonts.stdout);
    assert!(
        fonts.contains("Ubuntu") && fonts.contains(" yes "),
        "{fonts}"
    );

    // The grid and the bare matrix as vector files.
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--grid",
        "--svg",
        &out("g.svg"),
        "--pdf",
        &out("g.pdf"),
        text,
    ]));
    let svg = std::fs::read_to_string(out("g.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("image"))
            .count(),
        6 * 12
    );
    assert!(svg.contains(">L5 H11"));
    assert!(std::fs::read(out("g.pdf")).unwrap().starts_with(b"%PDF"));
    ok(headscope(&[
        "export",
        "--model",
        model,
        "--layer",
        "0",
        "--head",
        "0",
        "--svg",
        &out("b.svg"),
        text,
    ]));
    let svg = std::fs::read_to_string(out("b.svg")).unwrap();
    assert_eq!(
        roxmltree::Document::parse(&svg)
            .unwrap()
            .descendants()
            .filter(|n| n.has_tag_name("image"))
            .count(),
        1
    );
    // A font size outside 8–10 pt is refused in words.
    let refused = headscope(&[
        "export",
        "--model",
        model,
        "--layer",
        "0",
        "--head",
        "0",
        "--font-size",
        "14",
        "--pdf",
        &out("x.pdf"),
        text,
    ]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--font-size"));
}
