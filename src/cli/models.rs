//! `headscope models`: the models on this computer (the Hugging Face
//! cache, Ollama's store, LM Studio's folders), each with its family,
//! size, precision and the path to pass to `--model`, or why headscope
//! cannot open it ([`crate::model::discovery`]).

use crate::app::widgets::format::human_bytes;
use crate::model::discovery::{self, places::Roots, FoundModel};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub(crate) struct ModelsArgs {
    /// Write the list as JSON to this file (- for standard output) instead of the table.
    #[arg(long, value_name = "OUT")]
    pub(crate) json: Option<PathBuf>,
}

pub(crate) fn models(args: ModelsArgs) -> anyhow::Result<()> {
    let roots = Roots::from_env();
    let found = discovery::scan(&roots, &[]);
    if let Some(out) = args.json {
        let list: Vec<serde_json::Value> = found.iter().map(as_json).collect();
        let text = serde_json::to_string_pretty(&list)? + "\n";
        if out.as_os_str() == "-" {
            print!("{text}");
        } else {
            crate::atomic_file::save_text(&text, &out)?;
        }
        return Ok(());
    }
    let searched = [&roots.hugging_face, &roots.ollama]
        .into_iter()
        .chain(&roots.lm_studio)
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if found.is_empty() {
        println!("No models found (searched {searched}).");
        return Ok(());
    }
    let unsupported = found.iter().filter(|m| m.unsupported.is_some()).count();
    println!(
        "{} models found, {} of them headscope cannot open (searched {searched}):",
        found.len(),
        unsupported
    );
    let rows: Vec<[String; 5]> = found
        .iter()
        .map(|m| {
            [
                m.name.clone(),
                m.place.label().to_string(),
                m.family.clone().unwrap_or_else(|| "?".into()),
                m.size_text(human_bytes),
                m.precision.clone().unwrap_or_else(|| "?".into()),
            ]
        })
        .collect();
    let header = ["NAME", "WHERE", "FAMILY", "SIZE", "PRECISION"].map(String::from);
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[String; 5]| {
        row.iter()
            .zip(&widths)
            .map(|(cell, &width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    println!("{}", line(&header));
    for (model, row) in found.iter().zip(&rows) {
        println!("{}", line(row));
        println!("    --model {}", model.source);
        if let Some(reason) = &model.unsupported {
            println!("    cannot open: {reason}");
        }
    }
    Ok(())
}

fn as_json(model: &FoundModel) -> serde_json::Value {
    serde_json::json!({
        "name": model.name,
        "where": model.place.label(),
        "model": model.source.to_string(),
        "family": model.family,
        "parameters": model.parameters,
        "bytes": model.bytes,
        "precision": model.precision,
        "supported": model.unsupported.is_none(),
        "unsupported_reason": model.unsupported,
    })
}
