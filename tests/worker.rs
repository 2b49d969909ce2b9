//! The model thread with the real test model (all-MiniLM-L6-v2): results,
//! newest-request-wins, clear errors, panic recovery and shutdown.
//!
//! Needs the model that `scripts/fetch-test-model.sh` unpacks.

use headscope::analysis::AnalysisOptions;
use headscope::model::{test_model_dir, ModelSource};
use headscope::pipeline::InputOptions;
use headscope::worker::{AnalysisWorker, ModelEvent, RunFailure, WorkerEvent};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound for waiting on the worker, not a speed requirement.
const PATIENCE: Duration = Duration::from_secs(300);

const TEXT: &str = "The harbour was quiet before dawn. A fisherman untied his boat. \
                    Gulls followed the boat, hoping for scraps of bait.";

fn model_source() -> ModelSource {
    let dir = test_model_dir();
    assert!(
        headscope::model::is_model_folder(&dir),
        "the test model is missing at {}: run scripts/fetch-test-model.sh",
        dir.display()
    );
    ModelSource::Folder(dir)
}

/// Collects events until one matches `done`; panics on timeout.
fn wait_for(
    worker: &AnalysisWorker,
    mut done: impl FnMut(&WorkerEvent) -> bool,
) -> Vec<WorkerEvent> {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match worker.events().recv_timeout(left) {
            Ok(event) => {
                let finished = done(&event);
                seen.push(event);
                if finished {
                    return seen;
                }
            }
            Err(e) => panic!("no matching worker event ({e}); events so far: {seen:#?}"),
        }
    }
}

fn ready_worker() -> AnalysisWorker {
    ready_worker_with(Arc::new(|| {}))
}

fn analyse(worker: &AnalysisWorker, text: &str) -> u64 {
    worker.analyse(
        text.to_string(),
        InputOptions::default(),
        AnalysisOptions::default(),
    )
}

#[test]
fn a_request_gives_every_head_of_every_layer() {
    let worker = ready_worker();
    let generation = analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    assert!(
        events
            .iter()
            .any(|e| matches!(e, WorkerEvent::RunStarted { generation: g } if *g == generation)),
        "a run-started event comes first: {events:?}"
    );
    let Some(WorkerEvent::RunFinished {
        generation: g,
        output,
    }) = events.last()
    else {
        panic!("the run failed: {:?}", events.last());
    };
    assert_eq!(*g, generation);
    assert_eq!(output.analysis.layers.len(), 6);
    assert!(output.analysis.layers.iter().all(|l| l.heads.len() == 12));
    assert_eq!((output.captures.layers, output.captures.heads), (6, 12));
    let t = output.input.tokens.len();
    assert_eq!(output.captures.tokens, t);
    assert_eq!(output.captures.attentions.len(), 6 * 12 * t * t);
    assert_eq!(output.input.sentences_analysed, 3);
    // Every attention row is a probability distribution.
    let row: f32 = output.captures.attentions[..t].iter().sum();
    assert!((row - 1.0).abs() < 1e-3, "row sums to {row}");
}

#[test]
fn a_burst_of_requests_ends_with_the_newest() {
    let worker = ready_worker();
    // A slow model makes sure the burst arrives while the first request is
    // still waiting, so the older ones must be abandoned or skipped.
    worker.set_artificial_delay(Duration::from_millis(400));
    let texts: Vec<String> = (1..=6).map(|n| "The boat came back. ".repeat(n)).collect();
    let generations: Vec<u64> = texts.iter().map(|t| analyse(&worker, t)).collect();
    let newest = *generations.last().expect("six requests");
    let events = wait_for(
        &worker,
        |e| matches!(e, WorkerEvent::RunFinished { generation, .. } | WorkerEvent::RunFailed { generation, .. } if *generation == newest),
    );
    let finished: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::RunFinished { generation, .. } => Some(*generation),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        vec![newest],
        "only the newest request finishes: {events:?}"
    );
    let Some(WorkerEvent::RunFinished { output, .. }) = events.last() else {
        panic!("the newest run failed: {:?}", events.last());
    };
    assert_eq!(
        output.input.sentences_analysed, 6,
        "the result is the newest text's (six sentences)"
    );
    // A request after the burst is served normally.
    worker.set_artificial_delay(Duration::ZERO);
    let again = analyse(&worker, TEXT);
    let events = wait_for(
        &worker,
        |e| matches!(e, WorkerEvent::RunFinished { generation, .. } if *generation == again),
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, WorkerEvent::RunFailed { .. })));
}

#[test]
fn an_empty_text_gives_a_clear_error() {
    let worker = ready_worker();
    let generation = analyse(&worker, "   \n\t ");
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    match events.last() {
        Some(WorkerEvent::RunFailed {
            generation: g,
            failure,
            message,
        }) => {
            assert_eq!(*g, generation);
            assert_eq!(*failure, RunFailure::Input);
            assert!(message.contains("empty"), "message: {message}");
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn a_panic_is_reported_and_the_worker_keeps_serving() {
    let worker = ready_worker();
    worker.inject_panic();
    let broken = analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    match events.last() {
        Some(WorkerEvent::RunFailed {
            generation,
            failure: RunFailure::Panic,
            message,
        }) => {
            assert_eq!(*generation, broken);
            assert!(message.contains("still usable"), "message: {message}");
        }
        other => panic!("expected a panic report, got {other:?}"),
    }
    assert!(worker.is_alive());
    let fine = analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    assert!(
        matches!(events.last(), Some(WorkerEvent::RunFinished { generation, .. }) if *generation == fine),
        "the next request succeeds: {:?}",
        events.last()
    );
}

#[test]
fn a_failed_load_is_explained_and_keeps_the_old_model() {
    let worker = ready_worker();
    let missing = std::env::temp_dir().join("headscope-no-such-model-folder");
    worker.load_model(ModelSource::Folder(missing.clone()));
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::Model {
                event: ModelEvent::Ready(_) | ModelEvent::Failed { .. },
                ..
            }
        )
    });
    match events.last() {
        Some(WorkerEvent::Model {
            event: ModelEvent::Failed { message, .. },
            ..
        }) => {
            assert!(
                message.contains(&missing.display().to_string()),
                "the message names the folder: {message}"
            );
        }
        other => panic!("expected a load failure, got {other:?}"),
    }
    let generation = analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    assert!(
        matches!(events.last(), Some(WorkerEvent::RunFinished { generation: g, .. }) if *g == generation),
        "the old model still answers: {:?}",
        events.last()
    );
}

/// A folder that looks like a model but whose weights are not a
/// safetensors file: the kind of broken download a user may pick.
fn broken_model_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("broken-model");
    std::fs::create_dir_all(&folder).expect("create the folder");
    let model = test_model_dir();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(model.join(file), folder.join(file)).expect("copy");
    }
    std::fs::write(folder.join("model.safetensors"), b"not a safetensors file").expect("write");
    folder
}

#[test]
fn a_broken_folder_keeps_the_old_model_and_the_failure_names_it() {
    let worker = ready_worker();
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = broken_model_folder(dir.path());
    worker.load_model(ModelSource::Folder(broken.clone()));
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::Model {
                event: ModelEvent::Ready(_) | ModelEvent::Failed { .. },
                ..
            }
        )
    });
    match events.last() {
        Some(WorkerEvent::Model {
            event:
                ModelEvent::Failed {
                    source,
                    message,
                    kept,
                },
            ..
        }) => {
            assert_eq!(source, &ModelSource::Folder(broken.clone()));
            assert!(message.contains("model.safetensors"), "{message}");
            assert!(!message.contains("--model"), "{message}");
            let kept = kept.as_ref().expect("the old model is kept");
            assert_eq!(kept.source, model_source());
            assert_eq!((kept.layers, kept.heads), (6, 12));
        }
        other => panic!("expected a load failure, got {other:?}"),
    }
    // The old model answers, with its own shape.
    let generation = analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    match events.last() {
        Some(WorkerEvent::RunFinished {
            generation: g,
            output,
        }) if *g == generation => {
            assert_eq!((output.captures.layers, output.captures.heads), (6, 12));
        }
        other => panic!("the old model did not answer: {other:?}"),
    }
}

#[test]
fn a_failed_first_load_keeps_no_model() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).expect("spawn worker");
    let dir = tempfile::tempdir().expect("temp dir");
    worker.load_model(ModelSource::Folder(broken_model_folder(dir.path())));
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::Model {
                event: ModelEvent::Ready(_) | ModelEvent::Failed { .. },
                ..
            }
        )
    });
    assert!(
        matches!(
            events.last(),
            Some(WorkerEvent::Model {
                event: ModelEvent::Failed { kept: None, .. },
                ..
            })
        ),
        "{:?}",
        events.last()
    );
}

#[test]
fn without_a_model_a_request_says_so() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).expect("spawn worker");
    analyse(&worker, TEXT);
    let events = wait_for(&worker, |e| matches!(e, WorkerEvent::RunFailed { .. }));
    assert!(matches!(
        events.last(),
        Some(WorkerEvent::RunFailed {
            failure: RunFailure::NoModel,
            ..
        })
    ));
}

#[test]
fn events_wake_the_ui() {
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = wakes.clone();
    let worker = AnalysisWorker::spawn(Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    }))
    .expect("spawn worker");
    analyse(&worker, TEXT);
    wait_for(&worker, |e| matches!(e, WorkerEvent::RunFailed { .. }));
    assert!(
        wakes.load(Ordering::SeqCst) >= 2,
        "started and failed each wake the UI"
    );
}

#[test]
fn dropping_the_worker_joins_its_thread_even_mid_run() {
    // The thread owns a clone of the waker: once the thread has ended, only
    // the test's own reference is left.
    let marker: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
    let worker = ready_worker_with(marker.clone());
    worker.set_artificial_delay(Duration::from_secs(3600));
    let generation = analyse(&worker, TEXT);
    wait_for(
        &worker,
        |e| matches!(e, WorkerEvent::RunStarted { generation: g } if *g == generation),
    );
    assert!(
        Arc::strong_count(&marker) > 1,
        "the thread holds the waker while it runs"
    );
    drop(worker);
    assert_eq!(
        Arc::strong_count(&marker),
        1,
        "after drop returns the thread has ended"
    );
}

fn ready_worker_with(wake: Arc<dyn Fn() + Send + Sync>) -> AnalysisWorker {
    let worker = AnalysisWorker::spawn(wake).expect("spawn worker");
    worker.load_model(model_source());
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::Model {
                event: ModelEvent::Ready(_) | ModelEvent::Failed { .. },
                ..
            }
        )
    });
    match events.last() {
        Some(WorkerEvent::Model {
            event: ModelEvent::Ready(info),
            ..
        }) => {
            assert_eq!((info.layers, info.heads), (6, 12));
            assert_eq!(info.max_tokens, 512);
        }
        other => panic!("the test model did not load: {other:?}"),
    }
    worker
}

/// The tiny Llama of tests/fixtures/families (2 layers), with its text.
fn decoder_fixture() -> (ModelSource, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families");
    let text = std::fs::read_to_string(dir.join("llama.txt")).unwrap();
    (ModelSource::Folder(dir.join("llama")), text)
}

#[test]
fn a_long_decoder_run_tells_its_progress_and_can_be_cancelled() {
    let worker = AnalysisWorker::spawn(Arc::new(|| {})).unwrap();
    let (source, text) = decoder_fixture();
    worker.load_model(source);
    wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::Model {
                event: ModelEvent::Ready(_),
                ..
            }
        )
    });
    // A slow model: each of its 2 layers waits 400 ms first.
    worker.set_layer_delay(Duration::from_millis(400));
    let generation = analyse(&worker, &text);
    let events = wait_for(
        &worker,
        |e| matches!(e, WorkerEvent::RunProgress { progress, .. } if progress.layers_done >= 1),
    );
    let Some(WorkerEvent::RunProgress {
        generation: g,
        progress,
    }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(*g, generation);
    assert_eq!((progress.layers_done, progress.layers), (1, 2));
    assert!(!progress.figures);
    let left = progress.time_left().expect("an estimate after a layer");
    assert!(left > Duration::ZERO, "{progress:?}");
    assert!(
        progress.describe().starts_with("layer 2 of 2 · ~"),
        "{}",
        progress.describe()
    );
    // Cancelled in the middle: abandoned, no result, no failure.
    worker.cancel_run();
    let events = wait_for(
        &worker,
        |e| matches!(e, WorkerEvent::RunAbandoned { generation: g } if *g == generation),
    );
    assert!(
        !events.iter().any(|e| matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )),
        "{events:?}"
    );

    // Left alone, a run reports each layer in order and finishes.
    worker.set_layer_delay(Duration::from_millis(250));
    let generation = analyse(&worker, &text);
    let events = wait_for(&worker, |e| {
        matches!(
            e,
            WorkerEvent::RunFinished { .. } | WorkerEvent::RunFailed { .. }
        )
    });
    let progress: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::RunProgress {
                generation: g,
                progress,
            } if *g == generation => Some(*progress),
            _ => None,
        })
        .collect();
    assert!(!progress.is_empty(), "{events:?}");
    assert!(progress
        .windows(2)
        .all(|pair| pair[0].layers_done <= pair[1].layers_done));
    assert!(matches!(
        events.last(),
        Some(WorkerEvent::RunFinished { generation: g, .. }) if *g == generation
    ));
}
