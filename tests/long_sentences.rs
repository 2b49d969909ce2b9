//! A sentence longer than the model's window (a transcript, a list, a text
//! without punctuation) is analysed, not refused (ANALYSIS.md §1): cut into
//! pieces at word boundaries, each analysed as a sentence, in every input
//! mode, for encoders and decoders, through the pipeline and through every
//! command that reads a text (`analyze`, `export`, `compare`, `corpus`).

mod common;

use common::*;
use headscope::analysis::AnalysisOptions;
use headscope::input::{InputMode, WindowStart};
use headscope::model::Model;
use headscope::pipeline::{self, InputOptions, RunOutput};
use std::sync::OnceLock;

const MODES: [InputMode; 3] = [
    InputMode::Document,
    InputMode::OneSentencePerLine,
    InputMode::Plain,
];

fn minilm() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        Model::load_folder(&test_model(), &candle_core::Device::Cpu).expect("load the test model")
    })
}

/// A short sentence, a 700-word one without punctuation, a short one;
/// one per line, which every mode reads as three sentences.
fn long_text() -> String {
    format!(
        "The meeting began at noon.\n{}.\nNobody took notes.\n",
        run_on_words(700)
    )
}

/// The 700-word sentence first, so that the one window a command
/// analyses holds its first piece.
fn long_text_first() -> String {
    format!("{}.\nNobody took notes.\n", run_on_words(700))
}

/// Every window of `text` from the first, following `next`.
fn every_window(
    model: &Model,
    text: &str,
    mode: InputMode,
    max_tokens: Option<usize>,
) -> Vec<RunOutput> {
    let mut windows = Vec::new();
    let mut start = Some(WindowStart::default());
    while let Some(at) = start {
        let input = InputOptions {
            mode,
            first_sentence: at.sentence,
            first_piece: at.piece,
            max_tokens,
            ..Default::default()
        };
        let output = pipeline::run(model, text, &input, &AnalysisOptions::default(), &|| false)
            .unwrap_or_else(|e| panic!("{mode:?} from {at:?}: {e}"));
        assert_eq!(output.input.start(), at, "{mode:?}");
        start = output.input.next;
        windows.push(output);
        assert!(windows.len() < 50, "{mode:?}: the windows do not move on");
    }
    windows
}

/// Checks that the long sentence `sentence` of `text` was cut into pieces,
/// each analysed as a sentence of its own, that together hold its tokens
/// once, each ending and starting between two words; returns the pieces.
fn assert_pieces_cover_the_sentence(
    text: &str,
    windows: &[RunOutput],
    mode: InputMode,
    sentence: usize,
    limit: usize,
    what: &str,
) -> usize {
    let span = windows[0].input.sentence_spans[sentence];
    let mut pieces = Vec::new();
    let mut total = None;
    for output in windows {
        let input = &output.input;
        let tokens = &input.tokens;
        assert!(tokens.len() <= limit, "{what}");
        // Every window was analysed: figures for every layer.
        assert_eq!(
            output.analysis.layers.len(),
            output.captures.layers,
            "{what}"
        );
        assert_eq!(
            output.analysis.sentences_analysed, input.sentences_analysed,
            "{what}"
        );
        let notes = input.split_notes();
        assert_eq!(notes.len(), input.sentences_split.len(), "{what}");
        for (split, note) in input.sentences_split.iter().zip(&notes) {
            assert_eq!(split.sentence, sentence, "{what}");
            assert!(split.at_word_boundaries, "{what}");
            assert!(split.pieces >= 2, "{what}");
            assert!(
                note.contains(&format!(
                    "sentence {} has {} tokens",
                    sentence + 1,
                    split.tokens
                )) && note.contains(&format!(
                    "cut into {} pieces at word boundaries",
                    split.pieces
                )),
                "{what}: {note}"
            );
            assert!(
                !note.contains("--"),
                "{what}: no command-line flag in {note}"
            );
            total = Some(split.tokens);
            for piece in &split.in_window {
                let (s, e) = piece.span;
                // (A decoder's token may hold the whitespace before it.)
                let trimmed = s + (text[s..e].len() - text[s..e].trim_start().len());
                assert!(span.0 <= trimmed && e <= span.1, "{what}: {:?}", piece.span);
                // Between two words: whitespace before and after, or the
                // sentence's own ends.
                // (A byte-level BPE token's offsets may hold its space.)
                let space = |at: usize| {
                    text[..at].ends_with(char::is_whitespace)
                        || text[at..].starts_with(char::is_whitespace)
                };
                let before = trimmed == span.0 || space(s);
                let after = e == span.1 || space(e);
                assert!(before && after, "{what}: piece {} at {s}..{e}", piece.piece);
                // Its tokens carry a sentence id of their own; in an
                // encoder's document modes a separator of that id closes it.
                let positions: Vec<usize> = (0..tokens.len())
                    .filter(|&i| !tokens.special[i])
                    .filter(|&i| tokens.sentence_ids[i] == Some(piece.window_sentence))
                    .collect();
                assert_eq!(positions.len(), piece.tokens, "{what}");
                if !tokens.causal && mode != InputMode::Plain {
                    let closing = positions.last().unwrap() + 1;
                    assert!(tokens.special[closing], "{what}");
                    assert_eq!(tokens.sentence_ids[closing], Some(piece.window_sentence));
                }
                pieces.push((piece.piece, piece.tokens));
            }
        }
    }
    assert!(!pieces.is_empty(), "{what}: no sentence was cut");
    let count = pieces.len();
    let order: Vec<usize> = pieces.iter().map(|p| p.0).collect();
    assert_eq!(
        order,
        (0..count).collect::<Vec<_>>(),
        "{what}: each piece once, in order"
    );
    assert_eq!(
        Some(pieces.iter().map(|p| p.1).sum()),
        total,
        "{what}: the pieces hold every token of the sentence once"
    );
    count
}

#[test]
fn a_700_word_sentence_is_analysed_in_pieces_in_every_mode() {
    let model = minilm();
    let text = long_text();
    for mode in MODES {
        let windows = every_window(model, &text, mode, None);
        let what = format!("MiniLM {mode:?}");
        let pieces = assert_pieces_cover_the_sentence(&text, &windows, mode, 1, 512, &what);
        assert!(pieces >= 2, "{what}");
        // The windows end where the next begins, and the last reaches the
        // end of the text.
        for pair in windows.windows(2) {
            assert_eq!(pair[0].input.next, Some(pair[1].input.start()), "{what}");
        }
        let last = &windows.last().unwrap().input;
        assert_eq!(
            (last.next, last.sentences_left_out, last.tokens_left_out),
            (None, 0, 0)
        );
        assert_eq!(last.last_sentence(), 2, "{what}");
        // A window that ends inside the sentence says that the rest of it
        // comes next.
        let cut = windows
            .iter()
            .find(|w| w.input.next.is_some_and(|n| n.piece > 0))
            .expect("a window ends inside the long sentence");
        let warning = cut.input.left_out_warning().unwrap();
        assert!(
            warning.contains("the rest of sentence 2"),
            "{what}: {warning}"
        );
    }
}

#[test]
fn a_decoder_cuts_a_long_sentence_into_pieces_in_every_mode() {
    for name in ["llama", "gpt2"] {
        let model = Model::load_folder(&family_fixture(name), &candle_core::Device::Cpu).unwrap();
        let text = format!("A first line.\n{}.\nThe last line.\n", run_on_words(150));
        for mode in MODES {
            let limit = 48;
            let windows = every_window(&model, &text, mode, Some(limit));
            let what = format!("{name} {mode:?}");
            let pieces = assert_pieces_cover_the_sentence(&text, &windows, mode, 1, limit, &what);
            assert!(pieces >= 3, "{what}: {pieces}");
            for output in &windows {
                let tokens = &output.input.tokens;
                assert!(tokens.causal);
                // A piece's last token is a separator, like a sentence's.
                for split in &output.input.sentences_split {
                    for piece in &split.in_window {
                        let last = (0..tokens.len())
                            .rev()
                            .find(|&i| tokens.sentence_ids[i] == Some(piece.window_sentence))
                            .unwrap();
                        assert!(tokens.separator_positions().contains(&last), "{what}");
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The commands

fn mode_flag(mode: InputMode) -> Option<&'static str> {
    match mode {
        InputMode::Document => None,
        InputMode::OneSentencePerLine => Some("--one-sentence-per-line"),
        InputMode::Plain => Some("--plain"),
    }
}

fn write_long_text(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("run-on.txt");
    std::fs::write(&path, long_text_first()).unwrap();
    path
}

/// The stderr note of a cut sentence: once per window holding a piece, in
/// the command line's own words.
fn assert_noted(stderr: &str, what: &str) {
    assert!(
        stderr.contains("headscope: note:")
            && stderr.contains("sentence 1 has")
            && stderr.contains(
                "at word boundaries, each analysed as a sentence; this window holds piece 1 of"
            ),
        "{what}: {stderr}"
    );
    assert!(!stderr.contains("error"), "{what}: {stderr}");
}

#[test]
fn analyze_reports_the_pieces_in_json_and_on_stderr_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_long_text(dir.path());
    let model = test_model();
    for mode in MODES {
        let json = dir.path().join("out.json");
        let mut command = headscope_command();
        command.args(["analyze", "--model", model.to_str().unwrap()]);
        command.args(mode_flag(mode));
        command.args(["--json", json.to_str().unwrap(), file.to_str().unwrap()]);
        let output = run_ok(&mut command, &format!("analyze {mode:?}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_noted(&stderr, &format!("analyze {mode:?}"));
        assert!(
            stderr.contains("left out the rest of sentence 1 and 1 sentence after it"),
            "{stderr}"
        );
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let split = &value["sentences_split"][0];
        assert_eq!(split["sentence"], 0, "{mode:?}: {value}");
        assert!(split["pieces"].as_u64().unwrap() >= 2, "{mode:?}");
        assert_eq!(split["in_window"][0]["piece"], 0, "{mode:?}");
        assert_eq!(split["at_word_boundaries"], true, "{mode:?}");
        // The figures are all there beside it.
        assert_eq!(value["layers"].as_array().unwrap().len(), 6, "{mode:?}");
        assert_eq!(value["tokens"], 512, "{mode:?}");
    }
}

#[test]
fn export_compare_and_corpus_read_a_long_sentence_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_long_text(dir.path());
    let model = test_model();
    let model = model.to_str().unwrap();
    let file = file.to_str().unwrap();

    let png = dir.path().join("grid.png");
    let output = run_ok(
        headscope_command()
            .args(["export", "--model", model, "--grid", "--png"])
            .args([png.to_str().unwrap(), file]),
        "export",
    );
    assert_noted(&String::from_utf8_lossy(&output.stderr), "export");
    assert!(png.is_file());

    let json = dir.path().join("compare.json");
    let output = run_ok(
        headscope_command()
            .args([
                "compare", "--model", model, "--model", model, "--plain", "--json",
            ])
            .args([json.to_str().unwrap(), file]),
        "compare",
    );
    assert_noted(&String::from_utf8_lossy(&output.stderr), "compare");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for side in ["model_a", "model_b"] {
        assert_eq!(
            value[side]["analysis"]["sentences_split"][0]["sentence"], 0,
            "{side}"
        );
    }

    let report = dir.path().join("corpus.json");
    run_ok(
        headscope_command()
            .args([
                "corpus",
                "--model",
                model,
                "--one-sentence-per-line",
                "--json",
            ])
            .args([report.to_str().unwrap(), file]),
        "corpus",
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(value["sentences_split"], 1, "{value}");
    assert!(value["windows"].as_u64().unwrap() >= 2);
    assert_eq!(value["documents"][0]["complete"], true);
}

/// The outline's windows are the windows the runs cut, one after the
/// other, long sentence and all.
#[test]
fn the_outline_lists_the_windows_the_runs_cut() {
    use headscope::input::TokenizedText;
    let model = minilm();
    let text = format!("{}{}", long_text(), "A short one.\n".repeat(200));
    for mode in MODES {
        let tokenized = TokenizedText::new(&model.tokenizer, &text, mode, &model.specials).unwrap();
        let outline = tokenized.windows(512, &model.specials).unwrap();
        let from_pipeline = pipeline::outline(
            model,
            &text,
            &InputOptions {
                mode,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(outline, from_pipeline, "{mode:?}");
        let runs = every_window(model, &text, mode, None);
        assert_eq!(outline.len(), runs.len(), "{mode:?}");
        for (bounds, run) in outline.iter().zip(&runs) {
            let input = &run.input;
            assert_eq!(bounds.start, input.start(), "{mode:?}");
            assert_eq!(bounds.next, input.next, "{mode:?}");
            assert_eq!(bounds.last_sentence, input.last_sentence(), "{mode:?}");
            // Where its text begins: its first token's.
            let first = input.tokens.offsets.iter().flatten().next().unwrap().0;
            assert_eq!(bounds.start_byte, first, "{mode:?} {bounds:?}");
            // A window that stops before a short sentence ("A short one.",
            // 4 tokens and its separator) is full.
            if input.next.is_some_and(|next| next.sentence > 2) {
                assert!(
                    input.tokens.len() > 512 - 5,
                    "{mode:?}: {} tokens",
                    input.tokens.len()
                );
            }
        }
    }
}
