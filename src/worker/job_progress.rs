//! How far a slow job has come, shared by the thread that does it (which
//! counts its steps and looks for a cancel) and the app's progress widget
//! (`app::widgets::progress`): the grid's thumbnails, the logit lens,
//! Compare's run of model B. Here, below the app, so that a job the worker
//! runs (the logit lens on its prediction thread, a comparison on the
//! model thread) counts in it too.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How far a job has come, shared by its thread (which counts steps and
/// looks for a cancel) and the widget that shows it (the app's
/// `widgets::progress`).
#[derive(Debug)]
pub struct JobProgress {
    /// What the job does, for the widget: "Drawing the thumbnails".
    pub what: String,
    /// What a step is, after the count ("12 of 30 layers"); empty for
    /// none.
    unit: &'static str,
    done: AtomicUsize,
    total: usize,
    cancelled: AtomicBool,
    started: Instant,
}

impl JobProgress {
    pub fn new(what: impl Into<String>, total: usize) -> Arc<Self> {
        Self::counting(what, "", total)
    }

    /// A job of `total` steps that are each a `unit` ("layers"), which its
    /// description names: "12 of 30 layers".
    pub fn counting(what: impl Into<String>, unit: &'static str, total: usize) -> Arc<Self> {
        Arc::new(Self {
            what: what.into(),
            unit,
            done: AtomicUsize::new(0),
            total,
            cancelled: AtomicBool::new(false),
            started: Instant::now(),
        })
    }

    /// One more step done.
    pub fn step(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// `done` steps done, for a job that says where it stands rather than
    /// counting each step (model B's run in a comparison: the layer it is
    /// at); never goes back.
    pub fn reach(&self, done: usize) {
        self.done.fetch_max(done, Ordering::Relaxed);
    }

    /// Asks the job to stop at its next step.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The share done, 0 to 1.
    pub fn fraction(&self) -> f32 {
        if self.total == 0 {
            return 1.0;
        }
        (self.done.load(Ordering::Relaxed) as f32 / self.total as f32).min(1.0)
    }

    /// "120 of 270 · ~8 s left" at the pace so far (no time before the
    /// first step).
    pub fn describe(&self) -> String {
        let done = self.done.load(Ordering::Relaxed).min(self.total);
        let count = format!("{done} of {} {}", self.total, self.unit)
            .trim_end()
            .to_string();
        if done == 0 {
            return count;
        }
        let per_step = self.started.elapsed() / done as u32;
        let left = per_step * (self.total - done) as u32;
        format!("{count} · ~{} left", crate::pipeline::seconds(left))
    }
}
