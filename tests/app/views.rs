//! The study's views (Layers, Separators, Token focus, Specialisation)
//! driven through the app's accessibility tree with the real test model
//! (all-MiniLM-L6-v2, 6 layers × 12 heads), like `tests/app/ui.rs`.
//!
//! Each view must show the figures `headscope analyze` reports: every test
//! runs [`pipeline::run`] on the same text with the app's own settings and
//! compares the text the view displays (formatted as the app formats it)
//! with that analysis. Widgets are found by their labels and clicked like
//! a user would; waiting for the model is a bounded loop of frames.
//!
//! Needs the model that `scripts/fetch-test-model.sh` unpacks.

use crate::common;

use common::app::*;
use egui::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use headscope::analysis::{Analysis, Category};
use headscope::app::views::heads::grid::thumbnail_label;
use headscope::app::views::CentralView;
use headscope::app::views::{separators, specialisation, token_focus};
use headscope::app::widgets::format::{figure, role_style};
use headscope::app::SAMPLE_TEXT;
use headscope::captures::HeadId;
use headscope::pipeline::{self, RunOutput};
use std::collections::BTreeSet;
use std::sync::Arc;

fn shown(harness: &AppHarness) -> Arc<RunOutput> {
    harness.state().shown_output().expect("a result").clone()
}

/// What `headscope analyze` reports for `text` under the app's settings.
fn reference(harness: &AppHarness, text: &str) -> Analysis {
    let settings = harness.state().settings();
    let input = settings.input_options(0);
    let output = pipeline::run(
        common::loaded_test_model(),
        text,
        &input,
        &settings.analysis_options(),
        &|| false,
    )
    .expect("the reference run");
    assert_eq!(
        output.input.tokens.input_ids,
        shown(harness).input.tokens.input_ids,
        "the app and the reference analyse the same tokens"
    );
    output.analysis
}

/// Every head button on screen (the grid's thumbnails): its head and its
/// label.
fn thumbnails(harness: &AppHarness) -> Vec<(HeadId, String)> {
    harness
        .query_all_by_role(Role::Button)
        .map(|n| text_of(&n))
        .filter_map(|label| Some((parse_head(&label)?, label)))
        .collect()
}

/// The label of `head`'s thumbnail in the grid on screen.
fn thumbnail_of(harness: &AppHarness, head: HeadId) -> String {
    thumbnails(harness)
        .into_iter()
        .find(|(h, _)| *h == head)
        .expect("the head's thumbnail")
        .1
}

/// The heads whose grid thumbnail says it is highlighted.
fn highlighted_heads(harness: &AppHarness) -> BTreeSet<HeadId> {
    thumbnails(harness)
        .into_iter()
        .filter(|(_, label)| label.contains("· highlighted"))
        .map(|(head, _)| head)
        .collect()
}

/// "L3 H5 …" → HeadId(3, 5).
fn parse_head(label: &str) -> Option<HeadId> {
    let mut words = label.split_whitespace();
    let layer = words.next()?.strip_prefix('L')?.parse().ok()?;
    let head = words
        .next()?
        .strip_prefix('H')?
        .trim_end_matches(':')
        .parse()
        .ok()?;
    Some(HeadId::new(layer, head))
}

/// Writes `text` to a file and opens it in the app; waits for its result.
fn open_text(harness: &mut AppHarness, dir: &tempfile::TempDir, text: &str) {
    let path = dir.path().join("text.txt");
    std::fs::write(&path, text).expect("write the text");
    harness.state_mut().open_file(&path);
    step_until(harness, "the text's result", |h| {
        h.state().text() == text && !h.state().is_working() && h.state().shown_output().is_some()
    });
}

#[test]
fn the_layers_view_shows_the_analysis_and_opens_a_layer() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    open_tab(&mut harness, CentralView::Layers);

    for (l, layer) in analysis.layers.iter().enumerate() {
        let row = text_of(&harness.get_by_label_contains(&format!("L{l}: mean distance")));
        for expected in [
            format!("mean distance {}", figure(layer.mean_distance, 2)),
            format!("same sentence {}", figure(layer.same_sentence_fraction, 3)),
            format!(
                "separator attention {}",
                figure(layer.separator_attention, 3)
            ),
            format!("focus uniqueness {}", figure(layer.focus_uniqueness, 3)),
            format!(
                "segmentation accuracy {}",
                figure(layer.segmentation_accuracy, 3)
            ),
        ] {
            assert!(
                row.contains(&expected),
                "L{l} row {row:?} lacks {expected:?}"
            );
        }
        assert!(harness
            .query_by_label(&format!("distance histogram of L{l}"))
            .is_some());
    }
    let chance = format!(
        "same sentence by chance: {}",
        figure(analysis.baseline_same_sentence_fraction, 3)
    );
    assert!(harness.query_by_label(&chance).is_some(), "{chance}");
    assert!(harness.query_by_label("layer correlation grid").is_some());
    harness.check_accessibility();

    // The switch to N′ shows the value-weighted twins of the figures made
    // from P (ANALYSIS.md §9), and back.
    use headscope::app::views::layers::table::{FROM_N_LABEL, FROM_P_LABEL};
    harness.get_by_label(FROM_N_LABEL).click();
    harness.step();
    harness.step();
    for (l, layer) in analysis.layers.iter().enumerate() {
        let row = text_of(&harness.get_by_label_contains(&format!("L{l}: mean distance")));
        assert!(layer.sink_attention_vw.is_some(), "MiniLM has value norms");
        for expected in [
            format!(
                "separator attention N′ {}",
                figure(layer.separator_attention_vw, 3)
            ),
            format!("sink attention N′ {}", figure(layer.sink_attention_vw, 3)),
            format!(
                "segmentation accuracy N′ {}",
                figure(layer.segmentation_accuracy_vw, 3)
            ),
            format!("mean distance {}", figure(layer.mean_distance, 2)),
        ] {
            assert!(
                row.contains(&expected),
                "L{l} row {row:?} lacks {expected:?}"
            );
        }
    }
    // The fractions plot's curves follow.
    assert!(harness
        .query_by_label("legend: separator attention N′")
        .is_some());
    harness.get_by_label(FROM_P_LABEL).click();
    harness.step();
    harness.step();
    let row = text_of(&harness.get_by_label_contains("L0: mean distance"));
    assert!(!row.contains("N′"), "{row}");
    assert!(harness
        .query_by_label("legend: separator attention")
        .is_some());

    // Clicking a layer's histogram shows that layer's heads.
    harness.get_by_label("distance histogram of L3").click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), CentralView::Heads);
    assert_eq!(harness.state().grid_layer(), Some(3));
    for h in 0..12 {
        assert!(harness
            .query_by_label_contains(&format!("L3 H{h} "))
            .is_some());
    }
    assert!(harness.query_by_label_contains("L2 H0 ").is_none());
    harness.get_by_label("Show all layers").click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().grid_layer(), None);
    assert!(harness.query_by_label_contains("L2 H0 ").is_some());

    // So does a row of the table.
    open_tab(&mut harness, CentralView::Layers);
    harness.get_by_label_contains("L2: mean distance").click();
    harness.step();
    assert_eq!(harness.state().grid_layer(), Some(2));
}

#[test]
fn the_specialisation_table_shows_every_head_sorts_and_opens_a_head() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    open_tab(&mut harness, CentralView::Specialisation);

    // The row of L3 H5 shows the head's figures as `analyze` reports them.
    let l3h5 = HeadId::new(3, 5);
    let f = analysis.head(l3h5).expect("L3 H5");
    let row = text_of(&harness.get_by_label_contains("L3 H5: "));
    let output = harness.state().shown_output().expect("a result").clone();
    let columns = specialisation::ShownColumns::of(&output.input.tokens);
    assert_eq!(
        row,
        specialisation::row_name(&columns, l3h5, f, &output.input.tokens)
    );
    let s = f
        .attention_stats
        .expect("a run with P has attention statistics");
    for expected in [
        format!("category {}", f.category.expect("a category")),
        format!("mean dist. {}", figure(f.mean_distance, 2)),
        format!("same sent. {}", figure(f.same_sentence_fraction, 3)),
        format!("repetition {}", figure(f.repetition_fraction, 3)),
        format!(
            "focus token “{}”",
            output
                .input
                .tokens
                .readable_of(f.focus_token_id.expect("a focus"))
                .unwrap()
        ),
        format!("focus share {}", figure(f.focus_share, 3)),
        format!("local {}", figure(f.local_fraction, 3)),
        format!("sep. attn. {}", figure(f.separator_attention, 3)),
        format!("entropy {:.3}", s.entropy),
        format!("[CLS] {:.3}", s.cls),
        format!("[SEP] {:.3}", s.sep),
        format!("punct. {:.3}", s.punctuation),
        format!("self {:.3}", s.self_attention),
        format!("prev. {:.3}", s.previous),
        format!("next {:.3}", s.next),
        format!("role {}", role_style(f.role).0),
        format!("prev. token {}", figure(f.previous_token_score, 3)),
        format!("duplicate {}", figure(f.duplicate_token_score, 3)),
        format!("induction {}", figure(f.induction_score, 3)),
    ] {
        assert!(row.contains(&expected), "{row:?} lacks {expected:?}");
    }
    let rows = |h: &AppHarness| -> Vec<HeadId> {
        h.query_all_by_role(Role::Button)
            .map(|n| text_of(&n))
            .filter(|l| l.contains(": category "))
            .filter_map(|l| parse_head(&l))
            .collect()
    };
    assert_eq!(rows(&harness).len(), 72, "one row per head");

    // A column title sorts (numbers: largest first), a second click reverses.
    harness.get_by_label("mean dist.").click();
    harness.step();
    harness.step();
    let order = rows(&harness);
    let distance = |id: &HeadId| analysis.head(*id).and_then(|f| f.mean_distance);
    assert!(
        order
            .windows(2)
            .all(|w| distance(&w[0]).unwrap_or(f64::MIN) >= distance(&w[1]).unwrap_or(f64::MIN)),
        "sorted by mean distance, largest first"
    );
    harness.get_by_label("mean dist.").click();
    harness.step();
    harness.step();
    let reversed = rows(&harness);
    assert_eq!(distance(&reversed[0]), distance(order.last().unwrap()));

    // Sorted by a role score, the heads it finds come first.
    harness.get_by_label("induction").click();
    harness.step();
    harness.step();
    let induction = |id: &HeadId| analysis.head(*id).and_then(|f| f.induction_score);
    let order = rows(&harness);
    assert!(
        induction(&order[0]).is_some(),
        "the sample text repeats tokens"
    );
    assert!(
        order
            .windows(2)
            .all(|w| induction(&w[0]).unwrap_or(f64::MIN) >= induction(&w[1]).unwrap_or(f64::MIN)),
        "sorted by induction score, largest first"
    );

    // Sorted by head, last first, L3 H5 is on screen: clicking opens it.
    harness.get_by_label("head").click();
    harness.step();
    harness.get_by_label("head").click();
    harness.step();
    harness.step();
    assert_eq!(rows(&harness).first(), Some(&HeadId::new(5, 11)));
    harness.get_by_label_contains("L3 H5: ").click();
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(l3h5)
    });
    assert_eq!(harness.state().central_view(), CentralView::Heads);
    assert!(harness.query_by_label("Layer 3 · Head 5").is_some());
    harness.check_accessibility();
}

#[test]
fn the_grid_captions_name_each_heads_role_on_the_induction_probe() {
    // The probe's random ids include pieces of scripts egui's fonts lack.
    let mut harness = start_allowing_missing_glyphs(headscope::app::AppConfig {
        start: headscope::app::StartOptions {
            model: Some(model_arg()),
            file: None,
        },
        autosave_path: None,
        restore_text: false,
    });
    wait_for_result(&mut harness);
    // What `headscope analyze --probe induction` finds, under the app's
    // settings.
    let settings = harness.state().settings().clone();
    let model = common::loaded_test_model();
    let built = pipeline::prepare_probe(model, &settings.input_options(0)).expect("the probe");
    let probe_run = pipeline::run_prepared(model, built, &settings.analysis_options(), &|| false)
        .expect("the probe's run");
    let probe = &probe_run.analysis;

    open_tab(&mut harness, CentralView::Heads);
    harness.get_by_label("roles on the probe").click();
    step_until(&mut harness, "the probe's roles", |h| {
        h.query_by_label_contains("Roles, from each head's attention on the induction probe")
            .is_some()
    });
    let mut roles = BTreeSet::new();
    let mut shown = 0;
    for (head, label) in thumbnails(&harness) {
        let f = probe.head(head).expect("the head's figures");
        let name = role_style(f.role).0;
        assert!(
            label.ends_with(&format!(" · role {name}")),
            "{label:?} names the role the probe gives, {name}"
        );
        // The pictures and their categories are the probe's too.
        assert!(
            label.starts_with(&thumbnail_label(head, f.category)),
            "{label:?}: the probe's category {:?}",
            f.category
        );
        let role = f.role;
        roles.insert(role);
        shown += 1;
    }
    assert_eq!(shown, 6 * 12);
    assert!(
        roles.contains(&Some(headscope::analysis::Role::PreviousToken)),
        "the probe finds previous-token heads: {roles:?}"
    );
    harness.get_by_label_contains("The tab shows the model's attention on the induction probe");

    // A head opened from the grid shows the probe's figures.
    let (head, focus) = (0..6)
        .flat_map(|l| (0..12).map(move |h| HeadId::new(l, h)))
        .find_map(|id| Some((id, probe.head(id)?.focus_token_id?)))
        .expect("a head with a focus token on the probe");
    harness
        .get_by_label_contains(&format!("L{} H{} ", head.layer, head.head))
        .click();
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(head)
    });
    let readable = probe_run
        .input
        .tokens
        .readable_of(focus)
        .unwrap_or_default();
    harness.get_by_label(&format!("“{readable}” (id {focus})"));
    harness.check_accessibility();
}

#[test]
fn the_scatter_places_every_head_by_two_figures_and_a_click_opens_one() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    open_tab(&mut harness, CentralView::Specialisation);
    harness.get_by_label("Scatter").click();
    harness.step();
    harness.step();
    // By default the previous-token score (x) against the induction
    // score (y), one point per head where both are defined.
    harness.get_by_label_contains("induction against prev. token, one point per head");
    let heads: Vec<HeadId> = (0..6)
        .flat_map(|l| (0..12).map(move |h| HeadId::new(l, h)))
        .collect();
    let xy = |id: HeadId| {
        let f = analysis.head(id).expect("the head's figures");
        Some((f.previous_token_score?, f.induction_score?))
    };
    let view = harness.state().specialisation_view().clone();
    let placed: Vec<(HeadId, (f64, f64), egui::Pos2)> = heads
        .iter()
        .filter_map(|&id| Some((id, xy(id)?, view.scatter.point_of(id)?)))
        .collect();
    assert_eq!(
        placed.len(),
        heads.iter().filter(|&&id| xy(id).is_some()).count(),
        "a point for every head with both figures"
    );
    assert!(
        placed.len() > 10,
        "the sample text defines both: {placed:?}"
    );
    for (_, (x, y), at) in &placed {
        for (_, (x2, y2), at2) in &placed {
            // Screen y grows downwards.
            if x < x2 {
                assert!(at.x <= at2.x + 0.01, "x order kept: {at:?} {at2:?}");
            }
            if y < y2 {
                assert!(at.y >= at2.y - 0.01, "y order kept: {at:?} {at2:?}");
            }
        }
    }

    // A click on a point with no other near it opens its head.
    let (head, _, at) = placed
        .iter()
        .find(|(id, _, at)| {
            placed
                .iter()
                .all(|(other, _, p)| other == id || p.distance(*at) > 12.0)
        })
        .copied()
        .expect("a point standing alone");
    harness.hover_at(at);
    harness.step();
    harness.drag_at(at);
    harness.step();
    harness.drop_at(at);
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(head)
    });
    assert_eq!(harness.state().central_view(), CentralView::Heads);
    harness.check_accessibility();
}

#[test]
fn repetition_heads_are_listed_and_highlighted_on_a_repetitive_text() {
    let text = "The cat saw the cat and the dog saw the dog. The dog saw the cat and \
                the cat saw the dog. The cat and the dog saw the cat and the dog. \
                The dog and the cat saw the dog and the cat.";
    let dir = tempfile::tempdir().expect("temp dir");
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_text(&mut harness, &dir, text);
    let analysis = reference(&harness, text);
    let expected: BTreeSet<HeadId> = (0..analysis.layers.len())
        .flat_map(|l| (0..analysis.layers[l].heads.len()).map(move |h| HeadId::new(l, h)))
        .filter(|&id| analysis.head(id).unwrap().category == Some(Category::Repetition))
        .collect();
    assert!(
        !expected.is_empty(),
        "a text of repeated words has repetition heads"
    );

    open_tab(&mut harness, CentralView::Specialisation);
    harness.get_by_label("repetition heads").click();
    harness.step();
    harness.step();
    let listed: BTreeSet<HeadId> = harness
        .query_all_by_role(Role::Button)
        .map(|n| text_of(&n))
        .filter(|l| l.contains(": category "))
        .map(|l| {
            assert!(l.contains(": category repetition,"), "{l}");
            parse_head(&l).expect("a row label")
        })
        .collect();
    assert_eq!(listed, expected, "the filter lists the repetition heads");

    // The same choice highlights them in the grid.
    open_tab(&mut harness, CentralView::Heads);
    assert_eq!(highlighted_heads(&harness), expected);
    harness.check_accessibility();
}

#[test]
fn the_grid_captions_name_each_heads_role_on_request() {
    let text = "The cat saw the cat and the dog saw the dog. The dog saw the cat and \
                the cat saw the dog. The cat and the dog saw the cat and the dog.";
    let dir = tempfile::tempdir().expect("temp dir");
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_text(&mut harness, &dir, text);
    let analysis = reference(&harness, text);
    open_tab(&mut harness, CentralView::Heads);
    let shown = thumbnails(&harness);
    assert_eq!(shown.len(), 6 * 12, "{shown:?}");
    assert!(
        shown.iter().all(|(_, label)| !label.contains(" · role ")),
        "categories by default: {shown:?}"
    );

    harness.get_by_label("roles").click();
    harness.step();
    harness.step();
    let shown = thumbnails(&harness);
    assert_eq!(shown.len(), 6 * 12, "{shown:?}");
    let mut roles = BTreeSet::new();
    for (head, label) in &shown {
        let role = analysis.head(*head).expect("the head's figures").role;
        assert!(role.is_some(), "the text's P gives {head:?} a role");
        let name = role_style(role).0;
        assert!(
            label.ends_with(&format!(" · role {name}")),
            "{label:?} names the role the analysis gives, {name}"
        );
        roles.insert(role);
    }
    assert!(roles.len() >= 2, "one role for every head: {roles:?}");
    harness.get_by_label_contains("Roles, from each head's attention on this text");

    harness.get_by_label("categories").click();
    harness.step();
    harness.step();
    assert!(thumbnails(&harness)
        .iter()
        .all(|(_, label)| !label.contains(" · role ")));
    harness.check_accessibility();
}

/// "Value-weighted" shows N′ (ANALYSIS.md §9): the caption says so, the
/// role captions become the roles N′ gives (some differ from P's on
/// MiniLM, whose separators take attention and write little), and a
/// head's detail gives each P-figure beside its twin.
#[test]
fn the_value_weighted_view_names_the_roles_of_n_prime() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let text = harness.state().text().to_string();
    let analysis = reference(&harness, &text);
    open_tab(&mut harness, CentralView::Heads);
    harness.get_by_label("roles").click();
    harness.get_by_label("Value-weighted").click();
    step_until(&mut harness, "the value-weighted captions", |h| {
        h.query_by_label_contains("Roles, from each head's value-weighted attention N′")
            .is_some()
    });
    harness.get_by_label_contains("value-weighted attention N′, ");
    let shown = thumbnails(&harness);
    assert_eq!(shown.len(), 6 * 12, "{shown:?}");
    let mut changed = 0;
    for (head, label) in &shown {
        let figures = analysis.head(*head).expect("the head's figures");
        assert!(figures.role_vw.is_some(), "{head:?} has a role by N′");
        let name = role_style(figures.role_vw).0;
        assert!(
            label.ends_with(&format!(" · role {name}")),
            "{label:?} names N′'s role, {name}"
        );
        changed += usize::from(figures.role_vw != figures.role);
    }
    assert!(changed > 0, "value weighting changes no head's role");

    let head = HeadId::new(2, 0);
    harness.get_by_label(&thumbnail_of(&harness, head)).click();
    step_until(&mut harness, "the head's detail", |h| {
        h.query_by_label("Layer 2 · Head 0").is_some()
    });
    let f = analysis.head(head).unwrap();
    let sink = format!(
        "{} · N′ {}",
        figure(f.sink_attention, 3),
        figure(f.sink_attention_vw, 3)
    );
    let rows: Vec<String> = harness
        .query_all_by_role(Role::Label)
        .map(|n| text_of(&n))
        .filter(|label| label.contains("N′"))
        .collect();
    assert!(rows.contains(&sink), "{sink} among {rows:?}");
    harness.check_accessibility();
}

#[test]
fn clicking_tokens_picks_them_and_the_views_follow() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    let output = shown(&harness);
    let tokens = &output.input.tokens;
    open_tab(&mut harness, CentralView::TokenFocus);

    // The focus tokens of layer 0 and its focus uniqueness, as analysed.
    let layer = &analysis.layers[0];
    assert!(harness
        .query_by_label(&token_focus::uniqueness_label(0, layer.focus_uniqueness))
        .is_some());
    for (h, f) in layer.heads.iter().enumerate() {
        let row = text_of(&harness.get_by_label_contains(&format!("focus of L0 H{h}: ")));
        let expected = format!(
            "focus token “{}”, focus share {}",
            f.focus_token_id
                .and_then(|id| tokens.readable_of(id))
                .unwrap_or("—".into()),
            figure(f.focus_share, 3)
        );
        assert!(row.contains(&expected), "{row:?} lacks {expected:?}");
    }

    // A click picks a token; each head of the layer shows its row.
    let chip = |i: usize| format!("token {i} “{}”", tokens.readable(i));
    harness.get_by_label(&chip(5)).click();
    harness.step();
    harness.step();
    let picked: Vec<usize> = harness.state().picked_tokens().positions().collect();
    assert_eq!(picked, vec![5]);
    for h in 0..12 {
        let name = token_focus::row_name(5, &tokens.readable(5), HeadId::new(0, h));
        assert!(harness.query_by_label(&name).is_some(), "{name}");
    }

    // Shift-click picks a second one; both get their rows.
    harness
        .get_by_label(&chip(9))
        .click_modifiers(egui::Modifiers::SHIFT);
    harness.step();
    harness.step();
    let picked: Vec<usize> = harness.state().picked_tokens().positions().collect();
    assert_eq!(picked, vec![5, 9]);
    for position in [5, 9] {
        let name = token_focus::row_name(position, &tokens.readable(position), HeadId::new(0, 3));
        assert!(harness.query_by_label(&name).is_some(), "{name}");
    }
    harness.check_accessibility();

    // Shift-clicking a picked token unpicks it.
    harness
        .get_by_label(&chip(5))
        .click_modifiers(egui::Modifiers::SHIFT);
    harness.step();
    harness.step();
    let picked: Vec<usize> = harness.state().picked_tokens().positions().collect();
    assert_eq!(picked, vec![9]);

    // Picking the focus token of some head of layer 0 highlights that head
    // (and every other head focused on the same token id) in the grid.
    let (head, focus_id) = layer
        .heads
        .iter()
        .enumerate()
        .find_map(|(h, f)| Some((HeadId::new(0, h), f.focus_token_id?)))
        .expect("a head with a focus token");
    let position = tokens
        .input_ids
        .iter()
        .position(|&id| id == focus_id)
        .expect("the focus token is in the text");
    harness.get_by_label(&chip(position)).click();
    harness.step();
    harness.step();
    let picked: Vec<usize> = harness.state().picked_tokens().positions().collect();
    assert_eq!(
        picked,
        vec![position],
        "a plain click picks only this token"
    );
    let expected: BTreeSet<HeadId> = (0..analysis.layers.len())
        .flat_map(|l| (0..12).map(move |h| HeadId::new(l, h)))
        .filter(|&id| analysis.head(id).unwrap().focus_token_id == Some(focus_id))
        .collect();
    assert!(expected.contains(&head));
    open_tab(&mut harness, CentralView::Heads);
    assert_eq!(highlighted_heads(&harness), expected);

    // The separators view outlines the same token; its chips pick too.
    open_tab(&mut harness, CentralView::Separators);
    let seg = format!(
        "segmentation token {position} “{}”",
        tokens.readable(position)
    );
    let node = harness.get_by_label(&seg);
    assert_eq!(
        node.accesskit_node().toggled(),
        Some(egui::accesskit::Toggled::True),
        "the picked token is marked in the segmentation"
    );
    harness
        .get_by_label(&chip(2))
        .click_modifiers(egui::Modifiers::SHIFT);
    harness.step();
    harness.step();
    let picked: Vec<usize> = harness.state().picked_tokens().positions().collect();
    assert_eq!(picked, vec![2, position]);
}

/// Clicks `layer`'s accuracy chip in the Separators view (named by
/// `accuracy`), checks the summary the segmentation then shows, and reads
/// its counts: (their text, [correct, content, misplaced, undecided]).
fn shown_segmentation(
    harness: &mut AppHarness,
    layer: usize,
    accuracy: Option<f64>,
    undecided: Option<f64>,
) -> (String, [f64; 4]) {
    harness
        .get_by_label(&separators::accuracy_label(layer, accuracy))
        .click();
    harness.step();
    harness.step();
    let summary = format!(
        "segmentation accuracy of L{layer}: {}, undecided: {}",
        figure(accuracy, 3),
        figure(undecided, 3)
    );
    assert!(harness.query_by_label(&summary).is_some(), "{summary}");
    let counts = text_of(&harness.get_by_label_contains("content tokens attend most"));
    let numbers: Vec<f64> = counts
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(';').parse().ok())
        .collect();
    let numbers = [numbers[0], numbers[1], numbers[2], numbers[3]];
    (counts, numbers)
}

#[test]
fn the_separators_view_shows_segmentation_and_separator_attention() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    open_tab(&mut harness, CentralView::Separators);

    // Every layer's accuracy, as analysed.
    for (l, layer) in analysis.layers.iter().enumerate() {
        let label = separators::accuracy_label(l, layer.segmentation_accuracy);
        assert!(harness.query_by_label(&label).is_some(), "{label}");
    }
    // Choosing layer 2 shows its segmentation; the tokens it marks as
    // misplaced are exactly the ones its accuracy counts.
    let layer2 = &analysis.layers[2];
    let (layer2_accuracy, layer2_undecided) =
        (layer2.segmentation_accuracy, layer2.segmentation_undecided);
    let (counts, [correct, content, misplaced, undecided]) =
        shown_segmentation(&mut harness, 2, layer2_accuracy, layer2_undecided);
    assert_eq!(content as usize, analysis.content_tokens);
    assert_eq!(correct + misplaced + undecided, content, "{counts}");
    assert!(
        (correct / content - layer2.segmentation_accuracy.expect("defined")).abs() < 1e-12,
        "{counts}"
    );
    assert!(
        (undecided / content - layer2.segmentation_undecided.expect("defined")).abs() < 1e-12,
        "{counts}"
    );
    harness.check_accessibility();

    // Each head's separator attention on the grid.
    harness.get_by_label("Show on the Heads grid").click();
    harness.step();
    harness.step();
    assert_eq!(harness.state().central_view(), CentralView::Heads);
    assert!(harness.state().settings().separator_overlay);
    for (l, layer) in analysis.layers.iter().enumerate() {
        for (h, f) in layer.heads.iter().enumerate() {
            let label = text_of(&harness.get_by_label_contains(&format!("L{l} H{h} ")));
            let expected = format!("separator attention {}", figure(f.separator_attention, 2));
            assert!(label.ends_with(&expected), "{label:?}");
        }
    }
}

/// **Value-weighted (N′)** turns the Separators view to the value-weighted
/// attention (ANALYSIS.md §9): every layer's accuracy is its `_vw` twin,
/// and the chosen layer's tokens, assigned from N′, are exactly those the
/// twin counts.
#[test]
fn the_separators_view_reads_n_prime_on_request() {
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    let analysis = reference(&harness, SAMPLE_TEXT);
    open_tab(&mut harness, CentralView::Separators);
    harness.get_by_label("Value-weighted (N′)").click();
    harness.step();
    harness.step();
    for (l, layer) in analysis.layers.iter().enumerate() {
        let label = separators::accuracy_label(l, layer.segmentation_accuracy_vw);
        assert!(harness.query_by_label(&label).is_some(), "{label}");
    }
    let layer3 = &analysis.layers[3];
    assert_ne!(
        layer3.segmentation_accuracy_vw, layer3.segmentation_accuracy,
        "N′ segments otherwise than P in L3"
    );
    let (accuracy, undecided) = (
        layer3.segmentation_accuracy_vw,
        layer3.segmentation_undecided_vw,
    );
    let (counts, [correct, content, ..]) = shown_segmentation(&mut harness, 3, accuracy, undecided);
    assert!(
        (correct / content - layer3.segmentation_accuracy_vw.expect("defined")).abs() < 1e-12,
        "{counts}"
    );
    harness.check_accessibility();
}

#[test]
fn every_view_copes_with_a_one_word_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_text(&mut harness, &dir, "Hello");
    let analysis = reference(&harness, "Hello");
    assert_eq!(analysis.content_tokens, 1);
    assert_eq!(analysis.pairs, 0);

    open_tab(&mut harness, CentralView::Layers);
    let row = text_of(&harness.get_by_label_contains("L0: mean distance"));
    assert!(row.contains("mean distance —"), "{row}");
    assert!(harness
        .query_by_label("No pairs were selected (fewer than two content tokens).")
        .is_some());
    open_tab(&mut harness, CentralView::Separators);
    open_tab(&mut harness, CentralView::TokenFocus);
    // WordPiece: a word-start mark before the word.
    harness.get_by_label("token 1 “·hello”").click();
    harness.step();
    harness.step();
    assert!(harness
        .query_by_label(&token_focus::row_name(1, "·hello", HeadId::new(0, 0)))
        .is_some());
    open_tab(&mut harness, CentralView::Specialisation);
    let row = text_of(&harness.get_by_label_contains("L0 H0: "));
    assert!(row.contains("mean dist. —"), "{row}");
    harness.get_by_label("focus share").click();
    harness.step();
    open_tab(&mut harness, CentralView::Heads);
    assert!(harness.query_by_label_contains("L0 H0 ").is_some());
}

#[test]
fn a_plot_is_saved_as_png_svg_and_pdf() {
    use headscope::app::widgets::plots::{save_label, SAVE_LABEL};
    use headscope::export::FigureFormat;
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::Layers);
    let dir = tempfile::tempdir().unwrap();
    // Histograms, mean distance, fractions, correlation: buttons for each.
    assert_eq!(harness.query_all_by_label(SAVE_LABEL).count(), 4);
    let save = |harness: &mut AppHarness, format: FigureFormat| {
        let path = dir
            .path()
            .join(format!("mean-distance.{}", format.extension()));
        harness
            .state_mut()
            .set_plot_export_target(Some(path.clone()));
        harness
            .query_all_by_label(save_label(format))
            .nth(1)
            .expect("the mean distance plot's button")
            .click();
        step_until(harness, "the plot export", |h| {
            h.state()
                .notice()
                .is_some_and(|n| n.contains(&path.display().to_string()))
        });
        let notice = harness.state().notice().unwrap().to_string();
        assert!(notice.starts_with("Exported"), "{notice}");
        // Kept for a person to look at.
        let keep = std::env::temp_dir().join("headscope-exports");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&path, keep.join(path.file_name().unwrap())).unwrap();
        path
    };

    // The PNG: the plot's title, axes and curve at 300 dpi, at most a page
    // (7 in) wide.
    let png = image::open(save(&mut harness, FigureFormat::Png))
        .expect("a PNG")
        .to_rgb8();
    let (width, height) = png.dimensions();
    assert!(
        (600..=2101).contains(&width) && (300..2000).contains(&height),
        "{width}×{height}"
    );
    // The curve's colour (layers_view's MEAN_DISTANCE) is drawn in it.
    let curve = png.pixels().filter(|p| {
        let [r, g, b] = p.0;
        r.abs_diff(250) < 12 && g.abs_diff(220) < 12 && b.abs_diff(90) < 12
    });
    assert!(curve.count() > 20, "no curve in the exported plot");
    // Paper: white, not the window's dark background.
    assert_eq!(png.get_pixel(1, 1).0, [255; 3]);

    // The SVG: the title and axis labels as text, the curve as a line.
    let svg = std::fs::read_to_string(save(&mut harness, FigureFormat::Svg)).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.iter().any(|t| t.contains("distance")), "{texts:?}");
    assert!(
        texts.contains(&"L0") && texts.contains(&"layer"),
        "{texts:?}"
    );
    assert!(doc
        .descendants()
        .any(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some("#fadc5a")));

    // The PDF: its text is text.
    let pdf = save(&mut harness, FigureFormat::Pdf);
    let text = std::process::Command::new("pdftotext")
        .args([pdf.to_str().unwrap(), "-"])
        .output()
        .expect("pdftotext (poppler-utils) runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("layer") && text.contains("L0"), "{text}");
    assert_eq!(harness.state().central_view(), CentralView::Layers);

    // The text tinted by its attention to [SEP] (Separators): its tokens
    // are text in the PDF.
    open_tab(&mut harness, CentralView::Separators);
    let path = dir.path().join("tinted.pdf");
    harness
        .state_mut()
        .set_plot_export_target(Some(path.clone()));
    harness
        .query_all_by_label(save_label(FigureFormat::Pdf))
        .next()
        .expect("the tinted text's button")
        .click();
    step_until(&mut harness, "the text export", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.contains(&path.display().to_string()))
    });
    let keep = std::env::temp_dir().join("headscope-exports");
    std::fs::copy(&path, keep.join("separator-text.pdf")).unwrap();
    let text = std::process::Command::new("pdftotext")
        .args([path.to_str().unwrap(), "-"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let output = harness.state().shown_output().unwrap().clone();
    let words: Vec<&String> = output
        .input
        .tokens
        .token_texts
        .iter()
        .filter(|t| t.len() > 3 && t.chars().all(char::is_alphabetic))
        .collect();
    assert!(!words.is_empty());
    for word in words {
        assert!(text.contains(word.as_str()), "{word} not in {text}");
    }
    open_tab(&mut harness, CentralView::Layers);
    // The save buttons are back after the export.
    harness.step();
    assert_eq!(harness.query_all_by_label(SAVE_LABEL).count(), 4);

    // An unwritable target is reported, and nothing is written.
    let blocked = dir.path().join("missing-folder").join("plot.png");
    harness
        .state_mut()
        .set_plot_export_target(Some(blocked.clone()));
    harness
        .query_all_by_label(SAVE_LABEL)
        .next()
        .unwrap()
        .click();
    step_until(&mut harness, "the failed export", |h| {
        h.state()
            .notice()
            .is_some_and(|n| n.starts_with("Export failed"))
    });
    assert!(!blocked.exists());
}

/// The logit lens shows its progress (layers done of all, the time left)
/// and Cancel, which stops it and leaves the tab offering to compute it
/// again; computed again, the table comes.
#[test]
fn the_logit_lens_shows_its_progress_and_can_be_cancelled() {
    use headscope::app::views::logit_lens::{COMPUTE_LENS_LABEL, LENS_PROGRESS_LABEL};
    use headscope::app::widgets::progress::CANCEL_LABEL;
    use std::time::Duration;
    let mut harness = start_on_family("llama");
    wait_for_result(&mut harness);
    // The run kept the residual stream after each layer: the lens reads it.
    let output = harness.state().shown_output().unwrap().clone();
    assert!(
        !output.captures.residuals.is_empty(),
        "the run kept no residual stream"
    );
    // A slow model: each of the fixture's 2 layers waits 5 s first (Cancel
    // lands inside the wait even when a busy machine draws a frame a
    // second; the wait ends at the cancel).
    harness
        .state()
        .worker()
        .set_layer_delay(Duration::from_secs(5));
    open_tab(&mut harness, CentralView::LogitLens);
    let first_layer = format!("{LENS_PROGRESS_LABEL} · 1 of 2 layers · ~");
    step_until(&mut harness, "the lens' progress", |h| {
        shows(h, &first_layer)
    });
    let row = label_containing(&harness, &first_layer);
    assert!(row.ends_with(" s left"), "{row}");
    assert!(harness.state().logit_lens_table().is_none());
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("logit-lens-progress.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");

    harness
        .query_all_by_label(CANCEL_LABEL)
        .next()
        .expect("the lens' Cancel")
        .click();
    harness.step();
    harness.step();
    assert!(shows(&harness, "The logit lens was cancelled."));
    assert!(!shows(&harness, LENS_PROGRESS_LABEL));
    // It stays cancelled: no table comes, none is asked for again.
    for _ in 0..30 {
        harness.step();
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(harness.state().logit_lens_table().is_none());
    assert!(shows(&harness, "The logit lens was cancelled."));
    let picture =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("logit-lens-cancelled.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");

    harness.state().worker().set_layer_delay(Duration::ZERO);
    harness.get_by_label(COMPUTE_LENS_LABEL).click();
    step_until(&mut harness, "the logit lens computed again", |h| {
        h.state().logit_lens_table().is_some()
    });
    assert_eq!(
        harness
            .state()
            .logit_lens_table()
            .unwrap()
            .lens
            .layers
            .len(),
        2
    );
    assert!(shows(&harness, "L1"));
    assert!(!shows(&harness, "The logit lens was cancelled."));
    assert!(!shows(&harness, LENS_PROGRESS_LABEL));
    // The lens of the kept stream is the lens of a pass of its own.
    let model = headscope::model::Model::load(
        &headscope::model::ModelSource::Folder(common::family_fixture("llama")),
        &mut |_| {},
    )
    .unwrap();
    let own = model
        .logit_lens(&output.input.tokens.input_ids, 5, &|| false)
        .unwrap();
    assert_eq!(harness.state().logit_lens_table().unwrap().lens, own);
}

#[test]
fn the_logit_lens_reads_as_a_table_of_separate_tokens() {
    // A tiny Llama: every layer's row, each header token in its own cell.
    let mut harness = start_on_family("llama");
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::LogitLens);
    step_until(&mut harness, "the logit lens", |h| {
        h.state().logit_lens_table().is_some()
    });
    harness.step();
    let table = harness.state().logit_lens_table().unwrap().clone();
    let layers = table.lens.layers.len();
    assert!(shows(&harness, &format!("L{}", layers - 1)));
    let output = shown(&harness);
    let tokens = &output.input.tokens;
    // Two neighbouring headers are two widgets that do not touch.
    let (first, second) = (tokens.readable(1), tokens.readable(2));
    let rect = |text: &str| {
        harness
            .query_all_by_label(text)
            .next()
            .unwrap_or_else(|| panic!("the header {text:?}"))
            .rect()
    };
    let (a, b) = (rect(&first), rect(&second));
    assert!(
        b.min.x - a.max.x >= 8.0,
        "{first:?} {a:?} runs into {second:?} {b:?}"
    );
    // A header's hover names the position's token and the model's next.
    harness.query_all_by_label(&first).next().unwrap().hover();
    for _ in 0..8 {
        harness.step();
    }
    assert!(shows(&harness, "position 1: "));
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("logit-lens-llama.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");

    // (Token focus: each head's focus token whole, wrapped in its cell.)
    open_tab(&mut harness, CentralView::TokenFocus);
    harness.step();
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("token-focus-llama.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");
}

/// A head's menu in the grid ablates it (ANALYSIS.md §9): the grid marks
/// it, the row above names it with the effect `Model::ablate` computes on
/// the shown input, the tokens are coloured by it; a second head joins,
/// the mode switches to mean, Undo gives the last change back and
/// "Give every head back" the rest.
#[test]
fn a_heads_menu_ablates_it_and_undo_gives_it_back() {
    use headscope::app::views::heads::ablation::{toggle_label, CLEAR_LABEL, UNDO_LABEL};
    use headscope::model::ablation::{Ablation, AblationMode};
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::Heads);
    let ids = shown(&harness).input.tokens.input_ids.clone();
    let model = common::loaded_test_model();
    let ablate = |harness: &mut AppHarness, head: HeadId| {
        let label = thumbnail_of(harness, head);
        harness.get_by_label(&label).click_secondary();
        let entry = toggle_label(head, false);
        step_until(harness, "the head's menu", |h| {
            h.query_by_label(&entry).is_some()
        });
        harness.get_by_label(&entry).click();
        step_until(harness, "the head ablated", |h| {
            h.state().ablation().is_ablated(head)
        });
        // The row above the grid names it from the next frame on.
        harness.step();
    };
    let effect_shown = |harness: &mut AppHarness, heads: &[(usize, usize)], mode| {
        let expected = model
            .ablate(&ids, &Ablation::new(mode, heads.iter().copied()), &|| false)
            .expect("the reference ablation");
        step_until(harness, "the ablation's effect", |h| {
            h.state()
                .ablation()
                .effect(h.state().shown_generation())
                .is_some()
        });
        // The frame the effect arrived in may still have drawn its
        // progress row: one more, so that a click lands where the row's
        // widgets now are.
        harness.step();
        let generation = harness.state().shown_generation();
        let effect = harness
            .state()
            .ablation()
            .effect(generation)
            .unwrap()
            .clone();
        assert_eq!(effect.ablation, expected.ablation);
        assert!((effect.output_change - expected.output_change).abs() < 1e-9);
        let summary = format!("output change {}", figure(Some(expected.output_change), 5));
        assert!(
            harness.query_by_label_contains(&summary).is_some(),
            "{summary}"
        );
        assert!(harness
            .query_by_label("tokens coloured by the ablation's effect")
            .is_some());
        expected.output_change
    };

    ablate(&mut harness, HeadId::new(1, 3));
    let one = effect_shown(&mut harness, &[(1, 3)], AblationMode::Zero);
    assert!(one > 0.0, "ablating a head moves the output");
    assert!(harness.query_by_label("Ablated: L1 H3").is_some());
    let marked: Vec<HeadId> = thumbnails(&harness)
        .into_iter()
        .filter(|(_, label)| label.contains("· ablated"))
        .map(|(head, _)| head)
        .collect();
    assert_eq!(marked, [HeadId::new(1, 3)]);

    ablate(&mut harness, HeadId::new(4, 0));
    assert!(harness.query_by_label("Ablated: L1 H3, L4 H0").is_some());
    effect_shown(&mut harness, &[(1, 3), (4, 0)], AblationMode::Zero);
    harness.get_by_label("mean").click();
    harness.step();
    effect_shown(&mut harness, &[(1, 3), (4, 0)], AblationMode::Mean);

    harness.get_by_label(UNDO_LABEL).click();
    harness.step();
    harness.step();
    assert!(harness.query_by_label("Ablated: L1 H3").is_some());
    effect_shown(&mut harness, &[(1, 3)], AblationMode::Mean);
    harness.get_by_label(CLEAR_LABEL).click();
    harness.step();
    harness.step();
    assert!(harness.state().ablation().heads().is_empty());
    assert!(thumbnails(&harness)
        .iter()
        .all(|(_, label)| !label.contains("· ablated")));

    // A head's detail has the same switch, and the same row.
    let head = HeadId::new(2, 5);
    let label = thumbnail_of(&harness, head);
    harness.get_by_label(&label).click();
    step_until(&mut harness, "the head's detail", |h| {
        h.state().detail_head() == Some(head)
    });
    harness.get_by_label(&toggle_label(head, false)).click();
    step_until(&mut harness, "the head ablated", |h| {
        h.state().ablation().is_ablated(head)
    });
    effect_shown(&mut harness, &[(2, 5)], AblationMode::Mean);
    assert!(harness.query_by_label("Ablated: L2 H5").is_some());
    harness.get_by_label(&toggle_label(head, true)).click();
    harness.step();
    harness.step();
    assert!(harness.state().ablation().heads().is_empty());

    // The key A does the same in the detail, and over a thumbnail.
    harness.key_press(egui::Key::A);
    step_until(&mut harness, "the shown head ablated by its key", |h| {
        h.state().ablation().is_ablated(head)
    });
    harness.key_press(egui::Key::A);
    step_until(&mut harness, "the shown head given back by its key", |h| {
        h.state().ablation().heads().is_empty()
    });
    harness.key_press(egui::Key::Escape);
    step_until(&mut harness, "the grid", |h| {
        h.state().detail_head().is_none()
    });
    let other = HeadId::new(3, 1);
    harness.get_by_label(&thumbnail_of(&harness, other)).hover();
    harness.step();
    harness.key_press(egui::Key::A);
    step_until(&mut harness, "the hovered head ablated by its key", |h| {
        h.state().ablation().is_ablated(other)
    });
    assert_eq!(harness.state().ablation().heads(), [other]);
    harness.check_accessibility();
}

/// "Show the ablated run" (ANALYSIS.md §9: "the figures of later layers
/// update"): once a head's ablation is done, the grid shows the run of the
/// ablated model, analysed: its captions name the ablated run's categories; the
/// layers before the ablated head keep their figures, later ones move, as
/// the same run outside the app gives them.
#[test]
fn the_ablated_runs_figures_replace_the_grids_on_request() {
    use headscope::app::views::heads::ablation::{toggle_label, SHOW_ABLATED_LABEL};
    use headscope::model::ablation::{Ablation, AblationMode};
    use headscope::pipeline::AblatedWatch;
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::Heads);
    let base = shown(&harness);
    let head = HeadId::new(2, 7);
    harness
        .get_by_label(&thumbnail_of(&harness, head))
        .click_secondary();
    step_until(&mut harness, "the head's menu", |h| {
        h.query_by_label(&toggle_label(head, false)).is_some()
    });
    harness.get_by_label(&toggle_label(head, false)).click();
    step_until(&mut harness, "the ablation's answer", |h| {
        h.query_by_label(SHOW_ABLATED_LABEL).is_some()
    });
    // The ablated run is a third pass, made only when asked for.
    harness.get_by_label(SHOW_ABLATED_LABEL).click();
    step_until(&mut harness, "the ablated run", |h| {
        let generation = h.state().shown_generation();
        h.state().ablation().shown_run(generation).is_some()
    });
    let generation = harness.state().shown_generation();
    let run = harness
        .state()
        .ablation()
        .shown_run(generation)
        .expect("the ablated run is shown")
        .0
        .clone();
    assert_eq!(run.input.tokens, base.input.tokens);
    let (before, after) = (&base.analysis.layers, &run.analysis.layers);
    assert_eq!(after[..2], before[..2], "nothing changes before layer 2");
    assert!(
        (3..6).any(|l| after[l].mean_distance != before[l].mean_distance),
        "the later layers move"
    );
    // The same ablated run outside the app.
    let ablation = Ablation::new(AblationMode::Zero, [(2, 7)]);
    let watch = AblatedWatch {
        inner: &|| false,
        ablation: &ablation,
    };
    let settings = harness.state().settings().analysis_options();
    let reference = pipeline::run_prepared(
        common::loaded_test_model(),
        base.input.clone(),
        &settings,
        &watch,
    )
    .expect("the reference run");
    for (l, (ours, theirs)) in after.iter().zip(&reference.analysis.layers).enumerate() {
        for (figure, a, b) in [
            ("sink", ours.sink_attention, theirs.sink_attention),
            ("share", ours.segmentation_share, theirs.segmentation_share),
        ] {
            let (a, b) = (a.unwrap(), b.unwrap());
            assert!((a - b).abs() < 1e-6, "L{l} {figure}: {a} vs {b}");
        }
    }
    let moved = |f: fn(&headscope::analysis::HeadFigures) -> Option<Category>| {
        base.captures
            .head_ids()
            .filter(|&id| base.analysis.head(id).and_then(f) != run.analysis.head(id).and_then(f))
            .count()
    };
    assert!(moved(|f| f.category) > 0, "some head's category moves");
    // The grid's captions are the ablated run's.
    step_until(&mut harness, "the ablated run's captions", |h| {
        let shown = thumbnails(h);
        shown.len() == 6 * 12
            && shown.iter().all(|(head, label)| {
                let category = run.analysis.head(*head).and_then(|f| f.category);
                let caption = thumbnail_label(*head, category);
                *label == caption || label.starts_with(&format!("{caption} "))
            })
    });
    harness.check_accessibility();
}

/// "Each head's importance" ablates every head alone and draws the effect
/// on its thumbnail: the grid's numbers are `Model::head_importance`'s.
#[test]
fn each_heads_importance_is_drawn_on_the_grid() {
    use headscope::app::views::heads::ablation::{HIDE_IMPORTANCE_LABEL, IMPORTANCE_LABEL};
    use headscope::model::ablation::AblationMode;
    let mut harness = start(None, None);
    wait_for_result(&mut harness);
    open_tab(&mut harness, CentralView::Heads);
    let ids = shown(&harness).input.tokens.input_ids.clone();
    let expected = common::loaded_test_model()
        .head_importance(&ids, AblationMode::Zero, &|| false, &|_, _| {})
        .expect("the reference importance");
    assert!(
        expected.delta_loss.is_none(),
        "an encoder has no next-token loss"
    );
    harness.get_by_label(IMPORTANCE_LABEL).click();
    step_until(&mut harness, "every head's importance", |h| {
        thumbnails(h)
            .iter()
            .all(|(_, label)| label.contains("· importance "))
    });
    let heads = expected.heads;
    for (head, label) in thumbnails(&harness) {
        let value = expected.output_change[head.layer * heads + head.head];
        let shown = format!("· importance {value:+.4}");
        assert!(label.contains(&shown), "{label} lacks {shown}");
    }
    harness.get_by_label(HIDE_IMPORTANCE_LABEL).click();
    harness.step();
    harness.step();
    assert!(thumbnails(&harness)
        .iter()
        .all(|(_, label)| !label.contains("· importance")));
    harness.check_accessibility();
}
