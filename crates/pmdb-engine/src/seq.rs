//! Sequence numbers and snapshots: the newest sequence number readers may see, the next
//! one the commit leader hands out, and the registry of live snapshots (what later
//! compaction must keep).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{DbError, Result};
use crate::format::MAX_SEQ;

pub(crate) struct SeqTracker {
    /// Every commit with a sequence number up to this one is visible.
    visible: AtomicU64,
    /// The next sequence number to hand out (the commit leader's alone).
    next: AtomicU64,
    /// Live snapshots: seq -> how many.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Set when a group's leader failed before publishing it (see `stop`).
    stopped: AtomicBool,
}

impl SeqTracker {
    /// A tracker after recovery found `last` as the newest committed sequence number.
    pub fn new(last: u64) -> SeqTracker {
        SeqTracker {
            visible: AtomicU64::new(last),
            next: AtomicU64::new(last + 1),
            snapshots: Mutex::new(BTreeMap::new()),
            stopped: AtomicBool::new(false),
        }
    }

    pub fn visible(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// The first of `n` consecutive sequence numbers, not yet handed out: the leader
    /// takes them with `consume` once its group is published.
    pub fn peek(&self, n: u64) -> Result<u64> {
        let first = self.next.load(Ordering::Relaxed);
        match first.checked_add(n) {
            Some(end) if end - 1 <= MAX_SEQ => Ok(first),
            _ => Err(DbError::SequenceExhausted),
        }
    }

    pub fn consume(&self, n: u64) {
        self.next.fetch_add(n, Ordering::Relaxed);
    }

    /// Waits until every sequence number handed out is visible: every published group is
    /// indexed. Only the commit leader calls it (no group can be published meanwhile).
    pub fn wait_all_visible(&self) {
        while self.visible.load(Ordering::Acquire) + 1 != self.next.load(Ordering::Relaxed) {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    }

    /// Makes `first..=last` visible once everything before it is: groups are indexed in
    /// parallel but become visible strictly in order. False, with nothing made visible,
    /// once `stop` says an earlier group never will be.
    pub fn publish(&self, first: u64, last: u64) -> bool {
        while self.visible.load(Ordering::Acquire) != first - 1 {
            if self.stopped.load(Ordering::Acquire) {
                return false;
            }
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        self.visible.store(last, Ordering::Release);
        true
    }

    /// Says that a group past the visible one will never be published (its leader
    /// failed), so later groups stop waiting for it.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// Registers a snapshot at the current visible sequence number.
    fn acquire(&self) -> u64 {
        let mut snaps = self.snapshots.lock();
        let seq = self.visible();
        *snaps.entry(seq).or_default() += 1;
        seq
    }

    fn release(&self, seq: u64) {
        let mut snaps = self.snapshots.lock();
        if let Some(n) = snaps.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&seq);
            }
        }
    }

    pub fn oldest_snapshot(&self) -> Option<u64> {
        self.snapshots.lock().keys().next().copied()
    }

    /// Registers a snapshot at the current visible sequence number, released when the
    /// returned pin drops.
    pub fn pin(self: &Arc<Self>) -> SnapshotPin {
        SnapshotPin {
            seq: self.acquire(),
            seqs: Arc::clone(self),
        }
    }

    /// Registers one more reader at `seq`, which a live pin already holds (so nothing
    /// it needs can have been dropped).
    pub fn pin_again(self: &Arc<Self>, pin: &SnapshotPin) -> SnapshotPin {
        *self.snapshots.lock().entry(pin.seq).or_default() += 1;
        SnapshotPin {
            seq: pin.seq,
            seqs: Arc::clone(self),
        }
    }

    /// The oldest sequence number a registered reader may read at, or that an
    /// unregistered one may have started at: versions older than the newest one at or
    /// below it are seen by no registered reader. The visible sequence number is read
    /// before the registry, so a snapshot registered meanwhile is at or above it.
    pub fn horizon(&self) -> u64 {
        let visible = self.visible();
        self.oldest_snapshot().map_or(visible, |s| s.min(visible))
    }
}

/// A registered snapshot, released on drop.
pub(crate) struct SnapshotPin {
    seq: u64,
    seqs: Arc<SeqTracker>,
}

impl SnapshotPin {
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl Drop for SnapshotPin {
    fn drop(&mut self) {
        self.seqs.release(self.seq);
    }
}
