//! The platform's file dialogs (rfd), run off the UI thread.
//!
//! rfd asks the desktop's xdg-desktop-portal for a dialog, or zenity when
//! there is no portal. On a desktop with neither it returns "nothing
//! chosen" at once, exactly as if the user had cancelled, and a click on
//! "Open…" would seem to do nothing. A dialog that comes back empty sooner
//! than anyone could have cancelled it was never shown: that is remembered
//! and the app says so (see [`take_unavailable`]).
//!
//! Each dialog's answer arrives on a channel, read each frame with
//! [`poll_dialog`]; [`FileDialogs`] holds the main window's five (open a
//! text, save it, open a model folder or model B's, export), one of each at a time.

use super::export_menu::ExportKind;
use crate::app::jobs::spawn_job;
use crate::captures::HeadId;
use crate::worker::Waker;
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
    wake: Waker,
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

/// A dialog's answer, if it has come: the path chosen, or `None` while it
/// is open and after a cancel. The slot is emptied once the dialog closed.
pub fn poll_dialog(slot: &mut Option<Receiver<Option<PathBuf>>>) -> Option<PathBuf> {
    let receiver = slot.as_ref()?;
    match receiver.try_recv() {
        Ok(picked) => {
            *slot = None;
            picked
        }
        Err(crossbeam_channel::TryRecvError::Empty) => None,
        Err(crossbeam_channel::TryRecvError::Disconnected) => {
            *slot = None;
            None
        }
    }
}

/// Asks where to save a plot's PNG, suggesting `name`.
pub fn save_png(wake: Waker, name: String) -> Receiver<Option<PathBuf>> {
    spawn_dialog(wake, move || {
        rfd::FileDialog::new()
            .set_title("Save plot")
            .set_file_name(name)
            .add_filter("PNG", &["png"])
            .save_file()
    })
}

/// What a dialog of the main window answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Picked {
    OpenText(PathBuf),
    SaveText(PathBuf),
    ModelFolder(PathBuf),
    /// The folder of the second model (Compare).
    ComparisonFolder(PathBuf),
    Export(ExportKind, HeadId, PathBuf),
}

/// The main window's file dialogs; asking for one that is already open
/// does nothing.
#[derive(Default)]
pub struct FileDialogs {
    open_text: Option<Receiver<Option<PathBuf>>>,
    save_text: Option<Receiver<Option<PathBuf>>>,
    model_folder: Option<Receiver<Option<PathBuf>>>,
    comparison_folder: Option<Receiver<Option<PathBuf>>>,
    /// A save dialog for an export, with what it is for.
    export: Option<(ExportKind, HeadId, Receiver<Option<PathBuf>>)>,
}

impl FileDialogs {
    /// File → Open text file… (Ctrl+O).
    pub fn open_text(&mut self, wake: &Waker) {
        if self.open_text.is_none() {
            self.open_text = Some(spawn_dialog(wake.clone(), || {
                rfd::FileDialog::new()
                    .set_title("Open a text file")
                    .add_filter("Text", &["txt", "md", "text"])
                    .add_filter("All files", &["*"])
                    .pick_file()
            }));
        }
    }

    /// File → Save text as… (Ctrl+Shift+S), suggesting `name`.
    pub fn save_text(&mut self, wake: &Waker, name: String) {
        if self.save_text.is_none() {
            self.save_text = Some(spawn_dialog(wake.clone(), move || {
                rfd::FileDialog::new()
                    .set_title("Save text as")
                    .set_file_name(name)
                    .add_filter("Text", &["txt"])
                    .save_file()
            }));
        }
    }

    /// Open model folder… (File menu and the model panel).
    pub fn model_folder(&mut self, wake: &Waker) {
        if self.model_folder.is_none() {
            self.model_folder = Some(spawn_dialog(wake.clone(), || {
                rfd::FileDialog::new()
                    .set_title(
                        "Open a model folder (config.json, model.safetensors, tokenizer.json)",
                    )
                    .pick_folder()
            }));
        }
    }

    /// Compare → load model B from a folder.
    pub fn comparison_folder(&mut self, wake: &Waker) {
        if self.comparison_folder.is_none() {
            self.comparison_folder = Some(spawn_dialog(wake.clone(), || {
                rfd::FileDialog::new()
                    .set_title(
                        "Open model B's folder (config.json, model.safetensors, tokenizer.json)",
                    )
                    .pick_folder()
            }));
        }
    }

    /// File → Export → `kind` of `head`, suggesting `name`.
    pub fn export(&mut self, wake: &Waker, kind: ExportKind, head: HeadId, name: String) {
        if self.export.is_some() {
            return;
        }
        let extension = kind.extension();
        let receiver = spawn_dialog(wake.clone(), move || {
            rfd::FileDialog::new()
                .set_title("Export")
                .set_file_name(name)
                .add_filter(extension.to_uppercase(), &[extension])
                .save_file()
        });
        self.export = Some((kind, head, receiver));
    }

    /// The answers that came since the last frame.
    pub fn poll(&mut self) -> Vec<Picked> {
        let mut picked = Vec::new();
        if let Some((kind, head, receiver)) = &self.export {
            let (kind, head) = (*kind, *head);
            let mut slot = Some(receiver.clone());
            if let Some(path) = poll_dialog(&mut slot) {
                picked.push(Picked::Export(kind, head, path));
            }
            if slot.is_none() {
                self.export = None;
            }
        }
        picked.extend(poll_dialog(&mut self.save_text).map(Picked::SaveText));
        picked.extend(poll_dialog(&mut self.open_text).map(Picked::OpenText));
        picked.extend(poll_dialog(&mut self.model_folder).map(Picked::ModelFolder));
        picked.extend(poll_dialog(&mut self.comparison_folder).map(Picked::ComparisonFolder));
        picked
    }
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
