//! Sentences of a text as people write it (ANALYSIS.md §1).
//!
//! Unicode's sentence boundaries (UAX #29) end a sentence at every line
//! break, which cuts hard-wrapped text — a licence, a Project Gutenberg
//! book, an e-mail, a paper pasted from a PDF — in the middle of its
//! sentences. Document mode therefore reads a line break inside a
//! paragraph as a space and keeps it as a boundary only after a blank line
//! or before a line that starts a list item or a Markdown heading; the
//! boundaries come from UAX #29 on that reading, so a wrapped line that
//! ends a sentence (`… dawn.⏎A fisherman`) still ends it there. Byte
//! offsets stay those of the original text: the joined reading replaces
//! each line-break byte by one space byte.
//!
//! An encoder tokenizes each sentence on its own; [`sentence_text`] gives
//! it the sentence with each joined line break, and the spaces around it,
//! read as one space, and a map of its bytes back into the text.

use std::borrow::Cow;
use unicode_segmentation::UnicodeSegmentation;

/// UAX #29 sentence pieces of `text` with the line breaks inside its
/// paragraphs read as spaces: `(byte offset, piece)` with the original
/// text's bytes.
pub(super) fn document_pieces(text: &str) -> Vec<(usize, &str)> {
    let joined = joined_reading(text);
    joined
        .split_sentence_bound_indices()
        .map(|(start, piece)| (start, &text[start..start + piece.len()]))
        .collect()
}

/// `text` with every line break that does not end a paragraph, a list
/// item or a heading's predecessor replaced by spaces (one per byte, so
/// every offset is unchanged).
fn joined_reading(text: &str) -> Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut at = 0;
    while at < bytes.len() {
        let len = match bytes[at] {
            b'\r' if bytes.get(at + 1) == Some(&b'\n') => 2,
            b'\r' | b'\n' => 1,
            _ => {
                at += 1;
                continue;
            }
        };
        let before = line_before(text, at);
        let after = line_after(text, at + len);
        if !ends_paragraph(before, after) {
            out[at..at + len].fill(b' ');
        }
        at += len;
    }
    // Only ASCII line-break bytes became ASCII spaces: still UTF-8.
    Cow::Owned(String::from_utf8(out).expect("line breaks replaced by spaces stay UTF-8"))
}

/// The line that ends at byte `end` (without its line break).
fn line_before(text: &str, end: usize) -> &str {
    let start = text[..end].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    &text[start..end]
}

/// The line that starts at byte `start` (without its line break).
fn line_after(text: &str, start: usize) -> &str {
    let rest = &text[start..];
    &rest[..rest.find(['\n', '\r']).unwrap_or(rest.len())]
}

/// Whether the line break between `before` and `after` is a boundary of
/// its own: a blank line on either side, or a list item or a heading
/// after it.
fn ends_paragraph(before: &str, after: &str) -> bool {
    before.trim().is_empty() || after.trim().is_empty() || starts_block(after.trim_start())
}

/// Whether a line (leading spaces removed) starts a list item (`-`, `*`,
/// `•`, `1.`, `1)`, `a)`) or a Markdown heading (`#`).
fn starts_block(line: &str) -> bool {
    let followed_by_space =
        |rest: &str| rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace());
    if let Some(rest) = line.strip_prefix(['-', '*', '•']).or_else(|| {
        line.strip_prefix(|c| c == '#')
            .map(|r| r.trim_start_matches('#'))
    }) {
        return followed_by_space(rest);
    }
    // A number of at most three digits (a year that wraps to a line's
    // start is no list item) or one letter, then `.` or `)`.
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let marker_len = match digits {
        1..=3 => digits,
        0 => line
            .chars()
            .next()
            .filter(char::is_ascii_alphabetic)
            .map_or(0, |_| 1),
        _ => 0,
    };
    if marker_len == 0 {
        return false;
    }
    let rest = &line[marker_len..];
    let closed = if digits > 0 {
        rest.strip_prefix(['.', ')'])
    } else {
        // A letter closed by `)` only: `I.` or `A.` at a wrapped line's
        // start is an initial or a pronoun, not a list.
        rest.strip_prefix(')')
    };
    closed.is_some_and(|rest| !rest.is_empty() && followed_by_space(rest))
}

/// The text an encoder tokenizes for the sentence `text[start..end]`:
/// each run of whitespace that holds a line break read as one space, and
/// for each of its bytes the offset in `text` it came from (one more
/// entry, `end`, for offsets that end the sentence). Borrowed, with no
/// map, where the sentence has no line break.
pub(super) fn sentence_text(
    text: &str,
    start: usize,
    end: usize,
) -> (Cow<'_, str>, Option<Vec<usize>>) {
    let sentence = &text[start..end];
    if !sentence.contains(['\n', '\r']) {
        return (Cow::Borrowed(sentence), None);
    }
    let mut read = String::with_capacity(sentence.len());
    let mut origin = Vec::with_capacity(sentence.len() + 1);
    let mut chars = sentence.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            // The whole run of whitespace from here.
            let mut run_end = i + c.len_utf8();
            let mut has_break = matches!(c, '\n' | '\r');
            while let Some(&(j, d)) = chars.peek() {
                if !d.is_whitespace() {
                    break;
                }
                has_break |= matches!(d, '\n' | '\r');
                run_end = j + d.len_utf8();
                chars.next();
            }
            if has_break {
                read.push(' ');
                origin.push(start + i);
                continue;
            }
            // Whitespace without a line break stays as written.
            origin.extend(start + i..start + run_end);
            read.push_str(&sentence[i..run_end]);
            continue;
        }
        origin.extend(start + i..start + i + c.len_utf8());
        read.push(c);
    }
    origin.push(end);
    (Cow::Owned(read), Some(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentences(text: &str) -> Vec<&str> {
        document_pieces(text)
            .into_iter()
            .map(|(_, piece)| piece.trim())
            .filter(|piece| !piece.is_empty())
            .collect()
    }

    #[test]
    fn a_wrapped_line_continues_its_sentence() {
        let text = "The licences for most software are designed to take away\nyour freedom to share and change it.  By contrast,\nthe GNU General Public License is intended to guarantee it.\n";
        assert_eq!(
            sentences(text),
            [
                "The licences for most software are designed to take away\nyour freedom to share and change it.",
                "By contrast,\nthe GNU General Public License is intended to guarantee it."
            ]
        );
    }

    #[test]
    fn a_line_that_ends_a_sentence_still_ends_it() {
        let text = "The harbour was quiet.\nA fisherman rowed out.\r\nGulls followed.";
        assert_eq!(
            sentences(text),
            [
                "The harbour was quiet.",
                "A fisherman rowed out.",
                "Gulls followed."
            ]
        );
    }

    #[test]
    fn paragraphs_lists_and_headings_end_sentences() {
        let text = "# Notes\nIntro without a stop\n\nA paragraph without one\n- first item\n- second item\n2. numbered\na) lettered\nand wrapped\n  * indented star";
        assert_eq!(
            sentences(text),
            [
                "# Notes\nIntro without a stop",
                "A paragraph without one",
                "- first item",
                "- second item",
                "2. numbered",
                "a) lettered\nand wrapped",
                "* indented star"
            ]
        );
    }

    #[test]
    fn a_year_or_a_word_at_a_line_start_is_no_list_item() {
        let text = "It was founded in\n2020. and grew\na lot since.";
        assert_eq!(
            sentences(text),
            ["It was founded in\n2020. and grew\na lot since."]
        );
        assert!(!starts_block("2020. x"));
        assert!(!starts_block("-5 degrees"));
        assert!(starts_block("12) twelve"));
        assert!(starts_block("## Heading"));
    }

    #[test]
    fn offsets_are_the_original_texts() {
        let text = "One line\r\nwrapped here. Two.";
        let pieces = document_pieces(text);
        assert_eq!(pieces[0], (0, "One line\r\nwrapped here. "));
        assert_eq!(pieces[1], (24, "Two."));
    }

    #[test]
    fn the_tokenized_text_reads_a_line_break_as_one_space() {
        let text = "x  A wrapped  \r\n   line ends.";
        let (read, origin) = sentence_text(text, 3, text.len());
        assert_eq!(read, "A wrapped line ends.");
        let origin = origin.unwrap();
        assert_eq!(origin.len(), read.len() + 1);
        // "line" starts at 10 in the reading, at 19 in the text.
        assert_eq!(origin[10], 19);
        assert_eq!(&text[origin[10]..origin[14]], "line");
        // The joining space comes from the first whitespace of its run.
        assert_eq!(origin[9], 12);
        assert_eq!(*origin.last().unwrap(), text.len());
        let (plain, map) = sentence_text(text, 3, 12);
        assert_eq!((plain.as_ref(), map), ("A wrapped", None));
    }
}
