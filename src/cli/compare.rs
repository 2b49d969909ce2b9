//! `headscope compare --model A --model B FILE`: two models on one text,
//! their heads matched by CKA (docs/COMPARE.md); with `--json`, both
//! analyses (as `analyze --json` writes them), the alignment, the
//! specialisation table and the head-matching matrix.

use super::args::{InputArgs, LimitArgs};
use super::running::{check_writable, file_error, load_model, read_text, report_window};
use crate::pipeline;
use anyhow::bail;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(super) struct CompareArgs {
    /// The two models, A then B: --model A --model B (folders, GGUF files or Hugging Face ids).
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
    /// Text file, or - for standard input.
    file: PathBuf,
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
    let text = read_text(&args.file)?;
    let a = load_model(model_a)?;
    let b = load_model(model_b)?;
    let a_output = pipeline::run(&a, &text, &input, &options, &|| false)
        .map_err(|e| file_error(e, &args.file))?;
    let output = pipeline::run_comparison(
        &b,
        std::sync::Arc::new(a_output),
        &text,
        &input,
        &options,
        &|| false,
    )
    .map_err(|e| file_error(e, &args.file))?;
    // Each model cuts its own window: say which one left text out.
    for (name, run) in [(&a.name, output.a.as_ref()), (&b.name, &output.b)] {
        report_window(&run.input, &format!("{}: {name}", args.file.display()));
    }
    match &args.json {
        Some(path) => {
            let json = serde_json::to_string_pretty(&output.report(&a.name))?;
            if path.as_os_str() == "-" {
                println!("{json}");
            } else {
                crate::export::save_text(&json, path)?;
            }
        }
        None => print_matches(&a.name, &output),
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
