//! Model-based test of transactions: random interleaved histories of up to three
//! transactions (each snapshot-isolated, serializable or read committed, whose reads move
//! to a new snapshot at each refresh) and plain writes run against the engine and against
//! a small reference model of optimistic concurrency control, with savepoints rolled back
//! to and released at random. Every read, scan and commit
//! outcome must agree. Since the model commits a transaction only if nothing it must not
//! overlook changed after the snapshot it was read or written at, agreement means: no
//! lost update, each snapshot-isolated transaction reads one snapshot, and serializable
//! ones see no write skew or phantom.

use std::collections::BTreeMap;
use std::ops::Bound;

use pmdb_engine::{Db, DbError, DbOptions, Isolation, Savepoint, Subtable, Transaction};
use proptest::prelude::*;

const SLOTS: usize = 3;
const KEYS: u8 = 4;

#[derive(Clone, Debug)]
enum Op {
    Begin(usize, Isolation),
    /// Moves a read-committed transaction's reads to a new snapshot.
    Refresh(usize),
    Get(usize, u8),
    Put(usize, u8, u8),
    Delete(usize, u8),
    Scan(usize, u8, u8),
    Commit(usize),
    Rollback(usize),
    Savepoint(usize),
    /// Rolls back to the transaction's savepoint of this index (oldest first), if open.
    RollbackTo(usize, usize),
    /// Releases that savepoint and every later one.
    Release(usize, usize),
    /// A write outside any transaction.
    Plain(u8, Option<u8>),
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let key = 0..KEYS;
    prop_oneof![
        2 => (slot.clone(), 0..3u8).prop_map(|(s, i)| Op::Begin(s, [
            Isolation::Snapshot,
            Isolation::Serializable,
            Isolation::ReadCommitted,
        ][usize::from(i)])),
        1 => slot.clone().prop_map(Op::Refresh),
        3 => (slot.clone(), key.clone()).prop_map(|(s, k)| Op::Get(s, k)),
        3 => (slot.clone(), key.clone(), any::<u8>()).prop_map(|(s, k, v)| Op::Put(s, k, v)),
        1 => (slot.clone(), key.clone()).prop_map(|(s, k)| Op::Delete(s, k)),
        1 => (slot.clone(), key.clone(), key.clone()).prop_map(|(s, a, b)| Op::Scan(s, a.min(b), a.max(b))),
        2 => slot.clone().prop_map(Op::Commit),
        1 => slot.clone().prop_map(Op::Rollback),
        2 => slot.clone().prop_map(Op::Savepoint),
        2 => (slot.clone(), 0..3usize).prop_map(|(s, i)| Op::RollbackTo(s, i)),
        1 => (slot.clone(), 0..3usize).prop_map(|(s, i)| Op::Release(s, i)),
        1 => (key, proptest::option::of(any::<u8>())).prop_map(|(k, v)| Op::Plain(k, v)),
    ]
}

fn key(k: u8) -> Vec<u8> {
    vec![b'k', b'0' + k]
}

/// A key's committed versions, oldest first: (commit number, value or `None` if deleted).
type Versions = Vec<(u64, Option<Vec<u8>>)>;

/// The reference: committed versions by commit number, and open transactions.
#[derive(Default)]
struct Model {
    commits: u64,
    versions: BTreeMap<Vec<u8>, Versions>,
    open: [Option<ModelTxn>; SLOTS],
}

struct ModelTxn {
    snapshot: u64,
    serializable: bool,
    read_committed: bool,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// The snapshot each written key was first written at.
    written_at: BTreeMap<Vec<u8>, u64>,
    reads: Vec<Vec<u8>>,
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Per open savepoint, the writes as they were at it. Reads made after one stay
    /// validated when it is rolled back to.
    savepoints: Vec<Written>,
}

/// A transaction's writes and the snapshot each key was first written at.
type Written = (BTreeMap<Vec<u8>, Option<Vec<u8>>>, BTreeMap<Vec<u8>, u64>);

impl ModelTxn {
    fn write(&mut self, k: Vec<u8>, v: Option<Vec<u8>>) {
        self.written_at.entry(k.clone()).or_insert(self.snapshot);
        self.writes.insert(k, v);
    }
}

impl Model {
    fn at(&self, k: &[u8], snapshot: u64) -> Option<Vec<u8>> {
        self.versions
            .get(k)?
            .iter()
            .rev()
            .find(|(c, _)| *c <= snapshot)
            .and_then(|(_, v)| v.clone())
    }

    fn changed_after(&self, k: &[u8], snapshot: u64) -> bool {
        self.versions
            .get(k)
            .is_some_and(|vs| vs.last().is_some_and(|(c, _)| *c > snapshot))
    }

    fn apply(&mut self, writes: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>) {
        self.commits += 1;
        for (k, v) in writes {
            self.versions.entry(k).or_default().push((self.commits, v));
        }
    }

    fn get(&mut self, s: usize, k: &[u8]) -> Option<Vec<u8>> {
        let snapshot = self.open[s].as_ref().unwrap().snapshot;
        let value = self.at(k, snapshot);
        let t = self.open[s].as_mut().unwrap();
        if let Some(own) = t.writes.get(k) {
            return own.clone();
        }
        if t.serializable {
            t.reads.push(k.to_vec());
        }
        value
    }

    fn scan(&mut self, s: usize, lo: &[u8], hi: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let snapshot = self.open[s].as_ref().unwrap().snapshot;
        let mut seen: BTreeMap<Vec<u8>, Option<Vec<u8>>> = self
            .versions
            .range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)))
            .map(|(k, _)| (k.clone(), self.at(k, snapshot)))
            .collect();
        let t = self.open[s].as_mut().unwrap();
        for (k, v) in t
            .writes
            .range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)))
        {
            seen.insert(k.clone(), v.clone());
        }
        if t.serializable {
            t.ranges.push((lo.to_vec(), hi.to_vec()));
        }
        seen.into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }

    /// Whether the commit succeeds (and applies it if so).
    fn commit(&mut self, s: usize) -> bool {
        let t = self.open[s].take().unwrap();
        if t.writes.is_empty() {
            return true;
        }
        let changed = |k: &[u8]| self.changed_after(k, t.snapshot);
        let conflict = t
            .written_at
            .iter()
            .any(|(k, at)| self.changed_after(k, *at))
            || t.reads.iter().any(|k| changed(k))
            || t.ranges.iter().any(|(lo, hi)| {
                self.versions
                    .range::<[u8], _>((
                        Bound::Included(lo.as_slice()),
                        Bound::Excluded(hi.as_slice()),
                    ))
                    .any(|(k, _)| changed(k))
            });
        if !conflict {
            self.apply(t.writes);
        }
        !conflict
    }
}

fn entries(
    scan: impl Iterator<Item = pmdb_engine::Result<pmdb_engine::Entry>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    scan.map(|e| e.unwrap().into_parts()).collect()
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t: Subtable = db.subtable("t").unwrap();
    let mut model = Model::default();
    let mut open: [Option<Transaction>; SLOTS] = Default::default();
    let mut savepoints: [Vec<Savepoint>; SLOTS] = Default::default();
    for (i, op) in ops.iter().enumerate() {
        let active = |s: usize| open[s].is_some();
        match *op {
            Op::Begin(s, isolation) => {
                open[s] = Some(db.transaction_with(isolation));
                model.open[s] = Some(ModelTxn {
                    snapshot: model.commits,
                    serializable: isolation == Isolation::Serializable,
                    read_committed: isolation == Isolation::ReadCommitted,
                    writes: BTreeMap::new(),
                    written_at: BTreeMap::new(),
                    reads: Vec::new(),
                    ranges: Vec::new(),
                    savepoints: Vec::new(),
                });
                savepoints[s].clear();
            }
            Op::Get(s, k) if active(s) => {
                let got = open[s].as_mut().unwrap().get(&t, key(k)).unwrap();
                prop_assert_eq!(got, model.get(s, &key(k)), "op {}: {:?}", i, op);
            }
            Op::Put(s, k, v) if active(s) => {
                open[s].as_mut().unwrap().put(&t, key(k), [v]).unwrap();
                model.open[s].as_mut().unwrap().write(key(k), Some(vec![v]));
            }
            Op::Delete(s, k) if active(s) => {
                open[s].as_mut().unwrap().delete(&t, key(k)).unwrap();
                model.open[s].as_mut().unwrap().write(key(k), None);
            }
            Op::Refresh(s) if active(s) => {
                open[s].as_mut().unwrap().refresh();
                let commits = model.commits;
                let m = model.open[s].as_mut().unwrap();
                if m.read_committed {
                    m.snapshot = commits;
                }
            }
            Op::Scan(s, lo, hi) if active(s) => {
                let tx = open[s].as_mut().unwrap();
                let got = entries(tx.scan(&t, key(lo)..key(hi)).unwrap());
                prop_assert_eq!(got, model.scan(s, &key(lo), &key(hi)), "op {}: {:?}", i, op);
            }
            Op::Commit(s) if active(s) => {
                let outcome = open[s].take().unwrap().commit();
                let expected = model.commit(s);
                match outcome {
                    Ok(()) => {
                        prop_assert!(expected, "op {}: committed, the model says conflict", i)
                    }
                    Err(DbError::Conflict { .. }) => {
                        prop_assert!(!expected, "op {}: conflict, the model says commit", i)
                    }
                    Err(e) => panic!("op {i}: {e}"),
                }
            }
            Op::Rollback(s) if active(s) => {
                open[s].take().unwrap().rollback();
                model.open[s] = None;
            }
            Op::Savepoint(s) if active(s) => {
                savepoints[s].push(open[s].as_mut().unwrap().savepoint());
                let m = model.open[s].as_mut().unwrap();
                m.savepoints.push((m.writes.clone(), m.written_at.clone()));
            }
            Op::RollbackTo(s, at) if active(s) && at < savepoints[s].len() => {
                let tx = open[s].as_mut().unwrap();
                tx.rollback_to(&savepoints[s][at]).unwrap();
                savepoints[s].truncate(at + 1);
                let m = model.open[s].as_mut().unwrap();
                (m.writes, m.written_at) = m.savepoints[at].clone();
                m.savepoints.truncate(at + 1);
            }
            Op::Release(s, at) if active(s) && at < savepoints[s].len() => {
                let released = savepoints[s].drain(at..).next().unwrap();
                open[s].as_mut().unwrap().release(released).unwrap();
                model.open[s].as_mut().unwrap().savepoints.truncate(at);
            }
            Op::Plain(k, v) => {
                match v {
                    Some(v) => t.put(key(k), [v]).unwrap(),
                    None => t.delete(key(k)).unwrap(),
                }
                model.apply([(key(k), v.map(|v| vec![v]))]);
            }
            _ => {}
        }
    }
    let now = model.commits;
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model
        .versions
        .keys()
        .filter_map(|k| model.at(k, now).map(|v| (k.clone(), v)))
        .collect();
    prop_assert_eq!(entries(t.scan::<&[u8]>(..)), expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn histories_agree_with_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(&ops)?;
    }
}
