//! The app on every encoder family: each fixture model of
//! `tests/fixtures/families` (BERT, RoBERTa, XLM-RoBERTa, CamemBERT,
//! DistilBERT, ELECTRA, ALBERT) opened with its text, driven through the
//! accessibility tree like `tests/app/ui.rs`: the grid shows every head of
//! every attention layer, each of the study's views opens and shows the
//! model's own tokens (`<s>` and `</s>` for the RoBERTa family), a head
//! opens, and the model panel names the family.

use crate::common;

use common::app::{open_tab, start_on_family, step_until, text_of, wait_for_result};
use common::*;
use egui::Role;
use egui_kittest::kittest::{NodeT, Queryable};
use headscope::app::views::CentralView;
use headscope::captures::HeadId;
use headscope::model::{Family, ModelConfig};

fn check_family(name: &str) {
    let config = ModelConfig::from_file(&family_fixture(name).join("config.json")).unwrap();
    let (layers, heads) = (config.attention_layers(), config.num_attention_heads);
    let mut harness = start_on_family(name);
    wait_for_result(&mut harness);
    let output = harness.state().shown_output().unwrap().clone();
    assert_eq!(output.analysis.layers.len(), layers, "{name}");
    let tokens = &output.input.tokens;
    let (start, separator) = match config.family {
        Family::Roberta | Family::XlmRoberta | Family::Camembert => ("<s>", "</s>"),
        _ => ("[CLS]", "[SEP]"),
    };
    assert_eq!(tokens.token_texts[0], start, "{name}");
    let last = tokens.len() - 1;
    assert_eq!(tokens.token_texts[last], separator, "{name}");

    // The grid: every head of every attention layer (ALBERT's shared layers
    // each time they run).
    for l in 0..layers {
        for h in 0..heads {
            let label = format!("L{l} H{h} ");
            let node = harness.get_by_label_contains(&label);
            assert_eq!(node.accesskit_node().role(), Role::Button, "{name} {label}");
        }
    }

    open_tab(&mut harness, CentralView::Layers);
    for l in 0..layers {
        assert!(
            harness
                .query_by_label_contains(&format!("L{l}: mean distance"))
                .is_some(),
            "{name}: the Layers row of L{l}"
        );
    }

    // The separators view lists the tokens with the tokenizer's texts.
    open_tab(&mut harness, CentralView::Separators);
    let chip = format!("token {last} “{separator}”");
    assert!(
        harness.query_by_label(&chip).is_some(),
        "{name}: no chip {chip:?}"
    );
    assert!(harness
        .query_by_label(&format!("token 0 “{start}”"))
        .is_some());

    open_tab(&mut harness, CentralView::TokenFocus);
    open_tab(&mut harness, CentralView::Specialisation);
    let rows = harness
        .query_all_by_role(Role::Button)
        .filter(|n| text_of(n).contains(": category "))
        .count();
    assert_eq!(rows, layers * heads, "{name}: one row per head");

    // The last layer's row of the Layers table shows that layer's heads in
    // the grid, and its last head opens.
    open_tab(&mut harness, CentralView::Layers);
    let last_layer = layers - 1;
    harness
        .get_by_label_contains(&format!("L{last_layer}: mean distance"))
        .click();
    step_until(&mut harness, "the layer's grid", |h| {
        h.state().grid_layer() == Some(last_layer)
    });
    assert_eq!(harness.state().central_view(), CentralView::Heads);
    let head = HeadId::new(last_layer, heads - 1);
    harness
        .get_by_label_contains(&format!("L{} H{} ", head.layer, head.head))
        .click();
    step_until(&mut harness, "the head detail", |h| {
        h.state().detail_head() == Some(head)
    });
    assert!(harness
        .query_by_label(&format!("Layer {} · Head {}", head.layer, head.head))
        .is_some());

    // The model panel names the family and the families that load.
    common::app::assert_model_panel_names(&mut harness, config.family);
    assert!(harness
        .query_all_by_label_contains("Loads BERT, RoBERTa")
        .next()
        .is_some());
}

#[test]
fn the_app_opens_every_family() {
    for name in FAMILY_FIXTURES {
        check_family(name);
    }
}
