//! From the user's text to the model's input (ANALYSIS.md §1).
//!
//! Document mode splits the text into sentences (Unicode UAX #29, or one per
//! line), tokenizes each without special tokens and builds
//! `[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]`, with the start and separator
//! tokens of the model's tokenizer (`<s> s1 </s> … </s>` for RoBERTa,
//! ANALYSIS.md §8). Plain mode lets the tokenizer
//! encode the whole text once and takes sentence ids from token offsets.
//! Either way a text longer than the model's limit is cut at the last whole
//! sentence that fits and what was left out is counted, never silently
//! dropped; `first_sentence` moves that window through a long document.
//! A causal decoder reads the text itself instead, as [`decoder`] builds it
//! (ANALYSIS.md §8).

mod decoder;

use crate::captures::CaptureMode;
use crate::tokens::{SpecialToken, SpecialTokens, TokenSequence};
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;
use unicode_segmentation::UnicodeSegmentation;

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
        "sentence {sentence} alone has {tokens} tokens, more than the limit of {limit} \
         (with the start and separator tokens); split it, or use --one-sentence-per-line with shorter lines"
    )]
    SentenceTooLong {
        sentence: usize,
        tokens: usize,
        limit: usize,
    },
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

/// The model input and what the cut left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuiltInput {
    pub tokens: TokenSequence,
    /// Byte spans of every sentence of the whole text.
    pub sentence_spans: Vec<(usize, usize)>,
    /// Index of the first sentence in the window.
    pub first_sentence: usize,
    /// Sentences in the model input.
    pub sentences_analysed: usize,
    /// Sentences after the window that did not fit.
    pub sentences_left_out: usize,
    /// Their tokens (without the separators they would have needed).
    pub tokens_left_out: usize,
    /// The limit the window was cut to.
    #[serde(default)]
    pub limit: TokenLimit,
    /// Whether the run keeps every P and S or recomputes them per head
    /// (when they would not fit the memory limit).
    #[serde(default)]
    pub captures: CaptureMode,
}

/// Why a long input's heads show after a pause: said in the window and on
/// stderr.
pub const RECOMPUTED_NOTE: &str = "every head's attention P and similarity S \
    would not fit the capture memory limit together: the figures were computed \
    layer by layer during the pass, and P and S are recomputed for each head a \
    view or an export shows (raise Memory limit in the settings, or \
    --capture-memory-mb, to keep them)";

/// [`RECOMPUTED_NOTE`] in a few words, for the text panel.
pub const RECOMPUTED_NOTE_SHORT: &str = "P and S recomputed per head";

impl BuiltInput {
    /// A warning for stderr or the status bar when something was left out.
    pub fn left_out_warning(&self) -> Option<String> {
        (self.sentences_left_out > 0).then(|| {
            format!(
                "the text is longer than {}: analysed sentences {}–{} of {}, \
                 left out {} sentence{} ({} tokens) after the last whole sentence that fits",
                self.limit,
                self.first_sentence + 1,
                self.first_sentence + self.sentences_analysed,
                self.sentence_spans.len(),
                self.sentences_left_out,
                if self.sentences_left_out == 1 {
                    ""
                } else {
                    "s"
                },
                self.tokens_left_out
            )
        })
    }
}

/// Trimmed, non-empty sentence spans of `text` (byte offsets).
pub fn split_sentences(text: &str, mode: InputMode) -> Vec<(usize, usize)> {
    let pieces: Vec<(usize, &str)> = match mode {
        InputMode::OneSentencePerLine => line_spans(text),
        InputMode::Document | InputMode::Plain => text.split_sentence_bound_indices().collect(),
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

/// Builds the model input for `text`, starting the window at sentence
/// `first_sentence` (0-based) and fitting at most `max_tokens` positions.
pub fn build_input(
    tokenizer: &Tokenizer,
    text: &str,
    mode: InputMode,
    max_tokens: usize,
    first_sentence: usize,
    specials: &SpecialTokens,
) -> Result<BuiltInput, InputError> {
    TokenizedText::new(tokenizer, text, mode, specials)?.window(
        max_tokens,
        first_sentence,
        specials,
    )
}

/// A text split into sentences and tokenized once. Every window of it is
/// cut from these tokens ([`TokenizedText::window`]), so the windows of a
/// long document cost one tokenization in all, not one per window.
///
/// Document modes encode each sentence on its own; plain mode encodes the
/// whole text once and gives each token the sentence its start offset falls
/// in; a decoder's text is encoded once in every mode ([`decoder`]).
/// Either way a window is a run of whole sentences.
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
                let sentences: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
                let encodings = tokenizer
                    .encode_batch(sentences, false)
                    .map_err(tokenizer_error)?;
                for (sentence, (encoding, &(start, _))) in encodings.iter().zip(&spans).enumerate()
                {
                    for ((&id, token), &(s, e)) in encoding
                        .get_ids()
                        .iter()
                        .zip(encoding.get_tokens())
                        .zip(encoding.get_offsets())
                    {
                        tokenized.push(id, token, (start + s, start + e), sentence);
                    }
                }
            }
        }
        let mut starts = Vec::with_capacity(spans.len() + 1);
        let mut token = 0;
        for sentence in 0..=spans.len() {
            while token < tokenized.sentence_of.len() && tokenized.sentence_of[token] < sentence {
                token += 1;
            }
            starts.push(token);
        }
        tokenized.sentence_starts = starts;
        tokenized.spans = spans;
        Ok(tokenized)
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

    /// The model input starting at sentence `first_sentence` (0-based):
    /// the whole sentences from there that fit in `max_tokens` positions.
    pub fn window(
        &self,
        max_tokens: usize,
        first_sentence: usize,
        specials: &SpecialTokens,
    ) -> Result<BuiltInput, InputError> {
        if first_sentence >= self.spans.len() {
            return Err(InputError::WindowPastEnd {
                first: first_sentence + 1,
                sentences: self.spans.len(),
            });
        }
        let mut built = match self.mode {
            _ if self.causal => self.decoder_window(max_tokens, first_sentence, specials)?,
            InputMode::Plain => self.plain_window(max_tokens, first_sentence, specials)?,
            _ => self.document_window(max_tokens, first_sentence, specials)?,
        };
        built.sentence_spans = self.spans.clone();
        built.first_sentence = first_sentence;
        Ok(built)
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

    fn document_window(
        &self,
        max_tokens: usize,
        first: usize,
        specials: &SpecialTokens,
    ) -> Result<BuiltInput, InputError> {
        let mut tokens = empty_sequence(specials);
        let mut analysed = 0;
        let mut next = first;
        while next < self.spans.len() {
            let count = self.sentence_tokens(next);
            if tokens.len() + count + 1 > max_tokens {
                // Nothing but separators so far (sentences of characters the
                // tokenizer drops count for nothing): this sentence is too long.
                let has_content = tokens.special.iter().any(|&special| !special);
                if !has_content {
                    return Err(InputError::SentenceTooLong {
                        sentence: next + 1,
                        tokens: count,
                        limit: max_tokens,
                    });
                }
                break;
            }
            for index in self.sentence_starts[next]..self.sentence_starts[next + 1] {
                self.push_token(&mut tokens, specials, index, analysed);
            }
            special(&mut tokens, &specials.separator, Some(analysed));
            analysed += 1;
            next += 1;
        }
        Ok(BuiltInput {
            tokens,
            sentences_analysed: analysed,
            sentences_left_out: self.spans.len() - next,
            tokens_left_out: self.ids.len() - self.sentence_starts[next],
            ..Default::default()
        })
    }

    fn plain_window(
        &self,
        max_tokens: usize,
        first: usize,
        specials: &SpecialTokens,
    ) -> Result<BuiltInput, InputError> {
        let begin = self.sentence_starts[first];
        let sentence_of = &self.sentence_of[begin..];
        // Keep whole sentences while start + tokens + separator fit.
        let room = max_tokens.saturating_sub(2);
        let mut kept = sentence_of.len();
        if kept > room {
            let first_cut = sentence_of[room];
            kept = self.sentence_starts[first_cut] - begin;
            if kept == 0 {
                // The first sentence with tokens (those before it may have
                // none: characters the tokenizer drops) is too long on its own.
                let sentence = sentence_of[0];
                return Err(InputError::SentenceTooLong {
                    sentence: sentence + 1,
                    tokens: self.sentence_tokens(sentence),
                    limit: max_tokens,
                });
            }
        }
        let mut tokens = empty_sequence(specials);
        for index in begin..begin + kept {
            self.push_token(
                &mut tokens,
                specials,
                index,
                self.sentence_of[index] - first,
            );
        }
        // Nothing kept means the tokenizer produced no token at all (text of
        // characters it drops): every sentence was read, none left out.
        let remaining = self.spans.len() - first;
        let analysed = if kept == 0 {
            remaining
        } else {
            sentence_of[kept - 1] - first + 1
        };
        special(&mut tokens, &specials.separator, Some(analysed - 1));
        Ok(BuiltInput {
            tokens,
            sentences_analysed: analysed,
            sentences_left_out: remaining - analysed,
            tokens_left_out: sentence_of.len() - kept,
            ..Default::default()
        })
    }
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
        ..Default::default()
    };
    special(&mut tokens, &specials.start, None);
    tokens
}

fn tokenizer_error(e: impl std::fmt::Display) -> InputError {
    InputError::Tokenizer(e.to_string())
}
