//! Short-lived threads whose one answer comes back on a channel: reading a
//! file, building the grid's thumbnails, a file dialog. The UI polls the
//! channel each frame and is woken when the answer is there, so it never
//! waits on the disk or the CPU. A slow one counts its steps in a
//! [`JobProgress`], which the progress widget shows with a Cancel button.

use crossbeam_channel::Receiver;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Runs `job` on a named thread and hands its result back through a
/// channel, calling `wake` when it is there.
pub fn spawn_job<T: Send + 'static>(
    name: &str,
    wake: crate::worker::Waker,
    job: impl FnOnce() -> T + Send + 'static,
) -> Receiver<T> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _ = tx.send(job());
            wake();
        });
    if let Err(error) = spawned {
        // No thread: the receiver reports a disconnect, which callers treat
        // as a failed job; the error is printed for the log.
        eprintln!("headscope: cannot start a thread for {name}: {error}");
    }
    rx
}

/// How far a job has come, shared by its thread (which counts steps and
/// looks for a cancel) and the widget that shows it
/// ([`crate::app::widgets::progress`]).
#[derive(Debug)]
pub struct JobProgress {
    /// What the job does, for the widget: "Drawing the thumbnails".
    pub what: String,
    done: AtomicUsize,
    total: usize,
    cancelled: AtomicBool,
    started: Instant,
}

impl JobProgress {
    pub fn new(what: impl Into<String>, total: usize) -> Arc<Self> {
        Arc::new(Self {
            what: what.into(),
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
        let count = format!("{done} of {}", self.total);
        if done == 0 {
            return count;
        }
        let per_step = self.started.elapsed() / done as u32;
        let left = per_step * (self.total - done) as u32;
        format!("{count} · ~{} left", crate::pipeline::seconds(left))
    }
}

/// Runs `job` on a named thread as [`spawn_job`] does, with a
/// [`JobProgress`] of `total` steps that it counts and that the UI shows
/// and may cancel; the UI is woken as each step is done.
pub fn spawn_tracked_job<T: Send + 'static>(
    name: &str,
    what: &str,
    total: usize,
    wake: crate::worker::Waker,
    job: impl FnOnce(&JobProgress) -> T + Send + 'static,
) -> (Receiver<T>, Arc<JobProgress>) {
    let progress = JobProgress::new(what, total);
    let theirs = progress.clone();
    let receiver = spawn_job(name, wake, move || job(&theirs));
    (receiver, progress)
}
