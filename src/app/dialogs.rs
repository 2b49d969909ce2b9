//! The platform's file dialogs (rfd), run off the UI thread.
//!
//! rfd asks the desktop's xdg-desktop-portal for a dialog, or zenity when
//! there is no portal. On a desktop with neither it returns "nothing
//! chosen" at once, exactly as if the user had cancelled, and a click on
//! "Open…" would seem to do nothing. A dialog that comes back empty sooner
//! than anyone could have cancelled it was never shown: that is remembered
//! and the app says so (see [`take_unavailable`]).

use super::document::spawn_job;
use crossbeam_channel::Receiver;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Faster than any person can cancel a dialog.
const NO_DIALOG_WITHIN: Duration = Duration::from_millis(150);

static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// What the app shows when a dialog could not be opened.
pub const UNAVAILABLE_MESSAGE: &str = "No file dialog could be opened: this desktop has \
    neither an xdg-desktop-portal nor zenity (install xdg-desktop-portal-gtk or zenity). \
    Meanwhile, drop text files on the window or name them on the command line \
    (headscope --model M FILE), and write exports with `headscope export`.";

/// Runs `dialog` (an rfd call) on its own thread; its answer arrives on the
/// returned channel, and `wake` repaints the window.
pub fn spawn_dialog(
    wake: crate::worker::Waker,
    dialog: impl FnOnce() -> Option<PathBuf> + Send + 'static,
) -> Receiver<Option<PathBuf>> {
    spawn_job("headscope-dialog", wake, move || {
        let asked = Instant::now();
        let picked = dialog();
        if picked.is_none() && asked.elapsed() < NO_DIALOG_WITHIN {
            UNAVAILABLE.store(true, Ordering::SeqCst);
        }
        picked
    })
}

/// Whether a dialog failed to open since the last call.
pub fn take_unavailable() -> bool {
    UNAVAILABLE.swap(false, Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn only_a_dialog_that_could_not_have_been_shown_is_reported() {
        let wake: crate::worker::Waker = Arc::new(|| {});
        // (One test, so that no other test touches the flag meanwhile.)
        take_unavailable();
        let chosen = spawn_dialog(wake.clone(), || Some(PathBuf::from("/tmp/x.txt")));
        assert_eq!(chosen.recv().unwrap(), Some(PathBuf::from("/tmp/x.txt")));
        assert!(!take_unavailable());

        let cancelled = spawn_dialog(wake.clone(), || {
            std::thread::sleep(Duration::from_millis(400));
            None
        });
        assert_eq!(cancelled.recv().unwrap(), None);
        assert!(!take_unavailable(), "a cancel by a person is not an error");

        let never_shown = spawn_dialog(wake, || None);
        assert_eq!(never_shown.recv().unwrap(), None);
        assert!(take_unavailable());
        assert!(!take_unavailable(), "reported once");
    }
}
