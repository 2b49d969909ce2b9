//! Ablation for the app (ANALYSIS.md §9, [`crate::model::ablation`]): the
//! loaded model runs the shown input without and with a set of heads
//! ablated ([`AnalysisWorker::ablate`]) — and once more whole with them
//! ablated, analysed, so the figures of the layers after them can be
//! shown —, or with each head ablated alone
//! ([`AnalysisWorker::head_importance`]), on a thread of its own that
//! borrows the model (as the probe and the predictions do), so the
//! analyses keep answering. Its passes are counted in a [`JobProgress`]
//! whose cancel stops it at the next layer.

use super::{AnalysisWorker, Command, JobError, JobProgress, WorkerThread};
use crate::analysis::AnalysisOptions;
use crate::input::BuiltInput;
use crate::model::ablation::{Ablation, AblationEffect, AblationMode, HeadImportance};
use crate::model::Model;
use crate::pipeline::{self, AblatedWatch, RunOutput};
use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;

/// What an ablation answers: its effect against the unablated run, and
/// the run of the ablated model, analysed (every figure of ANALYSIS.md,
/// the layers after the ablated heads' changed).
#[derive(Debug)]
pub struct AblationAnswer {
    pub effect: AblationEffect,
    pub run: Arc<RunOutput>,
}

/// The answer to an ablation, or why there is none.
pub type AblationResult = Result<Arc<AblationAnswer>, JobError>;

/// The passes of an ablation job: without, with (for the effect), and
/// the ablated run analysed.
pub const ABLATION_PASSES: usize = 3;

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
    input: BuiltInput,
    options: AnalysisOptions,
    ablation: Ablation,
    /// Counts the passes; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<AblationResult>,
}

impl AnalysisWorker {
    /// The effect of `ablation` on `input` (a shown result's) with the
    /// loaded model, and the ablated run analysed under `options`, on a
    /// thread of its own; `progress` counts its passes
    /// ([`ABLATION_PASSES`]), and its cancel stops it at the next layer
    /// (the answer is then an error).
    pub fn ablate(
        &self,
        (input, options): (BuiltInput, AnalysisOptions),
        ablation: Ablation,
        progress: Arc<JobProgress>,
    ) -> Receiver<AblationResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Ablate(AblationJob {
            input,
            options,
            ablation,
            progress,
            reply,
        }));
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
            input,
            options,
            ablation,
            progress,
            reply,
        } = job;
        self.answer_on_thread("ablation", "the ablation", reply, move |model| {
            run_ablation(model, (input, &options), &ablation, &progress)
        });
    }
}

/// The unablated pass (keeping the residual stream the ablated one resumes
/// from), then the ablated one, then the ablated run whole, captured and
/// analysed as the shown result was: each a step of the job's progress.
fn run_ablation(
    model: &Model,
    (input, options): (BuiltInput, &AnalysisOptions),
    ablation: &Ablation,
    progress: &JobProgress,
) -> AblationResult {
    let cancelled = || progress.is_cancelled();
    let input_ids = input.tokens.input_ids.clone();
    let base = model
        .pass_outcome(&input_ids, None, &cancelled, true)
        .map_err(|e| failed(progress, e))?;
    progress.step();
    let effect = model
        .ablate_against(&input_ids, &base, ablation, &cancelled)
        .map_err(|e| failed(progress, e))?;
    progress.step();
    let watch = AblatedWatch {
        inner: &cancelled,
        ablation,
    };
    let run = pipeline::run_prepared(model, input, options, &watch)
        .map_err(|e| failed(progress, e.into()))?;
    progress.step();
    Ok(Arc::new(AblationAnswer {
        effect,
        run: Arc::new(run),
    }))
}

/// Why a job of `progress` gave no answer.
fn failed(progress: &JobProgress, error: anyhow::Error) -> JobError {
    JobError::Failed(if progress.is_cancelled() {
        "cancelled".into()
    } else {
        format!("{error:#}")
    })
}
