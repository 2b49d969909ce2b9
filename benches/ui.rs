//! UI benchmark (`cargo bench --bench ui`): the frame time with the full
//! head grid on screen, and the time from an edit to the updated grid, on a
//! model given by `HEADSCOPE_BENCH_MODEL` (default: the test model; use the
//! BERT-base-shaped folder from `headscope make-random-model` for 12 × 12).
//!
//! Frames are driven by egui_kittest without a GPU, so a frame here is the
//! app's own work plus egui's layout and tessellation (the GPU's painting is
//! not counted): what must fit in 16 ms for the UI never to stutter. Prints one JSON line per measurement.
//!
//! With `HEADSCOPE_BENCH_LONG_MODEL` (a decoder folder) and
//! `HEADSCOPE_BENCH_LONG_TEXT` (a text filling its context), also a long
//! input's head map (`HEADSCOPE_BENCH_LONG_MEMORY_MB` sets the memory
//! limit): the time to the grid's thumbnails and to the head's overview, the frames while it is
//! zoomed from the overview down to cells and panned, and the time until
//! the tiles of each zoom are on screen.

use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use headscope::app::text::editor::EDITOR_LABEL;
use headscope::app::{AppConfig, HeadscopeApp, StartOptions};
use std::time::{Duration, Instant};

type AppHarness = Harness<'static, HeadscopeApp>;

/// One frame at the wall-clock time: egui_kittest otherwise advances its
/// clock a fixed quarter second per step, which would hide the app's
/// debounce pause from the edit-to-grid measurement.
fn step(harness: &mut AppHarness, clock: Instant) {
    harness.input_mut().time = Some(clock.elapsed().as_secs_f64());
    harness.step();
}

fn step_until(harness: &mut AppHarness, clock: Instant, mut done: impl FnMut(&AppHarness) -> bool) {
    // A 32k-token input of a 270M-parameter model takes about 10 minutes.
    let deadline = Instant::now() + Duration::from_secs(1800);
    while !done(harness) {
        assert!(Instant::now() < deadline, "timed out");
        step(harness, clock);
        // A real window paints at most once per 60 Hz vsync.
        std::thread::sleep(Duration::from_millis(16));
    }
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// A text of whole sentences that tokenizes to `tokens` tokens with the
/// test model's (and BERT's) uncased WordPiece vocabulary.
fn text_of(tokens: usize) -> String {
    // 12 tokens and its [SEP]; the first sentence also has the [CLS].
    let sentence = "The keeper watched the boats come into the harbour at dusk.";
    let whole = (tokens - 1) / 13;
    let mut sentences = vec![sentence.to_string(); whole];
    // The rest: "boats … boats." and its [SEP].
    let rest = tokens - 1 - 13 * whole;
    if rest >= 3 {
        sentences.push(format!("{}.", vec!["boats"; rest - 2].join(" ")));
    }
    sentences.join(" ")
}

/// The app in a 1600 × 1000 window on `model`, showing `file`, with no
/// persisted state.
fn start_app(model: &str, file: std::path::PathBuf) -> AppHarness {
    let config = AppConfig {
        start: StartOptions {
            model: Some(model.to_string()),
            file: Some(file),
        },
        autosave_path: None,
        restore_text: false,
    };
    Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_eframe(move |cc| HeadscopeApp::new(cc, config).expect("the app starts"))
}

fn main() {
    let model = std::env::var("HEADSCOPE_BENCH_MODEL")
        .unwrap_or_else(|_| headscope::model::test_model_dir().display().to_string());
    let scratch = std::env::temp_dir().join(format!("headscope-ui-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for tokens in [128usize, 512] {
        let file = scratch.join(format!("text-{tokens}.txt"));
        std::fs::write(&file, text_of(tokens)).unwrap();
        let mut harness = start_app(&model, file);
        let clock = Instant::now();
        step_until(&mut harness, clock, |h| {
            h.state().overview_is_current() && !h.state().is_working()
        });
        let shown = harness.state().shown_output().unwrap().analysis.tokens;

        // Frame time with the full grid on screen.
        let mut frames = Vec::new();
        for _ in 0..60 {
            let start = Instant::now();
            step(&mut harness, clock);
            // eframe tessellates every frame's shapes before painting.
            let shapes = harness.output().shapes.clone();
            let primitives = harness
                .ctx
                .tessellate(shapes, harness.ctx.pixels_per_point());
            std::hint::black_box(primitives);
            frames.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let median = percentile(&mut frames, 0.5);
        let p95 = percentile(&mut frames, 0.95);
        println!(
            "{{\"measure\": \"frame_ms\", \"model\": {model:?}, \"tokens\": {shown}, \"median_ms\": {median:.2}, \"p95_ms\": {p95:.2}}}"
        );

        // Edit → updated grid: type one word at the end, wait for the grid.
        let mut edits = Vec::new();
        for round in 0..5 {
            let before = harness
                .state()
                .shown_output()
                .map(|o| std::sync::Arc::as_ptr(o) as usize);
            harness.get_by_label(EDITOR_LABEL).click();
            step(&mut harness, clock);
            harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::End);
            let start = Instant::now();
            harness
                .get_by_label(EDITOR_LABEL)
                .type_text(if round % 2 == 0 { "!" } else { "?" });
            step_until(&mut harness, clock, |h| {
                let now = h
                    .state()
                    .shown_output()
                    .map(|o| std::sync::Arc::as_ptr(o) as usize);
                now != before && h.state().overview_is_current() && !h.state().is_working()
            });
            edits.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let edit_median = percentile(&mut edits, 0.5);
        println!(
            "{{\"measure\": \"edit_to_grid_ms\", \"model\": {model:?}, \"tokens\": {shown}, \"median_ms\": {edit_median:.1}, \"debounce_ms\": {:.0}}}",
            headscope::app::DEBOUNCE_SECONDS * 1000.0
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    if let (Ok(model), Ok(text)) = (
        std::env::var("HEADSCOPE_BENCH_LONG_MODEL"),
        std::env::var("HEADSCOPE_BENCH_LONG_TEXT"),
    ) {
        long_map(model, text.into());
    }
}

/// A frame: the app's work and the tessellation of its shapes, in ms.
fn timed_frame(harness: &mut AppHarness, clock: Instant) -> f64 {
    let start = Instant::now();
    step(harness, clock);
    let shapes = harness.output().shapes.clone();
    let primitives = harness
        .ctx
        .tessellate(shapes, harness.ctx.pixels_per_point());
    std::hint::black_box(primitives);
    start.elapsed().as_secs_f64() * 1000.0
}

fn wheel(harness: &mut AppHarness, at: egui::Pos2, delta: f32) {
    harness.hover_at(at);
    harness.event(egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, delta),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Unknown,
        modifiers: egui::Modifiers::NONE,
    });
}

/// The head map of a long input: overview, zoom, pan.
fn long_map(model: String, text: std::path::PathBuf) {
    use headscope::app::views::CentralView;
    let started = Instant::now();
    let mut harness = start_app(&model, text);
    let clock = Instant::now();
    step_until(&mut harness, clock, |h| {
        h.state().shown_output().is_some() && !h.state().is_working()
    });
    // The memory limit up (HEADSCOPE_BENCH_LONG_MEMORY_MB, default
    // 12,000 MB): the whole context, P and S recomputed per head. Where it
    // is the app's own, the first run is the one timed (with the load).
    let memory_mb = std::env::var("HEADSCOPE_BENCH_LONG_MEMORY_MB").unwrap_or("12000".into());
    let analysis_s = if harness.state().settings().capture_memory_mb.to_string() == memory_mb {
        started.elapsed().as_secs_f64()
    } else {
        raise_memory_limit(&mut harness, clock, &memory_mb)
    };
    let tokens = harness.state().shown_output().unwrap().captures.tokens;
    harness
        .get_by(|n| {
            n.role() == egui::Role::Button
                && n.label().as_deref() == Some(CentralView::Heads.label())
        })
        .click();
    // Every head's thumbnail in the grid (a long pass makes them as it
    // goes).
    let grid = Instant::now();
    step_until(&mut harness, clock, |h| h.state().overview_is_current());
    let thumbnails_s = grid.elapsed().as_secs_f64();
    let opened = Instant::now();
    harness.get_by_label_contains("L0 H0 ").click();
    step_until(&mut harness, clock, |h| h.state().head_map().is_ready());
    let overview_s = opened.elapsed().as_secs_f64();
    let plot = harness.get_by_label("heatmap of L0 H0").rect();
    let at = plot.min + plot.size() * egui::vec2(0.4, 0.6);
    // Zoom in a wheel step at a time to a pixel per cell and beyond, a
    // frame per step (what a user's wheel gives), then pan across.
    let mut frames = Vec::new();
    let mut tiles_ms = Vec::new();
    for _ in 0..16 {
        wheel(&mut harness, at, 240.0);
        frames.push(timed_frame(&mut harness, clock));
        let start = Instant::now();
        step_until(&mut harness, clock, |h| {
            !h.state().head_map().is_drawing_tiles()
        });
        tiles_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        for _ in 0..4 {
            frames.push(timed_frame(&mut harness, clock));
        }
    }
    for k in 0..60 {
        let from = plot.min + plot.size() * egui::vec2(0.7, 0.5);
        let to = from - egui::vec2(6.0, 0.0) * (k % 20) as f32;
        harness.hover_at(to);
        frames.push(timed_frame(&mut harness, clock));
    }
    let level = harness.state().head_map().shown_level().unwrap_or(0);
    let median = percentile(&mut frames, 0.5);
    let p95 = percentile(&mut frames, 0.95);
    let tiles_median = percentile(&mut tiles_ms, 0.5);
    let tiles_max = percentile(&mut tiles_ms, 1.0);
    println!(
        "{{\"measure\": \"long_map\", \"model\": {model:?}, \"tokens\": {tokens}, \"memory_mb\": {memory_mb}, \"analysis_s\": {analysis_s:.0}, \"thumbnails_s\": {thumbnails_s:.2}, \"overview_s\": {overview_s:.2}, \"frame_median_ms\": {median:.2}, \"frame_p95_ms\": {p95:.2}, \"tiles_after_zoom_median_ms\": {tiles_median:.0}, \"tiles_after_zoom_max_ms\": {tiles_max:.0}, \"final_level\": {level}}}"
    );
}

/// Sets the memory limit to `memory_mb` and times the run it starts.
fn raise_memory_limit(harness: &mut AppHarness, clock: Instant, memory_mb: &str) -> f64 {
    use headscope::app::settings::MEMORY_LIMIT_LABEL;
    harness
        .query_all_by_label(MEMORY_LIMIT_LABEL)
        .find(|n| n.accesskit_node().role() == egui::Role::SpinButton)
        .expect("the memory limit field")
        .click();
    step(harness, clock);
    harness.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    harness
        .query_all_by_label(MEMORY_LIMIT_LABEL)
        .find(|n| n.accesskit_node().role() != egui::Role::Label)
        .expect("the memory limit field")
        .type_text(memory_mb);
    harness.key_press(egui::Key::Enter);
    step(harness, clock);
    assert_eq!(
        harness.state().settings().capture_memory_mb.to_string(),
        memory_mb
    );
    let before = harness.state().shown_generation();
    let analysed = Instant::now();
    step_until(harness, clock, |h| {
        h.state().shown_generation() > before && !h.state().is_working()
    });
    analysed.elapsed().as_secs_f64()
}
