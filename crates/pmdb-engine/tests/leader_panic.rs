//! A commit leader that panics fails its group and stops commits: every writer gets an
//! error (none waits forever, none sees the panic), reads go on, and the reopened
//! database has every write acknowledged before the panic and takes writes again. A
//! group that is durable but cannot be indexed does the same, and no part of it is ever
//! made visible before the reopen.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbError, DbOptions, LeaderStage, WriteBatch, WriteOptions};

const WRITERS: usize = 4;

fn options(panic_on: Option<LeaderStage>) -> DbOptions {
    DbOptions {
        panic_on_key: panic_on.map(|stage| (b"boom".to_vec(), stage)),
        ..DbOptions::small()
    }
}

#[test]
fn a_leader_panicking_before_its_group_is_durable_fails_its_writers_and_stops_commits() {
    panicking_leader(LeaderStage::Append);
}

/// After the group is durable the leadership is handed on, so the next group may be
/// durable too, waiting to be made visible after the one whose leader panicked.
#[test]
fn a_leader_panicking_while_indexing_fails_its_writers_and_stops_commits() {
    panicking_leader(LeaderStage::Index);
}

fn panicking_leader(stage: LeaderStage) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(Some(stage))).unwrap();
    let t = db.subtable("t").unwrap();
    t.put(b"before", b"kept").unwrap();

    // Writers commit until one of them fails; one writer's tenth write is the key the
    // leader panics on.
    let (done, results) = mpsc::channel();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (t, done) = (t.clone(), done.clone());
        writers.push(thread::spawn(move || {
            let mut acknowledged = Vec::new();
            for i in 0u32.. {
                let key = if w == 0 && i == 10 {
                    b"boom".to_vec()
                } else {
                    format!("w{w}-{i:05}").into_bytes()
                };
                match t.put(&key, b"v") {
                    Ok(()) => acknowledged.push(key),
                    Err(e) => {
                        done.send((acknowledged, e)).unwrap();
                        return;
                    }
                }
            }
        }));
    }
    let mut acknowledged = Vec::new();
    for _ in 0..WRITERS {
        let (keys, err) = results
            .recv_timeout(Duration::from_secs(60))
            .expect("a writer still waits for the panicked leader");
        assert!(matches!(err, DbError::GroupFailed(_)), "{err}");
        acknowledged.extend(keys);
    }
    let err = t.put(b"after", b"v").unwrap_err();
    assert!(matches!(err, DbError::GroupFailed(_)), "{err}");
    assert_eq!(t.get_owned(b"before").unwrap(), Some(b"kept".to_vec()));
    drop((t, db));
    for w in writers {
        w.join().unwrap();
    }

    let db = Db::open(dir.path(), options(None)).unwrap();
    let t = db.subtable("t").unwrap();
    for key in &acknowledged {
        assert_eq!(
            t.get_owned(key).unwrap(),
            Some(b"v".to_vec()),
            "{key:?} lost"
        );
    }
    assert_eq!(t.get_owned(b"before").unwrap(), Some(b"kept".to_vec()));
    t.put(b"after", b"v").unwrap();
    assert_eq!(t.get_owned(b"after").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_group_that_cannot_be_indexed_is_never_visible_in_part_and_stops_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    db.subtable("a").unwrap().put(b"boom", b"old").unwrap();
    db.subtable("b").unwrap().put(b"x", b"old").unwrap();
    drop(db);
    let failing = DbOptions {
        index_error_on_key: Some(b"boom".to_vec()),
        ..DbOptions::small()
    };
    let db = Db::open(dir.path(), failing).unwrap();
    let (a, b) = (db.subtable("a").unwrap(), db.subtable("b").unwrap());

    // One batch over two subtables: its part in `a` cannot be indexed, its part in `b`
    // can.
    let mut batch = WriteBatch::new();
    batch.put(&a, b"boom", b"new");
    batch.put(&b, b"x", b"new");
    let err = db.write(batch, WriteOptions::default()).unwrap_err();
    assert!(matches!(err, DbError::GroupFailed(_)), "{err}");
    assert_eq!(
        b.get_owned(b"x").unwrap(),
        Some(b"old".to_vec()),
        "half a batch seen"
    );
    assert_eq!(a.get_owned(b"boom").unwrap(), Some(b"old".to_vec()));

    // Later writes fail at once instead of committing past the failed group.
    let start = Instant::now();
    let err = b.put(b"y", b"v").unwrap_err();
    assert!(matches!(err, DbError::GroupFailed(_)), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(b.get_owned(b"y").unwrap(), None);
    drop((a, b, db));

    // The batch was durable: the reopened database has all of it.
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let (a, b) = (db.subtable("a").unwrap(), db.subtable("b").unwrap());
    assert_eq!(a.get_owned(b"boom").unwrap(), Some(b"new".to_vec()));
    assert_eq!(b.get_owned(b"x").unwrap(), Some(b"new".to_vec()));
    b.put(b"y", b"v").unwrap();
    assert_eq!(b.get_owned(b"y").unwrap(), Some(b"v".to_vec()));
}
