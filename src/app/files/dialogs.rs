//! File dialogs: the desktop's own where it has one, headscope's where it
//! has none, so Open and every Export always work.
//!
//! rfd asks the desktop's xdg-desktop-portal for a dialog, or zenity when
//! there is no portal, on a thread of its own. On a desktop with neither
//! (a minimal window manager, remote X) it returns "nothing chosen" at
//! once, exactly as if the user had cancelled. A dialog that comes back
//! empty sooner than anyone could have cancelled it was never shown: the
//! same request then opens in the window instead ([`super::browser`]),
//! and every later dialog does too. `HEADSCOPE_FILE_DIALOG=in-app` asks for
//! the window's dialogs from the start.
//!
//! A [`DialogRequest`] says what is asked (a file, a folder, a name to
//! save as, the file types shown); a [`Dialog`] is one open, polled each
//! frame with [`poll_dialog`]. [`FileDialogs`] holds the main window's
//! (open a text, save it, open a model folder or model B's, export), one
//! of each at a time: a text's dialogs start in the text's folder, a
//! model's in the last model's folder (else headscope's models folder),
//! and Export and Save figure in the folder the last of them saved to
//! (remembered across sessions).

pub use super::browser::Choose;
use super::browser::{Answer, Browser};
use super::export_menu::ExportKind;
use crate::app::jobs::spawn_job;
use crate::captures::HeadId;
use crate::worker::Waker;
use crossbeam_channel::{Receiver, TryRecvError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Faster than any person can cancel a dialog.
const NO_DIALOG_WITHIN: Duration = Duration::from_millis(150);

/// Set once the desktop showed no dialog: from then on they are in-app.
static IN_APP: AtomicBool = AtomicBool::new(false);

/// The window's own dialogs from now on, whatever the desktop offers (the
/// `HEADSCOPE_FILE_DIALOG=in-app` setting; tests).
pub fn use_in_app_dialogs() {
    IN_APP.store(true, Ordering::SeqCst);
}

fn in_app() -> bool {
    IN_APP.load(Ordering::SeqCst)
        || std::env::var("HEADSCOPE_FILE_DIALOG").is_ok_and(|v| v == "in-app")
}

/// One question for a file dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialogRequest {
    pub title: String,
    pub choose: Choose,
    /// The file types listed, as (name, extensions); empty: every file.
    pub filters: Vec<(String, Vec<String>)>,
    /// The folder an in-app dialog starts in (else the working folder).
    pub start_in: Option<PathBuf>,
}

impl DialogRequest {
    /// Asks for an existing file.
    pub fn file(title: &str) -> Self {
        Self::new(title, Choose::File)
    }

    /// Asks for an existing folder.
    pub fn folder(title: &str) -> Self {
        Self::new(title, Choose::Folder)
    }

    /// Asks where to save, suggesting `name`.
    pub fn save(title: &str, name: impl Into<String>) -> Self {
        Self::new(title, Choose::SaveAs(name.into()))
    }

    fn new(title: &str, choose: Choose) -> Self {
        Self {
            title: title.to_string(),
            choose,
            filters: Vec::new(),
            start_in: None,
        }
    }

    /// Lists the files of these extensions (several calls: several types).
    pub fn filter(mut self, name: &str, extensions: &[&str]) -> Self {
        let extensions = extensions.iter().map(|e| e.to_string()).collect();
        self.filters.push((name.to_string(), extensions));
        self
    }

    /// Starts an in-app dialog in `folder`.
    pub fn start_in(mut self, folder: Option<&Path>) -> Self {
        self.start_in = folder.filter(|f| f.is_dir()).map(Path::to_path_buf);
        self
    }

    /// The desktop's dialog (blocks until it is closed).
    fn ask_desktop(&self) -> Option<PathBuf> {
        let mut dialog = rfd::FileDialog::new().set_title(&self.title);
        for (name, extensions) in &self.filters {
            dialog = dialog.add_filter(name, extensions);
        }
        match &self.choose {
            Choose::File => dialog.pick_file(),
            Choose::Folder => dialog.pick_folder(),
            Choose::SaveAs(name) => dialog.set_file_name(name).save_file(),
        }
    }

    /// The window's own dialog, open.
    fn in_app_dialog(&self) -> Box<Browser> {
        let extensions: Vec<String> = self
            .filters
            .iter()
            .flat_map(|(_, e)| e.iter().cloned())
            .collect();
        Box::new(Browser::new(
            &self.title,
            self.choose.clone(),
            &extensions,
            self.start_in.as_deref(),
        ))
    }
}

/// What the desktop's dialog answered, and whether it was shown at all.
#[derive(Debug)]
struct DesktopAnswer {
    picked: Option<PathBuf>,
    shown: bool,
}

/// Runs `ask` (a desktop dialog) on its own thread; an empty answer sooner
/// than [`NO_DIALOG_WITHIN`] means no dialog was shown.
fn ask_on_thread(
    wake: Waker,
    ask: impl FnOnce() -> Option<PathBuf> + Send + 'static,
) -> Receiver<DesktopAnswer> {
    spawn_job("headscope-dialog", wake, move || {
        let asked = Instant::now();
        let picked = ask();
        let shown = picked.is_some() || asked.elapsed() >= NO_DIALOG_WITHIN;
        DesktopAnswer { picked, shown }
    })
}

enum Backend {
    Desktop(Receiver<DesktopAnswer>),
    InApp(Box<Browser>),
}

/// One dialog open, the desktop's or the window's.
pub struct Dialog {
    request: DialogRequest,
    backend: Backend,
}

impl Dialog {
    /// Opens the dialog `request` asks for.
    pub fn open(wake: &Waker, request: DialogRequest) -> Self {
        let backend = if in_app() {
            Backend::InApp(request.in_app_dialog())
        } else {
            let asked = request.clone();
            Backend::Desktop(ask_on_thread(wake.clone(), move || asked.ask_desktop()))
        };
        Self { request, backend }
    }

    /// What the dialog asks.
    pub fn request(&self) -> &DialogRequest {
        &self.request
    }

    /// Whether the window draws this dialog itself.
    pub fn is_in_app(&self) -> bool {
        matches!(self.backend, Backend::InApp(_))
    }

    /// Draws an in-app dialog; once the dialog is closed, its answer: the
    /// path chosen, or `None` after a cancel.
    pub fn poll(&mut self, ctx: &egui::Context) -> Option<Option<PathBuf>> {
        match &mut self.backend {
            Backend::Desktop(answer) => match answer.try_recv() {
                Ok(DesktopAnswer { shown: false, .. }) => {
                    // No desktop dialog: this one, and every later one, in
                    // the window.
                    IN_APP.store(true, Ordering::SeqCst);
                    self.backend = Backend::InApp(self.request.in_app_dialog());
                    ctx.request_repaint();
                    None
                }
                Ok(DesktopAnswer { picked, .. }) => Some(picked),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(None),
            },
            Backend::InApp(dialog) => match dialog.show(ctx) {
                Answer::Open => None,
                Answer::Chosen(path) => Some(Some(path)),
                Answer::Cancelled => Some(None),
            },
        }
    }
}

/// A dialog's answer, if it has come: the path chosen, or `None` while it
/// is open and after a cancel. The slot is emptied once the dialog closed.
pub fn poll_dialog(ctx: &egui::Context, slot: &mut Option<Dialog>) -> Option<PathBuf> {
    let answer = slot.as_mut()?.poll(ctx)?;
    *slot = None;
    answer
}

/// Asks where to save a figure as `format`, suggesting `name`, starting in
/// `folder` (the last export's).
pub fn save_figure(
    wake: &Waker,
    name: String,
    format: crate::export::FigureFormat,
    folder: Option<&Path>,
) -> Dialog {
    Dialog::open(
        wake,
        DialogRequest::save("Save figure", name)
            .filter(format.name(), &[format.extension()])
            .start_in(folder),
    )
}

/// The dialog that picks a model: a folder (or a GGUF file in it), or
/// with `file` a GGUF file or a capture file (docs/CAPTURE.md), which
/// takes a model's place. Its title is short: a window title is cut to the
/// dialog's width.
fn model_request(title: &str, file: bool) -> DialogRequest {
    if file {
        DialogRequest::file(&format!("{title}: GGUF or capture file"))
            .filter("GGUF", &["gguf"])
            .filter("Capture", &["safetensors"])
    } else {
        DialogRequest::folder(&format!("{title} folder")).filter("GGUF", &["gguf"])
    }
}

/// Where a model dialog starts: the folder that holds the last model
/// (`last`, as the user would type it), else headscope's models folder.
pub fn model_folder(last: Option<&str>) -> Option<PathBuf> {
    let last = last
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|p| p.is_dir());
    last.or_else(|| {
        let models = crate::model::cache_dir().join("models");
        models.is_dir().then_some(models)
    })
}

/// What a dialog of the main window answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Picked {
    OpenText(PathBuf),
    SaveText(PathBuf),
    /// A model folder or GGUF file.
    Model(PathBuf),
    /// The folder or GGUF file of the second model (Compare).
    ComparisonModel(PathBuf),
    Export(ExportKind, HeadId, PathBuf),
}

/// The main window's file dialogs; asking for one that is already open
/// does nothing.
#[derive(Default)]
pub struct FileDialogs {
    open_text: Option<Dialog>,
    save_text: Option<Dialog>,
    model: Option<Dialog>,
    comparison_model: Option<Dialog>,
    /// A save dialog for an export, with what it is for.
    export: Option<(ExportKind, HeadId, Dialog)>,
    /// Where the text dialogs start: the text's folder.
    folder: Option<PathBuf>,
    /// Where the model dialogs start.
    model_folder: Option<PathBuf>,
    /// Where Export and Save figure start: the folder the last export went
    /// to (persisted).
    export_folder: Option<PathBuf>,
}

impl FileDialogs {
    /// In-app dialogs start in `folder` (the text's) from now on.
    pub fn start_in(&mut self, folder: Option<&Path>) {
        self.folder = folder.map(Path::to_path_buf);
    }

    /// The folder Export and Save figure start in.
    pub fn export_folder(&self) -> Option<&Path> {
        self.export_folder.as_deref()
    }

    /// Export and Save figure start where `path` (just exported) is, from
    /// now on.
    pub fn exported_to(&mut self, path: &Path) {
        if let Some(folder) = path.parent().filter(|f| f.is_dir()) {
            self.export_folder = Some(folder.to_path_buf());
        }
    }

    /// Export and Save figure start in `folder` (the persisted one).
    pub fn set_export_folder(&mut self, folder: Option<PathBuf>) {
        self.export_folder = folder;
    }

    fn open(&self, wake: &Waker, request: DialogRequest) -> Option<Dialog> {
        Some(Dialog::open(wake, request.start_in(self.folder.as_deref())))
    }

    fn open_model(&self, wake: &Waker, request: DialogRequest) -> Option<Dialog> {
        Some(Dialog::open(
            wake,
            request.start_in(self.model_folder.as_deref()),
        ))
    }

    /// File → Open text file… (Ctrl+O).
    pub fn open_text(&mut self, wake: &Waker) {
        if self.open_text.is_none() {
            let request = DialogRequest::file("Open a text file")
                .filter("Text", &["txt", "md", "text"])
                .filter("All files", &["*"]);
            self.open_text = self.open(wake, request);
        }
    }

    /// File → Save text as… (Ctrl+Shift+S), suggesting `name`.
    pub fn save_text(&mut self, wake: &Waker, name: String) {
        if self.save_text.is_none() {
            let request = DialogRequest::save("Save text as", name).filter("Text", &["txt"]);
            self.save_text = self.open(wake, request);
        }
    }

    /// Open model folder… (File menu and the model panel), or with
    /// `file`, Open GGUF file…, starting where the `last` model is.
    pub fn model(&mut self, wake: &Waker, file: bool, last: Option<&str>) {
        if self.model.is_none() {
            self.model_folder = model_folder(last);
            self.model = self.open_model(wake, model_request("Open a model", file));
        }
    }

    /// Compare → load model B from a folder or (`file`) a GGUF file,
    /// starting where the `last` model is.
    pub fn comparison_model(&mut self, wake: &Waker, file: bool, last: Option<&str>) {
        if self.comparison_model.is_none() {
            self.model_folder = model_folder(last);
            self.comparison_model = self.open_model(wake, model_request("Open model B", file));
        }
    }

    /// File → Export → `kind` of `head` as a file of `extension`,
    /// suggesting `name`.
    pub fn export(
        &mut self,
        wake: &Waker,
        kind: ExportKind,
        head: HeadId,
        name: String,
        extension: &str,
    ) {
        if self.export.is_some() {
            return;
        }
        let request = DialogRequest::save("Export", name)
            .filter(&extension.to_uppercase(), &[extension])
            .start_in(self.export_folder.as_deref().or(self.folder.as_deref()));
        self.export = Some((kind, head, Dialog::open(wake, request)));
    }

    /// Draws the in-app dialogs open; the answers that came since the last
    /// frame.
    pub fn poll(&mut self, ctx: &egui::Context) -> Vec<Picked> {
        let mut picked = Vec::new();
        if let Some((kind, head, dialog)) = &mut self.export {
            if let Some(answer) = dialog.poll(ctx) {
                let (kind, head) = (*kind, *head);
                self.export = None;
                if let Some(path) = &answer {
                    self.exported_to(path);
                }
                picked.extend(answer.map(|path| Picked::Export(kind, head, path)));
            }
        }
        picked.extend(poll_dialog(ctx, &mut self.save_text).map(Picked::SaveText));
        picked.extend(poll_dialog(ctx, &mut self.open_text).map(Picked::OpenText));
        picked.extend(poll_dialog(ctx, &mut self.model).map(Picked::Model));
        picked.extend(poll_dialog(ctx, &mut self.comparison_model).map(Picked::ComparisonModel));
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn only_a_dialog_that_could_not_have_been_shown_counts_as_missing() {
        let wake: crate::worker::Waker = Arc::new(|| {});
        let chosen = ask_on_thread(wake.clone(), || Some(PathBuf::from("/tmp/x.txt")));
        let answer = chosen.recv().unwrap();
        assert_eq!(answer.picked, Some(PathBuf::from("/tmp/x.txt")));
        assert!(answer.shown);

        let cancelled = ask_on_thread(wake.clone(), || {
            std::thread::sleep(Duration::from_millis(400));
            None
        });
        let answer = cancelled.recv().unwrap();
        assert!(
            answer.picked.is_none() && answer.shown,
            "a cancel by a person"
        );

        let never_shown = ask_on_thread(wake, || None);
        let answer = never_shown.recv().unwrap();
        assert!(answer.picked.is_none() && !answer.shown);
    }
}
