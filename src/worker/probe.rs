//! The induction probe for the app (ANALYSIS.md §9, [`crate::probe`]): the
//! loaded model's analysis of its leading special tokens, 50 seeded random
//! ids and the same 50 again, on a thread of its own that borrows the
//! model (as the predictions do), so the analyses keep answering. Its
//! layers are counted in a [`JobProgress`] whose cancel stops it at the
//! next. The app captions the Heads grid with the roles it gives: the
//! previous-token and induction heads show on it whatever the text.

use super::{AnalysisWorker, Command, Hooks, JobError, JobProgress, WorkerThread};
use crate::analysis::AnalysisOptions;
use crate::model::Model;
use crate::pipeline::{self, InputOptions, RunError, RunOutput, RunProgress};
use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;

/// The probe's analysis, or why there is none.
pub type ProbeResult = Result<Arc<RunOutput>, JobError>;

pub(super) struct ProbeJob {
    input: InputOptions,
    options: AnalysisOptions,
    /// Counts the layers passed; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<ProbeResult>,
}

impl AnalysisWorker {
    /// The analysis of the induction probe with the loaded model, under
    /// `input`'s limits and `options`, on a thread of its own; `progress`
    /// counts its layers, and its cancel stops it at the next (the answer
    /// is then an error).
    pub fn induction_probe(
        &self,
        input: InputOptions,
        options: AnalysisOptions,
        progress: Arc<JobProgress>,
    ) -> Receiver<ProbeResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Probe(ProbeJob {
            input,
            options,
            progress,
            reply,
        }));
        receiver
    }
}

impl WorkerThread {
    pub(super) fn start_probe(&self, job: ProbeJob) {
        let hooks = self.hooks;
        let ProbeJob {
            input,
            options,
            progress,
            reply,
        } = job;
        self.answer_on_thread("probe", "the model", reply, move |model| {
            run_probe(model, &input, &options, &progress, hooks)
        });
    }
}

/// The probe's analysis, each layer passed a step of the job's progress,
/// stopped at the next layer once it is cancelled; `hooks`' layer delay
/// (the tests' slow model) is waited before each layer.
fn run_probe(
    model: &Model,
    input: &InputOptions,
    options: &AnalysisOptions,
    progress: &JobProgress,
    hooks: Hooks,
) -> ProbeResult {
    let watch = pipeline::Watched {
        cancelled: || !hooks.before_layer(&|| progress.is_cancelled()),
        progress: |run: RunProgress| progress.reach(run.layers_done),
    };
    let built = pipeline::prepare_probe(model, input)
        .map_err(|e| JobError::Failed(format!("the probe cannot be made: {e}")))?;
    match pipeline::run_prepared(model, built, options, &watch) {
        Ok(output) => Ok(Arc::new(output)),
        Err(RunError::Cancelled) => Err(JobError::Failed("cancelled".into())),
        Err(error) => Err(JobError::Failed(error.to_string())),
    }
}
