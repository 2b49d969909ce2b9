//! Tables of fixed-width cells for the study's views: a header row whose
//! titles sort the table when clicked, and data rows that are each one
//! clickable widget.
//!
//! A row is painted, not built from a label per cell, so a table of a few
//! hundred heads costs a few hundred widgets a frame. Each row carries an
//! accessible name that spells out its cells ("L3 H5: category focus, mean
//! distance 4.21, …"), built from the same strings that are painted, so
//! screen readers and UI tests read exactly what is shown.

use egui::{Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, Vec2};
use std::borrow::Cow;

/// Height of a data row.
pub const ROW_HEIGHT: f32 = 20.0;
/// Height of the header row.
pub const HEADER_HEIGHT: f32 = 22.0;

/// One column: its title, the width it needs, what it means.
#[derive(Debug, Clone)]
pub struct Column {
    pub title: Cow<'static, str>,
    pub width: f32,
    pub tooltip: &'static str,
    /// Numbers are right-aligned, text left-aligned.
    pub numeric: bool,
}

/// One cell's text, and its colour when not the default.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    pub colour: Option<Color32>,
    /// Shown whole, on as many lines as it needs (the row grows), instead
    /// of cut with an ellipsis.
    pub wrap: bool,
}

impl Cell {
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            colour: None,
            wrap: false,
        }
    }

    pub fn coloured(text: impl Into<String>, colour: Color32) -> Self {
        Self {
            colour: Some(colour),
            ..Self::new(text)
        }
    }

    /// A cell whose text is never cut: it wraps within the column.
    pub fn wrapping(text: impl Into<String>) -> Self {
        Self {
            wrap: true,
            ..Self::new(text)
        }
    }
}

/// The least share of their widths columns are narrowed to.
pub const NARROWEST: f32 = 0.8;

/// The columns' widths, stretched to fill `available` when there is room,
/// and narrowed to fit it when there is a little less (down to
/// [`NARROWEST`] of their widths; titles and cells are cut with an
/// ellipsis); narrower still, the table scrolls.
pub fn fit_widths(columns: &[Column], available: f32) -> Vec<f32> {
    let needed: f32 = columns.iter().map(|c| c.width).sum();
    let scale = if needed > 0.0 {
        (available / needed).clamp(NARROWEST, 1.6)
    } else {
        1.0
    };
    columns.iter().map(|c| (c.width * scale).floor()).collect()
}

/// The header row; returns the index of the title clicked. `sorted` is the
/// column the table is sorted by and whether it is descending.
pub fn header_row(
    ui: &mut egui::Ui,
    id_salt: &str,
    columns: &[Column],
    widths: &[f32],
    sorted: Option<(usize, bool)>,
) -> Option<usize> {
    let total: f32 = widths.iter().sum();
    let (rect, _) = ui.allocate_exact_size(Vec2::new(total, HEADER_HEIGHT), Sense::hover());
    let painter = ui.painter_at(rect);
    let base = ui.scope_id().with(id_salt);
    let font = FontId::proportional(12.5);
    let mut clicked = None;
    let mut x = rect.left();
    for (index, (column, &width)) in columns.iter().zip(widths).enumerate() {
        let cell = Rect::from_min_size(Pos2::new(x, rect.top()), Vec2::new(width, HEADER_HEIGHT));
        x += width;
        let response = ui.interact(cell, base.with(index), Sense::click());
        let title = column.title.as_ref();
        response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, title));
        let colour = if response.hovered() || sorted.is_some_and(|(c, _)| c == index) {
            ui.visuals().strong_text_color()
        } else {
            ui.visuals().text_color()
        };
        let arrow = match sorted {
            Some((c, true)) if c == index => " ▼",
            Some((c, false)) if c == index => " ▲",
            _ => "",
        };
        let (anchor, at) = if column.numeric {
            (
                Align2::RIGHT_CENTER,
                Pos2::new(cell.right() - 6.0, cell.center().y),
            )
        } else {
            (
                Align2::LEFT_CENTER,
                Pos2::new(cell.left() + 6.0, cell.center().y),
            )
        };
        // A narrow column's title is cut, as its cells are (the whole title
        // is its name and in its tooltip): titles drawn whole ran together.
        let text = text_within(ui, title, arrow, &font, width - 10.0);
        painter
            .with_clip_rect(cell)
            .text(at, anchor, text, font.clone(), colour);
        if response.clicked() {
            clicked = Some(index);
        }
        response.on_hover_text(column.tooltip);
    }
    painter.line_segment(
        [rect.left_bottom(), rect.right_bottom()],
        Stroke::new(1.0, ui.visuals().weak_text_color()),
    );
    clicked
}

/// How a data row stands out.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowLook {
    /// A darker stripe for readability.
    pub striped: bool,
    /// A tint marking the row (e.g. its head focuses on a picked token).
    pub tint: Option<Color32>,
}

/// One data row: a clickable widget named `accessible`.
pub fn data_row(
    ui: &mut egui::Ui,
    id: egui::Id,
    widths: &[f32],
    columns: &[Column],
    cells: &[Cell],
    accessible: &str,
    look: RowLook,
) -> egui::Response {
    let total: f32 = widths.iter().sum();
    let font = FontId::proportional(13.0);
    let default_colour = ui.visuals().text_color();
    // Wrapping cells laid out first: the row is as tall as the tallest.
    let galleys: Vec<Option<std::sync::Arc<egui::Galley>>> = cells
        .iter()
        .zip(widths)
        .map(|(cell, &width)| {
            cell.wrap.then(|| {
                ui.painter().layout(
                    cell.text.clone(),
                    font.clone(),
                    cell.colour.unwrap_or(default_colour),
                    (width - 10.0).max(8.0),
                )
            })
        })
        .collect();
    let height = galleys
        .iter()
        .flatten()
        .map(|g| g.size().y + 4.0)
        .fold(ROW_HEIGHT, f32::max);
    let (rect, _) = ui.allocate_exact_size(Vec2::new(total, height), Sense::hover());
    let response = ui.interact(rect, id, Sense::click());
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, accessible));
    if !ui.is_rect_visible(rect) {
        return response;
    }
    let painter = ui.painter_at(rect);
    if let Some(tint) = look.tint {
        painter.rect_filled(rect, 0.0, tint);
    } else if look.striped {
        painter.rect_filled(rect, 0.0, ui.visuals().faint_bg_color);
    }
    if response.hovered() {
        painter.rect_stroke(
            rect,
            0.0,
            Stroke::new(1.0, ui.visuals().text_color()),
            egui::StrokeKind::Inside,
        );
    }
    let mut x = rect.left();
    for (((cell, &width), column), galley) in cells.iter().zip(widths).zip(columns).zip(galleys) {
        let area = Rect::from_min_size(Pos2::new(x, rect.top()), Vec2::new(width, height));
        x += width;
        if let Some(galley) = galley {
            let at = Pos2::new(area.left() + 6.0, area.center().y - galley.size().y / 2.0);
            painter
                .with_clip_rect(area)
                .galley(at, galley, default_colour);
            continue;
        }
        let (anchor, at) = if column.numeric {
            (
                Align2::RIGHT_CENTER,
                Pos2::new(area.right() - 6.0, area.center().y),
            )
        } else {
            (
                Align2::LEFT_CENTER,
                Pos2::new(area.left() + 6.0, area.center().y),
            )
        };
        let text = text_within(ui, &cell.text, "", &font, width - 12.0);
        painter.with_clip_rect(area).text(
            at,
            anchor,
            text,
            font.clone(),
            cell.colour.unwrap_or(default_colour),
        );
    }
    response
}

/// `text` and its `suffix` (a title's sort arrow), the text cut with an
/// ellipsis where the two, laid out in `font`, would be wider than `room`.
fn text_within(ui: &egui::Ui, text: &str, suffix: &str, font: &FontId, room: f32) -> String {
    let fits = |text: &str| {
        let galley =
            ui.painter()
                .layout_no_wrap(format!("{text}{suffix}"), font.clone(), Color32::WHITE);
        galley.size().x <= room
    };
    if fits(text) {
        return format!("{text}{suffix}");
    }
    let chars: Vec<char> = text.chars().collect();
    let cut = (1..chars.len())
        .rev()
        .map(|n| format!("{}…", chars[..n].iter().collect::<String>().trim_end()))
        .find(|cut| fits(cut))
        .unwrap_or_else(|| "…".to_string());
    format!("{cut}{suffix}")
}

/// "name value, name value, …" for a row's accessible name.
pub fn describe(columns: &[Column], cells: &[Cell]) -> String {
    columns
        .iter()
        .zip(cells)
        .map(|(c, cell)| format!("{} {}", c.title, cell.text))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_stretch_and_narrow_a_little_to_fit() {
        let columns = [
            Column {
                title: Cow::Borrowed("a"),
                width: 50.0,
                tooltip: "",
                numeric: true,
            },
            Column {
                title: Cow::Borrowed("b"),
                width: 100.0,
                tooltip: "",
                numeric: false,
            },
        ];
        // A little short of room: narrowed to fit; far short: at most to
        // 0.8 of the widths (the table scrolls).
        assert_eq!(fit_widths(&columns, 135.0), vec![45.0, 90.0]);
        assert_eq!(fit_widths(&columns, 100.0), vec![40.0, 80.0]);
        assert_eq!(fit_widths(&columns, 210.0), vec![70.0, 140.0]);
        assert_eq!(
            fit_widths(&columns, 900.0),
            vec![80.0, 160.0],
            "at most 1.6 times"
        );
    }

    #[test]
    fn a_wrapping_cell_shows_its_whole_text_on_more_lines() {
        let columns = [Column {
            title: Cow::Borrowed("focus token"),
            width: 60.0,
            tooltip: "",
            numeric: false,
        }];
        let long = "“·extraordinarily·long·token”";
        let ctx = egui::Context::default();
        let mut heights = Vec::new();
        for cell in [Cell::new(long), Cell::wrapping(long)] {
            let mut height = 0.0;
            let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
                let response = data_row(
                    ui,
                    egui::Id::unique("row"),
                    &[60.0],
                    &columns,
                    std::slice::from_ref(&cell),
                    "row",
                    RowLook::default(),
                );
                height = response.rect.height();
            });
            output.textures_delta.clear();
            heights.push(height);
        }
        assert_eq!(heights[0], ROW_HEIGHT, "a cut cell keeps one line");
        assert!(heights[1] > ROW_HEIGHT * 1.5, "{heights:?}");
    }

    #[test]
    fn a_narrow_columns_title_is_cut_within_its_cell() {
        let column = |title| Column {
            title: Cow::Borrowed(title),
            width: 50.0,
            tooltip: "",
            numeric: true,
        };
        let columns = [
            column("mean distance"),
            column("same sentence"),
            column("local"),
        ];
        let ctx = egui::Context::default();
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
            header_row(ui, "header", &columns, &[50.0, 50.0, 50.0], Some((0, true)));
        });
        output.textures_delta.clear();
        let titles: Vec<(String, Rect)> = output
            .shapes
            .iter()
            .filter_map(|clipped| match &clipped.shape {
                egui::Shape::Text(text) => {
                    Some((text.galley.text().to_string(), clipped.clip_rect))
                }
                _ => None,
            })
            .collect();
        assert_eq!(titles.len(), 3, "{titles:?}");
        for (title, clip) in &titles[..2] {
            assert!(title.contains('…'), "{title:?} is not cut");
            assert!(clip.width() <= 50.0, "{title:?} may draw over {clip:?}");
        }
        assert_eq!(titles[2].0, "local", "a title that fits is whole");
        assert!(titles[0].0.ends_with(" ▼"), "the sort arrow stays");
        assert!(titles[0].1.right() <= titles[1].1.left(), "{titles:?}");
    }

    #[test]
    fn a_cell_is_cut_only_when_its_text_is_wider_than_the_cell() {
        let ctx = egui::Context::default();
        let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
            let font = FontId::proportional(13.0);
            let width = |text: &str| {
                ui.painter()
                    .layout_no_wrap(text.to_string(), font.clone(), Color32::WHITE)
                    .size()
                    .x
            };
            let whole = "previous token";
            assert_eq!(text_within(ui, whole, "", &font, width(whole)), whole);
            let cut = text_within(ui, "a very long token text indeed", "", &font, 60.0);
            assert!(cut.ends_with('…') && cut.starts_with("a very"), "{cut:?}");
            assert!(width(&cut) <= 60.0, "{cut:?}");
        });
        output.textures_delta.clear();
    }
}
