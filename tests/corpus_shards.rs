//! Sharded corpus runs and their merge (`headscope corpus --shard K/N
//! --part`, `headscope merge`), and the corpus formats (text, gzip text,
//! JSON Lines, Parquet), on a real corpus written by others: the Debian
//! copyright files of small packages every Debian system has, spread over
//! every format. The merge of N shards must equal the unsharded run (counts
//! identical, figures within 1e-9 relative) for N = 1, 2, 3 and 7, shards
//! without documents included; bad parts, damaged Parquet files and JSON
//! Lines without the text field must say what is wrong and lose nothing.

mod common;

use common::*;
use headscope::corpus::{
    self, find_documents, merge, CorpusOptions, CorpusPart, CorpusReport, Shard, SourceOptions,
};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Short Debian copyright files (1–4 KB each, one or two windows), texts
/// written by others; the first eight found.
fn copyright_texts() -> Vec<(String, String)> {
    let packages = [
        "base-files",
        "hostname",
        "grep",
        "debconf",
        "gzip",
        "zlib1g",
        "libssl3",
        "make",
        "tar",
        "dash",
        "init-system-helpers",
        "sysvinit-utils",
    ];
    let texts: Vec<(String, String)> = packages
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(format!("/usr/share/doc/{p}/copyright")).ok()?;
            (text.len() < 4000).then(|| (p.to_string(), text))
        })
        .take(8)
        .collect();
    assert!(
        texts.len() >= 8,
        "too few Debian copyright files: {:?}",
        texts.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    texts
}

fn write_gzip(path: &Path, text: &str) {
    let mut encoder =
        flate2::write::GzEncoder::new(File::create(path).unwrap(), flate2::Compression::default());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap();
}

/// A Parquet file with columns `id` and `text`, in row groups of `group` rows.
fn write_parquet(path: &Path, rows: &[(String, String)], group: usize) {
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let schema = Arc::new(
        parse_message_type(
            "message document { REQUIRED BYTE_ARRAY id (UTF8); REQUIRED BYTE_ARRAY text (UTF8); }",
        )
        .unwrap(),
    );
    let properties = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    let mut writer =
        SerializedFileWriter::new(File::create(path).unwrap(), schema, properties).unwrap();
    for chunk in rows.chunks(group) {
        let mut row_group = writer.next_row_group().unwrap();
        for column in 0..2 {
            let values: Vec<ByteArray> = chunk
                .iter()
                .map(|(id, text)| ByteArray::from(if column == 0 { id.as_str() } else { text }))
                .collect();
            let mut writer = row_group.next_column().unwrap().unwrap();
            writer
                .typed::<ByteArrayType>()
                .write_batch(&values, None, None)
                .unwrap();
            writer.close().unwrap();
        }
        row_group.close().unwrap();
    }
    writer.close().unwrap();
}

/// A longer real text (about 10 KB): a third of the mixed corpus, so that
/// its middle byte leaves some of 7 shards without a document.
fn long_text() -> String {
    std::fs::read_to_string("/usr/share/doc/bash/copyright")
        .or_else(|_| std::fs::read_to_string("/usr/share/doc/debianutils/copyright"))
        .unwrap_or_else(|_| {
            let texts = copyright_texts();
            texts
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
}

/// The real texts spread over every format: two plain `.txt` (one long),
/// one `.md`, one `.txt.gz`, a `.jsonl` (one line without the text field),
/// a `.parquet` in two row groups.
fn mixed_corpus() -> tempfile::TempDir {
    let texts = copyright_texts();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("plain")).unwrap();
    std::fs::write(root.join("plain/a.txt"), &texts[0].1).unwrap();
    std::fs::write(root.join("plain/b.md"), &texts[1].1).unwrap();
    write_gzip(&root.join("plain/c.txt.gz"), &texts[2].1);
    std::fs::write(root.join("z.txt"), long_text()).unwrap();
    let mut lines = String::new();
    for (package, text) in &texts[4..6] {
        lines.push_str(&serde_json::json!({"id": package, "text": text}).to_string());
        lines.push('\n');
    }
    lines.push_str("{\"id\": \"no-text\", \"body\": \"the text is under another name\"}\n\n");
    std::fs::write(root.join("records.jsonl"), lines).unwrap();
    let rows: Vec<(String, String)> = texts[6..]
        .iter()
        .map(|(p, t)| (format!("row-{p}"), t.clone()))
        .collect();
    write_parquet(&root.join("table.parquet"), &rows, 1);
    dir
}

/// Every document of the corpus in one run.
fn unsharded(root: &Path) -> (CorpusPart, CorpusReport) {
    let plan = corpus::find_text_files(&[root.to_path_buf()]).unwrap();
    let part = corpus::run_shard(
        loaded_test_model(),
        &plan,
        Shard::WHOLE,
        &CorpusOptions::default(),
        &mut |_| {},
        &AtomicBool::new(false),
    );
    let report = part.report();
    (part, report)
}

/// The parts of an N-shard run, each read back from its JSON.
fn shards(root: &Path, count: usize) -> Vec<(String, CorpusPart)> {
    (0..count)
        .map(|index| {
            // Each shard finds the corpus on its own, as a Slurm task does.
            let plan = corpus::find_text_files(&[root.to_path_buf()]).unwrap();
            let part = corpus::run_shard(
                loaded_test_model(),
                &plan,
                Shard::new(index, count).unwrap(),
                &CorpusOptions::default(),
                &mut |_| {},
                &AtomicBool::new(false),
            );
            let back = CorpusPart::from_json(&part.to_json()).unwrap();
            assert_eq!(back, part, "a part reads back exactly from its JSON");
            (format!("part-{index}.json"), back)
        })
        .collect()
}

/// Compares two reports as JSON: counts and texts equal, numbers within
/// 1e-9 relative, the times left out. Returns the differences.
fn differences(expected: &CorpusReport, actual: &CorpusReport) -> Vec<String> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: String, out: &mut Vec<String>) {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for key in keys {
                    if key == "elapsed_seconds" || key == "model_seconds" {
                        continue;
                    }
                    match (x.get(key), y.get(key)) {
                        (Some(u), Some(v)) => walk(u, v, format!("{path}.{key}"), out),
                        _ => out.push(format!("{path}.{key}: only on one side")),
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    out.push(format!("{path}: {} vs {} items", x.len(), y.len()));
                } else {
                    for (i, (u, v)) in x.iter().zip(y).enumerate() {
                        walk(u, v, format!("{path}[{i}]"), out);
                    }
                }
            }
            (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                if (x - y).abs() > 1e-9 * x.abs().max(y.abs()) {
                    out.push(format!("{path}: {x} vs {y}"));
                }
            }
            _ if a != b => out.push(format!("{path}: {a} vs {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        &serde_json::to_value(expected).unwrap(),
        &serde_json::to_value(actual).unwrap(),
        "$".into(),
        &mut out,
    );
    out
}

#[test]
fn merged_shards_equal_the_unsharded_run_for_1_2_3_and_7_shards() {
    let dir = mixed_corpus();
    let root = dir.path();
    let (whole, expected) = unsharded(root);

    // Every format gave its documents, each under its id, in corpus order.
    let ids: Vec<&str> = expected.documents.iter().map(|d| d.id.as_str()).collect();
    let texts = copyright_texts();
    let jsonl = root.join("records.jsonl").display().to_string();
    let parquet = root.join("table.parquet").display().to_string();
    let mut wanted = vec![
        root.join("plain/a.txt").display().to_string(),
        root.join("plain/b.md").display().to_string(),
        root.join("plain/c.txt.gz").display().to_string(),
        texts[4].0.clone(),
        texts[5].0.clone(),
    ];
    wanted.extend(texts[6..].iter().map(|(p, _)| format!("row-{p}")));
    wanted.push(root.join("z.txt").display().to_string());
    assert_eq!(ids, wanted);
    assert!(expected.documents.iter().all(|d| d.complete));
    assert_eq!(expected.documents[3].path, jsonl);
    assert_eq!(expected.documents[5].path, parquet);
    // The line without the text field is skipped, named by its line, and
    // says what the record has; nothing else is lost.
    assert_eq!(expected.skipped.len(), 1, "{:?}", expected.skipped);
    assert_eq!(expected.skipped[0].path, format!("{jsonl}:3"));
    let reason = &expected.skipped[0].reason;
    assert!(
        reason.contains("no \"text\" field")
            && reason.contains("(it has: body, id)")
            && reason.contains("--text-field"),
        "{reason}"
    );
    assert_eq!(expected.files, wanted.len());
    assert_eq!(expected.files_found, wanted.len() + 1);
    assert!(!expected.partial);
    let windows = expected.windows;
    assert!(windows >= wanted.len(), "{windows} windows");

    // N = 1: the unsharded run's own part, through its JSON.
    let one = vec![(
        "part-0.json".to_string(),
        CorpusPart::from_json(&whole.to_json()).unwrap(),
    )];
    for (count, parts) in [
        (1, one),
        (2, shards(root, 2)),
        (3, shards(root, 3)),
        (7, shards(root, 7)),
    ] {
        // Contiguous shards that cover every document once.
        let mut next = 0;
        let mut empty_shards = 0;
        for (_, part) in &parts {
            assert_eq!(part.first_document, next, "N = {count}");
            next = part.end_document;
            empty_shards += usize::from(part.first_document == part.end_document);
            assert_eq!(
                part.corpus, whole.corpus,
                "N = {count}: every shard finds the same corpus"
            );
        }
        assert_eq!(next, whole.corpus.documents, "N = {count}");
        if count == 7 {
            assert!(empty_shards > 0, "some shard of 7 gets no document");
        }
        let merged = merge(&parts).unwrap();
        let diff = differences(&expected, &merged);
        assert!(diff.is_empty(), "N = {count}: {diff:#?}");
        assert_eq!(merged.windows, windows);
        // Counts are identical, not merely close.
        for (a, b) in expected.layers.iter().zip(&merged.layers) {
            for (x, y) in a.heads.iter().zip(&b.heads) {
                assert_eq!(x.categories.counts, y.categories.counts);
                assert_eq!(
                    x.focus_token.as_ref().map(|f| (f.id, f.windows)),
                    y.focus_token.as_ref().map(|f| (f.id, f.windows))
                );
                for ((_, s), (_, t)) in x.figures().iter().zip(y.figures()) {
                    assert_eq!(s.n, t.n);
                }
            }
        }
    }
}

#[test]
fn shards_are_contiguous_balanced_and_may_be_empty() {
    let sizes = [5u64, 300, 20, 20, 20, 0, 1000, 1, 1, 1];
    let total: u64 = sizes.iter().sum();
    for count in 1..=12 {
        let mut next = 0;
        for index in 0..count {
            let range = Shard::new(index, count).unwrap().range(&sizes);
            assert_eq!(range.start, next, "{index}/{count}");
            next = range.end;
            // Each shard's bytes stay within one document of 1/N of the total.
            let bytes: u64 = sizes[range.clone()].iter().sum();
            let largest = sizes[range.clone()].iter().max().copied().unwrap_or(0);
            assert!(
                bytes as f64 <= total as f64 / count as f64 + largest as f64,
                "{index}/{count}: {bytes} bytes"
            );
            // The same inputs always give the same split.
            assert_eq!(range, Shard::new(index, count).unwrap().range(&sizes));
        }
        assert_eq!(next, sizes.len(), "N = {count} covers every document");
    }
    // More shards than documents: some get none; all documents empty: by count.
    let ranges: Vec<_> = (0..5)
        .map(|k| Shard::new(k, 5).unwrap().range(&[7, 7]))
        .collect();
    assert_eq!(ranges.iter().filter(|r| r.is_empty()).count(), 3);
    let ranges: Vec<_> = (0..2)
        .map(|k| Shard::new(k, 2).unwrap().range(&[0, 0, 0, 0]))
        .collect();
    assert_eq!(ranges, vec![0..2, 2..4]);

    assert_eq!("3/8".parse::<Shard>().unwrap(), Shard::new(3, 8).unwrap());
    for bad in ["8/8", "1", "a/b", "0/0", "-1/4"] {
        let error = bad.parse::<Shard>().unwrap_err();
        assert!(error.contains("--shard"), "{bad}: {error}");
    }
    assert!("4/4".parse::<Shard>().unwrap_err().contains("0 to 3"));
}

/// A small part made by hand (no model run): what the merge checks read.
fn part_of(shard: Shard) -> CorpusPart {
    let plan = find_documents(
        &[PathBuf::from("/usr/share/doc/base-files/copyright")],
        &SourceOptions::default(),
    )
    .unwrap();
    let range = shard.range(&plan.sizes());
    CorpusPart::new(
        "all-MiniLM-L6-v2",
        Default::default(),
        &Default::default(),
        corpus::CorpusIdentity {
            fingerprint: plan.fingerprint(),
            documents: plan.documents.len(),
            bytes: plan.bytes(),
            problems: Vec::new(),
        },
        shard,
        range,
    )
}

#[test]
fn merge_refuses_mismatched_parts_and_names_missing_and_duplicated_shards() {
    let named = |parts: Vec<CorpusPart>| -> Vec<(String, CorpusPart)> {
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("p{i}.json"), p))
            .collect()
    };
    let shard = |k, n| part_of(Shard::new(k, n).unwrap());
    assert!(merge(&named(vec![shard(0, 2), shard(1, 2)])).is_ok());

    let error = |parts: Vec<CorpusPart>| merge(&named(parts)).unwrap_err().to_string();
    let mut other = shard(1, 2);
    other.model = "bert-base-uncased".into();
    let message = error(vec![shard(0, 2), other]);
    assert!(
        message.contains("p0.json and p1.json") && message.contains("model"),
        "{message}"
    );
    let mut other = shard(1, 2);
    other.model_fingerprint = Some("0123".into());
    assert!(error(vec![shard(0, 2), other]).contains("model differs"));
    let mut other = shard(1, 2);
    other.options.local_window = 9;
    assert!(error(vec![shard(0, 2), other]).contains("analysis settings differ"));
    let mut other = shard(1, 2);
    other.input_mode = headscope::input::InputMode::Plain;
    assert!(error(vec![shard(0, 2), other]).contains("input mode differs"));
    let mut other = shard(1, 2);
    other.corpus.fingerprint = "feed".into();
    assert!(error(vec![shard(0, 2), other]).contains("corpus differs"));
    let mut other = shard(1, 2);
    other.importance = Some(headscope::model::ablation::AblationMode::Zero);
    let message = error(vec![shard(0, 2), other]);
    assert!(
        message.contains("importance differs (--importance none vs zero)"),
        "{message}"
    );
    assert!(error(vec![shard(0, 2), shard(1, 3)]).contains("number of shards differs"));

    let message = error(vec![shard(0, 5), shard(2, 5), shard(2, 5), shard(4, 5)]);
    assert!(message.contains("missing shards 1, 3 of 5"), "{message}");
    assert!(
        message.contains("shard 2 of 5 is there 2 times (p1.json, p2.json)"),
        "{message}"
    );
    let mut interrupted = shard(1, 2);
    interrupted.partial = true;
    let message = error(vec![shard(0, 2), interrupted]);
    assert!(
        message.contains("shard 1/2 (p1.json) was interrupted") && message.contains("--shard 1/2"),
        "{message}"
    );
    assert_eq!(merge(&[]).unwrap_err().to_string(), "no parts to merge");

    // What is not a part says so.
    assert!(CorpusPart::from_json("{")
        .unwrap_err()
        .to_string()
        .contains("not JSON"));
    let report = serde_json::to_string(&CorpusReport {
        format: corpus::FORMAT.into(),
        ..Default::default()
    })
    .unwrap();
    assert!(CorpusPart::from_json(&report)
        .unwrap_err()
        .to_string()
        .contains("a corpus report, not a part"));
}

#[test]
fn damaged_parquet_and_missing_columns_are_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let texts = copyright_texts();
    std::fs::write(root.join("good.txt"), &texts[0].1).unwrap();
    std::fs::write(
        root.join("damaged.parquet"),
        b"PAR1 this is not a parquet file",
    )
    .unwrap();
    write_parquet(
        &root.join("other.parquet"),
        &[("x".into(), texts[1].1.clone())],
        1,
    );
    let plan = find_documents(
        &[root.to_path_buf()],
        &SourceOptions {
            text_field: "body".into(),
            id_field: "id".into(),
        },
    )
    .unwrap();
    assert_eq!(plan.documents.len(), 1, "only good.txt");
    let reasons: Vec<String> = plan
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.reason))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].contains("damaged.parquet: not a readable Parquet file"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("other.parquet: no column \"body\" (it has: id, text); name the text column (--text-field, or Text field in the corpus window)"),
        "{reasons:?}"
    );
    // Nothing but problems: the run cannot start, and the message lists them.
    let error = find_documents(&[root.join("damaged.parquet")], &SourceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no document found") && error.contains("not a readable Parquet file"),
        "{error}"
    );
}

#[test]
fn binary_shards_and_merges_and_refuses_an_incomplete_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let texts = copyright_texts();
    // Three short records of JSON Lines, one without the text field.
    let mut lines = String::new();
    for (package, text) in &texts[..2] {
        let first: String = text.lines().take(6).collect::<Vec<_>>().join("\n");
        lines.push_str(&serde_json::json!({"name": package, "body": first}).to_string());
        lines.push('\n');
    }
    lines.push_str("{\"name\": \"empty\"}\n");
    let corpus = root.join("corpus.jsonl");
    std::fs::write(&corpus, lines).unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(headscope_bin())
            .args(args)
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let model = test_model().display().to_string();
    let path = |name: &str| root.join(name).display().to_string();
    let fields = ["--text-field", "body", "--id-field", "name"];
    let mut whole = vec!["corpus", "--model", &model, "--json", "whole.json"];
    let whole_json = path("whole.json");
    whole[4] = &whole_json;
    whole.extend(fields);
    let corpus_arg = corpus.display().to_string();
    whole.push(&corpus_arg);
    let (ok, stderr) = run(&whole);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "skipped {corpus_arg}:3: no \"body\" field (it has: name)"
        )),
        "{stderr}"
    );

    let parts: Vec<String> = (0..2).map(|k| path(&format!("part-{k}.json"))).collect();
    for (k, part) in parts.iter().enumerate() {
        let shard = format!("{k}/2");
        let mut args = vec![
            "corpus", "--model", &model, "--shard", &shard, "--part", part,
        ];
        args.extend(fields);
        args.push(&corpus_arg);
        let (ok, stderr) = run(&args);
        assert!(ok, "{stderr}");
        assert!(stderr.contains(&format!("shard {k}/2")), "{stderr}");
    }
    let merged = path("merged.json");
    let (ok, stderr) = run(&["merge", &parts[0], &parts[1], "--json", &merged]);
    assert!(ok, "{stderr}");
    let read = |p: &str| -> CorpusReport {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (expected, actual) = (read(&whole_json), read(&merged));
    assert_eq!(differences(&expected, &actual), Vec::<String>::new());
    assert_eq!(
        actual
            .documents
            .iter()
            .map(|d| d.id.as_str())
            .collect::<Vec<_>>(),
        vec![texts[0].0.as_str(), texts[1].0.as_str()]
    );

    // One part alone: the merge names the missing shard and writes nothing.
    let lonely = path("lonely.json");
    let (ok, stderr) = run(&["merge", &parts[1], "--json", &lonely]);
    assert!(!ok);
    assert!(stderr.contains("missing shard 0 of 2"), "{stderr}");
    assert!(!Path::new(&lonely).exists());
    // A report is not a part.
    let (ok, stderr) = run(&["merge", &whole_json, "--json", &lonely]);
    assert!(!ok);
    assert!(
        stderr.contains("whole.json is a corpus report, not a part"),
        "{stderr}"
    );
    // --shard needs --part.
    let (ok, stderr) = run(&[
        "corpus",
        "--model",
        &model,
        "--shard",
        "0/2",
        "--json",
        &lonely,
        &corpus_arg,
    ]);
    assert!(!ok);
    assert!(stderr.contains("--part"), "{stderr}");
}
