//! Closing a database stops its committer thread before the close returns, so the pool
//! is closed at once and can be reopened; a thread that serves one client alone leads
//! its own async commits (`lead_commits_here`): their futures are ready when returned,
//! no committer thread starts for them, conflicts are still found, and other threads'
//! async commits still go to the committer. A binary of its own, its tests one at a
//! time: they count the process's committer threads, which other databases would add to.

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions, lead_commits_here};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

/// The outcome of `fut` at its first poll, if it has one.
fn first_poll<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

#[test]
fn a_thread_that_leads_its_commits_needs_no_committer() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            lead_commits_here();
            for i in 0..100u32 {
                let mut batch = WriteBatch::new();
                batch.put(&t, i.to_be_bytes(), "v");
                let pending = db.write_async(batch, WriteOptions::default());
                first_poll(pending)
                    .expect("the commit was led on this thread")
                    .unwrap();
            }
            let mut a = db.transaction();
            let mut b = db.transaction();
            a.put(&t, "x", "a").unwrap();
            b.put(&t, "x", "b").unwrap();
            first_poll(a.commit_async(WriteOptions::default()))
                .unwrap()
                .unwrap();
            let err = first_poll(b.commit_async(WriteOptions::default()))
                .unwrap()
                .unwrap_err();
            assert!(matches!(err, DbError::Conflict { .. }), "{err}");
        })
        .join()
        .unwrap();
    });
    assert_eq!(committer_threads(), 0);
    assert_eq!(t.scan::<&[u8]>(..).count(), 101);
    assert_eq!(t.get_owned("x").unwrap().unwrap(), b"a");

    // Any other thread's async commits still go to the committer.
    let mut batch = WriteBatch::new();
    batch.put(&t, "y", "v");
    wait(db.write_async(batch, WriteOptions::default())).unwrap();
    assert_eq!(committer_threads(), 1);
    assert_eq!(t.get_owned("y").unwrap().unwrap(), b"v");
}
