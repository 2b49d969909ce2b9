//! A logit-lens table the worker computes for the result on screen, kept
//! with the result it is of: the Logit lens tab's (every layer), and the
//! model's own next-token predictions (its last layer: the top 5 at every
//! position), shown when a token is hovered in any view and asked for the
//! first time one is ([`LensSlot::ask`]): a second pass and the LM head at
//! every position are not spent on each edit of a text nobody hovers.
//! A table computed with a [`JobProgress`] shows it and can be cancelled
//! ([`LensSlot::cancel`]); one of a result no longer on screen is
//! cancelled as the next is asked for.

use crate::app::jobs::JobProgress;
use crate::worker::{LensResult, LensTable};
use crossbeam_channel::{Receiver, TryRecvError};
use std::cell::Cell;
use std::sync::Arc;

/// A table being computed: the result generation it is of, the worker's
/// answer, and its progress where it counts one.
struct Pending {
    generation: u64,
    answer: Receiver<LensResult>,
    progress: Option<Arc<JobProgress>>,
}

/// The table of one result, or the answer being waited for.
#[derive(Default)]
pub struct LensSlot {
    /// The result generation `table` is of, and the table (or why none).
    table: Option<(u64, Result<LensTable, String>)>,
    /// The table being computed.
    pending: Option<Pending>,
    /// The result generation whose table the user cancelled: not asked
    /// for again until [`LensSlot::compute_again`].
    cancelled: Option<u64>,
    /// Something on screen wants the table (set while drawing, through a
    /// shared reference).
    asked: Cell<bool>,
}

impl LensSlot {
    /// Whether the result `generation` still needs its table asked for:
    /// neither computed nor asked, nor cancelled, and no other answer
    /// awaited (one at a time, so that a growing text asks for its newest
    /// result's once the one in flight is done). A table being computed
    /// with a progress, of a result no longer on screen, is cancelled: its
    /// answer would never be shown.
    pub fn wanted(&mut self, generation: u64) -> bool {
        self.poll();
        let stale = self
            .pending
            .as_ref()
            .is_some_and(|p| p.generation != generation && p.progress.is_some());
        if stale {
            if let Some(Pending {
                progress: Some(progress),
                ..
            }) = self.pending.take()
            {
                progress.cancel();
            }
        }
        let done = self.table.as_ref().is_some_and(|(g, _)| *g == generation);
        !done && self.pending.is_none() && self.cancelled != Some(generation)
    }

    /// Says that something on screen wants the table.
    pub fn ask(&self) {
        self.asked.set(true);
    }

    /// Whether something asked for the table since the last request.
    pub fn is_asked(&self) -> bool {
        self.asked.get()
    }

    /// The worker's answer for the result `generation` will come on
    /// `answer`; `progress`, where given, counts the job's steps.
    pub fn requested(
        &mut self,
        generation: u64,
        answer: Receiver<LensResult>,
        progress: Option<Arc<JobProgress>>,
    ) {
        self.pending = Some(Pending {
            generation,
            answer,
            progress,
        });
        self.asked.set(false);
    }

    /// The progress of the table of the result `generation`, while it is
    /// computed.
    pub fn progress(&self, generation: u64) -> Option<&JobProgress> {
        self.pending
            .as_ref()
            .filter(|p| p.generation == generation)
            .and_then(|p| p.progress.as_deref())
    }

    /// Stops the table being computed (its thread stops at its next
    /// step); its result's is not asked for again until
    /// [`LensSlot::compute_again`].
    pub fn cancel(&mut self) {
        if let Some(pending) = self.pending.take() {
            if let Some(progress) = &pending.progress {
                progress.cancel();
            }
            self.cancelled = Some(pending.generation);
        }
    }

    /// Whether the table of the result `generation` was cancelled.
    pub fn is_cancelled(&self, generation: u64) -> bool {
        self.cancelled == Some(generation)
    }

    /// Lets a cancelled table be asked for again.
    pub fn compute_again(&mut self) {
        self.cancelled = None;
    }

    /// The table of the result `generation`, once computed.
    pub fn of(&self, generation: u64) -> Option<&LensTable> {
        match &self.table {
            Some((g, Ok(table))) if *g == generation => Some(table),
            _ => None,
        }
    }

    /// Why the table of the result `generation` failed, if it did.
    pub fn error(&self, generation: u64) -> Option<&str> {
        match &self.table {
            Some((g, Err(message))) if *g == generation => Some(message),
            _ => None,
        }
    }

    /// Takes the worker's answer, if it came (a cancelled job's is
    /// dropped).
    pub fn poll(&mut self) {
        let Some(pending) = &self.pending else {
            return;
        };
        let result = match pending.answer.try_recv() {
            Ok(result) => result.map_err(|error| error.to_string()),
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Err("the model's predictions stopped".into()),
        };
        if pending.progress.as_ref().is_some_and(|p| p.is_cancelled()) {
            self.cancelled = Some(pending.generation);
        } else {
            self.table = Some((pending.generation, result));
        }
        self.pending = None;
    }
}

/// `top` as “text” p, “text” p, …
pub fn top_text(top: &[(&str, f32)]) -> String {
    top.iter()
        .map(|(text, p)| format!("“{}” {p:.3}", short(text)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A readable token (`·the`, `↵`) cut to a short cell.
pub fn short(text: &str) -> String {
    let mut chars = text.chars();
    let short: String = chars.by_ref().take(12).collect();
    if chars.next().is_some() {
        format!("{short}…")
    } else {
        short
    }
}
