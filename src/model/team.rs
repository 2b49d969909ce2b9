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
//! ([`crate::threads::run_with_helpers`]).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
