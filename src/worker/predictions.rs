//! A decoder's predictions for the app, each on a thread of its own that
//! borrows the loaded model (as the outline does), so the analyses keep
//! answering: a generation ([`AnalysisWorker::generate`]), its text
//! reported as each token comes and stopped between two tokens by its
//! cancel flag; and the logit lens of a result's tokens
//! ([`AnalysisWorker::logit_lens`]), with the text of each layer's top 5
//! tokens, its layers counted in a [`JobProgress`] whose cancel stops it
//! at the next layer; or of its last layer alone: the model's own next
//! tokens, which the app shows on hovering a token
//! ([`AnalysisWorker::next_tokens`]). Both read the residual stream the
//! result kept where it did, so the model need not run again.

use super::{
    panic_message, AnalysisWorker, Command, Hooks, JobError, JobProgress, Slot, WorkerThread,
};
use crate::model::predict::{GenerationEvent, GenerationOptions};
use crate::model::Model;
use crate::pipeline::RunOutput;
use crate::predictions::LogitLens;
use crossbeam_channel::{Receiver, Sender};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a generation tells the app. The last message is `Finished` or
/// `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum GenerationUpdate {
    /// The continuation so far, as text, and its tokens.
    Continued {
        text: String,
        tokens: usize,
    },
    /// Done: the whole continuation; `ended` when the model's
    /// end-of-sequence token ended it.
    Finished {
        text: String,
        tokens: usize,
        ended: bool,
    },
    Failed(JobError),
}

/// A lens table, or why there is none.
pub type LensResult = Result<LensTable, JobError>;

/// The logit lens of a result's tokens, for the app's table.
#[derive(Debug, Clone, PartialEq)]
pub struct LensTable {
    /// The input ids it was computed on.
    pub input_ids: Vec<u32>,
    pub lens: LogitLens,
    /// Each layer's top 5 tokens at each position as a reader reads them
    /// (L × T × 5, [`crate::tokens::VocabularyStyle::readable`]).
    pub top_texts: Vec<Vec<Vec<String>>>,
}

impl LensTable {
    /// Layer `layer`'s likeliest tokens at `position`, as read, with their
    /// probabilities, likeliest first.
    pub fn top(&self, layer: usize, position: usize) -> Vec<(&str, f32)> {
        let texts = self
            .top_texts
            .get(layer)
            .and_then(|layer| layer.get(position));
        let probs = self
            .lens
            .layers
            .get(layer)
            .and_then(|layer| layer.top_probs.get(position));
        match (texts, probs) {
            (Some(texts), Some(probs)) => texts
                .iter()
                .map(String::as_str)
                .zip(probs.iter().copied())
                .collect(),
            _ => Vec::new(),
        }
    }
}

pub(super) enum PredictionJob {
    Generate {
        prompt: String,
        options: GenerationOptions,
        cancel: Arc<AtomicBool>,
        updates: Sender<GenerationUpdate>,
    },
    Lens {
        run: Arc<RunOutput>,
        depth: LensDepth,
        /// Counts the layers passed; cancelled, stops the job.
        progress: Arc<JobProgress>,
        reply: Sender<LensResult>,
    },
}

/// Which layers a lens job reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LensDepth {
    EveryLayer,
    /// The model's own output: its next-token predictions.
    LastLayer,
}

impl AnalysisWorker {
    /// Continues `prompt` (the text as the tokenizer encodes it) with the
    /// loaded model on a thread of its own; setting `cancel` stops it
    /// between two tokens.
    pub fn generate(
        &self,
        prompt: String,
        options: GenerationOptions,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<GenerationUpdate> {
        let (updates, receiver) = crossbeam_channel::unbounded();
        self.send(Command::Predict(PredictionJob::Generate {
            prompt,
            options,
            cancel,
            updates,
        }));
        receiver
    }

    /// The logit lens (top 5 per layer and position) of `run`'s tokens with
    /// the loaded model (the model that made `run`), on a thread of its
    /// own; `progress` counts its layers, and its cancel stops it at the
    /// next (the answer is then an error).
    pub fn logit_lens(
        &self,
        run: Arc<RunOutput>,
        progress: Arc<JobProgress>,
    ) -> Receiver<LensResult> {
        self.lens(run, LensDepth::EveryLayer, progress)
    }

    /// The model's top 5 next tokens at every position of `run`'s tokens (a
    /// table of one layer, the last), on a thread of its own.
    pub fn next_tokens(&self, run: Arc<RunOutput>) -> Receiver<LensResult> {
        let progress = JobProgress::new("The model's next tokens", 1);
        self.lens(run, LensDepth::LastLayer, progress)
    }

    fn lens(
        &self,
        run: Arc<RunOutput>,
        depth: LensDepth,
        progress: Arc<JobProgress>,
    ) -> Receiver<LensResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Predict(PredictionJob::Lens {
            run,
            depth,
            progress,
            reply,
        }));
        receiver
    }
}

impl WorkerThread {
    pub(super) fn start_prediction(&self, job: PredictionJob) {
        match job {
            PredictionJob::Lens {
                run,
                depth,
                progress,
                reply,
            } => {
                let hooks = self.hooks;
                self.answer_on_thread("lens", "the model", reply, move |model| {
                    lens_table(model, &run, depth, &progress, hooks)
                        .map_err(|e| JobError::Failed(format!("{e:#}")))
                });
            }
            PredictionJob::Generate {
                prompt,
                options,
                cancel,
                updates,
            } => self.start_generation(prompt, options, cancel, updates),
        }
    }

    /// A generation streams its updates as tokens come, so it has a thread
    /// of its own rather than one answer.
    fn start_generation(
        &self,
        prompt: String,
        options: GenerationOptions,
        cancel: Arc<AtomicBool>,
        updates: Sender<GenerationUpdate>,
    ) {
        let wake = self.wake.clone();
        let model = self.slot(Slot::Analysed).model();
        let spawned = std::thread::Builder::new()
            .name("headscope-generate".into())
            .spawn(move || {
                let report = |update| {
                    let _ = updates.send(update);
                    wake();
                };
                let result = catch_unwind(AssertUnwindSafe(|| {
                    let model = model.ok_or(JobError::NoModel)?;
                    generate(&model, &prompt, &options, &cancel, &report)
                        .map_err(|e| JobError::Failed(format!("{e:#}")))
                }))
                .unwrap_or_else(|payload| {
                    Err(JobError::Crashed {
                        what: "the model",
                        panic: panic_message(payload.as_ref()),
                    })
                });
                if let Err(error) = result {
                    report(GenerationUpdate::Failed(error));
                }
            });
        if let Err(error) = spawned {
            eprintln!("headscope: cannot start the generation thread: {error}");
        }
    }
}

/// Generates, reporting the continuation's text as each token comes.
fn generate(
    model: &Model,
    prompt: &str,
    options: &GenerationOptions,
    cancel: &AtomicBool,
    report: &dyn Fn(GenerationUpdate),
) -> anyhow::Result<()> {
    let prompt_ids = model
        .tokenizer
        .encode(prompt, true)
        .map_err(|e| anyhow::anyhow!("the tokenizer failed: {e}"))?
        .get_ids()
        .to_vec();
    let mut ids = Vec::new();
    let text_of = |ids: &[u32]| model.continuation_text(&prompt_ids, ids);
    let generation = model.generate(
        &prompt_ids,
        options,
        &|| cancel.load(Ordering::SeqCst),
        &mut |event| {
            if let GenerationEvent::Token(id) = event {
                ids.push(id);
                report(GenerationUpdate::Continued {
                    text: text_of(&ids),
                    tokens: ids.len(),
                });
            }
        },
    )?;
    report(GenerationUpdate::Finished {
        text: text_of(&generation.generated_ids),
        tokens: generation.generated_ids.len(),
        ended: generation.ended,
    });
    Ok(())
}

/// The lens table of `run`'s tokens, from the residual stream it kept
/// (else a pass of its own), each layer passed a step of `progress`,
/// stopped at the next layer once it is cancelled; `hooks`' layer delay (the
/// tests' slow model) is waited before each layer.
fn lens_table(
    model: &Model,
    run: &RunOutput,
    depth: LensDepth,
    progress: &JobProgress,
    hooks: Hooks,
) -> anyhow::Result<LensTable> {
    let cancelled = || !hooks.before_layer(&|| progress.is_cancelled());
    let input_ids = run.input.tokens.input_ids.clone();
    let kept = &run.captures.residuals;
    let lens = match depth {
        LensDepth::EveryLayer => {
            model.logit_lens_counted(&input_ids, kept, 5, &cancelled, &|_| progress.step())?
        }
        LensDepth::LastLayer => LogitLens {
            layers: vec![model.next_tokens(&input_ids, kept, 5, &cancelled)?],
        },
    };
    let top_texts = lens
        .layers
        .iter()
        .map(|layer| {
            layer
                .top_ids
                .iter()
                .map(|top| {
                    top.iter()
                        .map(|&id| {
                            model.tokenizer.id_to_token(id).map_or_else(
                                || format!("id {id}"),
                                |raw| model.specials.style.readable(&raw),
                            )
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    Ok(LensTable {
        input_ids,
        lens,
        top_texts,
    })
}
