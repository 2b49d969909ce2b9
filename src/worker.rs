//! The model's own thread, which the app talks to only through channels.
//!
//! The UI never touches model state: it sends [`AnalysisWorker`] commands
//! (load a model, analyse a text) and reads [`WorkerEvent`]s back, in the
//! style of rerun's background workers. The thread is named
//! `headscope-model` and owns the loaded models.
//!
//! Only the newest analysis matters. Every request gets a generation number,
//! and an atomic "latest generation" is shared with the thread: requests
//! queued behind a newer one are dropped unseen, and a run already in
//! progress notices between two layers that it has gone stale and stops
//! (reported as [`WorkerEvent::RunAbandoned`]). [`AnalysisWorker::cancel_run`]
//! makes the run in progress stale without asking for another. A run that
//! lasts tells where it stands, a few times a second
//! ([`WorkerEvent::RunProgress`]: layer k of L and the time left).
//!
//! A panic inside a job is caught and reported as an event with a plain
//! message; the thread keeps serving, so the app stays usable. Dropping the
//! handle stops the thread and joins it.
//!
//! A corpus run ([`AnalysisWorker::run_corpus`]) borrows the loaded model
//! (shared, not copied) on a thread of its own, `headscope-corpus`, so the
//! interactive analysis keeps answering while it works; its news comes back
//! on a channel of its own ([`CorpusUpdate`]), and it stops between windows
//! when its cancel flag is set or the handle is dropped.
//!
//! The thread holds two models, one per [`Slot`]: the one analysed and the
//! one compared with it ([`AnalysisWorker::load_comparison_model`]), each a
//! [`Model`] or a capture file in its place. A load's news comes back as
//! [`WorkerEvent::Model`], which names its slot. A comparison runs the
//! second model on a text whose result from the first the app already
//! has, newest request first like the analyses (see [`comparison`]).
//!
//! A model from the hub downloads on a thread of its own, which the model
//! thread stops waiting for when the handle is dropped: hf-hub's download
//! cannot be told to stop, and dropping the handle must not wait for it.
//!
//! A decoder's generation and logit lens run on a thread of their own too
//! ([`AnalysisWorker::generate`], [`AnalysisWorker::logit_lens`]), and so
//! do the induction probe ([`AnalysisWorker::induction_probe`]) and an
//! ablation ([`AnalysisWorker::ablate`]).
//!
//! Either model may be a capture file instead (docs/CAPTURE.md; a
//! [`ModelSource::Folder`] naming a `.safetensors` file): an analysis then
//! re-analyses the stored run of the capture's own text under the
//! request's options, without any model.
//!
//! The tests slow the thread down and make it panic through hooks that
//! exist only with the `test-hooks` feature (see [`test_hooks`]).

use crate::analysis::AnalysisOptions;
use crate::capture_file::CaptureFile;
use crate::corpus::{self, CorpusEvent, CorpusOptions, CorpusReport, FileWarning, SkippedFile};
use crate::input::WindowBounds;
use crate::model::{LoadProgress, Model, ModelSource};
use crate::pipeline::{self, InputOptions, RunError, RunOutput, RunProgress};
use crate::tokens::VocabularyStyle;
use crossbeam_channel::{Receiver, Sender};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod ablation;
mod comparison;
mod job_progress;
mod loading;
mod predictions;
mod probe;
mod test_hooks;
pub use ablation::{AblatedRunResult, AblationResult, ImportanceResult, ABLATION_PASSES};
pub use comparison::{ComparisonError, ComparisonEvent, ComparisonRequest};
pub use job_progress::JobProgress;
use loading::ModelSlot;
pub use predictions::{GenerationUpdate, LensResult, LensTable};
pub use probe::ProbeResult;
use test_hooks::Hooks;

/// How often a long run says where it stands (and how long a run lasts
/// before it first does).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(150);

/// Called after every event so the UI can repaint (e.g. `egui::Context::request_repaint`).
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// One analysis the UI asks for.
#[derive(Debug, Clone)]
pub struct AnalyseRequest {
    pub generation: u64,
    pub text: String,
    pub input: InputOptions,
    pub options: AnalysisOptions,
}

/// What a loaded model looks like, for the window and the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub source: ModelSource,
    pub name: String,
    /// The model family's name, or the model type a capture names.
    pub family: String,
    pub layers: usize,
    pub heads: usize,
    /// The longest input the model takes, in tokens.
    pub max_tokens: usize,
    /// For a capture file: the text it was taken of, which is the only
    /// text it can show.
    pub capture_text: Option<String>,
}

/// Why a run gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFailure {
    /// No model is loaded (yet, or the last load failed).
    NoModel,
    /// The text cannot become an input: empty, a sentence too long, ...
    Input,
    /// The model itself failed.
    Model,
    /// A bug: the job panicked. The worker keeps serving.
    Panic,
}

/// Which of the worker's two models: a load replaces the one in its slot,
/// and the news of a load names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The model every analysis runs.
    Analysed,
    /// The second model, which comparisons run.
    Compared,
}

impl Slot {
    /// Its place in the worker's slots.
    const fn index(self) -> usize {
        match self {
            Self::Analysed => 0,
            Self::Compared => 1,
        }
    }
}

/// The news of a model load, in either slot.
#[derive(Debug, Clone)]
pub enum ModelEvent {
    Loading {
        source: ModelSource,
    },
    /// Download or reading progress of the model being loaded.
    Progress(LoadProgress),
    Ready(ModelInfo),
    /// The load failed; the worker keeps the model it had, if any.
    Failed {
        source: ModelSource,
        message: String,
        /// The model still in use.
        kept: Option<ModelInfo>,
    },
}

/// What the worker tells the UI.
#[derive(Debug, Clone)]
pub enum WorkerEvent {
    /// News of the model loading into `slot`.
    Model {
        slot: Slot,
        event: ModelEvent,
    },
    RunStarted {
        generation: u64,
    },
    /// Where a run that has lasted a moment stands (a few per second at
    /// most; none for a run that ends quickly).
    RunProgress {
        generation: u64,
        progress: RunProgress,
    },
    RunFinished {
        generation: u64,
        output: Arc<RunOutput>,
    },
    /// A newer request replaced this one while it ran; nothing to show.
    RunAbandoned {
        generation: u64,
    },
    RunFailed {
        generation: u64,
        failure: RunFailure,
        message: String,
    },
    /// News of the comparison request `generation`.
    Comparison {
        generation: u64,
        event: ComparisonEvent,
    },
}

/// What a corpus run tells the app, on the channel
/// [`AnalysisWorker::run_corpus`] returns. The last message is always
/// `Finished` or `Failed`.
#[derive(Debug, Clone)]
pub enum CorpusUpdate {
    /// Where the run stands (a few per second at most).
    Progress(CorpusProgress),
    /// A file gave no text or could not be analysed; the run goes on.
    Skipped(SkippedFile),
    /// A file was read as Latin-1, or a sentence was too long to fit.
    Warning(FileWarning),
    /// The run ended: complete, or marked `partial` when cancelled; with
    /// how the model's tokenizer spells tokens, to show its focus tokens.
    Finished(Arc<CorpusReport>, VocabularyStyle),
    /// The run could not start (no model, no text file) or crashed.
    Failed(String),
}

/// An owned copy of [`corpus::Progress`], which can cross threads.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusProgress {
    pub file: PathBuf,
    pub files_done: usize,
    pub files_total: usize,
    pub windows_done: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
    pub elapsed: Duration,
    pub heads_ablated: Option<(usize, usize)>,
}

impl CorpusProgress {
    fn of(progress: &corpus::Progress<'_>) -> Self {
        Self {
            file: progress.file.to_path_buf(),
            files_done: progress.files_done,
            files_total: progress.files_total,
            windows_done: progress.windows_done,
            bytes_done: progress.bytes_done,
            bytes_total: progress.bytes_total,
            elapsed: progress.elapsed,
            heads_ablated: progress.heads_ablated,
        }
    }

    /// The borrowed form, for its `fraction`, `eta` and `line`.
    pub fn progress(&self) -> corpus::Progress<'_> {
        corpus::Progress {
            file: &self.file,
            files_done: self.files_done,
            files_total: self.files_total,
            windows_done: self.windows_done,
            bytes_done: self.bytes_done,
            bytes_total: self.bytes_total,
            elapsed: self.elapsed,
            heads_ablated: self.heads_ablated,
        }
    }
}

struct CorpusJob {
    paths: Vec<PathBuf>,
    sources: corpus::SourceOptions,
    options: CorpusOptions,
    cancel: Arc<AtomicBool>,
    updates: Sender<CorpusUpdate>,
}

/// The windows of a whole text, asked for by [`AnalysisWorker::outline`].
struct OutlineJob {
    text: String,
    input: InputOptions,
    reply: Sender<OutlineResult>,
}

/// Every window of a text, or why there are none.
pub type OutlineResult = Result<Vec<WindowBounds>, JobError>;

/// Why a job on a thread of its own (an outline, a generation, a logit
/// lens) gave no answer; shown as its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The analysed slot holds no model (none yet, or a capture file).
    #[error("no model is loaded")]
    NoModel,
    /// The model or the pipeline failed, and said why.
    #[error("{0}")]
    Failed(String),
    /// A bug: the job panicked (`panic`, its message); the app is still
    /// usable.
    #[error("{what} crashed (a bug in headscope: {panic})")]
    Crashed { what: &'static str, panic: String },
}

enum Command {
    Load(Slot, ModelSource),
    Analyse(AnalyseRequest),
    Compare(ComparisonRequest),
    Corpus(CorpusJob),
    Outline(OutlineJob),
    Predict(predictions::PredictionJob),
    Probe(probe::ProbeJob),
    Ablate(ablation::AblationJob),
    /// Boxed: it holds a whole input, three times the others' size.
    AblatedRun(Box<ablation::AblatedRunJob>),
    Importance(ablation::ImportanceJob),
    #[cfg(feature = "test-hooks")]
    Hook(test_hooks::Hook),
}

/// Handle to the model thread. Dropping it stops the thread and joins it.
pub struct AnalysisWorker {
    commands: Option<Sender<Command>>,
    events: Receiver<WorkerEvent>,
    latest_generation: Arc<AtomicU64>,
    /// The newest comparison request's generation (its own count).
    latest_comparison: Arc<AtomicU64>,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl AnalysisWorker {
    /// Starts the thread; `wake` is called after each event is sent (the
    /// app passes `egui::Context::request_repaint`).
    pub fn spawn(wake: Waker) -> std::io::Result<Self> {
        let (command_tx, command_rx) = crossbeam_channel::unbounded();
        let (event_tx, event_rx) = crossbeam_channel::unbounded();
        let latest_generation = Arc::new(AtomicU64::new(0));
        let latest_comparison = Arc::new(AtomicU64::new(0));
        let shutdown = Arc::new(AtomicBool::new(false));
        let mut thread = WorkerThread {
            slots: Default::default(),
            latest_comparison: latest_comparison.clone(),
            corpus_runs: Vec::new(),
            hooks: Hooks::default(),
            events: event_tx,
            wake,
            latest_generation: latest_generation.clone(),
            shutdown: shutdown.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("headscope-model".into())
            .spawn(move || {
                thread.serve(&command_rx);
                thread.stop_corpus_runs();
            })?;
        Ok(Self {
            commands: Some(command_tx),
            events: event_rx,
            latest_generation,
            latest_comparison,
            shutdown,
            thread: Some(handle),
        })
    }

    /// Loads a model, replacing the current one once it is ready.
    pub fn load_model(&self, source: ModelSource) {
        self.send(Command::Load(Slot::Analysed, source));
    }

    /// Asks for an analysis and returns its generation number. Any older
    /// request still queued or running is abandoned.
    pub fn analyse(&self, text: String, input: InputOptions, options: AnalysisOptions) -> u64 {
        let generation = self.latest_generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.send(Command::Analyse(AnalyseRequest {
            generation,
            text,
            input,
            options,
        }));
        generation
    }

    /// Runs the corpus statistics of `paths` (folders, text files, JSON
    /// Lines and Parquet files, as [`corpus::find_documents`] takes them,
    /// their records read by `sources`) with the model loaded when
    /// the command is reached, on a thread of its own; or, when the paths
    /// hold capture files ([`corpus::holds_captures`]), of those captures,
    /// without a model ([`corpus::run_captures`]). Setting `cancel`
    /// stops it between windows; the report then comes back `partial`.
    /// The tests' artificial delay, if set, is waited after every window.
    pub fn run_corpus(
        &self,
        paths: Vec<PathBuf>,
        sources: corpus::SourceOptions,
        options: CorpusOptions,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<CorpusUpdate> {
        let (updates, receiver) = crossbeam_channel::unbounded();
        self.send(Command::Corpus(CorpusJob {
            paths,
            sources,
            options,
            cancel,
            updates,
        }));
        receiver
    }

    /// Abandons the analysis queued or running, without asking for
    /// another: it ends as [`WorkerEvent::RunAbandoned`] (if it had
    /// started), between two layers of the model.
    pub fn cancel_run(&self) {
        self.latest_generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Cuts the whole `text` into the windows the analyses would run on
    /// (with `input`'s mode and limits, on the loaded model's tokenizer),
    /// on a thread of its own (`headscope-outline`): the outline of a long
    /// document. Dropping the receiver drops the answer.
    pub fn outline(&self, text: String, input: InputOptions) -> Receiver<OutlineResult> {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        self.send(Command::Outline(OutlineJob { text, input, reply }));
        receiver
    }

    /// The generation of the newest request sent.
    pub fn latest_generation(&self) -> u64 {
        self.latest_generation.load(Ordering::SeqCst)
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<WorkerEvent> {
        self.events.try_recv().ok()
    }

    /// The event channel, e.g. for `recv_timeout` in tests.
    pub fn events(&self) -> &Receiver<WorkerEvent> {
        &self.events
    }

    /// Whether the thread is still running (false only after a bug killed it).
    pub fn is_alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    fn send(&self, command: Command) {
        if let Some(commands) = &self.commands {
            // A send fails only when the thread is gone; `is_alive` tells.
            let _ = commands.send(command);
        }
    }
}

impl Drop for AnalysisWorker {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        // Closing the channel ends the thread's wait for commands.
        self.commands = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state that lives on the model thread.
struct WorkerThread {
    /// The analysed model and the compared one, indexed by [`Slot::index`].
    slots: [ModelSlot; 2],
    latest_comparison: Arc<AtomicU64>,
    /// Corpus runs started, with their cancel flags (set at shutdown).
    corpus_runs: Vec<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// The tests' slow model and injected panic (nothing in a build
    /// without the `test-hooks` feature).
    hooks: Hooks,
    events: Sender<WorkerEvent>,
    wake: Waker,
    latest_generation: Arc<AtomicU64>,
    shutdown: Arc<AtomicBool>,
}

impl WorkerThread {
    fn serve(&mut self, commands: &Receiver<Command>) {
        while let Ok(first) = commands.recv() {
            // Take everything queued: loads and settings in order, and only
            // the newest analysis request, run after them.
            let mut newest_analysis = None;
            let mut newest_comparison = None;
            for command in std::iter::once(first).chain(commands.try_iter()) {
                if self.shutting_down() {
                    return;
                }
                match command {
                    Command::Load(slot, source) => self.load(slot, source),
                    Command::Analyse(request) => newest_analysis = Some(request),
                    Command::Compare(request) => newest_comparison = Some(request),
                    Command::Corpus(job) => self.start_corpus(job),
                    Command::Outline(job) => self.start_outline(job),
                    Command::Predict(job) => self.start_prediction(job),
                    Command::Probe(job) => self.start_probe(job),
                    Command::Ablate(job) => self.start_ablation(job),
                    Command::AblatedRun(job) => self.start_ablated_run(job),
                    Command::Importance(job) => self.start_importance(job),
                    #[cfg(feature = "test-hooks")]
                    Command::Hook(hook) => self.hooks.set(hook),
                }
            }
            if let Some(request) = newest_analysis {
                if request.generation == self.latest_generation.load(Ordering::SeqCst) {
                    self.analyse(request);
                }
            }
            if let Some(request) = newest_comparison {
                if request.generation == self.latest_comparison.load(Ordering::SeqCst) {
                    self.compare(request);
                }
            }
        }
    }

    fn slot(&self, slot: Slot) -> &ModelSlot {
        &self.slots[slot.index()]
    }

    fn shutting_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    fn emit(&self, event: WorkerEvent) {
        // The receiver is gone only while the handle is being dropped.
        let _ = self.events.send(event);
        (self.wake)();
    }

    fn emit_model(&self, slot: Slot, event: ModelEvent) {
        self.emit(WorkerEvent::Model { slot, event });
    }

    fn start_corpus(&mut self, job: CorpusJob) {
        self.corpus_runs.retain(|(_, thread)| !thread.is_finished());
        // Whether a model is needed is known once the paths are searched,
        // on the corpus thread.
        let model = self.slot(Slot::Analysed).model();
        let cancel = job.cancel.clone();
        let wake = self.wake.clone();
        let hooks = self.hooks;
        let spawned = std::thread::Builder::new()
            .name("headscope-corpus".into())
            .spawn(move || run_corpus_job(model.as_deref(), job, hooks, &wake));
        match spawned {
            Ok(thread) => self.corpus_runs.push((cancel, thread)),
            Err(error) => {
                // The job (and its sender) went with the closure: the
                // receiver sees the channel closed and says so.
                eprintln!("headscope: cannot start the corpus thread: {error}");
                (self.wake)();
            }
        }
    }

    fn start_outline(&self, job: OutlineJob) {
        let OutlineJob { text, input, reply } = job;
        self.answer_on_thread("outline", "outlining the text", reply, move |model| {
            pipeline::outline(model, &text, &input).map_err(|e| JobError::Failed(e.to_string()))
        });
    }

    /// Runs `job` with the analysed slot's model on a thread of its own,
    /// `headscope-{name}`, and sends its answer on `reply` (or why there is
    /// none: no model, or a panic while `what`), then wakes the UI. A
    /// thread that cannot start drops `reply`: the receiver sees it closed.
    fn answer_on_thread<T: Send + 'static>(
        &self,
        name: &str,
        what: &'static str,
        reply: Sender<Result<T, JobError>>,
        job: impl FnOnce(&Model) -> Result<T, JobError> + Send + 'static,
    ) {
        let wake = self.wake.clone();
        let model = self.slot(Slot::Analysed).model();
        let spawned = std::thread::Builder::new()
            .name(format!("headscope-{name}"))
            .spawn(move || {
                let result = catch_unwind(AssertUnwindSafe(|| {
                    let model = model.ok_or(JobError::NoModel)?;
                    job(&model)
                }))
                .unwrap_or_else(|payload| {
                    Err(JobError::Crashed {
                        what,
                        panic: panic_message(payload.as_ref()),
                    })
                });
                let _ = reply.send(result);
                wake();
            });
        if let Err(error) = spawned {
            eprintln!("headscope: cannot start the {name} thread: {error}");
        }
    }

    fn stop_corpus_runs(&mut self) {
        for (cancel, _) in &self.corpus_runs {
            cancel.store(true, Ordering::SeqCst);
        }
        for (_, thread) in self.corpus_runs.drain(..) {
            let _ = thread.join();
        }
    }

    fn analyse(&mut self, request: AnalyseRequest) {
        let generation = request.generation;
        let injected_panic = self.hooks.take_panic();
        self.emit(WorkerEvent::RunStarted { generation });
        let analysed = self.slot(Slot::Analysed);
        if let Some(capture) = analysed.capture() {
            return self.emit(capture_run(&capture, &request));
        }
        let Some(model) = analysed.model() else {
            self.emit(WorkerEvent::RunFailed {
                generation,
                failure: RunFailure::NoModel,
                message: "no model is loaded: open a model folder or enter a Hugging Face model id"
                    .into(),
            });
            return;
        };
        let latest = &self.latest_generation;
        let shutdown = &self.shutdown;
        let stale =
            || latest.load(Ordering::SeqCst) != generation || shutdown.load(Ordering::SeqCst);
        let hooks = self.hooks;
        // Asked before each layer: the slow model of the tests waits there.
        let cancelled = || !hooks.before_layer(&stale);
        // Progress goes out once the run has lasted a moment, then a few
        // times a second: a quick run sends none.
        let last_report = std::cell::Cell::new(Instant::now());
        let watch = pipeline::Watched {
            cancelled,
            progress: |progress: RunProgress| {
                if last_report.get().elapsed() >= PROGRESS_INTERVAL {
                    last_report.set(Instant::now());
                    self.emit(WorkerEvent::RunProgress {
                        generation,
                        progress,
                    });
                }
            },
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            if injected_panic {
                panic!("panic injected for testing");
            }
            if !hooks.before_run(&stale) {
                return Err(RunError::Cancelled);
            }
            pipeline::run(
                &model,
                &request.text,
                &request.input,
                &request.options,
                &watch,
            )
        }));
        let event = match result {
            Ok(Ok(output)) => WorkerEvent::RunFinished {
                generation,
                output: Arc::new(output),
            },
            Ok(Err(RunError::Cancelled)) => WorkerEvent::RunAbandoned { generation },
            Ok(Err(RunError::Input(error))) => WorkerEvent::RunFailed {
                generation,
                failure: RunFailure::Input,
                message: error.to_string(),
            },
            Ok(Err(RunError::Model(message))) => WorkerEvent::RunFailed {
                generation,
                failure: RunFailure::Model,
                message: format!("the model failed: {message}"),
            },
            Err(payload) => WorkerEvent::RunFailed {
                generation,
                failure: RunFailure::Panic,
                message: panic_report(payload.as_ref()),
            },
        };
        self.emit(event);
    }
}

/// A capture's stored run under the request's options; a capture shows
/// only the text it was taken of.
fn capture_run(capture: &CaptureFile, request: &AnalyseRequest) -> WorkerEvent {
    let generation = request.generation;
    if request.text != capture.header.text {
        return WorkerEvent::RunFailed {
            generation,
            failure: RunFailure::Input,
            message: format!(
                "{} holds a run on its own text; an edited text needs the model itself",
                capture.path.display()
            ),
        };
    }
    match catch_unwind(AssertUnwindSafe(|| capture.run_output(&request.options))) {
        Ok(output) => WorkerEvent::RunFinished {
            generation,
            output: Arc::new(output),
        },
        Err(payload) => WorkerEvent::RunFailed {
            generation,
            failure: RunFailure::Panic,
            message: panic_report(payload.as_ref()),
        },
    }
}

/// The body of a `headscope-corpus` thread.
fn run_corpus_job(model: Option<&Model>, job: CorpusJob, hooks: Hooks, wake: &Waker) {
    let updates = &job.updates;
    let send = |update: CorpusUpdate| {
        let _ = updates.send(update);
        wake();
    };
    let cancel = &*job.cancel;
    let mut last_progress = None::<Instant>;
    let mut windows_seen = 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        let captures = job.paths.iter().any(|path| corpus::holds_captures(path));
        let mut on_event = |event: CorpusEvent<'_>| match event {
            CorpusEvent::Progress(progress) => {
                let due = last_progress.is_none_or(|t| t.elapsed() >= Duration::from_millis(50));
                if due || progress.files_done == progress.files_total {
                    last_progress = Some(Instant::now());
                    send(CorpusUpdate::Progress(CorpusProgress::of(&progress)));
                }
                if progress.windows_done > windows_seen {
                    windows_seen = progress.windows_done;
                    hooks.before_run(&|| cancel.load(Ordering::SeqCst));
                }
            }
            CorpusEvent::Skipped(skipped) => send(CorpusUpdate::Skipped(skipped.clone())),
            CorpusEvent::Warning(warning) => send(CorpusUpdate::Warning(warning.clone())),
        };
        if captures {
            match corpus::find_captures(&job.paths) {
                Ok(_) if job.options.importance.is_some() => {
                    return Err(
                        "each head's importance ablates heads in the model's passes: a \
                                corpus of captures has no model to run (untick \"Ablate each \
                                head alone\")"
                            .into(),
                    )
                }
                Ok(plan) => {
                    let part =
                        corpus::run_captures(&plan, &job.options.analysis, &mut on_event, cancel);
                    return Ok(part.report());
                }
                // .safetensors files that are no captures (a model folder
                // among the texts): a corpus of texts, when a model is loaded.
                Err(corpus::CaptureCorpusError::NoCaptures { .. }) if model.is_some() => {}
                Err(error) => return Err(error.to_string()),
            }
        }
        let Some(model) = model else {
            return Err(
                "no model is loaded: open a model folder or enter a Hugging Face model id \
                 (or choose a folder of capture files)"
                    .to_string(),
            );
        };
        let list = corpus::find_documents(&job.paths, &job.sources).map_err(|e| e.to_string())?;
        Ok(corpus::run_files(
            model,
            list,
            &job.options,
            &mut on_event,
            cancel,
        ))
    }));
    send(match result {
        Ok(Ok(report)) => {
            // A corpus of captures has no tokenizer: its focus tokens' texts
            // tell the style.
            let style = model.map_or_else(|| focus_token_style(&report), |m| m.specials.style);
            CorpusUpdate::Finished(Arc::new(report), style)
        }
        Ok(Err(message)) => CorpusUpdate::Failed(message),
        Err(payload) => CorpusUpdate::Failed(format!(
            "the corpus run crashed (a bug in headscope: {}); the app is still usable",
            panic_message(payload.as_ref())
        )),
    });
}

/// The vocabulary style the focus tokens of a report are spelled in.
fn focus_token_style(report: &CorpusReport) -> VocabularyStyle {
    let texts: Vec<&str> = report
        .layers
        .iter()
        .flat_map(|layer| &layer.heads)
        .filter_map(|head| head.focus_token.as_ref()?.token.as_deref())
        .collect();
    VocabularyStyle::guess(&texts)
}

fn panic_report(payload: &(dyn std::any::Any + Send)) -> String {
    format!(
        "the analysis crashed (a bug in headscope: {}); the app is still usable: edit the text or change a setting to try again",
        panic_message(payload)
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".into()
    }
}
