//! The induction probe's analysis for the Heads tab (ANALYSIS.md §9):
//! when the captions name the roles on the probe, the worker runs it once
//! per model on a thread of its own ([`crate::worker::AnalysisWorker::induction_probe`])
//! with a progress row and Cancel, and the tab shows it (the grid's
//! pictures, the captions, a head's detail) in place of the text's result;
//! the answer is kept until another model loads.

use crate::app::jobs::JobProgress;
use crate::pipeline::RunOutput;
use crate::worker::ProbeResult;
use crossbeam_channel::{Receiver, TryRecvError};
use std::sync::Arc;

/// What the probe's progress row says it does.
pub const PROBE_PROGRESS_LABEL: &str = "Running the induction probe";

/// The button that runs a cancelled probe again.
pub const RUN_PROBE_LABEL: &str = "Run the probe";

/// Where the probe of the loaded model stands.
#[derive(Default)]
enum ProbeState {
    /// Not asked for (yet, or since another model loaded).
    #[default]
    NotAsked,
    Running {
        answer: Receiver<ProbeResult>,
        progress: Arc<JobProgress>,
    },
    Done(Arc<RunOutput>),
    Failed(String),
    /// The user stopped it: not asked for again until [`ProbeSlot::run_again`].
    Cancelled,
}

/// The probe's analysis of the loaded model, or the answer being waited for.
#[derive(Default)]
pub struct ProbeSlot {
    state: ProbeState,
    /// How many probes were asked for: tells their pictures apart.
    asked: u64,
}

/// The top bit of a probe's [`ProbeSlot::generation`]: no text result
/// reaches it.
const PROBE_GENERATIONS: u64 = 1 << 63;

impl ProbeSlot {
    /// A progress for a probe of a model of `layers` layers.
    pub fn progress(layers: usize) -> Arc<JobProgress> {
        JobProgress::counting(PROBE_PROGRESS_LABEL, "layers", layers)
    }

    /// Another model is loaded: the probe of the last one is dropped (and
    /// stopped, if it runs).
    pub fn forget(&mut self) {
        if let ProbeState::Running { progress, .. } = &self.state {
            progress.cancel();
        }
        self.state = ProbeState::NotAsked;
    }

    /// Whether the probe needs asking for.
    pub fn wanted(&mut self) -> bool {
        self.poll();
        matches!(self.state, ProbeState::NotAsked)
    }

    /// The worker's answer will come on `answer`.
    pub fn requested(&mut self, answer: Receiver<ProbeResult>, progress: Arc<JobProgress>) {
        self.state = ProbeState::Running { answer, progress };
        self.asked += 1;
    }

    /// The result generation the probe's pictures are keyed by, apart
    /// from every text result's.
    pub fn generation(&self) -> u64 {
        PROBE_GENERATIONS | self.asked
    }

    /// The probe's analysis, once done.
    pub fn output(&self) -> Option<&Arc<RunOutput>> {
        match &self.state {
            ProbeState::Done(output) => Some(output),
            _ => None,
        }
    }

    /// Why the probe gave no analysis, if it failed.
    pub fn error(&self) -> Option<&str> {
        match &self.state {
            ProbeState::Failed(message) => Some(message),
            _ => None,
        }
    }

    /// The probe's progress while it runs.
    pub fn job(&self) -> Option<&JobProgress> {
        match &self.state {
            ProbeState::Running { progress, .. } => Some(progress),
            _ => None,
        }
    }

    /// Stops the probe (its thread stops at its next layer).
    pub fn cancel(&mut self) {
        if let ProbeState::Running { progress, .. } = &self.state {
            progress.cancel();
            self.state = ProbeState::Cancelled;
        }
    }

    pub fn is_cancelled(&self) -> bool {
        matches!(self.state, ProbeState::Cancelled)
    }

    /// Lets a cancelled probe be asked for again.
    pub fn run_again(&mut self) {
        if self.is_cancelled() {
            self.state = ProbeState::NotAsked;
        }
    }

    /// Takes the worker's answer, if it came.
    pub fn poll(&mut self) {
        let ProbeState::Running { answer, .. } = &self.state else {
            return;
        };
        self.state = match answer.try_recv() {
            Ok(Ok(output)) => ProbeState::Done(output),
            Ok(Err(error)) => ProbeState::Failed(format!("The induction probe failed: {error}")),
            Err(TryRecvError::Disconnected) => {
                ProbeState::Failed("The induction probe's thread ended without an answer".into())
            }
            Err(TryRecvError::Empty) => return,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::JobError;

    #[test]
    fn the_slot_keeps_the_answer_until_another_model_and_a_cancel_until_asked_again() {
        let mut slot = ProbeSlot::default();
        assert!(slot.wanted(), "asked for once wanted");
        let (reply, answer) = crossbeam_channel::bounded(1);
        slot.requested(answer, ProbeSlot::progress(3));
        assert!(!slot.wanted() && slot.job().is_some(), "running");
        reply.send(Ok(Arc::new(RunOutput::default()))).unwrap();
        assert!(!slot.wanted() && slot.output().is_some(), "done");
        slot.forget();
        assert!(slot.wanted() && slot.output().is_none(), "another model");

        let (_reply, answer) = crossbeam_channel::bounded(1);
        let progress = ProbeSlot::progress(3);
        slot.requested(answer, progress.clone());
        slot.cancel();
        assert!(progress.is_cancelled() && slot.is_cancelled() && !slot.wanted());
        slot.run_again();
        assert!(slot.wanted());

        let (reply, answer) = crossbeam_channel::bounded(1);
        slot.requested(answer, ProbeSlot::progress(3));
        reply.send(Err(JobError::NoModel)).unwrap();
        assert!(!slot.wanted());
        assert_eq!(
            slot.error(),
            Some("The induction probe failed: no model is loaded")
        );
    }
}
