//! Ablation for the app (ANALYSIS.md §9, [`crate::model::ablation`]): the
//! loaded model runs the shown input without and with a set of heads
//! ablated ([`AnalysisWorker::ablate`]), and, when the user asks to see
//! the figures of the layers after them, once more whole with them
//! ablated, analysed ([`AnalysisWorker::ablated_run`]); or with each head
//! ablated alone ([`AnalysisWorker::head_importance`]). Each on a thread of
//! its own that borrows the model (as the probe and the predictions do),
//! so the analyses keep answering; its passes are counted in a
//! [`JobProgress`] whose cancel stops it at the next layer.

use super::{AnalysisWorker, Command, JobError, JobProgress, WorkerThread};
use crate::analysis::AnalysisOptions;
use crate::input::BuiltInput;
use crate::model::ablation::{Ablation, AblationEffect, AblationMode, HeadImportance};
use crate::pipeline::{self, AblatedWatch, RunOutput};
use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;

/// The effect of an ablation against the unablated run, or why there is
/// none.
pub type AblationResult = Result<Arc<AblationEffect>, JobError>;

/// The passes of an ablation job: without, and with (for the effect).
pub const ABLATION_PASSES: usize = 2;

/// The run of the ablated model, analysed (every figure of ANALYSIS.md,
/// the layers after the ablated heads' changed), or why there is none.
pub type AblatedRunResult = Result<Arc<RunOutput>, JobError>;

/// The effect of ablating each head alone, or why there is none.
pub type ImportanceResult = Result<Arc<HeadImportance>, JobError>;

pub(super) struct ImportanceJob {
    input_ids: Vec<u32>,
    mode: AblationMode,
    /// Counts the heads ablated; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<ImportanceResult>,
}

pub(super) struct AblationJob {
    input_ids: Vec<u32>,
    ablation: Ablation,
    /// Counts the passes; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<AblationResult>,
}

pub(super) struct AblatedRunJob {
    input: BuiltInput,
    options: AnalysisOptions,
    ablation: Ablation,
    /// Counts the one pass; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<AblatedRunResult>,
}

impl AnalysisWorker {
    /// The effect of `ablation` on `input_ids` (a shown result's) with the
    /// loaded model, on a thread of its own; `progress` counts its passes
    /// ([`ABLATION_PASSES`]), and its cancel stops it at the next layer
    /// (the answer is then an error).
    pub fn ablate(
        &self,
        input_ids: Vec<u32>,
        ablation: Ablation,
        progress: Arc<JobProgress>,
    ) -> Receiver<AblationResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Ablate(AblationJob {
            input_ids,
            ablation,
            progress,
            reply,
        }));
        receiver
    }

    /// `input` (a shown result's) run whole with `ablation`, captured and
    /// analysed under `options` as the shown result was, on a thread of its
    /// own; `progress` counts its one pass, and its cancel stops it.
    pub fn ablated_run(
        &self,
        (input, options): (BuiltInput, AnalysisOptions),
        ablation: Ablation,
        progress: Arc<JobProgress>,
    ) -> Receiver<AblatedRunResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::AblatedRun(Box::new(AblatedRunJob {
            input,
            options,
            ablation,
            progress,
            reply,
        })));
        receiver
    }

    /// `head_importance` of `input_ids` with the loaded model: each head
    /// ablated alone (`mode`), L × H passes on a thread of its own;
    /// `progress` counts the heads, and its cancel stops it.
    pub fn head_importance(
        &self,
        input_ids: Vec<u32>,
        mode: AblationMode,
        progress: Arc<JobProgress>,
    ) -> Receiver<ImportanceResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Importance(ImportanceJob {
            input_ids,
            mode,
            progress,
            reply,
        }));
        receiver
    }
}

impl WorkerThread {
    pub(super) fn start_importance(&self, job: ImportanceJob) {
        let ImportanceJob {
            input_ids,
            mode,
            progress,
            reply,
        } = job;
        self.answer_on_thread("importance", "the heads' importance", reply, move |model| {
            let cancelled = || progress.is_cancelled();
            model
                .head_importance(&input_ids, mode, &cancelled, &|done, _| {
                    progress.reach(done)
                })
                .map(Arc::new)
                .map_err(|e| failed(&progress, e))
        });
    }

    pub(super) fn start_ablation(&self, job: AblationJob) {
        let AblationJob {
            input_ids,
            ablation,
            progress,
            reply,
        } = job;
        self.answer_on_thread("ablation", "the ablation", reply, move |model| {
            // The unablated pass keeps the residual stream the ablated one
            // resumes from; each is a step of the job's progress.
            let cancelled = || progress.is_cancelled();
            let base = model
                .pass_outcome(&input_ids, None, &cancelled, true)
                .map_err(|e| failed(&progress, e))?;
            progress.step();
            let effect = model
                .ablate_against(&input_ids, &base, &ablation, &cancelled)
                .map_err(|e| failed(&progress, e))?;
            progress.step();
            Ok(Arc::new(effect))
        });
    }

    pub(super) fn start_ablated_run(&self, job: Box<AblatedRunJob>) {
        let AblatedRunJob {
            input,
            options,
            ablation,
            progress,
            reply,
        } = *job;
        self.answer_on_thread("ablated-run", "the ablated run", reply, move |model| {
            let cancelled = || progress.is_cancelled();
            let watch = AblatedWatch {
                inner: &cancelled,
                ablation: &ablation,
            };
            let run = pipeline::run_prepared(model, input, &options, &watch)
                .map_err(|e| failed(&progress, e.into()))?;
            progress.step();
            Ok(Arc::new(run))
        });
    }
}

/// Why a job of `progress` gave no answer.
fn failed(progress: &JobProgress, error: anyhow::Error) -> JobError {
    JobError::Failed(if progress.is_cancelled() {
        "cancelled".into()
    } else {
        format!("{error:#}")
    })
}
