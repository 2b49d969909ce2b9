//! The Layers view's per-layer table: every layer's pooled figures, one
//! row each; a click on a row shows that layer's heads. The figures made
//! from P are shown as they are or as their value-weighted twins, made
//! from N′ (ANALYSIS.md §9).

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

/// The columns of the figures made from P (separator attention,
/// segmentation accuracy, undecided, own separator, sink attention).
const ATTENTION_COLUMNS: [usize; 5] = [3, 5, 6, 7, 8];

/// The table's columns: with `weighted`, those of the figures made from P
/// name their value-weighted twins.
pub fn layer_columns(weighted: bool) -> Vec<Column> {
    let mut columns = LAYER_COLUMNS.to_vec();
    if weighted {
        for c in ATTENTION_COLUMNS {
            columns[c].title = Cow::Owned(format!("{} N′", columns[c].title));
            columns[c].width += 16.0;
            columns[c].tooltip = "The same figure made from N′, the attention weighted by the \
                                  size of what each key writes through the head (_vw)";
        }
    }
    columns
}

/// The cells of one layer's row, as displayed: with `weighted`, the
/// value-weighted twins of the figures made from P.
pub fn layer_cells(analysis: &Analysis, layer: usize, weighted: bool) -> Vec<Cell> {
    let Some(l) = analysis.layers.get(layer) else {
        return Vec::new();
    };
    let pooled: usize = l.heads.iter().map(|h| h.selected_pairs.len()).sum();
    let pick = |plain: Option<f64>, twin: Option<f64>| if weighted { twin } else { plain };
    let share = pick(l.segmentation_share, l.segmentation_share_vw);
    vec![
        Cell::new(format!("L{layer}")),
        Cell::new(figure(l.mean_distance, 2)),
        Cell::new(figure(l.same_sentence_fraction, 3)),
        Cell::new(figure(
            pick(l.separator_attention, l.separator_attention_vw),
            3,
        )),
        Cell::new(figure(l.focus_uniqueness, 3)),
        Cell::new(figure(
            pick(l.segmentation_accuracy, l.segmentation_accuracy_vw),
            3,
        )),
        Cell::new(figure(
            pick(l.segmentation_undecided, l.segmentation_undecided_vw),
            3,
        )),
        Cell::new(match share {
            Some(_) => format!(
                "{} ({})",
                figure(share, 3),
                figure(l.segmentation_share_chance, 3)
            ),
            None => figure(None, 3),
        }),
        Cell::new(figure(pick(l.sink_attention, l.sink_attention_vw), 3)),
        Cell::new(pooled.to_string()),
    ]
}

/// Whether the analysis has the value-weighted figures (a capture file
/// without value norms has none).
pub fn has_value_weighted(analysis: &Analysis) -> bool {
    (analysis.layers.iter())
        .any(|l| l.separator_attention_vw.is_some() || l.sink_attention_vw.is_some())
}

/// The switch between the figures made from P and their value-weighted
/// twins; off, and disabled, for an analysis without the twins.
pub fn weighting_switch(ui: &mut egui::Ui, analysis: &Analysis, weighted: &mut bool) {
    let available = has_value_weighted(analysis);
    if !available {
        *weighted = false;
    }
    ui.add_enabled_ui(available, |ui| {
        ui.selectable_value(weighted, false, FROM_P_LABEL)
            .on_hover_text("The separator, segmentation and sink figures of the attention P");
        ui.selectable_value(weighted, true, FROM_N_LABEL)
            .on_hover_text(
                "The same figures of N′: the attention weighted by the size of what each key \
                 writes through the head (‖v W_O‖, Kobayashi et al. 2020). A sink that takes \
                 attention but writes little fades",
            )
            .on_disabled_hover_text("This result has no value norms (a capture file without them)");
    });
}

/// The switch's two sides.
pub const FROM_P_LABEL: &str = "From P";
pub const FROM_N_LABEL: &str = "From N′";

/// The per-layer table, its figures made from P or, with `weighted`, from
/// N′; returns the layer whose row was clicked.
pub fn figures_table(
    ui: &mut egui::Ui,
    analysis: &Analysis,
    width: f32,
    weighted: bool,
) -> Option<usize> {
    let columns = layer_columns(weighted);
    let widths = table::fit_widths(&columns, width);
    let mut clicked = None;
    ui.spacing_mut().item_spacing.y = 0.0;
    table::header_row(ui, "layer table header", &columns, &widths, None);
    for layer in 0..analysis.layers.len() {
        let cells = layer_cells(analysis, layer, weighted);
        let name = format!("L{layer}: {}", table::describe(&columns[1..], &cells[1..]));
        let response = table::data_row(
            ui,
            ui.scope_id().with(("layer row", layer)),
            &widths,
            &columns,
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
