//! Row locks, in PostgreSQL's four modes: a statement that updates or deletes rows, or a
//! `SELECT … FOR UPDATE | NO KEY UPDATE | SHARE | KEY SHARE`, takes the lock of every
//! row it acts on and keeps it until its transaction ends (a statement outside any block
//! until it ends). A second writer of a row waits for the first to commit or roll back,
//! and a read-committed one then reads what was committed and acts on that, as in
//! PostgreSQL, instead of losing the optimistic validation at commit (40001) and redoing
//! the whole transaction. Validation still guards every write: the locks make the usual
//! case wait rather than fail, and make `FOR UPDATE` mean what it says. A wait that would
//! close a cycle of waits is a deadlock: the transaction that would close it fails with
//! 40P01. `NOWAIT` fails at once (55P03) where a wait would begin; `SKIP LOCKED` gives
//! the row up instead. A wait lasts at most the client's `lock_timeout` (55P03 after it).
//!
//! A table's own lock lives in the same space ([`table_lock`]), taken in the
//! [`RelationMode`] of PostgreSQL's relation lock each statement takes: readers and
//! writers share it, CREATE INDEX keeps writers out, and DDL that replaces, drops or
//! rewrites the table keeps everyone out. Unlike a row's, a table's lock is granted in
//! turn: a request that would conflict with one already waiting waits behind it, so a
//! stream of readers or writers, each sharing the lock with the last, cannot keep DDL
//! out forever.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::{Result, SqlError, state};

/// A row: its table's id and its key.
type RowId = (u64, Vec<u8>);

/// The catalog's own lock, in the rows' space under an id no table has: a DDL statement
/// takes it in [`LockMode::Update`] until its transaction ends, and a writer that meets
/// a table whose DDL has not committed waits for it in [`LockMode::KeyShare`] (see
/// [`crate::catalog::block_ddl`]).
pub(crate) const CATALOG_LOCK: u64 = u64::MAX;

/// Where tables' own locks live in the rows' space: above every table id (ids count up
/// from the catalog's first) and below [`CATALOG_LOCK`].
const TABLE_LOCKS: u64 = 1 << 63;

/// The id under which table `id`'s own lock is held (its key is empty), in a
/// [`RelationMode`].
pub(crate) fn table_lock(id: u64) -> u64 {
    TABLE_LOCKS | id
}

/// The modes of a table's own lock that pmdb's statements take: PostgreSQL's relation
/// lock modes of the same names, weakest first, each held as the row mode
/// ([`RelationMode::held_as`]) that conflicts with the same others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RelationMode {
    /// A statement reading the table (also `SELECT … FOR UPDATE`, whose rows carry
    /// their own locks): only DDL that replaces the table waits for it.
    AccessShare,
    /// A statement changing rows: CREATE INDEX waits for it.
    RowExclusive,
    /// CREATE INDEX: the rows stay as they are while it reads them all; readers go on.
    Share,
    /// DDL that drops, empties, rewrites or redefines the table: nobody else uses it.
    AccessExclusive,
}

impl RelationMode {
    /// The row mode held for this one. Their conflicts nest (each mode conflicts with
    /// what the weaker ones do, and more), as the row modes' do, so holding the
    /// stronger of two modes is holding both. Two SHAREs conflict here, where
    /// PostgreSQL lets them pass; DDL takes the catalog's lock first, one at a time, so
    /// they never meet.
    pub(crate) fn held_as(self) -> LockMode {
        match self {
            RelationMode::AccessShare => LockMode::KeyShare,
            RelationMode::RowExclusive => LockMode::Share,
            RelationMode::Share => LockMode::NoKeyUpdate,
            RelationMode::AccessExclusive => LockMode::Update,
        }
    }
}

/// Whether `id` is a table's own lock, which is granted in turn.
fn granted_in_turn(id: u64) -> bool {
    id & TABLE_LOCKS != 0 && id != CATALOG_LOCK
}

/// A row lock's strength, weakest first (PostgreSQL's row-level lock modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LockMode {
    /// `FOR KEY SHARE`: the row's key stays as it is.
    KeyShare,
    /// `FOR SHARE`: the row stays as it is.
    Share,
    /// `FOR NO KEY UPDATE`, and UPDATE of columns outside the key.
    NoKeyUpdate,
    /// `FOR UPDATE`, DELETE, and UPDATE of the key.
    Update,
}

impl LockMode {
    /// Whether two owners may not hold these modes of one row at once.
    fn conflicts(self, other: LockMode) -> bool {
        use LockMode::*;
        match (self.min(other), self.max(other)) {
            (_, Update) => true,
            (KeyShare, _) => false,
            (Share, Share) => false,
            _ => true,
        }
    }

    /// The clause that takes this mode, for messages.
    pub(crate) fn clause(self) -> &'static str {
        match self {
            LockMode::KeyShare => "FOR KEY SHARE",
            LockMode::Share => "FOR SHARE",
            LockMode::NoKeyUpdate => "FOR NO KEY UPDATE",
            LockMode::Update => "FOR UPDATE",
        }
    }
}

/// What a lock request does when another owner holds the row in a conflicting mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitPolicy {
    Wait,
    /// Fail at once with 55P03.
    NoWait,
    /// Give the row up: [`HeldLocks::lock`] answers `false`.
    SkipLocked,
}

struct Entry {
    /// Each owner's strongest mode.
    holders: Vec<(u64, LockMode)>,
    /// The owners waiting for a table's own lock, first come first, with the mode each
    /// asks for (empty for rows, whose waiters are not queued).
    queued: Vec<(u64, LockMode)>,
    released: Arc<Notify>,
}

#[derive(Default)]
struct State {
    held: HashMap<RowId, Entry>,
    /// Who waits for whom: owner → the owners holding the row it waits for.
    waiting: HashMap<u64, Vec<u64>>,
}

impl State {
    /// Whether `owner` waiting for `holders` would close a cycle of waits.
    fn closes_cycle(&self, owner: u64, holders: &[u64]) -> bool {
        let mut stack = holders.to_vec();
        let mut seen = std::collections::HashSet::new();
        while let Some(at) = stack.pop() {
            if at == owner {
                return true;
            }
            if seen.insert(at)
                && let Some(next) = self.waiting.get(&at)
            {
                stack.extend_from_slice(next);
            }
        }
        false
    }
}

/// The row locks of one database.
#[derive(Default)]
pub(crate) struct RowLocks {
    state: Mutex<State>,
    next_owner: AtomicU64,
}

impl RowLocks {
    /// A new owner of locks (a transaction, or one statement outside any), whose waits
    /// last as long as `limit` says when they begin.
    fn owner_limited(self: &Arc<Self>, limit: Arc<WaitLimit>) -> HeldLocks {
        HeldLocks {
            locks: Arc::clone(self),
            owner: self.next_owner.fetch_add(1, Ordering::Relaxed),
            taken: Vec::new(),
            limit,
        }
    }

    /// A new owner of locks that waits as long as it takes.
    #[cfg(test)]
    fn owner(self: &Arc<Self>) -> HeldLocks {
        self.owner_limited(Arc::default())
    }
}

/// How long a lock wait may last (`lock_timeout`, in milliseconds; 0: no limit).
#[derive(Default)]
struct WaitLimit(AtomicU64);

impl WaitLimit {
    fn get(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

/// The row locks as one client's statements take them: the database's, each wait no
/// longer than the client's `lock_timeout`.
pub(crate) struct ClientLocks {
    locks: Arc<RowLocks>,
    limit: Arc<WaitLimit>,
}

impl ClientLocks {
    pub(crate) fn new(locks: Arc<RowLocks>) -> ClientLocks {
        ClientLocks {
            locks,
            limit: Arc::default(),
        }
    }

    /// The same locks, for another client, its waits not limited.
    pub(crate) fn for_client(&self) -> ClientLocks {
        ClientLocks::new(Arc::clone(&self.locks))
    }

    /// A new owner of locks (a transaction, or one statement outside any).
    pub(crate) fn owner(&self) -> HeldLocks {
        self.locks.owner_limited(Arc::clone(&self.limit))
    }

    /// Limits the waits that begin from now on to `ms` milliseconds (0: no limit), as
    /// `lock_timeout` does.
    pub(crate) fn limit_waits(&self, ms: u64) {
        self.limit.0.store(ms, Ordering::Relaxed);
    }
}

/// The locks one owner holds, released when it is dropped.
pub(crate) struct HeldLocks {
    locks: Arc<RowLocks>,
    owner: u64,
    limit: Arc<WaitLimit>,
    /// Each lock taken or strengthened, oldest first, with the mode held before (`None`:
    /// none), so that [`HeldLocks::release_to`] can give back what a savepoint's
    /// rolled-back statements took.
    taken: Vec<(RowId, Option<LockMode>)>,
}

/// Takes a waiter out of the wait graph, and out of the turn it took for a table's lock,
/// however its wait ends (a cancelled statement included).
struct Waiting<'a> {
    locks: &'a RowLocks,
    owner: u64,
    row: &'a RowId,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut st = self.locks.state.lock();
        st.waiting.remove(&self.owner);
        if let Some(entry) = st.held.get_mut(self.row)
            && let Some(at) = entry.queued.iter().position(|(o, _)| *o == self.owner)
        {
            // Those queued behind a request that gave up may go ahead.
            entry.queued.remove(at);
            entry.released.notify_waiters();
            if entry.holders.is_empty() && entry.queued.is_empty() {
                st.held.remove(self.row);
            }
        }
    }
}

impl HeldLocks {
    /// Takes the lock of row `key` of table `table` in `mode`, waiting while other owners
    /// hold it in a mode that conflicts (unless `policy` says otherwise); at once if this
    /// owner holds it already in `mode` or a stronger one. `false` when `SKIP LOCKED`
    /// gave the row up. `relation` names the table in a NOWAIT failure.
    pub(crate) async fn lock(
        &mut self,
        table: u64,
        key: &[u8],
        mode: LockMode,
        policy: WaitPolicy,
        relation: &str,
    ) -> Result<bool> {
        let row = (table, key.to_vec());
        let locks = Arc::clone(&self.locks);
        let deadline = self.limit.get().map(|d| tokio::time::Instant::now() + d);
        let _waiting = Waiting {
            locks: &locks,
            owner: self.owner,
            row: &row,
        };
        loop {
            let released = {
                let mut st = locks.state.lock();
                let blockers = match self.take_if_free(&mut st, &row, mode) {
                    None => return Ok(true),
                    Some(blockers) => blockers,
                };
                match policy {
                    WaitPolicy::Wait => {}
                    WaitPolicy::SkipLocked => return Ok(false),
                    WaitPolicy::NoWait => {
                        return Err(SqlError::user(
                            state::LOCK_NOT_AVAILABLE,
                            format!("could not obtain lock on row in relation \"{relation}\""),
                        ));
                    }
                }
                if st.closes_cycle(self.owner, &blockers) {
                    return Err(SqlError::user(
                        state::DEADLOCK_DETECTED,
                        "deadlock detected: transactions wait for each other's rows",
                    ));
                }
                let entry = st.held.get_mut(&row).expect("held by the blockers");
                if granted_in_turn(row.0) && !entry.queued.iter().any(|(o, _)| *o == self.owner) {
                    entry.queued.push((self.owner, mode));
                }
                // Created under the state's lock: no release can slip past it.
                let released = Arc::clone(&entry.released).notified_owned();
                st.waiting.insert(self.owner, blockers);
                released
            };
            match deadline {
                None => released.await,
                Some(at) => {
                    if tokio::time::timeout_at(at, released).await.is_err() {
                        return Err(SqlError::user(
                            state::LOCK_NOT_AVAILABLE,
                            "canceling statement due to lock timeout",
                        ));
                    }
                }
            }
        }
    }

    /// Takes the lock of `row` in `mode` if no other owner holds it in a conflicting
    /// mode (nor, for a table's lock, waits for it in one ahead of this owner, unless
    /// in one that this owner's lock holds up); else the owners that do.
    fn take_if_free(&mut self, st: &mut State, row: &RowId, mode: LockMode) -> Option<Vec<u64>> {
        let owner = self.owner;
        let Some(entry) = st.held.get_mut(row) else {
            st.held.insert(
                row.clone(),
                Entry {
                    holders: vec![(owner, mode)],
                    queued: Vec::new(),
                    released: Arc::new(Notify::new()),
                },
            );
            self.taken.push((row.clone(), None));
            return None;
        };
        let mut blockers: Vec<u64> = entry
            .holders
            .iter()
            .filter(|(o, m)| *o != owner && m.conflicts(mode))
            .map(|(o, _)| *o)
            .collect();
        // A request queued ahead waits behind it, unless it waits for this owner's
        // lock anyway (as PostgreSQL's queue lets a holder go first): waiting behind
        // it then would be a deadlock.
        let holds = entry
            .holders
            .iter()
            .find(|(o, _)| *o == owner)
            .map(|(_, m)| *m);
        let ahead = entry
            .queued
            .iter()
            .position(|(o, _)| *o == owner)
            .unwrap_or(entry.queued.len());
        blockers.extend(
            entry.queued[..ahead]
                .iter()
                .filter(|(_, m)| m.conflicts(mode) && !holds.is_some_and(|h| h.conflicts(*m)))
                .map(|(o, _)| *o),
        );
        if !blockers.is_empty() {
            return Some(blockers);
        }
        entry.queued.retain(|(o, _)| *o != owner);
        match entry.holders.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, held)) if *held < mode => {
                self.taken.push((row.clone(), Some(*held)));
                *held = mode;
            }
            Some(_) => {}
            None => {
                entry.holders.push((owner, mode));
                self.taken.push((row.clone(), None));
            }
        }
        None
    }

    /// Takes the lock of row `key` of table `table` in `mode` if that needs no wait;
    /// `false` (nothing taken) if another owner holds it in a conflicting mode.
    pub(crate) fn try_lock(&mut self, table: u64, key: &[u8], mode: LockMode) -> bool {
        let row = (table, key.to_vec());
        let locks = Arc::clone(&self.locks);
        let mut st = locks.state.lock();
        self.take_if_free(&mut st, &row, mode).is_none()
    }

    /// Releases every lock held, waking their waiters.
    pub(crate) fn release(&mut self) {
        self.release_to(0);
    }

    /// Where the locks held are now, for [`HeldLocks::release_to`].
    pub(crate) fn mark(&self) -> usize {
        self.taken.len()
    }

    /// Gives back every lock taken since `mark` and weakens each lock strengthened
    /// since to its mode then, waking their waiters.
    pub(crate) fn release_to(&mut self, mark: usize) {
        if self.taken.len() <= mark {
            return;
        }
        let mut st = self.locks.state.lock();
        for (row, before) in self.taken.drain(mark..).rev() {
            let Some(entry) = st.held.get_mut(&row) else {
                continue;
            };
            match before {
                Some(mode) => {
                    if let Some((_, held)) =
                        entry.holders.iter_mut().find(|(o, _)| *o == self.owner)
                    {
                        *held = mode;
                    }
                }
                None => entry.holders.retain(|(o, _)| *o != self.owner),
            }
            entry.released.notify_waiters();
            if entry.holders.is_empty() && entry.queued.is_empty() {
                st.held.remove(&row);
            }
        }
    }
}

impl Drop for HeldLocks {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const X: LockMode = LockMode::Update;
    const W: WaitPolicy = WaitPolicy::Wait;

    #[test]
    fn relation_modes_conflict_as_postgresql_s_do() {
        use RelationMode::*;
        let modes = [AccessShare, RowExclusive, Share, AccessExclusive];
        // PostgreSQL's table of conflicting lock modes, for these four; but for two
        // SHAREs, which PostgreSQL lets pass: here two CREATE INDEX never meet at a
        // table's lock, since DDL holds the catalog's first, one statement at a time.
        let conflicts = |a: RelationMode, b: RelationMode| {
            matches!(
                (a, b),
                (AccessExclusive, _)
                    | (_, AccessExclusive)
                    | (RowExclusive, Share)
                    | (Share, RowExclusive)
                    | (Share, Share)
            )
        };
        for a in modes {
            for b in modes {
                assert_eq!(
                    a.held_as().conflicts(b.held_as()),
                    conflicts(a, b),
                    "{a:?} and {b:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_second_owner_waits_until_the_first_releases() {
        let locks = Arc::new(RowLocks::default());
        let mut a = locks.owner();
        let mut b = locks.owner();
        a.lock(1, b"k", X, W, "t").await.unwrap();
        a.lock(1, b"k", X, W, "t").await.unwrap();
        let waiter = tokio::spawn(async move {
            b.lock(1, b"k", X, W, "t").await.unwrap();
            b
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "b waits while a holds the row");
        a.lock(2, b"k", X, W, "t").await.unwrap();
        drop(a);
        let b = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("b gets the row once a is gone")
            .unwrap();
        assert_eq!(b.taken, [((1, b"k".to_vec()), None)]);
        assert!(locks.state.lock().held[&(1, b"k".to_vec())].holders == [(b.owner, X)]);
        assert!(locks.state.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn the_wait_that_closes_a_cycle_is_a_deadlock() {
        let locks = Arc::new(RowLocks::default());
        let mut a = locks.owner();
        let mut b = locks.owner();
        a.lock(1, b"x", X, W, "t").await.unwrap();
        b.lock(1, b"y", X, W, "t").await.unwrap();
        let a_waits = tokio::spawn(async move {
            let r = a.lock(1, b"y", X, W, "t").await;
            (a, r)
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = tokio::time::timeout(Duration::from_secs(5), b.lock(1, b"x", X, W, "t"))
            .await
            .expect("a deadlock is found, not waited out")
            .unwrap_err();
        assert_eq!(e.sqlstate(), "40P01");
        // b rolls back: a gets its row.
        drop(b);
        let (_a, r) = tokio::time::timeout(Duration::from_secs(5), a_waits)
            .await
            .unwrap()
            .unwrap();
        r.unwrap();
    }

    #[tokio::test]
    async fn a_cancelled_wait_leaves_no_edge_behind() {
        let locks = Arc::new(RowLocks::default());
        let mut a = locks.owner();
        let mut b = locks.owner();
        a.lock(1, b"x", X, W, "t").await.unwrap();
        let gave_up =
            tokio::time::timeout(Duration::from_millis(20), b.lock(1, b"x", X, W, "t")).await;
        assert!(gave_up.is_err());
        assert!(locks.state.lock().waiting.is_empty());
        // With no stale edge, a may wait for b without a false deadlock.
        b.lock(1, b"y", X, W, "t").await.unwrap();
        let a_waits = tokio::spawn(async move { a.lock(1, b"y", X, W, "t").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(b);
        tokio::time::timeout(Duration::from_secs(5), a_waits)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }

    #[test]
    fn the_modes_conflict_as_in_postgresql() {
        use LockMode::*;
        let modes = [KeyShare, Share, NoKeyUpdate, Update];
        // PostgreSQL's table of conflicting row-level locks, row by row.
        let expected = [
            [false, false, false, true],
            [false, false, true, true],
            [false, true, true, true],
            [true, true, true, true],
        ];
        for (i, a) in modes.iter().enumerate() {
            for (j, b) in modes.iter().enumerate() {
                assert_eq!(a.conflicts(*b), expected[i][j], "{a:?} against {b:?}");
            }
        }
    }

    #[tokio::test]
    async fn shared_modes_coexist_and_an_update_waits_for_them_all() {
        let locks = Arc::new(RowLocks::default());
        let (mut a, mut b, mut c) = (locks.owner(), locks.owner(), locks.owner());
        assert!(a.lock(1, b"r", LockMode::Share, W, "t").await.unwrap());
        assert!(b.lock(1, b"r", LockMode::KeyShare, W, "t").await.unwrap());
        let e = c
            .lock(1, b"r", LockMode::NoKeyUpdate, WaitPolicy::NoWait, "t")
            .await
            .unwrap_err();
        assert_eq!(e.sqlstate(), "55P03");
        assert!(e.to_string().contains("relation \"t\""), "{e}");
        let skipped = c
            .lock(1, b"r", LockMode::Update, WaitPolicy::SkipLocked, "t")
            .await
            .unwrap();
        assert!(!skipped, "SKIP LOCKED gives the row up");
        assert!(c.taken.is_empty());
        let waiter = tokio::spawn(async move {
            c.lock(1, b"r", LockMode::NoKeyUpdate, W, "t")
                .await
                .unwrap();
            c
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "NO KEY UPDATE waits for SHARE");
        drop(a);
        // KEY SHARE does not conflict with NO KEY UPDATE.
        let c = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("c gets the row once the share lock is gone")
            .unwrap();
        let holders = locks.state.lock().held[&(1, b"r".to_vec())].holders.clone();
        assert_eq!(
            holders,
            [
                (b.owner, LockMode::KeyShare),
                (c.owner, LockMode::NoKeyUpdate)
            ]
        );
    }

    #[tokio::test]
    async fn an_owner_strengthens_its_own_lock_once_others_let_go() {
        let locks = Arc::new(RowLocks::default());
        let (mut a, mut b) = (locks.owner(), locks.owner());
        a.lock(1, b"r", LockMode::Share, W, "t").await.unwrap();
        b.lock(1, b"r", LockMode::Share, W, "t").await.unwrap();
        let upgrade = tokio::spawn(async move {
            a.lock(1, b"r", X, W, "t").await.unwrap();
            a
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !upgrade.is_finished(),
            "the upgrade waits for the other share"
        );
        // b's own upgrade would close a cycle.
        let e = b.lock(1, b"r", X, W, "t").await.unwrap_err();
        assert_eq!(e.sqlstate(), "40P01");
        drop(b);
        let mut a = tokio::time::timeout(Duration::from_secs(5), upgrade)
            .await
            .unwrap()
            .unwrap();
        // A weaker request of a held row is already satisfied.
        a.lock(1, b"r", LockMode::KeyShare, WaitPolicy::NoWait, "t")
            .await
            .unwrap();
        // Taken, then strengthened; the weaker request changed nothing.
        assert_eq!(a.taken.len(), 2);
        assert_eq!(
            locks.state.lock().held[&(1, b"r".to_vec())].holders,
            [(a.owner, X)]
        );
    }

    #[tokio::test]
    async fn a_tables_lock_is_granted_in_turn_and_a_row_lock_is_not() {
        let locks = Arc::new(RowLocks::default());
        let (mut writer, mut ddl, mut late) = (locks.owner(), locks.owner(), locks.owner());
        let share = LockMode::KeyShare;
        for id in [table_lock(7), 7] {
            writer.lock(id, b"", share, W, "t").await.unwrap();
            let ddl_waits = tokio::spawn(async move {
                ddl.lock(id, b"", X, W, "t").await.unwrap();
                ddl
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
            let shared = late.lock(id, b"", share, WaitPolicy::NoWait, "t").await;
            if id == 7 {
                // A row's shared lock is granted beside its other holders.
                assert!(shared.unwrap());
                late.release();
            } else {
                assert_eq!(shared.unwrap_err().sqlstate(), "55P03", "behind the DDL");
                // The holder itself is not held up by the queue.
                writer
                    .lock(id, b"", share, WaitPolicy::NoWait, "t")
                    .await
                    .unwrap();
            }
            writer.release();
            ddl = tokio::time::timeout(Duration::from_secs(5), ddl_waits)
                .await
                .expect("the DDL gets the lock once the writer is gone")
                .unwrap();
            ddl.release();
            assert!(locks.state.lock().held.is_empty(), "nothing left behind");
        }
    }

    #[tokio::test]
    async fn a_queued_request_that_gives_up_lets_those_behind_it_go() {
        let locks = Arc::new(RowLocks::default());
        let (mut writer, mut ddl, mut late) = (locks.owner(), locks.owner(), locks.owner());
        let id = table_lock(7);
        writer
            .lock(id, b"", LockMode::KeyShare, W, "t")
            .await
            .unwrap();
        let ddl_waits = tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(200), ddl.lock(id, b"", X, W, "t")).await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let late_waits = tokio::spawn(async move {
            late.lock(id, b"", LockMode::KeyShare, W, "t")
                .await
                .unwrap();
            late
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!late_waits.is_finished(), "queued behind the DDL");
        assert!(ddl_waits.await.unwrap().is_err(), "the DDL gave up");
        let late = tokio::time::timeout(Duration::from_secs(5), late_waits)
            .await
            .expect("woken when the DDL left the queue")
            .unwrap();
        assert!(locks.state.lock().held[&(id, Vec::new())].queued.is_empty());
        drop((writer, late));
        assert!(locks.state.lock().held.is_empty());
    }

    #[tokio::test]
    async fn release_to_a_mark_gives_back_what_was_taken_after_it() {
        let locks = Arc::new(RowLocks::default());
        let (mut a, mut b) = (locks.owner(), locks.owner());
        a.lock(1, b"r", LockMode::KeyShare, W, "t").await.unwrap();
        let mark = a.mark();
        a.lock(1, b"r", X, W, "t").await.unwrap();
        a.lock(1, b"s", X, W, "t").await.unwrap();
        a.release_to(mark);
        // The row taken after the mark is free; the other is back to KEY SHARE, which
        // NO KEY UPDATE does not conflict with.
        b.lock(1, b"s", X, WaitPolicy::NoWait, "t").await.unwrap();
        b.lock(1, b"r", LockMode::NoKeyUpdate, WaitPolicy::NoWait, "t")
            .await
            .unwrap();
        let e = b
            .lock(1, b"r", X, WaitPolicy::NoWait, "t")
            .await
            .unwrap_err();
        assert_eq!(e.sqlstate(), "55P03");
        assert_eq!(
            locks.state.lock().held[&(1, b"r".to_vec())].holders,
            [
                (a.owner, LockMode::KeyShare),
                (b.owner, LockMode::NoKeyUpdate)
            ]
        );
    }
}
