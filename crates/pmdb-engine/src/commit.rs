//! The log-free group commit (after ROR): writers queue their batches; one becomes the
//! leader, takes up to N batches, assigns consecutive sequence numbers, appends each
//! subtable's part to that subtable's active memtable, persists all chunks with one
//! fence, then publishes every touched memtable's 8-byte head word with one more fence.
//! Only then are the records indexed and the visible sequence number advanced, so
//! readers never see half a group. The leadership passes on as soon as a group is
//! published, so the next group is persisted while this one is indexed; visibility still
//! advances group by group, in order. Groups publish strictly one after another, so after a
//! crash at most the last group is partial, and recovery rolls its parts back.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};
use pmdb_pmem::{Backend, PmOff};

use crate::batch::WriteBatch;
use crate::db::{DbInner, SubtableState};
use crate::error::{DbError, Result};
use crate::keys;
use crate::memtable::{Appended, Entries, Memtable, RecIn};

pub(crate) struct Request {
    batch: WriteBatch,
    sync: bool,
    done: AtomicBool,
    result: Mutex<Option<Result<()>>>,
}

impl Request {
    fn finish(&self, result: Result<()>) {
        *self.result.lock() = Some(result);
        self.done.store(true, Ordering::Release);
    }

    fn take(&self) -> Option<Result<()>> {
        if self.done.load(Ordering::Acquire) {
            self.result.lock().take()
        } else {
            None
        }
    }
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

/// Spins a waiting writer does before it sleeps: a group commit takes microseconds,
/// less than a sleep and wake-up through the kernel.
const SPINS: u32 = 2000;

#[derive(Default)]
pub(crate) struct Committer {
    pending: Mutex<VecDeque<Arc<Request>>>,
    leader: AtomicBool,
    /// Writers that went to sleep wait here; the leader wakes them when it is done.
    sleepers: Mutex<usize>,
    wake: Condvar,
}

impl Committer {
    /// Commits `batch` as part of some group; returns when that group is durable and
    /// visible (or failed).
    pub fn write(&self, db: &DbInner, batch: WriteBatch, sync: bool) -> Result<()> {
        let req = Arc::new(Request {
            batch,
            sync,
            done: AtomicBool::new(false),
            result: Mutex::new(None),
        });
        self.pending.lock().push_back(Arc::clone(&req));
        let mut spins = 0;
        loop {
            if let Some(result) = req.take() {
                return result;
            }
            if self
                .leader
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                self.lead(db);
                continue;
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            let mut sleepers = self.sleepers.lock();
            if req.done.load(Ordering::Acquire) || !self.leader.load(Ordering::Acquire) {
                continue;
            }
            *sleepers += 1;
            self.wake.wait(&mut sleepers);
            *sleepers -= 1;
        }
    }

    /// As leader: takes a group off the queue, commits it, hands out the results and
    /// gives up the leadership.
    fn lead(&self, db: &DbInner) {
        let group: Vec<Arc<Request>> = {
            let mut q = self.pending.lock();
            let mut group = Vec::new();
            let mut bytes = 0;
            while let Some(next) = q.front() {
                if !group.is_empty()
                    && (group.len() >= db.options.max_group_batches
                        || bytes + next.batch.bytes > db.options.max_group_bytes)
                {
                    break;
                }
                bytes += next.batch.bytes;
                group.push(q.pop_front().expect("front exists"));
            }
            group
        };
        let outcome = if group.is_empty() {
            Ok(None)
        } else {
            db.persist_group(&group)
        };
        // The group is durable (or failed): the next leader may start persisting while
        // this one is indexed.
        self.leader.store(false, Ordering::Release);
        self.wake_sleepers();
        let outcome = outcome.map(|published| {
            if let Some(p) = published {
                db.make_visible(p);
            }
        });
        for member in &group {
            member.finish(match &outcome {
                Ok(()) => Ok(()),
                Err(e) => Err(e.for_group_member()),
            });
        }
        self.wake_sleepers();
    }

    fn wake_sleepers(&self) {
        let sleepers = self.sleepers.lock();
        if *sleepers > 0 {
            self.wake.notify_all();
        }
    }
}

/// One subtable's share of a group.
struct Part<'a> {
    state: &'a Arc<SubtableState>,
    recs: Vec<RecIn<'a>>,
}

/// A group that is durable and published but not yet visible: its index entries, and
/// the sequence numbers it covers.
pub(crate) struct Published {
    first_seq: u64,
    last_seq: u64,
    entries: Vec<(Arc<Memtable>, Entries)>,
}

impl DbInner {
    /// Steps 1–3 of a commit, done by the leader: append, persist, publish. The memtables'
    /// append positions move on, so the next leader can start while this group is
    /// indexed. `None` for a group with nothing to write.
    fn persist_group(&self, group: &[Arc<Request>]) -> Result<Option<Published>> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(DbError::GroupFailed(
                "an earlier publish failed half-way; reopen the database".into(),
            ));
        }
        let mut cs = self.commit_state.lock();
        let first_seq = cs.next_seq;
        let mut seq = first_seq;
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
            return Ok(None);
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
                        .store_u64(m.desc.head_off, a.head().pack())
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
        let entries = appended
            .into_iter()
            .map(|(memtable, a, part)| {
                memtable.set_published(a.end, part.recs.len() as u64);
                let entries = part
                    .recs
                    .iter()
                    .zip(&a.offs)
                    .map(|(r, off)| (keys::internal(r.key, r.seq), *off))
                    .collect();
                (memtable, entries)
            })
            .collect();
        cs.next_seq = seq;
        cs.next_lsn = lsn + 1;
        Ok(Some(Published {
            first_seq,
            last_seq: seq - 1,
            entries,
        }))
    }

    /// Step 4, after the leadership is handed on: index the group, then — once every
    /// earlier group is visible — make this one visible at once.
    fn make_visible(&self, published: Published) {
        for (memtable, entries) in published.entries {
            memtable.index_part(entries.into_iter());
        }
        while self.visible_seq.load(Ordering::Acquire) != published.first_seq - 1 {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        self.visible_seq
            .store(published.last_seq, Ordering::Release);
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
            && !m.is_sealed()
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
