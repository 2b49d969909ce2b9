//! Sentences longer than a window (ANALYSIS.md §1): a transcript, a list,
//! a text without punctuation. Such a sentence is not refused but cut into
//! pieces of at most as many tokens as one window leaves for a sentence,
//! at token boundaries and, where a word starts within reach, between two
//! words; each piece is then windowed and analysed like a sentence of its
//! own (its own sentence id, its own separator), and the window reports
//! which sentences were cut ([`SplitSentence`]).
//!
//! The cut depends only on the sentence's tokens and the room a window
//! leaves, never on where the window starts, so piece k of a sentence is
//! the same piece in every window that holds it.

use super::{TokenLimit, TokenizedText, WindowStart};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// A sentence of the text longer than one window, cut into pieces that are
/// each analysed as a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitSentence {
    /// The sentence of the text (0-based).
    pub sentence: usize,
    /// Its tokens.
    pub tokens: usize,
    /// How many pieces it was cut into.
    pub pieces: usize,
    /// Whether every cut fell between two words (else some run of the
    /// sentence had no word boundary within one piece's reach, and was cut
    /// between tokens).
    pub at_word_boundaries: bool,
    /// Its pieces in this window, in order.
    pub in_window: Vec<WindowPiece>,
}

/// One piece of a cut sentence, in the window that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowPiece {
    /// Which piece of the sentence (0-based).
    pub piece: usize,
    /// The sentence id its tokens have in the model input.
    pub window_sentence: usize,
    /// Its tokens.
    pub tokens: usize,
    /// Its bytes in the text.
    pub span: (usize, usize),
}

impl SplitSentence {
    /// "sentence 1 has 912 tokens, more than one window holds under the
    /// model's limit of 512 tokens: it was cut into 2 pieces at word
    /// boundaries, each analysed as a sentence; this window holds piece 1
    /// of 2". Counts from 1, as people do; no command-line flag named.
    pub fn note(&self, limit: &TokenLimit) -> String {
        let cut = if self.at_word_boundaries {
            "at word boundaries"
        } else {
            "between tokens (at word boundaries where a word started within reach)"
        };
        let held = match self.in_window.as_slice() {
            [] => String::new(),
            [one] => format!(
                "; this window holds piece {} of {}",
                one.piece + 1,
                self.pieces
            ),
            [first, .., last] => format!(
                "; this window holds pieces {}–{} of {}",
                first.piece + 1,
                last.piece + 1,
                self.pieces
            ),
        };
        format!(
            "sentence {} has {} tokens, more than one window holds under {limit}: \
             it was cut into {} pieces {cut}, each analysed as a sentence{held}",
            self.sentence + 1,
            self.tokens,
            self.pieces,
        )
    }
}

/// One sentence of a window: a whole sentence of the text, or a piece of a
/// cut one.
pub(super) struct Unit {
    pub start: WindowStart,
    /// Its tokens in the text.
    pub tokens: Range<usize>,
    /// Pieces of its sentence (1 for a whole sentence).
    pub pieces: usize,
    /// Whether its sentence's cuts all fell between words.
    pub at_word_boundaries: bool,
}

/// Whether each token starts a word: the first of its sentence, or one at
/// a new position with whitespace just before it or at its start (the
/// offsets of `▁word` include the space; those of `##s`, of a comma after a
/// word, or of the bytes of one character do not qualify).
pub(super) fn word_starts(
    text: &str,
    offsets: &[(usize, usize)],
    sentence_of: &[usize],
) -> Vec<bool> {
    (0..offsets.len())
        .map(|i| {
            let start = offsets[i].0;
            i == 0
                || sentence_of[i] != sentence_of[i - 1]
                || (start != offsets[i - 1].0
                    && (text
                        .get(..start)
                        .is_some_and(|before| before.ends_with(char::is_whitespace))
                        || text
                            .get(start..)
                            .is_some_and(|rest| rest.starts_with(char::is_whitespace))))
        })
        .collect()
}

impl TokenizedText {
    /// The token ranges of sentence `sentence` in pieces of at most `room`
    /// tokens (`room` ≥ 1): the whole sentence when it fits, else as long
    /// pieces as fit, each ending before the last word start within reach
    /// (or at `room` tokens where there is none).
    fn pieces(&self, sentence: usize, room: usize) -> Vec<Range<usize>> {
        let (begin, end) = (
            self.sentence_starts[sentence],
            self.sentence_starts[sentence + 1],
        );
        let mut pieces = Vec::new();
        let mut start = begin;
        while end - start > room {
            let reach = start + room;
            let cut = (start + 1..=reach)
                .rev()
                .find(|&i| self.word_start[i])
                .unwrap_or(reach);
            pieces.push(start..cut);
            start = cut;
        }
        pieces.push(start..end);
        pieces
    }

    /// The sentences and pieces from `from` on, in order, each sentence cut
    /// into pieces of at most `room` tokens.
    pub(super) fn units(&self, from: WindowStart, room: usize) -> impl Iterator<Item = Unit> + '_ {
        (from.sentence..self.spans.len()).flat_map(move |sentence| {
            let pieces = self.pieces(sentence, room);
            let count = pieces.len();
            let at_word_boundaries = pieces[1..].iter().all(|p| self.word_start[p.start]);
            // A piece past the last (the limit changed since) starts at the last.
            let skip = if sentence == from.sentence {
                from.piece.min(count - 1)
            } else {
                0
            };
            pieces
                .into_iter()
                .enumerate()
                .skip(skip)
                .map(move |(piece, tokens)| Unit {
                    start: WindowStart { sentence, piece },
                    tokens,
                    pieces: count,
                    at_word_boundaries,
                })
        })
    }

    /// Records a piece of a cut sentence that a window holds as its
    /// sentence `window_sentence`.
    pub(super) fn note_piece(
        &self,
        splits: &mut Vec<SplitSentence>,
        unit: &Unit,
        window_sentence: usize,
    ) {
        if unit.pieces < 2 {
            return;
        }
        let sentence = unit.start.sentence;
        if splits.last().is_none_or(|split| split.sentence != sentence) {
            splits.push(SplitSentence {
                sentence,
                tokens: self.sentence_tokens(sentence),
                pieces: unit.pieces,
                at_word_boundaries: unit.at_word_boundaries,
                in_window: Vec::new(),
            });
        }
        let (first, last) = (unit.tokens.start, unit.tokens.end - 1);
        if let Some(split) = splits.last_mut() {
            split.in_window.push(WindowPiece {
                piece: unit.start.piece,
                window_sentence,
                tokens: unit.tokens.len(),
                span: (self.offsets[first].0, self.offsets[last].1),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text of one sentence whose tokens are given as (start, end) pairs.
    fn text_of(text: &str, offsets: Vec<(usize, usize)>) -> TokenizedText {
        let n = offsets.len();
        let sentence_of = vec![0; n];
        TokenizedText {
            spans: vec![(0, text.len())],
            ids: vec![0; n],
            texts: vec![String::new(); n],
            word_start: word_starts(text, &offsets, &sentence_of),
            offsets,
            sentence_of,
            sentence_starts: vec![0, n],
            ..Default::default()
        }
    }

    #[test]
    fn pieces_end_between_words_where_a_word_starts_within_reach() {
        // "un ##believ ##able story tell ##ing": words start at 0, 3 and 4.
        let text = "unbelievable story telling";
        let offsets = vec![(0, 2), (2, 8), (8, 12), (13, 18), (19, 23), (23, 26)];
        let tokenized = text_of(text, offsets);
        assert_eq!(
            tokenized.word_start,
            [true, false, false, true, true, false]
        );
        // Room 4: the first piece stops before "tell" (4), not inside it.
        assert_eq!(tokenized.pieces(0, 4), [0..4, 4..6]);
        // Room 2: no word starts at 1 or 2, so the first cut falls between
        // tokens; the next ends before "tell" again.
        assert_eq!(tokenized.pieces(0, 2), [0..2, 2..4, 4..6]);
        // A sentence that fits is one piece.
        assert_eq!(tokenized.pieces(0, 6), vec![0..6]);
        let units: Vec<Unit> = tokenized.units(WindowStart::default(), 4).collect();
        assert_eq!(units.len(), 2);
        assert!(units[0].at_word_boundaries);
        assert!(
            !tokenized
                .units(WindowStart::default(), 2)
                .next()
                .unwrap()
                .at_word_boundaries
        );
        // A window may start at any piece; a piece past the last is the last.
        let from = |piece| {
            tokenized
                .units(WindowStart { sentence: 0, piece }, 4)
                .next()
                .unwrap()
                .tokens
        };
        assert_eq!((from(1), from(7)), (4..6, 4..6));
    }

    #[test]
    fn the_bytes_of_one_character_and_spaces_inside_a_token_are_read_right() {
        // Byte fallback: three tokens for "’" after a space share one offset;
        // only the first starts a word. "▁dog" carries its space.
        let text = "a ’ dog";
        let offsets = vec![(0, 1), (2, 5), (2, 5), (2, 5), (5, 9)];
        assert_eq!(
            word_starts(text, &offsets, &[0; 5]),
            [true, true, false, false, true]
        );
    }
}
