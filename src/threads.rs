//! One budget of compute threads for the whole process.
//!
//! The app's interactive runs and a corpus run share the machine: each
//! forward pass starts a team of threads and the analysis its own workers.
//! Sized independently, two jobs on a two-core machine would each start a
//! full team and fight over the cores (a team waits at barriers, so a
//! descheduled member stalls all the others). Instead every parallel step
//! leases its threads from this budget and gives them back when done; a
//! step that finds the budget spent still gets one thread, so nothing ever
//! waits for another job to finish.
//!
//! The budget is the number of cores, or `HEADSCOPE_THREADS` when set.

use std::sync::{Mutex, OnceLock};

struct Budget {
    total: usize,
    in_use: Mutex<usize>,
}

impl Budget {
    fn new(total: usize) -> Self {
        Self {
            total,
            in_use: Mutex::new(0),
        }
    }

    fn lease(&'static self, wanted: usize) -> Lease {
        let mut in_use = self.in_use.lock().unwrap_or_else(|e| e.into_inner());
        let free = self.total.saturating_sub(*in_use);
        let taken = wanted.min(free);
        *in_use += taken;
        Lease {
            budget: self,
            granted: taken.max(1),
            taken,
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

/// The whole budget: what one job alone may use.
pub fn total() -> usize {
    budget().total
}

/// Threads leased from the budget; returned when dropped.
pub struct Lease {
    budget: &'static Budget,
    granted: usize,
    /// Of `granted`, how many were taken from the budget (the one thread a
    /// job gets when the budget is spent is not).
    taken: usize,
}

impl Lease {
    /// How many threads the holder may run at once (at least 1).
    pub fn threads(&self) -> usize {
        self.granted
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut in_use = self.budget.in_use.lock().unwrap_or_else(|e| e.into_inner());
        *in_use -= self.taken;
    }
}

/// Leases up to `wanted` threads: as many as are free, at least 1.
pub fn lease(wanted: usize) -> Lease {
    budget().lease(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_budget_and_give_it_back() {
        // A budget of its own: other tests lease from the process's.
        let budget: &'static Budget = Box::leak(Box::new(Budget::new(3)));
        let first = budget.lease(usize::MAX);
        assert_eq!(first.threads(), 3);
        // Spent: a second job still runs, on one thread.
        let second = budget.lease(4);
        assert_eq!(second.threads(), 1);
        drop(second);
        drop(first);
        assert_eq!(budget.lease(usize::MAX).threads(), 3);
        let one = budget.lease(1);
        assert_eq!(one.threads(), 1);
        assert_eq!(budget.lease(usize::MAX).threads(), 2);
    }
}
