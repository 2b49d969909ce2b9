//! `headscope compare --model A --model B FILE`: two models on one text,
//! their heads matched by CKA (docs/COMPARE.md); with `--json`, both
//! analyses (as `analyze --json` writes them), the alignment, the
//! specialisation table and the head-matching matrix. Either model, or
//! both, may be a capture file (docs/CAPTURE.md): it brings its run on its
//! own text, which FILE may then leave out (and must equal when given).

use super::args::{InputArgs, LimitArgs};
use super::running::{check_writable, file_error, load_model, read_text, report_window};
use crate::analysis::AnalysisOptions;
use crate::capture_file::{is_capture_path, CaptureFile};
use crate::model::Model;
use crate::pipeline::{self, InputOptions, RunOutput};
use anyhow::bail;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args, Debug)]
pub(super) struct CompareArgs {
    /// The two models, A then B: --model A --model B (folders, GGUF files,
    /// Hugging Face ids, or capture files: .safetensors).
    #[arg(long = "model", required = true)]
    models: Vec<String>,
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// Write both analyses, the alignment and the head matching as JSON to
    /// this file, - for stdout.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Text file, or - for standard input; left out when a model is a
    /// capture file, whose own text is compared.
    file: Option<PathBuf>,
}

/// One side of a comparison: a model to run, or a capture file's run.
enum Side {
    Model(Box<Model>),
    Capture(Box<CaptureFile>),
}

impl Side {
    fn open(name: &str) -> anyhow::Result<Self> {
        Ok(if is_capture_path(Path::new(name)) {
            Self::Capture(Box::new(CaptureFile::read(Path::new(name))?))
        } else {
            Self::Model(Box::new(load_model(name)?))
        })
    }

    fn name(&self) -> String {
        match self {
            Self::Model(model) => model.name.clone(),
            Self::Capture(capture) => capture.name(),
        }
    }

    fn capture(&self) -> Option<&CaptureFile> {
        match self {
            Self::Capture(capture) => Some(capture),
            Self::Model(_) => None,
        }
    }

    /// The run on `text` (for a capture, its own run).
    fn run(
        &self,
        text: &str,
        file: &Path,
        input: &InputOptions,
        options: &AnalysisOptions,
    ) -> anyhow::Result<RunOutput> {
        match self {
            Self::Model(model) => pipeline::run(model, text, input, options, &|| false)
                .map_err(|e| file_error(e, file)),
            Self::Capture(capture) => Ok(capture.run_output(options)),
        }
    }
}

/// The text both sides are compared on: FILE's, or the captures' own,
/// which must agree with FILE and with each other.
fn common_text(file: Option<&Path>, sides: [&Side; 2]) -> anyhow::Result<(String, PathBuf)> {
    let captures: Vec<&CaptureFile> = sides.iter().filter_map(|side| side.capture()).collect();
    let (text, source) = match (file, captures.first()) {
        (Some(file), _) => (read_text(file)?, file.to_path_buf()),
        (None, Some(capture)) => (capture.header.text.clone(), capture.path.clone()),
        (None, None) => bail!("compare needs a text FILE (or a capture file as a model)"),
    };
    for capture in captures {
        if capture.header.text != text {
            bail!(
                "{} holds a run on another text than {}: compare runs on one text",
                capture.path.display(),
                source.display()
            );
        }
    }
    Ok((text, source))
}

pub(super) fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let [model_a, model_b] = args.models.as_slice() else {
        bail!(
            "compare takes two models, --model A --model B; {} given",
            args.models.len()
        );
    };
    if let Some(path) = &args.json {
        check_writable(path)?;
    }
    let options = args.input.analysis.options()?;
    let input = args.limits.input_options(&args.input)?;
    let a = Side::open(model_a)?;
    let b = Side::open(model_b)?;
    let (text, source) = common_text(args.file.as_deref(), [&a, &b])?;
    let a_output = a.run(&text, &source, &input, &options)?;
    let b_output = b.run(&text, &source, &input, &options)?;
    let (a_name, b_name) = (a.name(), b.name());
    let output = pipeline::compare_runs(Arc::new(a_output), b_output, b_name.clone());
    // Each model cuts its own window: say which one left text out.
    for (name, run) in [(&a_name, output.a.as_ref()), (&b_name, &output.b)] {
        report_window(&run.input, &format!("{}: {name}", source.display()));
    }
    match &args.json {
        Some(path) => {
            let json = serde_json::to_string_pretty(&output.report(&a_name))?;
            if path.as_os_str() == "-" {
                println!("{json}");
            } else {
                crate::export::save_text(&json, path)?;
            }
        }
        None => print_matches(&a_name, &output),
    }
    Ok(())
}

/// The readable summary printed when no --json is given: each head of A
/// and its best match in B.
fn print_matches(a_name: &str, output: &pipeline::ComparisonOutput) {
    let comparison = &output.comparison;
    let matching = &comparison.head_matching;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "A {a_name} ({}×{}) · B {} ({}×{}) · {} aligned units ({} + {} tokens unaligned)",
        matching.a_layers,
        matching.a_heads,
        output.b_name,
        matching.b_layers,
        matching.b_heads,
        comparison.alignment.len(),
        comparison.alignment.a_unaligned.len(),
        comparison.alignment.b_unaligned.len()
    );
    let _ = writeln!(out, "{:>8}  {:>8}  {:>6}", "head A", "best B", "CKA");
    for (index, best) in matching.best_for_a.iter().enumerate() {
        let head = crate::captures::HeadId::new(index / matching.a_heads, index % matching.a_heads);
        let (name, cka) = match best {
            Some(m) => (m.head_id().to_string(), format!("{:.3}", m.cka)),
            None => ("—".into(), "—".into()),
        };
        let _ = writeln!(out, "{:>8}  {name:>8}  {cka:>6}", head.to_string());
    }
}
