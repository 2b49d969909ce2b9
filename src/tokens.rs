//! The token sequence the model sees, with what the analysis needs to know
//! about each position: its id and text, whether it is a special token, which
//! sentence it belongs to and where it came from in the user's text.
//!
//! Pure data: built by [`crate::input`], read by [`crate::analysis`] and the UI.
//! Every label a person reads shows a token as [`readable`] writes it
//! ([`TokenSequence::readable`]); the data written out (JSON, NPZ, CSV,
//! capture files) keeps the tokenizer's own text.

mod readable;

pub use readable::{VocabularyStyle, CARRIAGE_RETURN, NEWLINE, TAB, WORD_START};
use serde::{Deserialize, Serialize};

/// A special token: its vocabulary id and the tokenizer's text for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialToken {
    pub id: u32,
    pub text: String,
}

/// The tokens a model's input is built around, as its tokenizer's
/// post-processor adds them (ANALYSIS.md §8): `[CLS]`/`[SEP]` for BERT,
/// `<s>`/`</s>` for RoBERTa, at whatever ids the vocabulary gives them.
/// A causal decoder's input is the text as its tokenizer encodes it, with
/// the special tokens the tokenizer adds itself (a BOS, or none); its
/// separators are sentence-final tokens, so `start` and `separator` only
/// name its BOS (or first special token) and are never added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialTokens {
    /// The token that starts every sequence (`[CLS]`, `<s>`).
    pub start: SpecialToken,
    /// The token that closes every sentence (`[SEP]`, `</s>`).
    pub separator: SpecialToken,
    /// The padding token, never content either.
    pub pad: Option<u32>,
    /// Whether the input is a decoder's (ANALYSIS.md §8): the text encoded
    /// once, separators at sentence ends. Its attention is causal unless
    /// `bidirectional_decoder`.
    #[serde(default)]
    pub causal: bool,
    /// A decoder family whose attention goes both ways (EmbeddingGemma):
    /// a decoder's input, an encoder's attention and figures.
    #[serde(default)]
    pub bidirectional_decoder: bool,
    /// Decoders: every special token of the tokenizer (BOS, EOS, chat
    /// markers), never content wherever it stands.
    #[serde(default)]
    pub special_ids: Vec<u32>,
    /// How the tokenizer spells its tokens, which decides how they are
    /// shown (read from it when the model loads).
    #[serde(default)]
    pub style: VocabularyStyle,
}

impl SpecialTokens {
    /// Whether a query sees only the keys up to itself.
    pub fn causal_attention(&self) -> bool {
        self.causal && !self.bidirectional_decoder
    }

    /// Whether an id is one of these tokens: never a content token.
    pub fn contains(&self, id: u32) -> bool {
        if self.causal {
            return self.special_ids.contains(&id) || self.pad == Some(id);
        }
        id == self.start.id || id == self.separator.id || self.pad == Some(id)
    }
}

/// One model input: `[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]` in document mode
/// (`<s> s1 </s> … </s>` for the RoBERTa family), or for a causal decoder
/// the text as its tokenizer encodes it (`<s> s1 s2 … sn` for Llama).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenSequence {
    /// Vocabulary ids, one per position.
    pub input_ids: Vec<u32>,
    /// The tokenizer's text for each position (`[CLS]`, `harbour`, `##s`,
    /// `<s>`, ...).
    pub token_texts: Vec<String>,
    /// Start, separator and padding positions (`[CLS]`, `[SEP]`, `[PAD]`;
    /// `<s>`, `</s>`, `<pad>`), those written in the text included;
    /// everything else is a content token.
    pub special: Vec<bool>,
    /// Sentence index of each position; `None` for `[CLS]` and for special
    /// tokens written in the text. The `[SEP]` that closes sentence k has
    /// sentence id k.
    pub sentence_ids: Vec<Option<usize>>,
    /// Byte range of each position in the analysed text (`None` for the
    /// special tokens the input adds).
    pub offsets: Vec<Option<(usize, usize)>>,
    /// Id of the separator token (`[SEP]`, `</s>`), used to find the
    /// separator keys.
    pub sep_id: u32,
    /// Id of the start token (`[CLS]`, `<s>`).
    pub cls_id: u32,
    /// The input of a causal decoder: a query sees only the keys up to
    /// itself, and the separators are each sentence's last token, not
    /// tokens of `sep_id` (ANALYSIS.md §8).
    #[serde(default)]
    pub causal: bool,
    /// A decoder's input whose attention goes both ways (EmbeddingGemma):
    /// `causal` is false, but the separators are each sentence's last
    /// content token, as a decoder's (ANALYSIS.md §8).
    #[serde(default)]
    pub bidirectional_decoder: bool,
    /// How the tokenizer spells `token_texts`, for showing them.
    #[serde(default)]
    pub style: VocabularyStyle,
}

impl TokenSequence {
    /// Number of positions T.
    pub fn len(&self) -> usize {
        self.input_ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.input_ids.is_empty()
    }

    /// Positions of content tokens (not `[CLS]`, `[SEP]` or `[PAD]`), ascending.
    pub fn content_positions(&self) -> Vec<usize> {
        (0..self.len()).filter(|&i| !self.special[i]).collect()
    }

    /// Positions of the separators, ascending: those whose id is the
    /// separator id, or for a causal decoder each sentence's last content
    /// token (ANALYSIS.md §8).
    pub fn separator_positions(&self) -> Vec<usize> {
        if self.sentence_final_separators() {
            let content = self.content_positions();
            return content
                .iter()
                .enumerate()
                .filter(|&(a, &i)| {
                    content
                        .get(a + 1)
                        .is_none_or(|&next| self.sentence_ids[next] != self.sentence_ids[i])
                })
                .map(|(_, &i)| i)
                .collect();
        }
        (0..self.len())
            .filter(|&i| self.input_ids[i] == self.sep_id)
            .collect()
    }

    /// Whether the separators are sentence-final content tokens (a
    /// decoder's input, causal or not) rather than tokens of `sep_id`.
    pub fn sentence_final_separators(&self) -> bool {
        self.causal || self.bidirectional_decoder
    }

    /// Positions whose id is the classifier id (a decoder's BOS).
    pub fn cls_positions(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.input_ids[i] == self.cls_id)
            .collect()
    }

    /// The first position that holds `token_id`, if any.
    fn first_position(&self, token_id: u32) -> Option<usize> {
        self.input_ids.iter().position(|&id| id == token_id)
    }

    /// Text of the first position that holds `token_id`, if any.
    pub fn text_of(&self, token_id: u32) -> Option<&str> {
        self.first_position(token_id)
            .map(|i| self.token_texts[i].as_str())
    }

    /// The token at `position` as a reader reads it (`Ġkeeper` →
    /// `·keeper`, `Ċ` → `↵`, [`VocabularyStyle::readable`]); a special
    /// token (`[CLS]`, `<s>`) as the tokenizer writes it; `?` past the end.
    pub fn readable(&self, position: usize) -> String {
        match self.token_texts.get(position) {
            Some(raw) if self.special.get(position) == Some(&true) => raw.clone(),
            Some(raw) => self.style.readable(raw),
            None => "?".into(),
        }
    }

    /// [`TokenSequence::readable`] of the first position that holds
    /// `token_id`, if any.
    pub fn readable_of(&self, token_id: u32) -> Option<String> {
        self.first_position(token_id).map(|i| self.readable(i))
    }

    /// Every token as [`TokenSequence::readable`] shows it, and whether
    /// it continues the word before it.
    pub fn readable_tokens(&self) -> ReadableTokens {
        let texts: Vec<String> = (0..self.len()).map(|i| self.readable(i)).collect();
        let content = |i: usize| self.special.get(i) == Some(&false);
        let continues_word = (0..texts.len())
            .map(|i| {
                i > 0
                    && content(i)
                    && content(i - 1)
                    && self.style.continues_word(&self.token_texts[i])
                    && !texts[i - 1].ends_with(NEWLINE)
            })
            .collect();
        ReadableTokens {
            texts,
            continues_word,
        }
    }

    /// The token `token_id` for a tooltip: its readable text, the
    /// tokenizer's own and the id (`“·the” (Ġthe, id 262)`); the id alone
    /// when no position holds it.
    pub fn describe_id(&self, token_id: u32) -> String {
        match self.first_position(token_id) {
            Some(i) => format!(
                "“{}” ({}, id {token_id})",
                self.readable(i),
                self.token_texts[i]
            ),
            None => format!("id {token_id}"),
        }
    }

    /// What hovering the token at `position` tells besides its readable
    /// text: the tokenizer's own text and the vocabulary id
    /// (`“Ġkeeper” · id 19323`).
    pub fn raw_and_id(&self, position: usize) -> String {
        match (self.token_texts.get(position), self.input_ids.get(position)) {
            (Some(raw), Some(id)) => format!("“{raw}” · id {id}"),
            _ => "?".into(),
        }
    }

    /// Whether the token at `position` is punctuation only (for the classic
    /// per-head statistics). The word-start marks of byte-level BPE (`Ġ`,
    /// RoBERTa) and SentencePiece (`▁`, XLM-R, ALBERT) are not part of the
    /// token's text: `Ġ,` is a comma, a lone `▁` is not punctuation.
    pub fn is_punctuation(&self, position: usize) -> bool {
        !self.special[position] && {
            let t = &self.token_texts[position];
            let t = t.strip_prefix(WORD_START_MARKS).unwrap_or(t);
            !t.is_empty()
                && t.chars().all(|c| {
                    c.is_ascii_punctuation()
                        || (!c.is_alphanumeric() && !c.is_whitespace() && c != '#')
                })
        }
    }
}

/// What a person reads of a token sequence, made once per result: each
/// token's readable text ([`TokenSequence::readable`]) and whether it
/// continues the word before it ([`VocabularyStyle::continues_word`],
/// both content tokens, not after a newline), so a text drawn token by
/// token reads as words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadableTokens {
    pub texts: Vec<String>,
    pub continues_word: Vec<bool>,
}

/// What byte-level BPE (`Ġ`) and SentencePiece (`▁`) tokenizers put before a
/// token that starts a word.
const WORD_START_MARKS: [char; 2] = ['Ġ', '▁'];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_ignores_word_start_marks() {
        let texts = ["[CLS]", ",", "Ġ,", "▁.", "▁", "Ġthe", "##s", "[SEP]"];
        let tokens = TokenSequence {
            input_ids: (0..texts.len() as u32).collect(),
            token_texts: texts.iter().map(|t| t.to_string()).collect(),
            special: texts.iter().map(|t| t.starts_with('[')).collect(),
            ..Default::default()
        };
        let punctuation: Vec<bool> = (0..texts.len()).map(|i| tokens.is_punctuation(i)).collect();
        assert_eq!(
            punctuation,
            [false, true, true, true, false, false, false, false]
        );
    }

    #[test]
    fn special_tokens_show_as_they_are_and_words_glue() {
        // <s> The ▁cat s ▁sat . <0x0A> It
        let texts = ["<s>", "The", "▁cat", "s", "▁sat", ".", "<0x0A>", "It"];
        let tokens = TokenSequence {
            input_ids: (0..texts.len() as u32).collect(),
            token_texts: texts.iter().map(|t| t.to_string()).collect(),
            special: (0..texts.len()).map(|i| i == 0).collect(),
            style: VocabularyStyle::Metaspace,
            ..Default::default()
        };
        let shown = tokens.readable_tokens();
        assert_eq!(
            shown.texts,
            ["<s>", "The", "·cat", "s", "·sat", ".", "↵", "It"]
        );
        assert_eq!(
            shown.continues_word,
            [false, false, false, true, false, true, true, false]
        );
        assert_eq!(tokens.readable(8), "?");
        assert_eq!(tokens.raw_and_id(2), "“▁cat” · id 2");
        assert_eq!(tokens.describe_id(4), "“·sat” (▁sat, id 4)");
        assert_eq!(tokens.describe_id(99), "id 99");
        assert_eq!(tokens.readable_of(3).as_deref(), Some("s"));
    }

    #[test]
    fn a_causal_inputs_separators_are_sentence_final_tokens() {
        // <s> The cat . It <s-in-text> ran .
        let tokens = TokenSequence {
            input_ids: vec![1, 10, 11, 12, 13, 1, 14, 12],
            token_texts: vec!["".into(); 8],
            special: vec![true, false, false, false, false, true, false, false],
            sentence_ids: vec![
                None,
                Some(0),
                Some(0),
                Some(0),
                Some(1),
                None,
                Some(1),
                Some(1),
            ],
            causal: true,
            cls_id: 1,
            sep_id: 1,
            ..Default::default()
        };
        assert_eq!(tokens.separator_positions(), [3, 7]);
        assert_eq!(tokens.cls_positions(), [0, 5]);
    }
}
