//! The text being analysed, its sentences, and keeping it safe on disk.
//!
//! A [`Document`] holds the whole text and the byte spans of its sentences
//! (split the same way as the model input, ANALYSIS.md §1). Texts up to
//! [`WHOLE_TEXT_EDIT_LIMIT`] are edited whole. A larger text (a 10 MB book)
//! never goes into the text editor: only a [`Chunk`] of whole sentences
//! around the current window is edited, and edits are spliced back with only
//! that chunk's sentences split again. The model request is likewise a
//! bounded slice starting at the window's first sentence, so a big file
//! costs the worker no more than a small one.
//!
//! Reading and splitting a file happens on a short-lived thread
//! ([`crate::app::jobs::spawn_job`]); keeping the text on disk is
//! [`super::autosave`]'s job.

use crate::input::{split_sentences, InputMode};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Texts up to this size are edited whole; larger ones chunk by chunk.
pub const WHOLE_TEXT_EDIT_LIMIT: usize = 32 * 1024;
/// The most text the editor holds for a large document (whole sentences,
/// at least one).
const CHUNK_BYTES: usize = 8 * 1024;
/// A single sentence longer than this is shown read-only, cut short.
const MAX_EDITABLE_CHUNK: usize = 256 * 1024;
/// The least text sent to the model for one window of a large document
/// (512 tokens of at most 100 characters each, and more)...
const REQUEST_BYTES: usize = 64 * 1024;
/// ... and the bytes per token of the window's limit it grows by: a 32k
/// context needs some 150 KB of English, and no tokenizer makes tokens of
/// 16 bytes on average, so the window is never cut short by the slice.
pub const REQUEST_BYTES_PER_TOKEN: usize = 16;

/// The part of a large document in the editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First sentence in the chunk.
    pub first_sentence: usize,
    /// One past the last sentence in the chunk.
    pub end_sentence: usize,
    /// Its bytes in the document.
    pub range: Range<usize>,
    /// What the editor shows and edits.
    pub text: String,
    /// False when a single sentence is too long to edit; `text` is then a
    /// read-only preview.
    pub editable: bool,
}

/// The text and its sentence spans.
#[derive(Debug, Clone)]
pub struct Document {
    text: String,
    spans: Vec<(usize, usize)>,
    mode: InputMode,
    /// Decided when the text arrives, so the editor does not switch under
    /// the cursor when a paste makes a small text large.
    edit_whole: bool,
    chunk: Option<Chunk>,
    /// Unique to this text as it stands: new for every document and edit,
    /// so what was computed from the text (an outline, a search) knows
    /// when it is out of date.
    version: u64,
}

/// The next [`Document::version`].
fn next_version() -> u64 {
    static VERSIONS: AtomicU64 = AtomicU64::new(1);
    VERSIONS.fetch_add(1, Ordering::Relaxed)
}

impl Document {
    /// Splits `text` into sentences (slow for megabytes: call off the UI
    /// thread for large texts).
    pub fn new(text: String, mode: InputMode) -> Self {
        let spans = split_sentences(&text, mode);
        let edit_whole = text.len() <= WHOLE_TEXT_EDIT_LIMIT;
        Self {
            text,
            spans,
            mode,
            edit_whole,
            chunk: None,
            version: next_version(),
        }
    }

    /// Changes with every edit (see the field).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The byte spans of every sentence.
    pub fn sentence_spans(&self) -> &[(usize, usize)] {
        &self.spans
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }

    pub fn mode(&self) -> InputMode {
        self.mode
    }

    pub fn sentence_count(&self) -> usize {
        self.spans.len()
    }

    /// Whether the editor holds the whole text (else one chunk).
    pub fn edits_whole_text(&self) -> bool {
        self.edit_whole
    }

    /// The whole text for the editor; call [`Document::whole_text_edited`]
    /// after a change.
    pub fn whole_text_mut(&mut self) -> &mut String {
        &mut self.text
    }

    /// Splits the text again after the editor changed it.
    pub fn whole_text_edited(&mut self) {
        self.version = next_version();
        self.spans = split_sentences(&self.text, self.mode);
    }

    /// Re-splits in another input mode (synchronously: the caller moves
    /// large texts to a thread).
    pub fn with_mode(self, mode: InputMode) -> Self {
        let edit_whole = self.edit_whole;
        Self {
            edit_whole,
            ..Self::new(self.text, mode)
        }
    }

    /// The editor chunk of a large document, starting at `first_sentence`,
    /// built when the window moved.
    pub fn chunk_at(&mut self, first_sentence: usize) -> Option<&mut Chunk> {
        if self.edit_whole {
            return None;
        }
        let first = first_sentence.min(self.spans.len().saturating_sub(1));
        if self
            .chunk
            .as_ref()
            .is_none_or(|c| c.first_sentence != first)
        {
            self.chunk = Some(self.make_chunk(first));
        }
        self.chunk.as_mut()
    }

    fn make_chunk(&self, first: usize) -> Chunk {
        let Some(&(start, _)) = self.spans.get(first) else {
            // No sentence at all: edit the (blank) text itself.
            return Chunk {
                first_sentence: 0,
                end_sentence: 0,
                range: 0..self.text.len(),
                text: self.text.clone(),
                editable: self.text.len() <= MAX_EDITABLE_CHUNK,
            };
        };
        let end_sentence = self.sentences_within(first, CHUNK_BYTES);
        let end = self.spans[end_sentence - 1].1;
        let editable = end - start <= MAX_EDITABLE_CHUNK;
        let text = if editable {
            self.text[start..end].to_string()
        } else {
            let cut = floor_char_boundary(&self.text, start + MAX_EDITABLE_CHUNK / 4);
            format!("{} …", &self.text[start..cut])
        };
        Chunk {
            first_sentence: first,
            end_sentence,
            range: start..end,
            text,
            editable,
        }
    }

    /// One past the last sentence from `first` whose text stays within
    /// `budget` bytes; at least one sentence.
    fn sentences_within(&self, first: usize, budget: usize) -> usize {
        let start = self.spans[first].0;
        let mut end = first + 1;
        while end < self.spans.len() && self.spans[end].1 - start <= budget {
            end += 1;
        }
        end
    }

    /// Puts the edited chunk back into the text and splits only its part
    /// again; the sentences after it keep their spans, shifted.
    pub fn chunk_edited(&mut self) {
        let Some(chunk) = &mut self.chunk else {
            return;
        };
        if !chunk.editable {
            return;
        }
        self.version = next_version();
        let start = chunk.range.start;
        self.text.replace_range(chunk.range.clone(), &chunk.text);
        let new_end = start + chunk.text.len();
        let delta = new_end as isize - chunk.range.end as isize;
        let local: Vec<(usize, usize)> = split_sentences(&chunk.text, self.mode)
            .into_iter()
            .map(|(s, e)| (s + start, e + start))
            .collect();
        let after: Vec<(usize, usize)> = self.spans[chunk.end_sentence.min(self.spans.len())..]
            .iter()
            .map(|&(s, e)| (shift(s, delta), shift(e, delta)))
            .collect();
        self.spans.truncate(chunk.first_sentence);
        self.spans.extend_from_slice(&local);
        chunk.end_sentence = self.spans.len();
        self.spans.extend(after);
        chunk.range = start..new_end;
    }

    /// The text to send to the model for a window of at most `tokens`
    /// tokens starting at `first_sentence`, and the first sentence to give
    /// the pipeline: the whole text for small documents, else a slice from
    /// the window bounded by what the window can hold.
    pub fn request(&self, first_sentence: usize, tokens: usize) -> (String, usize) {
        let first = first_sentence.min(self.spans.len().saturating_sub(1));
        let budget = REQUEST_BYTES.max(tokens.saturating_mul(REQUEST_BYTES_PER_TOKEN));
        if self.text.len() <= budget || self.spans.is_empty() {
            return (self.text.clone(), first);
        }
        let end_sentence = self.sentences_within(first, budget);
        let (start, end) = (self.spans[first].0, self.spans[end_sentence - 1].1);
        (self.text[start..end].to_string(), 0)
    }

    /// A short description for the editor of a large text.
    pub fn size_description(&self) -> String {
        format!(
            "{} · {} sentences",
            crate::app::widgets::format::human_bytes(self.text.len() as u64),
            self.spans.len()
        )
    }
}

fn shift(position: usize, delta: isize) -> usize {
    position.saturating_add_signed(delta)
}

/// The largest char boundary at or before `index`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_edit_splices_and_keeps_later_spans() {
        let sentence = "A fairly ordinary sentence of text. ";
        let text = sentence.repeat(2000);
        let mut doc = Document::new(text, InputMode::Document);
        assert!(!doc.edits_whole_text());
        let total = doc.sentence_count();
        let chunk = doc.chunk_at(10).expect("a large text has chunks");
        let before_end = chunk.end_sentence;
        chunk.text.push_str(" Two more. Sentences here.");
        doc.chunk_edited();
        assert_eq!(doc.sentence_count(), total + 2);
        let chunk = doc.chunk_at(10).expect("chunk");
        assert_eq!(chunk.end_sentence, before_end + 2);
        // Every span still points at a trimmed sentence of the new text.
        for &(s, e) in &doc.spans {
            let piece = &doc.text()[s..e];
            assert_eq!(piece, piece.trim());
            assert!(!piece.is_empty());
        }
        let resplit = split_sentences(doc.text(), InputMode::Document);
        assert_eq!(resplit, doc.spans);
    }

    #[test]
    fn request_of_a_large_text_is_a_bounded_slice() {
        let text = "Short one. ".repeat(100_000);
        let doc = Document::new(text, InputMode::Document);
        let (slice, first) = doc.request(500, 512);
        assert_eq!(first, 0);
        assert!(slice.len() <= REQUEST_BYTES);
        assert!(slice.starts_with("Short one."));
        // A 32k context's window: a slice that holds it (~11 bytes a token).
        let (slice, _) = doc.request(500, 32_768);
        assert!(slice.len() > 32_768 * 11, "{}", slice.len());
        assert!(slice.len() <= 32_768 * REQUEST_BYTES_PER_TOKEN);
        let small = Document::new("One. Two. Three.".into(), InputMode::Document);
        assert_eq!(small.request(1, 512), ("One. Two. Three.".to_string(), 1));
    }
}
