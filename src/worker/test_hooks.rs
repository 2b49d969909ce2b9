//! The tests' hooks into the model thread: a slow model (a wait before
//! every run, and before every layer of a run, still cut short when the
//! run is cancelled) and a panic in the next analysis, to see the UI in
//! those states.
//!
//! The commands and the handle's methods that set them exist only with
//! the `test-hooks` feature, which the crate's own tests turn on through
//! their dev-dependency on the crate itself (Cargo.toml); a build without
//! it has an empty [`Hooks`], whose waits are only the cancel checks.

#[cfg(feature = "test-hooks")]
use super::{AnalysisWorker, Command};
#[cfg(feature = "test-hooks")]
use std::time::{Duration, Instant};

/// What the tests have set, kept by the model thread and copied into the
/// threads it starts.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Hooks {
    /// Waited before every run, and after every window of a corpus run.
    #[cfg(feature = "test-hooks")]
    run_delay: Duration,
    /// Waited before every layer of a run.
    #[cfg(feature = "test-hooks")]
    layer_delay: Duration,
    /// The next analysis panics.
    #[cfg(feature = "test-hooks")]
    panic_next_run: bool,
}

/// A hook the tests set (`AnalysisWorker::set_artificial_delay`, ...).
#[cfg(feature = "test-hooks")]
pub(super) enum Hook {
    RunDelay(Duration),
    LayerDelay(Duration),
    PanicNextRun,
}

impl Hooks {
    #[cfg(feature = "test-hooks")]
    pub(super) fn set(&mut self, hook: Hook) {
        match hook {
            Hook::RunDelay(delay) => self.run_delay = delay,
            Hook::LayerDelay(delay) => self.layer_delay = delay,
            Hook::PanicNextRun => self.panic_next_run = true,
        }
    }

    /// Before a run (or after a corpus window): false when `stop` says the
    /// run should stop, after the tests' wait if any.
    pub(super) fn before_run(&self, stop: &dyn Fn() -> bool) -> bool {
        #[cfg(feature = "test-hooks")]
        return wait_unless(self.run_delay, stop);
        #[cfg(not(feature = "test-hooks"))]
        return !stop();
    }

    /// Before each layer of a run: false when `stop` says the run should
    /// stop, after the tests' wait if any.
    pub(super) fn before_layer(&self, stop: &dyn Fn() -> bool) -> bool {
        #[cfg(feature = "test-hooks")]
        return wait_unless(self.layer_delay, stop);
        #[cfg(not(feature = "test-hooks"))]
        return !stop();
    }

    /// Whether this analysis is to panic: true once after
    /// `AnalysisWorker::inject_panic`.
    pub(super) fn take_panic(&mut self) -> bool {
        #[cfg(feature = "test-hooks")]
        return std::mem::take(&mut self.panic_next_run);
        #[cfg(not(feature = "test-hooks"))]
        return false;
    }
}

/// Sleeps for `delay` in short slices; false as soon as `stop` says so.
#[cfg(feature = "test-hooks")]
fn wait_unless(delay: Duration, stop: &dyn Fn() -> bool) -> bool {
    let end = Instant::now() + delay;
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(10)));
    }
}

#[cfg(feature = "test-hooks")]
impl AnalysisWorker {
    /// Makes every following run wait this long before the model starts
    /// (still abandoned at once when a newer request comes): a slow model
    /// for testing the UI.
    pub fn set_artificial_delay(&self, delay: Duration) {
        self.send(Command::Hook(Hook::RunDelay(delay)));
    }

    /// Makes every following run wait this long before each layer of the
    /// model (still abandoned at once when cancelled): a slow model whose
    /// progress can be watched, for testing the UI.
    pub fn set_layer_delay(&self, delay: Duration) {
        self.send(Command::Hook(Hook::LayerDelay(delay)));
    }

    /// Makes the next analysis panic, to check that a panic is reported
    /// and the worker keeps serving.
    pub fn inject_panic(&self) {
        self.send(Command::Hook(Hook::PanicNextRun));
    }
}
