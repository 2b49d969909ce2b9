//! The heads as points: any two of the table's per-head figures as axes
//! and a third, or the layer, as colour. Interpretable heads sit at a
//! figure's extremes (HeadVis, transformer-circuits.pub 2026): plotted
//! against each other, the previous-token and induction scores of §9 set
//! the heads that do either apart. Hovering a point names its head and
//! its figures; clicking it opens the head.

use super::{figure_value, ShownColumns, COLUMNS, FIRST_ROLE};
use crate::analysis::Analysis;
use crate::app::views::shared::{save_plot, ViewAction};
use crate::app::widgets::format::figure;
use crate::app::widgets::{heatmap, plots};
use crate::captures::HeadId;
use crate::colormap::{ColorMap, ValueRange};
use egui::Pos2;
use egui_plot::{MarkerShape, Plot, PlotPoint, Points};

/// What colours the points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointColour {
    /// The head's layer, first dark, last bright.
    Layer,
    /// A column of [`COLUMNS`].
    Figure(usize),
}

/// The scatter's axes and colour (columns of [`COLUMNS`]), and where its
/// points were drawn last.
#[derive(Debug, Clone, PartialEq)]
pub struct Scatter {
    pub x: usize,
    pub y: usize,
    pub colour: PointColour,
    drawn: Vec<(HeadId, Pos2)>,
}

impl Default for Scatter {
    /// The previous-token score against the induction score, by layer.
    fn default() -> Self {
        Scatter {
            x: FIRST_ROLE + 1,
            y: FIRST_ROLE + 3,
            colour: PointColour::Layer,
            drawn: Vec::new(),
        }
    }
}

/// How near (points on screen) the pointer must come to a point to hover
/// or click it.
const PICK_RADIUS: f32 = 8.0;

/// The colours of the points.
const POINT_MAP: ColorMap = ColorMap::Viridis;

/// The head whose point in `drawn` is nearest `pos`, within
/// [`PICK_RADIUS`].
fn head_at(drawn: &[(HeadId, Pos2)], pos: Pos2) -> Option<HeadId> {
    drawn
        .iter()
        .map(|(head, p)| (*head, p.distance(pos)))
        .filter(|(_, d)| *d <= PICK_RADIUS)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(head, _)| head)
}

/// One head's point: its x, y and colour value.
struct HeadPoint {
    head: HeadId,
    x: f64,
    y: f64,
    colour: Option<f64>,
}

impl Scatter {
    /// Where `head`'s point was drawn in the last frame, if it was.
    pub fn point_of(&self, head: HeadId) -> Option<Pos2> {
        self.drawn.iter().find(|(h, _)| *h == head).map(|(_, p)| *p)
    }

    /// The choices and the plot of `heads` (those the table would list).
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        analysis: &Analysis,
        heads: &[HeadId],
        shown: &ShownColumns,
    ) -> Option<ViewAction> {
        let title = |column: usize| {
            shown
                .position(column)
                .map_or(COLUMNS[column].title.as_ref(), |i| {
                    shown.columns[i].title.as_ref()
                })
                .to_string()
        };
        let numeric: Vec<usize> = shown
            .original
            .iter()
            .copied()
            .filter(|&c| c > 0 && COLUMNS[c].numeric)
            .collect();
        ui.horizontal_wrapped(|ui| {
            for (name, axis) in [("x axis", &mut self.x), ("y axis", &mut self.y)] {
                let label = ui.label(name);
                egui::ComboBox::from_id_salt(("scatter", name))
                    .selected_text(title(*axis))
                    .show_ui(ui, |ui| {
                        for &c in &numeric {
                            ui.selectable_value(&mut *axis, c, title(c))
                                .on_hover_text(COLUMNS[c].tooltip);
                        }
                    })
                    .response
                    .labelled_by(label.id);
            }
            let label = ui.label("colour");
            let colour_name = |colour: PointColour| match colour {
                PointColour::Layer => "layer".to_string(),
                PointColour::Figure(c) => title(c),
            };
            egui::ComboBox::from_id_salt(("scatter", "colour"))
                .selected_text(colour_name(self.colour))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.colour, PointColour::Layer, "layer");
                    for &c in &numeric {
                        ui.selectable_value(&mut self.colour, PointColour::Figure(c), title(c));
                    }
                })
                .response
                .labelled_by(label.id);
        });

        let points: Vec<HeadPoint> = heads
            .iter()
            .filter_map(|&head| {
                let f = analysis.head(head)?;
                Some(HeadPoint {
                    head,
                    x: figure_value(head, f, self.x)?,
                    y: figure_value(head, f, self.y)?,
                    colour: match self.colour {
                        PointColour::Layer => Some(head.layer as f64),
                        PointColour::Figure(c) => figure_value(head, f, c),
                    },
                })
            })
            .collect();
        let colour_values: Vec<f32> = points
            .iter()
            .filter_map(|p| p.colour)
            .map(|v| v as f32)
            .collect();
        let range = (!colour_values.is_empty()).then(|| ValueRange::of(&colour_values));
        let (x_title, y_title) = (title(self.x), title(self.y));

        let mut action = None;
        let mut drawn = Vec::with_capacity(points.len());
        let mut clicked = None;
        let save = plots::figure(
            ui,
            "head scatter",
            &format!("{y_title} against {x_title}, one point per head"),
            |ui| {
                let height = (ui.available_height() - 40.0).max(240.0);
                let plot = Plot::new("head scatter")
                    .height(height)
                    .allow_scroll(false)
                    .x_axis_label(x_title.clone())
                    .y_axis_label(y_title.clone());
                let response = plot.show(ui, |plot_ui| {
                    for p in &points {
                        let colour = match (p.colour, range) {
                            (Some(v), Some(range)) => {
                                let [r, g, b] = POINT_MAP.color(v as f32, range);
                                egui::Color32::from_rgb(r, g, b)
                            }
                            _ => egui::Color32::from_gray(130),
                        };
                        plot_ui.points(
                            Points::new(
                                format!("L{} H{}", p.head.layer, p.head.head),
                                vec![[p.x, p.y]],
                            )
                            .color(colour)
                            .radius(4.0)
                            .shape(MarkerShape::Circle)
                            .allow_hover(false),
                        );
                    }
                });
                for p in &points {
                    let at = response
                        .transform
                        .position_from_point(&PlotPoint::new(p.x, p.y));
                    drawn.push((p.head, at));
                }
                let hovered = response
                    .response
                    .hover_pos()
                    .and_then(|p| head_at(&drawn, p));
                if let Some(head) = hovered {
                    let f = analysis.head(head);
                    let value = |c: usize| figure(f.and_then(|f| figure_value(head, f, c)), 3);
                    response.response.clone().on_hover_ui_at_pointer(|ui| {
                        ui.strong(format!("L{} H{}", head.layer, head.head));
                        ui.label(format!("{x_title} {}", value(self.x)));
                        ui.label(format!("{y_title} {}", value(self.y)));
                        if let PointColour::Figure(c) = self.colour {
                            ui.label(format!("{} {}", title(c), value(c)));
                        }
                        ui.weak("Click to open");
                    });
                }
                if response.response.clicked() {
                    clicked = response
                        .response
                        .interact_pointer_pos()
                        .and_then(|p| head_at(&drawn, p));
                }
                let caption = match self.colour {
                    PointColour::Layer => "colour: layer, first dark, last bright".to_string(),
                    PointColour::Figure(c) => format!("colour: {}", title(c)),
                };
                heatmap::colour_bar(ui, POINT_MAP, range, &caption);
            },
        );
        save_plot(&mut action, save);
        self.drawn = drawn;

        if let Some(head) = clicked {
            action = Some(ViewAction::OpenHead(head));
        }
        let left_out = heads.len() - points.len();
        if left_out > 0 {
            ui.weak(format!(
                "{left_out} of {} heads left out: their {x_title} or {y_title} is undefined (—)",
                heads.len()
            ));
        }
        action
    }
}
