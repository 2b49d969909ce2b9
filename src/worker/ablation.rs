//! Ablation for the app (ANALYSIS.md §9, [`crate::model::ablation`]): the
//! loaded model runs the shown input without and with a set of heads
//! ablated, on a thread of its own that borrows the model (as the probe
//! and the predictions do), so the analyses keep answering. Its two passes
//! are counted in a [`JobProgress`] whose cancel stops it at the next layer.

use super::{AnalysisWorker, Command, JobError, JobProgress, WorkerThread};
use crate::model::ablation::{Ablation, AblationEffect};
use crate::model::Model;
use crossbeam_channel::{Receiver, Sender};
use std::sync::Arc;

/// The effect of an ablation, or why there is none.
pub type AblationResult = Result<Arc<AblationEffect>, JobError>;

pub(super) struct AblationJob {
    input_ids: Vec<u32>,
    ablation: Ablation,
    /// Counts the two passes; cancelled, stops the job.
    progress: Arc<JobProgress>,
    reply: Sender<AblationResult>,
}

impl AnalysisWorker {
    /// The effect of `ablation` on `input_ids` with the loaded model, on a
    /// thread of its own; `progress` counts its passes, and its cancel
    /// stops it at the next layer (the answer is then an error).
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
}

impl WorkerThread {
    pub(super) fn start_ablation(&self, job: AblationJob) {
        let AblationJob {
            input_ids,
            ablation,
            progress,
            reply,
        } = job;
        self.answer_on_thread("ablation", "the ablation", reply, move |model| {
            run_ablation(model, &input_ids, &ablation, &progress)
        });
    }
}

/// The unablated pass (keeping the residual stream the ablated one resumes
/// from), then the ablated one, each a step of the job's progress.
fn run_ablation(
    model: &Model,
    input_ids: &[u32],
    ablation: &Ablation,
    progress: &JobProgress,
) -> AblationResult {
    let cancelled = || progress.is_cancelled();
    let failed = |e: anyhow::Error| {
        JobError::Failed(if progress.is_cancelled() {
            "cancelled".into()
        } else {
            format!("{e:#}")
        })
    };
    let base = model
        .pass_outcome(input_ids, None, &cancelled, true)
        .map_err(failed)?;
    progress.step();
    let effect = model
        .ablate_against(input_ids, &base, ablation, &cancelled)
        .map_err(failed)?;
    progress.step();
    Ok(Arc::new(effect))
}
