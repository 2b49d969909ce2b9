//! The threads of one CPU forward pass and how they meet.
//!
//! The CPU pass splits each layer the way tensor-parallel transformers split
//! it across devices: each thread owns some heads and some feed-forward
//! columns, and the threads meet twice per layer, at a [`Barrier`], to add
//! up their partial sums (see `cpu_pass.rs`), instead of
//! forking and joining around each of the layer's ten or so steps (a rayon
//! pool did that at 10% of a MiniLM pass in wake-ups alone, and a sleeping
//! worker is slow to return when other processes compete for the cores).
//!
//! The helper threads themselves are kept from one pass to the next
//! ([`run_with_helpers`]): started afresh for each pass, each new thread
//! allocated its thread-local buffers (gemm's packing) and its memory
//! again, page by page, and the figures after the pass ran slower too.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};

/// Runs each of `helpers` on a thread of its own and `caller` on this one,
/// and returns `caller`'s result once all have ended. The helpers run on
/// the kept threads where they are free and enough (one pass at a time
/// holds them, every one of its helpers started at once, as its barriers
/// need), else on threads started for this call.
pub fn run_with_helpers<'env, H, R>(helpers: Vec<H>, caller: impl FnOnce() -> R) -> R
where
    H: FnOnce() + Send + 'env,
{
    static KEPT: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    static HELD: Mutex<()> = Mutex::new(());
    let kept = KEPT.get_or_init(|| {
        let threads = crate::threads::total().saturating_sub(1);
        (threads > 0)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("headscope-pass-{i}"))
                    .build()
                    .ok()
            })
            .flatten()
    });
    let kept = (kept.as_ref())
        .filter(|kept| helpers.len() <= kept.current_num_threads())
        .and_then(|kept| match HELD.try_lock() {
            Ok(held) => Some((kept, held)),
            // A pass that panicked leaves the threads free all the same.
            Err(TryLockError::Poisoned(held)) => Some((kept, held.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        });
    match kept {
        // Held: no other pass's helper is on the kept threads, so each
        // helper finds one free.
        Some((kept, _held)) => kept.in_place_scope(|scope| {
            for helper in helpers {
                scope.spawn(move |_| helper());
            }
            caller()
        }),
        None => std::thread::scope(|scope| {
            for helper in helpers {
                scope.spawn(helper);
            }
            caller()
        }),
    }
}

/// A reusable barrier for a fixed number of threads. Waiters spin briefly
/// (the others usually arrive within microseconds: the work is split
/// evenly), then yield the core. If a thread of the pass panics, the others
/// panic at their next wait instead of waiting forever.
pub struct Barrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl Barrier {
    pub fn new(threads: usize) -> Self {
        Self {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    pub fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            // Last to arrive: reset for the next use, then release the others.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            assert!(
                !self.poisoned.load(Ordering::Relaxed),
                "another thread of the forward pass panicked"
            );
            if spins < 20_000 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Marks the barrier poisoned if the current thread unwinds before the
    /// returned guard is dropped.
    pub fn poison_on_panic(&self) -> PoisonOnPanic<'_> {
        PoisonOnPanic(self)
    }
}

pub struct PoisonOnPanic<'a>(&'a Barrier);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

/// `0..count` split into `threads` contiguous, nearly equal ranges.
pub fn split_evenly(count: usize, threads: usize) -> Vec<Range<usize>> {
    (0..threads)
        .map(|i| i * count / threads..(i + 1) * count / threads)
        .collect()
}

/// Cuts `buffer`, a sequence of blocks of `items × width` values (one block
/// per layer, one item per head), into each thread's items of every block:
/// `result[thread][block]`.
pub fn pieces<'a>(
    buffer: &'a mut [f32],
    items: usize,
    width: usize,
    ranges: &[Range<usize>],
) -> Vec<Vec<&'a mut [f32]>> {
    let mut pieces: Vec<Vec<&mut [f32]>> = ranges.iter().map(|_| Vec::new()).collect();
    if items * width == 0 {
        return pieces;
    }
    for block in buffer.chunks_mut(items * width) {
        let mut rest = block;
        for (range, pieces) in ranges.iter().zip(pieces.iter_mut()) {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(range.len() * width);
            pieces.push(piece);
            rest = tail;
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_split_evenly_and_completely() {
        assert_eq!(split_evenly(7, 2), vec![0..3, 3..7]);
        assert_eq!(split_evenly(3, 3), vec![0..1, 1..2, 2..3]);
        assert_eq!(split_evenly(1, 2), vec![0..0, 0..1]);
    }

    #[test]
    fn pieces_follow_the_ranges_in_every_block() {
        let mut buffer: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let pieces = pieces(&mut buffer, 3, 2, &[0..1, 1..3]);
        assert_eq!(pieces[0], vec![&[0.0, 1.0][..], &[6.0, 7.0][..]]);
        assert_eq!(pieces[1][1], &[8.0, 9.0, 10.0, 11.0][..]);
    }

    /// Helpers that wait for each other and for the caller all start:
    /// fewer than the kept threads, more (threads of their own), none,
    /// and from passes run at once (one holds the kept threads, the others
    /// start their own).
    #[test]
    fn every_helper_starts_however_many_and_from_passes_at_once() {
        let pass = |helpers: usize| {
            let barrier = Barrier::new(helpers + 1);
            let done = AtomicUsize::new(0);
            let work = (0..helpers)
                .map(|_| {
                    || {
                        barrier.wait();
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .collect();
            let result = run_with_helpers(work, || {
                barrier.wait();
                helpers
            });
            assert_eq!(result, helpers);
            done.load(Ordering::Relaxed)
        };
        let kept = crate::threads::total().saturating_sub(1);
        for round in 0..3 {
            std::thread::scope(|scope| {
                let passes: Vec<_> = [kept, kept + 2, 1, 0]
                    .into_iter()
                    .map(|helpers| scope.spawn(move || (helpers, pass(helpers))))
                    .collect();
                for running in passes {
                    let (helpers, done) = running.join().unwrap();
                    assert_eq!(done, helpers, "round {round}");
                }
            });
        }
    }

    #[test]
    fn the_barrier_holds_threads_together() {
        let barrier = Barrier::new(3);
        let counter = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for round in 1..=50 {
                        counter.fetch_add(1, Ordering::SeqCst);
                        barrier.wait();
                        assert!(counter.load(Ordering::SeqCst) >= 3 * round);
                        barrier.wait();
                    }
                });
            }
        });
        assert_eq!(counter.load(Ordering::SeqCst), 150);
    }
}
