//! Tokens as a reader reads them, on the real tokenizers of the three
//! vocabulary styles: WordPiece (all-MiniLM-L6-v2), byte-level BPE
//! (SmolLM2-135M-Instruct) and SentencePiece with byte tokens (the Gemma
//! fixture), and GGUF files' tokenizers. The style is read from each
//! tokenizer when its model loads, and every token of a text is shown
//! decoded, with a word-start mark, newline and tab visible, and the bytes
//! of a cut character as `<0x..>`.

mod common;

use common::*;
use headscope::input::{build_input, InputMode};
use headscope::model::{Model, ModelSource};
use headscope::tokens::{TokenSequence, VocabularyStyle, NEWLINE, TAB, WORD_START};

const TEXT: &str = "The keepers' café:\n\tline 日本 🙂";

fn load(folder: &std::path::Path) -> Model {
    Model::load(&ModelSource::Folder(folder.to_path_buf()), &mut |_| {})
        .unwrap_or_else(|e| panic!("load {}: {e:#}", folder.display()))
}

/// `text` as the model's input, the tokenizer's own encoding of it.
fn tokens_of(model: &Model, text: &str) -> TokenSequence {
    build_input(
        &model.tokenizer,
        text,
        InputMode::Plain,
        model.max_tokens(),
        0,
        &model.specials,
    )
    .expect("the text becomes an input")
    .tokens
}

fn readable(tokens: &TokenSequence) -> Vec<String> {
    tokens.readable_tokens().texts
}

/// Undoes the marks of readable texts joined: the text they were cut from.
fn unmark(joined: &str) -> String {
    joined
        .replace(WORD_START, " ")
        .replace(NEWLINE, "\n")
        .replace(TAB, "\t")
}

#[test]
fn word_pieces_read_as_words() {
    let model = loaded_test_model();
    assert_eq!(model.specials.style, VocabularyStyle::WordPiece);
    let tokens = tokens_of(model, "The harbourmaster keepers' café: 🙂");
    assert_eq!(
        readable(&tokens),
        [
            "[CLS]",
            "·the",
            "·harbour",
            "master",
            "·keepers",
            "'",
            "·cafe",
            ":",
            "[UNK]",
            "[SEP]"
        ]
    );
    assert_eq!(
        tokens.raw_and_id(3),
        format!("“##master” · id {}", tokens.input_ids[3])
    );
    let words = tokens.readable_tokens();
    assert_eq!(
        words.continues_word,
        [false, false, false, true, false, true, false, true, false, false],
        "“master”, “'” and “:” continue a word, “[UNK]” stands for one"
    );
}

#[test]
fn byte_level_tokens_read_as_text() {
    let model = load(&smollm2_model());
    assert_eq!(model.specials.style, VocabularyStyle::ByteLevel);
    let tokens = tokens_of(&model, TEXT);
    assert_eq!(
        tokens.token_texts[..3],
        ["The", "Ġkeepers", "'"],
        "the tokenizer's own texts are kept"
    );
    // "日" is three bytes, cut between two tokens after the space.
    assert_eq!(
        readable(&tokens),
        [
            "The",
            "·keepers",
            "'",
            "·café",
            ":",
            "↵",
            "⇥",
            "line",
            "·<0xE6>",
            "<0x97>",
            "<0xA5>",
            "本",
            "·🙂"
        ]
    );
    assert_eq!(tokens.raw_and_id(1), "“Ġkeepers” · id 42805");

    // A whole real text: no byte-level spelling survives, and the
    // readable texts joined are the text.
    let text = std::fs::read_to_string(fixture("smollm2.txt")).unwrap();
    let tokens = tokens_of(&model, &text);
    let texts = readable(&tokens);
    for (raw, shown) in tokens.token_texts.iter().zip(&texts) {
        assert!(!shown.contains(['Ġ', 'Ċ', 'ĉ', 'Ã']), "{raw:?} → {shown:?}");
    }
    assert_eq!(unmark(&texts.concat()), text.trim_end());
}

#[test]
fn sentencepiece_tokens_read_as_text() {
    let model = load(&family_fixture("gemma"));
    assert_eq!(model.specials.style, VocabularyStyle::Metaspace);
    let tokens = tokens_of(&model, TEXT);
    assert_eq!(
        readable(&tokens),
        [
            "<bos>", "The", "·keep", "ers", "'", "·ca", "f", "<0xC3>", "<0xA9>", ":", "↵", "⇥",
            "line", "·", "<0xE6>", "<0x97>", "<0xA5>", "<0xE6>", "<0x9C>", "<0xAC>", "·", "<0xF0>",
            "<0x9F>", "<0x99>", "<0x82>"
        ]
    );
    let text = std::fs::read_to_string(fixture("families/gemma.txt")).unwrap();
    let tokens = tokens_of(&model, &text);
    let texts = readable(&tokens);
    assert!(texts.iter().all(|t| !t.contains('▁')), "{texts:?}");
    assert_eq!(unmark(&texts[1..].concat()), text.trim_end());
    // A word continued, not after a special token or a newline, is glued.
    let words = tokens.readable_tokens();
    assert!(!words.continues_word[0] && !words.continues_word[1]);
    for (i, text) in words.texts.iter().enumerate().skip(2) {
        let after_newline = words.texts[i - 1].ends_with(NEWLINE);
        assert_eq!(
            words.continues_word[i],
            !text.starts_with(WORD_START) && !after_newline,
            "{i} {text:?}"
        );
    }
}

/// The other SentencePiece and byte-level fixtures are read the same way.
#[test]
fn each_fixture_tokenizer_has_its_style() {
    use VocabularyStyle::*;
    for (name, style) in [
        ("llama", Metaspace),
        ("gemma2", Metaspace),
        ("xlm-roberta", Metaspace),
        ("albert", Metaspace),
        ("gpt2", ByteLevel),
        ("qwen2", ByteLevel),
        ("roberta", ByteLevel),
        ("modernbert", ByteLevel),
        ("bert", WordPiece),
        ("electra", WordPiece),
    ] {
        let model = load(&family_fixture(name));
        assert_eq!(model.specials.style, style, "{name}");
        let text = std::fs::read_to_string(fixture(&format!("families/{name}.txt"))).unwrap();
        let tokens = tokens_of(&model, &text);
        for (i, shown) in readable(&tokens).iter().enumerate() {
            if !tokens.special[i] {
                assert!(!shown.contains(['Ġ', '▁', 'Ċ']), "{name}: {shown:?}");
                assert!(!shown.starts_with("##"), "{name}: {shown:?}");
            }
        }
    }
}

/// A GGUF file's tokenizer, built from its metadata, has the style of the
/// vocabulary it holds: byte-level for `gpt2` files, SentencePiece for
/// `llama` ones.
#[test]
fn gguf_tokenizers_have_their_style() {
    use VocabularyStyle::*;
    for (name, style) in [("qwen2", ByteLevel), ("llama", Metaspace)] {
        let path = fixture(&format!("gguf/{name}.gguf"));
        let model = Model::load(&ModelSource::Gguf(path), &mut |_| {}).unwrap();
        assert_eq!(model.specials.style, style, "{name}");
        let tokens = tokens_of(&model, TEXT);
        let texts = readable(&tokens);
        assert!(texts.iter().any(|t| t.contains('↵')), "{name}: {texts:?}");
        assert!(
            texts.iter().all(|t| !t.contains(['Ġ', '▁', 'Ċ'])),
            "{name}: {texts:?}"
        );
    }
}
