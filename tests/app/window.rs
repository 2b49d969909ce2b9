//! The real window under Xvfb: type into the editor, kill the app with
//! SIGKILL mid-session, start it again, and the typed text is back (the
//! analysis runs on it). Needs Xvfb and xdotool (`.ci/run` installs them).

use crate::common;

use common::*;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts the app on `display` with scratch folders under `scratch`; its
/// stderr goes to `log`.
fn start_app(display: &str, scratch: &Path, log: &Path) -> Killed {
    let log_file = std::fs::File::create(log).unwrap();
    Killed(
        Command::new(headscope_bin())
            .args(["--model", test_model().to_str().unwrap()])
            .env("DISPLAY", display)
            .env("XDG_DATA_HOME", scratch.join("data"))
            .env("XDG_CONFIG_HOME", scratch.join("config"))
            .env("HEADSCOPE_CACHE", scratch.join("cache"))
            .env("HEADSCOPE_TRACE", "1")
            .env_remove("WAYLAND_DISPLAY")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start headscope"),
    )
}

/// Token counts of the results the app reported, in order.
fn results(log: &Path) -> Vec<usize> {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let _ = file.read_to_string(&mut text);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("headscope: result "))
        .filter_map(|l| l.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .collect()
}

/// The tokens of `text` as the app's runs make them with its default
/// settings.
fn tokens_of(text: &str) -> usize {
    let input = headscope::app::settings::Settings::default().input_options(0);
    (headscope::pipeline::prepare_input(loaded_test_model(), text, &input))
        .expect("the edited text makes an input")
        .tokens
        .len()
}

fn xdotool(display: &str, args: &[&str]) -> String {
    let output = Command::new("xdotool")
        .args(args)
        .env("DISPLAY", display)
        .output()
        .expect("xdotool (apt: xdotool)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn killing_the_app_mid_edit_loses_no_text() {
    let scratch = tempfile::tempdir().unwrap();
    let display = format!(":{}", 40 + std::process::id() % 40);
    let _xvfb = Killed(
        Command::new("Xvfb")
            .args([
                display.as_str(),
                "-screen",
                "0",
                "1600x1000x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb (apt: xvfb)"),
    );
    std::thread::sleep(Duration::from_millis(500));

    let first_log = scratch.path().join("first.log");
    let mut app = start_app(&display, scratch.path(), &first_log);
    wait_until("the first result", Duration::from_secs(120), || {
        !results(&first_log).is_empty()
    });
    let before = results(&first_log)[0];

    let window = xdotool(&display, &["search", "--sync", "--name", "^headscope"]);
    let window = window
        .lines()
        .next()
        .expect("a headscope window")
        .to_string();
    xdotool(
        &display,
        &[
            "windowmove",
            &window,
            "0",
            "0",
            "windowsize",
            &window,
            "1600",
            "1000",
        ],
    );
    std::thread::sleep(Duration::from_secs(1));
    // Into the editor (the text panel's upper left), to the end, then type.
    xdotool(&display, &["mousemove", "150", "300", "click", "1"]);
    std::thread::sleep(Duration::from_millis(500));
    // No window manager runs under bare Xvfb: give the window the keyboard.
    xdotool(&display, &["windowfocus", &window]);
    xdotool(&display, &["key", "ctrl+End"]);
    xdotool(
        &display,
        &[
            "type",
            "--delay",
            "20",
            " Zebras crossed the river at midnight, and the zebras were happy.",
        ],
    );
    let autosave = scratch.path().join("cache/autosave.txt");
    wait_until("the autosave", Duration::from_secs(30), || {
        std::fs::read_to_string(&autosave).is_ok_and(|t| t.contains("zebras were happy."))
    });
    // The whole edited text's result: one for part of it may come first
    // (the app runs while the typing goes on).
    let edited = tokens_of(&std::fs::read_to_string(&autosave).unwrap());
    assert!(edited > before, "the edit added no token");
    wait_until(
        "a result for the edited text",
        Duration::from_secs(120),
        || results(&first_log).contains(&edited),
    );

    // SIGKILL: no exit handler runs, eframe's own storage is not written.
    app.0.kill().unwrap();
    app.0.wait().unwrap();

    let second_log = scratch.path().join("second.log");
    let _app = start_app(&display, scratch.path(), &second_log);
    wait_until("the result after restart", Duration::from_secs(120), || {
        !results(&second_log).is_empty()
    });
    assert_eq!(
        results(&second_log)[0],
        edited,
        "the restarted app analysed another text than the edited one"
    );
}
