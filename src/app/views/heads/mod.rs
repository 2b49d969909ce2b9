//! The Heads tab: every head's heatmap as a grid of thumbnails ([`grid`]),
//! or one head up close ([`detail`]), with the view choices above them
//! (similarity or attention, colour map, one scale or one per head) and
//! what the study's views draw over the grid (the category filter, the
//! heads whose focus token is picked, each head's separator attention),
//! and the captions: each head's category, or its role on the text or on
//! the induction probe ([`probe`]), whose result the tab then shows in
//! place of the text's; and the heads ablated through their menus, with
//! the effect on the shown input ([`ablation`]).

pub mod ablation;
pub mod detail;
pub mod grid;
pub mod probe;

use crate::analysis::Category;
use crate::app::settings::{GridCaptions, MatrixKind, Settings};
use crate::app::views::shared::{Shared, View, ViewAction, ViewContext};
use crate::app::widgets::busy;
use crate::app::widgets::format::{category_style, HIGHLIGHT};
use crate::app::widgets::heatmap::{self, ViewKey};
use crate::app::widgets::progress;
use crate::captures::HeadId;
use crate::colormap::{ColorMap, RangeRule, ValueRange};
use crate::pipeline::RunOutput;
use ablation::AblationSlot;
use detail::{HeadAction, HeadMarks, HeadView};
use grid::{CaptionRoles, GridMarks, Overview};
use probe::{ProbeSlot, RUN_PROBE_LABEL};
use std::sync::Arc;

/// The button that draws thumbnails whose drawing was cancelled.
pub const DRAW_THUMBNAILS_LABEL: &str = "Draw them";
/// The button that draws a head's map whose drawing was stopped.
pub const DRAW_MAP_LABEL: &str = "Draw it";

/// The Heads tab's state (not persisted).
#[derive(Default)]
pub struct HeadsView {
    /// The grid's thumbnails.
    pub overview: Overview,
    /// The open head's heatmap, zoom and pan.
    pub head_view: HeadView,
    /// The head open in the detail view; `None`: the grid.
    pub detail: Option<HeadId>,
    /// The grid shows only this layer.
    pub grid_layer: Option<usize>,
    /// The induction probe's analysis of the loaded model, for the
    /// captions.
    pub probe: ProbeSlot,
    /// The heads ablated in the grid, and their effect.
    pub ablation: AblationSlot,
}

impl HeadsView {
    /// Whether the grid's pictures show result `generation` under `settings`.
    pub fn overview_is_current(&self, generation: u64, settings: &Settings) -> bool {
        self.overview.is_current(ViewKey::new(generation, settings))
    }

    /// Closes the detail, and the one-layer grid, when a new result has no
    /// such head or layer.
    pub fn keep_within(&mut self, output: &RunOutput) {
        let (layers, heads) = (output.captures.layers, output.captures.heads);
        if let Some(head) = self.detail {
            if head.layer >= layers || head.head >= heads {
                self.detail = None;
            }
        }
        self.grid_layer = self.grid_layer.filter(|&l| l < layers);
    }

    /// Opens `head` up close, with the keyboard focus on its heatmap.
    pub fn open_head(&mut self, head: HeadId) {
        self.detail = Some(head);
        self.head_view.request_focus();
    }

    /// The probe's analysis when the tab shows it in place of the text's:
    /// the captions name its roles and it is done (its answer taken if it
    /// came).
    fn shown_probe(&mut self, settings: &Settings) -> Option<Arc<RunOutput>> {
        if settings.grid_captions != GridCaptions::ProbeRole {
            return None;
        }
        self.probe.poll();
        self.probe.output().cloned()
    }

    /// What the tab shows: the text's result or the probe's (the input
    /// ablated), and in its place the ablated run where the user asked to
    /// see it.
    fn shown(&mut self, cx: &mut ViewContext<'_>) -> Shown {
        let probe = self.shown_probe(cx.settings);
        let on_probe = probe.is_some();
        let (base, base_generation) = match probe {
            Some(probe) => (probe, self.probe.generation()),
            None => (cx.output.clone(), cx.generation),
        };
        let (output, generation) = match self.ablation.shown_run(base_generation) {
            Some((run, generation)) => (run.clone(), generation),
            None => (base.clone(), base_generation),
        };
        Shown {
            base,
            base_generation,
            output,
            generation,
            on_probe,
        }
    }

    fn head_detail(
        &mut self,
        ui: &mut egui::Ui,
        cx: &mut ViewContext<'_>,
        head: HeadId,
    ) -> Option<ViewAction> {
        let shown = self.shown(cx);
        let (output, generation) = (&shown.output, shown.generation);
        let key = ViewKey::new(generation, cx.settings);
        self.head_view.update(
            ui.ctx(),
            output,
            (key, head),
            cx.settings.map_reduction,
            cx.wake,
        );
        // Tokens picked in the text are not the probe's.
        let picked: Vec<usize> = if shown.on_probe {
            Vec::new()
        } else {
            cx.shared.selection.positions().collect()
        };
        let settings = &mut *cx.settings;
        let caption = match settings.matrix {
            MatrixKind::Similarity => format!(
                "L{} H{}: similarity S, {}",
                head.layer,
                head.head,
                settings.similarity.label()
            ),
            kind => format!(
                "L{} H{}: {} {} (rows: query, columns: key)",
                head.layer,
                head.head,
                kind.name(),
                kind.symbol()
            ),
        };
        let caption = without_attention(output, settings.matrix, caption);
        let range = self.head_view.range();
        let caption = format!(
            "{caption}; {}",
            heatmap::colour_scale(output, &key).caption()
        );
        let weighted = output.captures.has_value_norms();
        view_controls(ui, settings, (cx.working, weighted), Some(range), &caption);
        if let Some(job) = self.head_view.map.building() {
            progress::job_row(ui, job, "Stop drawing the map");
        } else if self.head_view.map.is_cancelled() {
            ui.horizontal(|ui| {
                ui.weak("Drawing the map was stopped.");
                if ui.small_button(DRAW_MAP_LABEL).clicked() {
                    self.head_view.map.draw_again();
                }
            });
        }
        let action = self.ablation_rows(ui, &shown.base, shown.base_generation);
        ui.separator();
        // The probe's tokens are not the text's.
        let text_shown = !shown.on_probe;
        let marks = HeadMarks {
            picked: &picked,
            ablated: self.ablation.is_ablated(head),
        };
        match self
            .head_view
            .ui(ui, output, head, settings, cx.working, marks)
        {
            Some(HeadAction::Back) => self.detail = None,
            Some(HeadAction::Show(next)) => self.detail = Some(next),
            Some(HeadAction::ToggleAblation) => self.ablation.toggle(head),
            Some(HeadAction::SaveRegion(request)) => return Some(ViewAction::SavePlot(request)),
            None => {}
        }
        if text_shown {
            cx.shared.hovered_cell = self.head_view.hovered_cell();
        }
        action
    }

    /// The ablation's rows (which heads, their effect, each head's
    /// importance) for the result `generation` shown, `output`; asks the
    /// worker for what they need.
    fn ablation_rows(
        &mut self,
        ui: &mut egui::Ui,
        output: &RunOutput,
        generation: u64,
    ) -> Option<ViewAction> {
        let mut action = None;
        if let Some(ablation) = self.ablation.wanted(generation) {
            ui.ctx().request_repaint();
            action = Some(ViewAction::Ablate {
                input_ids: output.input.tokens.input_ids.clone(),
                generation,
                ablation,
            });
        } else if let Some(ablation) = self.ablation.wanted_run(generation) {
            ui.ctx().request_repaint();
            action = Some(ViewAction::AblatedRun {
                input: Box::new(output.input.clone()),
                generation,
                ablation,
            });
        }
        let mode = self.ablation.mode;
        if self.ablation.importance.wanted(generation, mode) {
            ui.ctx().request_repaint();
            action = action.or(Some(ViewAction::HeadImportance {
                input_ids: output.input.tokens.input_ids.clone(),
                generation,
                mode,
            }));
        }
        self.ablation.ui(ui, output, generation);
        self.ablation.importance.ui(ui);
        action
    }

    fn heads_grid(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        let shown = self.shown(cx);
        let (output, generation) = (&shown.output, shown.generation);
        let key = ViewKey::new(generation, cx.settings);
        self.overview.update(ui.ctx(), output, key, cx.wake);
        let scale = heatmap::colour_scale(output, &key);
        let range = self.overview.shared_range().map(|r| scale.shown_range(r));
        let kind = cx.settings.matrix;
        let matrix = format!("{} {}", kind.name(), kind.symbol());
        let heads = if range.is_some() {
            "one scale for all heads"
        } else {
            "each head on its own scale"
        };
        let mut caption = format!("{matrix}, {heads}; {}", scale.caption());
        if shown.generation != shown.base_generation {
            caption.push_str("; the ablated model's run");
        }
        let caption = without_attention(output, cx.settings.matrix, caption);
        let weighted = cx.output.captures.has_value_norms();
        view_controls(ui, cx.settings, (cx.working, weighted), range, &caption);
        self.grid_controls(ui, cx.shared, cx.settings);
        let mut action = None;
        if cx.settings.grid_captions == GridCaptions::ProbeRole {
            action = self.probe_row(ui);
        }
        if let Some(job) = self.overview.building() {
            progress::job_row(ui, job, "Stop drawing them; the pictures on screen stay");
        } else if self.overview.is_cancelled(key) {
            ui.horizontal(|ui| {
                ui.weak("Drawing the thumbnails was cancelled.");
                if ui.small_button(DRAW_THUMBNAILS_LABEL).clicked() {
                    self.overview.draw_again();
                }
            });
        }
        action = action.or(self.ablation_rows(ui, &shown.base, shown.base_generation));
        let mode = self.ablation.mode;
        ui.separator();
        let mut marks = self.grid_marks(cx.shared, output, cx.settings, shown.on_probe);
        marks.importance = self
            .ablation
            .importance
            .values(shown.base_generation, mode)
            .map(<[f64]>::to_vec);
        let answer = self.overview.ui(ui, output, self.detail, &marks);
        if let Some(head) = answer.opened {
            self.open_head(head);
        }
        if let Some(head) = answer.toggled_ablation {
            self.ablation.toggle(head);
        }
        action
    }

    /// Where the induction probe stands, when the captions want its roles:
    /// asks for it, shows its progress, or says why there is none.
    fn probe_row(&mut self, ui: &mut egui::Ui) -> Option<ViewAction> {
        if self.probe.wanted() {
            ui.ctx().request_repaint();
            return Some(ViewAction::RunInductionProbe);
        }
        if self.probe.output().is_some() {
            ui.label(
                "The tab shows the model's attention on the induction probe (its leading \
                 tokens, 50 random tokens, the same 50 again), not on the text: \
                 choose categories or roles to see the text's.",
            );
        } else if let Some(job) = self.probe.job() {
            if progress::job_row(ui, job, "Stop the probe; the captions name categories") {
                self.probe.cancel();
            }
        } else if self.probe.is_cancelled() {
            ui.horizontal(|ui| {
                ui.weak("The induction probe was cancelled.");
                if ui.small_button(RUN_PROBE_LABEL).clicked() {
                    self.probe.run_again();
                }
            });
        } else if let Some(message) = self.probe.error() {
            ui.colored_label(ui.visuals().error_fg_color, message);
        }
        None
    }

    /// The extra controls above the Heads grid.
    fn grid_controls(&mut self, ui: &mut egui::Ui, shared: &mut Shared, settings: &mut Settings) {
        ui.horizontal_wrapped(|ui| {
            let label = ui.label("Highlight");
            let current = match shared.category {
                Some(c) => format!("{c} heads"),
                None => "no category".to_string(),
            };
            egui::ComboBox::from_id_salt("highlight category")
                .selected_text(current)
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut shared.category, None, "no category");
                    for c in Category::ALL {
                        let (_, colour) = category_style(Some(c));
                        ui.selectable_value(
                            &mut shared.category,
                            Some(c),
                            egui::RichText::new(format!("{c} heads")).color(colour),
                        );
                    }
                })
                .response
                .labelled_by(label.id)
                .on_hover_text(
                    "Outline the heads of a category (the Specialisation table's filter)",
                );
            ui.checkbox(&mut settings.separator_overlay, "Separator attention")
                .on_hover_text(
                    "Show each head's separator attention on its thumbnail (bar: 0 to 1)",
                );
            ui.separator();
            ui.label("Captions");
            ui.selectable_value(
                &mut settings.grid_captions,
                GridCaptions::Category,
                "categories",
            )
            .on_hover_text("Each head's category, from its selected pairs (ANALYSIS.md §4)");
            ui.selectable_value(&mut settings.grid_captions, GridCaptions::Role, "roles")
                .on_hover_text(
                    "Each head's role, from its attention on this text: previous token, \
                     duplicate token, induction, sink, separator, self or mixed \
                     (ANALYSIS.md §9)",
                );
            ui.selectable_value(
                &mut settings.grid_captions,
                GridCaptions::ProbeRole,
                "roles on the probe",
            )
            .on_hover_text(
                "Each head's role on the induction probe: the model's leading tokens, 50 \
                 random tokens and the same 50 again, where previous-token and induction \
                 heads show whatever the text (ANALYSIS.md §9; run once per model)",
            );
            ui.separator();
            if ui
                .button(ablation::IMPORTANCE_LABEL)
                .on_hover_text(
                    "Ablate each head alone (its output zero, or its mean as the ablation \
                     row says) and draw on its thumbnail how much the next-token loss rises \
                     (an encoder: how far the last hidden states turn); L × H passes",
                )
                .clicked()
            {
                self.ablation.importance.show();
            }
            if let Some(layer) = self.grid_layer {
                ui.separator();
                ui.label(format!("Showing layer {layer} only"));
                if ui.button("Show all layers").clicked() {
                    self.grid_layer = None;
                }
            }
            if !shared.selection.is_empty() {
                ui.separator();
                ui.label(
                    egui::RichText::new("outlined: heads whose focus token is picked")
                        .color(HIGHLIGHT),
                );
            }
        });
    }

    /// What the grid draws over its thumbnails of `output` (the probe's
    /// when `on_probe`).
    fn grid_marks(
        &self,
        shared: &Shared,
        output: &RunOutput,
        settings: &Settings,
        on_probe: bool,
    ) -> GridMarks {
        let analysis = &output.analysis;
        let ids = output.captures.head_ids();
        let texts = &output.input.tokens;
        let mut highlights = Vec::new();
        if !shared.selection.is_empty() || shared.category.is_some() {
            highlights = ids
                .map(|id| {
                    let f = analysis.head(id)?;
                    let mut why = Vec::new();
                    if let Some(token) = f
                        .focus_token_id
                        .filter(|&t| shared.selection.contains_id(t))
                    {
                        let text = texts.readable_of(token).unwrap_or("?".into());
                        why.push(format!("its focus token “{text}” is picked"));
                    }
                    if shared.category.is_some() && f.category == shared.category {
                        why.push(format!("category {}", category_style(f.category).0));
                    }
                    (!why.is_empty()).then(|| why.join("; "))
                })
                .collect();
        }
        // The overlay reads the matrix shown: N′'s twin while the grid
        // shows the value-weighted attention.
        let weighted = settings.matrix == MatrixKind::ValueWeighted;
        let separator_attention = settings.separator_overlay.then(|| {
            output
                .captures
                .head_ids()
                .map(|id| {
                    let figures = analysis.head(id)?;
                    if weighted {
                        figures.separator_attention_vw
                    } else {
                        figures.separator_attention
                    }
                })
                .collect()
        });
        GridMarks {
            highlights,
            separator_attention,
            only_layer: self.grid_layer,
            roles: caption_roles(output, settings, on_probe),
            ablated: self.ablation.heads().to_vec(),
            importance: None,
        }
    }
}

/// The roles the captions name: those of `output`, the text's result or,
/// `on_probe`, the probe's (no roles while the probe is not done: the
/// captions name categories meanwhile); by N′ while the grid shows it.
fn caption_roles(output: &RunOutput, settings: &Settings, on_probe: bool) -> Option<CaptionRoles> {
    let weighted = settings.matrix == MatrixKind::ValueWeighted;
    let named = match settings.grid_captions {
        GridCaptions::Category => false,
        GridCaptions::Role => true,
        GridCaptions::ProbeRole => on_probe,
    };
    named.then(|| CaptionRoles {
        roles: output
            .captures
            .head_ids()
            .map(|id| {
                let figures = output.analysis.head(id)?;
                if weighted {
                    figures.role_vw
                } else {
                    figures.role
                }
            })
            .collect(),
        on_probe,
        weighted,
    })
}

/// What the Heads tab shows ([`HeadsView::shown`]).
struct Shown {
    /// The result ablated: the text's, or the probe's.
    base: Arc<RunOutput>,
    base_generation: u64,
    /// What the pictures and figures show: `base`, or its ablated run.
    output: Arc<RunOutput>,
    generation: u64,
    on_probe: bool,
}

impl View for HeadsView {
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut ViewContext<'_>) -> Option<ViewAction> {
        match self.detail {
            Some(head) => self.head_detail(ui, cx, head),
            None => self.heads_grid(ui, cx),
        }
    }
}

/// Similarity or attention (plain, or value-weighted where the result has
/// value norms), the colour map and its scale, above the grid and the
/// detail.
fn view_controls(
    ui: &mut egui::Ui,
    settings: &mut Settings,
    (working, value_norms): (bool, bool),
    range: Option<ValueRange>,
    caption: &str,
) {
    ui.horizontal_wrapped(|ui| {
        ui.selectable_value(&mut settings.matrix, MatrixKind::Similarity, "Similarity")
            .on_hover_text("The context similarity S of each head's output vectors");
        ui.selectable_value(&mut settings.matrix, MatrixKind::Attention, "Attention")
            .on_hover_text("The attention probabilities P (rows: query, columns: key)");
        ui.add_enabled(
            value_norms,
            egui::Button::selectable(
                settings.matrix == MatrixKind::ValueWeighted,
                MatrixKind::ValueWeighted.label(),
            ),
        )
        .on_hover_text(
            "N′: attention weighted by the size of what each key writes through the head \
             (‖v W_O‖, Kobayashi et al. 2020), each row summing to 1. A sink that takes \
             attention but writes little fades",
        )
        .on_disabled_hover_text("This result has no value norms (a capture file without them)")
        .clicked()
        .then(|| settings.matrix = MatrixKind::ValueWeighted);
        ui.separator();
        let label = ui.label("Colour map");
        egui::ComboBox::from_id_salt("colour map")
            .selected_text(settings.colormap.name())
            .show_ui(ui, |ui| {
                for map in ColorMap::all() {
                    ui.selectable_value(&mut settings.colormap, map, map.name());
                }
            })
            .response
            .labelled_by(label.id);
        ui.checkbox(&mut settings.shared_scale, "One scale for all heads")
            .on_hover_text("Off: each thumbnail has its own colour range");
        let label = ui.label("Range");
        egui::ComboBox::from_id_salt("colour range")
            .selected_text(settings.colour_range.label())
            .show_ui(ui, |ui| {
                for rule in RangeRule::ALL {
                    ui.selectable_value(&mut settings.colour_range, rule, rule.label());
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text(
                "Which values span the colours: the 1st to 99th percentile (a few extreme \
                 cells take the end colours) or the minimum to the maximum",
            );
        ui.checkbox(
            &mut settings.scale_without_first_token,
            "Without first token",
        )
        .on_hover_text(
            "A causal model's first token (its attention sink) is left out of the colour \
                 range, so the other cells are not all dark",
        );
        ui.add_enabled(
            settings.matrix.is_attention(),
            egui::Checkbox::new(&mut settings.log_attention, "Log scale"),
        )
        .on_hover_text("Colour attention by log₁₀ P, to see what lies past the sink");
        // A row of its own: squeezed into the end of a narrow row, the bar
        // and its caption would widen the view past its panel.
        ui.end_row();
        heatmap::colour_bar(ui, settings.colormap, range, caption);
        if working {
            busy::spinner(ui);
            ui.weak("updating…");
        }
    });
}
/// A caption of P that says when the result has none (a capture of O alone).
fn without_attention(output: &RunOutput, kind: MatrixKind, caption: String) -> String {
    let captures = &output.captures;
    if kind.is_attention() && !captures.has_attention() {
        format!("{caption}: empty, {}", crate::capture_file::NO_ATTENTION)
    } else if kind == MatrixKind::ValueWeighted && !captures.has_value_norms() {
        format!("{caption}: empty, the result has no value norms")
    } else {
        caption
    }
}
