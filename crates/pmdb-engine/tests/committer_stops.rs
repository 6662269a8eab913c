//! Closing a database stops its committer thread before the close returns, so the pool
//! is closed at once and can be reopened. A binary of its own: it counts the process's
//! committer threads, which other tests' databases would add to.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};

fn committer_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == "pmdb-committer")
        })
        .count()
}

/// Polls until ready (the committer thread does the work).
fn wait<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

#[test]
fn closing_a_database_stops_its_committer() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..10u32 {
        let db = Db::open(dir.path(), DbOptions::small()).unwrap();
        let t = db.subtable("t").unwrap();
        let mut batch = WriteBatch::new();
        batch.put(&t, round.to_be_bytes(), "v");
        wait(db.write_async(batch, WriteOptions::default())).unwrap();
        assert_eq!(committer_threads(), 1);
        drop((t, db));
        assert_eq!(committer_threads(), 0, "round {round}");
    }
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    assert_eq!(db.subtable("t").unwrap().scan::<&[u8]>(..).count(), 10);
}
