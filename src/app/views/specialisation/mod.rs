//! Head specialisation: one sortable row per head with the study's figures
//! (ANALYSIS.md §4), the classic attention statistics of Clark et al.
//! (2019), "What does BERT look at?" (entropy, attention to `[CLS]`,
//! `[SEP]`, punctuation, the token itself, the previous and the next
//! token), and each head's role with the scores that give it (§9): sorted
//! by a score, the table lists the previous-token, duplicate-token or
//! induction heads first.
//!
//! Clicking a column title sorts by it (again: the other way round;
//! undefined figures always sort last); the category buttons filter the
//! rows, and the same choice highlights those heads in the Heads grid;
//! clicking a row opens that head. Rows of heads whose focus token is a
//! picked token are tinted. The sorted order is kept until the result,
//! the sort or the filter changes. The same heads show as a scatter of any
//! two of the figures ([`scatter`]).

pub mod scatter;

use crate::analysis::{Analysis, Category, HeadFigures};
use crate::app::views::shared::selection::TokenSelection;
use crate::app::views::shared::{View, ViewAction, ViewContext};
use crate::app::widgets::format::{category_style, figure, role_style};
use crate::app::widgets::table::{self, Cell, Column, RowLook};
use crate::captures::HeadId;
use crate::pipeline::RunOutput;
use crate::tokens::TokenSequence;
use std::borrow::Cow;
use std::cmp::Ordering;

/// The table's columns, in order.
pub const COLUMNS: [Column; 24] = [
    Column {
        title: Cow::Borrowed("head"),
        width: 72.0,
        tooltip: "Layer and head; click a row to open the head",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("category"),
        width: 84.0,
        tooltip: "repetition if repetition ≥ 0.5, else focus if focus share ≥ 0.5, \
                  else local if local ≥ 0.5, else mixed",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("mean dist."),
        width: 74.0,
        tooltip: "mean_distance: mean of j − i over the head's selected pairs",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("same sent."),
        width: 74.0,
        tooltip: "same_sentence_fraction: share of the selected pairs within one sentence",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("repetition"),
        width: 76.0,
        tooltip: "repetition_fraction: share of the selected pairs of identical token ids",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("focus token"),
        width: 96.0,
        tooltip: "focus_token: the token id most frequent among the pairs' endpoints",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("focus share"),
        width: 76.0,
        tooltip: "focus_share: share of the pairs with an endpoint on the focus token",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("local"),
        width: 62.0,
        tooltip: "local_fraction: share of the pairs in one sentence with j − i ≤ w",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("sep. attn."),
        width: 72.0,
        tooltip: "separator_attention: mean over content query tokens of the attention to [SEP]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("sink"),
        width: 58.0,
        tooltip: "sink_attention: mean over content query tokens of the attention to the first position ([CLS])",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("entropy"),
        width: 66.0,
        tooltip: "Mean over query rows of −Σ p ln p (nats)",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("[CLS]"),
        width: 58.0,
        tooltip: "Mean attention to [CLS] (all query rows)",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("[SEP]"),
        width: 58.0,
        tooltip: "Mean attention to [SEP] (all query rows, special ones too)",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("punct."),
        width: 58.0,
        tooltip: "Mean attention to punctuation tokens",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("self"),
        width: 58.0,
        tooltip: "Mean attention of a token to itself, P[i, i]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("prev."),
        width: 58.0,
        tooltip: "Mean attention to the previous token, P[i, i − 1]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("next"),
        width: 58.0,
        tooltip: "Mean attention to the next token, P[i, i + 1]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("role"),
        width: 128.0,
        tooltip: "role: the largest of the previous-token, duplicate-token, induction, \
                  sink, separator and self scores when at least 0.4 and 0.1 above the \
                  next, else mixed",
        numeric: false,
    },
    Column {
        title: Cow::Borrowed("prev. token"),
        width: 80.0,
        tooltip: "previous_token_score: mean over content queries of P[i, i − 1]",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("duplicate"),
        width: 76.0,
        tooltip: "duplicate_token_score: mean over queries whose token occurred before \
                  of the attention on its earlier occurrences",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("induction"),
        width: 76.0,
        tooltip: "induction_score: mean over queries whose token occurred before of the \
                  attention on the tokens that followed those occurrences",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("sep. N′"),
        width: 64.0,
        tooltip: "separator_attention_vw: the separator attention of the value-weighted \
                  attention N′ (each key's attention weighted by the size of what it writes)",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("sink N′"),
        width: 64.0,
        tooltip: "sink_attention_vw: the attention on the first position in N′: how much \
                  of a sink survives weighting by what the first token writes",
        numeric: true,
    },
    Column {
        title: Cow::Borrowed("role N′"),
        width: 128.0,
        tooltip: "role_vw: the role the scores of N′ give",
        numeric: false,
    },
];

/// Where the study's figures end and the attention statistics begin.
const FIRST_STATISTIC: usize = 10;
/// Where the attention statistics end and the roles begin.
const FIRST_ROLE: usize = 17;
/// Where the roles end and the value-weighted twins begin.
const FIRST_WEIGHTED: usize = 21;

/// What the cached order depends on: generation, sort, filter.
type OrderKey = (u64, (usize, bool), Option<Category>);

/// The Specialisation tab: the table's sort and its cached order, and
/// the scatter's choices.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpecialisationView {
    /// The column sorted by, and whether descending (default: by head).
    pub sort: (usize, bool),
    /// The rows in display order, for the key they were sorted under.
    order: Option<(OrderKey, Vec<HeadId>)>,
    /// The heads are shown as a scatter instead of the table.
    pub shows_scatter: bool,
    pub scatter: scatter::Scatter,
}

/// A sortable value of one cell.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum SortValue {
    Number(f64),
    Text(String),
}

/// The value of column `column` of a head's row where it is a number
/// (`None` where it is undefined or not a number).
fn figure_value(head: HeadId, f: &HeadFigures, column: usize) -> Option<f64> {
    let s = f.attention_stats;
    let value = match column {
        0 => Some((head.layer * 100_000 + head.head) as f64),
        2 => f.mean_distance,
        3 => f.same_sentence_fraction,
        4 => f.repetition_fraction,
        6 => f.focus_share,
        7 => f.local_fraction,
        8 => f.separator_attention,
        9 => f.sink_attention,
        10 => s.map(|s| s.entropy),
        11 => s.map(|s| s.cls),
        12 => s.map(|s| s.sep),
        13 => s.map(|s| s.punctuation),
        14 => s.map(|s| s.self_attention),
        15 => s.map(|s| s.previous),
        16 => s.map(|s| s.next),
        18 => f.previous_token_score,
        19 => f.duplicate_token_score,
        20 => f.induction_score,
        21 => f.separator_attention_vw,
        22 => f.sink_attention_vw,
        _ => None,
    };
    value.filter(|v| v.is_finite())
}

fn sort_value(
    head: HeadId,
    f: &HeadFigures,
    column: usize,
    tokens: &TokenSequence,
) -> Option<SortValue> {
    match column {
        1 => f.category.map(|c| SortValue::Text(c.as_str().to_string())),
        // As shown: `·the`, not `Ġthe`.
        5 => f
            .focus_token_id
            .and_then(|id| tokens.readable_of(id))
            .or_else(|| f.focus_token.clone())
            .map(SortValue::Text),
        17 => f
            .role
            .map(|r| SortValue::Text(role_style(Some(r)).0.to_string())),
        23 => f
            .role_vw
            .map(|r| SortValue::Text(role_style(Some(r)).0.to_string())),
        _ => figure_value(head, f, column).map(SortValue::Number),
    }
}

/// The heads of `analysis` in `category` (all for `None`), sorted; focus
/// tokens as `tokens` shows them.
pub fn sorted_heads(
    analysis: &Analysis,
    sort: (usize, bool),
    category: Option<Category>,
    tokens: &TokenSequence,
) -> Vec<HeadId> {
    let mut rows: Vec<(HeadId, Option<SortValue>)> = analysis
        .layers
        .iter()
        .enumerate()
        .flat_map(|(l, layer)| {
            layer
                .heads
                .iter()
                .enumerate()
                .map(move |(h, f)| (HeadId::new(l, h), f))
        })
        .filter(|(_, f)| category.is_none() || f.category == category)
        .map(|(id, f)| (id, sort_value(id, f, sort.0, tokens)))
        .collect();
    let (_, descending) = sort;
    rows.sort_by(|(a_id, a), (b_id, b)| {
        let by_value = match (a, b) {
            (Some(a), Some(b)) => {
                let order = a.partial_cmp(b).unwrap_or(Ordering::Equal);
                if descending {
                    order.reverse()
                } else {
                    order
                }
            }
            // Undefined figures last, whichever the direction.
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_value.then(a_id.cmp(b_id))
    });
    rows.into_iter().map(|(id, _)| id).collect()
}

/// The cells of one head's row, as displayed; the focus token as
/// `tokens` shows it.
pub fn head_cells(head: HeadId, f: &HeadFigures, tokens: &TokenSequence) -> Vec<Cell> {
    let s = f.attention_stats;
    let (name, colour) = category_style(f.category);
    let (role, role_colour) = role_style(f.role);
    // No value norms (a capture without them): no role by N′.
    let (role_vw, role_vw_colour) = match f.role_vw {
        Some(_) => role_style(f.role_vw),
        None => ("—", egui::Color32::from_gray(130)),
    };
    let focus = match (
        f.focus_token_id.and_then(|id| tokens.readable_of(id)),
        &f.focus_token,
    ) {
        (Some(text), _) => format!("“{text}”"),
        (None, Some(text)) => format!("“{text}”"),
        (None, None) => "—".into(),
    };
    let stat = |v: Option<f64>| figure(v, 3);
    vec![
        Cell::new(format!("L{} H{}", head.layer, head.head)),
        Cell::coloured(name, colour),
        Cell::new(figure(f.mean_distance, 2)),
        Cell::new(figure(f.same_sentence_fraction, 3)),
        Cell::new(figure(f.repetition_fraction, 3)),
        Cell::new(focus),
        Cell::new(figure(f.focus_share, 3)),
        Cell::new(figure(f.local_fraction, 3)),
        Cell::new(figure(f.separator_attention, 3)),
        Cell::new(figure(f.sink_attention, 3)),
        Cell::new(stat(s.map(|s| s.entropy))),
        Cell::new(stat(s.map(|s| s.cls))),
        Cell::new(stat(s.map(|s| s.sep))),
        Cell::new(stat(s.map(|s| s.punctuation))),
        Cell::new(stat(s.map(|s| s.self_attention))),
        Cell::new(stat(s.map(|s| s.previous))),
        Cell::new(stat(s.map(|s| s.next))),
        Cell::coloured(role, role_colour),
        Cell::new(figure(f.previous_token_score, 3)),
        Cell::new(figure(f.duplicate_token_score, 3)),
        Cell::new(figure(f.induction_score, 3)),
        Cell::new(figure(f.separator_attention_vw, 3)),
        Cell::new(figure(f.sink_attention_vw, 3)),
        Cell::coloured(role_vw, role_vw_colour),
    ]
}

/// The columns of [`COLUMNS`] a model's table shows, as it names them.
pub struct ShownColumns {
    pub columns: Vec<Column>,
    /// Each shown column's index in [`COLUMNS`].
    pub original: Vec<usize>,
}

/// The index in [`COLUMNS`] of the attention to the start token.
const START_COLUMN: usize = 11;
/// The index in [`COLUMNS`] of the attention to the separators.
const SEPARATOR_COLUMN: usize = 12;

impl ShownColumns {
    /// The columns for `tokens`' model: the attention statistics to its
    /// own start and separator tokens (`<s>`, `</s>` for RoBERTa; a
    /// decoder's BOS and sentence ends), and no start column where the
    /// model's input has no start token (GPT-2).
    pub fn of(tokens: &TokenSequence) -> Self {
        let start = tokens.cls_positions().first().map(|&i| tokens.readable(i));
        let separator = if tokens.sentence_final_separators() {
            "ends".to_string()
        } else {
            tokens.text_of(tokens.sep_id).unwrap_or("[SEP]").to_string()
        };
        let mut shown = ShownColumns {
            columns: Vec::new(),
            original: Vec::new(),
        };
        for (index, column) in COLUMNS.iter().enumerate() {
            let mut column = column.clone();
            match index {
                START_COLUMN => match &start {
                    Some(name) => column.title = Cow::Owned(name.clone()),
                    None => continue,
                },
                SEPARATOR_COLUMN => column.title = Cow::Owned(separator.clone()),
                _ => {}
            }
            shown.columns.push(column);
            shown.original.push(index);
        }
        shown
    }

    /// The shown cells of a row of [`head_cells`].
    pub fn cells(&self, cells: Vec<Cell>) -> Vec<Cell> {
        let mut cells: Vec<Option<Cell>> = cells.into_iter().map(Some).collect();
        self.original
            .iter()
            .filter_map(|&i| cells.get_mut(i).and_then(Option::take))
            .collect()
    }

    /// Where column `original` of [`COLUMNS`] is shown.
    fn position(&self, original: usize) -> Option<usize> {
        self.original.iter().position(|&i| i == original)
    }
}

/// The accessible name of a head's row: "L3 H5: category focus, mean dist. 4.21, …".
pub fn row_name(
    columns: &ShownColumns,
    head: HeadId,
    f: &HeadFigures,
    tokens: &TokenSequence,
) -> String {
    let cells = columns.cells(head_cells(head, f, tokens));
    format!(
        "L{} H{}: {}",
        head.layer,
        head.head,
        table::describe(&columns.columns[1..], &cells[1..])
    )
}

/// The label of a category filter button.
pub fn filter_label(category: Option<Category>) -> String {
    match category {
        Some(c) => format!("{c} heads"),
        None => "all heads".to_string(),
    }
}

impl View for SpecialisationView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        let shared = &mut *cx.shared;
        table_ui(
            ui,
            cx.output,
            cx.generation,
            self,
            &mut shared.category,
            &shared.selection,
        )
    }
}

/// The whole view.
fn table_ui(
    ui: &mut egui::Ui,
    output: &RunOutput,
    generation: u64,
    state: &mut SpecialisationView,
    category: &mut Option<Category>,
    selection: &TokenSelection,
) -> Option<ViewAction> {
    let analysis = &output.analysis;
    let total: usize = analysis.layers.iter().map(|l| l.heads.len()).sum();
    ui.heading("Head specialisation");
    ui.horizontal_wrapped(|ui| {
        ui.label("Show");
        let count = |c: Category| {
            analysis
                .layers
                .iter()
                .flat_map(|l| &l.heads)
                .filter(|f| f.category == Some(c))
                .count()
        };
        ui.selectable_value(category, None, filter_label(None))
            .on_hover_text(format!("{total} heads"));
        for c in Category::ALL {
            let (_, colour) = category_style(Some(c));
            let text = egui::RichText::new(filter_label(Some(c))).color(colour);
            let n = count(c);
            ui.selectable_value(category, Some(c), text)
                .on_hover_text(format!(
                    "{n} head{} of category {c}; also highlighted in the Heads grid",
                    if n == 1 { "" } else { "s" }
                ));
        }
    });

    ui.horizontal(|ui| {
        ui.selectable_value(&mut state.shows_scatter, false, "Table")
            .on_hover_text("One row per head, sortable by any figure");
        ui.selectable_value(&mut state.shows_scatter, true, "Scatter")
            .on_hover_text("One point per head: any two figures as axes, a third as colour");
    });

    let key = (generation, state.sort, *category);
    if state.order.as_ref().is_none_or(|(k, _)| *k != key) {
        state.order = Some((
            key,
            sorted_heads(analysis, state.sort, *category, &output.input.tokens),
        ));
    }
    let rows = state
        .order
        .as_ref()
        .map(|(_, r)| r.clone())
        .unwrap_or_default();
    let how = if state.shows_scatter {
        "hover a point for its figures, click it to open the head"
    } else {
        "click a column title to sort, a row to open the head"
    };
    let tint = if selection.is_empty() || state.shows_scatter {
        ""
    } else {
        " · tinted: the head's focus token is a picked token"
    };
    ui.weak(format!("{} of {total} heads · {how}{tint}", rows.len()));
    ui.add_space(4.0);

    let tokens = &output.input.tokens;
    let shown = ShownColumns::of(tokens);
    if state.shows_scatter {
        return state.scatter.ui(ui, analysis, &rows, &shown);
    }
    let widths = table::fit_widths(&shown.columns, ui.available_width() - 16.0);
    let mut action = None;
    egui::ScrollArea::horizontal()
        .id_salt("specialisation horizontal")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            ui.spacing_mut().item_spacing.y = 0.0;
            group_titles(ui, &widths, &shown);
            let sorted = shown.position(state.sort.0).map(|c| (c, state.sort.1));
            if let Some(column) =
                table::header_row(ui, "specialisation header", &shown.columns, &widths, sorted)
            {
                let column = shown.original[column];
                state.sort = if state.sort.0 == column {
                    (column, !state.sort.1)
                } else {
                    // Numbers read best largest first, names alphabetically.
                    (column, COLUMNS[column].numeric && column != 0)
                };
            }
            let tint = ui.visuals().selection.bg_fill.gamma_multiply(0.55);
            egui::ScrollArea::vertical()
                .id_salt("specialisation rows")
                .auto_shrink([false, false])
                .show(ui, |ui| {
                    for (index, &head) in rows.iter().enumerate() {
                        let Some(f) = analysis.head(head) else {
                            continue;
                        };
                        let cells = shown.cells(head_cells(head, f, tokens));
                        let picked = f.focus_token_id.is_some_and(|id| selection.contains_id(id));
                        let response = table::data_row(
                            ui,
                            ui.scope_id().with(("head row", head)),
                            &widths,
                            &shown.columns,
                            &cells,
                            &row_name(&shown, head, f, tokens),
                            RowLook {
                                striped: index % 2 == 1,
                                tint: picked.then_some(tint),
                            },
                        );
                        if response.clicked() {
                            action = Some(ViewAction::OpenHead(head));
                        }
                    }
                    if rows.is_empty() {
                        ui.add_space(8.0);
                        ui.weak("No head of this category in this result.");
                    }
                });
        });
    action
}

/// "The study's figures" over its columns, "Attention statistics" over
/// Clark's, "Roles" over the roles, "Value-weighted" over the N′ twins.
fn group_titles(ui: &mut egui::Ui, widths: &[f32], shown: &ShownColumns) {
    let shown_from = |first: usize| {
        shown
            .original
            .iter()
            .position(|&i| i >= first)
            .unwrap_or(widths.len())
    };
    let (first_statistic, first_role) = (shown_from(FIRST_STATISTIC), shown_from(FIRST_ROLE));
    let first_weighted = shown_from(FIRST_WEIGHTED);
    let total: f32 = widths.iter().sum();
    let (rect, _) = ui.allocate_exact_size(egui::vec2(total, 18.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let start = |column: usize| rect.left() + widths[..column].iter().sum::<f32>();
    let font = egui::FontId::proportional(12.0);
    let colour = ui.visuals().weak_text_color();
    for (from, to, title) in [
        (2, first_statistic, "The study's figures (ANALYSIS.md §4)"),
        (
            first_statistic,
            first_role,
            "Attention statistics (Clark et al. 2019)",
        ),
        (first_role, first_weighted, "Roles (ANALYSIS.md §9)"),
        (first_weighted, widths.len(), "Value-weighted N′ (§9)"),
    ] {
        let (left, right) = (start(from) + 4.0, start(to) - 4.0);
        painter.text(
            egui::pos2((left + right) / 2.0, rect.center().y - 2.0),
            egui::Align2::CENTER_CENTER,
            title,
            font.clone(),
            colour,
        );
        painter.line_segment(
            [
                egui::pos2(left, rect.bottom() - 2.0),
                egui::pos2(right, rect.bottom() - 2.0),
            ],
            egui::Stroke::new(1.0, colour),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::LayerFigures;

    fn head(mean: Option<f64>, category: Option<Category>) -> HeadFigures {
        HeadFigures {
            mean_distance: mean,
            category,
            ..HeadFigures::default()
        }
    }

    #[test]
    fn sorting_puts_undefined_figures_last_and_filters_by_category() {
        let analysis = Analysis {
            layers: vec![LayerFigures {
                heads: vec![
                    head(Some(2.0), Some(Category::Local)),
                    head(None, None),
                    head(Some(5.0), Some(Category::Repetition)),
                ],
                ..LayerFigures::default()
            }],
            ..Analysis::default()
        };
        let ids = |v: Vec<HeadId>| v.into_iter().map(|h| h.head).collect::<Vec<_>>();
        let none = TokenSequence::default();
        assert_eq!(
            ids(sorted_heads(&analysis, (2, false), None, &none)),
            vec![0, 2, 1]
        );
        assert_eq!(
            ids(sorted_heads(&analysis, (2, true), None, &none)),
            vec![2, 0, 1]
        );
        assert_eq!(
            ids(sorted_heads(
                &analysis,
                (0, false),
                Some(Category::Repetition),
                &none
            )),
            vec![2]
        );
        assert!(sorted_heads(&Analysis::default(), (5, true), None, &none).is_empty());
    }

    #[test]
    fn a_head_without_pairs_shows_dashes() {
        let none = TokenSequence::default();
        let cells = head_cells(HeadId::new(0, 1), &HeadFigures::default(), &none);
        assert_eq!(cells.len(), COLUMNS.len());
        assert_eq!(cells[2].text, "—");
        assert_eq!(cells[5].text, "—");
        assert_eq!(cells[9].text, "—", "no content token, no sink attention");
        assert_eq!(
            cells[FIRST_STATISTIC].text, "—",
            "no attention P (a capture of O alone), no statistics"
        );
        let with_attention = HeadFigures {
            attention_stats: Some(Default::default()),
            ..HeadFigures::default()
        };
        let cells = head_cells(HeadId::new(0, 1), &with_attention, &none);
        assert_eq!(cells[FIRST_STATISTIC].text, "0.000");
        assert_eq!(cells[FIRST_ROLE].text, "no attention", "no P, no role");
        let induction = HeadFigures {
            role: Some(crate::analysis::Role::Induction),
            induction_score: Some(0.8),
            ..HeadFigures::default()
        };
        let cells = head_cells(HeadId::new(0, 1), &induction, &none);
        assert_eq!(cells[FIRST_ROLE].text, "induction");
        assert_eq!(cells[FIRST_WEIGHTED - 1].text, "0.800");
        let weighted = HeadFigures {
            sink_attention: Some(0.9),
            sink_attention_vw: Some(0.25),
            role_vw: Some(crate::analysis::Role::PreviousToken),
            ..HeadFigures::default()
        };
        let cells = head_cells(HeadId::new(0, 1), &weighted, &none);
        assert_eq!(
            (
                cells[9].text.as_str(),
                cells[FIRST_WEIGHTED + 1].text.as_str()
            ),
            ("0.900", "0.250")
        );
        assert_eq!(cells[FIRST_WEIGHTED + 2].text, "previous token");
    }
}
