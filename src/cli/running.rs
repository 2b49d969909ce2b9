//! Running the model from the command line: loading it with download
//! progress on stderr, reading a text file, running the analysis with the
//! file named in every error, its progress on stderr, saying what was left
//! out before the pass, and checking an output path before the model runs.

use crate::analysis::AnalysisOptions;
use crate::input::BuiltInput;
use crate::model::{LoadProgress, Model, ModelSource};
use crate::pipeline::{self, InputOptions, RunError, RunOutput, RunProgress, RunWatch};
use crate::textfile::read_text_file;
use anyhow::{anyhow, bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// Loads a model, showing download progress on stderr.
pub(crate) fn load_model(text: &str) -> anyhow::Result<Model> {
    let source = ModelSource::parse(text)?;
    let mut last_percent = None;
    Model::load(&source, &mut |progress| {
        if let LoadProgress::Downloading { file, done, total } = progress {
            let percent = (done * 100).checked_div(total).unwrap_or(0);
            if last_percent != Some(percent) {
                last_percent = Some(percent);
                eprint!("\rheadscope: downloading {file}: {percent}%   ");
                if done >= total {
                    eprintln!();
                }
            }
        }
    })
}

/// Reads a text file, warning on stderr when it was read as Latin-1.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    let file = read_text_file(path)?;
    if let Some(warning) = &file.warning {
        eprintln!("headscope: warning: {warning}");
    }
    Ok(file.text)
}

/// Runs the model on the text of `path`: errors name the file, what did
/// not fit is reported on stderr before the pass, and the pass's progress
/// while it lasts ([`PassProgress`]: a 32k-token input takes half an hour).
pub(crate) fn run_on_text(
    model: &Model,
    text: &str,
    path: &Path,
    input: &InputOptions,
    options: &AnalysisOptions,
) -> anyhow::Result<RunOutput> {
    let progress = PassProgress::on_stderr();
    let output = pipeline::run_telling_window(model, text, input, options, &progress, |built| {
        report_window(built, &path.display().to_string())
    });
    progress.finish();
    output.map_err(|e| file_error(e, path))
}

/// A pass's progress on stderr: on a terminal a bar (the layer, the time
/// left); in a log, once the pass has taken [`PassProgress::LOG_AFTER`], a
/// line at each further tenth of it and when the figures begin, so that a
/// short run writes nothing.
pub(crate) struct PassProgress {
    bar: Option<ProgressBar>,
    /// The tenths of the pass a log was told of, and whether of the figures.
    logged: Mutex<(usize, bool)>,
}

impl PassProgress {
    const LOG_AFTER: Duration = Duration::from_secs(10);

    pub(crate) fn on_stderr() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(1_000);
            bar.set_style(
                ProgressStyle::with_template("headscope: {percent:>3}% [{bar:20}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("## "),
            );
            bar
        });
        Self {
            bar,
            logged: Mutex::new((0, false)),
        }
    }

    /// Takes the bar away once the run is over.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// What a log is told of `progress`, if anything.
    fn log_line(&self, progress: &RunProgress) -> Option<String> {
        if progress.elapsed < Self::LOG_AFTER {
            return None;
        }
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        let tenths = (progress.fraction() * 10.0) as usize;
        let new = match progress.figures {
            false => tenths > logged.0,
            true => !logged.1,
        };
        new.then(|| {
            *logged = (tenths, progress.figures);
            progress.describe()
        })
    }
}

impl RunWatch for PassProgress {
    fn cancelled(&self) -> bool {
        false
    }

    fn progress(&self, progress: RunProgress) {
        if let Some(bar) = &self.bar {
            bar.set_position((progress.fraction() * 1_000.0).round() as u64);
            bar.set_message(progress.describe());
            return;
        }
        if let Some(line) = self.log_line(&progress) {
            eprintln!("headscope: {line}");
        }
    }
}

pub(crate) fn file_error(error: RunError, path: &Path) -> anyhow::Error {
    match error {
        RunError::Input(e) => anyhow!("{}: {e}", path.display()),
        other => anyhow!(other),
    }
}

/// Says on stderr what of the window `what` names (a file, and for
/// `compare` the model) was cut into pieces or left out, and when its P
/// and S are recomputed.
pub(crate) fn report_window(input: &BuiltInput, what: &str) {
    for note in input.split_notes() {
        eprintln!("headscope: note: {what}: {note}");
    }
    if let Some(warning) = input.left_out_warning() {
        eprintln!("headscope: warning: {what}: {warning}");
    }
    if input.captures == crate::captures::CaptureMode::Recomputed {
        eprintln!("headscope: note: {what}: {}", crate::input::RECOMPUTED_NOTE);
    }
    if let Some(note) = input.scratch_note() {
        eprintln!("headscope: note: {what}: {note}");
    }
}

/// A flag the first Ctrl+C sets (the command stops at its next step and
/// writes what it did); a second Ctrl+C quits at once.
pub(crate) fn stop_on_ctrl_c(what: &str) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    }) {
        eprintln!("headscope: warning: Ctrl+C will stop without {what}: {e}");
    }
    stop
}

/// Writes `value` as pretty JSON to `path`, or to stdout for `-`.
pub(crate) fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    if path.as_os_str() == "-" {
        println!("{json}");
        Ok(())
    } else {
        Ok(crate::export::save_text(&json, path)?)
    }
}

/// Fails early, naming the path, when a file cannot be created there.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.is_dir() {
        bail!("cannot write {}: it is a folder", path.display());
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!(
            "cannot write {}: folder {} does not exist",
            path.display(),
            folder.display()
        );
    }
    let metadata =
        std::fs::metadata(folder).with_context(|| format!("cannot write {}", path.display()))?;
    if metadata.permissions().readonly() {
        bail!(
            "cannot write {}: folder {} is read-only",
            path.display(),
            folder.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log hears of a long pass at each further tenth and when the
    /// figures begin, once each; of a pass younger than ten seconds, nothing.
    #[test]
    fn a_log_hears_of_each_tenth_of_a_long_pass_once() {
        let log = PassProgress {
            bar: None,
            logged: Mutex::new((0, false)),
        };
        let at = |layers_done, seconds, figures| RunProgress {
            layers_done,
            layers: 24,
            elapsed: Duration::from_secs(seconds),
            figures,
        };
        assert_eq!(log.log_line(&at(5, 9, false)), None);
        assert_eq!(
            log.log_line(&at(5, 20, false)).as_deref(),
            Some("layer 6 of 24 · ~1 min 16 s left")
        );
        assert_eq!(log.log_line(&at(6, 24, false)), None);
        assert!(log.log_line(&at(8, 32, false)).is_some());
        assert_eq!(
            log.log_line(&at(24, 96, true)).as_deref(),
            Some("computing the figures")
        );
        assert_eq!(log.log_line(&at(24, 97, true)), None);
    }
}
