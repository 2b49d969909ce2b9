//! Running the model from the command line: loading it with download
//! progress on stderr, reading a text file, running the analysis with the
//! file named in every error, saying what was left out, and checking an
//! output path before the model runs.

use crate::analysis::AnalysisOptions;
use crate::input::BuiltInput;
use crate::model::{LoadProgress, Model, ModelSource};
use crate::pipeline::{self, InputOptions, RunError, RunOutput};
use crate::textfile::read_text_file;
use anyhow::{anyhow, bail, Context};
use std::path::Path;

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

/// Runs the model on the text of `path`: errors name the file, and what
/// did not fit is reported on stderr.
pub(crate) fn run_on_text(
    model: &Model,
    text: &str,
    path: &Path,
    input: &InputOptions,
    options: &AnalysisOptions,
) -> anyhow::Result<RunOutput> {
    let output =
        pipeline::run(model, text, input, options, &|| false).map_err(|e| file_error(e, path))?;
    report_window(&output.input, &path.display().to_string());
    Ok(output)
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
