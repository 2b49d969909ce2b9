//! The outline of a long document, on the right of the views: every window
//! the analyses would run on, with its sentences (the one analysed
//! highlighted), a jump to any window or sentence, and find (Ctrl+F)
//! across the whole text with every match listed and a jump to its window.
//!
//! Nothing here blocks a frame: the windows are cut by the worker's
//! `headscope-outline` thread ([`AnalysisWorker::outline`]), which
//! tokenizes the whole text once, a little after the text last changed;
//! a search runs on a short-lived thread ([`spawn_job`]); and the lists
//! draw only their visible rows, so a 10 MB book scrolls like a page.

use crate::app::jobs::spawn_job;
use crate::app::text::document::Document;
use crate::app::text::find::{context, find_all, preview, FindMatch};
use crate::app::widgets::busy;
use crate::input::{WindowBounds, WindowStart};
use crate::pipeline::InputOptions;
use crate::worker::{AnalysisWorker, OutlineResult, Waker};
use crossbeam_channel::{Receiver, TryRecvError};
use std::time::Duration;

/// The find field's label (screen readers, UI tests).
pub const FIND_LABEL: &str = "Find in the document";
/// The label of the sentence number to jump to.
pub const GO_TO_LABEL: &str = "Go to sentence";
/// The View menu's entry that opens the panel.
pub const MENU_LABEL: &str = "Outline and find";
/// How long the text rests before the outline is cut again.
const OUTLINE_PAUSE: f64 = 0.6;
/// How long a query rests before it is searched.
const FIND_PAUSE: f64 = 0.15;

/// What an outline is computed from: the text as it stands, its input
/// mode and limits, and the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OutlineKey {
    /// The document's version ([`Document::version`]).
    pub version: u64,
    /// The input options of a window from the start of the text.
    pub input: InputOptions,
    /// The model whose tokenizer cuts the windows.
    pub model: String,
}

/// One row of the outline: a window's heading, or a sentence in it.
#[derive(Debug, Clone, Copy)]
enum Row {
    Window(usize),
    Sentence { window: usize, sentence: usize },
}

/// The windows of the text, and the outline's rows as last laid out.
struct Outline {
    key: OutlineKey,
    windows: Vec<WindowBounds>,
    /// The rows, and for which expanded window (or all) they were laid out.
    rows: Vec<Row>,
    rows_for: Option<(Option<usize>, bool)>,
}

impl Outline {
    fn new(key: OutlineKey, windows: Vec<WindowBounds>) -> Self {
        Self {
            key,
            windows,
            rows: Vec::new(),
            rows_for: None,
        }
    }

    /// The rows: every window's heading, and the sentences of the window
    /// `expanded` (of every window with `all`). A sentence cut into pieces
    /// is listed in every window that holds one of them.
    fn lay_out(&mut self, expanded: Option<usize>, all: bool) {
        if self.rows_for == Some((expanded, all)) {
            return;
        }
        self.rows.clear();
        for (k, window) in self.windows.iter().enumerate() {
            self.rows.push(Row::Window(k));
            if all || expanded == Some(k) {
                let sentences = window.start.sentence..=window.last_sentence;
                self.rows.extend(sentences.map(|sentence| Row::Sentence {
                    window: k,
                    sentence,
                }));
            }
        }
        self.rows_for = Some((expanded, all));
    }

    /// The window holding byte `at` of the text.
    fn window_at_byte(&self, at: usize) -> usize {
        self.windows
            .partition_point(|w| w.start_byte <= at)
            .saturating_sub(1)
    }

    /// The first window holding sentence `sentence`.
    fn window_of_sentence(&self, sentence: usize) -> usize {
        self.windows
            .partition_point(|w| w.last_sentence < sentence)
            .min(self.windows.len().saturating_sub(1))
    }
}

/// What was searched for, and in which text.
#[derive(Debug, Clone, PartialEq)]
struct FindKey {
    query: String,
    version: u64,
}

/// The outline panel's state (not persisted).
#[derive(Default)]
pub struct OutlinePanel {
    /// Whether the panel is shown (View → Outline and find, Ctrl+F).
    pub open: bool,
    outline: Option<Outline>,
    job: Option<(OutlineKey, Receiver<OutlineResult>)>,
    /// Why the last outline failed.
    error: Option<String>,
    /// When the text (or a setting) last differed from the outline's.
    changed_at: Option<(OutlineKey, f64)>,
    query: String,
    query_changed_at: f64,
    matches: Option<(FindKey, Vec<FindMatch>)>,
    search: Option<(FindKey, Receiver<Vec<FindMatch>>)>,
    /// Give the find field the keyboard on the next frame.
    focus_find: bool,
    /// The sentence typed in "Go to sentence".
    go_to: usize,
    /// The window the outline last scrolled to.
    scrolled_to: Option<usize>,
    /// List the sentences of every window, not only the analysed one's.
    every_sentence: bool,
}

/// What the user asked of the panel.
enum Jump {
    Window(usize),
    Sentence(usize),
    Match(usize),
}

impl OutlinePanel {
    /// Opens the panel with the keyboard in the find field (Ctrl+F).
    pub fn open_find(&mut self) {
        self.open = true;
        self.focus_find = true;
    }

    /// The matches of the query in the text as it stands, once searched.
    pub fn matches(&self) -> Option<&[FindMatch]> {
        self.matches.as_ref().map(|(_, m)| m.as_slice())
    }

    /// The windows of the text, once cut.
    pub fn windows(&self) -> Option<&[WindowBounds]> {
        self.outline.as_ref().map(|o| o.windows.as_slice())
    }

    /// Starts, takes or drops the outline job and the search for the text
    /// as it stands (`key` is `None` while no model is loaded). Call it
    /// every frame while the panel is open.
    pub fn update(
        &mut self,
        ctx: &egui::Context,
        worker: &AnalysisWorker,
        wake: &Waker,
        document: Option<&Document>,
        key: Option<OutlineKey>,
    ) {
        let now = ctx.input(|i| i.time);
        self.take_outline();
        let (Some(document), Some(key)) = (document, key) else {
            return;
        };
        if self.error.is_some() && self.changed_at.as_ref().is_none_or(|(k, _)| *k != key) {
            // A new text or setting deserves a new try.
            self.error = None;
        }
        let current = self.outline.as_ref().is_some_and(|o| o.key == key);
        let running = self.job.as_ref().is_some_and(|(k, _)| *k == key);
        if !current && !running && self.error.is_none() {
            // Cut once the text has rested, so typing does not tokenize a
            // book at every key.
            let since = match &self.changed_at {
                Some((k, at)) if *k == key => *at,
                _ => {
                    self.changed_at = Some((key.clone(), now));
                    now
                }
            };
            let wait = since + OUTLINE_PAUSE - now;
            if wait <= 0.0 || self.outline.is_none() {
                let receiver = worker.outline(document.text().to_string(), key.input);
                self.job = Some((key, receiver));
            } else {
                ctx.request_repaint_after(Duration::from_secs_f64(wait));
            }
        }
        self.update_search(ctx, wake, document, now);
    }

    /// Takes the outline job's answer once it is there.
    fn take_outline(&mut self) {
        let Some((key, receiver)) = &self.job else {
            return;
        };
        match receiver.try_recv() {
            Ok(Ok(windows)) => {
                self.outline = Some(Outline::new(key.clone(), windows));
                self.error = None;
                self.scrolled_to = None;
                self.job = None;
            }
            Ok(Err(error)) => {
                self.error = Some(error.to_string());
                self.job = None;
            }
            Err(TryRecvError::Disconnected) => {
                self.error = Some("cutting the text into windows stopped unexpectedly".into());
                self.job = None;
            }
            Err(TryRecvError::Empty) => {}
        }
    }

    fn update_search(&mut self, ctx: &egui::Context, wake: &Waker, document: &Document, now: f64) {
        if let Some((key, receiver)) = &self.search {
            match receiver.try_recv() {
                Ok(found) => {
                    self.matches = Some((key.clone(), found));
                    self.search = None;
                }
                Err(TryRecvError::Disconnected) => self.search = None,
                Err(TryRecvError::Empty) => {}
            }
        }
        let key = FindKey {
            query: self.query.clone(),
            version: document.version(),
        };
        if key.query.is_empty() {
            self.matches = None;
            self.search = None;
            return;
        }
        let done = self.matches.as_ref().is_some_and(|(k, _)| *k == key);
        let running = self.search.as_ref().is_some_and(|(k, _)| *k == key);
        if done || running {
            return;
        }
        let wait = self.query_changed_at + FIND_PAUSE - now;
        if wait > 0.0 {
            ctx.request_repaint_after(Duration::from_secs_f64(wait));
            return;
        }
        let text = document.text().to_string();
        let spans = document.sentence_spans().to_vec();
        let query = key.query.clone();
        let receiver = spawn_job("headscope-find", wake.clone(), move || {
            find_all(&text, &spans, &query)
        });
        self.search = Some((key, receiver));
    }

    /// The panel: find, then the windows and their sentences, with the
    /// window starting at `analysed` highlighted. Returns the start of the
    /// window the user asked to analyse.
    pub fn ui(
        &mut self,
        ui: &mut egui::Ui,
        document: Option<&Document>,
        analysed: WindowStart,
    ) -> Option<WindowStart> {
        ui.horizontal(|ui| {
            ui.strong("Outline");
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if ui
                    .small_button("×")
                    .on_hover_text("Close the outline")
                    .clicked()
                {
                    self.open = false;
                }
            });
        });
        let Some(document) = document else {
            ui.weak("No text yet.");
            return None;
        };
        let mut jump = self.find_ui(ui, document);
        ui.separator();
        let spans = document.sentence_spans();
        ui.horizontal(|ui| {
            let label = ui.label(GO_TO_LABEL);
            ui.add(
                egui::DragValue::new(&mut self.go_to)
                    .range(1..=spans.len().max(1))
                    .speed(1.0),
            )
            .labelled_by(label.id);
            if ui
                .button("Go")
                .on_hover_text("Analyse the window holding this sentence")
                .clicked()
            {
                jump = Some(Jump::Sentence(self.go_to.max(1) - 1));
            }
        });
        if let Some(to) = self.windows_ui(ui, document, analysed) {
            jump = Some(to);
        }
        self.jump_target(jump?, spans.len())
    }

    /// The find field and the list of matches.
    fn find_ui(&mut self, ui: &mut egui::Ui, document: &Document) -> Option<Jump> {
        let label = ui.label(FIND_LABEL);
        let field = ui
            .add(
                egui::TextEdit::singleline(&mut self.query)
                    .hint_text("Find (Ctrl+F)")
                    .desired_width(f32::INFINITY),
            )
            .labelled_by(label.id);
        if self.focus_find {
            field.request_focus();
            self.focus_find = false;
        }
        if field.changed() {
            self.query_changed_at = ui.input(|i| i.time);
        }
        if self.query.is_empty() {
            return None;
        }
        let Some((key, found)) = &self.matches else {
            ui.horizontal(|ui| {
                busy::spinner_of_side(ui, 12.0);
                ui.label("Searching…");
            });
            return None;
        };
        let stale = key.query != self.query || key.version != document.version();
        ui.horizontal(|ui| {
            ui.label(match found.len() {
                0 => "no match".to_string(),
                1 => "1 match".to_string(),
                n => format!("{n} matches"),
            });
            if stale || self.search.is_some() {
                busy::spinner_of_side(ui, 12.0);
            }
        });
        let text = document.text();
        let mut jump = None;
        egui::ScrollArea::vertical()
            .id_salt("find matches")
            .max_height(ui.available_height() * 0.35)
            .auto_shrink([false, true])
            .show_rows(ui, row_height(ui), found.len(), |ui, rows| {
                ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Truncate);
                for index in rows {
                    let found = &found[index];
                    let row = format!(
                        "s. {} · {}",
                        found.sentence + 1,
                        context(text, &found.bytes)
                    );
                    if ui
                        .selectable_label(false, row)
                        .on_hover_text("Analyse the window holding this match")
                        .clicked()
                    {
                        jump = Some(Jump::Match(index));
                    }
                }
            });
        jump
    }

    /// The windows, each with its sentences when it is the analysed one
    /// (or when every window's are asked for).
    fn windows_ui(
        &mut self,
        ui: &mut egui::Ui,
        document: &Document,
        analysed: WindowStart,
    ) -> Option<Jump> {
        let outline = match (&mut self.outline, &self.error) {
            (_, Some(error)) => {
                ui.colored_label(ui.visuals().error_fg_color, error);
                return None;
            }
            (None, None) => {
                ui.horizontal(|ui| {
                    busy::spinner_of_side(ui, 12.0);
                    ui.label("Cutting the text into windows…");
                });
                return None;
            }
            (Some(outline), None) => outline,
        };
        let (text, spans) = (document.text(), document.sentence_spans());
        let current = outline.key.version == document.version();
        ui.horizontal(|ui| {
            let count = outline.windows.len();
            ui.label(format!(
                "{count} window{} · {} sentences",
                if count == 1 { "" } else { "s" },
                spans.len()
            ));
            if !current || self.job.is_some() {
                busy::spinner_of_side(ui, 12.0).on_hover_text("The text changed: cutting it again");
            }
        });
        ui.checkbox(&mut self.every_sentence, "Every window's sentences");
        let highlighted = outline.windows.iter().position(|w| w.start == analysed);
        let row_height = row_height(ui);
        let mut area = egui::ScrollArea::vertical()
            .id_salt("outline rows")
            .auto_shrink([false, false]);
        outline.lay_out(highlighted, self.every_sentence);
        if let Some(k) = highlighted.filter(|&k| self.scrolled_to != Some(k)) {
            // The window before it stays in sight above it.
            let row = outline
                .rows
                .iter()
                .position(|r| matches!(r, Row::Window(w) if *w + 1 >= k))
                .unwrap_or(0);
            let spacing = ui.spacing().item_spacing.y;
            area = area.vertical_scroll_offset(row as f32 * (row_height + spacing));
            self.scrolled_to = Some(k);
        }
        let (rows, windows) = (&outline.rows, &outline.windows);
        let mut jump = None;
        area.show_rows(ui, row_height, rows.len(), |ui, range| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Truncate);
            for row in &rows[range] {
                match *row {
                    Row::Window(k) => {
                        let w = &windows[k];
                        let first = spans
                            .get(w.start.sentence)
                            .map_or(String::new(), |&span| preview(text, span));
                        let heading = format!("Window {} · {} · {first}", k + 1, sentences_of(w));
                        if ui
                            .selectable_label(highlighted == Some(k), heading)
                            .on_hover_text("Analyse this window")
                            .clicked()
                        {
                            jump = Some(Jump::Window(k));
                        }
                    }
                    Row::Sentence { window, sentence } => {
                        let line = spans.get(sentence).map_or(String::new(), |&span| {
                            format!("      {}. {}", sentence + 1, preview(text, span))
                        });
                        if ui.selectable_label(false, line).clicked() {
                            jump = Some(Jump::Window(window));
                        }
                    }
                }
            }
        });
        jump
    }

    /// Where the window `jump` asks for starts, in a text of `sentences`
    /// sentences: from the outline once it is cut, else at the sentence.
    fn jump_target(&self, jump: Jump, sentences: usize) -> Option<WindowStart> {
        let outline = self.outline.as_ref();
        match jump {
            Jump::Window(k) => outline.map(|o| o.windows[k].start),
            Jump::Sentence(sentence) => Some(match outline {
                Some(o) => o.windows[o.window_of_sentence(sentence)].start,
                None => WindowStart::from(sentence.min(sentences.saturating_sub(1))),
            }),
            Jump::Match(index) => {
                let found = self.matches()?.get(index)?;
                Some(match outline {
                    Some(o) => o.windows[o.window_at_byte(found.bytes.start)].start,
                    None => WindowStart::from(found.sentence),
                })
            }
        }
    }
}

/// "sentence 4", "sentences 2 (from piece 2)–9", "sentence 2 (to piece 1)":
/// what a window holds, counting from 1.
fn sentences_of(window: &WindowBounds) -> String {
    let (first, last) = (window.start.sentence + 1, window.last_sentence + 1);
    let from = match window.start.piece {
        0 => String::new(),
        p => format!(" (from piece {})", p + 1),
    };
    // Ending inside a sentence: the next window starts at its next piece.
    let to = match window.next {
        Some(next) if next.piece > 0 => format!(" (to piece {})", next.piece),
        _ => String::new(),
    };
    if first == last {
        format!("sentence {first}{from}{to}")
    } else {
        format!("sentences {first}{from}–{last}{to}")
    }
}

/// The height of one row of a list: a selectable label's.
fn row_height(ui: &egui::Ui) -> f32 {
    let text = ui.text_style_height(&egui::TextStyle::Body);
    (text + 2.0 * ui.spacing().button_padding.y).max(ui.spacing().interact_size.y)
}
