//! The Generate panel under the text, for a decoder: how many new tokens,
//! greedy or sampled (temperature, top-p, top-k, seed), a Generate button
//! that becomes Stop while the model writes, and what became of the last
//! generation. The shell sends the request to the worker and puts the
//! continuation into the text as it comes.

use crate::app::widgets::busy;
use crate::model::predict::GenerationOptions;
use crate::predictions::{Decoding, Sampling};
use crate::worker::GenerationUpdate;
use crossbeam_channel::Receiver;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The accessible names of the panel's buttons.
pub const GENERATE_BUTTON: &str = "Generate";
pub const STOP_BUTTON: &str = "Stop";
/// The accessible name of the field of how many new tokens, at most.
pub const MAX_TOKENS_LABEL: &str = "New tokens at most";

/// A generation in flight.
struct Running {
    updates: Receiver<GenerationUpdate>,
    cancel: Arc<AtomicBool>,
    /// The prompt's length in bytes: the text's continuation starts there.
    prompt_bytes: usize,
}

/// The panel's settings and the generation in flight.
pub struct GeneratePanel {
    pub max_new_tokens: usize,
    pub sampled: bool,
    pub sampling: Sampling,
    running: Option<Running>,
    /// What became of the last generation.
    status: Option<String>,
}

impl Default for GeneratePanel {
    fn default() -> Self {
        Self {
            max_new_tokens: 20,
            sampled: false,
            sampling: Sampling {
                temperature: 0.8,
                top_p: 0.95,
                top_k: 50,
                seed: 0,
            },
            running: None,
            status: None,
        }
    }
}

/// What the panel asks of the app.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GenerateAction {
    Start(GenerationOptions),
    Stop,
}

/// What the text should become while a generation runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Continuation {
    /// Where the continuation starts in the text.
    pub prompt_bytes: usize,
    pub text: String,
    /// Whether the generation is over.
    pub finished: bool,
}

impl GeneratePanel {
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// A generation of the text's first `prompt_bytes` bytes started.
    pub fn started(
        &mut self,
        updates: Receiver<GenerationUpdate>,
        cancel: Arc<AtomicBool>,
        prompt_bytes: usize,
    ) {
        self.status = None;
        self.running = Some(Running {
            updates,
            cancel,
            prompt_bytes,
        });
    }

    /// Stops the generation between two tokens.
    pub fn stop(&self) {
        if let Some(running) = &self.running {
            running.cancel.store(true, Ordering::SeqCst);
        }
    }

    /// The newest state of the continuation, if the worker said anything.
    pub fn poll(&mut self) -> Option<Continuation> {
        let running = self.running.as_ref()?;
        let mut newest = None;
        while let Ok(update) = running.updates.try_recv() {
            newest = Some(update);
        }
        let prompt_bytes = running.prompt_bytes;
        let continuation = |text: String, finished| Continuation {
            prompt_bytes,
            text,
            finished,
        };
        match newest? {
            GenerationUpdate::Continued { text, tokens } => {
                self.status = Some(format!("{tokens} new tokens…"));
                Some(continuation(text, false))
            }
            GenerationUpdate::Finished {
                text,
                tokens,
                ended,
            } => {
                let stopped = running.cancel.load(Ordering::SeqCst);
                self.status = Some(format!(
                    "{tokens} new tokens{}",
                    if ended {
                        ", ended by the model"
                    } else if stopped {
                        ", stopped"
                    } else {
                        ""
                    }
                ));
                self.running = None;
                Some(continuation(text, true))
            }
            GenerationUpdate::Failed(message) => {
                self.status = Some(format!("Generation failed: {message}"));
                self.running = None;
                None
            }
        }
    }

    /// Draws the panel; `available` says whether a decoder can generate
    /// from the text now (else why not).
    pub fn ui(&mut self, ui: &mut egui::Ui, available: Result<(), &str>) -> Option<GenerateAction> {
        let mut action = None;
        ui.horizontal_wrapped(|ui| {
            if self.running.is_some() {
                if ui
                    .button(STOP_BUTTON)
                    .on_hover_text("Stop after the token being computed")
                    .clicked()
                {
                    action = Some(GenerateAction::Stop);
                }
                busy::spinner(ui);
            } else {
                let button = ui.add_enabled(available.is_ok(), egui::Button::new(GENERATE_BUTTON));
                let button = match available {
                    Ok(()) => button
                        .on_hover_text("Continue the text with the model; the analysis follows"),
                    Err(why) => button.on_disabled_hover_text(why),
                };
                if button.clicked() {
                    action = Some(GenerateAction::Start(self.options()));
                }
            }
            let field = ui
                .add(
                    egui::DragValue::new(&mut self.max_new_tokens)
                        .range(1..=2048)
                        .suffix(" tokens"),
                )
                .on_hover_text("At most this many new tokens");
            field.widget_info(|| {
                egui::WidgetInfo::labeled(egui::Role::SpinButton, true, MAX_TOKENS_LABEL)
            });
            ui.checkbox(&mut self.sampled, "Sample")
                .on_hover_text("Sample the new tokens instead of taking the likeliest");
        });
        if self.sampled {
            ui.horizontal_wrapped(|ui| {
                let sampling = &mut self.sampling;
                ui.label("temperature");
                ui.add(
                    egui::DragValue::new(&mut sampling.temperature)
                        .range(0.05..=5.0)
                        .speed(0.05),
                );
                ui.label("top-p");
                ui.add(
                    egui::DragValue::new(&mut sampling.top_p)
                        .range(0.01..=1.0)
                        .speed(0.01),
                );
                ui.label("top-k");
                ui.add(egui::DragValue::new(&mut sampling.top_k).range(0..=100_000))
                    .on_hover_text("0: every token");
                ui.label("seed");
                ui.add(egui::DragValue::new(&mut sampling.seed))
                    .on_hover_text("The same seed repeats a generation exactly");
            });
        }
        if let Some(status) = &self.status {
            ui.weak(status);
        }
        action
    }

    fn options(&self) -> GenerationOptions {
        GenerationOptions {
            max_new_tokens: self.max_new_tokens,
            decoding: if self.sampled {
                Decoding::Sampled(self.sampling)
            } else {
                Decoding::Greedy
            },
        }
    }
}
