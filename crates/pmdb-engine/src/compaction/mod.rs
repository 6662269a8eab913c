//! The jobs that move data down the tiers, and the threads that run them: frozen
//! memtables merge into the global index (`merge`), a generation is written to a file
//! of level 0 and its PM freed (`flush`) when PM runs past the flush watermark, coldest
//! first (`placement`), and the level most over its target is compacted into the next
//! one (`level`), all writing SSTs through `output`. One thread merges and flushes
//! (freeing PM comes first); `compaction_threads` more compact levels. With neither,
//! only [`crate::Db::compact`] runs them, in the caller's thread — deterministic, as the
//! crash world needs — and it sends everything to SSTs.
//!
//! Write stalls: before the commit leader starts a new memtable it waits while the
//! subtable has `max_frozen_memtables` frozen memtables waiting, or while the pool is
//! nearly full and the subtable holds PM a flush would free; at most `max_stall`. Every
//! stall is counted and timed in [`TierStats`].
//!
//! PM pressure: a pool capped below what the defaults assume must still run for ever.
//! A generation's budget is at most 3/8 of the pool (`DbOptions::fit_to`), the default
//! watermark leaves a generation and the memtables room below the cap, and when the pool
//! has less than two memtables of room left the flusher flushes whatever the watermark.

mod flush;
mod level;
mod merge;
mod output;
mod placement;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use pmdb_pmem::Pool;

use crate::background::Background;
use crate::error::Result;
use crate::options::DbOptions;
use crate::registry::{Registry, SubtableState};
use crate::seq::SeqTracker;
use crate::tiers::{TierStats, Tiers};

/// What the jobs need of the database; shared with their threads.
pub(crate) struct JobCtx {
    pub pool: Arc<Pool>,
    pub registry: Arc<Registry>,
    pub seqs: Arc<SeqTracker>,
    pub tiers: Arc<Tiers>,
    pub options: DbOptions,
    pub background: Arc<Background>,
    /// Signalled when there may be work, and when work is done (stalled commits wait).
    wake: Condvar,
    lock: Mutex<()>,
    stop: AtomicBool,
}

impl JobCtx {
    /// Wakes the job threads (a memtable froze) and stalled commits (room was made).
    pub fn notify(&self) {
        let _g = self.lock.lock();
        self.wake.notify_all();
    }

    fn wait(&self, timeout: Duration) {
        let mut g = self.lock.lock();
        self.wake.wait_for(&mut g, timeout);
    }

    /// Whether the pool, grown to its cap, has less than two memtables of room left.
    fn pm_is_short(&self) -> bool {
        let a = self.pool.alloc_stats();
        let room = self.pool.max_zones().saturating_sub(a.zones) + a.free_zones;
        room.saturating_mul(self.pool.zone_size()) < self.options.memtable_size.saturating_mul(2)
    }

    fn stalled_by(&self, state: &SubtableState) -> bool {
        let view = state.view.load();
        let frozen = view.memtables.len().saturating_sub(1);
        frozen >= self.options.max_frozen_memtables
            || (holds_freeable_pm(state) && self.pm_is_short())
    }

    /// Waits while `blocked`, at most `max_stall`, and counts and times the stall;
    /// whether it ended before the limit.
    fn stall(&self, what: &str, blocked: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        self.notify();
        while blocked() && start.elapsed() < self.options.max_stall {
            self.wait(Duration::from_millis(10));
        }
        let waited = start.elapsed();
        let mut stats = self.tiers.stats.lock();
        stats.stalls += 1;
        stats.stall_time += waited;
        stats.longest_stall = stats.longest_stall.max(waited);
        drop(stats);
        let cleared = !blocked();
        if !cleared {
            log::warn!(
                "{what}: a write stall reached its limit ({:?}); writing on",
                self.options.max_stall
            );
        }
        cleared
    }
}

/// Whether the subtable holds PM the jobs can give back: frozen memtables or
/// global-index generations.
fn holds_freeable_pm(state: &SubtableState) -> bool {
    if state.check_unfenced().is_err() {
        return false;
    }
    let view = state.view.load();
    view.memtables.len() > 1 || !view.gis.is_empty()
}

/// The job threads of one open database; stopped and joined on drop.
pub(crate) struct Jobs {
    pub ctx: Arc<JobCtx>,
    threads: Vec<JoinHandle<()>>,
}

impl Jobs {
    pub fn start(
        pool: Arc<Pool>,
        registry: Arc<Registry>,
        seqs: Arc<SeqTracker>,
        tiers: Arc<Tiers>,
        options: DbOptions,
        background: Arc<Background>,
    ) -> Jobs {
        let writable = registry.writable().is_ok();
        let (flushers, compactors) = if writable {
            (
                usize::from(options.background_flush),
                options.compaction_threads,
            )
        } else {
            (0, 0)
        };
        let ctx = Arc::new(JobCtx {
            pool,
            registry,
            seqs,
            tiers,
            options,
            background,
            wake: Condvar::new(),
            lock: Mutex::new(()),
            stop: AtomicBool::new(false),
        });
        let mut threads = Vec::new();
        for i in 0..flushers + compactors {
            let ctx = Arc::clone(&ctx);
            let flusher = i < flushers;
            let name = if flusher {
                "pmdb-flush".to_string()
            } else {
                format!("pmdb-compact-{}", i - flushers)
            };
            match std::thread::Builder::new()
                .name(name)
                .spawn(move || run(&ctx, flusher))
            {
                Ok(t) => threads.push(t),
                Err(e) => log::warn!("no background job thread ({e}): Db::compact does the work"),
            }
        }
        Jobs { ctx, threads }
    }

    /// Whether threads do the work (else commits never wait for them).
    fn threaded(&self) -> bool {
        !self.threads.is_empty() && self.ctx.options.background_flush
    }

    /// Called by the commit leader before it starts a new memtable for `state`: waits,
    /// at most `max_stall`, while the subtable's frozen layers are full or PM is short.
    pub fn wait_for_room(&self, state: &SubtableState) {
        if !self.threaded() || !self.ctx.stalled_by(state) {
            return;
        }
        self.ctx.stall(&format!("subtable {}", state.name), || {
            self.ctx.stalled_by(state)
        });
    }

    /// Called by the commit leader when the pool had no zone for it: waits, at most
    /// `max_stall`, for the jobs to give PM back; whether a zone is free now. Without
    /// job threads, or with no PM they could free, the pool is simply full.
    pub fn wait_for_zone(&self) -> bool {
        let no_zone = || self.ctx.pool.alloc_stats().free_zones == 0;
        let freeable = || self.ctx.registry.all().iter().any(|s| holds_freeable_pm(s));
        if !self.threaded() || !freeable() {
            return false;
        }
        self.ctx
            .stall("the pool is full", || no_zone() && freeable())
            && !no_zone()
    }

    /// Sends everything below the memtables to SSTs, whatever the flush watermark: every
    /// frozen memtable is merged, every generation sealed and flushed, level 0 merged
    /// into level 1 and every level over its target compacted. Subtables fenced off are
    /// left as they are, and the first is the error returned once the others are done.
    pub fn compact_all(&self) -> Result<()> {
        let mut fenced = None;
        for state in self.ctx.registry.all() {
            if let Err(e) = state.check_unfenced() {
                fenced.get_or_insert(e);
                continue;
            }
            while merge::merge_frozen(&self.ctx, &state)? {}
            merge::seal_open(&self.ctx, &state);
            while flush::flush_sealed(&self.ctx, &state)? {}
            level::compact_level0(&self.ctx, &state)?;
            while level::compact_one(&self.ctx, &state)? {}
        }
        self.ctx.notify();
        fenced.map_or(Ok(()), Err)
    }

    pub fn stats(&self) -> TierStats {
        let mut stats = self.ctx.tiers.stats.lock().clone();
        stats.block_cache_bytes = self.ctx.tiers.cache_bytes();
        stats
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.ctx.stop.store(true, Ordering::Relaxed);
        self.ctx.notify();
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                log::error!("a background job thread panicked");
            }
        }
    }
}

/// A job thread: the flusher merges frozen memtables and makes room in PM, the others
/// compact levels; each sleeps when there is nothing to do and backs off after an error.
fn run(ctx: &JobCtx, flusher: bool) {
    while !ctx.stop.load(Ordering::Relaxed) {
        let mut did = false;
        let mut failed = false;
        let mut done = |step: Result<bool>, what: &str| match step {
            Ok(d) => did |= d,
            Err(e) => {
                log::error!("{what}: background job failed: {e}");
                ctx.tiers.record_error(&e);
                failed = true;
            }
        };
        for state in ctx.registry.all() {
            if ctx.stop.load(Ordering::Relaxed) {
                return;
            }
            if state.check_unfenced().is_err() {
                continue;
            }
            let step = if flusher {
                merge::merge_frozen(ctx, &state)
            } else {
                level::compact_one(ctx, &state)
            };
            done(step, &format!("subtable {}", state.name));
        }
        if flusher {
            done(
                placement::make_room(ctx),
                "the flush of the coldest generation",
            );
        }
        if did {
            ctx.notify();
        } else {
            ctx.wait(if failed {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(100)
            });
        }
    }
}
