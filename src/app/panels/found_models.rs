//! The Model window's list of the models on this computer
//! ([`crate::model::discovery`]) and the recent ones: found on a background
//! thread the first time the list is shown, again when the recent models
//! change and on "Look again", so the window never waits on the disk; each row names the model, its family, size, precision
//! and where it was found; a click opens it; one headscope cannot open is
//! greyed, with the reason on hover.

use crate::app::widgets::busy;
use crate::app::widgets::format::human_bytes;
use crate::model::discovery::{self, places::Roots, FoundModel};
use crate::model::ModelSource;
use std::sync::mpsc::{channel, Receiver};

/// The search, and what it found.
#[derive(Debug, Default)]
pub struct FoundModels {
    state: Search,
    /// The recent models the last search included.
    searched_recent: Vec<String>,
}

#[derive(Debug, Default)]
enum Search {
    /// Not searched yet.
    #[default]
    NotSearched,
    Searching(Receiver<Vec<FoundModel>>),
    Found(Vec<FoundModel>),
}

impl FoundModels {
    /// Starts a search of the usual places and of `recent`.
    fn search(&mut self, ctx: &egui::Context, recent: &[String]) {
        self.searched_recent = recent.to_vec();
        let (send, receive) = channel();
        let (ctx, recent) = (ctx.clone(), recent.to_vec());
        std::thread::spawn(move || {
            let found = discovery::scan(&Roots::from_env(), &recent);
            if send.send(found).is_ok() {
                ctx.request_repaint();
            }
        });
        self.state = Search::Searching(receive);
    }

    /// The list; the model clicked, if any. `enabled`: no load in progress.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        recent: &[String],
        enabled: bool,
    ) -> Option<ModelSource> {
        if let Search::Searching(receive) = &self.state {
            if let Ok(found) = receive.try_recv() {
                self.state = Search::Found(found);
            }
        }
        let searching = matches!(self.state, Search::Searching(_));
        if matches!(self.state, Search::NotSearched)
            || (!searching && self.searched_recent != recent)
        {
            self.search(ui.ctx(), recent);
        }
        let mut clicked = None;
        ui.horizontal(|ui| {
            ui.strong("Models on this computer");
            if matches!(self.state, Search::Searching(_)) {
                busy::spinner(ui);
                ui.weak("looking in the Hugging Face cache, Ollama and LM Studio…");
            } else if ui
                .small_button("Look again")
                .on_hover_text("Search the Hugging Face cache, Ollama's store, LM Studio's folders and the recent models again")
                .clicked()
            {
                self.search(ui.ctx(), recent);
            }
        });
        let Search::Found(found) = &self.state else {
            return None;
        };
        if found.is_empty() {
            ui.weak("None found in the Hugging Face cache, Ollama's store or LM Studio's folders.");
            return None;
        }
        egui::ScrollArea::vertical()
            .id_salt("found models")
            .max_height(240.0)
            .auto_shrink([false, true])
            .show(ui, |ui| {
                egui::Grid::new("found models grid")
                    .striped(true)
                    .num_columns(5)
                    .spacing([12.0, 4.0])
                    .show(ui, |ui| {
                        for heading in ["Model", "Family", "Size", "Precision", "Found in"] {
                            ui.weak(heading);
                        }
                        ui.end_row();
                        for model in found.iter() {
                            if let Some(source) = row(ui, model, enabled) {
                                clicked = Some(source);
                            }
                            ui.end_row();
                        }
                    });
            });
        clicked
    }
}

/// One model's row; its source when clicked.
fn row(ui: &mut egui::Ui, model: &FoundModel, enabled: bool) -> Option<ModelSource> {
    let cells = [
        model.family.clone().unwrap_or_else(|| "?".into()),
        model.size_text(human_bytes),
        model.precision.clone().unwrap_or_else(|| "?".into()),
        model.place.label().to_string(),
    ];
    let mut clicked = None;
    match &model.unsupported {
        Some(reason) => {
            let why = format!("headscope cannot open {}: {reason}", model.name);
            ui.add_enabled(false, egui::Label::new(&model.name))
                .on_disabled_hover_text(&why);
            for cell in cells {
                ui.add_enabled(false, egui::Label::new(cell))
                    .on_disabled_hover_text(&why);
            }
        }
        None => {
            let link = ui
                .add_enabled(enabled, egui::Link::new(&model.name))
                .on_hover_text(format!("Open {}", model.source));
            if link.clicked() {
                clicked = Some(model.source.clone());
            }
            for cell in cells {
                ui.label(cell);
            }
        }
    }
    clicked
}
