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
//! Leases are granted in the order they are asked for: a step waiting for
//! the whole budget is not overtaken by smaller ones that keep fitting
//! beside a job that leases a thread at a time (the grid's thumbnails,
//! [`map_indices_in_turn`]), so it gets its turn between two of that job's
//! pieces rather than after the whole job.
//!
//! The budget is the number of cores, or `HEADSCOPE_THREADS` when set.
//!
//! The threads themselves are kept from one step to the next where they
//! are free ([`run_with_helpers`]): started afresh for each forward pass,
//! each new thread allocated its thread-local buffers (gemm's packing) and
//! its memory again, page by page, and the figures after the pass ran
//! slower too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, TryLockError};

struct Budget {
    total: usize,
    queue: Mutex<Queue>,
    /// Signalled when threads come back or the next in line may go.
    changed: Condvar,
}

/// The threads in use, and the leases in line by ticket: the one holding
/// `serving` goes as soon as its threads are free; the others wait.
#[derive(Default)]
struct Queue {
    in_use: usize,
    next_ticket: u64,
    serving: u64,
}

impl Budget {
    fn new(total: usize) -> Self {
        Self {
            total: total.max(1),
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lease(&'static self, wanted: usize) -> Lease {
        let threads = wanted.clamp(1, self.total);
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        while queue.serving != ticket || queue.in_use + threads > self.total {
            queue = self.changed.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        queue.serving += 1;
        queue.in_use += threads;
        drop(queue);
        // The next in line may fit beside this one.
        self.changed.notify_all();
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

    /// `f(0)`, …, `f(count − 1)` in index order, on this lease's threads,
    /// which take the indices in turn: for a job of several steps that
    /// holds its threads from one step to the next, rather than queueing
    /// again behind others for each (a map's tiles behind the grid's
    /// thumbnails, each of which holds a thread for seconds at 32k).
    pub fn map_indices<R: Send>(&self, count: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let threads = self.threads.min(count);
        if threads <= 1 {
            return (0..count).map(f).collect();
        }
        in_turn(threads, count, f)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.lock().in_use -= self.threads;
        self.budget.changed.notify_all();
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
    lease(wanted.min(count)).map_indices(count, f)
}

/// `f(0)`, …, `f(count − 1)` in index order, on up to `wanted` threads
/// that lease one thread of the budget for each index, and give it back
/// after: for a background job of many short pieces (the grid's
/// thumbnails). Leasing all its threads for the whole job, as
/// [`map_indices`] does, would keep a step that needs the whole budget
/// (the logit lens' pass, a hover's next tokens) waiting until the job
/// ends; leased piece by piece, in line with the others, the step goes
/// between two pieces.
pub fn map_indices_in_turn<R: Send>(
    count: usize,
    wanted: usize,
    f: impl Fn(usize) -> R + Sync,
) -> Vec<R> {
    let threads = wanted.clamp(1, total()).min(count);
    in_turn(threads, count, |index| {
        let _turn = lease(1);
        f(index)
    })
}

/// `f(0)`, …, `f(count − 1)` on `threads` threads (this one and
/// [`run_with_helpers`]'s) that take the indices in turn, the results put
/// back in index order.
fn in_turn<R: Send>(threads: usize, count: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(count));
    let take_turns = || {
        let mut mine = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= count {
                break;
            }
            mine.push((index, f(index)));
        }
        done.lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(&mut mine);
    };
    let helpers = (1..threads).map(|_| &take_turns).collect();
    run_with_helpers(helpers, take_turns);
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

/// Runs each of `helpers` on a thread of its own and `caller` on this one,
/// and returns `caller`'s result once all have ended. The helpers run on
/// the kept threads where they are free and enough (one step at a time
/// holds them, every one of its helpers started at once, as a pass's
/// barriers need), else on threads started for this call.
pub fn run_with_helpers<'env, H, R>(helpers: Vec<H>, caller: impl FnOnce() -> R) -> R
where
    H: FnOnce() + Send + 'env,
{
    // Without helpers, holding the kept threads would only turn another
    // step away from them (a one-thread job in turn runs for seconds).
    if helpers.is_empty() {
        return caller();
    }
    static KEPT: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    static HELD: Mutex<()> = Mutex::new(());
    let kept = KEPT.get_or_init(|| {
        let threads = total().saturating_sub(1);
        (threads > 0)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("headscope-helper-{i}"))
                    .build()
                    .ok()
            })
            .flatten()
    });
    let kept = (kept.as_ref())
        .filter(|kept| helpers.len() <= kept.current_num_threads())
        .and_then(|kept| match HELD.try_lock() {
            Ok(held) => Some((kept, held)),
            // A step that panicked leaves the threads free all the same.
            Err(TryLockError::Poisoned(held)) => Some((kept, held.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        });
    match kept {
        // Held: no other step's helper is on the kept threads, so each
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::sync::Barrier;

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
        let kept = total().saturating_sub(1);
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
    fn map_indices_keeps_the_order() {
        let squares = map_indices(100, 4, |i| i * i);
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(map_indices(0, 4, |i| i).is_empty());
        let squares = map_indices_in_turn(100, 4, |i| i * i);
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(map_indices_in_turn(0, 4, |i| i).is_empty());
    }

    #[test]
    fn a_step_needing_the_whole_budget_goes_between_the_pieces_of_a_job_in_turn() {
        use std::time::{Duration, Instant};
        // A background job of 8 pieces per thread of the budget, each 50 ms.
        let pieces = 8 * total();
        let job = std::thread::spawn(move || {
            map_indices_in_turn(pieces, total(), |_| {
                std::thread::sleep(Duration::from_millis(50))
            });
            Instant::now()
        });
        std::thread::sleep(Duration::from_millis(60));
        // A step that needs every thread, as a forward pass does.
        let granted = {
            let _whole = lease(total());
            Instant::now()
        };
        let job_done = job.join().unwrap();
        // Leased for the whole job, the step would get the budget only as
        // the job ends; in turn, within a piece or two.
        assert!(
            granted + Duration::from_millis(150) < job_done,
            "the step waited for the whole job"
        );
    }

    #[test]
    fn a_lease_waiting_for_the_whole_budget_goes_before_later_small_ones() {
        let budget: &'static Budget = Box::leak(Box::new(Budget::new(2)));
        let one = budget.lease(1);
        let order = Arc::new(Mutex::new(Vec::new()));
        let in_line = |tickets: u64| {
            while budget.lock().next_ticket < tickets {
                std::thread::yield_now();
            }
        };
        let whole = {
            let order = Arc::clone(&order);
            std::thread::spawn(move || {
                let _lease = budget.lease(2);
                order.lock().unwrap().push("whole");
            })
        };
        in_line(2);
        // A thread is free, but the whole-budget lease asked first.
        let small = {
            let order = Arc::clone(&order);
            std::thread::spawn(move || {
                let _lease = budget.lease(1);
                order.lock().unwrap().push("small");
            })
        };
        in_line(3);
        for _ in 0..1000 {
            std::thread::yield_now();
        }
        assert!(order.lock().unwrap().is_empty());
        drop(one);
        whole.join().unwrap();
        small.join().unwrap();
        assert_eq!(*order.lock().unwrap(), ["whole", "small"]);
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
