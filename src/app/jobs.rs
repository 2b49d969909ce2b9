//! Short-lived threads whose one answer comes back on a channel: reading a
//! file, building the grid's thumbnails, a file dialog. The UI polls the
//! channel each frame and is woken when the answer is there, so it never
//! waits on the disk or the CPU. A slow one counts its steps in a
//! [`JobProgress`], which the progress widget shows with a Cancel button.

use crossbeam_channel::Receiver;
use std::sync::Arc;

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

pub use crate::worker::JobProgress;

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
