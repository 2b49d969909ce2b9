//! The app on the causal decoders: each decoder fixture of
//! `tests/fixtures/families` (GPT-2, Llama, Qwen2, Mistral, GPT-NeoX,
//! Gemma 1–3, Qwen3, Phi-3, OLMo 2) opened with its
//! text and driven by its labels like `tests/app/families.rs`. The grid
//! shows every head, the heatmaps draw the cells above the diagonal as
//! masked (hatched grey, not the colour map's low end), the Separators view
//! says why a causal model has no segmentation, and the Layers view reads
//! "—" for it.

use crate::common;

use common::app::{
    label_containing, open_tab, shows, start_on_family, step_until, text_of, wait_for_result,
    AppHarness,
};
use common::*;
use egui_kittest::kittest::Queryable;
use headscope::app::views::CentralView;
use headscope::app::widgets::heatmap::{MASKED_DARK, MASKED_LIGHT};

/// What the colour bar's caption says of a causal model's sink.
const WITHOUT_FIRST_TOKEN: &str = "without the first token";
use headscope::captures::HeadId;
use headscope::model::ModelConfig;

/// The pixel at (fx, fy) of the widget labelled `label`, as fractions of
/// its width and height.
fn pixel_at(
    harness: &AppHarness,
    image: &image::RgbaImage,
    label: &str,
    (fx, fy): (f32, f32),
) -> [u8; 3] {
    let rect = harness.get_by_label_contains(label).rect();
    let x = (rect.left() + fx * rect.width()) as u32;
    let y = (rect.top() + fy * rect.height()) as u32;
    let [r, g, b, _] = image.get_pixel(x, y).0;
    [r, g, b]
}

/// A grey between the two stripes of a masked cell (the thumbnails average
/// the stripes).
fn is_masked_grey([r, g, b]: [u8; 3]) -> bool {
    let (low, high) = (MASKED_DARK.r(), MASKED_LIGHT.r());
    r == g && g == b && (low..=high).contains(&r)
}

/// The grid's thumbnails and the last head's heatmap draw the cells above
/// the diagonal as masked; returns the window's picture with the heatmap.
fn check_masked_heatmaps(harness: &mut AppHarness, name: &str) -> image::RgbaImage {
    let config = ModelConfig::from_file(&family_fixture(name).join("config.json")).unwrap();
    let (layers, heads) = (config.attention_layers(), config.num_attention_heads);
    let output = harness.state().shown_output().unwrap().clone();
    assert!(output.input.tokens.causal, "{name}");
    assert_eq!(output.analysis.layers.len(), layers, "{name}");
    step_until(harness, "the thumbnails", |h| {
        h.state().overview_is_current()
    });
    for l in 0..layers {
        for h in 0..heads {
            harness.get_by_label_contains(&format!("L{l} H{h} "));
        }
    }
    // Every thumbnail: masked grey above the diagonal, colours below it.
    let image = harness.render().expect("wgpu renders the window");
    for l in 0..layers {
        for h in 0..heads {
            let label = format!("L{l} H{h} ");
            let upper = pixel_at(harness, &image, &label, (0.85, 0.1));
            let lower = pixel_at(harness, &image, &label, (0.1, 0.85));
            assert!(
                is_masked_grey(upper),
                "{name} {label}: above the diagonal {upper:?}"
            );
            assert!(
                !is_masked_grey(lower),
                "{name} {label}: below the diagonal {lower:?}"
            );
        }
    }

    // A head's own heatmap: the cell of the first query and the last key is
    // masked, the first query's own cell is a colour.
    let head = HeadId::new(layers - 1, heads - 1);
    harness
        .get_by_label_contains(&format!("L{} H{} ", head.layer, head.head))
        .click();
    step_until(harness, "the head detail", |h| {
        h.state().detail_head() == Some(head)
    });
    harness.step();
    let image = harness.render().expect("wgpu renders the window");
    let heatmap = format!("heatmap of L{} H{}", head.layer, head.head);
    let t = output.captures.tokens as f32;
    let corner = pixel_at(harness, &image, &heatmap, (1.0 - 0.5 / t, 0.5 / t));
    let diagonal = pixel_at(harness, &image, &heatmap, (0.5 / t, 0.5 / t));
    assert!(
        is_masked_grey(corner),
        "{name}: the masked corner is {corner:?}"
    );
    assert!(
        !is_masked_grey(diagonal),
        "{name}: the first cell is {diagonal:?}"
    );
    image
}

/// Saves `image` for the README as `picture` (a `.png` name) with `suffix`
/// before its extension, in the tests' target folder.
fn save_picture(image: &image::RgbaImage, picture: &str, suffix: &str) {
    let name = picture.replace(".png", &format!("{suffix}.png"));
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    image.save(&path).expect("save the picture");
    eprintln!("picture: {}", path.display());
}

fn check_decoder(name: &str, picture: Option<&str>) {
    let mut harness = start_on_family(name);
    wait_for_result(&mut harness);
    let image = check_masked_heatmaps(&mut harness, name);
    let output = harness.state().shown_output().unwrap().clone();
    // Its statistics name a decoder's own landmarks, not [CLS] and [SEP]:
    // its BOS where its tokenizer adds one, and no start token otherwise.
    let tokens = &output.input.tokens;
    let start = tokens
        .cls_positions()
        .first()
        .map(|&i| tokens.token_texts[i].clone());
    assert!(shows(&harness, "to sentence ends"), "{name}");
    assert!(
        !shows(&harness, "to [SEP]") && !shows(&harness, "to [CLS]"),
        "{name}"
    );
    match &start {
        Some(start) => assert!(shows(&harness, &format!("to {start}")), "{name}"),
        None => assert!(!shows(&harness, "to BOS"), "{name}: a BOS it has not"),
    }
    // Its attention thumbnails are scaled so that more than the first
    // column shows, and the legend says so.
    use headscope::app::settings::MatrixKind;
    let toggle = |harness: &AppHarness, name: &str| {
        harness
            .get_by(|n| n.role() == egui::Role::Button && n.label().as_deref() == Some(name))
            .click();
    };
    toggle(&harness, "Attention");
    step_until(&mut harness, "attention shown", |h| {
        h.state().settings().matrix == MatrixKind::Attention
    });
    harness.step();
    assert!(shows(&harness, WITHOUT_FIRST_TOKEN), "{name}");
    if let Some(picture) = picture {
        let image = harness.render().expect("wgpu renders the window");
        save_picture(&image, picture, "-attention");
    }
    toggle(&harness, "Similarity");
    step_until(&mut harness, "similarity shown", |h| {
        h.state().settings().matrix == MatrixKind::Similarity
    });
    harness.step();
    // The sink's similarity is left out of the range too.
    assert!(shows(&harness, WITHOUT_FIRST_TOKEN), "{name}");
    if let Some(picture) = picture {
        save_picture(&image, picture, "");
    }

    // The Separators view says why there is no segmentation; the chips
    // are the sentences' tokens.
    open_tab(&mut harness, CentralView::Separators);
    assert!(
        harness
            .query_all_by_label_contains("No segmentation for a causal model")
            .next()
            .is_some(),
        "{name}: the Separators view does not say why segmentation is absent"
    );
    if let Some(picture) = picture {
        let image = harness.render().expect("wgpu renders the window");
        save_picture(&image, picture, "-separators");
    }
    let last = output.input.tokens.len() - 1;
    assert!(harness
        .query_all_by_label_contains(&format!("sentence token {last} "))
        .next()
        .is_some());

    // The Layers view: segmentation reads "—", and the legend names no
    // curve it has no data for.
    open_tab(&mut harness, CentralView::Layers);
    let row = label_containing(&harness, "L0: mean distance");
    assert!(
        row.contains("segmentation") && row.contains('—'),
        "{name}: {row}"
    );
    assert!(shows(&harness, "legend: separator attention"), "{name}");
    assert!(!shows(&harness, "legend: segmentation"), "{name}");

    if let Some(picture) = picture {
        let image = harness.render().expect("wgpu renders the window");
        save_picture(&image, picture, "-layers");
    }

    // Specialisation: the statistics' columns are the model's own.
    open_tab(&mut harness, CentralView::Specialisation);
    let header = |title: &str| {
        harness
            .query_all_by_role(egui::Role::Button)
            .any(|n| text_of(&n) == title)
    };
    assert!(!header("[CLS]") && !header("[SEP]"), "{name}");
    assert!(header("ends"), "{name}");
    if let Some(start) = &start {
        assert!(header(start), "{name}: a column for {start}");
    }

    // The model panel names the family.
    let config = ModelConfig::from_file(&family_fixture(name).join("config.json")).unwrap();
    common::app::assert_model_panel_names(&mut harness, config.family);
    if let Some(picture) = picture {
        let image = harness.render().expect("wgpu renders the window");
        save_picture(&image, picture, "-model-panel");
    }
}

#[test]
fn the_app_shows_gpt2_with_masked_heatmaps() {
    check_decoder("gpt2", Some("app_decoders-gpt2.png"));
}

#[test]
fn the_app_opens_every_decoder() {
    for name in ["llama", "qwen2", "mistral"] {
        check_decoder(name, None);
    }
}

/// The newer families: Pythia's GPT-NeoX, Gemma 1–3 (with `<bos>`), Qwen3,
/// Phi-3, OLMo 2.
#[test]
fn the_app_opens_the_newer_decoder_families() {
    for name in &DECODER_FIXTURES[4..] {
        check_decoder(name, None);
    }
}

/// A window whose P and S do not fit the memory limit: the text panel says
/// they are recomputed per head, and the grid, the heatmap and the
/// Separators view draw them as for a kept window.
#[test]
fn the_app_recomputes_what_does_not_fit() {
    use common::app::{set_memory_limit, start_config};
    use headscope::app::{AppConfig, StartOptions};
    use headscope::input::RECOMPUTED_NOTE_SHORT;
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("long.txt");
    // 127 or 128 tokens: P and S take over 1 MB, what recomputes them 0.95 MB.
    std::fs::write(&text, "She.\n".repeat(80)).unwrap();
    let mut harness = start_config(AppConfig {
        start: StartOptions {
            model: Some(family_fixture("llama").display().to_string()),
            file: Some(text),
        },
        autosave_path: None,
        restore_text: false,
    });
    wait_for_result(&mut harness);
    assert!(!shows(&harness, RECOMPUTED_NOTE_SHORT));
    let kept = harness.state().shown_output().unwrap().clone();
    assert!(kept.captures.stores_squares());
    assert_rows_are_the_squares(&kept.captures);
    set_memory_limit(&mut harness, 1);
    step_until(&mut harness, "the recomputed window", |h| {
        !h.state().is_working() && shows(h, RECOMPUTED_NOTE_SHORT)
    });
    let output = harness.state().shown_output().unwrap().clone();
    assert!(!output.captures.stores_squares());
    assert!(output.captures.tokens >= 127);
    check_masked_heatmaps(&mut harness, "llama");
    assert_rows_are_the_squares(&output.captures);
    // The Steps tab draws every head's rows of one token from them.
    open_tab(&mut harness, CentralView::Steps);
    assert!(harness.query_by_label("step strip L1 H3").is_some());
    open_tab(&mut harness, CentralView::Separators);
    assert!(harness
        .query_all_by_label_contains("sentence token 126 ")
        .next()
        .is_some());
}

/// One token's rows of P and S (what the Steps and Token focus tabs draw)
/// are the rows of the whole squares, kept or recomputed: S's to the bit
/// (one row is made on gemm's general path, as S whole is).
fn assert_rows_are_the_squares(captures: &headscope::captures::Captures) {
    let t = captures.tokens;
    for id in captures.head_ids().step_by(5) {
        let (attention, similarity) = (captures.attention(id), captures.similarity(id));
        for token in [0, t / 2, t - 1] {
            let row = captures.attention_row(id, token);
            for (a, b) in row.iter().zip(&attention[token * t..(token + 1) * t]) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "{id} token {token}: {a} vs {b}"
                );
            }
            let row = captures.similarity_row(id, token);
            assert_eq!(
                row,
                similarity[token * t..(token + 1) * t],
                "{id} token {token}"
            );
        }
    }
}

/// SmolLM2's byte-level tokens read as text in every view: a chip shows
/// the word-start mark (`·keeper`), and hovering it tells the tokenizer's
/// text and the id; with that token picked, no label of any view holds
/// the vocabulary's own spelling (`Ġ` a space, `Ċ` a newline); a cell of
/// a head's heatmap reads the same way.
#[test]
fn a_byte_level_decoders_tokens_read_as_text() {
    use common::app::{start_on_model, WINDOW};
    use headscope::tokens::VocabularyStyle;
    let mut harness = start_on_model(&smollm2_model());
    let output = harness.state().shown_output().unwrap().clone();
    let tokens = &output.input.tokens;
    assert_eq!(tokens.style, VocabularyStyle::ByteLevel);
    let byte_level = |harness: &AppHarness| {
        ["Ġ", "Ċ"]
            .iter()
            .flat_map(|mark| harness.query_all_by_label_contains(mark))
            .map(|node| text_of(&node))
            .collect::<Vec<_>>()
    };
    // A word after a space: its chip reads "·word"; its tooltip the rest.
    let p = tokens
        .token_texts
        .iter()
        .position(|t| t.len() > 4 && t.starts_with('Ġ'))
        .expect("a word after a space");
    let raw = &tokens.token_texts[p];
    let shown = format!("·{}", raw.trim_start_matches('Ġ'));
    assert_eq!(tokens.readable(p), shown);
    open_tab(&mut harness, CentralView::TokenFocus);
    harness
        .get_by_label(&format!("token {p} “{shown}”"))
        .hover();
    let raw_and_id = format!("“{raw}” · id {}", tokens.input_ids[p]);
    step_until(&mut harness, "the chip's tooltip", |h| {
        shows(h, &format!("token {raw_and_id}"))
    });
    harness
        .get_by_label(&format!("token {p} “{shown}”"))
        .click();
    step_until(&mut harness, "the picked token's rows", |h| {
        h.state().picked_tokens().contains(p) && shows(h, &format!("position {p} · id"))
    });
    let image = harness.render().expect("wgpu renders the window");
    save_picture(&image, "readable-tokens-smollm2.png", "-chips");
    // Away from every token: only hover texts would name the raw tokens.
    harness.hover_at(egui::pos2(5.0, WINDOW.y - 5.0));
    for view in CentralView::ALL {
        if view == CentralView::Compare {
            continue;
        }
        open_tab(&mut harness, view);
        let spelled = byte_level(&harness);
        assert!(spelled.is_empty(), "{view:?} shows {spelled:?}");
    }

    // A head's heatmap: the read-out names the tokens readably, the
    // tooltip by the tokenizer's text and id. Saved for a look.
    open_tab(&mut harness, CentralView::Heads);
    harness.get_by_label_contains("L0 H0 ").click();
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(HeadId::new(0, 0))
    });
    let plot = harness.get_by_label("heatmap of L0 H0").rect();
    let (i, j) = (p + 1, p);
    let t = output.captures.tokens as f32;
    harness
        .hover_at(plot.min + plot.size() * egui::vec2((j as f32 + 0.5) / t, (i as f32 + 0.5) / t));
    // Similarity is shown: "token i … · token j …".
    let readout = format!("token {j} “{shown}” · value");
    step_until(&mut harness, "the cell's read-out", |h| shows(h, &readout));
    let tooltip = format!("token {j}: {raw_and_id}");
    step_until(&mut harness, "the cell's tooltip", |h| shows(h, &tooltip));
    // The tooltip is the one label with the tokenizer's own spelling.
    for label in byte_level(&harness) {
        assert!(label.contains(&tooltip), "{label:?}");
    }
    let image = harness.render().expect("wgpu renders the window");
    save_picture(&image, "readable-tokens-smollm2.png", "");
}
