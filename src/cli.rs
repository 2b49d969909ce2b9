//! The command line: `headscope [--model M] [FILE]` opens the app;
//! `analyze`, `export`, `compare`, `bench` and `make-random-model` serve
//! scripts.
//!
//! Errors travel up as values and are reported once, here, as one line on
//! stderr with a non-zero exit code.

use crate::analysis::{AnalysisOptions, Selection, SimilarityVariant};
use crate::input::{BuiltInput, InputMode};
use crate::model::{LoadProgress, Model, ModelSource};
use crate::pipeline::{self, InputOptions, RunError, RunOutput};
use crate::textfile::read_text_file;
use anyhow::{anyhow, bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};

mod compare;
mod corpus;

#[derive(Parser, Debug)]
#[command(
    name = "headscope",
    version,
    about = "See what a transformer's attention heads output",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Model folder or Hugging Face id for the app (default: the first model found).
    #[arg(long)]
    model: Option<String>,
    /// Text file to open in the app.
    file: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Analyse a text and print the figures of every layer and head.
    Analyze(AnalyzeArgs),
    /// Write a head's heatmap (or every head's) as PNG, or its matrix as CSV.
    Export(ExportArgs),
    /// Time the whole analysis of an N-token input.
    Bench(BenchArgs),
    /// Write a model folder with random weights of a known model's shape, any family.
    MakeRandomModel(RandomModelArgs),
    /// Average every figure over a corpus (text files, JSON Lines, Parquet), with spread and 95% intervals.
    Corpus(corpus::CorpusArgs),
    /// Merge the parts of a sharded corpus run (corpus --shard K/N --part FILE) into its report.
    Merge(corpus::MergeArgs),
    /// Run two models on one text and match their heads (--model A --model B).
    Compare(compare::CompareArgs),
}

/// The model and how a text becomes its input: shared by every command
/// that runs the model on texts (`analyze`, `export`, `corpus`).
#[derive(Args, Debug, Clone)]
pub(crate) struct ModelInputArgs {
    /// Model folder (config.json, model.safetensors, tokenizer.json) or Hugging Face id.
    #[arg(long)]
    model: String,
    #[command(flatten)]
    input: InputArgs,
}

/// The input options read through a [`ModelInputArgs`] as its own.
impl std::ops::Deref for ModelInputArgs {
    type Target = InputArgs;
    fn deref(&self) -> &InputArgs {
        &self.input
    }
}

/// How a text becomes a model's input, and the analysis options: the part
/// of [`ModelInputArgs`] that `compare` shares for its two models.
#[derive(Args, Debug, Clone)]
pub(crate) struct InputArgs {
    /// Each non-empty line is one sentence.
    #[arg(long, conflicts_with = "plain")]
    one_sentence_per_line: bool,
    /// The tokenizer's own encoding of the text: one [CLS] ... [SEP] per window.
    #[arg(long)]
    plain: bool,
    #[command(flatten)]
    analysis: AnalysisArgs,
}

impl InputArgs {
    fn mode(&self) -> InputMode {
        if self.plain {
            InputMode::Plain
        } else if self.one_sentence_per_line {
            InputMode::OneSentencePerLine
        } else {
            InputMode::Document
        }
    }
}

/// The window limits of the commands that analyse texts (`analyze`,
/// `export`, `compare`, `corpus`), below the model's own limit.
#[derive(Args, Debug, Clone)]
pub(crate) struct LimitArgs {
    /// At most this many tokens (below the model's own limit); the text is
    /// cut at the last whole sentence that fits.
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,
    /// At most this much memory, in MB, for the attentions and similarities
    /// of every head. A decoder whose P and S need more keeps only what
    /// recomputes them (queries, keys, head outputs); a text that does not
    /// fit even so is cut.
    #[arg(long, value_name = "MB", default_value_t = pipeline::DEFAULT_CAPTURE_MEMORY_MB)]
    capture_memory_mb: u64,
}

impl LimitArgs {
    /// The input options of `input` within these limits.
    pub(crate) fn input_options(&self, input: &InputArgs) -> anyhow::Result<InputOptions> {
        if self.max_tokens.is_some_and(|n| n < 3) || self.capture_memory_mb == 0 {
            bail!("--max-tokens must be at least 3 and --capture-memory-mb at least 1");
        }
        Ok(InputOptions {
            mode: input.mode(),
            first_sentence: 0,
            max_tokens: self.max_tokens,
            capture_memory_mb: Some(self.capture_memory_mb),
        })
    }
}

/// Options of the commands that analyse one text.
#[derive(Args, Debug, Clone)]
struct TextArgs {
    #[command(flatten)]
    input: ModelInputArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// Text file, or - for standard input.
    file: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct AnalysisArgs {
    /// Share of candidate pairs selected per head (top-fraction rule).
    #[arg(long, default_value_t = 0.01)]
    q: f64,
    /// How the strongest pairs are selected.
    #[arg(long, value_enum, default_value_t = SelectionArg::TopFraction)]
    selection: SelectionArg,
    /// z for --selection above-mean: S > mean + z·std.
    #[arg(long, default_value_t = 3.0)]
    z: f64,
    /// k for --selection top-k-per-row.
    #[arg(long, default_value_t = 1)]
    k: usize,
    /// Which similarity the pairs are ranked by.
    #[arg(long, value_enum, default_value_t = SimilarityArg::Raw)]
    similarity: SimilarityArg,
    /// Largest j − i that counts as local.
    #[arg(long, default_value_t = 4)]
    window: usize,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum SelectionArg {
    TopFraction,
    AboveMean,
    TopKPerRow,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum SimilarityArg {
    Raw,
    Cosine,
    RowOverDiagonal,
    ZScore,
}

impl AnalysisArgs {
    pub(crate) fn options(&self) -> anyhow::Result<AnalysisOptions> {
        if !(self.q > 0.0 && self.q <= 1.0) {
            bail!("--q {} is outside (0, 1]", self.q);
        }
        if !self.z.is_finite() {
            bail!("--z {} is not a number", self.z);
        }
        if self.k == 0 {
            bail!("--k must be at least 1");
        }
        Ok(AnalysisOptions {
            selection: match self.selection {
                SelectionArg::TopFraction => Selection::TopFraction { q: self.q },
                SelectionArg::AboveMean => Selection::AboveMean { z: self.z },
                SelectionArg::TopKPerRow => Selection::TopKPerRow { k: self.k },
            },
            similarity: match self.similarity {
                SimilarityArg::Raw => SimilarityVariant::Raw,
                SimilarityArg::Cosine => SimilarityVariant::Cosine,
                SimilarityArg::RowOverDiagonal => SimilarityVariant::RowOverDiagonal,
                SimilarityArg::ZScore => SimilarityVariant::ZScore,
            },
            local_window: self.window,
        })
    }
}

impl TextArgs {
    /// Reads the text, loads the model and runs the whole analysis,
    /// warning on stderr about Latin-1 input and anything left out.
    fn run(&self) -> anyhow::Result<(Model, RunOutput)> {
        let options = self.input.analysis.options()?;
        let input = self.limits.input_options(&self.input)?;
        let text = read_text(&self.file)?;
        let model = load_model(&self.input.model)?;
        let output = run_on_text(&model, &text, &self.file, &input, &options)?;
        Ok((model, output))
    }
}

/// Reads a text file, warning on stderr when it was read as Latin-1.
fn read_text(path: &Path) -> anyhow::Result<String> {
    let file = read_text_file(path)?;
    if let Some(warning) = &file.warning {
        eprintln!("headscope: warning: {warning}");
    }
    Ok(file.text)
}

/// Runs the model on the text of `path`: errors name the file, and what
/// did not fit is reported on stderr.
fn run_on_text(
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

fn file_error(error: RunError, path: &Path) -> anyhow::Error {
    match error {
        RunError::Input(e) => anyhow!("{}: {e}", path.display()),
        other => anyhow!(other),
    }
}

/// Says on stderr what of the window `what` names (a file, and for
/// `compare` the model) was left out, and when its P and S are recomputed.
fn report_window(input: &BuiltInput, what: &str) {
    if let Some(warning) = input.left_out_warning() {
        eprintln!("headscope: warning: {what}: {warning}");
    }
    if input.captures == crate::captures::CaptureMode::Recomputed {
        eprintln!("headscope: note: {what}: {}", crate::input::RECOMPUTED_NOTE);
    }
}

#[derive(Args, Debug)]
struct AnalyzeArgs {
    #[command(flatten)]
    text: TextArgs,
    /// Write the figures as JSON (ANALYSIS.md §6) to this file, - for stdout.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write input ids, attentions, head outputs and similarity as NPZ.
    #[arg(long)]
    npz: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ExportArgs {
    #[command(flatten)]
    text: TextArgs,
    /// Layer, 0-based.
    #[arg(long, required_unless_present = "grid")]
    layer: Option<usize>,
    /// Head, 0-based.
    #[arg(long, required_unless_present = "grid")]
    head: Option<usize>,
    /// Export attention probabilities instead of the similarity.
    #[arg(long)]
    attention: bool,
    /// A figure with token labels, title and colour bar instead of the bare matrix.
    #[arg(long)]
    labels: bool,
    /// Every head of every layer in one labelled image.
    #[arg(long)]
    grid: bool,
    /// Pixels per cell of the bare matrix (default: enough for 512 pixels).
    #[arg(long)]
    scale: Option<u32>,
    /// Colour map.
    #[arg(long, default_value = "viridis")]
    colormap: String,
    /// Write the image here.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Write the matrix with token headers here.
    #[arg(long)]
    csv: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Model folder or Hugging Face id.
    #[arg(long)]
    model: String,
    /// Input length in tokens, [CLS] and [SEP] included.
    #[arg(long, default_value_t = 128)]
    tokens: usize,
    /// Timed runs after one warm-up run.
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Also run the corpus runner over these files and folders and compare
    /// its windows per second with the encoder's at the corpus's mean
    /// window length (which then replaces --tokens).
    #[arg(long, num_args = 1..)]
    corpus: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct RandomModelArgs {
    /// Shape to copy: bert-base-uncased, all-minilm-l6-v2, roberta-base,
    /// xlm-roberta-base, camembert-base, distilbert-base-uncased,
    /// electra-base-discriminator, electra-small-discriminator, albert-base-v2,
    /// gpt2, smollm2-135m (a Llama), qwen2-0.5b, llama-3-8b, or a
    /// config.json / model folder.
    #[arg(long)]
    like: String,
    /// tokenizer.json to put in the folder.
    #[arg(long)]
    tokenizer: PathBuf,
    /// Output folder.
    #[arg(long)]
    out: PathBuf,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Precision of the weights written: f32, bf16 or f16.
    #[arg(long, default_value = "f32")]
    dtype: crate::model::random::WeightDtype,
}

/// Entry point of the binary: runs the command and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("headscope: error: {e:#}");
            1
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => crate::app::run(crate::app::StartOptions {
            model: cli.model,
            file: cli.file,
        }),
        Some(Command::Analyze(args)) => analyze(args),
        Some(Command::Export(args)) => export(args),
        Some(Command::Bench(args)) => bench(args),
        Some(Command::MakeRandomModel(args)) => make_random_model(args),
        Some(Command::Corpus(args)) => corpus::corpus(args),
        Some(Command::Merge(args)) => corpus::merge(args),
        Some(Command::Compare(args)) => compare::compare(args),
    }
}

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

fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    // Check output paths before the model runs, so a typo costs nothing.
    for path in [&args.json, &args.npz].into_iter().flatten() {
        check_writable(path)?;
    }
    let (model, output) = args.text.run()?;
    if let Some(path) = &args.npz {
        crate::npz::write_captures_npz(path, &output.input.tokens.input_ids, &output.captures)?;
    }
    match &args.json {
        Some(path) => {
            let json = serde_json::to_string_pretty(&output.analysis)?;
            if path.as_os_str() == "-" {
                println!("{json}");
            } else {
                crate::export::save_text(&json, path)?;
            }
        }
        None => print_table(&model, &output),
    }
    Ok(())
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

fn fmt(value: Option<f64>, digits: usize) -> String {
    value.map_or("—".into(), |v| format!("{v:.digits$}"))
}

/// The readable per-layer table printed when no --json is given.
fn print_table(model: &Model, output: &RunOutput) {
    let a = &output.analysis;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} · {} tokens ({} content, {} sentences) · {} pairs, {} selected per head · {:.0} ms",
        model.name,
        a.tokens,
        a.content_tokens,
        a.sentences_analysed,
        a.pairs,
        a.selected_per_head.map_or("—".into(), |k| k.to_string()),
        output.timings.total_ms
    );
    let _ = writeln!(
        out,
        "chance same-sentence fraction: {}",
        fmt(a.baseline_same_sentence_fraction, 3)
    );
    let _ = writeln!(
        out,
        "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>9}  categories (repetition/focus/local/mixed)",
        "layer", "distance", "same-sentence", "sep-attn", "focus-uniq", "segmentation", "undecided", "sink-attn"
    );
    for (index, layer) in a.layers.iter().enumerate() {
        let mut counts = [0usize; 4];
        for head in &layer.heads {
            if let Some(category) = head.category {
                counts[category as usize] += 1;
            }
        }
        let _ = writeln!(
            out,
            "{:>5} {:>9} {:>13} {:>9} {:>11} {:>12} {:>9} {:>9}  {}/{}/{}/{}",
            index,
            fmt(layer.mean_distance, 2),
            fmt(layer.same_sentence_fraction, 3),
            fmt(layer.separator_attention, 3),
            fmt(layer.focus_uniqueness, 3),
            fmt(layer.segmentation_accuracy, 3),
            fmt(layer.segmentation_undecided, 3),
            fmt(layer.sink_attention, 3),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
    }
}

fn bench(args: BenchArgs) -> anyhow::Result<()> {
    use crate::bench::{run_bench, run_corpus_bench};
    let plan = if args.corpus.is_empty() {
        None
    } else {
        Some(crate::corpus::find_text_files(&args.corpus)?)
    };
    let model = load_model(&args.model)?;
    let Some(plan) = plan else {
        let report = run_bench(&model, args.tokens, args.runs)?;
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    };
    let corpus = run_corpus_bench(&model, plan)?;
    let tokens = (corpus.tokens_per_window.round() as usize).clamp(2, model.max_tokens());
    let encoder = run_bench(&model, tokens, args.runs)?;
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

fn make_random_model(args: RandomModelArgs) -> anyhow::Result<()> {
    use crate::model::{random, EncoderConfig};
    let config = match EncoderConfig::like(&args.like) {
        Some(config) => config,
        None => {
            let path = Path::new(&args.like);
            let config_path = if path.is_dir() {
                path.join("config.json")
            } else {
                path.to_path_buf()
            };
            if !config_path.is_file() {
                bail!(
                    "--like {}: not a known shape ({}) nor a config.json",
                    args.like,
                    EncoderConfig::KNOWN_SHAPES.join(", ")
                );
            }
            EncoderConfig::from_file(&config_path)?
        }
    };
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} {eta}")
            .expect("a valid template"),
    );
    bar.set_message("writing weights");
    random::write_random_model_with(
        &config,
        &args.tokenizer,
        &args.out,
        args.seed,
        Default::default(),
        args.dtype,
        &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    )?;
    bar.finish_and_clear();
    eprintln!(
        "headscope: wrote a random {} {}-layer, {}-head, hidden {} model to {}",
        config.family,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.hidden_size,
        args.out.display()
    );
    Ok(())
}

fn export(args: ExportArgs) -> anyhow::Result<()> {
    use crate::analysis::transformed_similarity;
    use crate::captures::HeadId;
    use crate::colormap::{ColorMap, ValueRange};
    use crate::export::{self as exp, GridRange};
    if args.png.is_none() && args.csv.is_none() {
        bail!("nothing to write: give --png OUT and/or --csv OUT");
    }
    if args.grid && args.csv.is_some() {
        bail!("--csv writes one head's matrix: give --layer and --head instead of --grid");
    }
    let map = ColorMap::all()
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(&args.colormap))
        .ok_or_else(|| {
            let names: Vec<&str> = ColorMap::all().iter().map(|m| m.name()).collect();
            anyhow!(
                "--colormap {}: not one of {}",
                args.colormap,
                names.join(", ")
            )
        })?;
    if args.scale == Some(0) {
        bail!("--scale must be at least 1");
    }
    for path in [&args.png, &args.csv].into_iter().flatten() {
        check_writable(path)?;
    }
    let (model, output) = args.text.run()?;
    let options = args.text.input.analysis.options()?;
    let captures = &output.captures;
    let tokens = captures.tokens;
    let labels = &output.input.tokens.token_texts;
    let what = if args.attention {
        "attention"
    } else {
        "similarity"
    };
    // The matrix shown is the one the analysis ranks pairs by.
    let matrix = |id: HeadId| -> Vec<f32> {
        if args.attention {
            captures.attention(id).into_owned()
        } else {
            transformed_similarity(&captures.similarity(id), tokens, options.similarity)
        }
    };
    if args.grid {
        let panels: Vec<(String, Vec<f32>)> = captures
            .head_ids()
            .map(|id| {
                let category = output.analysis.layers[id.layer].heads[id.head]
                    .category
                    .map_or("—".to_string(), |c| c.to_string());
                (format!("L{} H{} {category}", id.layer, id.head), matrix(id))
            })
            .collect();
        let image = exp::grid_image(&panels, tokens, captures.heads, map, GridRange::PerPanel);
        if let Some(path) = &args.png {
            exp::save_png(&image, path)?;
        }
        return Ok(());
    }
    let (layer, head) = (args.layer.unwrap_or(0), args.head.unwrap_or(0));
    if layer >= captures.layers {
        bail!(
            "--layer {layer} is out of range: {} has layers 0 to {}",
            model.name,
            captures.layers - 1
        );
    }
    if head >= captures.heads {
        bail!(
            "--head {head} is out of range: {} has heads 0 to {}",
            model.name,
            captures.heads - 1
        );
    }
    let values = matrix(HeadId::new(layer, head));
    let range = ValueRange::auto(map, &values);
    if let Some(path) = &args.png {
        let image = if args.labels {
            let title = format!("{} · layer {layer} head {head} · {what}", model.name);
            exp::labelled_heatmap(&values, tokens, labels, &title, map, range)
        } else {
            let scale = args.scale.unwrap_or_else(|| exp::default_scale(tokens));
            exp::heatmap_image(&values, tokens, map, range, scale)
        };
        exp::save_png(&image, path)?;
    }
    if let Some(path) = &args.csv {
        exp::save_text(&exp::matrix_csv(&values, tokens, labels), path)?;
    }
    Ok(())
}
