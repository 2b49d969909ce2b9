//! The one path from text to figures, shared by the CLI, the app's worker,
//! the benchmarks and the tests: build the input (ANALYSIS.md §1), run the
//! encoder with every head captured (§2), compute the figures (§3–§5);
//! when every head's P and S would not fit the memory limit (a decoder on a
//! long input), the figures are computed during the pass, each head on
//! the thread that made it and each layer once its heads are done, and
//! the captures keep what recomputes P and S per head ([`capture_and_analyze`]);
//! and, for a comparison, run a second model on the same text and compare
//! the two ([`run_comparison`]).
//!
//! A run answers to a [`RunWatch`] between the model's layers: whether to
//! stop, and where it stands ([`RunProgress`]: layer k of L, the time
//! left at the pace so far), which the app shows for a long run. Any
//! `Fn() -> bool` is a watch that only says whether to stop. The pass
//! asks it through its observer ([`crate::model::PassObserver`]), which
//! names the layer about to run: the progress is that layer's index.

use crate::analysis::{
    Analysis, AnalysisOptions, HeadAnalysis, LayerAnalyser, LayerSquares, RowSink, SelectedPairs,
};
use crate::captures::{CaptureMode, Captures, HeadId, HeadSimilarity};
use crate::comparison::{self, Comparison, Side};
use crate::head_map::{HeadThumbnailsBuilder, PassThumbnails};
use crate::input::{
    build_input, BuiltInput, InputError, InputMode, LimitedBy, TokenLimit, TokenizedText,
    WindowBounds, WindowStart,
};
use crate::model::ablation::Ablation;
use crate::model::{ForwardError, HeadObserver, HeadRows, Model, PassObserver};
use crate::report::{AnalysisReport, ComparisonReport, ModelReport};
use crate::tokens::TokenSequence;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Which part of the text becomes the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputOptions {
    pub mode: InputMode,
    /// First sentence of the window (0-based); 0 analyses from the start.
    pub first_sentence: usize,
    /// When that sentence is longer than a window and cut into pieces, the
    /// piece the window starts at (0-based; [`BuiltInput::next`] says
    /// where the next window starts).
    #[serde(default)]
    pub first_piece: usize,
    /// At most this many tokens per window, below the model's own limit.
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// At most this much memory, in MB, for the captures of one window (P
    /// and S of every head, or for a decoder what recomputes them);
    /// [`DEFAULT_CAPTURE_MEMORY_MB`] when `None`.
    #[serde(default)]
    pub capture_memory_mb: Option<u64>,
    /// Keep a decoder's residual stream after each layer with the captures,
    /// where it fits ([`Model::keeps_residuals`]), for its logit lens and
    /// next tokens to read instead of running the model again (the app, and
    /// `analyze --logit-lens`). Outside the capture memory limit.
    #[serde(default)]
    pub keep_residuals: bool,
    /// Where P and S are recomputed per head, have the pass make each
    /// head's thumbnail as it goes ([`PassThumbnails`]) for the app's grid,
    /// instead of a pass over each head's matrix after the run.
    #[serde(default)]
    pub keep_thumbnails: bool,
}

/// The captures of one window may take 2 GiB by default: BERT-large at 512
/// tokens takes 0.8 GB. A decoder of 24 layers × 14 heads at 2,048 tokens
/// would take 11 GB for every P and S, so it keeps what recomputes them
/// instead: 1.5 GB, of which 0.4 GB stay after the pass.
pub const DEFAULT_CAPTURE_MEMORY_MB: u64 = 2048;

fn capture_budget(input: &InputOptions) -> u64 {
    input
        .capture_memory_mb
        .unwrap_or(DEFAULT_CAPTURE_MEMORY_MB)
        .saturating_mul(1 << 20)
}

/// How a `tokens`-token window of `model` is captured within the memory
/// limit of `input`: every P and S kept when they fit, else recomputed per
/// head (decoders only); `None` when neither fits.
pub fn capture_mode(model: &Model, tokens: usize, input: &InputOptions) -> Option<CaptureMode> {
    capture_mode_within(model, tokens, capture_budget(input))
}

fn capture_mode_within(model: &Model, tokens: usize, budget: u64) -> Option<CaptureMode> {
    if model.capture_bytes(tokens) <= budget {
        Some(CaptureMode::Stored)
    } else if model
        .recomputed_capture_bytes(tokens)
        .is_some_and(|bytes| bytes + kept_pair_bytes(model, tokens) <= budget)
    {
        Some(CaptureMode::Recomputed)
    } else {
        None
    }
}

/// Bytes of the selected pairs the analysis keeps for the views: each
/// head's top 1% of T²/2 (the default rule) up to
/// [`SelectedPairs::KEPT_AT_MOST`], one u32 each.
fn kept_pair_bytes(model: &Model, tokens: usize) -> u64 {
    let (heads, t) = ((model.layers() * model.heads()) as u64, tokens as u64);
    heads * (t * t / 200).min(SelectedPairs::KEPT_AT_MOST as u64) * 4
}

/// The most tokens one window of `model` may hold: the model's limit, the
/// user's, or as many as the capture memory allows, whichever is least.
pub fn token_limit(model: &Model, input: &InputOptions) -> TokenLimit {
    let mut limit = TokenLimit {
        tokens: model.max_tokens(),
        by: LimitedBy::Model,
    };
    if let Some(user) = input.max_tokens.filter(|&n| n < limit.tokens) {
        limit = TokenLimit {
            tokens: user,
            by: LimitedBy::User,
        };
    }
    let mb = input.capture_memory_mb.unwrap_or(DEFAULT_CAPTURE_MEMORY_MB);
    let budget = capture_budget(input);
    if capture_mode_within(model, limit.tokens, budget).is_none() {
        // The captures grow with T, so a bisection finds the largest T
        // (but for the step where O and the queries go to disk, past which
        // more fits: a bisection may stop below it, never past what fits).
        let (mut fits, mut too_many) = (0, limit.tokens);
        while too_many - fits > 1 {
            let middle = (fits + too_many) / 2;
            if capture_mode_within(model, middle, budget).is_some() {
                fits = middle;
            } else {
                too_many = middle;
            }
        }
        limit = TokenLimit {
            tokens: fits,
            by: LimitedBy::Memory { mb },
        };
    }
    limit
}

/// Where a run stands: told before each layer of the model's pass and
/// once the figures are being computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunProgress {
    /// Layers of the pass finished.
    pub layers_done: usize,
    /// Layers in all.
    pub layers: usize,
    /// Time since the pass began.
    pub elapsed: Duration,
    /// Whether the pass is over and the figures are being computed.
    pub figures: bool,
}

impl RunProgress {
    /// The share of the pass done, 0 to 1.
    pub fn fraction(&self) -> f32 {
        if self.layers == 0 {
            return 1.0;
        }
        (self.layers_done as f32 / self.layers as f32).min(1.0)
    }

    /// The time the pass still needs at the pace of its layers so far;
    /// `None` before the first layer is done.
    pub fn time_left(&self) -> Option<Duration> {
        (self.layers_done > 0).then(|| {
            let remaining = self.layers.saturating_sub(self.layers_done) as u32;
            self.elapsed / self.layers_done as u32 * remaining
        })
    }

    /// "layer 12 of 30 · ~41 s left", or "computing the figures" after the
    /// pass.
    pub fn describe(&self) -> String {
        if self.figures {
            return "computing the figures".to_string();
        }
        let layer = format!(
            "layer {} of {}",
            (self.layers_done + 1).min(self.layers),
            self.layers
        );
        match self.time_left() {
            Some(left) => format!("{layer} · ~{} left", seconds(left)),
            None => layer,
        }
    }
}

/// "41 s", "2 min 5 s": a time left, rounded up to whole seconds.
pub fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64().ceil() as u64;
    if secs < 60 {
        format!("{secs} s")
    } else {
        format!("{} min {} s", secs / 60, secs % 60)
    }
}

/// What a run answers to between layers: whether to stop, and where it
/// stands. A closure `Fn() -> bool` is a watch that only says whether to
/// stop; [`Watched`] adds progress to one.
pub trait RunWatch {
    /// Whether the run should stop (it then ends with [`RunError::Cancelled`]).
    fn cancelled(&self) -> bool;
    /// Where the run stands.
    fn progress(&self, _progress: RunProgress) {}
    /// The heads the run ablates (ANALYSIS.md §9), if any: its figures are
    /// then those of the ablated model ([`AblatedWatch`]).
    fn ablation(&self) -> Option<&Ablation> {
        None
    }
}

/// A watch whose run ablates `ablation`'s heads.
pub struct AblatedWatch<'a> {
    pub inner: &'a dyn RunWatch,
    pub ablation: &'a Ablation,
}

impl RunWatch for AblatedWatch<'_> {
    fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }
    fn progress(&self, progress: RunProgress) {
        self.inner.progress(progress)
    }
    fn ablation(&self) -> Option<&Ablation> {
        Some(self.ablation)
    }
}

impl<F: Fn() -> bool + ?Sized> RunWatch for F {
    fn cancelled(&self) -> bool {
        self()
    }
}

/// A cancel check and a progress report, as one [`RunWatch`].
pub struct Watched<C, P> {
    pub cancelled: C,
    pub progress: P,
}

impl<C: Fn() -> bool, P: Fn(RunProgress)> RunWatch for Watched<C, P> {
    fn cancelled(&self) -> bool {
        (self.cancelled)()
    }
    fn progress(&self, progress: RunProgress) {
        (self.progress)(progress)
    }
}

/// Wall time of each stage of one run, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Timings {
    pub input_ms: f64,
    pub model_ms: f64,
    pub analysis_ms: f64,
    pub total_ms: f64,
}

/// Everything one run produced.
#[derive(Debug, Clone, Default)]
pub struct RunOutput {
    pub input: BuiltInput,
    pub captures: Captures,
    pub analysis: Analysis,
    /// Each head's thumbnails, where the pass made them.
    pub thumbnails: PassThumbnails,
    pub timings: Timings,
}

impl RunOutput {
    /// What `analyze --json` writes for this run.
    pub fn report(&self) -> AnalysisReport<'_> {
        AnalysisReport {
            analysis: &self.analysis,
            sentences_split: &self.input.sentences_split,
        }
    }
}

/// Why a run produced nothing.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Input(#[from] InputError),
    /// A newer request replaced this one; not an error to show.
    #[error("cancelled")]
    Cancelled,
    #[error("the model failed: {0}")]
    Model(String),
}

impl From<ForwardError> for RunError {
    fn from(e: ForwardError) -> Self {
        match e {
            ForwardError::Cancelled => RunError::Cancelled,
            ForwardError::Refused(refusal) => RunError::Model(refusal.to_string()),
            ForwardError::Candle(e) => RunError::Model(crate::model::without_backtrace(&e)),
        }
    }
}

/// Builds the input only (fast: no model run), e.g. to report the window.
pub fn prepare_input(
    model: &Model,
    text: &str,
    input: &InputOptions,
) -> Result<BuiltInput, InputError> {
    let limit = token_limit(model, input);
    let built = build_input(
        &model.tokenizer,
        text,
        input.mode,
        limit.tokens,
        WindowStart {
            sentence: input.first_sentence,
            piece: input.first_piece,
        },
        &model.specials,
    )?;
    Ok(fit_window(model, built, limit, input))
}

/// The input of a decoder's tokens as they are (a prompt and the model's
/// continuation: [`TokenizedText::of_ids`]), in one window from the first
/// token, and the text they decode to.
pub fn prepare_ids(
    model: &Model,
    ids: &[u32],
    input: &InputOptions,
) -> Result<(BuiltInput, String), InputError> {
    let limit = token_limit(model, input);
    let (tokenized, text) = TokenizedText::of_ids(&model.tokenizer, ids, &model.specials)?;
    let built = tokenized.window(limit.tokens, WindowStart::default(), &model.specials)?;
    Ok((fit_window(model, built, limit, input), text))
}

/// The induction probe's input for the model (ANALYSIS.md §9,
/// [`crate::probe`]): its leading special tokens, R random ids, R again,
/// in one window of one sentence.
pub fn prepare_probe(model: &Model, input: &InputOptions) -> Result<BuiltInput, InputError> {
    let limit = token_limit(model, input);
    let tokens = crate::probe::probe_sequence(&model.tokenizer, &model.specials)
        .map_err(|e| InputError::Tokenizer(e.to_string()))?;
    if tokens.len() > limit.tokens {
        return Err(InputError::LimitTooSmall {
            limit: limit.tokens,
            added: tokens.len(),
        });
    }
    let built = BuiltInput {
        tokens,
        sentences_analysed: 1,
        ..BuiltInput::default()
    };
    Ok(fit_window(model, built, limit, input))
}

/// Every window of `text` from the first, as the runs would cut them one
/// after the other (with `input`'s mode and limits): the outline of a long
/// document. Tokenizes the whole text: call it off the UI thread.
pub fn outline(
    model: &Model,
    text: &str,
    input: &InputOptions,
) -> Result<Vec<WindowBounds>, InputError> {
    let limit = token_limit(model, input);
    TokenizedText::new(&model.tokenizer, text, input.mode, &model.specials)?
        .windows(limit.tokens, &model.specials)
}

/// Records on a window cut to `limit` (from [`token_limit`]) that limit and
/// how its captures fit the memory limit of `input`.
pub fn fit_window(
    model: &Model,
    mut built: BuiltInput,
    limit: TokenLimit,
    input: &InputOptions,
) -> BuiltInput {
    built.limit = limit;
    built.captures = capture_mode(model, built.tokens.len(), input).unwrap_or(CaptureMode::Stored);
    built.scratch_bytes = match built.captures {
        CaptureMode::Recomputed => model.scratch_bytes(built.tokens.len()),
        CaptureMode::Stored => 0,
    };
    built.keeps_residuals = input.keep_residuals && model.keeps_residuals(built.tokens.len());
    built.keeps_thumbnails = input.keep_thumbnails && built.captures == CaptureMode::Recomputed;
    built
}

/// Runs the model and the analysis on the prepared input.
pub fn run_prepared(
    model: &Model,
    built: BuiltInput,
    options: &AnalysisOptions,
    watch: &dyn RunWatch,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let mut captures = Captures::default();
    let kept = Kept {
        residuals: built.keeps_residuals,
        thumbnails: built.keeps_thumbnails,
    };
    let (mut analysis, thumbnails, stages) = capture_and_analyze(
        model,
        &built.tokens,
        built.captures,
        kept,
        options,
        &mut captures,
        watch,
    )?;
    analysis.sentences_analysed = built.sentences_analysed;
    analysis.sentences_left_out = built.sentences_left_out;
    analysis.tokens_left_out = built.tokens_left_out;
    let (model_ms, analysis_ms) = (stages.model_ms, stages.analysis_ms);
    Ok(RunOutput {
        input: built,
        captures,
        analysis,
        thumbnails,
        timings: Timings {
            input_ms: 0.0,
            model_ms,
            analysis_ms,
            total_ms: ms_since(start),
        },
    })
}

/// Milliseconds in the model and in the analysis. During a pass that
/// analyses as it goes, the model's time holds the heads' analysis, made
/// on the pass's threads, and the analysis' the layers' and the rest.
/// During a pass that keeps every P and S, the heads' passes over P, made
/// on the pass's threads as it makes P, count as the analysis': the most
/// time any one thread spent in them.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimes {
    pub model_ms: f64,
    pub analysis_ms: f64,
}

/// What a run keeps for the app's views beyond its figures and captures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kept {
    /// The residual stream ([`BuiltInput::keeps_residuals`]).
    pub residuals: bool,
    /// Each head's thumbnails, made by a pass that recomputes P and S
    /// ([`BuiltInput::keeps_thumbnails`]).
    pub thumbnails: bool,
}

/// Runs the model on `tokens` into `captures` (whose buffers are reused
/// when they have the right sizes) and computes the figures. With
/// [`CaptureMode::Recomputed`] each layer is analysed as soon as the pass
/// has computed it, and its P and S are freed; the captures keep what
/// recomputes them and the columns the Separators view reads, and the
/// pass makes each head's thumbnails where `kept` says. With
/// [`CaptureMode::Stored`] each head's passes over P are made as the pass
/// makes P, and the rest from the kept captures after it. Either mode
/// keeps the residual stream where `kept` says. `watch` is asked before
/// each layer whether to stop, and told where the run stands.
pub fn capture_and_analyze(
    model: &Model,
    tokens: &TokenSequence,
    mode: CaptureMode,
    kept: Kept,
    options: &AnalysisOptions,
    captures: &mut Captures,
    watch: &dyn RunWatch,
) -> Result<(Analysis, PassThumbnails, StageTimes), RunError> {
    let start = Instant::now();
    let layers = model.layers();
    let watching = |heads| PassWatch {
        watch,
        start,
        layers,
        heads,
    };
    let figures_begin = || {
        watch.progress(RunProgress {
            layers_done: layers,
            layers,
            elapsed: start.elapsed(),
            figures: true,
        })
    };
    if mode == CaptureMode::Stored {
        // The heads' passes over P run as the model makes each block of
        // its rows, in the cache; the analysis then reads only S.
        let analyser = LayerAnalyser::new(tokens, options, layers);
        let on_head = PassedAttention {
            analyser: &analyser,
            nanos: Mutex::new(HashMap::new()),
        };
        model.capture_into(
            &tokens.input_ids,
            &watching(Some(&on_head)),
            kept.residuals,
            captures,
        )?;
        // The stage times count those passes as the figures': the most
        // any thread of the pass spent in them (the threads run side by
        // side, and wait for the slowest at each layer's end).
        let nanos = on_head
            .nanos
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let in_pass_ms = nanos.values().max().map_or(0.0, |&n| n as f64 / 1e6);
        let model_ms = ms_since(start) - in_pass_ms;
        if watch.cancelled() {
            return Err(RunError::Cancelled);
        }
        figures_begin();
        let analysis_start = Instant::now();
        let analysis = analyser.analyse_captures(captures);
        let analysis_ms = in_pass_ms + ms_since(analysis_start);
        return Ok((
            analysis,
            PassThumbnails::default(),
            StageTimes {
                model_ms,
                analysis_ms,
            },
        ));
    }
    // The last run's buffers would otherwise live through this pass.
    *captures = Captures::default();
    let heads = model.heads();
    let analyser = LayerAnalyser::new(tokens, options, layers);
    // Each head is analysed on the thread of the pass that made it, while
    // it is in that core's cache (the stage times count that as the
    // model's): the tuned CPU pass keeps no layer's P or S whole (memory
    // grows with T², not L·H·T²).
    let on_head = AnalysedHeads {
        analyser: &analyser,
        thumbnails: kept.thumbnails.then(|| {
            let made = PassThumbnails::new(layers, heads, options.similarity);
            (Mutex::new(made), tokens.causal)
        }),
    };
    let mut analysis_ms = 0.0;
    *captures = model.capture_recomputable(
        &tokens.input_ids,
        &watching(Some(&on_head)),
        kept.residuals,
        &mut |index, layer| {
            let layer_start = Instant::now();
            // Every head was analysed as it was made: the layer's P and S,
            // where the pass still hands them over, are not read again.
            let squares = LayerSquares {
                attention: &[],
                attention_entropy: &[],
                similarity: &[],
                value_norms: layer.value_norms,
                heads,
            };
            analyser.add_layer(index, squares);
            analysis_ms += ms_since(layer_start);
        },
    )?;
    let thumbnails = on_head
        .thumbnails
        .map_or_else(PassThumbnails::default, |(made, _)| {
            made.into_inner().unwrap_or_else(|e| e.into_inner())
        });
    figures_begin();
    let analysis_start = Instant::now();
    let analysis = analyser.finish(captures);
    analysis_ms += ms_since(analysis_start);
    Ok((
        analysis,
        thumbnails,
        StageTimes {
            model_ms: ms_since(start) - analysis_ms,
            analysis_ms,
        },
    ))
}

/// The stored analysis' [`HeadObserver`]: each head's passes over P made
/// a block of rows at a time as the pass makes them, kept for
/// [`LayerAnalyser::analyse_captures`], with the time they took on each
/// thread.
struct PassedAttention<'a> {
    analyser: &'a LayerAnalyser<'a>,
    nanos: Mutex<HashMap<ThreadId, u64>>,
}

/// One head under way in [`PassedAttention`], and the time spent on it.
struct PassedHead<'s, 'a> {
    id: (usize, usize),
    analysis: HeadAnalysis<'s, 'a>,
    nanos: u64,
    of_pass: &'s PassedAttention<'a>,
}

impl HeadObserver for PassedAttention<'_> {
    fn begin(&self, layer: usize, head: usize, value_norms: &[f32]) -> Box<dyn HeadRows + '_> {
        let start = Instant::now();
        let analysis = self.analyser.begin_head(value_norms);
        Box::new(PassedHead {
            id: (layer, head),
            analysis,
            nanos: nanos_since(start),
            of_pass: self,
        })
    }
}

impl HeadRows for PassedHead<'_, '_> {
    fn attention_rows(&mut self, first: usize, rows: &[f32], entropies: &[f32]) {
        let start = Instant::now();
        self.analysis.attention_rows(first, (rows, entropies), None);
        self.nanos += nanos_since(start);
    }

    /// S is analysed from the captures, after the pass.
    fn finish(self: Box<Self>, _similarity: HeadSimilarity) {
        let start = Instant::now();
        let Self {
            id,
            analysis,
            nanos,
            of_pass,
        } = *self;
        analysis.finish_attention(id);
        let spent = nanos + nanos_since(start);
        let mut per_thread = of_pass.nanos.lock().unwrap_or_else(|e| e.into_inner());
        *per_thread.entry(std::thread::current().id()).or_default() += spent;
    }
}

/// The streamed analysis' [`HeadObserver`]: each head analysed as the pass
/// makes it, a block of P's rows at a time, and its thumbnails made from
/// the same rows where asked (with whether the model is causal).
struct AnalysedHeads<'a> {
    analyser: &'a LayerAnalyser<'a>,
    thumbnails: Option<(Mutex<PassThumbnails>, bool)>,
}

/// One head under way in [`AnalysedHeads`], with its thumbnails and
/// where they go.
struct AnalysedHead<'s, 'a> {
    id: (usize, usize),
    analysis: HeadAnalysis<'s, 'a>,
    thumbnails: Option<(HeadThumbnailsBuilder, &'s Mutex<PassThumbnails>)>,
}

impl HeadObserver for AnalysedHeads<'_> {
    fn begin(&self, layer: usize, head: usize, value_norms: &[f32]) -> Box<dyn HeadRows + '_> {
        let analysis = self.analyser.begin_head(value_norms);
        let thumbnails = self.thumbnails.as_ref().map(|(made, causal)| {
            let tokens = self.analyser.tokens();
            let weighted = analysis.weighs_values();
            (HeadThumbnailsBuilder::new(tokens, *causal, weighted), made)
        });
        Box::new(AnalysedHead {
            id: (layer, head),
            analysis,
            thumbnails,
        })
    }
}

impl HeadRows for AnalysedHead<'_, '_> {
    fn attention_rows(&mut self, first: usize, rows: &[f32], entropies: &[f32]) {
        let mut weighted = self.thumbnails.as_mut().and_then(|(builder, _)| {
            builder.attention_rows(first, rows);
            builder.value_weighted()
        });
        let weighted = weighted.as_mut().map(|w| w as RowSink<'_>);
        self.analysis
            .attention_rows(first, (rows, entropies), weighted);
    }

    fn finish(self: Box<Self>, similarity: HeadSimilarity) {
        let Self {
            id,
            analysis,
            thumbnails,
        } = *self;
        let Some((mut builder, made)) = thumbnails else {
            analysis.finish(id, similarity, None);
            return;
        };
        analysis.finish(id, similarity, Some(builder.similarity()));
        made.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(HeadId::new(id.0, id.1), builder.finish());
    }
}

/// A run's [`PassObserver`]: before each layer the pass tells `watch`
/// where it stands and asks it whether to go on; each head goes to `heads`
/// where given.
struct PassWatch<'a> {
    watch: &'a dyn RunWatch,
    start: Instant,
    layers: usize,
    heads: Option<&'a dyn HeadObserver>,
}

impl PassObserver for PassWatch<'_> {
    fn before_layer(&self, layer: usize) -> ControlFlow<()> {
        self.watch.progress(RunProgress {
            layers_done: layer,
            layers: self.layers,
            elapsed: self.start.elapsed(),
            figures: false,
        });
        if self.watch.cancelled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    fn heads(&self) -> Option<&dyn HeadObserver> {
        self.heads
    }

    fn ablation(&self) -> Option<&Ablation> {
        self.watch.ablation()
    }
}

/// Text → input → captures → figures. `watch` is asked between layers
/// whether to stop (a closure `|| false` never stops) and told the progress.
pub fn run(
    model: &Model,
    text: &str,
    input: &InputOptions,
    options: &AnalysisOptions,
    watch: &dyn RunWatch,
) -> Result<RunOutput, RunError> {
    run_telling_window(model, text, input, options, watch, |_| {})
}

/// [`run`], telling `window` of the input it takes before the pass.
pub fn run_telling_window(
    model: &Model,
    text: &str,
    input: &InputOptions,
    options: &AnalysisOptions,
    watch: &dyn RunWatch,
    window: impl FnOnce(&BuiltInput),
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let built = prepare_input(model, text, input)?;
    window(&built);
    let input_ms = ms_since(start);
    let mut output = run_prepared(model, built, options, watch)?;
    output.timings.input_ms = input_ms;
    output.timings.total_ms = ms_since(start);
    Ok(output)
}

/// Two models on one text: A's result, B's, and how they compare.
#[derive(Debug, Clone)]
pub struct ComparisonOutput {
    pub a: Arc<RunOutput>,
    pub b: RunOutput,
    /// The name of model B.
    pub b_name: String,
    pub comparison: Comparison,
    /// Wall time of B's run and of the comparison, in milliseconds.
    pub total_ms: f64,
}

impl ComparisonOutput {
    /// The document `headscope compare --json` writes; `a_name` names A.
    pub fn report<'a>(&'a self, a_name: &'a str) -> ComparisonReport<'a> {
        ComparisonReport::new(
            ModelReport::new(a_name, side(&self.a), &self.a.input.sentences_split),
            ModelReport::new(&self.b_name, side(&self.b), &self.b.input.sentences_split),
            &self.comparison,
        )
    }
}

fn side(output: &RunOutput) -> Side<'_> {
    Side {
        tokens: &output.input.tokens,
        captures: &output.captures,
        analysis: &output.analysis,
    }
}

/// Runs `model_b` on the text and with the options that gave `a`, and
/// compares the two (see [`crate::comparison`]). Each model cuts its own
/// input window from the same first sentence.
pub fn run_comparison(
    model_b: &Model,
    a: Arc<RunOutput>,
    text: &str,
    input: &InputOptions,
    options: &AnalysisOptions,
    watch: &dyn RunWatch,
) -> Result<ComparisonOutput, RunError> {
    let start = Instant::now();
    let b = run(model_b, text, input, options, watch)?;
    if watch.cancelled() {
        return Err(RunError::Cancelled);
    }
    let mut output = compare_runs(a, b, model_b.name.clone());
    output.total_ms = ms_since(start);
    Ok(output)
}

/// Compares two runs on the same text (B named `b_name`; either may come
/// from a capture file).
pub fn compare_runs(a: Arc<RunOutput>, b: RunOutput, b_name: String) -> ComparisonOutput {
    let start = Instant::now();
    let comparison = comparison::compare(side(&a), side(&b));
    ComparisonOutput {
        a,
        b,
        b_name,
        comparison,
        total_ms: ms_since(start),
    }
}

fn nanos_since(start: Instant) -> u64 {
    start.elapsed().as_nanos().try_into().unwrap_or(u64::MAX)
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
