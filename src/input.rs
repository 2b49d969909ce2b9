//! From the user's text to the model's input (ANALYSIS.md §1).
//!
//! Document mode splits the text into sentences (Unicode UAX #29 with the
//! line breaks inside a paragraph read as spaces, [`sentences`]; or one per
//! line), tokenizes each without special tokens and builds
//! `[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]`, with the start and separator
//! tokens of the model's tokenizer (`<s> s1 </s> … </s>` for RoBERTa,
//! ANALYSIS.md §8). Plain mode lets the tokenizer
//! encode the whole text once and takes sentence ids from token offsets.
//! Either way a text longer than the model's limit is cut at the last whole
//! sentence that fits and what was left out is counted, never silently
//! dropped; a [`WindowStart`] moves that window through a long document.
//! A sentence longer than a window on its own is cut into pieces, each
//! analysed as a sentence ([`pieces`]). A causal decoder reads the text
//! itself instead, as [`decoder`] builds it (ANALYSIS.md §8).

mod decoder;
mod pieces;
mod sentences;

pub use pieces::{SplitSentence, WindowPiece};

use crate::captures::CaptureMode;
use crate::tokens::{SpecialToken, SpecialTokens, TokenSequence};
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;

/// How the text becomes sentences and tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    /// Sentences by Unicode sentence boundaries, each closed by `[SEP]`.
    #[default]
    Document,
    /// Each non-empty line is one sentence, closed by `[SEP]`.
    OneSentencePerLine,
    /// The tokenizer's own encoding of the whole text: one `[CLS] ... [SEP]`.
    Plain,
}

/// Why a text cannot become a model input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("the text is empty or blank: there is nothing to analyse")]
    Empty,
    #[error("the text has {sentences} sentences, but the window starts at sentence {first} (counting from 1)")]
    WindowPastEnd { first: usize, sentences: usize },
    #[error(
        "a window of {limit} tokens leaves no room for the text: the input itself \
         adds {added} tokens"
    )]
    LimitTooSmall { limit: usize, added: usize },
    #[error("the tokenizer failed: {0}")]
    Tokenizer(String),
}

/// What a long text is cut to fit (ANALYSIS.md §1, §8): the most tokens
/// one window may hold and which limit set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenLimit {
    pub tokens: usize,
    pub by: LimitedBy,
}

/// The limit that was the smallest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum LimitedBy {
    /// The model's positions (`max_position_embeddings`, `n_positions`).
    #[default]
    Model,
    /// A smaller limit the user set.
    User,
    /// The memory the captures of every head may take, in MB.
    Memory { mb: u64 },
}

impl Default for TokenLimit {
    fn default() -> Self {
        Self {
            tokens: usize::MAX,
            by: LimitedBy::Model,
        }
    }
}

impl std::fmt::Display for TokenLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tokens = self.tokens;
        match self.by {
            LimitedBy::Model => write!(f, "the model's limit of {tokens} tokens"),
            LimitedBy::User => write!(f, "the token limit of {tokens} you set"),
            LimitedBy::Memory { mb } => write!(
                f,
                "{tokens} tokens, the most whose captures fit the \
                 memory limit of {mb} MB"
            ),
        }
    }
}

/// Where a window starts: a sentence of the text (0-based) and, when that
/// sentence is longer than a window and cut into pieces, the piece
/// (0-based; 0 for a whole sentence).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct WindowStart {
    pub sentence: usize,
    pub piece: usize,
}

impl From<usize> for WindowStart {
    /// The start of a whole sentence.
    fn from(sentence: usize) -> Self {
        Self { sentence, piece: 0 }
    }
}

/// Where one window of a text starts and ends, without its input: what an
/// outline of a long document lists ([`TokenizedText::windows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowBounds {
    pub start: WindowStart,
    /// The last sentence of which the window holds something.
    pub last_sentence: usize,
    /// Where its text begins (its sentence's start, or its piece's).
    pub start_byte: usize,
    /// Where the next window starts, if one does.
    pub next: Option<WindowStart>,
}

/// The model input and what the cut left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltInput {
    pub tokens: TokenSequence,
    /// Byte spans of every sentence of the whole text.
    pub sentence_spans: Vec<(usize, usize)>,
    /// Index of the first sentence in the window.
    pub first_sentence: usize,
    /// The piece of the first sentence the window starts at, when that
    /// sentence was cut into pieces (0 otherwise).
    #[serde(default)]
    pub first_piece: usize,
    /// Sentences in the model input, each piece of a cut sentence counting
    /// as one.
    pub sentences_analysed: usize,
    /// Sentences after the window of which nothing was analysed.
    pub sentences_left_out: usize,
    /// The tokens after the window (without the separators they would
    /// have needed), the rest of a sentence cut in the window's last piece
    /// included.
    pub tokens_left_out: usize,
    /// Where the next window starts; `None` when this one reaches the end
    /// of the text.
    #[serde(default)]
    pub next: Option<WindowStart>,
    /// The sentences longer than a window that were cut into pieces, with
    /// the pieces this window holds.
    #[serde(default)]
    pub sentences_split: Vec<SplitSentence>,
    /// The limit the window was cut to.
    #[serde(default)]
    pub limit: TokenLimit,
    /// Whether the run keeps every P and S or recomputes them per head
    /// (when they would not fit the memory limit).
    #[serde(default)]
    pub captures: CaptureMode,
    /// Bytes of the run's captures kept in a scratch file on disk (a long
    /// recomputed run's outputs O and queries), 0 where none.
    #[serde(default)]
    pub scratch_bytes: u64,
    /// Whether the run keeps the residual stream after each layer (a
    /// decoder's, for its logit lens, where asked and where it fits).
    #[serde(default)]
    pub keeps_residuals: bool,
    /// Whether the pass makes each head's thumbnails as it goes (the app,
    /// where P and S are recomputed per head).
    #[serde(default)]
    pub keeps_thumbnails: bool,
}

/// Why a long input's heads show after a pause: said in the window and on
/// stderr.
pub const RECOMPUTED_NOTE: &str = "every head's attention P and similarity S \
    would not fit the capture memory limit together: the figures are computed \
    layer by layer during the pass, and P and S are recomputed for each head a \
    view or an export shows (raise Memory limit in the settings, or \
    --capture-memory-mb, to keep them)";

/// [`RECOMPUTED_NOTE`] in a few words, for the text panel.
pub const RECOMPUTED_NOTE_SHORT: &str = "P and S recomputed per head";

impl BuiltInput {
    /// Where this window starts.
    pub fn start(&self) -> WindowStart {
        WindowStart {
            sentence: self.first_sentence,
            piece: self.first_piece,
        }
    }

    /// The last sentence of the text (0-based) of which this window holds
    /// some tokens (a piece, when it ends inside a cut sentence).
    pub fn last_sentence(&self) -> usize {
        match self.next {
            Some(next) if next.piece > 0 => next.sentence,
            Some(next) => next.sentence.saturating_sub(1).max(self.first_sentence),
            None => self.sentence_spans.len().saturating_sub(1),
        }
    }

    /// Where a long run keeps captures on disk, a note saying how much.
    pub fn scratch_note(&self) -> Option<String> {
        (self.scratch_bytes > 0).then(|| {
            format!(
                "every head's outputs O and queries ({:.1} GB) are kept in a scratch \
                 file in headscope's cache folder while the run is open, not in memory \
                 ($HEADSCOPE_SCRATCH_FROM_MB sets the size from which they are)",
                self.scratch_bytes as f64 / 1e9
            )
        })
    }

    /// A warning for stderr or the status bar when something was left out.
    pub fn left_out_warning(&self) -> Option<String> {
        let next = self.next?;
        let (first, last) = (self.first_sentence + 1, self.last_sentence() + 1);
        let analysed = if first == last {
            format!("sentence {first}")
        } else {
            format!("sentences {first}–{last}")
        };
        let after = match self.sentences_left_out {
            0 => String::new(),
            1 => " and 1 sentence after it".to_string(),
            n => format!(" and {n} sentences after it"),
        };
        let left_out = if next.piece > 0 {
            format!("the rest of sentence {last}{after}")
        } else {
            format!(
                "{} sentence{}",
                self.sentences_left_out,
                if self.sentences_left_out == 1 {
                    ""
                } else {
                    "s"
                }
            )
        };
        Some(format!(
            "the text is longer than {}: analysed {analysed} of {}, left out {left_out} \
             ({} tokens) after the window",
            self.limit,
            self.sentence_spans.len(),
            self.tokens_left_out
        ))
    }

    /// One note per sentence of the window that was cut into pieces: how
    /// long it is, into how many pieces it was cut and which this window
    /// holds. Worded for the window and stderr alike.
    pub fn split_notes(&self) -> Vec<String> {
        self.sentences_split
            .iter()
            .map(|split| split.note(&self.limit))
            .collect()
    }
}

/// Trimmed, non-empty sentence spans of `text` (byte offsets): one per
/// line, or (document and plain modes) UAX #29's sentences with a line
/// break inside a paragraph read as a space (ANALYSIS.md §1).
pub fn split_sentences(text: &str, mode: InputMode) -> Vec<(usize, usize)> {
    let pieces: Vec<(usize, &str)> = match mode {
        InputMode::OneSentencePerLine => line_spans(text),
        InputMode::Document | InputMode::Plain => sentences::document_pieces(text),
    };
    pieces
        .into_iter()
        .filter_map(|(start, piece)| trimmed_span(start, piece))
        .collect()
}

fn line_spans(text: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        spans.push((start, line));
        start += line.len();
    }
    spans
}

fn trimmed_span(start: usize, piece: &str) -> Option<(usize, usize)> {
    let trimmed_start = piece.len() - piece.trim_start().len();
    let trimmed = piece.trim();
    (!trimmed.is_empty()).then(|| {
        let s = start + trimmed_start;
        (s, s + trimmed.len())
    })
}

/// Builds the model input for `text`, starting the window at `start` (a
/// sentence, 0-based, or a piece of a cut one) and fitting at most
/// `max_tokens` positions.
pub fn build_input(
    tokenizer: &Tokenizer,
    text: &str,
    mode: InputMode,
    max_tokens: usize,
    start: impl Into<WindowStart>,
    specials: &SpecialTokens,
) -> Result<BuiltInput, InputError> {
    TokenizedText::new(tokenizer, text, mode, specials)?.window(max_tokens, start, specials)
}

/// A text split into sentences and tokenized once. Every window of it is
/// cut from these tokens ([`TokenizedText::window`]), so the windows of a
/// long document cost one tokenization in all, not one per window.
///
/// Document modes encode each sentence on its own; plain mode encodes the
/// whole text once and gives each token the sentence its start offset falls
/// in; a decoder's text is encoded once in every mode ([`decoder`]).
/// Either way a window is a run of whole sentences, but for a sentence
/// longer than a window, whose pieces are windowed like sentences.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenizedText {
    mode: InputMode,
    /// Trimmed, non-empty sentence spans of the whole text (byte offsets).
    spans: Vec<(usize, usize)>,
    ids: Vec<u32>,
    texts: Vec<String>,
    /// Byte range of each token in the whole text.
    offsets: Vec<(usize, usize)>,
    /// Sentence index of each token, ascending.
    sentence_of: Vec<usize>,
    /// Whether each token starts a word (where a long sentence may be cut).
    word_start: Vec<bool>,
    /// Index of the first token of each sentence, and the token count last.
    sentence_starts: Vec<usize>,
    /// A decoder's input: the text encoded once with the tokenizer's own
    /// special tokens, those before the first sentence here ...
    causal: bool,
    leading: Vec<(u32, String)>,
    /// ... and those after the last.
    trailing: Vec<(u32, String)>,
}

impl TokenizedText {
    /// Splits `text` into sentences and tokenizes it for the model whose
    /// special tokens are `specials`; fails on a blank text.
    pub fn new(
        tokenizer: &Tokenizer,
        text: &str,
        mode: InputMode,
        specials: &SpecialTokens,
    ) -> Result<Self, InputError> {
        let spans = split_sentences(text, mode);
        if spans.is_empty() {
            return Err(InputError::Empty);
        }
        let mut tokenized = Self {
            mode,
            causal: specials.causal,
            ..Default::default()
        };
        match mode {
            _ if specials.causal => {
                tokenized.spans = spans.clone();
                decoder::tokenize(tokenizer, text, mode, specials, &mut tokenized)?;
            }
            InputMode::Plain => {
                let encoding = tokenizer.encode(text, false).map_err(tokenizer_error)?;
                // Sentence of each token, from its start offset.
                let mut current = 0;
                for ((&id, token), &(s, e)) in encoding
                    .get_ids()
                    .iter()
                    .zip(encoding.get_tokens())
                    .zip(encoding.get_offsets())
                {
                    while current + 1 < spans.len() && s >= spans[current + 1].0 {
                        current += 1;
                    }
                    tokenized.push(id, token, (s, e), current);
                }
            }
            InputMode::Document | InputMode::OneSentencePerLine => {
                // A wrapped sentence is read with its line breaks as spaces;
                // `origins` maps the read text's offsets back.
                let (sentences, origins): (Vec<_>, Vec<_>) = spans
                    .iter()
                    .map(|&(s, e)| sentences::sentence_text(text, s, e))
                    .unzip();
                let encodings = tokenizer
                    .encode_batch(sentences, false)
                    .map_err(tokenizer_error)?;
                for (sentence, ((encoding, origin), &(start, _))) in
                    encodings.iter().zip(&origins).zip(&spans).enumerate()
                {
                    let place = |offset: usize| match origin {
                        Some(origin) => origin[offset],
                        None => start + offset,
                    };
                    for ((&id, token), &(s, e)) in encoding
                        .get_ids()
                        .iter()
                        .zip(encoding.get_tokens())
                        .zip(encoding.get_offsets())
                    {
                        tokenized.push(id, token, (place(s), place(e)), sentence);
                    }
                }
            }
        }
        Ok(tokenized.finish(text, spans))
    }

    /// A decoder's tokens as they are — a prompt and the model's
    /// continuation of it — in the text they decode to (special tokens
    /// written out), which is returned too: each token in the sentence of
    /// that text its first non-space character lies in, whitespace after
    /// the last sentence in the last; special tokens before the first
    /// content token lead the window, as a BOS does.
    pub fn of_ids(
        tokenizer: &Tokenizer,
        ids: &[u32],
        specials: &SpecialTokens,
    ) -> Result<(Self, String), InputError> {
        let text = tokenizer.decode(ids, false).map_err(tokenizer_error)?;
        let spans = split_sentences(&text, InputMode::Document);
        if spans.is_empty() {
            return Err(InputError::Empty);
        }
        let mut tokenized = Self {
            mode: InputMode::Document,
            causal: true,
            spans: spans.clone(),
            ..Default::default()
        };
        decoder::place_ids(tokenizer, &text, ids, specials, &mut tokenized)?;
        let tokenized = tokenized.finish(&text, spans);
        Ok((tokenized, text))
    }

    /// Where each sentence's tokens start, and which tokens start a word.
    fn finish(mut self, text: &str, spans: Vec<(usize, usize)>) -> Self {
        let mut starts = Vec::with_capacity(spans.len() + 1);
        let mut token = 0;
        for sentence in 0..=spans.len() {
            while token < self.sentence_of.len() && self.sentence_of[token] < sentence {
                token += 1;
            }
            starts.push(token);
        }
        self.sentence_starts = starts;
        self.spans = spans;
        self.word_start = pieces::word_starts(text, &self.offsets, &self.sentence_of);
        self
    }

    fn push(&mut self, id: u32, token: &str, offsets: (usize, usize), sentence: usize) {
        self.ids.push(id);
        self.texts.push(token.to_string());
        self.offsets.push(offsets);
        self.sentence_of.push(sentence);
    }

    /// Byte spans of every sentence of the text.
    pub fn sentence_spans(&self) -> &[(usize, usize)] {
        &self.spans
    }

    /// Tokens of sentence `index` (without separators).
    pub fn sentence_tokens(&self, index: usize) -> usize {
        self.sentence_starts[index + 1] - self.sentence_starts[index]
    }

    /// The model input starting at `start` (a sentence, 0-based, or a piece
    /// of a cut one): the sentences from there that fit in `max_tokens`
    /// positions, whole but for a sentence longer than a window on its own,
    /// which is cut into pieces that are windowed like sentences.
    pub fn window(
        &self,
        max_tokens: usize,
        start: impl Into<WindowStart>,
        specials: &SpecialTokens,
    ) -> Result<BuiltInput, InputError> {
        let start = start.into();
        if start.sentence >= self.spans.len() {
            return Err(InputError::WindowPastEnd {
                first: start.sentence + 1,
                sentences: self.spans.len(),
            });
        }
        let layout = self.layout(specials);
        let (per_sentence, closing) = (layout.per_sentence, layout.closing);
        let mut tokens = layout.opening;
        let mut analysed = 0;
        let mut last_with_tokens = None;
        let mut splits: Vec<SplitSentence> = Vec::new();
        let next = self.fill(
            max_tokens,
            start,
            (tokens.len(), per_sentence, closing),
            |unit| {
                for index in unit.tokens.clone() {
                    self.push_token(&mut tokens, specials, index, analysed);
                }
                if per_sentence > 0 {
                    special(&mut tokens, &specials.separator, Some(analysed));
                }
                if !unit.tokens.is_empty() {
                    last_with_tokens = Some(analysed);
                }
                self.note_piece(&mut splits, unit, analysed);
                analysed += 1;
            },
        )?;
        match self.mode {
            _ if self.causal
                && next.is_none()
                && tokens.len() + self.trailing.len() <= max_tokens =>
            {
                for (id, text) in &self.trailing {
                    let token = SpecialToken {
                        id: *id,
                        text: text.clone(),
                    };
                    special(&mut tokens, &token, None);
                }
            }
            _ if self.causal => {}
            // One separator closes the window, in its last sentence with tokens.
            InputMode::Plain => special(
                &mut tokens,
                &specials.separator,
                Some(last_with_tokens.unwrap_or(analysed - 1)),
            ),
            _ => {}
        }
        let (sentences_left_out, tokens_left_out) = match next {
            Some((at, token)) => (
                self.spans.len() - at.sentence - usize::from(at.piece > 0),
                self.ids.len() - token,
            ),
            None => (0, 0),
        };
        Ok(BuiltInput {
            tokens,
            sentence_spans: self.spans.clone(),
            first_sentence: start.sentence,
            first_piece: splits
                .first()
                .filter(|split| split.sentence == start.sentence)
                .map_or(0, |split| split.in_window[0].piece),
            sentences_analysed: analysed,
            sentences_left_out,
            tokens_left_out,
            next: next.map(|(at, _)| at),
            sentences_split: splits,
            ..Default::default()
        })
    }

    /// The walk every window makes: from `start`, the sentences and pieces
    /// that fit in `max_tokens` positions, each handed to `take`. The input
    /// adds `opening` tokens first, `per_sentence` after each sentence and
    /// `closing` at the end. Returns where the next window starts, with its
    /// first token.
    fn fill(
        &self,
        max_tokens: usize,
        start: WindowStart,
        (opening, per_sentence, closing): (usize, usize, usize),
        mut take: impl FnMut(&pieces::Unit),
    ) -> Result<Option<(WindowStart, usize)>, InputError> {
        // Room for the longest piece: what the input adds around one sentence.
        let added = opening + per_sentence + closing;
        let room = max_tokens
            .checked_sub(added)
            .filter(|&room| room > 0)
            .ok_or(InputError::LimitTooSmall {
                limit: max_tokens,
                added,
            })?;
        let mut used = opening;
        for unit in self.units(start, room) {
            let cost = unit.tokens.len() + per_sentence;
            if used + cost + closing > max_tokens {
                return Ok(Some((unit.start, unit.tokens.start)));
            }
            used += cost;
            take(&unit);
        }
        Ok(None)
    }

    /// Every window of the text from the first, as [`TokenizedText::window`]
    /// cuts them one after the other, without building their inputs: an
    /// outline of a long document.
    pub fn windows(
        &self,
        max_tokens: usize,
        specials: &SpecialTokens,
    ) -> Result<Vec<WindowBounds>, InputError> {
        let layout = self.layout(specials);
        let costs = (layout.opening.len(), layout.per_sentence, layout.closing);
        let room = max_tokens.saturating_sub(costs.0 + costs.1 + costs.2);
        let mut windows = Vec::new();
        let mut start = Some(WindowStart::default());
        while let Some(at) = start {
            let mut last = at.sentence;
            let next = self.fill(max_tokens, at, costs, |unit| {
                last = unit.start.sentence;
            })?;
            let start_byte = match at.piece {
                0 => self.spans[at.sentence].0,
                _ => self
                    .units(at, room)
                    .next()
                    .map_or(self.spans[at.sentence].0, |unit| {
                        self.offsets[unit.tokens.start].0
                    }),
            };
            start = next.map(|(next, _)| next);
            windows.push(WindowBounds {
                start: at,
                last_sentence: last,
                start_byte,
                next: start,
            });
        }
        Ok(windows)
    }

    /// What the input adds around the text's tokens, by mode.
    fn layout(&self, specials: &SpecialTokens) -> Layout {
        if self.causal {
            let mut opening = TokenSequence {
                cls_id: specials.start.id,
                sep_id: specials.separator.id,
                causal: specials.causal_attention(),
                bidirectional_decoder: specials.bidirectional_decoder,
                style: specials.style,
                ..Default::default()
            };
            for (id, text) in &self.leading {
                let token = SpecialToken {
                    id: *id,
                    text: text.clone(),
                };
                special(&mut opening, &token, None);
            }
            // The trailing special tokens close a window only where they fit.
            return Layout {
                opening,
                per_sentence: 0,
                closing: 0,
            };
        }
        let plain = self.mode == InputMode::Plain;
        Layout {
            opening: empty_sequence(specials),
            per_sentence: usize::from(!plain),
            closing: usize::from(plain),
        }
    }

    /// Appends token `index` of the text to a window, in window sentence
    /// `sentence`.
    fn push_token(
        &self,
        tokens: &mut TokenSequence,
        specials: &SpecialTokens,
        index: usize,
        sentence: usize,
    ) {
        push_text_token(
            tokens,
            specials,
            (self.ids[index], &self.texts[index]),
            Some(sentence),
            self.offsets[index],
        );
    }
}

/// The tokens a window's input adds around the text's: `[CLS]` first and
/// a `[SEP]` after each sentence in document modes, `[CLS]` and one closing
/// `[SEP]` in plain mode, a decoder's leading special tokens.
struct Layout {
    opening: TokenSequence,
    per_sentence: usize,
    closing: usize,
}

/// Appends one token of the text. A special token written in the text (the
/// characters `[SEP]`, say) is what the tokenizer made of it: a special
/// position that belongs to no sentence, so it never closes one.
fn push_text_token(
    tokens: &mut TokenSequence,
    specials: &SpecialTokens,
    (id, text): (u32, &str),
    sentence: Option<usize>,
    offsets: (usize, usize),
) {
    let special = specials.contains(id);
    tokens.input_ids.push(id);
    tokens.token_texts.push(text.to_string());
    tokens.special.push(special);
    tokens
        .sentence_ids
        .push(if special { None } else { sentence });
    tokens.offsets.push(Some(offsets));
}

/// Appends a start or separator token the input adds, with the tokenizer's text.
fn special(tokens: &mut TokenSequence, token: &SpecialToken, sentence: Option<usize>) {
    tokens.input_ids.push(token.id);
    tokens.token_texts.push(token.text.clone());
    tokens.special.push(true);
    tokens.sentence_ids.push(sentence);
    tokens.offsets.push(None);
}

fn empty_sequence(specials: &SpecialTokens) -> TokenSequence {
    let mut tokens = TokenSequence {
        cls_id: specials.start.id,
        sep_id: specials.separator.id,
        style: specials.style,
        ..Default::default()
    };
    special(&mut tokens, &specials.start, None);
    tokens
}

fn tokenizer_error(e: impl std::fmt::Display) -> InputError {
    InputError::Tokenizer(e.to_string())
}
