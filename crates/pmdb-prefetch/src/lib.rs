//! pmdb-prefetch: the helper-thread prefetcher of seed 000/001. A scanning thread hands
//! (address, length) jobs for what it will read next to a lock-free queue; helper
//! threads pinned to other hardware threads take them and bring every cache line of
//! the range into the cache, so the scanner finds it there.
//!
//! Where the helpers run is the [`Mapping`]: M1 puts them on other physical cores, M2 on
//! the second hardware thread (SMT sibling) of a core, M3 uses both in two stages. The
//! producer never waits: when the queue is full, the job is dropped and counted.
//!
//! Helpers issue prefetch instructions rather than loads, so a job may name memory that
//! is freed or unmapped by the time a helper gets to it: the prefetch then does nothing.
//! The crate knows nothing of the engine.

#![forbid(unsafe_code)]

mod helper;
mod topology;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_queue::ArrayQueue;

pub use topology::{Mapping, Placement, Topology};

/// What can go wrong starting a prefetcher.
#[derive(Debug, thiserror::Error)]
pub enum PrefetchError {
    #[error(
        "mapping {mapping} needs {what}; this machine has {cores} cores with {threads} hardware threads"
    )]
    Unsupported {
        mapping: Mapping,
        what: &'static str,
        cores: usize,
        threads: usize,
    },
    #[error("a prefetcher needs at least one helper and a queue of at least one job")]
    Empty,
    #[error("cannot start a helper thread: {0}")]
    Spawn(#[from] std::io::Error),
}

/// How to start a [`Prefetcher`].
#[derive(Clone, Debug)]
pub struct PrefetchOptions {
    pub mapping: Mapping,
    /// Helpers (per stage for M3).
    pub helpers: usize,
    /// Jobs the queue holds; more are dropped.
    pub queue_capacity: usize,
}

impl Default for PrefetchOptions {
    fn default() -> PrefetchOptions {
        PrefetchOptions {
            mapping: Mapping::M1,
            helpers: 1,
            queue_capacity: 1024,
        }
    }
}

/// One range to bring into the cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    pub addr: usize,
    pub len: usize,
}

/// Counts since the prefetcher started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefetchStats {
    /// Jobs queued.
    pub queued: u64,
    /// Jobs dropped because the queue was full (for M3, either stage's queue).
    pub dropped: u64,
    /// Jobs a helper finished (the last stage, for M3).
    pub done: u64,
    /// Cache lines prefetched by the last stage.
    pub lines: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub queued: AtomicU64,
    pub dropped: AtomicU64,
    /// Jobs the first stage of M3 could not pass on (included in `dropped`).
    pub dropped_between: AtomicU64,
    pub done: AtomicU64,
    pub lines: AtomicU64,
}

/// State the producer and the helpers share.
pub(crate) struct Shared {
    pub queue: ArrayQueue<Job>,
    /// The second stage's queue (M3 only).
    pub staged: Option<ArrayQueue<Job>>,
    pub stop: AtomicBool,
    pub counters: Counters,
}

/// Helper threads prefetching the ranges handed to them; stopped and joined on drop.
pub struct Prefetcher {
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
    placement: Placement,
}

impl Prefetcher {
    /// Starts the helpers of `options` on this machine's hardware threads.
    pub fn start(options: &PrefetchOptions) -> Result<Prefetcher, PrefetchError> {
        Prefetcher::start_on(options, &Topology::detect())
    }

    /// Starts the helpers of `options`, placed on `topology`.
    pub fn start_on(
        options: &PrefetchOptions,
        topology: &Topology,
    ) -> Result<Prefetcher, PrefetchError> {
        if options.helpers == 0 || options.queue_capacity == 0 {
            return Err(PrefetchError::Empty);
        }
        let placement = topology.place(options.mapping, options.helpers)?;
        let shared = Arc::new(Shared {
            queue: ArrayQueue::new(options.queue_capacity),
            staged: (options.mapping == Mapping::M3)
                .then(|| ArrayQueue::new(options.queue_capacity)),
            stop: AtomicBool::new(false),
            counters: Counters::default(),
        });
        let mut prefetcher = Prefetcher {
            shared,
            helpers: Vec::new(),
            placement: placement.clone(),
        };
        for (i, stage) in placement.stages().enumerate() {
            let handle = helper::spawn(Arc::clone(&prefetcher.shared), stage, i)?;
            prefetcher.helpers.push(handle);
        }
        Ok(prefetcher)
    }

    /// Hands `[addr, addr + len)` to the helpers; `false` when the queue was full and
    /// the job was dropped. Never blocks.
    pub fn push(&self, addr: *const u8, len: usize) -> bool {
        let job = Job {
            addr: addr as usize,
            len,
        };
        let counters = &self.shared.counters;
        if self.shared.queue.push(job).is_ok() {
            counters.queued.fetch_add(1, Ordering::Relaxed);
            self.wake();
            true
        } else {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            false
        }
    }

    fn wake(&self) {
        for h in &self.helpers {
            h.thread().unpark();
        }
    }

    /// Where the helpers run.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    pub fn stats(&self) -> PrefetchStats {
        let c = &self.shared.counters;
        PrefetchStats {
            queued: c.queued.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            done: c.done.load(Ordering::Relaxed),
            lines: c.lines.load(Ordering::Relaxed),
        }
    }

    /// Whether every queued job is done or dropped (the helpers are idle).
    pub fn is_idle(&self) -> bool {
        let c = &self.shared.counters;
        let queued = c.queued.load(Ordering::Acquire);
        c.done.load(Ordering::Acquire) + c.dropped_between.load(Ordering::Acquire) == queued
    }
}

impl std::fmt::Debug for Prefetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetcher")
            .field("placement", &self.placement)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.wake();
        for h in self.helpers.drain(..) {
            // A helper that panicked has nothing left to clean up.
            let _ = h.join();
        }
    }
}
