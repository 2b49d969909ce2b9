//! Exported images, CSV tables and the atomic file writer, checked the way a
//! reader of the files would: PNGs are decoded again and their pixels read
//! back through the colour map, CSV is parsed again, and failed writes are
//! checked for their message and for leaving the previous file intact.
//!
//! The figures for papers are checked in all three formats made from their
//! one description: the PNG's pixels, the SVG parsed as XML (token labels
//! as text, the heatmap as one image of the matrix's size), and the PDF
//! rendered by poppler's `pdftoppm` (colours of every cell as the matrix's)
//! and read by `pdftotext` (the labels are text).
//!
//! Also saves labelled figures and grids of the reference fixture under
//! the system temp folder (`headscope-exports/`) for a person to look at.

use std::path::{Path, PathBuf};

use headscope::colormap::{ColorMap, ColourScale, ValueRange};
use headscope::export::{
    default_scale, grid_figure, heatmap_image, labelled_figure, matrix_csv, save_png, save_scene,
    save_text, scene_pdf, scene_png, write_atomically, FigureFormat, FigureStyle, GridRange,
    PaperWidth, Scene, PNG_DPI,
};
use image::RgbImage;

/// The 65 tokens of the fixture's input ids (bert-base-uncased vocabulary).
const HARBOUR_TOKENS: [&str; 65] = [
    "[CLS]",
    "the",
    "harbour",
    "was",
    "quiet",
    "before",
    "dawn",
    ".",
    "[SEP]",
    "a",
    "fisherman",
    "un",
    "##tie",
    "##d",
    "his",
    "boat",
    "and",
    "rowe",
    "##d",
    "past",
    "the",
    "harbour",
    "wall",
    ".",
    "[SEP]",
    "gu",
    "##lls",
    "followed",
    "the",
    "boat",
    ",",
    "hoping",
    "for",
    "scrap",
    "##s",
    "of",
    "bait",
    ".",
    "[SEP]",
    "by",
    "noon",
    "the",
    "boat",
    "was",
    "back",
    ",",
    "heavy",
    "with",
    "silver",
    "fish",
    ".",
    "[SEP]",
    "his",
    "daughter",
    "sold",
    "the",
    "fish",
    "at",
    "the",
    "market",
    "in",
    "the",
    "square",
    ".",
    "[SEP]",
];

fn fixture() -> headscope::captures::Captures {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbour.minilm.npz");
    headscope::npz::read_captures_npz(&path)
        .expect("fixture reads")
        .1
}

fn harbour_labels() -> Vec<String> {
    HARBOUR_TOKENS.iter().map(|s| s.to_string()).collect()
}

/// A folder for files meant to be looked at after the test run.
fn exports_folder() -> PathBuf {
    let dir = std::env::temp_dir().join("headscope-exports");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Decodes the PNG written for `img` and checks it holds T×T uniform cells of
/// `scale` pixels; returns each cell's colour-map index, row-major.
fn cell_indices(img: &RgbImage, tokens: usize, scale: u32, map: ColorMap) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.png");
    save_png(img, &path).unwrap();
    let decoded = image::open(&path).unwrap().to_rgb8();
    let side = tokens as u32 * scale;
    assert_eq!(decoded.dimensions(), (side, side));
    assert_eq!(decoded.as_raw(), img.as_raw());
    let mut indices = Vec::new();
    for i in 0..tokens as u32 {
        for j in 0..tokens as u32 {
            let corner = *decoded.get_pixel(j * scale, i * scale);
            for y in 0..scale {
                for x in 0..scale {
                    assert_eq!(
                        *decoded.get_pixel(j * scale + x, i * scale + y),
                        corner,
                        "cell ({i}, {j}) is not uniform"
                    );
                }
            }
            indices.push(map.index_of(corner.0));
        }
    }
    indices
}

fn assert_order_kept(values: &[f32], indices: &[usize], what: &str) {
    for (a, (&va, &ia)) in values.iter().zip(indices).enumerate() {
        for (b, (&vb, &ib)) in values.iter().zip(indices).enumerate() {
            if va > vb {
                assert!(
                    ia >= ib,
                    "{what}: cell {a} ({va}) read back as index {ia} below cell {b} ({vb}) at {ib}"
                );
            }
        }
    }
}

#[test]
fn default_scale_reaches_512_pixels() {
    assert_eq!(default_scale(0), 1);
    assert_eq!(default_scale(1), 512);
    assert_eq!(default_scale(65), 8);
    assert_eq!(default_scale(64), 8);
    assert_eq!(default_scale(512), 1);
    assert_eq!(default_scale(700), 1);
    for t in 1..600 {
        let s = default_scale(t) as usize;
        assert!(
            t * s >= 512 && (s == 1 || t * (s - 1) < 512),
            "{t} tokens: scale {s}"
        );
    }
}

#[test]
fn plain_heatmap_reads_back_in_value_order() {
    // Ties, negatives, a wide spread and values outside the range.
    let tokens = 6;
    let matrix: Vec<f32> = (0..tokens * tokens)
        .map(|k| match k % 7 {
            0 => 0.25,
            1 => -3.0,
            2 => 10.0,
            _ => (k as f32 * 0.37).sin(),
        })
        .collect();
    for map in ColorMap::all() {
        for range in [
            ValueRange::of(&matrix),
            ValueRange::symmetric(&matrix),
            ValueRange::new(-0.5, 0.5),
        ] {
            let scale = 5;
            let img = heatmap_image(&matrix, tokens, map, range, scale);
            let indices = cell_indices(&img, tokens, scale, map);
            assert_order_kept(&matrix, &indices, map.name());
            // Row i is query i: the cell (1, 2) is value 1·6+2.
            assert_eq!(
                *img.get_pixel(2 * scale, scale),
                image::Rgb(map.color(matrix[8], range))
            );
        }
    }
}

#[test]
fn fixture_similarity_reads_back_in_value_order() {
    let captures = fixture();
    let matrix = &*captures.similarity(headscope::captures::HeadId::new(3, 0));
    let t = captures.tokens;
    let img = heatmap_image(
        matrix,
        t,
        ColorMap::Viridis,
        ValueRange::of(matrix),
        default_scale(t),
    );
    assert_eq!(img.width(), 65 * 8);
    let indices = cell_indices(&img, t, default_scale(t), ColorMap::Viridis);
    assert_order_kept(matrix, &indices, "L3 H0");
    // The extremes land on the ends of the map.
    let (lo, hi) = (indices.iter().min().unwrap(), indices.iter().max().unwrap());
    assert_eq!((*lo, *hi), (0, 255));
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let img = heatmap_image(&[], 0, ColorMap::Magma, ValueRange::default(), 0);
    assert_eq!(img.dimensions(), (0, 0));
    // A short matrix shows the missing cells in the NaN colour.
    let img = heatmap_image(&[1.0], 2, ColorMap::Magma, ValueRange::default(), 1);
    assert_eq!(img.get_pixel(1, 1).0, headscope::colormap::NAN_COLOUR);
    let constant = vec![0.5; 9];
    let img = heatmap_image(&constant, 3, ColorMap::Greys, ValueRange::of(&constant), 0);
    assert_eq!(img.get_pixel(0, 0).0, ColorMap::Greys.rgb(0.5));
    let style = FigureStyle::default();
    let empty = labelled_figure(
        &[],
        0,
        &[],
        "",
        ColorMap::Viridis,
        ValueRange::default(),
        style,
    );
    assert!(scene_png(&empty, 72.0).is_ok() && scene_pdf(&empty).is_ok());
    let nan = labelled_figure(
        &[f32::NAN; 4],
        2,
        &[],
        "nan",
        ColorMap::Viridis,
        ValueRange::of(&[f32::NAN]),
        style,
    );
    assert!(scene_png(&nan, 72.0).is_ok() && scene_pdf(&nan).is_ok());
    let grid = grid_figure(
        &[],
        10,
        0,
        ColorMap::Viridis,
        GridRange::PerPanel(ColourScale::default()),
        style,
    );
    assert!(scene_png(&grid, 72.0).is_ok());
    let dir = tempfile::tempdir().unwrap();
    assert!(save_png(&RgbImage::new(0, 0), &dir.path().join("empty.png")).is_err());
}

/// Fraction of pixels that are not white.
fn ink(img: &RgbImage) -> f64 {
    let coloured = img.pixels().filter(|p| p.0 != [255, 255, 255]).count();
    coloured as f64 / (img.width() * img.height()) as f64
}

/// Whether some pixel in the rectangle is dark, i.e. text or a frame.
fn has_dark(img: &RgbImage, x0: u32, y0: u32, x1: u32, y1: u32) -> bool {
    (y0..y1.min(img.height()))
        .any(|y| (x0..x1.min(img.width())).any(|x| img.get_pixel(x, y).0.iter().all(|&c| c < 100)))
}

/// The heatmap of a labelled figure: its rectangle in points.
fn heatmap_rect(scene: &Scene, tokens: u32) -> [f32; 4] {
    scene
        .items
        .iter()
        .find_map(|item| match item {
            headscope::export::scene::Item::Image {
                x,
                y,
                width,
                height,
                image,
            } if image.width() == tokens => Some([*x, *y, *width, *height]),
            _ => None,
        })
        .expect("the heatmap is one image of the matrix's size")
}

/// Checks that the centre of every cell of the heatmap in `picture` (drawn
/// at `dpi`) has the colour `want(i, j)`, the map's for the cell's value.
fn cells_follow_the_matrix(
    picture: &RgbImage,
    dpi: f32,
    rect: [f32; 4],
    tokens: usize,
    want: impl Fn(usize, usize) -> [u8; 3],
    what: &str,
) {
    let px = dpi / 72.0;
    let cell = rect[2] / tokens as f32;
    let mut worst = 0;
    for i in 0..tokens {
        for j in 0..tokens {
            let x = ((rect[0] + (j as f32 + 0.5) * cell) * px) as u32;
            let y = ((rect[1] + (i as f32 + 0.5) * cell) * px) as u32;
            let got = picture.get_pixel(x, y).0;
            let off = got
                .iter()
                .zip(want(i, j))
                .map(|(a, b)| a.abs_diff(b))
                .max()
                .unwrap();
            worst = worst.max(off);
        }
    }
    assert!(worst <= 3, "{what}: a cell is {worst} off its colour");
}

#[test]
fn labelled_figure_has_room_for_everything() {
    let captures = fixture();
    let matrix = &*captures.similarity(headscope::captures::HeadId::new(3, 0));
    let labels = harbour_labels();
    let range = ValueRange::of(matrix);
    let map = ColorMap::Viridis;
    let style = FigureStyle::default();
    let scene = labelled_figure(
        matrix,
        65,
        &labels,
        "similarity, layer 3 head 0",
        map,
        range,
        style,
    );
    // A page wide: 7 in, as tall as the heatmap and its labels need.
    assert_eq!(scene.width, 7.0 * 72.0);
    assert!(
        scene.height > scene.width * 0.8 && scene.height < scene.width * 1.3,
        "height {}",
        scene.height
    );
    let img = scene_png(&scene, PNG_DPI).unwrap();
    assert_eq!(img.width(), 2100);
    // White margins all round, the heatmap somewhere inside, text around it.
    assert_eq!(img.get_pixel(0, 0).0, [255; 3]);
    assert_eq!(img.get_pixel(img.width() - 1, img.height() - 1).0, [255; 3]);
    assert!(ink(&img) > 0.4, "ink {}", ink(&img));
    for end in [map.lut()[0], map.lut()[255]] {
        assert!(img.pixels().any(|p| p.0 == end), "colour {end:?} missing");
    }
    let rect = heatmap_rect(&scene, 65);
    let colour = |i: usize, j: usize| map.color(matrix[i * 65 + j], range);
    cells_follow_the_matrix(&img, PNG_DPI, rect, 65, colour, "PNG");
    let to_px = |pt: f32| (pt * PNG_DPI / 72.0) as u32;
    assert!(
        has_dark(&img, 0, 0, img.width(), to_px(rect[1])),
        "no title"
    );
    assert!(
        has_dark(
            &img,
            0,
            to_px(rect[1]),
            to_px(rect[0]) - 12,
            img.height() / 2
        ),
        "no row labels"
    );
    assert!(
        has_dark(
            &img,
            to_px(rect[0]),
            to_px(rect[1] + rect[3]) + 12,
            to_px(rect[0] + rect[2]),
            img.height()
        ),
        "no column labels"
    );
    assert!(
        has_dark(
            &img,
            to_px(rect[0] + rect[2]) + 60,
            to_px(rect[1]),
            img.width(),
            to_px(rect[1] + rect[3])
        ),
        "no colour bar ticks"
    );
    // Every token is labelled on a page; a column labels every other one.
    let texts: Vec<&str> = scene.texts().collect();
    assert!(texts.contains(&"fisherman") && texts.contains(&"##lls"));
    assert_eq!(texts.iter().filter(|t| **t == "harbour").count(), 4);
    let column = FigureStyle {
        width: PaperWidth::Column,
        font_size: 8.0,
    };
    let narrow = labelled_figure(matrix, 65, &labels, "L3 H0", map, range, column);
    assert_eq!(narrow.width, 3.3 * 72.0);
    let shown = narrow.texts().count();
    assert!((2 * 65 / 4..2 * 65).contains(&shown), "{shown} labels");

    // Many tokens: labels are thinned, the figure stays a page wide.
    let many: Vec<f32> = (0..300 * 300).map(|k| (k as f32).sqrt().sin()).collect();
    let scene = labelled_figure(
        &many,
        300,
        &[],
        "300 tokens",
        ColorMap::RdBu,
        ValueRange::symmetric(&many),
        style,
    );
    assert_eq!(scene.width, 7.0 * 72.0);
    assert!(scene.texts().count() < 2 * 150);
    // 128 tokens with long labels are cut with an ellipsis.
    let tokens = 128;
    let wide: Vec<f32> = (0..tokens * tokens)
        .map(|k| {
            ((k / tokens) as f32 - (k % tokens) as f32)
                .abs()
                .recip()
                .min(1.0)
        })
        .collect();
    let long: Vec<String> = (0..tokens)
        .map(|i| {
            if i % 7 == 0 {
                format!("antidisestablishmentarianism{i}")
            } else {
                HARBOUR_TOKENS[i % 65].to_string()
            }
        })
        .collect();
    let scene = labelled_figure(
        &wide,
        tokens,
        &long,
        "128 tokens, long labels",
        ColorMap::Greys,
        ValueRange::of(&wide),
        style,
    );
    assert!(scene.texts().any(|t| t.ends_with('…')));
    save_scene(
        &scene,
        FigureFormat::Png,
        &exports_folder().join("labelled_128_tokens.png"),
    )
    .unwrap();
    let few = [
        0.9f32, 0.1, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.2, 0.3, 0.5, 0.0, 0.25, 0.25, 0.25, 0.25,
    ];
    let labels4: Vec<String> = ["[CLS]", ",", "\"", "[SEP]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let scene = labelled_figure(
        &few,
        4,
        &labels4,
        "Attention of a four-token input, layer 0, head 0 (a long title)",
        ColorMap::Cividis,
        ValueRange::new(0.0, 1.0),
        column,
    );
    save_scene(
        &scene,
        FigureFormat::Pdf,
        &exports_folder().join("labelled_4_tokens.pdf"),
    )
    .unwrap();
    for format in FigureFormat::ALL {
        let path =
            exports_folder().join(format!("labelled_L3H0_similarity.{}", format.extension()));
        let scene = labelled_figure(
            matrix,
            65,
            &labels,
            "Similarity O·Oᵀ, layer 3, head 0",
            map,
            range,
            style,
        );
        save_scene(&scene, format, &path).unwrap();
    }
    let attention = &*captures.attention(headscope::captures::HeadId::new(2, 5));
    let scene = labelled_figure(
        attention,
        65,
        &labels,
        "Attention, layer 2, head 5",
        ColorMap::Magma,
        ValueRange::of(attention),
        column,
    );
    save_scene(
        &scene,
        FigureFormat::Pdf,
        &exports_folder().join("labelled_L2H5_attention_column.pdf"),
    )
    .unwrap();
}

/// The labelled figure as SVG: well-formed XML whose text elements hold the
/// token labels and whose heatmap is one image of 65 × 65 pixels, each the
/// colour of its matrix entry.
#[test]
fn the_svg_holds_the_labels_as_text_and_the_matrix_as_one_image() {
    use base64::Engine;
    let captures = fixture();
    let matrix = &*captures.attention(headscope::captures::HeadId::new(2, 5));
    let range = ValueRange::of(matrix);
    let map = ColorMap::Magma;
    let scene = labelled_figure(
        matrix,
        65,
        &harbour_labels(),
        "Attention, layer 2, head 5",
        map,
        range,
        FigureStyle::default(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("figure.svg");
    save_scene(&scene, FigureFormat::Svg, &path).unwrap();
    std::fs::copy(&path, exports_folder().join("labelled_L2H5_attention.svg")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG is XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("504pt"));
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    // Each of the 65 labels on both axes, and the title.
    for label in HARBOUR_TOKENS {
        let count = texts.iter().filter(|t| **t == label).count();
        let expected = 2 * HARBOUR_TOKENS.iter().filter(|t| **t == label).count();
        assert_eq!(count, expected, "label {label}");
    }
    assert!(texts.contains(&"Attention, layer 2, head 5"));
    // The heatmap: one embedded PNG of exactly the matrix.
    let images: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("image"))
        .filter_map(|n| n.attribute("href"))
        .filter_map(|href| href.strip_prefix("data:image/png;base64,"))
        .map(|data| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            image::load_from_memory(&bytes).unwrap().to_rgb8()
        })
        .collect();
    let heatmap = images
        .iter()
        .find(|img| img.width() == 65)
        .expect("the heatmap image");
    assert_eq!(heatmap.dimensions(), (65, 65));
    for (k, pixel) in heatmap.pixels().enumerate() {
        assert_eq!(pixel.0, map.color(matrix[k], range), "cell {k}");
    }
    // Small: the cells are one image, not 4225 rectangles.
    assert!(text.len() < 60_000, "{} bytes", text.len());
}

/// Runs a poppler tool, which the test step installs (scripts/test-deps.sh).
fn poppler(tool: &str, args: &[&str]) -> std::process::Output {
    let output = std::process::Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{tool} (Debian's poppler-utils) did not run: {e}"));
    assert!(
        output.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The PDF, drawn by poppler, shows every cell in its matrix colour, as the
/// PNG does; its labels and title are text that `pdftotext` reads; its page
/// is the figure's size.
#[test]
fn the_pdf_renders_the_matrix_and_its_labels_are_text() {
    let captures = fixture();
    let matrix = &*captures.similarity(headscope::captures::HeadId::new(3, 0));
    let range = ValueRange::of(matrix);
    let map = ColorMap::Viridis;
    let title = "Similarity of layer 3 head 0";
    for style in [
        FigureStyle::default(),
        FigureStyle {
            width: PaperWidth::Column,
            font_size: 8.0,
        },
    ] {
        let scene = labelled_figure(matrix, 65, &harbour_labels(), title, map, range, style);
        let dir = tempfile::tempdir().unwrap();
        let pdf = dir.path().join("figure.pdf");
        save_scene(&scene, FigureFormat::Pdf, &pdf).unwrap();
        let dpi = 288.0;
        let stem = dir.path().join("page");
        poppler(
            "pdftoppm",
            &[
                "-r",
                "288",
                "-png",
                "-singlefile",
                pdf.to_str().unwrap(),
                stem.to_str().unwrap(),
            ],
        );
        let page = image::open(dir.path().join("page.png")).unwrap().to_rgb8();
        let expected_width = (scene.width * dpi / 72.0).round() as i64;
        assert!(
            (i64::from(page.width()) - expected_width).abs() <= 1,
            "page {} px, figure {expected_width} px",
            page.width()
        );
        let rect = heatmap_rect(&scene, 65);
        let colour = |i: usize, j: usize| map.color(matrix[i * 65 + j], range);
        cells_follow_the_matrix(&page, dpi, rect, 65, colour, "PDF");
        // The PNG of the same scene agrees with it.
        let png = scene_png(&scene, dpi).unwrap();
        cells_follow_the_matrix(&png, dpi, rect, 65, colour, "PNG");

        let text = poppler("pdftotext", &[pdf.to_str().unwrap(), "-"]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(text.contains(title), "{text}");
        let words: Vec<&str> = scene
            .texts()
            .filter(|t| t.len() > 2 && t.chars().all(char::is_alphabetic))
            .collect();
        assert!(words.len() > 10, "{words:?}");
        for label in words.into_iter().chain(["[SEP]"]) {
            assert!(text.contains(label), "{label} not found in {text}");
        }
    }
}

#[test]
fn grid_holds_every_head() {
    let captures = fixture();
    let panels: Vec<(String, Vec<f32>)> = captures
        .head_ids()
        .map(|id| {
            (
                format!("L{} H{}", id.layer, id.head),
                captures.attention(id).to_vec(),
            )
        })
        .collect();
    let style = FigureStyle::default();
    let scene = grid_figure(
        &panels,
        65,
        12,
        ColorMap::Viridis,
        GridRange::PerPanel(ColourScale::default()),
        style,
    );
    // 12 columns and 6 rows of panels a page wide, each with its label.
    assert_eq!(scene.width, 504.0);
    let images = scene
        .items
        .iter()
        .filter(|i| matches!(i, headscope::export::scene::Item::Image { .. }))
        .count();
    assert_eq!(images, 72);
    let texts: Vec<&str> = scene.texts().collect();
    assert!(texts.contains(&"L0 H0") && texts.contains(&"L5 H11"));
    assert!(scene.height > 6.0 * 30.0 && scene.height < 6.0 * 60.0);
    let img = scene_png(&scene, PNG_DPI).unwrap();
    assert!(ink(&img) > 0.5);
    save_scene(
        &scene,
        FigureFormat::Png,
        &exports_folder().join("grid_attention_per_panel.png"),
    )
    .unwrap();

    let similarity: Vec<(String, Vec<f32>)> = captures
        .head_ids()
        .map(|id| {
            (
                format!("L{} H{} similarity", id.layer, id.head),
                captures.similarity(id).to_vec(),
            )
        })
        .collect();
    let shared = ValueRange::of(&captures.similarity);
    let with_bar = grid_figure(
        &similarity,
        65,
        12,
        ColorMap::Cividis,
        GridRange::Shared(shared),
        style,
    );
    let no_bar = grid_figure(
        &similarity,
        65,
        12,
        ColorMap::Cividis,
        GridRange::PerPanel(ColourScale::default()),
        style,
    );
    // The colour bar takes room from the panels: the same width, shorter.
    assert_eq!(with_bar.width, no_bar.width);
    assert!(
        with_bar.height < no_bar.height,
        "shared range gets a colour bar"
    );
    assert!(with_bar.items.len() > no_bar.items.len() + 5);
    save_scene(
        &with_bar,
        FigureFormat::Pdf,
        &exports_folder().join("grid_similarity_shared.pdf"),
    )
    .unwrap();
}

/// RFC 4180 fields of one CSV text, row by row.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let mut row = vec![];
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && row.is_empty(),
        "CSV must end with a newline"
    );
    rows
}

#[test]
fn csv_parses_back_to_the_same_numbers() {
    let labels: Vec<String> = [",", "\"", "say \"hi\"", " space", "[CLS]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let tokens = labels.len();
    let special = [
        0.1f32,
        1.0 / 3.0,
        -f32::MAX,
        f32::MIN_POSITIVE,
        1e-30,
        16777217.0,
        -0.0,
    ];
    let matrix: Vec<f32> = (0..tokens * tokens)
        .map(|k| special[k % special.len()] * (k as f32 + 1.0).sqrt())
        .collect();
    let csv = matrix_csv(&matrix, tokens, &labels);
    let rows = parse_csv(&csv);
    assert_eq!(rows.len(), tokens + 1);
    assert_eq!(rows[0][0], "");
    assert_eq!(&rows[0][1..], &labels[..]);
    for (i, row) in rows[1..].iter().enumerate() {
        assert_eq!(row.len(), tokens + 1);
        assert_eq!(row[0], labels[i]);
        for (j, cell) in row[1..].iter().enumerate() {
            let value: f32 = cell.parse().unwrap();
            assert_eq!(
                value.to_bits(),
                matrix[i * tokens + j].to_bits(),
                "cell ({i}, {j}) = {cell}"
            );
        }
    }
    // Plain labels are left unquoted.
    assert!(csv.contains(",[CLS]\n"));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.csv");
    save_text(&csv, &path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), csv);
}

fn error_text(result: Result<(), headscope::export::ExportError>) -> String {
    result.expect_err("the write should fail").to_string()
}

#[test]
fn unwritable_paths_fail_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let img = heatmap_image(
        &[0.0, 1.0, 1.0, 0.0],
        2,
        ColorMap::Viridis,
        ValueRange::default(),
        4,
    );

    let missing = dir.path().join("nope").join("x.png");
    let text = error_text(save_png(&img, &missing));
    let folder = dir.path().join("nope");
    assert_eq!(
        text,
        format!(
            "cannot write {}: folder {} does not exist",
            missing.display(),
            folder.display()
        )
    );

    let file = dir.path().join("file.txt");
    std::fs::write(&file, "not a folder").unwrap();
    for under_file in [file.join("x.png"), file.join("sub").join("x.png")] {
        let text = error_text(save_png(&img, &under_file));
        assert_eq!(
            text,
            format!(
                "cannot write {}: {} is a file, not a folder",
                under_file.display(),
                file.display()
            )
        );
    }

    let text = error_text(save_png(&img, dir.path()));
    assert_eq!(
        text,
        format!("cannot write {}: it is a directory", dir.path().display())
    );
    let text = error_text(save_text("x", &dir.path().join("..")));
    assert!(text.contains("is a directory"), "{text}");
    assert!(error_text(save_text("x", Path::new(""))).contains("empty"));

    // Nothing was left behind by the failures.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("file.txt")]);
}

#[test]
fn failed_overwrite_keeps_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("figure.png");
    let good = heatmap_image(
        &[0.0, 1.0, 1.0, 0.0],
        2,
        ColorMap::Viridis,
        ValueRange::default(),
        8,
    );
    save_png(&good, &path).unwrap();
    let before = std::fs::read(&path).unwrap();

    let result = write_atomically(&path, |w| {
        w.write_all(b"half a PNG")?;
        Err(std::io::Error::other("the encoder gave up"))
    });
    let text = error_text(result);
    assert_eq!(
        text,
        format!("cannot write {}: the encoder gave up", path.display())
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary file left behind"
    );

    // A successful overwrite replaces the file completely.
    let other = heatmap_image(&[1.0], 1, ColorMap::Magma, ValueRange::default(), 3);
    save_png(&other, &path).unwrap();
    assert_eq!(image::open(&path).unwrap().to_rgb8().dimensions(), (3, 3));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[cfg(unix)]
#[test]
fn writes_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.csv");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    save_text("new", &link).unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}
