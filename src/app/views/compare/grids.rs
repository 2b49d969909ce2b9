//! The Compare tab's head grids: model A's and model B's heads side by
//! side (one cell per head, coloured by category), and the A × B grid of
//! every pair's CKA. Clicking a head, in either head grid or a row of the
//! CKA grid, colours the other model's grid by CKA with it and outlines
//! its three best matches (the best one thickest).

use super::curves::{A_COLOUR, B_COLOUR};
use crate::app::widgets::format::{category_style, HIGHLIGHT};
use crate::app::widgets::head_grid::HeadGrid;
use crate::captures::HeadId;
use crate::colormap::ColorMap;
use crate::comparison::BestMatch;
use crate::pipeline::ComparisonOutput;
use egui::{Align2, Color32, ColorImage, FontId, Rect, Sense, Stroke, TextureHandle, Vec2};
use std::sync::Arc;

/// Which model a head belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    A,
    B,
}

impl Which {
    pub fn letter(self) -> &'static str {
        match self {
            Which::A => "A",
            Which::B => "B",
        }
    }
}

/// How many of a clicked head's best matches are outlined.
const MATCHES_SHOWN: usize = 3;

/// The colour map of CKA, from 0 to 1.
const CKA_MAP: ColorMap = ColorMap::Viridis;

fn cka_colour(value: Option<f64>) -> Color32 {
    match value {
        Some(v) => {
            let [r, g, b] = CKA_MAP.rgb(v.clamp(0.0, 1.0) as f32);
            Color32::from_rgb(r, g, b)
        }
        None => Color32::from_gray(60),
    }
}

/// The ranked matches of the selected head in the grid of `which`, if the
/// selected head is in the other model.
fn matches_in(
    output: &ComparisonOutput,
    which: Which,
    selected: Option<(Which, HeadId)>,
    count: usize,
) -> Option<(HeadId, Vec<BestMatch>)> {
    let (side, head) = selected?;
    let matching = &output.comparison.head_matching;
    match (side, which) {
        (Which::A, Which::B) => Some((head, matching.ranked_for_a(head, count))),
        (Which::B, Which::A) => Some((head, matching.ranked_for_b(head, count))),
        _ => None,
    }
}

/// The accessible name of a head's cell: "B L3 H5 focus · best match of
/// A L0 H1, CKA 0.93" (or "match 2 of …", or "· selected").
pub fn match_label(
    which: Which,
    head: HeadId,
    category: &str,
    selected: bool,
    rank: Option<(usize, HeadId, f64)>,
) -> String {
    let mut label = format!("{} {head} {category}", which.letter());
    if selected {
        label.push_str(" · selected");
    }
    if let Some((rank, of, cka)) = rank {
        let other = match which {
            Which::A => "B",
            Which::B => "A",
        };
        let what = if rank == 0 {
            "best match".to_string()
        } else {
            format!("match {}", rank + 1)
        };
        label.push_str(&format!(" · {what} of {other} {of}, CKA {cka:.3}"));
    }
    label
}

/// The two head grids side by side, and the clicked head's best matches.
pub fn head_grids(
    ui: &mut egui::Ui,
    output: &ComparisonOutput,
    names: [&str; 2],
    selected: &mut Option<(Which, HeadId)>,
) {
    // Two columns and the room between them fill the width, no more.
    let gap = 8.0 + ui.spacing().item_spacing.x;
    let width = ((ui.available_width() - gap) / 2.0).floor().max(200.0);
    ui.horizontal_top(|ui| {
        for (which, name, colour) in [
            (Which::A, names[0], A_COLOUR),
            (Which::B, names[1], B_COLOUR),
        ] {
            ui.vertical(|ui| {
                ui.set_width(width);
                ui.colored_label(colour, format!("{}: {name}", which.letter()));
                head_grid(ui, output, which, width, selected);
            });
            if which == Which::A {
                ui.add_space(8.0);
            }
        }
    });
    ui.label(selection_line(output, *selected));
    legend(ui, *selected);
}

/// What the cells' colours and outlines mean.
fn legend(ui: &mut egui::Ui, selected: Option<(Which, HeadId)>) {
    ui.horizontal_wrapped(|ui| {
        ui.weak("Cells: category of the head,");
        for category in crate::analysis::Category::ALL {
            let (name, colour) = category_style(Some(category));
            ui.colored_label(colour, name);
        }
        if let Some((side, head)) = selected {
            let other = match side {
                Which::A => "B",
                Which::B => "A",
            };
            ui.weak(format!("· in {other}: CKA with {} {head},", side.letter()));
            for value in [0.0, 0.5, 1.0] {
                ui.colored_label(cka_colour(Some(value)), format!("■ {value:.1}"));
            }
            ui.colored_label(HIGHLIGHT, "□ its 3 best matches");
        }
    });
}

/// "A L0 H1 (focus): best matches in B: L3 H5 (CKA 0.931), …".
fn selection_line(output: &ComparisonOutput, selected: Option<(Which, HeadId)>) -> String {
    let Some((side, head)) = selected else {
        return "Click a head to see its best matches in the other model.".into();
    };
    let other = match side {
        Which::A => Which::B,
        Which::B => Which::A,
    };
    let analysis = match side {
        Which::A => &output.a.analysis,
        Which::B => &output.b.analysis,
    };
    let category = category_of(analysis, head);
    let matches = matches_in(output, other, selected, MATCHES_SHOWN)
        .map(|(_, m)| m)
        .unwrap_or_default();
    if matches.is_empty() {
        return format!(
            "{} {head} ({category}): no match (CKA undefined: too few aligned tokens, or a constant head)",
            side.letter()
        );
    }
    let list: Vec<String> = matches
        .iter()
        .map(|m| format!("{} (CKA {:.3})", m.head_id(), m.cka))
        .collect();
    format!(
        "{} {head} ({category}): best matches in {}: {}",
        side.letter(),
        other.letter(),
        list.join(", ")
    )
}

fn category_of(analysis: &crate::analysis::Analysis, head: HeadId) -> &'static str {
    category_style(analysis.head(head).and_then(|f| f.category)).0
}

/// One model's grid: L rows × H cells.
fn head_grid(
    ui: &mut egui::Ui,
    output: &ComparisonOutput,
    which: Which,
    width: f32,
    selected: &mut Option<(Which, HeadId)>,
) {
    let run = match which {
        Which::A => &output.a,
        Which::B => &output.b,
    };
    let (layers, heads) = (run.captures.layers, run.captures.heads);
    let header = 30.0;
    let side = HeadGrid::fitted_width(width - header, heads, 0.0, 2.0, 12.0, 30.0);
    let ranked = matches_in(output, which, *selected, MATCHES_SHOWN);
    let all_cka = ranked.as_ref().map(|(head, _)| {
        let matching = &output.comparison.head_matching;
        move |other: HeadId| match which {
            Which::B => matching.get(*head, other),
            Which::A => matching.get(other, *head),
        }
    });
    let matching = &output.comparison.head_matching;
    let best_of = match which {
        Which::A => &matching.best_for_a,
        Which::B => &matching.best_for_b,
    };
    let rows: Vec<usize> = (0..layers).collect();
    let answer = HeadGrid::new(
        ("compare head", which.letter()),
        &rows,
        heads,
        Vec2::splat(side),
    )
    .gap(Vec2::splat(2.0))
    .headers(header, 16.0)
    .font_size(10.0)
    .bare_numbers()
    .show(ui, |ui, painter, cell| {
        let Some(head) = cell.head_id() else {
            return;
        };
        let (category, colour) = category_style(run.analysis.head(head).and_then(|f| f.category));
        let fill = match &all_cka {
            Some(cka_with) => cka_colour(cka_with(head)),
            None => colour,
        };
        painter.rect_filled(cell.rect, 2.0, fill);
        let rank = ranked.as_ref().and_then(|(of, matches)| {
            let position = matches.iter().position(|m| m.head_id() == head)?;
            Some((position, *of, matches[position].cka))
        });
        let is_selected = *selected == Some((which, head));
        if let Some((position, _, _)) = rank {
            let width = if position == 0 { 3.5 } else { 2.0 };
            painter.rect_stroke(
                cell.rect.expand(1.0),
                2.0,
                Stroke::new(width, HIGHLIGHT),
                egui::StrokeKind::Inside,
            );
        }
        if is_selected {
            painter.rect_stroke(
                cell.rect.expand(1.5),
                2.0,
                Stroke::new(2.5, ui.visuals().strong_text_color()),
                egui::StrokeKind::Outside,
            );
        } else if cell.response.hovered() {
            painter.rect_stroke(
                cell.rect,
                2.0,
                Stroke::new(1.0, ui.visuals().text_color()),
                egui::StrokeKind::Inside,
            );
        }
        let label = match_label(which, head, category, is_selected, rank);
        cell.response.widget_info(|| {
            egui::WidgetInfo::selected(egui::Role::Button, true, is_selected, &label)
        });
        let best = best_of
            .get(head.layer * heads + head.head)
            .copied()
            .flatten();
        cell.response.on_hover_text(format!(
            "{label}\nits best match in the other model: {}\nclick to show its best matches",
            best.map_or("none".to_string(), |m| format!(
                "{} (CKA {:.3})",
                m.head_id(),
                m.cka
            ))
        ));
    });
    if let Some(head) = answer.clicked {
        *selected = if *selected == Some((which, head)) {
            None
        } else {
            Some((which, head))
        };
    }
}

/// The CKA picture, built once per comparison.
#[derive(Default)]
pub struct CkaTexture {
    /// The comparison it shows (its address) and the texture.
    built: Option<(usize, TextureHandle)>,
}

impl CkaTexture {
    fn get(&mut self, ctx: &egui::Context, output: &ComparisonOutput) -> TextureHandle {
        let key = output as *const ComparisonOutput as usize;
        if let Some((built, texture)) = &self.built {
            if *built == key {
                return texture.clone();
            }
        }
        let matching = &output.comparison.head_matching;
        let rows = matching.cka.len();
        let columns = matching.b_layers * matching.b_heads;
        let pixels = matching
            .cka
            .iter()
            .flat_map(|row| row.iter().map(|&v| cka_colour(v)))
            .collect();
        let image = ColorImage::new([columns, rows], pixels);
        let kept = std::sync::Arc::new(image.clone());
        let texture = ctx.load_texture("compare cka", image, egui::TextureOptions::NEAREST);
        crate::app::widgets::heatmap::remember_pixels(ctx, texture.id(), kept);
        self.built = Some((key, texture.clone()));
        texture
    }
}

/// The A × B grid of CKA: rows are A's heads, columns B's, both in layer
/// order; clicking a cell selects its head of A.
pub fn cka_grid(
    ui: &mut egui::Ui,
    output: &Arc<ComparisonOutput>,
    names: [&str; 2],
    selected: &mut Option<(Which, HeadId)>,
    texture: &mut CkaTexture,
) {
    let matching = &output.comparison.head_matching;
    let rows = matching.a_layers * matching.a_heads;
    let columns = matching.b_layers * matching.b_heads;
    if rows == 0 || columns == 0 || matching.cka.len() != rows {
        ui.weak("No heads to match.");
        return;
    }
    ui.weak(format!(
        "Rows: the {rows} heads of A ({}), columns: the {columns} heads of B ({}), each ordered \
         by layer then head; colour: CKA from 0 (dark) to 1 (yellow) over {} aligned units. \
         Click a cell to select its head of A.",
        names[0], names[1], matching.units
    ));
    let header = 34.0;
    let cell = ((ui.available_width() - header - 8.0) / columns as f32).clamp(2.0, 8.0);
    let size = Vec2::new(header + cell * columns as f32, header + cell * rows as f32);
    let (rect, response) = ui.allocate_exact_size(size, Sense::click());
    response.widget_info(|| {
        egui::WidgetInfo::labeled(
            egui::Role::Image,
            true,
            format!("CKA grid, {rows} heads of A × {columns} heads of B"),
        )
    });
    let grid = Rect::from_min_size(
        rect.min + Vec2::splat(header),
        Vec2::new(cell * columns as f32, cell * rows as f32),
    );
    let painter = ui.painter_at(rect);
    let texture = texture.get(ui.ctx(), output);
    painter.image(
        texture.id(),
        grid,
        Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
        Color32::WHITE,
    );
    let weak = ui.visuals().weak_text_color();
    let line = Stroke::new(1.0, ui.visuals().panel_fill);
    for l in 0..matching.a_layers {
        let y = grid.top() + cell * (l * matching.a_heads) as f32;
        if l > 0 {
            painter.hline(grid.x_range(), y, line);
        }
        painter.text(
            egui::pos2(
                rect.left() + header - 4.0,
                y + cell * matching.a_heads as f32 / 2.0,
            ),
            Align2::RIGHT_CENTER,
            format!("L{l}"),
            FontId::proportional(10.0),
            A_COLOUR,
        );
    }
    for l in 0..matching.b_layers {
        let x = grid.left() + cell * (l * matching.b_heads) as f32;
        if l > 0 {
            painter.vline(x, grid.y_range(), line);
        }
        painter.text(
            egui::pos2(
                x + cell * matching.b_heads as f32 / 2.0,
                rect.top() + header - 4.0,
            ),
            Align2::CENTER_BOTTOM,
            format!("L{l}"),
            FontId::proportional(10.0),
            B_COLOUR,
        );
    }
    painter.text(
        rect.left_top(),
        Align2::LEFT_TOP,
        "A ↓ B →",
        FontId::proportional(10.0),
        weak,
    );
    // The selected head's row (A) or column (B).
    let highlight = Stroke::new(1.5, HIGHLIGHT);
    match *selected {
        Some((Which::A, head)) => {
            let y = grid.top() + cell * (head.layer * matching.a_heads + head.head) as f32;
            let band = Rect::from_min_max(
                egui::pos2(grid.left(), y),
                egui::pos2(grid.right(), y + cell),
            );
            painter.rect_stroke(band.expand(1.0), 0.0, highlight, egui::StrokeKind::Outside);
        }
        Some((Which::B, head)) => {
            let x = grid.left() + cell * (head.layer * matching.b_heads + head.head) as f32;
            let band = Rect::from_min_max(
                egui::pos2(x, grid.top()),
                egui::pos2(x + cell, grid.bottom()),
            );
            painter.rect_stroke(band.expand(1.0), 0.0, highlight, egui::StrokeKind::Outside);
        }
        None => {}
    }
    let under = |pos: egui::Pos2| -> Option<(HeadId, HeadId)> {
        if !grid.contains(pos) {
            return None;
        }
        let row = (((pos.y - grid.top()) / cell) as usize).min(rows - 1);
        let column = (((pos.x - grid.left()) / cell) as usize).min(columns - 1);
        Some((
            HeadId::new(row / matching.a_heads, row % matching.a_heads),
            HeadId::new(column / matching.b_heads, column % matching.b_heads),
        ))
    };
    if let Some((a, b)) = response.hover_pos().and_then(under) {
        let value = matching.get(a, b);
        response.clone().on_hover_text_at_pointer(format!(
            "A {a} × B {b}: CKA {}\nclick to select A {a}",
            value.map_or("— (undefined)".to_string(), |v| format!("{v:.3}"))
        ));
    }
    if response.clicked() {
        if let Some((a, _)) = response.interact_pointer_pos().and_then(under) {
            *selected = Some((Which::A, a));
        }
    }
}
