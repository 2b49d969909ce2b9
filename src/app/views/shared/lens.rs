//! A logit-lens table the worker computes for the result on screen, kept
//! with the result it is of: the Logit lens tab's (every layer), and the
//! model's own next-token predictions (its last layer: the top 5 at every
//! position), shown when a token is hovered in any view and asked for the
//! first time one is ([`LensSlot::ask`]): a second pass and the LM head at
//! every position are not spent on each edit of a text nobody hovers.

use crate::worker::LensTable;
use crossbeam_channel::{Receiver, TryRecvError};
use std::cell::Cell;

/// The table of one result, or the answer being waited for.
#[derive(Default)]
pub struct LensSlot {
    /// The result generation `table` is of, and the table (or why none).
    table: Option<(u64, Result<LensTable, String>)>,
    /// The result generation being computed, and its answer.
    pending: Option<(u64, Receiver<Result<LensTable, String>>)>,
    /// Something on screen wants the table (set while drawing, through a
    /// shared reference).
    asked: Cell<bool>,
}

impl LensSlot {
    /// Whether the result `generation` still needs its table asked for:
    /// neither computed nor asked, and no other answer awaited (one at a
    /// time, so that a growing text asks for its newest result's once the
    /// one in flight is done).
    pub fn wanted(&mut self, generation: u64) -> bool {
        self.poll();
        let done = self.table.as_ref().is_some_and(|(g, _)| *g == generation);
        !done && self.pending.is_none()
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
    /// `answer`.
    pub fn requested(&mut self, generation: u64, answer: Receiver<Result<LensTable, String>>) {
        self.pending = Some((generation, answer));
        self.asked.set(false);
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

    /// Takes the worker's answer, if it came.
    pub fn poll(&mut self) {
        let Some((generation, answer)) = &self.pending else {
            return;
        };
        let result = match answer.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Err("the model's predictions stopped".into()),
        };
        self.table = Some((*generation, result));
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
