//! A commit leader that panics fails its group and stops commits: every writer gets an
//! error (none waits forever, none sees the panic), reads go on, and the reopened
//! database has every write acknowledged before the panic and takes writes again.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use pmdb_engine::{Db, DbError, DbOptions, LeaderStage};

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
