//! Optimistic transactions: read-your-writes in gets and scans, atomic commit, rollback,
//! conflicts under snapshot isolation and serializable, validation against commits of
//! the same group and of the group before, and concurrent increments that lose nothing.

use std::sync::Arc;

use pmdb_engine::{Db, DbError, DbOptions, Isolation, Subtable, WriteBatch};

fn open() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    (dir, db)
}

fn keys_of(scan: impl Iterator<Item = pmdb_engine::Result<pmdb_engine::Entry>>) -> Vec<String> {
    scan.map(|e| {
        let e = e.unwrap();
        format!(
            "{}={}",
            String::from_utf8_lossy(e.key()),
            String::from_utf8_lossy(e.value())
        )
    })
    .collect()
}

fn is_conflict(r: &pmdb_engine::Result<()>) -> bool {
    matches!(r, Err(DbError::Conflict { .. }))
}

#[test]
fn reads_see_own_writes_and_commit_applies_them_at_once() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let u = db.subtable("u").unwrap();
    for k in ["a", "c", "e"] {
        t.put(k, "old").unwrap();
    }
    let mut tx = db.transaction();
    tx.put(&t, "b", "new").unwrap();
    tx.put(&t, "c", "new").unwrap();
    tx.delete(&t, "e").unwrap();
    tx.put(&u, "x", "1").unwrap();
    assert_eq!(tx.get(&t, "c").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(tx.get(&t, "e").unwrap(), None);
    assert_eq!(tx.get(&t, "a").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(
        keys_of(tx.scan::<&str>(&t, ..).unwrap()),
        ["a=old", "b=new", "c=new"]
    );
    assert_eq!(
        keys_of(tx.scan_rev::<&str>(&t, "b".."e").unwrap()),
        ["c=new", "b=new"]
    );
    // Nothing is visible outside before the commit.
    assert_eq!(t.get_owned("b").unwrap(), None);
    assert_eq!(u.get_owned("x").unwrap(), None);
    let before = db.last_seq();
    tx.commit().unwrap();
    assert_eq!(db.last_seq(), before + 4, "one batch of four writes");
    assert_eq!(keys_of(t.scan::<&str>(..)), ["a=old", "b=new", "c=new"]);
    assert_eq!(u.get_owned("x").unwrap().unwrap(), b"1");
}

#[test]
fn rollback_and_drop_discard_everything() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let mut tx = db.transaction();
    tx.put(&t, "a", "1").unwrap();
    tx.rollback();
    {
        let mut tx = db.transaction();
        tx.put(&t, "b", "1").unwrap();
    }
    assert_eq!(t.scan::<&str>(..).count(), 0);
    assert_eq!(db.last_seq(), 0);
    assert_eq!(db.oldest_snapshot(), None, "no snapshot left registered");
}

#[test]
fn a_transaction_reads_one_snapshot() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    t.put("a", "1").unwrap();
    let mut tx = db.transaction();
    assert_eq!(tx.get(&t, "a").unwrap().unwrap(), b"1");
    t.put("a", "2").unwrap();
    t.put("b", "2").unwrap();
    assert_eq!(tx.get(&t, "a").unwrap().unwrap(), b"1");
    assert_eq!(tx.get(&t, "b").unwrap(), None);
    assert_eq!(keys_of(tx.scan::<&str>(&t, ..).unwrap()), ["a=1"]);
    // Read-only: it commits whatever happened since.
    tx.commit().unwrap();
}

#[test]
fn the_second_of_two_writers_of_a_key_conflicts_and_applies_nothing() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    t.put("x", "0").unwrap();
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    let read = |tx: &mut pmdb_engine::Transaction| {
        String::from_utf8(tx.get(&t, "x").unwrap().unwrap())
            .unwrap()
            .parse::<u32>()
            .unwrap()
    };
    let v1 = read(&mut t1);
    let v2 = read(&mut t2);
    t1.put(&t, "x", (v1 + 1).to_string()).unwrap();
    t2.put(&t, "x", (v2 + 1).to_string()).unwrap();
    t2.put(&t, "other", "t2").unwrap();
    t1.commit().unwrap();
    let err = t2.commit().unwrap_err();
    assert!(matches!(err, DbError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains("key x of subtable \"t\""), "{err}");
    assert_eq!(t.get_owned("x").unwrap().unwrap(), b"1");
    assert_eq!(t.get_owned("other").unwrap(), None, "nothing of t2 applied");
    // A delete after the snapshot conflicts too.
    let mut t3 = db.transaction();
    t3.put(&t, "x", "3").unwrap();
    t.delete("x").unwrap();
    assert!(is_conflict(&t3.commit()));
}

/// Two on-call doctors: each transaction checks that the other is on call, then goes off.
/// Snapshot isolation lets both commit (write skew); serializable refuses the second.
fn write_skew(isolation: Isolation) -> (pmdb_engine::Result<()>, pmdb_engine::Result<()>) {
    let (_dir, db) = open();
    let t = db.subtable("doctors").unwrap();
    t.put("alice", "on").unwrap();
    t.put("bob", "on").unwrap();
    let mut a = db.transaction_with(isolation);
    let mut b = db.transaction_with(isolation);
    assert_eq!(a.get(&t, "bob").unwrap().unwrap(), b"on");
    assert_eq!(b.get(&t, "alice").unwrap().unwrap(), b"on");
    a.put(&t, "alice", "off").unwrap();
    b.put(&t, "bob", "off").unwrap();
    (a.commit(), b.commit())
}

#[test]
fn write_skew_is_allowed_under_snapshot_isolation_and_refused_when_serializable() {
    let (a, b) = write_skew(Isolation::Snapshot);
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    let (a, b) = write_skew(Isolation::Serializable);
    assert!(a.is_ok(), "{a:?}");
    assert!(is_conflict(&b), "{b:?}");
}

#[test]
fn a_row_appearing_in_a_scanned_range_conflicts_when_serializable() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let log = db.subtable("log").unwrap();
    for k in ["a1", "a2", "b1"] {
        t.put(k, "v").unwrap();
    }
    let scan_a_and_log = |isolation| {
        let mut tx = db.transaction_with(isolation);
        let n = tx.scan(&t, "a".as_bytes().."b".as_bytes()).unwrap().count();
        tx.put(&log, "count", n.to_string()).unwrap();
        tx
    };
    // A change outside the range does not conflict.
    let tx = scan_a_and_log(Isolation::Serializable);
    t.put("b2", "v").unwrap();
    tx.commit().unwrap();
    // A key appearing in it does, and so does one leaving it.
    let tx = scan_a_and_log(Isolation::Serializable);
    t.put("a3", "v").unwrap();
    assert!(is_conflict(&tx.commit()));
    let tx = scan_a_and_log(Isolation::Serializable);
    t.delete("a1").unwrap();
    assert!(is_conflict(&tx.commit()));
    // Snapshot isolation does not look at the range.
    let tx = scan_a_and_log(Isolation::Snapshot);
    t.put("a4", "v").unwrap();
    tx.commit().unwrap();
}

#[test]
fn transactions_in_one_commit_group_are_validated_against_each_other() {
    // Many threads increment one counter at once, so groups hold several transactions on
    // the same key: each commit that succeeded must be counted, none twice.
    let (_dir, db) = open();
    let db = Arc::new(db);
    let t = db.subtable("t").unwrap();
    t.put("n", 0u64.to_be_bytes()).unwrap();
    let threads = 8;
    let per_thread = 200;
    let conflicts: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (db, t) = (Arc::clone(&db), t.clone());
                s.spawn(move || increment(&db, &t, per_thread))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let n = u64::from_be_bytes(t.get_owned("n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(
        n,
        (threads * per_thread) as u64,
        "{conflicts} conflicts retried"
    );
}

/// Increments counter `n` `times` times, retrying on conflict; returns the conflicts.
fn increment(db: &Db, t: &Subtable, times: usize) -> usize {
    let mut conflicts = 0;
    for _ in 0..times {
        loop {
            let mut tx = db.transaction();
            let v = tx.get(t, "n").unwrap().unwrap();
            let n = u64::from_be_bytes(v.try_into().unwrap());
            tx.put(t, "n", (n + 1).to_be_bytes()).unwrap();
            match tx.commit() {
                Ok(()) => break,
                Err(DbError::Conflict { .. }) => conflicts += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    conflicts
}

#[test]
fn validation_sees_keys_in_frozen_memtables_and_levels() {
    let dir = tempfile::tempdir().unwrap();
    let options = DbOptions {
        memtable_size: 32 << 10,
        ..DbOptions::small().manual_tiering()
    };
    let db = Db::open(dir.path(), options).unwrap();
    let t = db.subtable("t").unwrap();
    let mut tx = db.transaction();
    tx.put(&t, "k000", "tx").unwrap();
    // Change k000 after the snapshot, then push it out of the active memtable and down to
    // the SST levels.
    t.put("k000", "late").unwrap();
    for i in 1..400u32 {
        t.put(format!("k{i:03}"), vec![b'v'; 300]).unwrap();
    }
    db.compact().unwrap();
    assert!(db.subtable_stats()[0].sst_bytes() > 0, "compacted to SSTs");
    assert!(is_conflict(&tx.commit()));
    // Untouched keys down there commit fine.
    let mut tx = db.transaction();
    tx.put(&t, "k001", "tx").unwrap();
    tx.commit().unwrap();
    assert_eq!(t.get_owned("k001").unwrap().unwrap(), b"tx");
}

#[test]
fn bad_writes_fail_early_and_foreign_or_dropped_subtables_are_refused() {
    let (_dir, db) = open();
    let (_dir2, other) = open();
    let t = db.subtable("t").unwrap();
    let foreign = other.subtable("t").unwrap();
    let mut tx = db.transaction();
    let too_long = vec![b'k'; db.options().max_key_size + 1];
    assert!(matches!(
        tx.put(&t, &too_long, "v"),
        Err(DbError::KeyTooLarge { .. })
    ));
    assert!(matches!(tx.put(&t, "", "v"), Err(DbError::EmptyKey)));
    assert!(matches!(
        tx.put(&foreign, "k", "v"),
        Err(DbError::ForeignSubtable)
    ));
    let gone = db.subtable("gone").unwrap();
    tx.put(&gone, "k", "v").unwrap();
    db.drop_subtable("gone").unwrap();
    let err = tx.commit().unwrap_err();
    assert!(
        matches!(
            err,
            DbError::NoSuchSubtable { .. } | DbError::SubtableDropped { .. }
        ),
        "{err}"
    );
    assert_eq!(t.scan::<&str>(..).count(), 0);
}

#[test]
fn batches_apply_into_a_transaction_and_untracked_writes_are_not_validated() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let stats = db.subtable("stats").unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    let mut batch = WriteBatch::new();
    batch.put(&t, "a1", "x");
    batch.put(&t, "a2", "x");
    batch.delete(&t, "a2");
    a.apply(&batch).unwrap();
    assert_eq!(a.get(&t, "a1").unwrap().unwrap(), b"x");
    assert_eq!(
        a.get(&t, "a2").unwrap(),
        None,
        "the batch's later delete wins"
    );
    let mut scan = a.scan::<&str>(&t, ..).unwrap();
    assert_eq!(scan.next_ref().unwrap().unwrap().key, b"a1");
    assert!(scan.next_ref().is_none());
    a.put_untracked(&stats, "rows", "1").unwrap();
    b.put(&t, "b1", "y").unwrap();
    b.put_untracked(&stats, "rows", "2").unwrap();
    assert_eq!(b.get(&stats, "rows").unwrap(), None, "not seen by reads");
    a.commit().unwrap();
    b.commit().unwrap();
    assert_eq!(
        stats.get_owned("rows").unwrap().unwrap(),
        b"2",
        "the last writer wins"
    );
    assert_eq!(keys_of(t.scan::<&str>(..)), ["a1=x", "b1=y"]);
    let (_dir2, other) = open();
    let mut foreign = WriteBatch::new();
    foreign.put(&other.subtable("t").unwrap(), "k", "v");
    assert!(matches!(
        db.transaction().apply(&foreign),
        Err(DbError::ForeignSubtable)
    ));
}

#[test]
fn a_watched_key_is_validated_under_snapshot_isolation() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let flags = db.subtable("flags").unwrap();
    let write_watching = |changed: bool| {
        let mut tx = db.transaction();
        tx.watch(&flags, "f").unwrap();
        tx.put(&t, "k", "v").unwrap();
        if changed {
            flags.put("f", "set").unwrap();
        }
        tx.commit()
    };
    write_watching(false).unwrap();
    assert!(is_conflict(&write_watching(true)));
}

#[test]
fn a_watched_key_deleted_meanwhile_does_not_fail_the_commit() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let flags = db.subtable("flags").unwrap();
    flags.put("f", "set").unwrap();
    // Two writers saw the flag and clear it; a third, begun after the first cleared
    // it, watches it: none of them conflicts with another.
    let mut first = db.transaction();
    let mut second = db.transaction();
    for tx in [&mut first, &mut second] {
        assert!(tx.get(&flags, "f").unwrap().is_some());
        tx.delete_untracked(&flags, "f").unwrap();
    }
    first.put(&t, "a", "1").unwrap();
    second.put(&t, "b", "2").unwrap();
    first.commit().unwrap();
    let mut third = db.transaction();
    assert!(third.get(&flags, "f").unwrap().is_none());
    third.watch(&flags, "f").unwrap();
    third.put(&t, "c", "3").unwrap();
    second.commit().unwrap();
    third.commit().unwrap();
    // Given a value again meanwhile, the watched key fails the commit.
    let mut fourth = db.transaction();
    fourth.watch(&flags, "f").unwrap();
    fourth.put(&t, "d", "4").unwrap();
    flags.put("f", "set").unwrap();
    assert!(is_conflict(&fourth.commit()));
}

#[test]
fn a_rollback_to_a_savepoint_undoes_later_writes_untracked_ones_included() {
    let (_dir, db) = open();
    let t = db.subtable("t").unwrap();
    let stats = db.subtable("stats").unwrap();
    let mut tx = db.transaction();
    tx.put(&t, "a", "1").unwrap();
    let outer = tx.savepoint();
    tx.put(&t, "a", "2").unwrap();
    tx.put(&t, "b", "2").unwrap();
    let inner = tx.savepoint();
    tx.put_untracked(&stats, "rows", "3").unwrap();
    tx.rollback_to(&outer).unwrap();
    assert_eq!(tx.get(&t, "a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(tx.get(&t, "b").unwrap(), None);
    // The savepoint opened after the one rolled back to is gone; that one stays.
    assert!(matches!(tx.release(inner), Err(DbError::NoSuchSavepoint)));
    tx.put(&t, "c", "3").unwrap();
    tx.rollback_to(&outer).unwrap();
    tx.release(outer).unwrap();
    tx.put(&t, "d", "4").unwrap();
    tx.commit().unwrap();
    assert_eq!(keys_of(t.scan::<&[u8]>(..)), ["a=1", "d=4"]);
    assert!(stats.get("rows").unwrap().is_none());
}
