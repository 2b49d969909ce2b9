//! The corpus statistics window driven through the accessibility tree, with
//! the real test model (all-MiniLM-L6-v2) on the worker thread: opened from
//! the File menu, a folder typed into its field, Run pressed, and the
//! numbers it shows checked against `corpus::run_files` on the same folder
//! computed here with a model of our own. Cancel (on a model slowed down by
//! the worker's artificial delay) gives a result marked partial, and the
//! interactive analysis keeps working after both. A folder of capture
//! files runs in the window as in the library, and without a model on the
//! worker. Ticking "Ablate each head alone" adds each head's importance,
//! the library's, and the head grid opens on it. Two more worker-level tests cover `AnalysisWorker::run_corpus`
//! without a model and a worker dropped in the middle of a corpus run.
//!
//! Needs the model that `scripts/fetch-test-model.sh` unpacks.

use crate::common;

use common::app::*;
use egui_kittest::kittest::Queryable;
use headscope::app::corpus::{
    self as corpus_window, head_cell_label, layer_cell_label, summary_text, CANCEL_LABEL,
    FOLDER_LABEL, IMPORTANCE_LABEL, MENU_LABEL, RUN_LABEL, TEXT_FIELD_LABEL,
};
use headscope::app::text::editor::EDITOR_LABEL;
use headscope::corpus::{self, CorpusOptions, CorpusReport, SourceOptions, Summary};
use headscope::model::ablation::AblationMode;
use headscope::model::{test_model_dir, Model, ModelSource};
use headscope::worker::{AnalysisWorker, CorpusUpdate, ModelEvent, WorkerEvent};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn start() -> AppHarness {
    let mut harness = common::app::start(None, None);
    wait_for_result(&mut harness);
    harness
}

const SENTENCES: [&str; 12] = [
    "The lighthouse keeper climbed the stairs before dawn.",
    "A storm had passed over the harbour during the night.",
    "Fishing boats rocked gently against the wooden pier.",
    "She wrote the weather in a small leather notebook.",
    "Gulls circled above the nets that dried in the sun.",
    "The village baker opened his shop at six o'clock.",
    "Children ran along the beach looking for shells.",
    "An old sailor told stories about distant islands.",
    "The tide came in slowly over the flat grey sand.",
    "By noon the sky was clear and the sea was calm.",
    "Her brother repaired the engine of their small boat.",
    "In the evening the lamp turned its beam across the water.",
];

/// `files` texts of a few sentences each (in a subfolder for some), and
/// one binary file named .txt that the run must list as skipped.
fn write_corpus(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir.join("more")).unwrap();
    for f in 0..files {
        let count = 3 + f % 4;
        let text: Vec<&str> = (0..count)
            .map(|s| SENTENCES[(f * 5 + s * 7) % SENTENCES.len()])
            .collect();
        let folder = if f % 3 == 2 {
            dir.join("more")
        } else {
            dir.to_path_buf()
        };
        std::fs::write(folder.join(format!("text{f:02}.txt")), text.join(" ")).unwrap();
    }
    std::fs::write(dir.join("broken.txt"), [0u8, 159, 146, 150, 0, 0, 1, 2]).unwrap();
}

fn open_corpus_window(harness: &mut AppHarness) {
    harness.get_by_label("File").click();
    harness.step();
    harness.step();
    harness.get_by_label(MENU_LABEL).click();
    harness.step();
    harness.step();
    assert!(harness.state().corpus_view().is_open());
    assert!(shows(harness, FOLDER_LABEL));
}

fn type_folder_and_run(harness: &mut AppHarness, dir: &Path) {
    harness.get_by_label(FOLDER_LABEL).focus();
    harness.step();
    harness
        .get_by_label(FOLDER_LABEL)
        .type_text(&dir.display().to_string());
    harness.step();
    harness.get_by_label(RUN_LABEL).click();
    harness.step();
}

/// The report of the run started, once it has finished without an error.
fn finished_report(harness: &mut AppHarness) -> Arc<CorpusReport> {
    step_until(harness, "the corpus run", |h| {
        !h.state().corpus_view().is_running()
    });
    let view = harness.state().corpus_view();
    assert_eq!(view.error(), None);
    view.report().expect("a report").clone()
}

/// What the library gives on the same folder with the app's settings,
/// each head ablated alone in every window where `importance` says how.
fn library_report(
    harness: &AppHarness,
    dir: &Path,
    importance: Option<AblationMode>,
) -> CorpusReport {
    let settings = harness.state().settings();
    let options = CorpusOptions {
        importance,
        ..settings.corpus_options()
    };
    let model =
        Model::load(&ModelSource::Folder(test_model_dir()), &mut |_| {}).expect("load the model");
    let list = corpus::find_text_files(&[dir.to_path_buf()]).expect("text files");
    corpus::run_files(&model, list, &options, &mut |_| {}, &AtomicBool::new(false))
}

fn assert_summary_close(ours: &Summary, theirs: &Summary, what: &str) {
    assert_eq!(ours.n, theirs.n, "{what}: n");
    match (ours.mean, theirs.mean) {
        (Some(a), Some(b)) => assert!(
            (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
            "{what}: {a} vs {b}"
        ),
        (a, b) => assert_eq!(a, b, "{what}"),
    }
}

/// The interactive analysis still answers: an edit gives a new result.
fn assert_interactive_analysis_works(harness: &mut AppHarness) {
    let before = harness
        .state()
        .shown_output()
        .expect("a result")
        .analysis
        .tokens;
    harness.get_by_label(EDITOR_LABEL).focus();
    harness.step();
    harness
        .get_by_label(EDITOR_LABEL)
        .type_text(" The keeper smiled at the sea.");
    harness.step();
    step_until(harness, "the result of the edited text", |h| {
        !h.state().is_working()
            && h.state()
                .shown_output()
                .is_some_and(|o| o.analysis.tokens != before)
    });
}

#[test]
fn the_corpus_window_shows_what_the_library_computes() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("corpus");
    write_corpus(&dir, 5);
    let mut harness = start();
    open_corpus_window(&mut harness);
    type_folder_and_run(&mut harness, &dir);
    let report = finished_report(&mut harness);
    assert!(!report.partial);
    assert!(shows(&harness, "Complete result"));

    let expected = library_report(&harness, &dir, None);
    assert_eq!(report.files, 5);
    assert_eq!(report.files, expected.files);
    assert_eq!(report.windows, expected.windows);
    assert_eq!(report.tokens, expected.tokens);
    assert_eq!(report.skipped, expected.skipped);
    assert_eq!(report.layers.len(), 6);
    for (ours, theirs) in report.layers.iter().zip(&expected.layers) {
        for ((name, a), (_, b)) in ours.figures().iter().zip(theirs.figures()) {
            assert_summary_close(a, &b, &format!("L{} {name}", ours.layer));
            // The window shows the library's number, as text.
            harness.get_by_label(&layer_cell_label(ours.layer, name, &b));
        }
        for (head, other) in ours.heads.iter().zip(&theirs.heads) {
            assert_eq!(head.categories, other.categories);
            for ((name, a), (_, b)) in head.figures().iter().zip(other.figures()) {
                assert_summary_close(a, &b, &format!("L{} H{} {name}", ours.layer, head.head));
            }
        }
    }
    // One number spelled out: layer 3's mean segmentation accuracy.
    let accuracy = expected.layers[3].segmentation_accuracy;
    let text = summary_text(&accuracy);
    assert!(text.starts_with(&format!("{:.3}", accuracy.mean.unwrap())));
    assert!(shows(
        &harness,
        &format!("Corpus L3 segmentation accuracy: {text}")
    ));
    // The head grid: every head, with its mean and most common category.
    for layer in &expected.layers {
        for head in &layer.heads {
            harness.get_by_label(&head_cell_label(layer.layer, head, 0));
        }
    }
    // The binary file is listed as skipped.
    assert!(shows(&harness, "Skipped files (1)"));
    assert!(shows(&harness, "broken.txt: binary file, not text"));

    // Each per-layer plot can be saved as a PNG, cut from the screen.
    let plot = scratch.path().join("corpus-plot.png");
    harness
        .state_mut()
        .set_plot_export_target(Some(plot.clone()));
    let save = headscope::app::widgets::plots::SAVE_LABEL;
    // One plot per layer figure; the own-separator share's chance is a
    // line in its plot.
    assert_eq!(
        harness.query_all_by_label(save).count(),
        headscope::corpus::LAYER_FIGURES.len() - 1
    );
    harness.query_all_by_label(save).next().unwrap().click();
    step_until(&mut harness, "the plot export", |h| {
        h.state().notice().is_some_and(|n| n.contains("xport"))
    });
    let notice = harness.state().notice().unwrap().to_string();
    assert!(notice.starts_with("Exported"), "{notice}");
    let png = image::open(&plot).expect("a PNG");
    assert!(png.width() >= 180 && png.height() >= 100);

    // Save JSON: the report as the CLI writes it; a bad folder is explained.
    let json = scratch.path().join("corpus.json");
    harness.state_mut().corpus_view_mut().save_json(&json);
    harness.step();
    let (message, failed) = harness.state().corpus_view().save_message().unwrap();
    assert!(!failed, "{message}");
    let saved = std::fs::read_to_string(&json).unwrap();
    assert_eq!(saved, report.to_json());
    let parsed: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(parsed["windows"], report.windows);
    let bad = scratch.path().join("no such folder").join("corpus.json");
    harness.state_mut().corpus_view_mut().save_json(&bad);
    harness.step();
    let (message, failed) = harness.state().corpus_view().save_message().unwrap();
    assert!(failed, "{message}");
    let message = message.to_string();
    assert!(shows(&harness, &message), "the error is shown: {message}");

    assert_interactive_analysis_works(&mut harness);
}

/// Ticked, "Ablate each head alone" ablates every head in every window:
/// the report holds each head's importance (MiniLM, an encoder: the output
/// change only), equal to the library's with the same options, and the
/// head grid shows it.
#[test]
fn the_corpus_window_measures_each_heads_importance() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("corpus");
    write_corpus(&dir, 3);
    let mut harness = start();
    open_corpus_window(&mut harness);
    harness.get_by_label(IMPORTANCE_LABEL).click();
    harness.step();
    harness.get_by_label("mean").click();
    harness.step();
    type_folder_and_run(&mut harness, &dir);
    let report = finished_report(&mut harness);
    assert_eq!(report.importance, Some(AblationMode::Mean));

    let expected = library_report(&harness, &dir, Some(AblationMode::Mean));
    assert_eq!(report.windows, 3);
    let figure = headscope::corpus::HEAD_FIGURES
        .iter()
        .position(|&f| f == "importance_output_change")
        .unwrap();
    for (ours, theirs) in report.layers.iter().zip(&expected.layers) {
        for (head, other) in ours.heads.iter().zip(&theirs.heads) {
            let what = format!("L{} H{}", ours.layer, head.head);
            assert_eq!(head.importance_output_change.n, 3, "{what}");
            assert!(head.importance_output_change.mean.unwrap() > 0.0, "{what}");
            assert_eq!(
                head.importance_delta_loss.n, 0,
                "{what}: an encoder has no loss"
            );
            assert_summary_close(
                &head.importance_output_change,
                &other.importance_output_change,
                &what,
            );
            // The grid opened on the importance, each head's number shown.
            harness.get_by_label(&head_cell_label(ours.layer, head, figure));
        }
    }
    assert!(shows(&harness, "importance: output change"));
    assert!(shows(&harness, "each head ablated alone (mean ablation)"));
    save_window(&mut harness, "corpus-importance.png");
}

/// A JSON Lines corpus whose text is in a field named by the user: every
/// record with the field is a document named by its id; a record without
/// it is skipped with the reason, and the rest goes on.
#[test]
fn a_json_lines_corpus_with_a_named_text_field() {
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("harbour.jsonl");
    let mut lines: Vec<String> = (0..4)
        .map(|d| {
            let body = SENTENCES[d * 3..d * 3 + 3].join(" ");
            serde_json::json!({"id": format!("doc-{d}"), "body": body}).to_string()
        })
        .collect();
    lines.insert(
        2,
        serde_json::json!({"id": "empty", "title": "no body"}).to_string(),
    );
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let mut harness = start();
    open_corpus_window(&mut harness);
    harness.get_by_label(TEXT_FIELD_LABEL).focus();
    harness.step();
    harness.get_by_label(TEXT_FIELD_LABEL).type_text("body");
    harness.step();
    type_folder_and_run(&mut harness, &path);
    let report = finished_report(&mut harness);
    let ids: Vec<&str> = report.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["doc-0", "doc-1", "doc-2", "doc-3"]);
    assert_eq!(report.files, 4);
    assert_eq!(report.skipped.len(), 1);
    let skipped = &report.skipped[0];
    assert!(
        skipped.path.ends_with("harbour.jsonl:3"),
        "{}",
        skipped.path
    );
    assert!(
        skipped.reason.contains("no \"body\" field"),
        "{}",
        skipped.reason
    );
    assert!(shows(&harness, "Skipped files (1)"));
    assert!(shows(
        &harness,
        &format!("{}: {}", skipped.path, skipped.reason)
    ));

    // The same numbers as the library reading the same file.
    let sources = SourceOptions {
        text_field: "body".into(),
        ..Default::default()
    };
    let settings = harness.state().settings();
    let options = settings.corpus_options();
    let model =
        Model::load(&ModelSource::Folder(test_model_dir()), &mut |_| {}).expect("load the model");
    let plan = corpus::find_documents(&[path], &sources).expect("documents");
    let expected = corpus::run_files(&model, plan, &options, &mut |_| {}, &AtomicBool::new(false));
    assert_eq!(report.windows, expected.windows);
    assert_eq!(report.tokens, expected.tokens);
    for (ours, theirs) in report.layers.iter().zip(&expected.layers) {
        for ((name, a), (_, b)) in ours.figures().iter().zip(theirs.figures()) {
            assert_summary_close(a, &b, &format!("L{} {name}", ours.layer));
        }
    }
}

#[test]
fn cancel_gives_a_partial_result() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("corpus");
    write_corpus(&dir, 10);
    let mut harness = start();
    // Every window waits this long, so the run is still going when Cancel
    // is pressed.
    harness
        .state()
        .worker()
        .set_artificial_delay(Duration::from_millis(400));
    open_corpus_window(&mut harness);
    type_folder_and_run(&mut harness, &dir);
    assert!(harness.state().corpus_view().is_running());
    step_until(&mut harness, "the first window", |h| {
        h.state().corpus_view().windows_done().unwrap_or(0) >= 2
    });
    assert!(shows(&harness, corpus_window::PROGRESS_LABEL));
    // The one progress row: what, documents k of n, the time left.
    let what = format!("{} · ", corpus_window::PROGRESS_WHAT);
    let row = label_containing(&harness, &what);
    assert!(
        row.contains(" of ") && row.contains(" documents · "),
        "{row}"
    );
    assert!(row.ends_with(" s left"), "{row}");
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-progress.png");
    harness
        .render()
        .expect("wgpu renders the window")
        .save(&picture)
        .expect("save the picture");
    harness.get_by_label(CANCEL_LABEL).click();
    harness.step();
    step_until(&mut harness, "the cancelled run", |h| {
        !h.state().corpus_view().is_running()
    });
    let report = harness
        .state()
        .corpus_view()
        .report()
        .expect("a partial report")
        .clone();
    assert!(report.partial);
    assert!(report.windows >= 2, "{} windows", report.windows);
    assert!(report.files < 10, "{} files", report.files);
    assert!(shows(&harness, "Partial result"));
    // The figures of the windows done are shown.
    let accuracy = &report.layers[0].segmentation_accuracy;
    harness.get_by_label(&layer_cell_label(0, "segmentation_accuracy", accuracy));

    harness
        .state()
        .worker()
        .set_artificial_delay(Duration::ZERO);
    assert_interactive_analysis_works(&mut harness);

    // Run again to the end: the partial result gives way to a complete one.
    harness.get_by_label(RUN_LABEL).click();
    harness.step();
    step_until(&mut harness, "the second run", |h| {
        !h.state().corpus_view().is_running()
    });
    let report = harness.state().corpus_view().report().expect("a report");
    assert!(!report.partial);
    assert_eq!(report.files, 10);
}

/// Every update until the channel closes or `limit` passes.
fn drain(
    updates: &crossbeam_channel::Receiver<CorpusUpdate>,
    limit: Duration,
) -> Vec<CorpusUpdate> {
    let deadline = Instant::now() + limit;
    let mut out = Vec::new();
    while let Ok(update) = updates.recv_deadline(deadline) {
        out.push(update);
    }
    out
}

#[test]
fn a_corpus_run_without_a_model_says_so() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    write_corpus(scratch.path(), 2);
    let updates = worker.run_corpus(
        vec![scratch.path().to_path_buf()],
        SourceOptions::default(),
        CorpusOptions::default(),
        Arc::new(AtomicBool::new(false)),
    );
    match drain(&updates, PATIENCE).last() {
        Some(CorpusUpdate::Failed(message)) => assert!(message.contains("no model"), "{message}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn dropping_the_worker_stops_a_corpus_run() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).unwrap();
    worker.load_model(ModelSource::Folder(test_model_dir()));
    let deadline = Instant::now() + PATIENCE;
    loop {
        match worker.events().recv_deadline(deadline) {
            Ok(WorkerEvent::Model {
                event: ModelEvent::Ready(_),
                ..
            }) => break,
            Ok(WorkerEvent::Model {
                event: ModelEvent::Failed { message, .. },
                ..
            }) => panic!("{message}"),
            Ok(_) => {}
            Err(e) => panic!("no model: {e}"),
        }
    }
    // Slow enough that the run is far from done when the worker goes.
    worker.set_artificial_delay(Duration::from_secs(2));
    let scratch = tempfile::tempdir().unwrap();
    write_corpus(scratch.path(), 6);
    let updates = worker.run_corpus(
        vec![scratch.path().to_path_buf()],
        SourceOptions::default(),
        CorpusOptions::default(),
        Arc::new(AtomicBool::new(false)),
    );
    // Wait for the first window, then drop the handle.
    let deadline = Instant::now() + PATIENCE;
    loop {
        match updates.recv_deadline(deadline) {
            Ok(CorpusUpdate::Progress(p)) if p.windows_done >= 1 => break,
            Ok(_) => {}
            Err(e) => panic!("no progress: {e}"),
        }
    }
    let start = Instant::now();
    drop(worker);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "dropping took {:?}",
        start.elapsed()
    );
    match drain(&updates, Duration::from_secs(5)).last() {
        Some(CorpusUpdate::Finished(report, _)) => {
            assert!(report.partial);
            assert!(report.windows >= 1 && report.files < 6, "{report:?}");
        }
        other => panic!("expected a partial report, got {other:?}"),
    }
}

/// Captures of the test model's runs on `files` texts of three sentences,
/// written into `dir` (P kept).
fn write_captures(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let model = common::loaded_test_model();
    for f in 0..files {
        let text = SENTENCES[f..f + 3].join(" ");
        let output = headscope::pipeline::run(
            model,
            &text,
            &Default::default(),
            &Default::default(),
            &|| false,
        )
        .unwrap();
        let path = dir.join(format!("capture{f}.safetensors"));
        common::save_test_capture(&path, &text, &output, true);
    }
}

/// What the library gives on a folder of captures with `options`.
fn library_capture_report(dir: &Path, options: &CorpusOptions) -> CorpusReport {
    let plan = corpus::find_captures(&[dir.to_path_buf()]).expect("captures");
    corpus::run_captures(
        &plan,
        &options.analysis,
        &mut |_| {},
        &AtomicBool::new(false),
    )
    .report()
}

#[test]
fn the_corpus_window_runs_a_folder_of_captures() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("captures");
    write_captures(&dir, 4);
    let mut harness = start();
    open_corpus_window(&mut harness);
    type_folder_and_run(&mut harness, &dir);
    let report = finished_report(&mut harness);
    assert!(!report.partial);
    assert_eq!(report.model, "all-MiniLM-L6-v2 (captures)");
    assert_eq!((report.files, report.windows), (4, 4));
    let expected = library_capture_report(&dir, &harness.state().settings().corpus_options());
    assert_eq!(report.tokens, expected.tokens);
    for (ours, theirs) in report.layers.iter().zip(&expected.layers) {
        for ((name, a), (_, b)) in ours.figures().iter().zip(theirs.figures()) {
            assert_summary_close(a, &b, &format!("L{} {name}", ours.layer));
            harness.get_by_label(&layer_cell_label(ours.layer, name, &b));
        }
    }
    assert!(shows(&harness, "Complete result"));
    let image = harness.render().expect("wgpu renders the window");
    if let Ok(out) = std::env::var("HEADSCOPE_SCREENSHOT_DIR") {
        image
            .save(Path::new(&out).join("corpus-captures.png"))
            .unwrap();
    }
}

#[test]
fn a_corpus_of_captures_needs_no_model() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    write_captures(scratch.path(), 2);
    let options = CorpusOptions::default();
    let updates = worker.run_corpus(
        vec![scratch.path().to_path_buf()],
        SourceOptions::default(),
        options.clone(),
        Arc::new(AtomicBool::new(false)),
    );
    match drain(&updates, PATIENCE).last() {
        Some(CorpusUpdate::Finished(report, _)) => {
            assert_eq!(report.windows, 2);
            let expected = library_capture_report(scratch.path(), &options);
            assert_eq!(report.layers, expected.layers);
        }
        other => panic!("expected a report, got {other:?}"),
    }
    // No model to ablate: the importance is refused, with what to do.
    let updates = worker.run_corpus(
        vec![scratch.path().to_path_buf()],
        SourceOptions::default(),
        CorpusOptions {
            importance: Some(AblationMode::Zero),
            ..options
        },
        Arc::new(AtomicBool::new(false)),
    );
    match drain(&updates, PATIENCE).last() {
        Some(CorpusUpdate::Failed(message)) => {
            assert!(message.contains("no model to run"), "{message}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
