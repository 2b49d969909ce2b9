//! `headscope corpus`: the corpus statistics of many texts from the command
//! line, with progress on stderr: a live bar on a terminal, a line now and
//! then in a log file.

use super::{check_writable, load_model, ModelInputArgs};
use crate::corpus::{self, CorpusEvent, CorpusOptions, Progress};
use anyhow::bail;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub(crate) struct CorpusArgs {
    #[command(flatten)]
    input: ModelInputArgs,
    /// Write the corpus statistics as JSON to this file, - for stdout.
    #[arg(long)]
    json: PathBuf,
    /// Also write one row per layer/head figure (mean, std, ci95, n) as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Text files, and folders searched recursively for .txt files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
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

pub(crate) fn corpus(args: CorpusArgs) -> anyhow::Result<()> {
    let is_stdout = |path: &Path| path.as_os_str() == "-";
    if is_stdout(&args.json) && args.csv.as_deref().is_some_and(is_stdout) {
        bail!("--json and --csv cannot both go to standard output");
    }
    let options = CorpusOptions {
        mode: args.input.mode(),
        analysis: args.input.analysis.options()?,
    };
    // Check the outputs and find the files before the model loads, so a
    // typo costs nothing.
    check_writable(&args.json)?;
    if let Some(path) = &args.csv {
        check_writable(path)?;
    }
    let files = corpus::find_text_files(&args.paths)?;
    let model = load_model(&args.input.model)?;
    // The first Ctrl+C stops at the next layer and writes what was done;
    // a second one quits at once.
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    if let Err(e) = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    }) {
        eprintln!("headscope: warning: Ctrl+C will stop without writing anything: {e}");
    }
    let mut display = ProgressDisplay::for_stderr();
    let report = corpus::run_files(
        &model,
        files,
        &options,
        &mut |event| match event {
            CorpusEvent::Progress(p) => display.progress(&p),
            CorpusEvent::Skipped(s) => {
                display.message(format!("headscope: skipped {}: {}", s.path, s.reason))
            }
            CorpusEvent::Warning(w) => {
                display.message(format!("headscope: warning: {}: {}", w.path, w.warning))
            }
        },
        &cancel,
    );
    display.finish();
    let write = |path: &Path, text: String| -> anyhow::Result<()> {
        if is_stdout(path) {
            println!("{text}");
        } else {
            crate::export::save_text(&text, path)?;
        }
        Ok(())
    };
    write(&args.json, report.to_json())?;
    if let Some(path) = &args.csv {
        write(path, report.to_csv())?;
    }
    if report.partial {
        bail!(
            "interrupted: wrote the {} window{} done so far (\"partial\": true)",
            report.windows,
            if report.windows == 1 { "" } else { "s" }
        );
    }
    eprintln!(
        "headscope: {} windows of {} files ({} tokens; {} skipped) in {:.1} s",
        report.windows,
        report.files,
        report.tokens,
        report.skipped.len(),
        report.elapsed_seconds
    );
    Ok(())
}
