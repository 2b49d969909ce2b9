//! The command line as scripts use it: `analyze` on real files with the real
//! model, its JSON and NPZ, the cut of a long document, and a one-line error
//! with a non-zero exit for every bad input.

mod common;

use common::*;
use std::process::{Command, Output};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A failure: non-zero exit, one line on stderr that contains `needle`, no panic.
fn assert_fails_with(output: &Output, needle: &str) {
    let message = stderr(output);
    assert!(
        !output.status.success(),
        "expected failure, stderr: {message}"
    );
    assert!(!message.contains("panicked"), "panic: {message}");
    assert!(
        message.contains(needle),
        "stderr {message:?} lacks {needle:?}"
    );
    assert_eq!(
        message.trim_end().lines().count(),
        1,
        "one line expected: {message:?}"
    );
}

#[test]
fn analyze_writes_json_and_npz_matching_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let npz = dir.path().join("out.npz");
    let output = headscope(&[
        "analyze",
        "--model",
        &model_arg(),
        "--one-sentence-per-line",
        "--json",
        json.to_str().unwrap(),
        "--npz",
        npz.to_str().unwrap(),
        fixture("harbour.txt").to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let ours: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("harbour.minilm.json")).unwrap())
            .unwrap();
    assert_eq!(ours["input_ids"], reference["input_ids"]);
    assert_eq!(ours["sentences_left_out"], 0);
    for (l, layer) in reference["layers"].as_array().unwrap().iter().enumerate() {
        for (h, head) in layer["heads"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                ours["layers"][l]["heads"][h]["category"], head["category"],
                "L{l} H{h}"
            );
            assert_eq!(
                ours["layers"][l]["heads"][h]["focus_token_id"], head["focus_token_id"],
                "L{l} H{h}"
            );
        }
    }
    let arrays = headscope::npz::read_npz(&npz).unwrap();
    for key in ["input_ids", "attentions", "heads", "similarity"] {
        assert!(arrays.contains_key(key), "npz lacks {key}");
    }
}

#[test]
fn analyze_prints_a_table_and_reads_stdin() {
    let mut child = Command::new(headscope_bin())
        .args(["analyze", "--model", &model_arg(), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"The cat sat on the mat. The cat slept. A dog came by and the cat ran.")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("layer"), "{table}");
    // One row per layer of the 6-layer model.
    let rows = table
        .lines()
        .filter(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
        .count();
    assert_eq!(rows, 6, "{table}");
}

/// Hard-wrapped text keeps its sentences whole (ANALYSIS.md §1): two
/// sentences over three lines are two sentences, each closed by one
/// `[SEP]`, with the same tokens as the text written on one line; a
/// paragraph break and a list item still end sentences, and one sentence
/// per line splits at every line.
#[test]
fn wrapped_lines_are_read_as_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let analyse = |name: &str, text: &str, extra: &[&str]| -> serde_json::Value {
        let file = dir.path().join(format!("{name}.txt"));
        let json = dir.path().join(format!("{name}.json"));
        std::fs::write(&file, text).unwrap();
        let mut args = vec!["analyze", "--model"];
        let model = model_arg();
        args.push(&model);
        args.extend_from_slice(extra);
        args.extend(["--json", json.to_str().unwrap(), file.to_str().unwrap()]);
        let output = headscope(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let count = |report: &serde_json::Value| report["sentences_analysed"].as_u64().unwrap();
    let ids = |report: &serde_json::Value| report["input_ids"].clone();
    let wrapped = analyse(
        "wrapped",
        "The licences for most software are designed to take away\nyour freedom to share and change it.  By contrast, the GNU\r\nGeneral Public License is intended to guarantee it.\n",
        &[],
    );
    let one_line = analyse(
        "one-line",
        "The licences for most software are designed to take away your freedom to share and change it.  By contrast, the GNU General Public License is intended to guarantee it.\n",
        &[],
    );
    assert_eq!(count(&wrapped), 2, "{}", wrapped["input_ids"]);
    assert_eq!(ids(&wrapped), ids(&one_line));
    let blocks = analyse(
        "blocks",
        "Things to bring\n- a map\n- a lamp that is\nwrapped\n\nA paragraph without a stop\nthat goes on",
        &[],
    );
    assert_eq!(count(&blocks), 4);
    let per_line = analyse(
        "per-line",
        "One line\nand its wrap.\n",
        &["--one-sentence-per-line"],
    );
    assert_eq!(count(&per_line), 2);
}

/// `analyze --probe induction` on an encoder: its tokenizer's `[CLS]`, 50
/// ids from 1000 on and the same 50 again, with every head's role
/// scores; the probe takes no text.
#[test]
fn analyze_runs_the_induction_probe_on_an_encoder() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("probe.json");
    let output = headscope(&[
        "analyze",
        "--model",
        &model_arg(),
        "--probe",
        "induction",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let figures: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ids: Vec<u64> = figures["input_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 101);
    assert_eq!(ids[0], 101, "[CLS]");
    assert_eq!(ids[1..51], ids[51..]);
    assert!(ids[1..].iter().all(|&id| (1000..20000).contains(&id)));
    assert_eq!(figures["content_tokens"], 100);
    let head = &figures["layers"][0]["heads"][0];
    for key in [
        "previous_token_score",
        "duplicate_token_score",
        "induction_score",
        "self_score",
    ] {
        assert!(head[key].is_number(), "{key}: {head}");
    }
    assert!(head["role"].is_string(), "{head}");

    // The probe is the input: a text beside it is refused (by clap).
    let both = headscope(&[
        "analyze",
        "--model",
        &model_arg(),
        "--probe",
        "induction",
        "some.txt",
    ]);
    assert!(!both.status.success());
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}

#[test]
fn a_long_document_is_cut_at_the_last_whole_sentence_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..60)
        .map(|i| format!("Sentence number {i} tells how the quiet harbour slowly woke up before the early dawn.\n"))
        .collect();
    let file = dir.path().join("long.txt");
    std::fs::write(&file, &text).unwrap();
    let json = dir.path().join("long.json");
    let output = headscope(&[
        "analyze",
        "--model",
        &model_arg(),
        "--one-sentence-per-line",
        "--json",
        json.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let analysed = report["sentences_analysed"].as_u64().unwrap();
    let left_out = report["sentences_left_out"].as_u64().unwrap();
    let tokens = report["tokens"].as_u64().unwrap();
    assert_eq!(analysed + left_out, 60);
    assert!(
        left_out > 0 && tokens <= 512,
        "{analysed} {left_out} {tokens}"
    );
    // Each sentence is the same length here, so one more would not fit.
    let per_sentence = (tokens - 1) / analysed;
    assert!(tokens + per_sentence > 512);
    assert!(
        stderr(&output).contains(&format!("left out {left_out} sentences")),
        "{}",
        stderr(&output)
    );
}

/// A limit of the user's (--max-tokens) or of memory (--capture-memory-mb)
/// below the model's cuts the window the same way and names the limit.
#[test]
fn a_token_limit_and_a_memory_limit_cut_the_window_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..12)
        .map(|i| format!("Line {i} says the ferry left the harbour at dawn.\n"))
        .collect();
    let file = dir.path().join("lines.txt");
    std::fs::write(&file, &text).unwrap();
    let model_arg = model_arg();
    let run = |limit: &[&str]| {
        let json = dir.path().join("out.json");
        let mut args = vec![
            "analyze",
            "--model",
            &model_arg[..],
            "--one-sentence-per-line",
        ];
        args.extend_from_slice(limit);
        args.extend(["--json", json.to_str().unwrap(), file.to_str().unwrap()]);
        let output = headscope(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (report, stderr(&output))
    };

    let (whole, message) = run(&[]);
    assert_eq!(whole["sentences_left_out"], 0, "{message}");
    let per_line = (whole["tokens"].as_u64().unwrap() - 1) / 12;

    let (cut, message) = run(&["--max-tokens", "40"]);
    let tokens = cut["tokens"].as_u64().unwrap();
    assert!(tokens <= 40 && tokens + per_line > 40, "{tokens}");
    assert_eq!(
        cut["sentences_analysed"].as_u64().unwrap(),
        (40 - 1) / per_line
    );
    assert!(
        message.contains("the token limit of 40 you set"),
        "{message}"
    );

    // MiniLM's captures: 72 heads × (2T² + 32T) floats; 1 MB holds 35 tokens.
    let bytes = |t: u64| 72 * (2 * t * t + 32 * t) * 4;
    let fits = (1..512)
        .take_while(|&t| bytes(t) <= 1 << 20)
        .last()
        .unwrap();
    assert_eq!(fits, 35);
    let (cut, message) = run(&["--capture-memory-mb", "1"]);
    let tokens = cut["tokens"].as_u64().unwrap();
    assert!(tokens <= fits && tokens + per_line > fits, "{tokens}");
    assert!(
        message.contains(&format!(
            "{fits} tokens, the most whose captures fit the memory limit of 1 MB"
        )),
        "{message}"
    );

    assert_fails_with(
        &headscope(&[
            "analyze",
            "--model",
            &model_arg,
            "--max-tokens",
            "2",
            file.to_str().unwrap(),
        ]),
        "--max-tokens must be at least 3",
    );
}

#[test]
fn bad_inputs_fail_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = model_arg();
    let good = fixture("harbour.txt");
    let good = good.to_str().unwrap();

    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "  \n\n ").unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", &model, empty.to_str().unwrap()]),
        "empty",
    );

    let binary = dir.path().join("data.bin");
    std::fs::write(&binary, [0u8, 159, 146, 150, 0, 1, 2, 3, 255]).unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", &model, binary.to_str().unwrap()]),
        "binary",
    );

    assert_fails_with(
        &headscope(&["analyze", "--model", &model, "/no/such/file.txt"]),
        "/no/such/file.txt",
    );

    assert_fails_with(
        &headscope(&["analyze", "--model", "/no/such/model", good]),
        "/no/such/model",
    );

    let no_tokenizer = dir.path().join("model");
    std::fs::create_dir(&no_tokenizer).unwrap();
    std::fs::copy(
        test_model().join("config.json"),
        no_tokenizer.join("config.json"),
    )
    .unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", no_tokenizer.to_str().unwrap(), good]),
        "tokenizer.json",
    );

    // Truncated weights, a model that is not BERT, weights that do not fit the config.
    let tiny = dir.path().join("tiny");
    write_tiny_model(&tiny, &tiny_config(), Default::default());
    let tiny_arg = tiny.to_str().unwrap();
    let weights = tiny.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 3]).unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", tiny_arg, good]),
        "truncated or corrupt",
    );
    std::fs::write(&weights, &bytes).unwrap();
    let config = tiny.join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("\"bert\"", "\"t5\"")).unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", tiny_arg, good]),
        "model_type \"t5\" is not supported",
    );
    std::fs::write(
        &config,
        text.replace("\"hidden_size\": 8", "\"hidden_size\": 12"),
    )
    .unwrap();
    assert_fails_with(
        &headscope(&["analyze", "--model", tiny_arg, good]),
        "does not fit",
    );

    let hub = headscope(&["analyze", "--model", "bert-base-uncased", good]);
    assert_fails_with(&hub, "bert-base-uncased");

    assert_fails_with(
        &headscope(&[
            "analyze",
            "--model",
            &model,
            "--json",
            "/no/such/folder/out.json",
            good,
        ]),
        "/no/such/folder",
    );

    // Latin-1 is read, with a warning.
    let latin1 = dir.path().join("latin1.txt");
    std::fs::write(&latin1, b"Le caf\xe9 est ferm\xe9. Il pleut sur la ville.").unwrap();
    let output = headscope(&["analyze", "--model", &model, latin1.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("Latin-1"));
}
