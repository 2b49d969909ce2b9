//! One budget of compute threads for the whole process.
//!
//! The app's interactive runs and a corpus run share the machine: each
//! forward pass starts a team of threads and the analysis its own workers.
//! Sized independently, two jobs on a two-core machine would each start a
//! full team and fight over the cores (a team meets at barriers, so one
//! descheduled member stalls all the others). Instead every parallel step
//! leases its threads from this budget and, when they are taken, waits its
//! turn. A step therefore always runs on the number of threads its input
//! asks for: the encoder's partial sums, whose order follows its thread
//! count, come out bit-identical whatever else the process is doing.
//!
//! The budget is the number of cores, or `HEADSCOPE_THREADS` when set.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

struct Budget {
    total: usize,
    in_use: Mutex<usize>,
    freed: Condvar,
}

impl Budget {
    fn new(total: usize) -> Self {
        Self {
            total: total.max(1),
            in_use: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn lease(&'static self, wanted: usize) -> Lease {
        let threads = wanted.clamp(1, self.total);
        let mut in_use = self.in_use.lock().unwrap_or_else(|e| e.into_inner());
        while *in_use + threads > self.total {
            in_use = self.freed.wait(in_use).unwrap_or_else(|e| e.into_inner());
        }
        *in_use += threads;
        Lease {
            budget: self,
            threads,
        }
    }
}

fn budget() -> &'static Budget {
    static BUDGET: OnceLock<Budget> = OnceLock::new();
    BUDGET.get_or_init(|| Budget::new(configured_threads()))
}

/// `HEADSCOPE_THREADS` if it is a positive number, else the cores available.
fn configured_threads() -> usize {
    std::env::var("HEADSCOPE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The whole budget: what one step may use at most.
pub fn total() -> usize {
    budget().total
}

/// Threads leased from the budget; given back when dropped.
pub struct Lease {
    budget: &'static Budget,
    threads: usize,
}

impl Lease {
    /// How many threads the holder runs (at least 1).
    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut in_use = self.budget.in_use.lock().unwrap_or_else(|e| e.into_inner());
        *in_use -= self.threads;
        self.budget.freed.notify_all();
    }
}

/// Leases `wanted` threads (at least 1, at most the budget), waiting until
/// that many are free. Never lease twice on one thread without dropping the
/// first lease: the second would wait for the first.
pub fn lease(wanted: usize) -> Lease {
    budget().lease(wanted)
}

/// `f(0)`, …, `f(count − 1)` in index order, computed on up to `wanted`
/// threads leased from the budget, which take the indices in turn.
pub fn map_indices<R: Send>(count: usize, wanted: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let lease = lease(wanted.min(count));
    if lease.threads() == 1 {
        return (0..count).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..lease.threads())
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count {
                            break done;
                        }
                        done.push((index, f(index)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a worker thread panicked"))
            .collect()
    });
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn map_indices_keeps_the_order() {
        let squares = map_indices(100, 4, |i| i * i);
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(map_indices(0, 4, |i| i).is_empty());
    }

    #[test]
    fn a_lease_waits_until_its_threads_are_free() {
        // A budget of its own: other tests lease from the process's.
        let budget: &'static Budget = Box::leak(Box::new(Budget::new(3)));
        assert_eq!(budget.lease(usize::MAX).threads(), 3);
        assert_eq!(budget.lease(0).threads(), 1);

        let two = budget.lease(2);
        // One more fits beside the two.
        let one = budget.lease(1);
        assert_eq!(one.threads(), 1);
        drop(one);
        // Two more do not: the lease waits for the first two to come back.
        let granted = Arc::new(AtomicBool::new(false));
        let waiter = {
            let granted = Arc::clone(&granted);
            std::thread::spawn(move || {
                let lease = budget.lease(2);
                granted.store(true, Ordering::SeqCst);
                lease.threads()
            })
        };
        // The waiter cannot be granted while `two` is held, however long
        // it tries; yield a while to give it every chance.
        for _ in 0..1000 {
            std::thread::yield_now();
        }
        assert!(!granted.load(Ordering::SeqCst));
        drop(two);
        assert_eq!(waiter.join().unwrap(), 2);
        assert!(granted.load(Ordering::SeqCst));
    }
}
