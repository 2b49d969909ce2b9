//! The text being analysed: the [`Document`], the file it came from, the
//! sentence window on screen, and reading files (or splitting a large text
//! again) on a short-lived thread so the UI never waits on the disk.
//!
//! The text's autosave ([`Autosave`]) lives here too: every edit is written
//! to the autosave file shortly after it is made. The editor ([`editor`])
//! shows the text, or the chunk of a large one around the window
//! ([`document`]); [`find`] searches the whole of it.

pub mod autosave;
pub mod document;
pub mod editor;
pub mod find;

use crate::app::jobs::spawn_job;
use crate::app::runs::Shown;
use crate::input::{InputMode, WindowStart};
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
    /// Where the window sent to the model starts: a sentence, and the
    /// piece of it when it is longer than a window and cut into pieces.
    window: WindowStart,
    /// The window starts "Next window" and the outline's jumps came from,
    /// for "Previous window".
    window_history: Vec<WindowStart>,
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
            window: WindowStart::from(first_sentence),
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
        self.window.sentence
    }

    /// Where the window sent to the model starts.
    pub fn window_start(&self) -> WindowStart {
        self.window
    }

    /// Starts the window at `start`, forgetting where it came from.
    pub fn set_window_start(&mut self, start: WindowStart) {
        self.window = start;
        self.window_history.clear();
    }

    /// Goes back to the window of the result on screen after the run for
    /// another was cancelled, so the editor's window and the figures agree;
    /// the jump that asked for it is forgotten.
    pub fn return_to_shown(&mut self, shown: &WindowStart) {
        if self.window == *shown {
            return;
        }
        if self.window_history.last() == Some(shown) {
            self.window_history.pop();
        }
        self.window = *shown;
    }

    /// Starts the window at `start`; "Previous window" comes back.
    pub fn jump_to(&mut self, start: WindowStart) {
        if start != self.window {
            self.window_history.push(self.window);
            self.window = start;
        }
    }

    /// Whether a file is being read or the text split.
    /// Replaces the whole text, as an edit would (the file stays), where
    /// the editor holds the whole of it; false otherwise (a text too large
    /// for the editor is shown a chunk at a time).
    pub fn set_whole_text(&mut self, text: String) -> bool {
        match self.document.as_mut() {
            Some(document) if document.edits_whole_text() => {
                *document.whole_text_mut() = text;
                document.whole_text_edited();
                true
            }
            _ => false,
        }
    }

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
        self.set_window_start(WindowStart::default());
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
        self.window = WindowStart::default();
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
            if count > 0 && self.window.sentence >= count {
                self.window = WindowStart::from(count - 1);
                self.window_history.retain(|first| first.sentence < count);
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

    /// The text of the request for the current window and where the
    /// window starts in it, with the window kept within the text.
    pub fn request(&mut self) -> Option<(String, WindowStart)> {
        let document = self.document.as_ref()?;
        let last = document.sentence_count().saturating_sub(1);
        if self.window.sentence > last {
            self.window = WindowStart::from(last);
        }
        let (text, sentence) = document.request(self.window.sentence);
        Some((
            text,
            WindowStart {
                sentence,
                piece: self.window.piece,
            },
        ))
    }

    /// Takes the piece the shown result's window really starts at when it
    /// was asked for the current window: a piece past a sentence's last
    /// (an edit shortened the sentence since) is analysed from its last,
    /// and "Next window" must go on from there.
    pub fn settle_window(&mut self, shown: Option<&Shown>) {
        let Some(info) = self.window_info(shown) else {
            return;
        };
        if shown.is_some_and(|s| s.first == self.window)
            && info.first.sentence == self.window.sentence
        {
            self.window.piece = info.first.piece;
        }
    }

    /// The window the shown result covers, in sentences of the text it was
    /// asked of.
    pub fn window_info(&self, shown: Option<&Shown>) -> Option<WindowInfo> {
        let shown = shown?;
        self.document.as_ref()?;
        let input = &shown.output.input;
        // The input counts sentences from the start of the text sent, which
        // for a large document begins at the window.
        let offset = shown.sentence_offset();
        let shift = |start: WindowStart| WindowStart {
            sentence: start.sentence + offset,
            ..start
        };
        Some(WindowInfo {
            first: shift(input.start()),
            last: input.last_sentence() + offset,
            next: input.next.map(shift),
            total: shown.total_sentences,
            limit: input.limit,
            split_notes: input
                .sentences_split
                .iter()
                .map(|split| {
                    let mut split = split.clone();
                    split.sentence += offset;
                    split.note(&input.limit)
                })
                .collect(),
        })
    }

    pub fn move_window(&mut self, step: WindowMove, info: Option<WindowInfo>) {
        let current = self.window;
        match step {
            WindowMove::Next => {
                if let Some(next) = info.filter(|w| w.first == current).and_then(|w| w.next) {
                    self.jump_to(next);
                }
            }
            WindowMove::Previous => {
                self.window = self
                    .window_history
                    .pop()
                    .filter(|&first| first < current)
                    .unwrap_or_else(|| {
                        let fallback = info
                            .map_or(1, |w| (w.last + 1).saturating_sub(w.first.sentence).max(1));
                        WindowStart::from(current.sentence.saturating_sub(fallback))
                    });
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
                self.set_window_start(WindowStart::default());
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
            self.window,
            window.as_ref(),
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
