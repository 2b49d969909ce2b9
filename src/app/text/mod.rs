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

/// The mark before the file's name in the title (and after it in the
/// editor's heading) while the text has edits its file lacks.
pub const MODIFIED_MARK: &str = "•";

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
    /// message on screen), and where the unsaved edits of the text it
    /// replaced were kept.
    Opened {
        warning: Option<String>,
        kept_edits: Option<String>,
    },
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
    /// A hash of the text as its file holds it (opened from or saved to).
    file_hash: Option<u64>,
    /// The text differs from its file's.
    modified: bool,
    /// The capture file (docs/CAPTURE.md) whose text is shown, read-only.
    capture: Option<PathBuf>,
    /// Where edits a file never got are kept when another file is opened.
    unsaved_folder: PathBuf,
    /// What became of the unsaved edits of the text the file being opened
    /// replaces: where they were kept, or why they could not be.
    kept_edits: Option<String>,
    /// The heatmap cell whose tokens the editor marks (it scrolls to them
    /// when the cell changes), and where the marks were drawn.
    followed: Option<(usize, usize)>,
    marked: Option<egui::Rect>,
}

/// A hash of `text`, to tell whether it still is its file's.
fn text_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
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
            autosave: Autosave::new(autosave_path.clone()),
            file_hash: None,
            modified: false,
            capture: None,
            unsaved_folder: autosave_path
                .as_deref()
                .and_then(Path::parent)
                .map_or_else(|| std::env::temp_dir().join("headscope"), Path::to_path_buf)
                .join("unsaved"),
            kept_edits: None,
            followed: None,
            marked: None,
        }
    }

    /// Whether the text differs from the file it was opened from or saved
    /// to (a text of no file never does: the autosave keeps it).
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// The text is its file's as it is now (just opened or saved).
    fn matches_file(&mut self) {
        self.file_hash = self.document.as_ref().map(|d| text_hash(d.text()));
        self.modified = false;
    }

    /// Whether the text shown is a capture's, which cannot be edited (the
    /// capture holds that text's run only).
    pub fn is_capture(&self) -> bool {
        self.capture.is_some()
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

    /// The text was saved to `path`, which becomes its file.
    pub fn set_file(&mut self, path: &Path) {
        self.file = Some(path.to_path_buf());
        self.matches_file();
    }

    /// The text is no longer its file's (the whole of it was replaced).
    pub fn forget_file(&mut self) {
        self.file = None;
        self.file_hash = None;
        self.modified = false;
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
        self.forget_file();
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
        self.forget_file();
        self.capture = None;
        self.window = WindowStart::default();
        self.window_history.clear();
    }

    /// Shows the text the capture file `path` was taken of, read-only,
    /// named after the capture.
    pub fn show_capture(&mut self, text: String, mode: InputMode, path: &Path) {
        self.show_text(text, mode);
        self.capture = Some(path.to_path_buf());
    }

    /// The model in use is no capture: the text shown can be edited again
    /// (as a text of no file).
    pub fn end_capture(&mut self) {
        self.capture = None;
    }

    /// Starts reading `path` off the UI thread. Edits the text's file
    /// lacks are first kept in a file of their own (see
    /// [`Prepared::Opened`]), so that opening another file never loses
    /// them.
    pub fn open_file(&mut self, path: &Path, mode: InputMode, wake: &crate::worker::Waker) {
        self.kept_edits = self.keep_unsaved_edits();
        self.start_job(TextSource::File(path.to_path_buf()), path, mode, wake);
    }

    /// Writes the text, when it has edits its file lacks, to a file in
    /// the unsaved folder; says where (or why not).
    fn keep_unsaved_edits(&self) -> Option<String> {
        let (true, Some(file), Some(document)) = (self.modified, &self.file, &self.document) else {
            return None;
        };
        let stem = file
            .file_stem()
            .map_or_else(|| "text".into(), |s| s.to_string_lossy().into_owned());
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let copy = self.unsaved_folder.join(format!("{stem}-{seconds}.txt"));
        let written = std::fs::create_dir_all(&self.unsaved_folder)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                crate::export::save_text(document.text(), &copy).map_err(|e| e.to_string())
            });
        Some(match written {
            Ok(()) => format!(
                "The unsaved edits of {} are kept in {}.",
                file_name(file),
                copy.display()
            ),
            Err(error) => format!(
                "The unsaved edits of {} could not be kept: {error}",
                file_name(file)
            ),
        })
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
        if let (Some(document), Some(hash)) = (&self.document, self.file_hash) {
            self.modified = text_hash(document.text()) != hash;
        }
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

    /// The text of the request for the current window of at most `tokens`
    /// tokens and where the window starts in it, with the window kept
    /// within the text.
    pub fn request(&mut self, tokens: usize) -> Option<(String, WindowStart)> {
        let document = self.document.as_ref()?;
        let last = document.sentence_count().saturating_sub(1);
        if self.window.sentence > last {
            self.window = WindowStart::from(last);
        }
        let (text, sentence) = document.request(self.window.sentence, tokens);
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

    /// Where the text comes from, for the editor's heading: with
    /// [`MODIFIED_MARK`] while it differs from its file.
    fn source_label(&self) -> String {
        if let Some(capture) = &self.capture {
            return format!("{} (a capture: read-only)", file_name(capture));
        }
        match (&self.file, self.autosave.is_enabled()) {
            (Some(path), _) if self.modified => {
                format!(
                    "{} {MODIFIED_MARK} unsaved edits (Ctrl+S saves)",
                    file_name(path)
                )
            }
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
            _ if self.capture.is_some() => self
                .capture
                .as_deref()
                .map_or_else(String::new, |c| format!("{} (capture)", file_name(c))),
            (_, Some(path)) => {
                let mark = if self.modified {
                    format!("{MODIFIED_MARK} ")
                } else {
                    String::new()
                };
                match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    Some(parent) => format!("{mark}{} ({})", file_name(path), parent.display()),
                    None => format!("{mark}{}", file_name(path)),
                }
            }
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
                self.capture = None;
                self.matches_file();
                self.set_window_start(WindowStart::default());
                self.edited(ctx);
                Prepared::Opened {
                    warning: prepared.warning,
                    kept_edits: self.kept_edits.take(),
                }
            }
            (TextSource::File(_), Err(message)) => {
                self.kept_edits = None;
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

    /// The editor, with the window's buttons and where the text comes from
    /// (a capture's text read-only).
    pub fn editor_ui(
        &mut self,
        ui: &mut egui::Ui,
        window: Option<WindowInfo>,
        follow: &editor::TextFollow,
    ) -> EditorOutput {
        let busy = self.busy_label();
        let source = self.source_label();
        let output = editor::editor_ui(
            ui,
            self.document.as_mut(),
            self.window,
            window.as_ref(),
            editor::EditorFrame {
                busy: busy.as_deref(),
                source: &source,
                read_only: self.capture.is_some(),
                follow,
            },
        );
        self.marked = output.marked;
        output
    }

    /// The marks of the tokens the editor follows, for `cell` (a heatmap
    /// cell's row and column tokens) of `shown`: their byte ranges where
    /// `shown` is the window on screen, and a scroll when the cell changed.
    pub fn follow(
        &mut self,
        cell: Option<(usize, usize)>,
        shown: Option<&Shown>,
    ) -> editor::TextFollow {
        let scroll = cell.is_some() && cell != self.followed;
        self.followed = cell;
        let (Some((row, column)), Some(shown)) = (cell, shown) else {
            return editor::TextFollow::default();
        };
        if shown.first != self.window {
            return editor::TextFollow::default();
        }
        let offsets = &shown.output.input.tokens.offsets;
        let mut ranges: Vec<std::ops::Range<usize>> = [row, column]
            .iter()
            .filter_map(|&k| offsets.get(k).copied().flatten())
            .map(|(start, end)| start..end)
            .collect();
        ranges.dedup();
        editor::TextFollow { ranges, scroll }
    }

    /// Where the editor marked the followed tokens last frame (screen).
    pub fn marked(&self) -> Option<egui::Rect> {
        self.marked
    }
}

/// The file name of `path`, or the whole path when it has none.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
