//! Row locks of writes by primary key: a statement that updates or deletes one row by its
//! key takes the row's lock first and keeps it until its transaction ends. A second
//! writer of the row waits for the first to commit or roll back, and a read-committed
//! one then reads what was committed and writes over it, as in PostgreSQL, instead of
//! losing the optimistic validation at commit (40001) and redoing the whole transaction.
//! Validation still guards every write: the locks only make the usual case wait rather
//! than fail. A wait that would close a cycle of waits is a deadlock: the transaction
//! that would close it fails with 40P01.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::{Result, SqlError, state};

/// A row: its table's id and its key.
type RowId = (u64, Vec<u8>);

struct Held {
    owner: u64,
    released: Arc<Notify>,
}

#[derive(Default)]
struct State {
    held: HashMap<RowId, Held>,
    /// Who waits for whom: owner → the owner of the lock it waits for.
    waiting: HashMap<u64, u64>,
}

impl State {
    /// Whether `owner` waiting for `holder` would close a cycle of waits.
    fn closes_cycle(&self, owner: u64, holder: u64) -> bool {
        let mut at = holder;
        // Each owner waits for at most one other, so a chain is no longer than them all.
        for _ in 0..=self.waiting.len() {
            if at == owner {
                return true;
            }
            match self.waiting.get(&at) {
                Some(next) => at = *next,
                None => return false,
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
    /// A new owner of locks (a transaction, or one statement outside any).
    pub(crate) fn owner(self: &Arc<Self>) -> HeldLocks {
        HeldLocks {
            locks: Arc::clone(self),
            owner: self.next_owner.fetch_add(1, Ordering::Relaxed),
            rows: Vec::new(),
        }
    }
}

/// The locks one owner holds, released when it is dropped.
pub(crate) struct HeldLocks {
    locks: Arc<RowLocks>,
    owner: u64,
    rows: Vec<RowId>,
}

/// Takes a waiter out of the wait graph however its wait ends (a cancelled statement
/// included).
struct Waiting<'a> {
    locks: &'a RowLocks,
    owner: u64,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.locks.state.lock().waiting.remove(&self.owner);
    }
}

impl HeldLocks {
    /// Takes the lock of row `key` of table `table`, waiting while another owner holds
    /// it; at once if this owner holds it already.
    pub(crate) async fn lock(&mut self, table: u64, key: &[u8]) -> Result<()> {
        let row = (table, key.to_vec());
        loop {
            let released = {
                let mut st = self.locks.state.lock();
                match st.held.get(&row) {
                    Some(h) if h.owner == self.owner => return Ok(()),
                    None => {
                        st.held.insert(
                            row.clone(),
                            Held {
                                owner: self.owner,
                                released: Arc::new(Notify::new()),
                            },
                        );
                        self.rows.push(row);
                        return Ok(());
                    }
                    Some(h) => {
                        let holder = h.owner;
                        // Created under the state's lock: no release can slip past it.
                        let released = Arc::clone(&h.released).notified_owned();
                        if st.closes_cycle(self.owner, holder) {
                            return Err(SqlError::user(
                                state::DEADLOCK_DETECTED,
                                "deadlock detected: transactions wait for each other's rows",
                            ));
                        }
                        st.waiting.insert(self.owner, holder);
                        released
                    }
                }
            };
            let _waiting = Waiting {
                locks: &self.locks,
                owner: self.owner,
            };
            released.await;
        }
    }

    /// Releases every lock held, waking their waiters.
    pub(crate) fn release(&mut self) {
        if self.rows.is_empty() {
            return;
        }
        let mut st = self.locks.state.lock();
        for row in self.rows.drain(..) {
            if st.held.get(&row).is_some_and(|h| h.owner == self.owner)
                && let Some(h) = st.held.remove(&row)
            {
                h.released.notify_waiters();
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

    #[tokio::test]
    async fn a_second_owner_waits_until_the_first_releases() {
        let locks = Arc::new(RowLocks::default());
        let mut a = locks.owner();
        let mut b = locks.owner();
        a.lock(1, b"k").await.unwrap();
        a.lock(1, b"k").await.unwrap();
        let waiter = tokio::spawn(async move {
            b.lock(1, b"k").await.unwrap();
            b
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "b waits while a holds the row");
        a.lock(2, b"k").await.unwrap();
        drop(a);
        let b = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("b gets the row once a is gone")
            .unwrap();
        assert_eq!(b.rows, [(1, b"k".to_vec())]);
        assert!(locks.state.lock().waiting.is_empty());
    }

    #[tokio::test]
    async fn the_wait_that_closes_a_cycle_is_a_deadlock() {
        let locks = Arc::new(RowLocks::default());
        let mut a = locks.owner();
        let mut b = locks.owner();
        a.lock(1, b"x").await.unwrap();
        b.lock(1, b"y").await.unwrap();
        let a_waits = tokio::spawn(async move {
            let r = a.lock(1, b"y").await;
            (a, r)
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = tokio::time::timeout(Duration::from_secs(5), b.lock(1, b"x"))
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
        a.lock(1, b"x").await.unwrap();
        let gave_up = tokio::time::timeout(Duration::from_millis(20), b.lock(1, b"x")).await;
        assert!(gave_up.is_err());
        assert!(locks.state.lock().waiting.is_empty());
        // With no stale edge, a may wait for b without a false deadlock.
        b.lock(1, b"y").await.unwrap();
        let a_waits = tokio::spawn(async move { a.lock(1, b"y").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(b);
        tokio::time::timeout(Duration::from_secs(5), a_waits)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}
