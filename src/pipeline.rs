//! The one path from text to figures, shared by the CLI, the app's worker,
//! the benchmarks and the tests: build the input (ANALYSIS.md §1), run the
//! encoder with every head captured (§2), compute the figures (§3–§5);
//! when every head's P and S would not fit the memory limit (a decoder on a
//! long input), the figures are computed layer by layer during the pass and
//! the captures keep what recomputes P and S per head ([`capture_and_analyze`]);
//! and, for a comparison, run a second model on the same text and compare
//! the two ([`run_comparison`]).

use crate::analysis::{analyze, Analysis, AnalysisOptions, LayerAnalyser, LayerSquares};
use crate::captures::{CaptureMode, Captures, SeparatorColumns};
use crate::comparison::{self, Comparison, ComparisonReport, ModelReport, Side};
use crate::input::{build_input, BuiltInput, InputError, InputMode, LimitedBy, TokenLimit};
use crate::model::{ForwardError, Model};
use crate::tokens::TokenSequence;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Which part of the text becomes the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputOptions {
    pub mode: InputMode,
    /// First sentence of the window (0-based); 0 analyses from the start.
    pub first_sentence: usize,
    /// At most this many tokens per window, below the model's own limit.
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// At most this much memory, in MB, for the captures of one window (P
    /// and S of every head, or for a decoder what recomputes them);
    /// [`DEFAULT_CAPTURE_MEMORY_MB`] when `None`.
    #[serde(default)]
    pub capture_memory_mb: Option<u64>,
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
        .is_some_and(|bytes| bytes <= budget)
    {
        Some(CaptureMode::Recomputed)
    } else {
        None
    }
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
        // The captures grow with T, so a bisection finds the largest T.
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
    pub timings: Timings,
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
        input.first_sentence,
        &model.specials,
    )?;
    Ok(fit_window(model, built, limit, input))
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
    built
}

/// Runs the model and the analysis on the prepared input.
pub fn run_prepared(
    model: &Model,
    built: BuiltInput,
    options: &AnalysisOptions,
    cancelled: &dyn Fn() -> bool,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let mut captures = Captures::default();
    let (mut analysis, stages) = capture_and_analyze(
        model,
        &built.tokens,
        built.captures,
        options,
        &mut captures,
        cancelled,
    )?;
    analysis.sentences_analysed = built.sentences_analysed;
    analysis.sentences_left_out = built.sentences_left_out;
    analysis.tokens_left_out = built.tokens_left_out;
    let (model_ms, analysis_ms) = (stages.model_ms, stages.analysis_ms);
    Ok(RunOutput {
        input: built,
        captures,
        analysis,
        timings: Timings {
            input_ms: 0.0,
            model_ms,
            analysis_ms,
            total_ms: ms_since(start),
        },
    })
}

/// Milliseconds in the model and in the analysis (during a pass that
/// analyses layer by layer, the analysis' share of it).
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimes {
    pub model_ms: f64,
    pub analysis_ms: f64,
}

/// Runs the model on `tokens` into `captures` (whose buffers are reused
/// when they have the right sizes) and computes the figures. With
/// [`CaptureMode::Recomputed`] each layer is analysed as soon as the pass
/// has computed it, and its P and S are freed; the captures keep what
/// recomputes them and the columns the Separators view reads.
pub fn capture_and_analyze(
    model: &Model,
    tokens: &TokenSequence,
    mode: CaptureMode,
    options: &AnalysisOptions,
    captures: &mut Captures,
    cancelled: &dyn Fn() -> bool,
) -> Result<(Analysis, StageTimes), RunError> {
    let start = Instant::now();
    if mode == CaptureMode::Stored {
        model.capture_into(&tokens.input_ids, cancelled, captures)?;
        let model_ms = ms_since(start);
        if cancelled() {
            return Err(RunError::Cancelled);
        }
        let analysis_start = Instant::now();
        let analysis = analyze(tokens, captures, options);
        let analysis_ms = ms_since(analysis_start);
        return Ok((
            analysis,
            StageTimes {
                model_ms,
                analysis_ms,
            },
        ));
    }
    // The last run's buffers would otherwise live through this pass.
    *captures = Captures::default();
    let (layers, heads, t) = (model.layers(), model.heads(), tokens.len());
    let separators = tokens.separator_positions();
    let mut analyser = LayerAnalyser::new(tokens, options, layers);
    let mut columns = Vec::with_capacity(layers);
    let mut analysis_ms = 0.0;
    *captures = model.capture_recomputable(&tokens.input_ids, cancelled, &mut |index, layer| {
        let layer_start = Instant::now();
        let squares = LayerSquares {
            attention: layer.attention,
            similarity: layer.similarity,
            heads,
        };
        analyser.add_layer(index, squares);
        columns.push(SeparatorColumns::of_layer(
            |h| std::borrow::Cow::Borrowed(squares.head_attention(h)),
            heads,
            t,
            &separators,
        ));
        analysis_ms += ms_since(layer_start);
    })?;
    captures.separator_columns = columns;
    let analysis_start = Instant::now();
    let analysis = analyser.finish();
    analysis_ms += ms_since(analysis_start);
    Ok((
        analysis,
        StageTimes {
            model_ms: ms_since(start) - analysis_ms,
            analysis_ms,
        },
    ))
}

/// Text → input → captures → figures. `cancelled` is polled between layers.
pub fn run(
    model: &Model,
    text: &str,
    input: &InputOptions,
    options: &AnalysisOptions,
    cancelled: &dyn Fn() -> bool,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let built = prepare_input(model, text, input)?;
    let input_ms = ms_since(start);
    let mut output = run_prepared(model, built, options, cancelled)?;
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
            ModelReport::new(a_name, side(&self.a)),
            ModelReport::new(&self.b_name, side(&self.b)),
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
    cancelled: &dyn Fn() -> bool,
) -> Result<ComparisonOutput, RunError> {
    let start = Instant::now();
    let b = run(model_b, text, input, options, cancelled)?;
    if cancelled() {
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

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
