//! The log-free group commit (after ROR). Writers queue their requests; one becomes the
//! leader, takes a group, and runs it through the stages in `stages`: validate (each
//! request alone) → sequence → append → persist → publish, then hands the leadership on
//! so the next group can persist while this one goes through index → make visible. Every
//! request gets its own outcome: one that fails validation fails alone while the rest of
//! its group commits. Groups publish strictly one after another, so after a crash at most
//! the last group is partial, and recovery rolls its parts back.

mod conflicts;
mod context;
mod request;
mod stages;

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::batch::WriteBatch;
use crate::error::{DbError, Result};
use crate::options::{DbOptions, LeaderStage};

pub(crate) use conflicts::{KeyRange, Validation};
pub(crate) use context::CommitCtx;
pub(crate) use request::Request;
use stages::LeaderState;

/// Spins a waiting writer does before it sleeps: a group commit takes microseconds,
/// less than a sleep and wake-up through the kernel.
const SPINS: u32 = 2000;

pub(crate) struct Pipeline {
    pending: Mutex<VecDeque<Arc<Request>>>,
    leader: AtomicBool,
    /// The leader's state, held from validation to publication; also what catalog
    /// changes that must not interleave with a commit (a subtable drop) hold.
    state: Mutex<LeaderState>,
    /// Writers that went to sleep wait here; the leader wakes them when it is done.
    sleepers: Mutex<usize>,
    wake: Condvar,
}

impl Pipeline {
    pub fn new(next_lsn: u64) -> Pipeline {
        Pipeline {
            pending: Mutex::new(VecDeque::new()),
            leader: AtomicBool::new(false),
            state: Mutex::new(LeaderState::new(next_lsn)),
            sleepers: Mutex::new(0),
            wake: Condvar::new(),
        }
    }

    /// Excludes commits while held.
    pub fn exclusive(&self) -> MutexGuard<'_, LeaderState> {
        self.state.lock()
    }

    /// Commits `batch` as part of some group, if it passes `validation`; returns when that
    /// group is durable and visible, or with this request's own error.
    pub fn write(
        &self,
        ctx: &CommitCtx<'_>,
        batch: WriteBatch,
        sync: bool,
        validation: Option<Validation>,
    ) -> Result<()> {
        let req = self.submit(batch, sync, validation);
        self.drive(ctx, &req)
    }

    /// Waits for `req`'s outcome on this thread, leading groups while no one else does.
    pub fn drive(&self, ctx: &CommitCtx<'_>, req: &Request) -> Result<()> {
        let mut spins = 0;
        loop {
            if let Some(outcome) = req.take() {
                return outcome;
            }
            if self.try_lead(ctx) {
                continue;
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            self.wait_for_leader(|| req.is_done());
        }
    }

    /// Queues a request; some leader will finish it.
    pub fn submit(
        &self,
        batch: WriteBatch,
        sync: bool,
        validation: Option<Validation>,
    ) -> Arc<Request> {
        let req = Arc::new(Request::new(batch, sync, validation));
        self.pending.lock().push_back(Arc::clone(&req));
        req
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.lock().is_empty()
    }

    /// Leads one group unless another writer leads; returns whether it did.
    pub fn try_lead(&self, ctx: &CommitCtx<'_>) -> bool {
        let free = self
            .leader
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if free {
            self.lead(ctx);
        }
        free
    }

    /// Sleeps until the current leader hands over, unless there is none or `done()`.
    pub fn wait_for_leader(&self, done: impl Fn() -> bool) {
        let mut sleepers = self.sleepers.lock();
        if done() || !self.leader.load(Ordering::Acquire) {
            return;
        }
        *sleepers += 1;
        self.wake.wait(&mut sleepers);
        *sleepers -= 1;
    }

    /// As leader: takes a group off the queue, runs it through the stages, hands out the
    /// outcomes and gives up the leadership. A leader that panics fails its group and
    /// stops commits (`leader_failed`) rather than leave writers waiting for it.
    fn lead(&self, ctx: &CommitCtx<'_>) {
        let group = self.take_group(ctx.options);
        let released = Cell::new(false);
        let run = catch_unwind(AssertUnwindSafe(|| self.run_group(ctx, &group, &released)));
        if let Err(payload) = run {
            if released.get() {
                // Durable, never to be visible: later groups must not wait for it.
                ctx.seqs.stop();
            }
            self.leader_failed(&group, released.get(), payload.as_ref());
        }
    }

    fn run_group(&self, ctx: &CommitCtx<'_>, group: &[Arc<Request>], released: &Cell<bool>) {
        let durable = {
            let mut state = self.state.lock();
            stages::make_durable(ctx, &mut state, group)
        };
        // The group is durable (or failed): the next leader may start persisting while
        // this one is indexed.
        self.leader.store(false, Ordering::Release);
        released.set(true);
        self.wake_sleepers();
        match durable {
            Ok(mut published) => {
                let keys = published
                    .members()
                    .flat_map(|i| group[i].batch.ops().map(|op| op.key));
                ctx.options.panic_if_told(LeaderStage::Index, keys);
                let mut indexed = stages::index(ctx, &mut published);
                if indexed.is_err() {
                    // Durable, never to be visible: later groups must not wait for it,
                    // and none may commit past it.
                    ctx.seqs.stop();
                    self.state
                        .lock()
                        .poison("a committed group could not be indexed");
                }
                if !stages::make_visible(ctx, &published, indexed.is_ok()) && indexed.is_ok() {
                    indexed = Err(DbError::GroupFailed(
                        "the writes are durable, but an earlier group failed in its commit \
                         leader: they are visible once the database is reopened"
                            .into(),
                    ));
                }
                for i in published.members() {
                    group[i].finish(indexed.as_ref().map_err(DbError::for_group_member).copied());
                }
            }
            Err(failed) => {
                for i in failed.members {
                    group[i].finish(Err(failed.error.for_group_member()));
                }
            }
        }
        self.wake_sleepers();
    }

    /// After a leader's panic: what its group wrote is unknown (appended, persisted or
    /// published up to some stage), so every later group is refused until the database
    /// is reopened and recovery judges the log; each member still waiting learns so.
    fn leader_failed(&self, group: &[Arc<Request>], released: bool, payload: &(dyn Any + Send)) {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        log::error!(
            "a commit leader panicked ({message}); commits stop until the database is reopened"
        );
        self.state.lock().poison("a commit leader panicked");
        let why = format!(
            "the commit leader panicked ({message}); whether this write is durable is known \
             once the database is reopened, and no write commits until then"
        );
        for request in group.iter().filter(|r| !r.is_done()) {
            request.finish(Err(DbError::GroupFailed(why.clone())));
        }
        if !released {
            self.leader.store(false, Ordering::Release);
        }
        self.wake_sleepers();
    }

    fn take_group(&self, options: &DbOptions) -> Vec<Arc<Request>> {
        let mut q = self.pending.lock();
        let mut group: Vec<Arc<Request>> = Vec::new();
        let mut bytes = 0;
        while let Some(next) = q.front() {
            if !group.is_empty()
                && (group.len() >= options.max_group_batches
                    || bytes + next.batch.bytes > options.max_group_bytes)
            {
                break;
            }
            bytes += next.batch.bytes;
            group.extend(q.pop_front());
        }
        group
    }

    fn wake_sleepers(&self) {
        let sleepers = self.sleepers.lock();
        if *sleepers > 0 {
            self.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::error::DbError;
    use crate::options::DbOptions;

    fn request(batch: WriteBatch) -> Arc<Request> {
        Arc::new(Request::new(batch, true, None))
    }

    /// Three requests in one group, the middle one invalid: it alone fails; the other two
    /// commit, with consecutive sequence numbers, and are visible.
    #[test]
    fn a_request_that_fails_validation_fails_alone_in_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), DbOptions::small()).unwrap();
        let t = db.subtable("t").unwrap();
        let too_long = vec![b'k'; db.options().max_key_size + 1];
        let batches = [("a", &b"a"[..]), ("b", &too_long[..]), ("c", &b"c"[..])].map(|(v, k)| {
            let mut b = WriteBatch::new();
            b.put(&t, k, v);
            request(b)
        });
        let core = db.core();
        let before = core.seqs.visible();
        {
            let mut pending = core.pipeline.pending.lock();
            pending.extend(batches.iter().cloned());
        }
        core.pipeline.leader.store(true, Ordering::Release);
        core.pipeline.lead(&core.commit_ctx());
        let outcomes: Vec<_> = batches
            .iter()
            .map(|r| r.take().expect("finished"))
            .collect();
        assert!(outcomes[0].is_ok() && outcomes[2].is_ok(), "{outcomes:?}");
        assert!(
            matches!(outcomes[1], Err(DbError::KeyTooLarge { .. })),
            "{outcomes:?}"
        );
        assert_eq!(core.seqs.visible(), before + 2, "one group, two writes");
        assert_eq!(t.get_owned("a").unwrap().unwrap(), b"a");
        assert_eq!(t.get_owned("c").unwrap().unwrap(), b"c");
        assert_eq!(t.scan::<&[u8]>(..).count(), 2);
    }

    /// Once a group after a freeze is visible, the frozen memtables' indexes take no lock;
    /// the active one keeps its lock; everything stays readable, also after reopening.
    #[test]
    fn frozen_memtables_lose_their_index_lock() {
        let dir = tempfile::tempdir().unwrap();
        let options = DbOptions {
            memtable_size: 32 << 10,
            ..DbOptions::small().manual_tiering()
        };
        let check = |db: &Db| {
            let t = db.existing_subtable("t").unwrap();
            let view = t.state.view.load();
            let (active, frozen) = view.memtables().split_first().unwrap();
            assert!(frozen.len() >= 3, "{} frozen", frozen.len());
            assert!(frozen.iter().all(|m| m.index.is_frozen()));
            assert!(!active.index.is_frozen());
            for i in 0..300u32 {
                assert_eq!(
                    t.get_owned(i.to_be_bytes()).unwrap().unwrap(),
                    vec![i as u8; 400]
                );
            }
            assert_eq!(t.scan::<&[u8]>(..).count(), 300);
        };
        {
            let db = Db::open(dir.path(), options.clone()).unwrap();
            let t = db.subtable("t").unwrap();
            for i in 0..300u32 {
                t.put(i.to_be_bytes(), vec![i as u8; 400]).unwrap();
            }
            check(&db);
        }
        check(&Db::open(dir.path(), options).unwrap());
    }
}
