//! Token texts as a reader reads them. A tokenizer's vocabulary spells
//! its tokens in its own code: byte-level BPE (GPT-2, RoBERTa, SmolLM2,
//! Qwen, Llama 3) writes every byte through GPT-2's byte-to-unicode table,
//! so a space is `Ġ` and a newline `Ċ`; SentencePiece (Llama 2, Gemma,
//! XLM-R) writes a space as `▁` and a byte it has no piece for as
//! `<0x0A>`; WordPiece (BERT) marks a piece that continues a word with
//! `##`. [`VocabularyStyle::readable`] turns each into one plain form:
//!
//! - the text itself, decoded (`Ġkeeper` → `keeper`, `Ã©` → `é`);
//! - a word-start mark [`WORD_START`] (`·`) where a word begins: the space
//!   before it for byte-level BPE and SentencePiece, the absence of `##`
//!   for WordPiece (`the` → `·the`, `##ing` → `ing`); any other space is
//!   the same mark, since it is a space;
//! - newline and tab as [`NEWLINE`] (`↵`) and [`TAB`] (`⇥`), a carriage
//!   return as `⇤`, other control characters and bytes that are only part
//!   of a character (a multi-byte character cut between tokens) as
//!   `<0xE6>`, the way SentencePiece writes them;
//! - special tokens as they are (`[CLS]`, `<s>`, `<|im_start|>`).
//!
//! The style is read from the tokenizer's decoder (or else its
//! pre-tokenizer) when the model loads ([`VocabularyStyle::of_tokenizer`])
//! and travels with the tokens; a capture file, which stores only the
//! texts, has it guessed from them ([`VocabularyStyle::guess`]).
//!
//! Pure: JSON values in, strings out; no GUI and no tensor code.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

/// Shown before a token that starts a word, and for any other space.
pub const WORD_START: char = '·';
/// Shown for a newline.
pub const NEWLINE: char = '↵';
/// Shown for a tab.
pub const TAB: char = '⇥';
/// Shown for a carriage return (back to the line's start; `␍` is in
/// neither of the fonts the app and the figures draw with).
pub const CARRIAGE_RETURN: char = '⇤';

/// How a vocabulary spells its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VocabularyStyle {
    /// Tokens are plain text (or the style is unknown): only whitespace
    /// and control characters are made visible.
    #[default]
    Plain,
    /// Byte-level BPE: every byte through GPT-2's byte-to-unicode table
    /// (`Ġ` a space, `Ċ` a newline).
    ByteLevel,
    /// SentencePiece: `▁` a space, `<0x0A>` a byte.
    Metaspace,
    /// WordPiece: `##` before a piece that continues a word.
    WordPiece,
}

impl VocabularyStyle {
    /// The style of a `tokenizer.json`, from its `decoder` (the rule that
    /// turns tokens back into text) or, without one that tells, its
    /// `pre_tokenizer`: `ByteLevel`, `Metaspace` (or a `Replace` of `▁`,
    /// as Llama's and Gemma's decoders write it), `WordPiece`
    /// (`BertPreTokenizer`), looked for inside a `Sequence`.
    pub fn of_tokenizer(decoder: Option<&Value>, pre_tokenizer: Option<&Value>) -> Self {
        decoder
            .and_then(of_component)
            .or_else(|| pre_tokenizer.and_then(of_component))
            .unwrap_or_default()
    }

    /// The style that texts of a tokenizer's tokens show, for texts
    /// whose tokenizer is unknown (a capture file): a token holding `Ġ`
    /// or `Ċ` is byte-level, one starting with `▁` or a `<0x..>` byte
    /// token SentencePiece, one starting with `##` WordPiece.
    pub fn guess<S: AsRef<str>>(texts: &[S]) -> Self {
        let any = |test: &dyn Fn(&str) -> bool| texts.iter().any(|t| test(t.as_ref()));
        if any(&|t| t.contains(['Ġ', 'Ċ'])) {
            Self::ByteLevel
        } else if any(&|t| t.starts_with('▁') || byte_token(t).is_some()) {
            Self::Metaspace
        } else if any(&|t| t.len() > 2 && t.starts_with("##")) {
            Self::WordPiece
        } else {
            Self::Plain
        }
    }

    /// A token's text as a reader reads it (the module doc says how).
    /// The special tokens of each style come out as they are (`[CLS]`,
    /// `<s>`, `<|im_start|>`): those of byte-level BPE and SentencePiece
    /// are spelled in plain ASCII, WordPiece's in square brackets.
    pub fn readable(self, raw: &str) -> String {
        match self {
            Self::Plain => visible(raw),
            Self::ByteLevel => visible(&from_bytes(&byte_level_bytes(raw))),
            Self::Metaspace => match byte_token(raw) {
                Some(byte) => visible(&from_bytes(&[byte])),
                None => visible(&raw.replace('▁', " ")),
            },
            Self::WordPiece => match raw.strip_prefix("##").filter(|rest| !rest.is_empty()) {
                Some(rest) => visible(rest),
                // BERT's pre-tokenizer splits punctuation off whether a
                // space was before it or not: the vocabulary cannot tell,
                // and most often there was none.
                None if is_punctuation(raw) || is_bracketed(raw) => visible(raw),
                None => format!("{WORD_START}{}", visible(raw)),
            },
        }
    }

    /// Whether a token continues the word before it: its readable text
    /// has no word-start mark, and it is not one of WordPiece's bracketed
    /// tokens (`[UNK]` stands for a whole word).
    pub fn continues_word(self, raw: &str) -> bool {
        let whole_word = self == Self::WordPiece && is_bracketed(raw);
        !whole_word && !self.readable(raw).starts_with(WORD_START)
    }
}

/// The style one tokenizer component (`decoder` or `pre_tokenizer`) gives.
fn of_component(value: &Value) -> Option<VocabularyStyle> {
    match value["type"].as_str()? {
        "ByteLevel" => Some(VocabularyStyle::ByteLevel),
        "Metaspace" => Some(VocabularyStyle::Metaspace),
        "WordPiece" | "BertPreTokenizer" => Some(VocabularyStyle::WordPiece),
        "Replace" if value["pattern"]["String"].as_str() == Some("▁") => {
            Some(VocabularyStyle::Metaspace)
        }
        "Sequence" => ["decoders", "pretokenizers"]
            .iter()
            .filter_map(|key| value[*key].as_array())
            .flatten()
            .find_map(of_component),
        _ => None,
    }
}

/// The byte of a SentencePiece byte token (`<0x0A>` → 10).
fn byte_token(raw: &str) -> Option<u8> {
    let hex = raw.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2)
        .then(|| u8::from_str_radix(hex, 16).ok())
        .flatten()
}

/// GPT-2's byte-to-unicode table read backwards: the bytes a byte-level
/// token stands for. Printable Latin-1 bytes stand for themselves; the
/// others (controls, space, 127–160, the soft hyphen) were moved to
/// U+0100 onwards, in byte order. A character outside the table (an added
/// token's) stands for its own UTF-8 bytes.
fn byte_level_bytes(raw: &str) -> Vec<u8> {
    static MOVED: OnceLock<Vec<u8>> = OnceLock::new();
    let moved = MOVED.get_or_init(|| (0..=255u8).filter(|&b| !stands_for_itself(b)).collect());
    let mut bytes = Vec::with_capacity(raw.len());
    for c in raw.chars() {
        let code = c as u32;
        match u8::try_from(code) {
            Ok(b) if stands_for_itself(b) => bytes.push(b),
            _ => match code
                .checked_sub(256)
                .and_then(|k| moved.get(k as usize).copied())
            {
                Some(b) => bytes.push(b),
                None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            },
        }
    }
    bytes
}

/// The bytes GPT-2's table maps to the character of the same code.
fn stands_for_itself(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// Bytes as text, each byte that is not part of a whole character
/// written `<0xE6>`.
fn from_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("<0x{b:02X}>"));
        }
    }
    out
}

/// Whitespace and control characters made visible.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ' ' => out.push(WORD_START),
            '\n' => out.push(NEWLINE),
            '\t' => out.push(TAB),
            '\r' => out.push(CARRIAGE_RETURN),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("<0x{:02X}>", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// WordPiece's special tokens and reserved slots: `[CLS]`, `[unused0]`.
fn is_bracketed(text: &str) -> bool {
    text.len() > 2 && text.starts_with('[') && text.ends_with(']')
}

/// Punctuation or symbols only (`.`, `,`, `$`), not a word.
fn is_punctuation(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_alphanumeric() && !c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use VocabularyStyle::*;

    #[test]
    fn byte_level_tokens_are_decoded_through_gpt2s_table() {
        let read = |raw: &str| ByteLevel.readable(raw);
        assert_eq!(read("Ġkeeper"), "·keeper");
        assert_eq!(read("The"), "The");
        assert_eq!(read("Ċ"), "↵");
        assert_eq!(read("ĊĊ"), "↵↵");
        assert_eq!(read("ĉ"), "⇥");
        assert_eq!(read("ĠĠĠ"), "···");
        assert_eq!(read("čĊ"), "⇤↵");
        // "é" is two bytes, C3 A9, each a character of the table.
        assert_eq!(read("Ã©"), "é");
        assert_eq!(read("ĠcafÃ©"), "·café");
        // "日" (E6 97 A5) cut between two tokens: the bytes alone.
        assert_eq!(read("æĹ"), "<0xE6><0x97>");
        assert_eq!(read("¥"), "<0xA5>");
        // Byte 0 (U+0100) is a control character.
        assert_eq!(read("Ā"), "<0x00>");
        // Byte AD is moved, to U+0143; the soft hyphen is C2 AD.
        assert_eq!(read("Ń"), "<0xAD>");
        assert_eq!(read("ÂŃ"), "\u{AD}");
        // An added token outside the table is itself.
        assert_eq!(read("<|im_start|>"), "<|im_start|>");
        assert_eq!(read("🙂"), "🙂");
    }

    #[test]
    fn sentencepiece_spaces_and_byte_tokens_are_read() {
        let read = |raw: &str| Metaspace.readable(raw);
        assert_eq!(read("▁the"), "·the");
        assert_eq!(read("ing"), "ing");
        assert_eq!(read("▁"), "·");
        assert_eq!(read("▁New▁York"), "·New·York");
        assert_eq!(read("<0x0A>"), "↵");
        assert_eq!(read("<0x09>"), "⇥");
        assert_eq!(read("<0x41>"), "A");
        assert_eq!(read("<0xE6>"), "<0xE6>");
        assert_eq!(read("<0x0>"), "<0x0>");
    }

    #[test]
    fn word_pieces_mark_the_words_they_start() {
        let read = |raw: &str| WordPiece.readable(raw);
        assert_eq!(read("the"), "·the");
        assert_eq!(read("##ing"), "ing");
        assert_eq!(read("##"), "##");
        assert_eq!(read("."), ".");
        assert_eq!(read("'"), "'");
        assert_eq!(read("[SEP]"), "[SEP]");
        assert_eq!(read("[unused3]"), "[unused3]");
        assert!(WordPiece.continues_word("##ing") && WordPiece.continues_word("."));
        assert!(!WordPiece.continues_word("the") && !WordPiece.continues_word("[UNK]"));
    }

    #[test]
    fn plain_tokens_only_show_their_whitespace() {
        assert_eq!(Plain.readable("Ġthe"), "Ġthe");
        assert_eq!(Plain.readable(" the\n"), "·the↵");
        assert_eq!(Plain.readable("a\u{7}"), "a<0x07>");
    }

    #[test]
    fn the_style_is_read_from_decoder_then_pre_tokenizer() {
        let style = |decoder: Value, pre: Value| {
            VocabularyStyle::of_tokenizer(Some(&decoder).filter(|v| !v.is_null()), Some(&pre))
        };
        assert_eq!(style(json!({"type": "ByteLevel"}), Value::Null), ByteLevel);
        assert_eq!(
            style(json!({"type": "WordPiece", "prefix": "##"}), Value::Null),
            WordPiece
        );
        let llama = json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]});
        assert_eq!(style(llama, Value::Null), Metaspace);
        assert_eq!(
            style(Value::Null, json!({"type": "BertPreTokenizer"})),
            WordPiece
        );
        let qwen = json!({"type": "Sequence", "pretokenizers": [
            {"type": "Split"}, {"type": "ByteLevel"}]});
        assert_eq!(style(json!({"type": "Fuse"}), qwen), ByteLevel);
        assert_eq!(style(Value::Null, json!({"type": "Whitespace"})), Plain);
    }

    #[test]
    fn the_style_is_guessed_from_texts() {
        assert_eq!(VocabularyStyle::guess(&["<s>", "Ġthe"]), ByteLevel);
        assert_eq!(VocabularyStyle::guess(&["<s>", "<0x0A>"]), Metaspace);
        assert_eq!(VocabularyStyle::guess(&["▁the"]), Metaspace);
        assert_eq!(VocabularyStyle::guess(&["[CLS]", "##s"]), WordPiece);
        assert_eq!(VocabularyStyle::guess(&["[CLS]", "the"]), Plain);
    }
}
