//! Keeping the text on disk: shortly after each edit the whole text is
//! written to a file in headscope's cache folder, and restored at start, so
//! a crash or a kill loses nothing.
//!
//! The writing happens on an [`Autosaver`] thread (newest text first, with
//! an atomic write through [`crate::atomic_file`]) so the UI never waits on
//! the disk; [`Autosave`] decides when a write is due.

use crossbeam_channel::Sender;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The pause after the last edit before the text is autosaved.
const AUTOSAVE_SECONDS: f64 = 1.0;

/// Where the editor's text is autosaved by default.
pub fn default_autosave_path() -> PathBuf {
    crate::model::cache_dir().join("autosave.txt")
}

/// When the text is written next, and the thread that writes it.
pub struct Autosave {
    /// `None`: no autosave (tests).
    saver: Option<Autosaver>,
    /// When the pending edit is to be written.
    due: Option<f64>,
}

impl Autosave {
    pub fn new(path: Option<PathBuf>) -> Self {
        Self {
            saver: path.map(Autosaver::new),
            due: None,
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.saver.is_some()
    }

    /// An edit was made: write after the pause.
    pub fn edited(&mut self, ctx: &egui::Context) {
        self.due = Some(ctx.input(|i| i.time) + AUTOSAVE_SECONDS);
    }

    /// Nothing is owed (a text just restored or read is already on disk).
    pub fn cancel(&mut self) {
        self.due = None;
    }

    /// Whether an edit is waiting to be written.
    pub fn is_pending(&self) -> bool {
        self.due.is_some()
    }

    /// Whether the pending edit is to be written now; otherwise asks for a
    /// repaint when it will be.
    pub fn is_due(&self, ctx: &egui::Context) -> bool {
        let Some(due) = self.due else {
            return false;
        };
        let now = ctx.input(|i| i.time);
        if now < due {
            ctx.request_repaint_after(std::time::Duration::from_secs_f64(due - now));
            return false;
        }
        true
    }

    /// Queues `text` to be written.
    pub fn save(&self, text: &str) {
        if let Some(saver) = &self.saver {
            saver.save(text.to_string());
        }
    }

    /// The error of the last write, if it failed.
    pub fn last_error(&self) -> Option<String> {
        self.saver.as_ref().and_then(Autosaver::last_error)
    }
}

/// Saves the text on its own thread, newest request first, so the UI never
/// waits on the disk. Dropping it writes what is pending and joins.
pub struct Autosaver {
    path: PathBuf,
    requests: Option<Sender<String>>,
    last_error: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Autosaver {
    pub fn new(path: PathBuf) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded::<String>();
        let last_error = Arc::new(Mutex::new(None));
        let error_slot = last_error.clone();
        let target = path.clone();
        let thread = std::thread::Builder::new()
            .name("headscope-autosave".into())
            .spawn(move || {
                while let Ok(mut text) = rx.recv() {
                    // Only the newest text matters.
                    if let Some(newest) = rx.try_iter().last() {
                        text = newest;
                    }
                    let outcome = write(&target, &text)
                        .err()
                        .map(|e| format!("autosave failed: {e}"));
                    if let Ok(mut slot) = error_slot.lock() {
                        *slot = outcome;
                    }
                }
            })
            .ok();
        Self {
            path,
            requests: thread.is_some().then_some(tx),
            last_error,
            thread,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `text` to be written.
    pub fn save(&self, text: String) {
        if let Some(requests) = &self.requests {
            let _ = requests.send(text);
        }
    }

    /// The error of the last write, if it failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|slot| slot.clone())
    }
}

/// Writes `text` to `path` atomically, creating the cache folder first.
fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| {
            format!(
                "cannot create {}: {}",
                folder.display(),
                crate::textfile::describe_io_error(&e)
            )
        })?;
    }
    crate::atomic_file::save_text(text, path).map_err(|e| e.to_string())
}

impl Drop for Autosaver {
    fn drop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn autosaver_writes_the_newest_text_before_drop_returns() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("autosave.txt");
        let saver = Autosaver::new(path.clone());
        saver.save("old".into());
        saver.save("new".into());
        drop(saver);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new");
    }

    #[test]
    fn autosave_creates_its_folder_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("cache").join("autosave.txt");
        let saver = Autosaver::new(path.clone());
        saver.save("first".into());
        drop(saver);
        let saver = Autosaver::new(path.clone());
        saver.save("second".into());
        drop(saver);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "second");
        let files = std::fs::read_dir(path.parent().expect("folder"))
            .expect("list")
            .count();
        assert_eq!(files, 1, "no temp file left behind");
    }

    #[test]
    fn a_failed_autosave_is_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blocker = dir.path().join("a file");
        std::fs::write(&blocker, "not a folder").expect("write");
        let saver = Autosaver::new(blocker.join("autosave.txt"));
        saver.save("text".into());
        let path = saver.path().to_path_buf();
        // Dropping joins the thread, so the error is set by then; read it
        // through a second handle on the same slot first.
        let slot = saver.last_error.clone();
        drop(saver);
        let error = slot.lock().expect("lock").clone().expect("an error");
        assert!(error.starts_with("autosave failed"), "{error}");
        assert!(!path.exists());
    }
}
