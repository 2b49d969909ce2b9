//! The text being analysed: the [`Document`], the file it came from, the
//! sentence window on screen, and reading files (or splitting a large text
//! again) on a short-lived thread so the UI never waits on the disk.
//!
//! The text's autosave ([`Autosave`]) lives here too: every edit is written
//! to the autosave file shortly after it is made. The editor ([`editor`])
//! shows the text, or the chunk of a large one around the window
//! ([`document`]).

pub mod autosave;
pub mod document;
pub mod editor;

use crate::app::jobs::spawn_job;
use crate::app::runs::Shown;
use crate::input::InputMode;
use crate::textfile::read_text_file;
use autosave::Autosave;
use crossbeam_channel::Receiver;
use document::Document;
use editor::{EditorOutput, WindowInfo, WindowMove};
use std::path::{Path, PathBuf};

/// The text the editor starts with the first time.
pub const SAMPLE_TEXT: &str = include_str!("../../../assets/sample.txt");

/// Where a text being prepared off the UI thread comes from.
#[derive(Debug, Clone, PartialEq)]
enum TextSource {
    File(PathBuf),
    Autosave,
    /// The same text split again in another input mode.
    Resplit,
}

/// A file being read (or a text being split) on another thread.
struct TextJob {
    source: TextSource,
    result: Receiver<Result<PreparedText, String>>,
}

struct PreparedText {
    document: Document,
    warning: Option<String>,
}

/// What became of a text prepared off the UI thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// A file is open; its warning, if it has one (which replaces any
    /// message on screen).
    Opened { warning: Option<String> },
    /// The autosave, or the text split again, is on screen.
    Replaced,
    /// The autosave could not be read: the persisted text (or the sample)
    /// is on screen instead.
    FellBack,
    /// Nothing changed, for this reason.
    Failed(String),
}

/// The text, where it came from, and which of its sentences are analysed.
pub struct TextState {
    document: Option<Document>,
    job: Option<TextJob>,
    /// Used when restoring the autosave fails.
    fallback: String,
    file: Option<PathBuf>,
    /// The first sentence of the window sent to the model.
    first_sentence: usize,
    /// The window starts "Next window" came from, for "Previous window".
    window_history: Vec<usize>,
    autosave: Autosave,
}

impl TextState {
    pub fn new(
        fallback: String,
        file: Option<PathBuf>,
        first_sentence: usize,
        autosave_path: Option<PathBuf>,
    ) -> Self {
        Self {
            document: None,
            job: None,
            fallback,
            file,
            first_sentence,
            window_history: Vec::new(),
            autosave: Autosave::new(autosave_path),
        }
    }

    /// The whole text (empty while a file is being read).
    pub fn text(&self) -> &str {
        self.document.as_ref().map_or("", Document::text)
    }

    pub fn document(&self) -> Option<&Document> {
        self.document.as_ref()
    }

    /// The file the text was opened from or saved to.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    pub fn set_file(&mut self, path: &Path) {
        self.file = Some(path.to_path_buf());
    }

    /// The text is no longer its file's (the whole of it was replaced).
    pub fn forget_file(&mut self) {
        self.file = None;
    }

    pub fn first_sentence(&self) -> usize {
        self.first_sentence
    }

    pub fn set_first_sentence(&mut self, first: usize) {
        self.first_sentence = first;
    }

    /// Whether a file is being read or the text split.
    pub fn is_busy(&self) -> bool {
        self.job.is_some()
    }

    /// The autosave's last error, for the status bar.
    pub fn autosave_error(&self) -> Option<String> {
        self.autosave.last_error()
    }

    /// Forgets the persisted text and window (tests start from the sample).
    pub fn forget_persisted(&mut self) {
        self.fallback = SAMPLE_TEXT.to_string();
        self.file = None;
        self.first_sentence = 0;
    }

    /// Shows the persisted text (or the sample).
    pub fn show_fallback(&mut self, mode: InputMode) {
        self.document = Some(Document::new(self.fallback.clone(), mode));
    }

    /// Shows `text`, from no file, from its first sentence (the text a
    /// capture file was taken of).
    pub fn show_text(&mut self, text: String, mode: InputMode) {
        self.document = Some(Document::new(text, mode));
        self.file = None;
        self.first_sentence = 0;
        self.window_history.clear();
    }

    /// Starts reading `path` off the UI thread.
    pub fn open_file(&mut self, path: &Path, mode: InputMode, wake: &crate::worker::Waker) {
        self.start_job(TextSource::File(path.to_path_buf()), path, mode, wake);
    }

    /// Starts reading the autosave file off the UI thread.
    pub fn restore_autosave(
        &mut self,
        path: PathBuf,
        mode: InputMode,
        wake: &crate::worker::Waker,
    ) {
        self.start_job(TextSource::Autosave, &path, mode, wake);
    }

    fn start_job(
        &mut self,
        source: TextSource,
        path: &Path,
        mode: InputMode,
        wake: &crate::worker::Waker,
    ) {
        let path = path.to_path_buf();
        let result = spawn_job("headscope-open", wake.clone(), move || {
            let file = read_text_file(&path).map_err(|e| e.to_string())?;
            Ok(PreparedText {
                document: Document::new(file.text, mode),
                warning: file.warning,
            })
        });
        self.job = Some(TextJob { source, result });
    }

    /// Splits the text again after the input mode changed: at once for a
    /// small text, on a thread for a large one.
    pub fn resplit(&mut self, mode: InputMode, wake: &crate::worker::Waker) {
        let Some(document) = self.document.take() else {
            return;
        };
        if document.edits_whole_text() {
            self.document = Some(document.with_mode(mode));
            return;
        }
        let result = spawn_job("headscope-split", wake.clone(), move || {
            Ok(PreparedText {
                document: document.with_mode(mode),
                warning: None,
            })
        });
        self.job = Some(TextJob {
            source: TextSource::Resplit,
            result,
        });
    }

    /// Keeps the window inside the text after an edit, and schedules the
    /// autosave.
    pub fn edited(&mut self, ctx: &egui::Context) {
        self.autosave.edited(ctx);
        if let Some(document) = &self.document {
            let count = document.sentence_count();
            if count > 0 && self.first_sentence >= count {
                self.first_sentence = count - 1;
                self.window_history.retain(|&first| first < count);
            }
        }
    }

    /// Writes the text to the autosave file once the pause after the last
    /// edit is over.
    pub fn autosave_if_due(&mut self, ctx: &egui::Context) {
        if self.autosave.is_due(ctx) {
            self.autosave_now();
        }
    }

    /// Writes an edit younger than the autosave pause now (at exit).
    pub fn autosave_pending_now(&mut self) {
        if self.autosave.is_pending() {
            self.autosave_now();
        }
    }

    fn autosave_now(&mut self) {
        if let Some(document) = &self.document {
            self.autosave.save(document.text());
        }
        self.autosave.cancel();
    }

    /// The text and first sentence of the request for the current window,
    /// with the window kept within the text.
    pub fn request(&mut self) -> Option<(String, usize)> {
        let document = self.document.as_ref()?;
        self.first_sentence = self
            .first_sentence
            .min(document.sentence_count().saturating_sub(1));
        Some(document.request(self.first_sentence))
    }

    /// The window the shown result covers, in sentences of the text it was
    /// asked of.
    pub fn window_info(&self, shown: Option<&Shown>) -> Option<WindowInfo> {
        let shown = shown?;
        self.document.as_ref()?;
        Some(WindowInfo {
            first: shown.first_sentence,
            analysed: shown.output.input.sentences_analysed,
            total: shown.total_sentences,
            limit: shown.output.input.limit,
        })
    }

    pub fn move_window(&mut self, step: WindowMove, info: Option<WindowInfo>) {
        match step {
            WindowMove::Next => {
                if let Some(info) = info.filter(|w| w.first == self.first_sentence && w.has_next())
                {
                    self.window_history.push(self.first_sentence);
                    self.first_sentence = info.first + info.analysed;
                }
            }
            WindowMove::Previous => {
                let fallback = info.map_or(1, |w| w.analysed.max(1));
                self.first_sentence = self
                    .window_history
                    .pop()
                    .filter(|&first| first < self.first_sentence)
                    .unwrap_or_else(|| self.first_sentence.saturating_sub(fallback));
            }
        }
    }

    /// What the editor says while the text is being prepared.
    fn busy_label(&self) -> Option<String> {
        Some(match &self.job.as_ref()?.source {
            TextSource::File(path) => format!("Opening {}…", file_name(path)),
            TextSource::Autosave => "Restoring the last text…".to_string(),
            TextSource::Resplit => "Splitting the text into sentences…".to_string(),
        })
    }

    /// Where the text comes from, for the editor's heading.
    fn source_label(&self) -> String {
        match (&self.file, self.autosave.is_enabled()) {
            (Some(path), _) => file_name(path),
            (None, true) => "untitled, autosaved".to_string(),
            (None, false) => "untitled".to_string(),
        }
    }

    /// The name of the text for the window title.
    pub fn title_name(&self) -> String {
        match (&self.job, &self.file) {
            (
                Some(TextJob {
                    source: TextSource::File(path),
                    ..
                }),
                _,
            ) => format!("opening {}…", file_name(path)),
            (_, Some(path)) => match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => format!("{} ({})", file_name(path), parent.display()),
                None => file_name(path),
            },
            (_, None) => "untitled text".into(),
        }
    }
}

impl TextState {
    /// Puts a text read (or split) off the UI thread on screen once it is
    /// there, and says what became of it; `mode` splits the fallback text
    /// when the autosave cannot be read.
    pub fn poll_job(&mut self, ctx: &egui::Context, mode: InputMode) -> Option<Prepared> {
        let job = self.job.as_ref()?;
        let outcome = match job.result.try_recv() {
            Ok(outcome) => outcome,
            Err(crossbeam_channel::TryRecvError::Empty) => return None,
            Err(crossbeam_channel::TryRecvError::Disconnected) => {
                Err("reading the text stopped unexpectedly".to_string())
            }
        };
        let source = job.source.clone();
        self.job = None;
        Some(match (source, outcome) {
            (TextSource::File(path), Ok(prepared)) => {
                self.document = Some(prepared.document);
                self.file = Some(path);
                self.first_sentence = 0;
                self.window_history.clear();
                self.edited(ctx);
                Prepared::Opened {
                    warning: prepared.warning,
                }
            }
            (TextSource::File(_), Err(message)) => {
                Prepared::Failed(format!("{message}. The text in the editor is unchanged."))
            }
            (TextSource::Autosave | TextSource::Resplit, Ok(prepared)) => {
                self.document = Some(prepared.document);
                self.edited(ctx);
                self.autosave.cancel();
                Prepared::Replaced
            }
            (TextSource::Autosave, Err(_)) => {
                // An unreadable or empty autosave: fall back quietly.
                let text = std::mem::take(&mut self.fallback);
                self.document = Some(Document::new(text, mode));
                Prepared::FellBack
            }
            (TextSource::Resplit, Err(message)) => Prepared::Failed(message),
        })
    }

    /// The editor, with the window's buttons and where the text comes from.
    pub fn editor_ui(&mut self, ui: &mut egui::Ui, window: Option<WindowInfo>) -> EditorOutput {
        let busy = self.busy_label();
        let source = self.source_label();
        editor::editor_ui(
            ui,
            self.document.as_mut(),
            self.first_sentence,
            window,
            busy.as_deref(),
            &source,
        )
    }
}

/// The file name of `path`, or the whole path when it has none.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
