//! `headscope corpus`: the corpus statistics of many documents from the
//! command line, with progress on stderr (a live bar on a terminal, a line
//! now and then in a log file), whole or one shard at a time; of a corpus
//! of capture files when no `--model` is given ([`crate::corpus::captures`]);
//! and `headscope merge`, which turns the shards' parts into the whole's
//! report.

use super::ablate::ModeArg;
use super::args::{InputArgs, LimitArgs};
use super::running::{check_writable, load_model};
use crate::corpus::documents::{DEFAULT_ID_FIELD, DEFAULT_TEXT_FIELD};
use crate::corpus::{
    self, CorpusEvent, CorpusOptions, CorpusPart, Progress, Shard, SourceOptions, WindowLimits,
};
use anyhow::{anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub(crate) struct CorpusArgs {
    /// Model folder (config.json, model.safetensors, tokenizer.json), GGUF
    /// file or Hugging Face id. Leave it out for a corpus of capture files
    /// (.safetensors, docs/CAPTURE.md): each capture is one window,
    /// analysed as stored.
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// Write the corpus statistics as JSON to this file, - for stdout.
    #[arg(long, required_unless_present = "part")]
    json: Option<PathBuf>,
    /// Also write one row per layer/head figure (mean, std, ci95, n) as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the mergeable partial result here (what `headscope merge` reads).
    #[arg(long)]
    part: Option<PathBuf>,
    /// Analyse only shard K of N (K from 0): a deterministic 1/N of the
    /// corpus by size. Needs --part.
    #[arg(long, value_name = "K/N", requires = "part")]
    shard: Option<Shard>,
    /// The field (JSON Lines) or column (Parquet) holding each document's text.
    #[arg(long, default_value = DEFAULT_TEXT_FIELD)]
    text_field: String,
    /// The field or column naming each document (else FILE:LINE or FILE[ROW]).
    #[arg(long, default_value = DEFAULT_ID_FIELD)]
    id_field: String,
    /// Also ablate each head alone in every window (ANALYSIS.md §9; L × H
    /// passes a window, as `headscope ablate --importance`): each head's
    /// importance_delta_loss and importance_output_change over the
    /// corpus. `--importance` zeroes the head, `--importance=mean` puts its
    /// mean output in its place.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "zero"
    )]
    importance: Option<ModeArg>,
    /// Files and folders: .txt, .md, .jsonl, .parquet and .gz text (folders
    /// are searched recursively); without --model, capture files and
    /// folders of them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct MergeArgs {
    /// The parts written by `headscope corpus --shard K/N --part FILE`, one per shard.
    #[arg(required = true)]
    parts: Vec<PathBuf>,
    /// Write the merged corpus statistics as JSON to this file, - for stdout.
    #[arg(long)]
    json: PathBuf,
    /// Also write them as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
}

/// How often a log (stderr not a terminal) hears about progress: at every
/// further [`LOG_STEP`] of the work, and at least every [`LOG_INTERVAL`].
const LOG_STEP: f64 = 0.05;
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Shows a run's progress and messages on stderr.
enum ProgressDisplay {
    /// A terminal: one bar that redraws itself, messages printed above it.
    Bar(ProgressBar),
    /// A file or a pipe: whole lines, a few of them.
    Log {
        last_line: Option<Instant>,
        last_fraction: f64,
    },
}

impl ProgressDisplay {
    fn for_stderr() -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(1_000);
            bar.set_style(
                ProgressStyle::with_template("headscope: corpus {percent:>3}% [{bar:20}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("## "),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            Self::Bar(bar)
        } else {
            Self::Log {
                last_line: None,
                last_fraction: 0.0,
            }
        }
    }

    fn progress(&mut self, progress: &Progress<'_>) {
        let fraction = progress.fraction();
        match self {
            Self::Bar(bar) => {
                bar.set_position((fraction * 1_000.0).round() as u64);
                bar.set_message(progress.counts());
            }
            Self::Log {
                last_line,
                last_fraction,
            } => {
                let due = match last_line {
                    None => true,
                    Some(at) => {
                        at.elapsed() >= LOG_INTERVAL
                            || fraction >= *last_fraction + LOG_STEP
                            || (fraction >= 1.0 && *last_fraction < 1.0)
                    }
                };
                if due {
                    eprintln!("headscope: {}", progress.line());
                    *last_line = Some(Instant::now());
                    *last_fraction = fraction;
                }
            }
        }
    }

    /// Shows what a run tells: progress, skipped files, warnings.
    fn event(&mut self, event: CorpusEvent<'_>) {
        match event {
            CorpusEvent::Progress(p) => self.progress(&p),
            CorpusEvent::Skipped(s) => {
                self.message(format!("headscope: skipped {}: {}", s.path, s.reason))
            }
            CorpusEvent::Warning(w) => {
                self.message(format!("headscope: warning: {}: {}", w.path, w.warning))
            }
        }
    }

    fn message(&self, line: String) {
        match self {
            Self::Bar(bar) => bar.suspend(|| eprintln!("{line}")),
            Self::Log { .. } => eprintln!("{line}"),
        }
    }

    fn finish(self) {
        if let Self::Bar(bar) = self {
            bar.finish();
        }
    }
}

/// Writes `text` to `path`, or to standard output for `-`.
fn write_output(path: &Path, text: &str) -> anyhow::Result<()> {
    if is_stdout(path) {
        println!("{text}");
    } else {
        crate::export::save_text(text, path)?;
    }
    Ok(())
}

fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Fails early when two outputs go to standard output, or one cannot be written.
fn check_outputs(outputs: &[&Option<PathBuf>]) -> anyhow::Result<()> {
    let paths: Vec<&PathBuf> = outputs.iter().filter_map(|p| p.as_ref()).collect();
    if paths.iter().filter(|p| is_stdout(p)).count() > 1 {
        bail!("only one of --json, --csv and --part can go to standard output");
    }
    for path in paths {
        check_writable(path)?;
    }
    Ok(())
}

pub(crate) fn corpus(args: CorpusArgs) -> anyhow::Result<()> {
    let Some(model) = &args.model else {
        return capture_corpus(&args);
    };
    if let Some(capture) = args
        .paths
        .iter()
        .find(|p| crate::capture_file::is_capture_path(p))
    {
        bail!(
            "{} is a capture file: a corpus of captures takes no --model (leave it out)",
            capture.display()
        );
    }
    let input = args.limits.input_options(&args.input)?;
    let options = CorpusOptions {
        mode: input.mode,
        analysis: args.input.analysis.options()?,
        limits: WindowLimits {
            max_tokens: input.max_tokens,
            capture_memory_mb: input.capture_memory_mb,
        },
        importance: args.importance.map(Into::into),
    };
    // Check the outputs and find the documents before the model loads, so
    // a typo costs nothing.
    check_outputs(&[&args.json, &args.csv, &args.part])?;
    let sources = SourceOptions {
        text_field: args.text_field.clone(),
        id_field: args.id_field.clone(),
    };
    let plan = corpus::find_documents(&args.paths, &sources)?;
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let model = load_model(model)?;
    let cancel = cancel_on_ctrl_c();
    let mut display = ProgressDisplay::for_stderr();
    let mut part = corpus::run_shard(
        &model,
        &plan,
        shard,
        &options,
        &mut |event| display.event(event),
        &cancel,
    );
    display.finish();
    if let Some(path) = &args.part {
        part.model_fingerprint = match corpus::model_fingerprint(&model.folder) {
            Ok(digest) => Some(digest),
            Err(e) => {
                eprintln!(
                    "headscope: warning: cannot read the model's files for its digest ({e}): \
                     the merge will compare the model by name only"
                );
                None
            }
        };
        write_output(path, &part.to_json())?;
    }
    write_report(&args, &part, plan.documents.len())
}

/// `headscope corpus` without `--model`: the corpus statistics of capture
/// files, each one window, analysed with the analysis options.
fn capture_corpus(args: &CorpusArgs) -> anyhow::Result<()> {
    if args.shard.is_some() {
        bail!(
            "a corpus of captures is analysed whole, without a model run: it takes no --shard \
             (a corpus of texts needs --model M)"
        );
    }
    if args.importance.is_some() {
        bail!(
            "--importance ablates heads in the model's passes: a corpus of captures has no \
             model (a corpus of texts needs --model M)"
        );
    }
    let options = args.input.analysis.options()?;
    check_outputs(&[&args.json, &args.csv, &args.part])?;
    let plan = corpus::find_captures(&args.paths).map_err(|e| match e {
        corpus::CaptureCorpusError::NoCaptures { .. } => {
            anyhow!("{e}; a corpus of texts needs --model M")
        }
        other => anyhow!(other),
    })?;
    eprintln!(
        "headscope: {} capture{} of {}",
        plan.captures.len(),
        if plan.captures.len() == 1 { "" } else { "s" },
        plan.model()
    );
    let cancel = cancel_on_ctrl_c();
    let mut display = ProgressDisplay::for_stderr();
    let part = corpus::run_captures(&plan, &options, &mut |event| display.event(event), &cancel);
    display.finish();
    if let Some(path) = &args.part {
        write_output(path, &part.to_json())?;
    }
    write_report(args, &part, plan.captures.len())
}

/// The first Ctrl+C stops at the next layer (or capture) and writes what
/// was done; a second one quits at once.
fn cancel_on_ctrl_c() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    if let Err(e) = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    }) {
        eprintln!("headscope: warning: Ctrl+C will stop without writing anything: {e}");
    }
    cancel
}

/// Writes the report of `part` as --json and --csv ask, and says what was
/// done; an interrupted run is an error once written.
fn write_report(args: &CorpusArgs, part: &CorpusPart, documents: usize) -> anyhow::Result<()> {
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let report = part.report();
    if let Some(path) = &args.json {
        write_output(path, &report.to_json())?;
    }
    if let Some(path) = &args.csv {
        write_output(path, &report.to_csv())?;
    }
    let windows = |n: usize| format!("{n} window{}", if n == 1 { "" } else { "s" });
    if report.partial {
        bail!(
            "interrupted: wrote the {} done so far (\"partial\": true){}",
            windows(report.windows),
            if args.shard.is_some() {
                format!("; rerun this shard alone with --shard {shard}")
            } else {
                String::new()
            }
        );
    }
    let shard_text = match args.shard {
        Some(shard) => format!(
            "shard {shard} (documents {}–{} of {}): ",
            part.first_document + 1,
            part.end_document,
            documents
        ),
        None => String::new(),
    };
    eprintln!(
        "headscope: {shard_text}{} of {} documents ({} tokens; {} skipped) in {:.1} s",
        windows(report.windows),
        report.files,
        report.tokens,
        report.skipped.len(),
        report.elapsed_seconds
    );
    Ok(())
}

/// `headscope merge`: the parts of a sharded run into its report.
pub(crate) fn merge(args: MergeArgs) -> anyhow::Result<()> {
    check_outputs(&[&Some(args.json.clone()), &args.csv])?;
    let mut parts = Vec::with_capacity(args.parts.len());
    for path in &args.parts {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow!(
                "cannot read {name}: {}",
                crate::textfile::describe_io_error(&e)
            )
        })?;
        let part = CorpusPart::from_json(&text).map_err(|e| anyhow!("{name} is {e}"))?;
        parts.push((name, part));
    }
    let report = corpus::merge(&parts)?;
    write_output(&args.json, &report.to_json())?;
    if let Some(path) = &args.csv {
        write_output(path, &report.to_csv())?;
    }
    eprintln!(
        "headscope: merged {} shards: {} windows of {} documents ({} skipped)",
        parts.len(),
        report.windows,
        report.files,
        report.skipped.len()
    );
    Ok(())
}
