//! Find in the whole text: every match of a query with the sentence it
//! starts in, and the short lines the outline panel lists them and the
//! sentences by. Plain string work, run off the UI thread for a large
//! text (a 10 MB book is searched in tens of milliseconds).

use std::ops::Range;

/// Characters of context on each side of a match in its row.
const CONTEXT: usize = 24;
/// Characters of a sentence shown in its row.
const PREVIEW: usize = 90;

/// A match of the query: its bytes in the text and its sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindMatch {
    pub bytes: Range<usize>,
    pub sentence: usize,
}

/// Every match of `query` in `text` (ASCII letters in either case), in
/// order, each with the sentence it starts in (the last whose span starts
/// at or before it).
pub fn find_all(text: &str, spans: &[(usize, usize)], query: &str) -> Vec<FindMatch> {
    let query = query.to_ascii_lowercase();
    if query.is_empty() {
        return Vec::new();
    }
    // ASCII lowering keeps every byte where it was, so offsets hold.
    let lowered = text.to_ascii_lowercase();
    lowered
        .match_indices(&query)
        .map(|(at, found)| FindMatch {
            bytes: at..at + found.len(),
            sentence: spans
                .partition_point(|&(start, _)| start <= at)
                .saturating_sub(1),
        })
        .collect()
}

/// `s` on one line: every run of whitespace one space.
fn one_line(s: &str) -> String {
    let mut line = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_whitespace() {
            line.push(c);
        } else if !line.ends_with(' ') {
            line.push(' ');
        }
    }
    line
}

/// `text` around `bytes`, on one line: "…before [match] after…".
pub fn context(text: &str, bytes: &Range<usize>) -> String {
    let before = &text[..bytes.start];
    let start = before
        .char_indices()
        .rev()
        .nth(CONTEXT - 1)
        .map_or(0, |(i, _)| i);
    let after = &text[bytes.end..];
    let end = bytes.end
        + after
            .char_indices()
            .nth(CONTEXT)
            .map_or(after.len(), |(i, _)| i);
    format!(
        "{}{}[{}]{}{}",
        if start > 0 { "…" } else { "" },
        one_line(&text[start..bytes.start]).trim_start(),
        &text[bytes.clone()],
        one_line(&text[bytes.end..end]).trim_end(),
        if end < text.len() { "…" } else { "" }
    )
}

/// The first characters of the sentence at `span`, on one line.
pub fn preview(text: &str, (start, end): (usize, usize)) -> String {
    let sentence = &text[start..end];
    let cut = sentence
        .char_indices()
        .nth(PREVIEW)
        .map_or(sentence.len(), |(i, _)| i);
    let line = one_line(&sentence[..cut]);
    if cut < sentence.len() {
        format!("{line}…")
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_lists_every_match_in_either_case_with_its_sentence() {
        let text = "One Zeppelin. Two ships.\nA zeppelin, then ZEPPELIN. Ünïcode zeppelin";
        let spans = crate::input::split_sentences(text, crate::input::InputMode::Document);
        let found = find_all(text, &spans, "zePPelin");
        let at: Vec<usize> = found.iter().map(|m| m.bytes.start).collect();
        let expected: Vec<usize> = text.match_indices(['Z', 'z']).map(|(i, _)| i).collect();
        assert_eq!(at, expected);
        let sentences: Vec<usize> = found.iter().map(|m| m.sentence).collect();
        assert_eq!(sentences, [0, 2, 2, 3]);
        assert_eq!(&text[found[2].bytes.clone()], "ZEPPELIN");
        assert_eq!(
            context(text, &found[1].bytes),
            "…Zeppelin. Two ships. A [zeppelin], then ZEPPELIN. Ünïcode…"
        );
        assert!(find_all(text, &spans, "").is_empty());
    }

    #[test]
    fn a_preview_is_one_line_cut_after_its_characters() {
        let text = "Short\nline. ".to_string() + &"é".repeat(200);
        assert_eq!(preview(&text, (0, 11)), "Short line.");
        let long = preview(&text, (0, text.len()));
        assert_eq!(long.chars().count(), PREVIEW + 1);
        assert!(long.ends_with("é…"));
    }
}
