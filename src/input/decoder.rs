//! A causal decoder's input (ANALYSIS.md §8): the text itself — the
//! sentences joined by one space with `--one-sentence-per-line`, else the
//! text as written — encoded once by the tokenizer with its own special
//! tokens. A token belongs to the sentence in which its first non-space
//! character lies (a token of whitespace alone, to the sentence that
//! follows); the separators are each sentence's last token. A window is
//! the tokenizer's leading special tokens (a BOS) and a run of whole
//! sentences (or pieces of one longer than a window); the trailing ones (an
//! EOS) close it only when it reaches the end of the text. Whitespace after the last sentence belongs to no
//! sentence and is left out: in a causal model nothing before it depends
//! on it.

use super::{tokenizer_error, InputError, InputMode, TokenizedText};
use crate::tokens::SpecialTokens;
use tokenizers::Tokenizer;

/// The text the decoder reads, and how its byte offsets map back to the
/// user's text: for each sentence, where it starts in both.
struct AnalysedText {
    text: String,
    /// (start in `text`, start in the user's text, length), per sentence.
    pieces: Vec<(usize, usize, usize)>,
    /// Whether `text` joins the lines (else it is the user's text).
    joined: bool,
}

impl AnalysedText {
    fn new(text: &str, spans: &[(usize, usize)], mode: InputMode) -> Self {
        if mode != InputMode::OneSentencePerLine {
            return Self {
                text: text.to_string(),
                pieces: spans.iter().map(|&(s, e)| (s, s, e - s)).collect(),
                joined: false,
            };
        }
        let mut joined = String::with_capacity(text.len());
        let mut pieces = Vec::with_capacity(spans.len());
        for &(s, e) in spans {
            if !joined.is_empty() {
                joined.push(' ');
            }
            pieces.push((joined.len(), s, e - s));
            joined.push_str(&text[s..e]);
        }
        Self {
            text: joined,
            pieces,
            joined: true,
        }
    }

    /// The sentence holding the first non-space character at or after
    /// byte `at`, if any.
    fn sentence_from(&self, at: usize) -> Option<usize> {
        let rest = self.text.get(at..)?;
        let first = at + rest.find(|c: char| !c.is_whitespace())?;
        let k = self.pieces.partition_point(|&(start, _, _)| start <= first);
        let (start, _, len) = *self.pieces.get(k.checked_sub(1)?)?;
        (first < start + len).then_some(k - 1)
    }

    /// A byte offset of the analysed text in the user's text (the space
    /// joining two lines maps to the end of the line before it).
    fn to_user(&self, at: usize) -> usize {
        if !self.joined {
            return at;
        }
        let k = self.pieces.partition_point(|&(start, _, _)| start <= at);
        match k.checked_sub(1).map(|k| self.pieces[k]) {
            Some((start, user, len)) => user + (at - start).min(len),
            None => self.pieces.first().map_or(at, |&(_, user, _)| user),
        }
    }
}

/// Tokenizes a text for a decoder: every token of a sentence into `into`
/// (whose sentence spans are set), the special tokens before the first
/// sentence into `leading`, those after the last into `trailing`.
pub(super) fn tokenize(
    tokenizer: &Tokenizer,
    text: &str,
    mode: InputMode,
    specials: &SpecialTokens,
    into: &mut TokenizedText,
) -> Result<(), InputError> {
    let analysed = AnalysedText::new(text, &into.spans, mode);
    let encoding = tokenizer
        .encode(analysed.text.as_str(), true)
        .map_err(tokenizer_error)?;
    let mask = encoding.get_special_tokens_mask();
    for (index, ((&id, token), &(s, e))) in encoding
        .get_ids()
        .iter()
        .zip(encoding.get_tokens())
        .zip(encoding.get_offsets())
        .enumerate()
    {
        let added = mask.get(index) == Some(&1) && s == e;
        let sentence = if added {
            None
        } else {
            analysed.sentence_from(s)
        };
        match sentence {
            Some(sentence) => into.push(
                id,
                token,
                (analysed.to_user(s), analysed.to_user(e)),
                sentence,
            ),
            None if added || specials.contains(id) => {
                let token = (id, token.clone());
                if into.ids.is_empty() {
                    into.leading.push(token);
                } else {
                    into.trailing.push(token);
                }
            }
            // Whitespace after the last sentence.
            None => {}
        }
    }
    Ok(())
}

/// Places the tokens `ids`, which decode to `text`, as [`tokenize`] places
/// a text's ([`super::TokenizedText::of_ids`]): each token's span is what
/// its prefix of `ids` adds to the decoded text (the longest start of
/// `text` that prefix decodes to, which a byte-level token cutting a
/// character in two does not reach).
pub(super) fn place_ids(
    tokenizer: &Tokenizer,
    text: &str,
    ids: &[u32],
    specials: &SpecialTokens,
    into: &mut TokenizedText,
) -> Result<(), InputError> {
    let analysed = AnalysedText::new(text, &into.spans, InputMode::Document);
    let last_sentence = into.spans.len().saturating_sub(1);
    let mut start = 0;
    for (index, &id) in ids.iter().enumerate() {
        let prefix = tokenizer
            .decode(&ids[..=index], false)
            .map_err(tokenizer_error)?;
        let end = common_start(&prefix, text).max(start);
        let token = tokenizer.id_to_token(id).unwrap_or_default();
        if into.ids.is_empty() && specials.contains(id) {
            into.leading.push((id, token));
        } else {
            let sentence = analysed.sentence_from(start).unwrap_or(last_sentence);
            into.push(id, &token, (start, end), sentence);
        }
        start = end;
    }
    Ok(())
}

/// The length in bytes of the longest common start of `a` and `b`.
fn common_start(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_joined_by_one_space_and_offsets_map_back() {
        let text = "  First line.\n\nSecond one.\n";
        let spans = super::super::split_sentences(text, InputMode::OneSentencePerLine);
        let analysed = AnalysedText::new(text, &spans, InputMode::OneSentencePerLine);
        assert_eq!(analysed.text, "First line. Second one.");
        // "Second" starts at 12 in the joined text, at 15 in the user's.
        assert_eq!(analysed.to_user(12), 15);
        assert_eq!(&text[analysed.to_user(0)..analysed.to_user(5)], "First");
        // The joining space goes to the end of the line before it.
        assert_eq!(analysed.to_user(11), 13);
        // A token of whitespace alone belongs to the sentence that follows.
        assert_eq!(analysed.sentence_from(11), Some(1));
        assert_eq!(analysed.sentence_from(3), Some(0));
        assert_eq!(analysed.sentence_from(23), None);
        // The user's own text maps to itself, whitespace included.
        let spans = super::super::split_sentences(text, InputMode::Document);
        let own = AnalysedText::new(text, &spans, InputMode::Document);
        assert_eq!((own.to_user(14), own.to_user(26)), (14, 26));
    }
}
