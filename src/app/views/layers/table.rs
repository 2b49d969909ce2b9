//! The Layers view's per-layer table: every layer's pooled figures, one
//! row each; a click on a row shows that layer's heads.

use crate::analysis::Analysis;
use crate::app::widgets::format::figure;
use crate::app::widgets::table::{self, Cell, Column, RowLook};
use std::borrow::Cow;

pub const LAYER_COLUMNS: [Column; 10] = [
    Column {
        title: Cow::Borrowed("layer"),
        width: 56.0,
        tooltip: "Click a row to see the layer's heads",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("mean distance"),
        width: 100.0,
        tooltip: "Mean of j − i over the selected pairs of all heads, pooled",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("same sentence"),
        width: 104.0,
        tooltip: "Share of the pooled pairs within one sentence (chance: the share over all candidate pairs)",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("separator attention"),
        width: 128.0,
        tooltip: "Mean over heads of the attention content tokens pay to [SEP]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("focus uniqueness"),
        width: 116.0,
        tooltip: "Distinct focus tokens among the heads that have one, divided by the number of such heads",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("segmentation accuracy"),
        width: 150.0,
        tooltip: "Share of content tokens whose most attended [SEP] (head-averaged) closes their own sentence",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("undecided"),
        width: 84.0,
        tooltip: "Share of content tokens whose two largest [SEP] attentions tie (within 1e-4): assigned to no separator",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("own separator"),
        width: 104.0,
        tooltip: "Mean share of a content token's [SEP] attention (head-averaged) that goes to the [SEP] closing its own sentence; in brackets what an even spread gives",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("sink attention"),
        width: 104.0,
        tooltip: "Mean over heads of the attention content tokens pay to the first position ([CLS])",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("pairs"),
        width: 60.0,
        tooltip: "Selected pairs of all heads, pooled",
        numeric: true,
    },
];

/// The cells of one layer's row, as displayed.
pub fn layer_cells(analysis: &Analysis, layer: usize) -> Vec<Cell> {
    let Some(l) = analysis.layers.get(layer) else {
        return Vec::new();
    };
    let pooled: usize = l.heads.iter().map(|h| h.selected_pairs.len()).sum();
    vec![
        Cell::new(format!("L{layer}")),
        Cell::new(figure(l.mean_distance, 2)),
        Cell::new(figure(l.same_sentence_fraction, 3)),
        Cell::new(figure(l.separator_attention, 3)),
        Cell::new(figure(l.focus_uniqueness, 3)),
        Cell::new(figure(l.segmentation_accuracy, 3)),
        Cell::new(figure(l.segmentation_undecided, 3)),
        Cell::new(match l.segmentation_share {
            Some(_) => format!(
                "{} ({})",
                figure(l.segmentation_share, 3),
                figure(l.segmentation_share_chance, 3)
            ),
            None => figure(None, 3),
        }),
        Cell::new(figure(l.sink_attention, 3)),
        Cell::new(pooled.to_string()),
    ]
}

/// The per-layer table; returns the layer whose row was clicked.
pub fn figures_table(ui: &mut egui::Ui, analysis: &Analysis, width: f32) -> Option<usize> {
    let widths = table::fit_widths(&LAYER_COLUMNS, width);
    let mut clicked = None;
    ui.spacing_mut().item_spacing.y = 0.0;
    table::header_row(ui, "layer table header", &LAYER_COLUMNS, &widths, None);
    for layer in 0..analysis.layers.len() {
        let cells = layer_cells(analysis, layer);
        let name = format!(
            "L{layer}: {}",
            table::describe(&LAYER_COLUMNS[1..], &cells[1..])
        );
        let response = table::data_row(
            ui,
            ui.scope_id().with(("layer row", layer)),
            &widths,
            &LAYER_COLUMNS,
            &cells,
            &name,
            RowLook {
                striped: layer % 2 == 1,
                tint: None,
            },
        );
        if response
            .on_hover_text(format!("Show the heads of L{layer}"))
            .clicked()
        {
            clicked = Some(layer);
        }
    }
    ui.add_space(4.0);
    ui.weak(format!(
        "same sentence by chance: {}",
        figure(analysis.baseline_same_sentence_fraction, 3)
    ));
    clicked
}
