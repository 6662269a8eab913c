//! The log-free group commit (after ROR): writers queue their batches; one becomes the
//! leader, takes up to N batches, assigns consecutive sequence numbers, appends each
//! subtable's part to that subtable's active memtable, persists all chunks with one
//! fence, then publishes every touched memtable's 8-byte head word with one more fence.
//! Only then are the records indexed and the visible sequence number advanced, so
//! readers never see half a group. Groups publish strictly one after another, so after a
//! crash at most the last group is partial, and recovery rolls its parts back.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::{Condvar, Mutex};
use pmdb_pmem::{Backend, PmOff};

use crate::batch::WriteBatch;
use crate::db::{DbInner, SubtableState};
use crate::error::{DbError, Result};
use crate::keys;
use crate::memtable::{Appended, Memtable, RecIn};

pub(crate) struct Request {
    batch: WriteBatch,
    sync: bool,
    result: Mutex<Option<Result<()>>>,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Arc<Request>>,
    leader: bool,
}

/// Sequence numbers, lsns and the not-yet-synced ranges: touched by the leader only.
pub(crate) struct CommitState {
    pub next_seq: u64,
    pub next_lsn: u64,
    /// File backend: ranges written by groups that did not ask for sync.
    unsynced: Vec<(PmOff, usize)>,
    buf: Vec<u8>,
}

impl CommitState {
    pub fn new(next_seq: u64, next_lsn: u64) -> CommitState {
        CommitState {
            next_seq,
            next_lsn,
            unsynced: Vec::new(),
            buf: Vec::new(),
        }
    }
}

#[derive(Default)]
pub(crate) struct Committer {
    queue: Mutex<Queue>,
    cv: Condvar,
}

impl Committer {
    /// Commits `batch` as part of some group; returns when that group is durable and
    /// visible (or failed).
    pub fn write(&self, db: &DbInner, batch: WriteBatch, sync: bool) -> Result<()> {
        let req = Arc::new(Request {
            batch,
            sync,
            result: Mutex::new(None),
        });
        let mut q = self.queue.lock();
        q.pending.push_back(Arc::clone(&req));
        loop {
            if let Some(result) = req.result.lock().take() {
                return result;
            }
            if !q.leader {
                break;
            }
            self.cv.wait(&mut q);
        }
        q.leader = true;
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some(next) = q.pending.front() {
            if !group.is_empty()
                && (group.len() >= db.options.max_group_batches
                    || bytes + next.batch.bytes > db.options.max_group_bytes)
            {
                break;
            }
            bytes += next.batch.bytes;
            group.push(q.pending.pop_front().expect("front exists"));
        }
        drop(q);

        let outcome = db.commit_group(&group);
        for member in &group {
            let r = match &outcome {
                Ok(()) => Ok(()),
                Err(e) => Err(e.for_group_member()),
            };
            *member.result.lock() = Some(r);
        }
        let mut q = self.queue.lock();
        q.leader = false;
        self.cv.notify_all();
        drop(q);
        let result = req.result.lock().take();
        result.expect("the leader's own request is in its group")
    }
}

/// One subtable's share of a group.
struct Part<'a> {
    state: &'a Arc<SubtableState>,
    recs: Vec<RecIn<'a>>,
}

impl DbInner {
    fn commit_group(&self, group: &[Arc<Request>]) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(DbError::GroupFailed(
                "an earlier publish failed half-way; reopen the database".into(),
            ));
        }
        let mut cs = self.commit_state.lock();
        let mut seq = cs.next_seq;
        let lsn = cs.next_lsn;
        let mut parts: BTreeMap<u32, Part<'_>> = BTreeMap::new();
        for req in group {
            for op in &req.batch.ops {
                let state = &op.subtable.state;
                parts
                    .entry(state.id)
                    .or_insert_with(|| Part {
                        state,
                        recs: Vec::new(),
                    })
                    .recs
                    .push(RecIn {
                        seq,
                        kind: op.kind,
                        key: &op.key,
                        value: &op.value,
                    });
                seq += 1;
            }
        }
        if parts.is_empty() {
            return Ok(());
        }
        let nparts = parts.len() as u32;
        let sync = group.iter().any(|r| r.sync);
        let defer_sync = self.pool.backend() == Backend::File && !sync;

        // 1. Append every part; nothing is visible or published yet.
        let mut appended: Vec<(Arc<Memtable>, Appended, &Part<'_>)> = Vec::new();
        for part in parts.values() {
            let memtable = self.active_memtable(part.state)?;
            let a = memtable.append_part(&self.pool, lsn, nparts, &part.recs, &mut cs.buf)?;
            appended.push((memtable, a, part));
        }
        // 2. Persist all chunks, one fence.
        let ranges: Vec<(PmOff, usize)> = appended
            .iter()
            .flat_map(|(_, a, _)| a.ranges.iter().copied())
            .collect();
        if !self.options.broken_publish_before_persist {
            self.persist_ranges(&mut cs, &ranges, defer_sync)?;
        }
        // 3. Publish the head words, one fence. From here a failure leaves the heads in
        // an unknown state, so the database refuses further writes until reopened.
        let published = (|| -> Result<()> {
            let heads: Vec<(PmOff, usize)> = appended
                .iter()
                .map(|(m, a, _)| {
                    self.pool
                        .store_u64(m.desc.head_off, (a.start << 32) | a.end)
                        .map(|_| (m.desc.head_off, 8))
                })
                .collect::<std::result::Result<_, _>>()?;
            self.persist_ranges(&mut cs, &heads, defer_sync)
        })();
        if let Err(e) = published {
            self.poisoned.store(true, Ordering::Release);
            return Err(e);
        }
        if self.options.broken_publish_before_persist {
            self.persist_ranges(&mut cs, &ranges, defer_sync)?;
        }
        // 4. Index, then make the whole group visible at once.
        for (memtable, a, part) in &appended {
            memtable.index_part(
                part.recs
                    .iter()
                    .zip(&a.offs)
                    .map(|(r, off)| (keys::internal(r.key, r.seq), *off)),
            );
            memtable.set_published(a.end, part.recs.len() as u64);
        }
        cs.next_seq = seq;
        cs.next_lsn = lsn + 1;
        self.visible_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Flushes `ranges` and fences — or, on the File backend for a group that did not ask
    /// for sync, remembers them for the next group that does.
    fn persist_ranges(
        &self,
        cs: &mut CommitState,
        ranges: &[(PmOff, usize)],
        defer: bool,
    ) -> Result<()> {
        if defer {
            cs.unsynced.extend_from_slice(ranges);
            return Ok(());
        }
        for (off, len) in cs.unsynced.drain(..).chain(ranges.iter().copied()) {
            self.pool.flush(off, len)?;
        }
        self.pool.fence();
        Ok(())
    }

    /// The subtable's active memtable, starting a new one when there is none yet or the
    /// current one has reached the memtable size (the old one stays readable, frozen).
    fn active_memtable(&self, state: &SubtableState) -> Result<Arc<Memtable>> {
        if let Some(m) = state.memtables.read().first()
            && m.used() < self.options.memtable_size
        {
            return Ok(Arc::clone(m));
        }
        let id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
        let owner = self.pool.create_owner()?;
        let desc = match self.catalog.add_memtable(&self.pool, id, state.id, owner) {
            Ok(desc) => desc,
            Err(e) => {
                // Never reachable: give the owner back now rather than at the next open.
                let _ = self.pool.release_owner(owner);
                return Err(e);
            }
        };
        let memtable = Arc::new(Memtable::new(desc, self.pool.zone_size(), Vec::new(), 0));
        state.memtables.write().insert(0, Arc::clone(&memtable));
        Ok(memtable)
    }
}
