//! Long texts and long runs in the app: a sentence longer than the model's
//! window is analysed in pieces, and the text panel says so in the window's
//! own words; the windows step through the pieces and back. A long run
//! shows layer k of L and the time left, and Cancel abandons it with the
//! last result kept.

use crate::common;

use egui_kittest::kittest::Queryable;

use common::app::*;
use headscope::app::panels::outline::GO_TO_LABEL;
use headscope::app::shell::status_bar::CANCEL_LABEL;
use headscope::app::text::editor::EDITOR_LABEL;

/// A short sentence, a 700-word one without punctuation, a short one.
fn long_sentence_text() -> String {
    format!(
        "The meeting began at noon. {}. Nobody took notes.\n",
        common::run_on_words(700)
    )
}

#[test]
fn a_sentence_longer_than_the_window_is_analysed_in_pieces_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run-on.txt");
    std::fs::write(&file, long_sentence_text()).unwrap();
    let mut harness = start(Some(file), None);
    wait_for_result(&mut harness);
    // The first window holds the first sentence: the long one does not
    // fit beside it.
    assert!(shows(&harness, "sentence 1 of 3"));
    let next = |harness: &mut AppHarness| {
        harness.get_by_label("Next window ▶").click();
        harness.step();
        wait_for_result(harness);
    };
    next(&mut harness);
    let note = label_containing(&harness, "more than one window holds");
    assert!(
        note.starts_with("Sentence 2 has ")
            && note.contains("under the model's limit of 512 tokens")
            && note.contains("cut into 2 pieces at word boundaries, each analysed as a sentence")
            && note.ends_with("this window holds piece 1 of 2"),
        "{note}"
    );
    assert!(
        !note.contains("--"),
        "no command-line flag in the window: {note}"
    );
    let output = harness.state().shown_output().unwrap().clone();
    assert_eq!(output.input.tokens.len(), 512);
    assert_eq!(output.analysis.layers.len(), 6);
    assert!(shows(&harness, "sentence 2 of 3"));
    save_picture(&mut harness, "app_long_text-piece-1.png");

    next(&mut harness);
    let note = label_containing(&harness, "more than one window holds");
    assert!(note.ends_with("this window holds piece 2 of 2"), "{note}");
    assert!(shows(&harness, "sentences 2–3 of 3"));
    let input = &harness.state().shown_output().unwrap().input;
    assert_eq!(
        (input.first_sentence, input.first_piece, input.next),
        (1, 1, None)
    );

    // Back to the first piece.
    harness.get_by_label("◀ Previous window").click();
    harness.step();
    wait_for_result(&mut harness);
    let note = label_containing(&harness, "more than one window holds");
    assert!(note.ends_with("piece 1 of 2"), "{note}");

    // The outline lists the three windows, the second piece's among them,
    // and Go to sentence analyses the window holding that sentence.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::F);
    step_until(&mut harness, "the outline", |h| {
        h.state().outline_panel().windows().is_some()
    });
    let starts: Vec<(usize, usize)> = harness
        .state()
        .outline_panel()
        .windows()
        .unwrap()
        .iter()
        .map(|w| (w.start.sentence, w.start.piece))
        .collect();
    assert_eq!(starts, [(0, 0), (1, 0), (1, 1)]);
    assert!(shows(&harness, "Window 1 · sentence 1 · The meeting"));
    assert!(shows(&harness, "Window 2 · sentence 2 (to piece 1) · "));
    assert!(shows(
        &harness,
        "Window 3 · sentences 2 (from piece 2)–3 · "
    ));
    type_number(&mut harness, GO_TO_LABEL, "3");
    harness.get_by_label("Go").click();
    harness.step();
    wait_for_result(&mut harness);
    let input = &harness.state().shown_output().unwrap().input;
    assert_eq!(
        (input.first_sentence, input.first_piece, input.next),
        (1, 1, None)
    );
    save_picture(&mut harness, "app_long_text-outline-pieces.png");

    // The long sentence made short while the window starts at its second
    // piece: the window is analysed from the sentence's start, and the
    // text panel says which sentences it holds.
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text("The meeting began at noon. It was short. Nobody took notes.");
    harness.step();
    step_until(&mut harness, "the short text's result", |h| {
        !h.state().is_working() && shows(h, "sentences 2–3 of 3")
    });
    let input = &harness.state().shown_output().unwrap().input;
    assert_eq!(
        (
            input.first_sentence,
            input.first_piece,
            input.sentences_split.len()
        ),
        (1, 0, 0)
    );
    assert!(!shows(&harness, "more than one window holds"));
    // The text panel knows the window it analysed (not "from sentence 2").
    harness.step();
    assert!(!shows(&harness, "from sentence"));
}

/// Saves what the window shows, for a person to look at (once the grid's
/// thumbnails show the result on screen).
fn save_picture(harness: &mut AppHarness, name: &str) {
    step_until(harness, "the grid's thumbnails", |h| {
        h.state().overview_is_current()
    });
    save_window(harness, name);
}

#[test]
fn a_long_decoder_run_shows_its_progress_and_can_be_cancelled() {
    let mut harness = start_on_family("llama");
    wait_for_result(&mut harness);
    let before = harness.state().shown_output().unwrap().clone();
    // A slow model: each of the fixture's 2 layers waits 5 s first (long
    // enough for Cancel to land inside the wait even when a busy machine
    // draws a frame a second; the wait ends at the cancel).
    harness
        .state()
        .worker()
        .set_layer_delay(std::time::Duration::from_secs(5));
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" The oven hummed all night.");
    step_until(&mut harness, "the progress of layer 2", |h| {
        shows(h, "layer 2 of 2 · ~")
    });
    let bar = label_containing(&harness, "layer 2 of 2 · ~");
    assert!(bar.ends_with(" s left"), "{bar}");
    assert!(harness.state().is_working());
    save_picture(&mut harness, "app_long_text-progress.png");

    harness.get_by_label(CANCEL_LABEL).click();
    harness.step();
    assert!(!harness.state().is_working(), "cancelled at once");
    assert!(harness
        .state()
        .notice()
        .is_some_and(|n| n.starts_with("Analysis cancelled")));
    // The last result stays on screen, and the abandoned run never replaces it.
    for _ in 0..20 {
        harness.step();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let after = harness.state().shown_output().unwrap();
    assert!(std::sync::Arc::ptr_eq(&before, after));
    assert!(!shows(&harness, "layer 2 of 2"));
    assert!(!shows(&harness, CANCEL_LABEL));
    save_picture(&mut harness, "app_long_text-cancelled.png");
}

/// Moving the window and cancelling its run puts the window back where
/// the figures on screen are from: the editor's "sentences …" and the
/// result agree, and the next edit analyses that window, not the
/// cancelled one. A new file shows every layer again.
#[test]
fn a_cancelled_jump_leaves_the_text_on_the_window_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bakery.txt");
    let text: String = (1..=60)
        .map(|n| format!("Loaf {n} came out of the oven golden and warm. "))
        .collect();
    std::fs::write(&file, &text).unwrap();
    let mut harness = start_on_family("llama");
    wait_for_result(&mut harness);
    harness.state_mut().open_file(&file);
    // Its thumbnails drawn too: their progress row has a Cancel of its own.
    step_until(&mut harness, "the first window", |h| {
        !h.state().is_working() && shows(h, "sentences 1–") && h.state().overview_is_current()
    });
    let first = label_containing(&harness, "sentences 1–");
    let before = harness.state().shown_output().unwrap().clone();
    harness
        .state()
        .worker()
        .set_layer_delay(std::time::Duration::from_secs(5));
    harness.get_by_label("Next window ▶").click();
    step_until(&mut harness, "the next window's run", |h| {
        shows(h, "layer 2 of 2 · ~")
    });
    harness.get_by_label(CANCEL_LABEL).click();
    harness.step();
    harness.step();
    let after = harness.state().shown_output().unwrap();
    assert!(std::sync::Arc::ptr_eq(&before, after));
    assert_eq!(label_containing(&harness, "sentences 1–"), first);
    harness
        .state()
        .worker()
        .set_layer_delay(std::time::Duration::ZERO);

    // "Showing layer 1 only" does not outlive the text it was chosen on.
    harness.state_mut().show_layer(1);
    harness.step();
    assert!(shows(&harness, "Showing layer 1 only"));
    harness.state_mut().open_file(&file);
    step_until(&mut harness, "the file again", |h| {
        !h.state().is_working() && h.state().grid_layer().is_none()
    });
    assert!(!shows(&harness, "Showing layer 1 only"));
}

/// A 10 MB document of numbered sentences; the ones at `marked` mention a
/// zeppelin.
fn ten_megabytes(marked: &[usize]) -> String {
    let mut text = String::with_capacity(10_100_000);
    let mut i = 0;
    while text.len() < 10_000_000 {
        if marked.contains(&i) {
            text.push_str(&format!(
                "Sentence {i} mentions a Zeppelin over the harbour. "
            ));
        } else {
            text.push_str(&format!(
                "Sentence {i} tells of the harbour, the boats and the weather that week. "
            ));
        }
        if i % 12 == 11 {
            text.push('\n');
        }
        i += 1;
    }
    text
}

#[test]
fn find_on_a_10_mb_document_lists_every_match_and_jumps_to_its_window() {
    use headscope::app::panels::outline::FIND_LABEL;
    let marked = [7, 15_000, 42_000, 77_777, 100_001, 120_000, 128_000];
    let text = ten_megabytes(&marked);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("book.txt");
    std::fs::write(&file, &text).unwrap();
    let mut harness = start(Some(file), None);
    wait_for_result(&mut harness);
    assert!(harness.state().text().len() >= 10_000_000);

    // Ctrl+F opens the outline with the keyboard in the find field.
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::F);
    harness.step();
    harness.step();
    harness.get_by_label(FIND_LABEL).type_text("zeppelin");
    step_until(&mut harness, "the matches", |h| {
        h.state().outline_panel().matches().is_some()
    });
    let expected: Vec<usize> = text.match_indices("Zeppelin").map(|(at, _)| at).collect();
    assert_eq!(expected.len(), marked.len());
    let found: Vec<usize> = harness
        .state()
        .outline_panel()
        .matches()
        .unwrap()
        .iter()
        .map(|m| m.bytes.start)
        .collect();
    assert_eq!(found, expected, "every match, in order");
    assert!(shows(&harness, "7 matches"));
    // Every match is listed, with its sentence and its context.
    for &sentence in &marked {
        let row = format!("s. {} · ", sentence + 1);
        let label = label_containing(&harness, &row);
        assert!(
            label.contains(&format!(
                "{sentence} mentions a [Zeppelin] over the harbour."
            )),
            "{label}"
        );
    }

    // The outline: every window of the book, cut off the UI thread.
    step_until(&mut harness, "the outline", |h| {
        h.state().outline_panel().windows().is_some()
    });
    let windows = harness.state().outline_panel().windows().unwrap().to_vec();
    assert!(windows.len() > 1000, "{} windows", windows.len());
    for pair in windows.windows(2) {
        assert_eq!(pair[0].next, Some(pair[1].start));
        assert!(pair[0].start_byte < pair[1].start_byte);
    }
    assert!(shows(&harness, &format!("{} windows", windows.len())));

    // A click on the last match analyses the window that holds it.
    let last = *marked.last().unwrap();
    harness
        .get_by_label_contains(&format!("s. {} · ", last + 1))
        .click();
    harness.step();
    wait_for_result(&mut harness);
    let input = &harness.state().shown_output().unwrap().input;
    assert!(
        input.tokens.token_texts.iter().any(|t| t == "zeppelin"),
        "the window holds the match"
    );
    let window = windows
        .iter()
        .find(|w| w.start.sentence <= last && last <= w.last_sentence)
        .unwrap();
    let label = label_containing(&harness, "sentences ");
    assert!(
        label.starts_with(&format!("sentences {}–", window.start.sentence + 1)),
        "{label}"
    );
    save_picture(&mut harness, "app_long_text-find.png");

    // The outline shows the analysed window's sentences, the window before
    // it above; a click on that one analyses it.
    let k = windows.iter().position(|w| w == window).unwrap();
    assert!(shows(
        &harness,
        &format!("      {}. Sentence {last} mentions", last + 1)
    ));
    let before = &windows[k - 1];
    harness
        .get_by_label_contains(&format!("Window {} · ", k))
        .click();
    harness.step();
    wait_for_result(&mut harness);
    let label = label_containing(&harness, "sentences ");
    assert!(
        label.starts_with(&format!("sentences {}–", before.start.sentence + 1)),
        "{label}"
    );
    let input = &harness.state().shown_output().unwrap().input;
    assert_eq!(
        input.next.map(|n| n.sentence),
        before.next.map(|n| n.sentence - before.start.sentence)
    );
    save_picture(&mut harness, "app_long_text-outline.png");
}
