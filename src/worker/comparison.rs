//! Comparisons on the model thread: the second model is run on the text
//! whose result from the first the app already has, and the two are
//! compared ([`crate::pipeline::run_comparison`]).
//!
//! Like analyses, comparisons are numbered and only the newest counts:
//! one queued behind a newer one is dropped unseen, and one in progress
//! stops between two layers once it has gone stale (reported as
//! [`ComparisonEvent::Abandoned`]). They have their own numbering, so an
//! edit of the text (a new analysis) does not cancel a comparison, and
//! the reverse. A comparison counts model B's layers in the
//! [`JobProgress`] that came with it (the app's progress row shows it), and
//! stops at the next layer when that is cancelled.

use super::{panic_message, AnalysisWorker, Command, JobProgress, Slot, WorkerEvent, WorkerThread};
use crate::analysis::AnalysisOptions;
use crate::model::ModelSource;
use crate::pipeline::{self, ComparisonOutput, InputOptions, RunError, RunOutput, RunProgress};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One comparison the UI asks for: the text and options that gave `a`.
#[derive(Debug, Clone)]
pub struct ComparisonRequest {
    pub generation: u64,
    pub text: String,
    pub input: InputOptions,
    pub options: AnalysisOptions,
    /// The first model's result on this text.
    pub a: Arc<RunOutput>,
    /// Counts model B's layers as its run passes them; cancelling it
    /// abandons the comparison.
    pub progress: Arc<JobProgress>,
}

/// What became of a comparison request.
#[derive(Debug, Clone)]
pub enum ComparisonEvent {
    Started,
    Finished(Arc<ComparisonOutput>),
    /// A newer request replaced this one; nothing to show.
    Abandoned,
    Failed(ComparisonError),
}

/// Why a comparison gave no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ComparisonError {
    #[error("no model to compare with is loaded")]
    NoModel,
    /// The second slot holds a capture file (this one) taken of another
    /// text.
    #[error("{} holds a run on another text; compare it with a run on its own text", .0.display())]
    CaptureOfAnotherText(PathBuf),
    /// The second model could not run the text: a text it cannot take, or
    /// a model failure.
    #[error("{model}: {error}")]
    Run { model: String, error: String },
    /// A bug: the comparison panicked (the panic's message).
    #[error("the comparison crashed (a bug in headscope: {0}); the app is still usable")]
    Crashed(String),
}

impl AnalysisWorker {
    /// Loads the second model (for comparisons), replacing the previous
    /// one once it is ready; the first model is not touched.
    pub fn load_comparison_model(&self, source: ModelSource) {
        self.send(Command::Load(Slot::Compared, source));
    }

    /// Asks for the second model's run on `text` and its comparison with
    /// `a`, the first model's result on the same text; returns the
    /// request's generation. Any older comparison still queued or running
    /// is abandoned. `progress` counts B's layers (its total should be
    /// theirs); cancelling it abandons this one.
    pub fn compare(
        &self,
        text: String,
        input: InputOptions,
        options: AnalysisOptions,
        a: Arc<RunOutput>,
        progress: Arc<JobProgress>,
    ) -> u64 {
        let generation = self.latest_comparison.fetch_add(1, Ordering::SeqCst) + 1;
        self.send(Command::Compare(ComparisonRequest {
            generation,
            text,
            input,
            options,
            a,
            progress,
        }));
        generation
    }
}

impl WorkerThread {
    pub(super) fn compare(&mut self, request: ComparisonRequest) {
        let generation = request.generation;
        let emit = |this: &Self, event| this.emit(WorkerEvent::Comparison { generation, event });
        emit(self, ComparisonEvent::Started);
        let compared = self.slot(Slot::Compared);
        if let Some(capture) = compared.capture() {
            let event = if request.text != capture.header.text {
                ComparisonEvent::Failed(ComparisonError::CaptureOfAnotherText(capture.path.clone()))
            } else {
                let b = capture.run_output(&request.options);
                ComparisonEvent::Finished(Arc::new(pipeline::compare_runs(
                    request.a.clone(),
                    b,
                    capture.name(),
                )))
            };
            return emit(self, event);
        }
        let Some(model) = compared.model() else {
            emit(self, ComparisonEvent::Failed(ComparisonError::NoModel));
            return;
        };
        let latest = &self.latest_comparison;
        let shutdown = &self.shutdown;
        let progress = &request.progress;
        let stale = || {
            latest.load(Ordering::SeqCst) != generation
                || shutdown.load(Ordering::SeqCst)
                || progress.is_cancelled()
        };
        let hooks = self.hooks;
        // B's run passes its layers in order: the layer about to run is
        // how many are done. Asked before each layer whether to stop (the
        // slow model of the tests waits there, as in an analysis).
        let watch = pipeline::Watched {
            cancelled: || !hooks.before_layer(&stale),
            progress: |run: RunProgress| progress.reach(run.layers_done),
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            if !hooks.before_run(&stale) {
                return Err(RunError::Cancelled);
            }
            pipeline::run_comparison(
                &model,
                request.a.clone(),
                &request.text,
                &request.input,
                &request.options,
                &watch,
            )
        }));
        let event = match result {
            Ok(Ok(output)) => ComparisonEvent::Finished(Arc::new(output)),
            Ok(Err(RunError::Cancelled)) => ComparisonEvent::Abandoned,
            Ok(Err(error)) => ComparisonEvent::Failed(ComparisonError::Run {
                model: model.name.clone(),
                error: error.to_string(),
            }),
            Err(payload) => {
                ComparisonEvent::Failed(ComparisonError::Crashed(panic_message(payload.as_ref())))
            }
        };
        emit(self, event);
    }
}
