//! The egui desktop app (in progress).

use std::path::PathBuf;

/// What the command line asked the app to open.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub model: Option<String>,
    pub file: Option<PathBuf>,
}

pub fn run(options: StartOptions) -> anyhow::Result<()> {
    let _ = options;
    anyhow::bail!("the app is not built yet")
}
