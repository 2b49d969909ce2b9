//! The one path from text to figures, shared by the CLI, the app's worker,
//! the benchmarks and the tests: build the input (ANALYSIS.md §1), run the
//! encoder with every head captured (§2), compute the figures (§3–§5);
//! and, for a comparison, run a second model on the same text and compare
//! the two ([`run_comparison`]).

use crate::analysis::{analyze, Analysis, AnalysisOptions};
use crate::captures::Captures;
use crate::comparison::{self, Comparison, ComparisonReport, ModelReport, Side};
use crate::input::{build_input, BuiltInput, InputError, InputMode, LimitedBy, TokenLimit};
use crate::model::{ForwardError, Model};
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
    /// and S of every head); [`DEFAULT_CAPTURE_MEMORY_MB`] when `None`.
    #[serde(default)]
    pub capture_memory_mb: Option<u64>,
}

/// The captures of one window may take 2 GiB by default: BERT-large at 512
/// tokens takes 0.8 GB, while a decoder of 24 layers × 14 heads at 2,048
/// tokens would take 11 GB and is cut to fit.
pub const DEFAULT_CAPTURE_MEMORY_MB: u64 = 2048;

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
    let budget = mb.saturating_mul(1 << 20);
    if model.capture_bytes(limit.tokens) > budget {
        // The captures grow as T², so a bisection finds the largest T.
        let (mut fits, mut too_many) = (0, limit.tokens);
        while too_many - fits > 1 {
            let middle = (fits + too_many) / 2;
            if model.capture_bytes(middle) <= budget {
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
    let mut built = build_input(
        &model.tokenizer,
        text,
        input.mode,
        limit.tokens,
        input.first_sentence,
        &model.specials,
    )?;
    built.limit = limit;
    Ok(built)
}

/// Runs the model and the analysis on the prepared input.
pub fn run_prepared(
    model: &Model,
    built: BuiltInput,
    options: &AnalysisOptions,
    cancelled: &dyn Fn() -> bool,
) -> Result<RunOutput, RunError> {
    let start = Instant::now();
    let captures = model.capture(&built.tokens.input_ids, cancelled)?;
    let model_ms = ms_since(start);
    if cancelled() {
        return Err(RunError::Cancelled);
    }
    let analysis_start = Instant::now();
    let mut analysis = analyze(&built.tokens, &captures, options);
    analysis.sentences_analysed = built.sentences_analysed;
    analysis.sentences_left_out = built.sentences_left_out;
    analysis.tokens_left_out = built.tokens_left_out;
    let analysis_ms = ms_since(analysis_start);
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
    let comparison = comparison::compare(side(&a), side(&b));
    Ok(ComparisonOutput {
        a,
        b,
        b_name: model_b.name.clone(),
        comparison,
        total_ms: ms_since(start),
    })
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
