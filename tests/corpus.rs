//! Corpus statistics (`headscope corpus`, `headscope::corpus`): the maths of
//! the aggregate on hand-made numbers, the runner against per-window runs of
//! the real model computed independently here, skipped and Latin-1 files,
//! the binary on a folder of 50 texts, and cancelling (library flag and
//! SIGINT to the binary) leaving a valid report marked partial.

mod common;

use common::*;
use headscope::analysis::{Analysis, AnalysisOptions, Category, HeadFigures, LayerFigures, Role};
use headscope::corpus::{self, CorpusEvent, CorpusOptions, CorpusReport};
use headscope::corpus_stats::{
    t_quantile_975, Aggregate, Bounds, CategoryCounts, CorpusStats, Summary,
};
use headscope::input::{split_sentences, InputMode};
use headscope::pipeline::{self, InputOptions};
use headscope::textfile::read_text_file;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * (1.0 + b.abs())
}

fn assert_close(a: f64, b: f64, what: &str) {
    assert!(close(a, b, 1e-9), "{what}: {a} vs {b}");
}

// ---------------------------------------------------------------------------
// The maths

#[test]
fn t_quantiles_match_published_values() {
    assert_eq!(t_quantile_975(0), None);
    // Against R's qt(0.975, df).
    for (df, t) in [
        (1, 12.706_204_736),
        (2, 4.302_652_730),
        (3, 3.182_446_305),
        (9, 2.262_157_163),
        (30, 2.042_272_456),
        (31, 2.039_513_446),
        (40, 2.021_075_390),
        (60, 2.000_297_822),
        (120, 1.979_930_405),
        (1000, 1.962_339_081),
    ] {
        let ours = t_quantile_975(df).unwrap();
        assert!((ours - t).abs() < 1e-8, "df {df}: {ours} vs {t}");
    }
    // Decreasing towards the normal quantile.
    let mut previous = f64::INFINITY;
    for df in 1..500 {
        let t = t_quantile_975(df).unwrap();
        assert!(t < previous && t > 1.959_96, "df {df}: {t}");
        previous = t;
    }
}

#[test]
fn aggregate_mean_sample_std_and_interval_on_known_numbers() {
    // None and NaN are missing, not zeros.
    let a = Aggregate::from_values([
        Some(1.0),
        None,
        Some(2.0),
        Some(f64::NAN),
        Some(3.0),
        Some(4.0),
    ]);
    let s = a.summary();
    assert_eq!(s.n, 4);
    assert_close(s.mean.unwrap(), 2.5, "mean");
    // Σ(x − 2.5)² = 5, sample variance 5/3.
    let std = (5.0f64 / 3.0).sqrt();
    assert_close(s.std.unwrap(), std, "std");
    let half = 3.182_446_305 * std / 2.0;
    let [lo, hi] = s.ci95.unwrap();
    assert_close(lo, 2.5 - half, "ci lo");
    assert_close(hi, 2.5 + half, "ci hi");
    assert!((lo - 0.445_739_74).abs() < 1e-8, "ci lo by hand: {lo}");

    // Two values: t(0.975, 1) = 12.706.
    let s = Aggregate::from_values([Some(10.0), Some(12.0)]).summary();
    assert_close(s.std.unwrap(), 2f64.sqrt(), "std of two");
    assert_close(s.ci95.unwrap()[1], 11.0 + 12.706_204_736, "ci of two");

    // One value: std 0, no interval.
    let s = Aggregate::from_values([None, Some(0.75)]).summary();
    assert_eq!(
        s,
        Summary {
            mean: Some(0.75),
            std: Some(0.0),
            ci95: None,
            n: 1
        }
    );

    // Nothing defined: everything null.
    let s = Aggregate::from_values([None, None]).summary();
    assert_eq!(s, Summary::default());
    let json = serde_json::to_value(s).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"mean": null, "std": null, "ci95": null, "n": 0})
    );
}

#[test]
fn intervals_of_bounded_figures_stay_in_their_range() {
    // A rare share over four windows: the t-interval crosses 0.
    let rare = Aggregate::from_values([Some(0.0), Some(0.0), Some(0.0), Some(0.2)]);
    assert!(rare.summary().ci95.unwrap()[0] < 0.0);
    let s = rare.summary_within(Bounds::Fraction);
    let [lo, hi] = s.ci95.unwrap();
    assert!(
        (0.0..=0.05).contains(&lo) && (0.05..=1.0).contains(&hi),
        "{lo} {hi}"
    );
    // Wilson's interval bends away from the bound it nears: more room above.
    assert!(hi - 0.05 > 0.05 - lo);
    // 0/1 values: Wilson's score interval for k of n with n − 1 windows'
    // worth of information, by hand for 1 of 5 at t(0.975, 4) = 2.776.
    let ones = Aggregate::from_values([1.0, 0.0, 0.0, 0.0, 0.0].map(Some));
    let [lo, hi] = ones.summary_within(Bounds::Fraction).ci95.unwrap();
    let (p, n, z) = (0.2f64, 4.0f64, 2.776_445_105);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    assert_close(lo, (centre - half).max(0.0), "wilson lo");
    assert_close(hi, centre + half, "wilson hi");
    // Mid-range shares over many windows: the t-interval, within 1%.
    let values: Vec<Option<f64>> = (0..400)
        .map(|i| Some(0.4 + 0.2 * ((i % 5) as f64 / 4.0)))
        .collect();
    let plain = Aggregate::from_values(values.clone())
        .summary()
        .ci95
        .unwrap();
    let bounded = Aggregate::from_values(values)
        .summary_within(Bounds::Fraction)
        .ci95
        .unwrap();
    let width = plain[1] - plain[0];
    assert!((plain[0] - bounded[0]).abs() < 0.01 * width);
    assert!((plain[1] - bounded[1]).abs() < 0.01 * width);
    // A distance is cut at 0, its upper end unchanged.
    let distances = Aggregate::from_values([Some(0.0), Some(1.0), Some(260.0)]);
    let plain = distances.summary().ci95.unwrap();
    let cut = distances.summary_within(Bounds::NonNegative).ci95.unwrap();
    assert!(plain[0] < 0.0);
    assert_eq!(cut, [0.0, plain[1]]);
    // No spread, no width.
    let same = Aggregate::from_values([Some(0.5), Some(0.5)]);
    assert_eq!(same.summary_within(Bounds::Fraction).ci95, Some([0.5, 0.5]));
}

#[test]
fn aggregate_is_stable_for_large_offsets() {
    // A naive Σx² − n·mean² loses every digit here (Σx² ≈ 1e21, whose
    // rounding step is about 1e5); the running update must not. The exact
    // figures come from the small offsets, where f64 is exact enough.
    let offsets: Vec<f64> = (0..1000).map(|i| (i % 7) as f64 * 0.1).collect();
    let mean = offsets.iter().sum::<f64>() / 1000.0;
    let var = offsets.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 999.0;
    let s = Aggregate::from_values(offsets.iter().map(|&x| Some(1e9 + x))).summary();
    assert_eq!(s.n, 1000);
    assert!(
        (s.mean.unwrap() - (1e9 + mean)).abs() < 1e-5,
        "{} vs {}",
        s.mean.unwrap(),
        1e9 + mean
    );
    assert!(
        (s.std.unwrap() - var.sqrt()).abs() < 1e-5,
        "{} vs {}",
        s.std.unwrap(),
        var.sqrt()
    );
    let half = t_quantile_975(999).unwrap() * var.sqrt() / 1000f64.sqrt();
    assert!((s.ci95.unwrap()[1] - s.mean.unwrap() - half).abs() < 1e-5);
}

#[test]
fn category_counts_fractions_and_most_common() {
    let mut c = CategoryCounts::default();
    assert_eq!(c.most_common(), None);
    assert_eq!(c.fractions(), None);
    for category in [
        Some(Category::Local),
        Some(Category::Focus),
        None,
        Some(Category::Local),
        Some(Category::Focus),
    ] {
        c.push(category);
    }
    assert_eq!((c.local, c.focus, c.none, c.total()), (2, 2, 1, 5));
    // Ties go to the earlier category of Category::ALL: focus before local.
    assert_eq!(c.most_common(), Some(Category::Focus));
    let f = c.fractions().unwrap();
    assert_close(f.local, 0.4, "local");
    assert_close(f.none, 0.2, "none");
    assert_close(
        f.repetition + f.focus + f.local + f.mixed + f.none,
        1.0,
        "sum",
    );
}

fn hand_made(distance: Option<f64>, category: Option<Category>, focus: Option<u32>) -> Analysis {
    let head = HeadFigures {
        mean_distance: distance,
        separator_attention: Some(0.5),
        category,
        focus_token_id: focus,
        focus_token: focus.map(|id| format!("tok{id}")),
        ..Default::default()
    };
    Analysis {
        tokens: 10,
        layers: vec![LayerFigures {
            mean_distance: distance,
            segmentation_accuracy: Some(1.0),
            heads: vec![head.clone(), head],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn corpus_stats_count_undefined_figures_as_missing() {
    let mut stats = CorpusStats::default();
    stats.add(&hand_made(Some(2.0), Some(Category::Local), Some(7)));
    stats.add(&hand_made(None, None, None));
    stats.add(&hand_made(Some(4.0), Some(Category::Focus), Some(5)));
    stats.add(&hand_made(Some(6.0), Some(Category::Focus), Some(7)));
    assert_eq!(stats.windows(), 4);
    let layers = stats.layers();
    assert_eq!(layers.len(), 1);
    let layer = &layers[0];
    assert_eq!(layer.mean_distance.n, 3);
    assert_close(layer.mean_distance.mean.unwrap(), 4.0, "layer distance");
    assert_close(layer.mean_distance.std.unwrap(), 2.0, "layer std");
    assert_eq!(layer.segmentation_accuracy.n, 4);
    assert_eq!(layer.segmentation_accuracy.std, Some(0.0));
    // Never defined: n 0, null mean.
    assert_eq!(layer.focus_uniqueness, Summary::default());
    assert_eq!(layer.heads.len(), 2);
    let head = &layer.heads[1];
    assert_eq!(head.head, 1);
    assert_eq!(head.mean_distance.n, 3);
    assert_eq!(head.separator_attention.n, 4);
    assert_eq!(head.categories.counts.focus, 2);
    assert_eq!(head.categories.counts.local, 1);
    assert_eq!(head.categories.counts.none, 1);
    assert_eq!(head.categories.most_common, Some(Category::Focus));
    let focus = head.focus_token.as_ref().unwrap();
    assert_eq!((focus.id, focus.windows), (7, 2));
    assert_eq!(focus.token.as_deref(), Some("tok7"));
    assert_close(focus.fraction, 0.5, "focus fraction");
    assert_eq!(stats.tokens_per_window().n, 4);
}

#[test]
fn corpus_stats_count_each_heads_roles_and_bound_their_shares() {
    let with_role = |role: Option<Role>, score: f64| {
        let mut analysis = hand_made(Some(1.0), Some(Category::Local), None);
        for head in &mut analysis.layers[0].heads {
            head.role = role;
            head.previous_token_score = Some(score);
        }
        analysis
    };
    let windows = [
        with_role(Some(Role::PreviousToken), 0.9),
        with_role(Some(Role::PreviousToken), 0.8),
        with_role(Some(Role::Sink), 0.1),
        with_role(None, 0.0),
    ];
    let mut stats = CorpusStats::default();
    for window in &windows {
        stats.add(window);
    }
    let head = &stats.layers()[0].heads[0];
    assert_eq!(
        head.roles.counts.windows.get(&Role::PreviousToken),
        Some(&2)
    );
    assert_eq!(head.roles.counts.windows.get(&Role::Sink), Some(&1));
    assert_eq!(head.roles.counts.none, 1);
    assert_eq!(head.roles.most_common, Some(Role::PreviousToken));
    assert_close(head.previous_token_score.mean.unwrap(), 0.45, "score");
    for role in Role::ALL {
        let share = head.roles.fractions[&role];
        let [lo, hi] = share.ci95.unwrap();
        assert!(0.0 <= lo && lo <= share.mean.unwrap() && share.mean.unwrap() <= hi && hi <= 1.0);
    }
    assert_close(
        head.roles.fractions[&Role::PreviousToken].mean.unwrap(),
        0.5,
        "share",
    );
    assert_eq!(head.roles.fractions[&Role::Induction].mean, Some(0.0));
    // Two halves merged count what the whole counts.
    let (mut first, mut second) = (CorpusStats::default(), CorpusStats::default());
    first.add(&windows[0]);
    first.add(&windows[1]);
    second.add(&windows[2]);
    second.add(&windows[3]);
    first.merge(&second);
    assert_eq!(first.layers()[0].heads[0].roles, head.roles);
}

#[test]
fn corpus_stats_tie_on_focus_token_goes_to_the_smallest_id() {
    let mut stats = CorpusStats::default();
    stats.add(&hand_made(Some(1.0), Some(Category::Focus), Some(9)));
    stats.add(&hand_made(Some(1.0), Some(Category::Focus), Some(3)));
    let layers = stats.layers();
    assert_eq!(layers[0].heads[0].focus_token.as_ref().unwrap().id, 3);
}

#[test]
fn csv_has_one_row_per_figure() {
    let mut stats = CorpusStats::default();
    stats.add(&hand_made(Some(2.0), Some(Category::Local), Some(7)));
    stats.add(&hand_made(Some(4.0), Some(Category::Local), Some(7)));
    let report = CorpusReport {
        layers: stats.layers(),
        tokens_per_window: stats.tokens_per_window(),
        ..Default::default()
    };
    let csv = report.to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "layer,head,figure,mean,std,ci95_lo,ci95_hi,n");
    // 2 document rows + 1 layer × (14 layer figures + 2 heads × (17 head
    // figures + a share for each of the 7 roles by P and by N′)).
    assert_eq!(lines.len(), 1 + 2 + 14 + 2 * (17 + 7 + 7));
    let distance = lines
        .iter()
        .find(|l| l.starts_with("0,,mean_distance,"))
        .unwrap();
    let cells: Vec<&str> = distance.split(',').collect();
    assert_eq!(cells[3], "3");
    assert_close(cells[4].parse().unwrap(), 2f64.sqrt(), "csv std");
    assert_close(
        cells[6].parse().unwrap(),
        3.0 + 12.706_204_736 * 2f64.sqrt() / 2f64.sqrt(),
        "csv ci hi",
    );
    assert_eq!(cells[7], "2");
    // Undefined figures are empty cells, never NaN.
    let uniqueness = lines
        .iter()
        .find(|l| l.starts_with("0,,focus_uniqueness,"))
        .unwrap();
    assert_eq!(*uniqueness, "0,,focus_uniqueness,,,,,0");
    assert!(!csv.contains("NaN"));
}

#[test]
fn finding_files_is_recursive_sorted_and_fails_clearly_on_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("b/deeper")).unwrap();
    for name in [
        "z.txt",
        "a.TXT",
        "b/deeper/m.txt",
        "b/notes.md",
        "b/c.txt",
        "b/page.html",
        "b/data.csv",
    ] {
        std::fs::write(root.join(name), "Text.").unwrap();
    }
    let list = corpus::find_text_files(&[root.to_path_buf(), root.join("z.txt")]).unwrap();
    let names: Vec<String> = list
        .sources
        .iter()
        .map(|f| {
            f.path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // z.txt named twice is listed once; .md is text too; .html and .csv
    // are not corpus files.
    assert_eq!(
        names,
        ["a.TXT", "b/c.txt", "b/deeper/m.txt", "b/notes.md", "z.txt"]
    );
    assert_eq!(list.sources[0].bytes, 5);
    assert_eq!(list.documents.len(), 5);

    let missing = root.join("nope");
    let list = corpus::find_text_files(&[root.join("b"), missing.clone()]).unwrap();
    assert_eq!(list.sources.len(), 3);
    assert_eq!(list.problems.len(), 1);
    assert_eq!(list.problems[0].reason, "no such file or folder");

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("readme.html"), "x").unwrap();
    let error = corpus::find_text_files(&[empty.path().to_path_buf(), missing])
        .unwrap_err()
        .to_string();
    assert!(error.contains("no document found"), "{error}");
    assert!(error.contains("no such file or folder"), "{error}");
    assert!(corpus::find_text_files(&[]).is_err());
}

// ---------------------------------------------------------------------------
// The runner on the real model

const WORDS: [&str; 24] = [
    "harbour", "boats", "morning", "fisher", "market", "bread", "river", "lantern", "quiet",
    "children", "stone", "bridge", "winter", "garden", "letters", "captain", "salt", "window",
    "evening", "songs", "village", "storm", "tower", "road",
];

/// A deterministic text of `sentences` sentences of 6–13 words.
fn generated_text(seed: u64, sentences: usize) -> String {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % n as u64) as usize
    };
    let mut text = String::new();
    for _ in 0..sentences {
        let length = 6 + next(8);
        let words: Vec<&str> = (0..length).map(|_| WORDS[next(WORDS.len())]).collect();
        let mut sentence = words.join(" ");
        sentence[..1].make_ascii_uppercase();
        text.push_str(&sentence);
        text.push_str(". ");
    }
    text.push('\n');
    text
}

/// Writes the mixed folder: three readable texts (one in a subfolder, one
/// long enough for several windows), a Latin-1 text, a binary and an empty
/// `.txt`, and an `.html` that must be ignored.
fn mixed_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("a_short.txt"), generated_text(1, 4)).unwrap();
    std::fs::write(root.join("long.txt"), generated_text(2, 70)).unwrap();
    std::fs::write(root.join("sub/nested.txt"), generated_text(3, 6)).unwrap();
    std::fs::write(
        root.join("latin1.txt"),
        b"Le caf\xe9 du port ouvre t\xf4t. Les p\xeacheurs y boivent du th\xe9.\n",
    )
    .unwrap();
    std::fs::write(root.join("binary.txt"), [0u8, 159, 146, 150, 0, 1, 2, 3]).unwrap();
    std::fs::write(root.join("empty.txt"), "  \n\n").unwrap();
    std::fs::write(root.join("ignored.html"), generated_text(4, 3)).unwrap();
    dir
}

/// Every window of one file, the way `headscope analyze` would run each
/// (pipeline::run), independently of the corpus module.
fn windows_of(path: &Path, mode: InputMode) -> Vec<Analysis> {
    let text = read_text_file(path).unwrap().text;
    let total = split_sentences(&text, mode).len();
    let mut analyses = Vec::new();
    let mut first = 0;
    let mut covered = 0;
    while first < total {
        let input = InputOptions {
            mode,
            first_sentence: first,
            ..Default::default()
        };
        let output = pipeline::run(
            loaded_test_model(),
            &text,
            &input,
            &AnalysisOptions::default(),
            &|| false,
        )
        .unwrap();
        assert!(output.input.sentences_analysed > 0);
        covered += output.input.sentences_analysed;
        first += output.input.sentences_analysed;
        analyses.push(output.analysis);
    }
    assert_eq!(covered, total, "the windows cover every sentence once");
    analyses
}

/// Mean of the defined values, and how many there are.
fn naive_mean(values: impl Iterator<Item = Option<f64>>) -> (Option<f64>, usize) {
    let defined: Vec<f64> = values.flatten().collect();
    let n = defined.len();
    ((n > 0).then(|| defined.iter().sum::<f64>() / n as f64), n)
}

/// How one window's analysis holds a per-layer figure.
type LayerValue = fn(&LayerFigures) -> Option<f64>;
/// How one window's analysis holds a per-head figure.
type HeadValue = fn(&HeadFigures) -> Option<f64>;

/// Each per-layer figure of the report by name, and how one window's
/// analysis holds it (in the report's own order).
const LAYER_VALUES: [(&str, LayerValue); 14] = [
    ("mean_distance", |x| x.mean_distance),
    ("same_sentence_fraction", |x| x.same_sentence_fraction),
    ("separator_attention", |x| x.separator_attention),
    ("focus_uniqueness", |x| x.focus_uniqueness),
    ("segmentation_accuracy", |x| x.segmentation_accuracy),
    ("segmentation_undecided", |x| x.segmentation_undecided),
    ("segmentation_share", |x| x.segmentation_share),
    ("segmentation_share_chance", |x| x.segmentation_share_chance),
    ("sink_attention", |x| x.sink_attention),
    ("separator_attention_vw", |x| x.separator_attention_vw),
    ("segmentation_accuracy_vw", |x| x.segmentation_accuracy_vw),
    ("segmentation_undecided_vw", |x| x.segmentation_undecided_vw),
    ("segmentation_share_vw", |x| x.segmentation_share_vw),
    ("sink_attention_vw", |x| x.sink_attention_vw),
];

/// Each per-head figure of the report by name, and how one window's
/// analysis holds it.
const HEAD_VALUES: [(&str, HeadValue); 19] = [
    ("mean_distance", |x| x.mean_distance),
    ("same_sentence_fraction", |x| x.same_sentence_fraction),
    ("repetition_fraction", |x| x.repetition_fraction),
    ("focus_share", |x| x.focus_share),
    ("local_fraction", |x| x.local_fraction),
    ("separator_attention", |x| x.separator_attention),
    ("sink_attention", |x| x.sink_attention),
    ("previous_token_score", |x| x.previous_token_score),
    ("duplicate_token_score", |x| x.duplicate_token_score),
    ("induction_score", |x| x.induction_score),
    ("self_score", |x| x.self_score),
    ("separator_attention_vw", |x| x.separator_attention_vw),
    ("sink_attention_vw", |x| x.sink_attention_vw),
    ("previous_token_score_vw", |x| x.previous_token_score_vw),
    ("duplicate_token_score_vw", |x| x.duplicate_token_score_vw),
    ("induction_score_vw", |x| x.induction_score_vw),
    ("self_score_vw", |x| x.self_score_vw),
    // Measured by ablation (`--importance`), not in a window's analysis:
    // undefined in a run without it.
    ("importance_delta_loss", |_| None),
    ("importance_output_change", |_| None),
];

fn check_summary(summary: &Summary, values: Vec<Option<f64>>, what: &str) {
    let (mean, n) = naive_mean(values.iter().copied());
    assert_eq!(summary.n, n, "{what}: n");
    match (summary.mean, mean) {
        (Some(a), Some(b)) => assert_close(a, b, what),
        (a, b) => assert_eq!(a, b, "{what}: mean"),
    }
    if n >= 2 {
        let m = mean.unwrap();
        let defined: Vec<f64> = values.into_iter().flatten().collect();
        let std = (defined.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        assert_close(summary.std.unwrap(), std, &format!("{what}: std"));
    }
}

#[test]
fn corpus_means_equal_the_means_of_separate_window_runs() {
    let dir = mixed_folder();
    let root = dir.path();
    let options = CorpusOptions::default();
    let mut events = Vec::new();
    let report = corpus::run(
        loaded_test_model(),
        &[root.to_path_buf()],
        &options,
        &mut |event| {
            events.push(match event {
                CorpusEvent::Progress(p) => format!("progress {} {}", p.windows_done, p.bytes_done),
                CorpusEvent::Skipped(s) => format!("skipped {}", s.path),
                CorpusEvent::Warning(w) => format!("warning {}", w.path),
            })
        },
        &AtomicBool::new(false),
    )
    .unwrap();

    // Files in sorted order: a_short, binary, empty, latin1, long, sub/nested.
    let readable = ["a_short.txt", "latin1.txt", "long.txt", "sub/nested.txt"];
    let mut windows = Vec::new();
    let mut per_file = Vec::new();
    for name in readable {
        let analyses = windows_of(&root.join(name), InputMode::Document);
        per_file.push(analyses.len());
        windows.extend(analyses);
    }
    assert!(
        per_file[2] >= 2,
        "long.txt needs several windows: {per_file:?}"
    );

    assert!(!report.partial);
    assert_eq!(report.format, "headscope-corpus/2");
    assert_eq!(report.files_found, 6);
    assert_eq!(report.files, 4);
    assert_eq!(report.windows, windows.len());
    assert_eq!(
        report.tokens,
        windows.iter().map(|a| a.tokens).sum::<usize>()
    );
    assert_eq!(
        report.content_tokens,
        windows.iter().map(|a| a.content_tokens).sum::<usize>()
    );
    let documents: Vec<(String, usize, bool)> = report
        .documents
        .iter()
        .map(|d| {
            let relative = Path::new(&d.path).strip_prefix(root).unwrap();
            (
                relative.to_string_lossy().into_owned(),
                d.windows,
                d.complete,
            )
        })
        .collect();
    let expected: Vec<(String, usize, bool)> = readable
        .iter()
        .zip(&per_file)
        .map(|(name, &n)| (name.to_string(), n, true))
        .collect();
    assert_eq!(documents, expected);

    // The binary and the empty file are skipped with their reasons; the
    // Latin-1 file is analysed with a warning; the .html is not considered.
    let skipped: Vec<(String, String)> = report
        .skipped
        .iter()
        .map(|s| {
            let name = Path::new(&s.path).file_name().unwrap().to_string_lossy();
            (name.into_owned(), s.reason.clone())
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "binary.txt".to_string(),
                "binary file, not text".to_string()
            ),
            ("empty.txt".to_string(), "empty or blank".to_string()),
        ]
    );
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].path.ends_with("latin1.txt"));
    assert!(report.warnings[0].warning.contains("Latin-1"));
    assert!(events
        .iter()
        .any(|e| e.starts_with("skipped") && e.ends_with("binary.txt")));
    assert!(events
        .iter()
        .any(|e| e.starts_with("warning") && e.ends_with("latin1.txt")));
    let last_progress = events
        .iter()
        .rev()
        .find(|e| e.starts_with("progress"))
        .unwrap();
    let total_bytes: u64 = std::fs::read_dir(root)
        .unwrap()
        .chain(std::fs::read_dir(root.join("sub")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(
        *last_progress,
        format!("progress {} {total_bytes}", windows.len())
    );

    // Every figure: mean and n against the naive computation.
    let (layers, heads) = (loaded_test_model().layers(), loaded_test_model().heads());
    assert_eq!(report.layers.len(), layers);
    check_summary(
        &report.baseline_same_sentence_fraction,
        windows
            .iter()
            .map(|a| a.baseline_same_sentence_fraction)
            .collect(),
        "baseline",
    );
    for l in 0..layers {
        let layer = &report.layers[l];
        assert_eq!(layer.layer, l);
        assert_eq!(layer.heads.len(), heads);
        // Each figure of the report, paired with its name by the report
        // itself, against the same figure of every window (a figure the
        // report gains needs its row in the tables).
        assert_eq!(layer.figures().len(), LAYER_VALUES.len());
        assert_eq!(layer.heads[0].figures().len(), HEAD_VALUES.len());
        for ((name, summary), (expected, value)) in layer.figures().into_iter().zip(LAYER_VALUES) {
            assert_eq!(name, expected);
            let values = windows.iter().map(|a| value(&a.layers[l])).collect();
            check_summary(&summary, values, &format!("L{l} {name}"));
        }
        for h in 0..heads {
            let head = &layer.heads[h];
            let at = |name: &str| format!("L{l} H{h} {name}");
            for ((name, summary), (expected, value)) in head.figures().into_iter().zip(HEAD_VALUES)
            {
                assert_eq!(name, expected);
                let values = windows
                    .iter()
                    .map(|a| value(&a.layers[l].heads[h]))
                    .collect();
                check_summary(&summary, values, &at(name));
            }
            for category in Category::ALL {
                let expected = windows
                    .iter()
                    .filter(|a| a.layers[l].heads[h].category == Some(category))
                    .count();
                assert_eq!(
                    head.categories.counts.get(category),
                    expected,
                    "{}",
                    at(category.as_str())
                );
            }
            assert_eq!(head.categories.counts.total(), windows.len());
            // The role of every window counted, its share of the windows.
            for role in Role::ALL {
                let expected = windows
                    .iter()
                    .filter(|a| a.layers[l].heads[h].role == Some(role))
                    .count();
                let counted = head.roles.counts.windows.get(&role).copied();
                assert_eq!(counted.unwrap_or(0), expected, "{}", at(role.as_str()));
                let share = head.roles.fractions[&role];
                assert_close(
                    share.mean.unwrap(),
                    expected as f64 / windows.len() as f64,
                    &at(role.as_str()),
                );
            }
            let without = windows
                .iter()
                .filter(|a| a.layers[l].heads[h].role.is_none())
                .count();
            assert_eq!(head.roles.counts.none, without, "{}", at("no role"));
        }
    }

    // The JSON is the documented shape and reads back identically.
    let json = report.to_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["partial"], false);
    assert_eq!(value["files"], 4);
    let summary = &value["layers"][0]["heads"][0]["separator_attention"];
    assert_eq!(summary["n"], windows.len());
    assert_eq!(summary["ci95"].as_array().unwrap().len(), 2);
    assert!(value["layers"][0]["heads"][0]["categories"]["fractions"]["none"].is_number());
    let back: CorpusReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.windows, report.windows);
    assert_eq!(back.layers.len(), layers);
}

#[test]
fn cancelling_after_the_first_window_keeps_that_window_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.txt"), generated_text(5, 70)).unwrap();
    std::fs::write(dir.path().join("more.txt"), generated_text(6, 5)).unwrap();
    let cancel = AtomicBool::new(false);
    let mut windows_seen = Vec::new();
    let report = corpus::run(
        loaded_test_model(),
        &[dir.path().to_path_buf()],
        &CorpusOptions::default(),
        &mut |event| {
            if let CorpusEvent::Progress(p) = event {
                windows_seen.push(p.windows_done);
                if p.windows_done == 1 {
                    cancel.store(true, Ordering::SeqCst);
                }
            }
        },
        &cancel,
    )
    .unwrap();
    assert_eq!(windows_seen, [0, 1], "no window started after the cancel");
    assert!(report.partial);
    assert_eq!(report.windows, 1);
    assert_eq!(report.files, 1);
    assert_eq!(report.documents.len(), 1);
    assert!(!report.documents[0].complete, "long.txt was not finished");

    // n equals the windows done for every figure the one window defines.
    let first = &windows_of(&dir.path().join("long.txt"), InputMode::Document)[0];
    for (l, layer) in report.layers.iter().enumerate() {
        assert_eq!(layer.segmentation_accuracy.n, 1);
        assert_eq!(layer.segmentation_accuracy.std, Some(0.0));
        assert_eq!(layer.segmentation_accuracy.ci95, None);
        assert_close(
            layer.mean_distance.mean.unwrap(),
            first.layers[l].mean_distance.unwrap(),
            "first window's distance",
        );
        for head in &layer.heads {
            assert_eq!(head.separator_attention.n, 1);
            assert_eq!(head.categories.counts.total(), 1);
        }
    }
    let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(value["partial"], true);
    assert_eq!(value["windows"], 1);

    // Cancelled before anything: a valid, empty, partial report.
    let cancel = AtomicBool::new(true);
    let report = corpus::run(
        loaded_test_model(),
        &[dir.path().to_path_buf()],
        &CorpusOptions::default(),
        &mut |_| {},
        &cancel,
    )
    .unwrap();
    assert!(report.partial);
    assert_eq!((report.windows, report.files), (0, 0));
    assert!(report.layers.is_empty());
    let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(value["tokens_per_window"]["mean"], serde_json::Value::Null);
}

#[test]
fn a_sentence_too_long_for_the_model_is_cut_into_pieces_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    // Capitalised, so that UAX #29 starts a new sentence after "start.".
    let run_on = format!("Word {}", vec!["word"; 600].join(" "));
    let text = format!("A short start. {run_on}. A short end here.\n");
    std::fs::write(dir.path().join("runon.txt"), text).unwrap();
    let report = corpus::run(
        loaded_test_model(),
        &[dir.path().to_path_buf()],
        &CorpusOptions::default(),
        &mut |_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    assert!(!report.partial);
    assert_eq!(report.sentences_split, 1);
    assert_eq!(report.documents[0].sentences_split, 1);
    // The start; the run-on sentence's first piece (510 tokens) alone; its
    // second piece with the end: four sentences analysed in three windows.
    assert_eq!(report.sentences, 4);
    assert_eq!(report.windows, 3);
    assert!(report.warnings.is_empty());
    assert!(report.documents[0].complete);
}

// ---------------------------------------------------------------------------
// The binary

#[test]
fn binary_analyses_fifty_texts_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let texts = dir.path().join("texts");
    std::fs::create_dir_all(texts.join("part2")).unwrap();
    for i in 0..50u64 {
        let folder = if i < 25 {
            texts.clone()
        } else {
            texts.join("part2")
        };
        std::fs::write(
            folder.join(format!("t{i:02}.txt")),
            generated_text(100 + i, 3),
        )
        .unwrap();
    }
    let json = dir.path().join("corpus.json");
    let csv = dir.path().join("corpus.csv");
    let output = Command::new(headscope_bin())
        .args([
            "corpus",
            "--model",
            &model_arg(),
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            texts.to_str().unwrap(),
        ])
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // stderr is a pipe, not a terminal: whole progress lines, a few of them
    // (at most one per 5% of the work or 10 s), none rewritten with \r; the
    // last one at 100%.
    assert!(!stderr.contains('\r'), "{stderr:?}");
    let progress_lines = stderr
        .lines()
        .filter(|l| l.starts_with("headscope: corpus "))
        .count();
    assert!((2..=22).contains(&progress_lines), "{stderr}");
    assert!(stderr.contains("100% ["), "{stderr:?}");
    assert!(stderr.contains("50/50 documents, 50 windows"), "{stderr:?}");
    assert!(stderr.contains("ETA"), "{stderr:?}");

    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["partial"], false);
    assert_eq!(value["files"], 50);
    assert_eq!(value["windows"], 50);
    assert_eq!(value["documents"].as_array().unwrap().len(), 50);
    assert!(value["skipped"].as_array().unwrap().is_empty());
    let layers = value["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 6);
    for layer in layers {
        let heads = layer["heads"].as_array().unwrap();
        assert_eq!(heads.len(), 12);
        for head in heads {
            assert_eq!(head["separator_attention"]["n"], 50);
            let counts = &head["categories"]["counts"];
            let total: u64 = ["repetition", "focus", "local", "mixed", "none"]
                .iter()
                .map(|k| counts[k].as_u64().unwrap())
                .sum();
            assert_eq!(total, 50);
            // Every window's role (§9) is counted, by the role's name.
            // Every window has a role by P and one by N′ (or none).
            for roles in ["roles", "roles_vw"] {
                let roles = &head[roles]["counts"];
                let with_role: u64 = roles["windows"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|count| count.as_u64().unwrap())
                    .sum();
                assert_eq!(with_role + roles["none"].as_u64().unwrap(), 50);
            }
            assert!(head["induction_score_vw"]["mean"].is_number());
            assert!(head["induction_score"]["mean"].is_number());
        }
        let seg = &layer["segmentation_accuracy"];
        let (mean, lo, hi) = (
            seg["mean"].as_f64().unwrap(),
            seg["ci95"][0].as_f64().unwrap(),
            seg["ci95"][1].as_f64().unwrap(),
        );
        assert!(lo <= mean && mean <= hi && (0.0..=1.0).contains(&mean));
    }

    let table = std::fs::read_to_string(&csv).unwrap();
    // 6 layers × (14 layer figures + 12 heads × (17 head figures and the
    // share of each of the 7 roles by P and by N′)).
    assert_eq!(table.lines().count(), 1 + 2 + 6 * (14 + 12 * (17 + 7 + 7)));
    assert!(table
        .lines()
        .any(|l| l.starts_with("5,11,separator_attention,") && l.ends_with(",50")));
    assert!(table
        .lines()
        .any(|l| l.starts_with("5,11,sink_attention,") && l.ends_with(",50")));
    assert!(table
        .lines()
        .any(|l| l.starts_with("5,,segmentation_undecided,") && l.ends_with(",50")));
}

#[test]
fn binary_without_text_files_fails_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.html"), "Not a text file.").unwrap();
    let json = dir.path().join("out.json");
    let output = Command::new(headscope_bin())
        .args([
            "corpus",
            "--model",
            &model_arg(),
            "--json",
            json.to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("no document found"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr:?}");
    assert!(!json.exists());
}

/// Reads a child's stderr in the background so the test can watch it.
fn watch(mut stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let seen = Arc::new(Mutex::new(String::new()));
    let writer = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buffer) {
            if n == 0 {
                break;
            }
            writer
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    seen
}

#[test]
fn sigint_writes_a_valid_partial_report() {
    let dir = tempfile::tempdir().unwrap();
    let texts: PathBuf = dir.path().join("texts");
    std::fs::create_dir(&texts).unwrap();
    // Ten files of about three windows each: far more work than the test waits for.
    for i in 0..10u64 {
        std::fs::write(
            texts.join(format!("doc{i}.txt")),
            generated_text(200 + i, 100),
        )
        .unwrap();
    }
    let json = dir.path().join("partial.json");
    let mut child = Command::new(headscope_bin())
        .args([
            "corpus",
            "--model",
            &model_arg(),
            "--json",
            json.to_str().unwrap(),
            texts.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = watch(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(300);
    // A progress line with at least one window done ("…documents, N windows").
    let some_window_done = |log: &str| {
        log.lines().any(|line| {
            line.split("documents, ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n >= 1)
        })
    };
    while !some_window_done(&stderr.lock().unwrap()) {
        assert!(
            Instant::now() < deadline,
            "no progress: {}",
            stderr.lock().unwrap()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited early: {}",
            stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let stderr = stderr.lock().unwrap().clone();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Interrupted is not success, but it is a clean exit with a message.
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");

    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["partial"], true);
    let windows = value["windows"].as_u64().unwrap();
    assert!((1..30).contains(&windows), "windows {windows}");
    for layer in value["layers"].as_array().unwrap() {
        assert_eq!(layer["segmentation_accuracy"]["n"], windows);
        for head in layer["heads"].as_array().unwrap() {
            assert_eq!(head["separator_attention"]["n"], windows);
        }
    }
    assert!(value["documents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["complete"] == false));
}

#[test]
fn binary_on_a_terminal_draws_a_live_bar() {
    let dir = tempfile::tempdir().unwrap();
    let texts = dir.path().join("texts");
    std::fs::create_dir(&texts).unwrap();
    for i in 0..4u64 {
        std::fs::write(texts.join(format!("t{i}.txt")), generated_text(300 + i, 3)).unwrap();
    }
    let json = dir.path().join("corpus.json");
    let quote = |p: &Path| format!("'{}'", p.display());
    let command = format!(
        "{} corpus --model {} --json {} {}",
        quote(&headscope_bin()),
        quote(&test_model()),
        quote(&json),
        quote(&texts)
    );
    // `script` runs the command with a pseudo-terminal as its stderr and
    // copies what it wrote to our stdout.
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .expect("run script (util-linux)");
    let seen = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{seen}");
    // The bar redraws itself in place (carriage return or cursor movement)
    // and ends full.
    assert!(seen.contains('\r') || seen.contains("\x1b["), "{seen:?}");
    assert!(seen.contains("100% [####################]"), "{seen:?}");
    assert!(seen.contains("4/4 documents, 4 windows"), "{seen:?}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["windows"], 4);
}
