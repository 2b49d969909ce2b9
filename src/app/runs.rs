//! Scheduling analyses: every edit or setting change owes a run, sent to
//! the worker once the text has rested for [`DEBOUNCE_SECONDS`]; only the
//! newest request counts, and the last result stays on screen until the
//! next one arrives. A run in flight that lasts says where it stands
//! ([`Runs::progress`]), and can be forgotten when the user cancels it.

use crate::input::WindowStart;
use crate::pipeline::{RunOutput, RunProgress};
use crate::worker::WorkerEvent;
use std::sync::Arc;

/// The pause after the last edit before the analysis runs again.
pub const DEBOUNCE_SECONDS: f64 = 0.15;

/// The result on screen.
pub struct Shown {
    pub generation: u64,
    pub output: Arc<RunOutput>,
    /// Where the window it was asked for starts, in the document.
    pub first: WindowStart,
    /// The sentences of the whole text it was asked of (the text may have
    /// changed since: the status bar describes this run alone).
    pub total_sentences: usize,
}

impl Shown {
    /// The sentences of the document before the text its request sent
    /// (a large document sends a slice from the window on): what turns the
    /// input's sentence numbers into the document's.
    pub fn sentence_offset(&self) -> usize {
        let first = self.first.sentence;
        first - self.output.input.first_sentence.min(first)
    }
}

/// The request in flight.
#[derive(Debug, Clone, Copy)]
struct Request {
    generation: u64,
    first: WindowStart,
    total_sentences: usize,
}

/// The run owed, the one in flight, and the last result.
#[derive(Default)]
pub struct Runs {
    /// When the text or a setting last changed and a run is owed.
    pending_since: Option<f64>,
    /// The request in flight.
    in_flight: Option<Request>,
    /// Where the run in flight stands, once it has said.
    progress: Option<RunProgress>,
    shown: Option<Shown>,
    /// Why the last run gave no result.
    error: Option<String>,
}

impl Runs {
    /// A run is owed once the pause after this change is over.
    pub fn schedule(&mut self, ctx: &egui::Context) {
        self.pending_since = Some(ctx.input(|i| i.time));
    }

    /// A run is owed now.
    pub fn schedule_now(&mut self, ctx: &egui::Context) {
        self.pending_since = Some(ctx.input(|i| i.time) - DEBOUNCE_SECONDS);
    }

    /// Whether an analysis is owed or running.
    pub fn is_working(&self, model_ready: bool) -> bool {
        // A run owed while no model is loaded is not work in progress:
        // it starts once a model is ready.
        self.in_flight.is_some() || (self.pending_since.is_some() && model_ready)
    }

    pub fn shown(&self) -> Option<&Shown> {
        self.shown.as_ref()
    }

    /// Whether a request is in flight on the worker (it can be cancelled).
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Where the run in flight stands, once it has lasted a moment.
    pub fn progress(&self) -> Option<RunProgress> {
        self.in_flight.and(self.progress)
    }

    /// Forgets the run in flight and any run owed (the user cancelled):
    /// their events are ignored from now on, and the result on screen
    /// stays.
    pub fn forget(&mut self) {
        self.in_flight = None;
        self.progress = None;
        self.pending_since = None;
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whether the owed run is due; otherwise asks for a repaint when it
    /// will be.
    pub fn is_due(&self, ctx: &egui::Context) -> bool {
        let Some(since) = self.pending_since else {
            return false;
        };
        let wait = since + DEBOUNCE_SECONDS - ctx.input(|i| i.time);
        if wait > 0.0 {
            ctx.request_repaint_after(std::time::Duration::from_secs_f64(wait));
            return false;
        }
        true
    }

    /// The owed run was sent as request `generation`, for the window that
    /// starts at `first` of a text of `total_sentences`.
    pub fn sent(&mut self, generation: u64, first: WindowStart, total_sentences: usize) {
        self.in_flight = Some(Request {
            generation,
            first,
            total_sentences,
        });
        self.progress = None;
        self.pending_since = None;
    }

    /// Takes a run event from the worker; returns the new result when one
    /// arrived for the request in flight.
    pub fn on_event(&mut self, event: WorkerEvent) -> Option<Arc<RunOutput>> {
        match event {
            WorkerEvent::RunProgress {
                generation,
                progress,
            } => {
                if self.in_flight.is_some_and(|r| r.generation == generation) {
                    self.progress = Some(progress);
                }
                None
            }
            WorkerEvent::RunFinished { generation, output } => {
                let request = self.in_flight?;
                if request.generation != generation {
                    return None;
                }
                self.in_flight = None;
                self.error = None;
                self.shown = Some(Shown {
                    generation,
                    output: output.clone(),
                    first: request.first,
                    total_sentences: request.total_sentences,
                });
                Some(output)
            }
            WorkerEvent::RunAbandoned { generation } => {
                if self.in_flight.is_some_and(|r| r.generation == generation) {
                    self.in_flight = None;
                }
                None
            }
            WorkerEvent::RunFailed {
                generation,
                message,
                ..
            } => {
                if self.in_flight.is_some_and(|r| r.generation == generation) {
                    self.in_flight = None;
                    self.error = Some(message);
                }
                None
            }
            _ => None,
        }
    }
}
