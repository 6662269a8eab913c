//! Sequence numbers and snapshots: the newest sequence number readers may see, the next
//! one the commit leader hands out, and the registry of live snapshots (what later
//! compaction must keep).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl SeqTracker {
    /// A tracker after recovery found `last` as the newest committed sequence number.
    pub fn new(last: u64) -> SeqTracker {
        SeqTracker {
            visible: AtomicU64::new(last),
            next: AtomicU64::new(last + 1),
            snapshots: Mutex::new(BTreeMap::new()),
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

    /// Makes `first..=last` visible once everything before it is: groups are indexed in
    /// parallel but become visible strictly in order.
    pub fn publish(&self, first: u64, last: u64) {
        while self.visible.load(Ordering::Acquire) != first - 1 {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        self.visible.store(last, Ordering::Release);
    }

    /// Registers a snapshot at the current visible sequence number.
    pub fn acquire(&self) -> u64 {
        let mut snaps = self.snapshots.lock();
        let seq = self.visible();
        *snaps.entry(seq).or_default() += 1;
        seq
    }

    pub fn release(&self, seq: u64) {
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
}
