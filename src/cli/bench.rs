//! `headscope bench`: the wall time of the whole analysis of an N-token
//! input (forward pass with attentions and head outputs captured, every
//! similarity matrix, every figure), the same work the PyTorch reference
//! `torch_ref.py time` measures, plus peak memory.
//!
//! With `--corpus`, it also runs the corpus runner over real documents and
//! reports its windows per second beside the encoder's: the windows over
//! the time the same run spent in the encoder and the analysis (measured
//! in the same run, so a busy machine slows both alike), and the synthetic
//! bench at the corpus's mean window length. The gap is what reading,
//! tokenizing and cutting the documents cost.

use super::running::load_model;
use crate::analysis::AnalysisOptions;
use crate::captures::{CaptureMode, Captures};
use crate::corpus::{self, CorpusOptions, CorpusPlan};
use crate::model::Model;
use crate::pipeline::{self, InputOptions};
use crate::tokens::TokenSequence;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// Model folder, GGUF file or Hugging Face id.
    #[arg(long)]
    pub(crate) model: String,
    /// Input length in tokens, [CLS] and [SEP] included (with --text, at
    /// most: the window ends at a sentence's end, as in `analyze`).
    #[arg(long, default_value_t = 128)]
    pub(crate) tokens: usize,
    /// Real text instead of seeded random ids: its first window of at most
    /// --tokens tokens (real text repeats words and makes ties, which the
    /// figures' time may feel).
    #[arg(long, value_name = "FILE", conflicts_with = "corpus")]
    pub(crate) text: Option<PathBuf>,
    /// Timed runs after one warm-up run.
    #[arg(long, default_value_t = 7)]
    pub(crate) runs: usize,
    /// At most this much memory, in MB, for every head's P and S, as in `analyze`: a decoder whose P and S need more recomputes them, and a longer input is refused.
    #[arg(long, value_name = "MB", default_value_t = crate::pipeline::DEFAULT_CAPTURE_MEMORY_MB)]
    pub(crate) capture_memory_mb: u64,
    /// Where P and S are recomputed, have the pass make each head's
    /// thumbnails as it goes, as the app does.
    #[arg(long)]
    pub(crate) thumbnails: bool,
    /// Also run the corpus runner over these files and folders and compare
    /// its windows per second with the encoder's at the corpus's mean
    /// window length (which then replaces --tokens).
    #[arg(long, num_args = 1..)]
    pub(crate) corpus: Vec<PathBuf>,
}

pub(crate) fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let plan = if args.corpus.is_empty() {
        None
    } else {
        Some(crate::corpus::find_text_files(&args.corpus)?)
    };
    let text = match &args.text {
        Some(path) => Some(crate::textfile::read_text_file(path)?.text),
        None => None,
    };
    let model = load_model(&args.model)?;
    let kept = crate::pipeline::Kept {
        residuals: false,
        thumbnails: args.thumbnails,
    };
    let Some(plan) = plan else {
        let sequence = match text {
            Some(text) => text_window(&model, &text, args.tokens)?,
            None => synthetic_sequence(&model, args.tokens),
        };
        let report = run_bench(&model, &sequence, args.runs, args.capture_memory_mb, kept)?;
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    };
    let corpus = run_corpus_bench(&model, plan)?;
    let tokens = (corpus.tokens_per_window.round() as usize).clamp(2, model.max_tokens());
    let sequence = synthetic_sequence(&model, tokens);
    let encoder = run_bench(&model, &sequence, args.runs, args.capture_memory_mb, kept)?;
    println!(
        "{}",
        serde_json::json!({
            "corpus": corpus,
            "encoder": encoder,
            "synthetic_windows_per_second": 1000.0 / encoder.median_ms,
        })
    );
    Ok(())
}

/// One JSON line of `headscope bench`.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub tokens: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub model_median_ms: f64,
    pub analysis_median_ms: f64,
    pub runs: usize,
    /// Whether every P and S was kept or recomputable (the default memory
    /// limit decides, as in `analyze`).
    pub captures: CaptureMode,
    /// Peak resident memory of the process so far (Linux), in MB.
    pub peak_rss_mb: Option<f64>,
}

/// A sequence like the reference's: the start token (`[CLS]`, `<s>`),
/// seeded pseudo-random ids in 1000..20000 (within the vocabulary of a
/// smaller one) split into sentences of 25
/// tokens, each closed by the separator (`[SEP]`, `</s>`). For a causal
/// decoder the sentences' last tokens are content tokens that close them
/// (ANALYSIS.md §8) and the start token is its BOS (or first special token).
pub fn synthetic_sequence(model: &Model, tokens: usize) -> TokenSequence {
    let (start, separator) = (model.specials.start.id, model.specials.separator.id);
    let causal = model.specials.causal;
    let mut sequence = TokenSequence {
        cls_id: start,
        sep_id: separator,
        causal: model.specials.causal_attention(),
        bidirectional_decoder: model.specials.bidirectional_decoder,
        style: model.specials.style,
        ..Default::default()
    };
    let vocab = model.config.vocab_size.max(2) as u64;
    let (low, span) = if vocab >= 20_000 {
        (1000, 19_000)
    } else {
        (vocab / 2, vocab - vocab / 2)
    };
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut sentence = 0;
    for position in 0..tokens {
        let closes = position > 0 && (position == tokens - 1 || position % 26 == 0);
        let (id, special) = if position == 0 {
            (start, true)
        } else if closes && !causal {
            (separator, true)
        } else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((low + state % span) as u32, false)
        };
        sequence.input_ids.push(id);
        sequence.token_texts.push(
            model
                .tokenizer
                .id_to_token(id)
                .unwrap_or_else(|| id.to_string()),
        );
        sequence.special.push(special);
        sequence
            .sentence_ids
            .push((position > 0).then_some(sentence));
        sequence.offsets.push(None);
        if closes {
            sentence += 1;
        }
    }
    sequence
}

/// The first window of `text` of at most `tokens` tokens, as `analyze
/// --max-tokens` cuts it.
pub fn text_window(model: &Model, text: &str, tokens: usize) -> anyhow::Result<TokenSequence> {
    let input = InputOptions {
        max_tokens: Some(tokens),
        ..InputOptions::default()
    };
    let built = pipeline::prepare_input(model, text, &input).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(built.tokens)
}

/// One warm-up run, then `runs` timed runs of `sequence`, P and S kept or
/// recomputed as `capture_memory_mb` decides, keeping what `kept` says.
pub fn run_bench(
    model: &Model,
    sequence: &TokenSequence,
    runs: usize,
    capture_memory_mb: u64,
    kept: pipeline::Kept,
) -> anyhow::Result<BenchReport> {
    let tokens = sequence.len();
    if tokens < 2 || tokens > model.max_tokens() {
        anyhow::bail!(
            "--tokens {tokens} is outside 2..={} for this model",
            model.max_tokens()
        );
    }
    if runs == 0 {
        anyhow::bail!("--runs must be at least 1");
    }
    let options = AnalysisOptions::default();
    let mut totals = Vec::with_capacity(runs);
    let mut model_times = Vec::with_capacity(runs);
    let mut analysis_times = Vec::with_capacity(runs);
    // Kept across runs, as a session rerunning the model would keep it: the
    // forward pass then writes into memory that is already mapped.
    let mut captures = Captures::default();
    let input = InputOptions {
        capture_memory_mb: Some(capture_memory_mb),
        ..InputOptions::default()
    };
    let mode = pipeline::capture_mode(model, tokens, &input).ok_or_else(|| {
        anyhow::anyhow!(
            "--tokens {tokens} does not fit the capture memory limit of {capture_memory_mb} MB \
             (--capture-memory-mb)"
        )
    })?;
    for run in 0..=runs {
        let start = Instant::now();
        let (analysis, _, stages) = pipeline::capture_and_analyze(
            model,
            sequence,
            mode,
            kept,
            &options,
            &mut captures,
            &|| false,
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        std::hint::black_box(&analysis);
        if run > 0 {
            totals.push(start.elapsed().as_secs_f64() * 1000.0);
            model_times.push(stages.model_ms);
            analysis_times.push(stages.analysis_ms);
        }
    }
    Ok(BenchReport {
        tokens,
        median_ms: median(&mut totals),
        min_ms: totals.iter().cloned().fold(f64::INFINITY, f64::min),
        model_median_ms: median(&mut model_times),
        analysis_median_ms: median(&mut analysis_times),
        runs,
        captures: mode,
        peak_rss_mb: peak_rss_mb(),
    })
}

/// The corpus runner's pace on real documents.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusBench {
    pub documents: usize,
    pub windows: usize,
    pub tokens_per_window: f64,
    pub seconds: f64,
    pub windows_per_second: f64,
    /// Of `seconds`, those in the encoder and the analysis.
    pub model_seconds: f64,
    /// `windows / model_seconds`: the encoder's pace on these windows.
    pub encoder_windows_per_second: f64,
    /// `windows_per_second / encoder_windows_per_second`.
    pub corpus_over_encoder: f64,
}

/// Runs the whole corpus of `plan` (document mode, default settings), as
/// `headscope corpus` would, and times it.
pub fn run_corpus_bench(model: &Model, plan: CorpusPlan) -> anyhow::Result<CorpusBench> {
    let start = Instant::now();
    let report = corpus::run_files(
        model,
        plan,
        &CorpusOptions::default(),
        &mut |_| {},
        &AtomicBool::new(false),
    );
    let seconds = start.elapsed().as_secs_f64();
    if report.windows == 0 {
        anyhow::bail!("the corpus gave no window to analyse");
    }
    Ok(CorpusBench {
        documents: report.files,
        windows: report.windows,
        tokens_per_window: report.tokens_per_window.mean.unwrap_or(0.0),
        seconds,
        windows_per_second: report.windows as f64 / seconds,
        model_seconds: report.model_seconds,
        encoder_windows_per_second: report.windows as f64 / report.model_seconds,
        corpus_over_encoder: report.model_seconds / seconds,
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// VmHWM from /proc/self/status.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
