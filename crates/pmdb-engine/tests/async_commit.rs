//! Async commits: the future of a commit resolves while the awaiting thread does nothing
//! but poll (the committer thread leads), transactions validate the same way, and async
//! and synchronous writers share groups. (`committer_stops.rs` checks closing.)

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbError, DbOptions, WriteBatch, WriteOptions};

/// A waker that counts wake-ups and unparks the polling thread.
struct Unpark {
    wakes: AtomicUsize,
    thread: Thread,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Polls `fut` to completion; between polls the thread only parks. Returns the output
/// and how often the future woke it.
fn block_on<F: Future>(fut: F) -> (F::Output, usize) {
    let waker = Arc::new(Unpark {
        wakes: AtomicUsize::new(0),
        thread: std::thread::current(),
    });
    let task_waker = Waker::from(Arc::clone(&waker));
    let mut cx = Context::from_waker(&task_waker);
    let mut fut = pin!(fut);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return (out, waker.wakes.load(Ordering::SeqCst));
        }
        assert!(Instant::now() < deadline, "the commit never completed");
        std::thread::park_timeout(Duration::from_secs(1));
    }
}

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, DbOptions::small()).unwrap()
}

#[test]
fn an_awaited_commit_completes_without_the_awaiting_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.subtable("t").unwrap();
    let mut batch = WriteBatch::new();
    batch.put(&t, "k", "v");
    let pending = db.write_async(batch, WriteOptions::default());
    // Polling is all this thread does: someone else led the group.
    let (outcome, _) = block_on(pending);
    outcome.unwrap();
    assert_eq!(t.get_owned("k").unwrap().unwrap(), b"v");

    // Many at once, awaited together, share groups.
    let before = db.last_seq();
    let pendings: Vec<_> = (0..200u32)
        .map(|i| {
            let mut batch = WriteBatch::new();
            batch.put(&t, i.to_be_bytes(), "v");
            db.write_async(batch, WriteOptions::default())
        })
        .collect();
    for p in pendings {
        block_on(p).0.unwrap();
    }
    assert_eq!(db.last_seq(), before + 200);
    assert_eq!(t.scan::<&[u8]>(..).count(), 201);
}

#[test]
fn async_transaction_commits_validate_like_synchronous_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.subtable("t").unwrap();
    t.put("x", "0").unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    a.put(&t, "x", "a").unwrap();
    b.put(&t, "x", "b").unwrap();
    b.put(&t, "y", "b").unwrap();
    let first = a.commit_async(WriteOptions::default());
    let second = b.commit_async(WriteOptions::default());
    block_on(first).0.unwrap();
    let err = block_on(second).0.unwrap_err();
    assert!(matches!(err, DbError::Conflict { .. }), "{err}");
    assert_eq!(t.get_owned("x").unwrap().unwrap(), b"a");
    assert_eq!(t.get_owned("y").unwrap(), None);
    // Read-only and empty commits are ready at once.
    let (outcome, wakes) = block_on(db.transaction().commit_async(WriteOptions::default()));
    assert!(outcome.is_ok() && wakes == 0);
}

#[test]
fn async_and_synchronous_writers_mix() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let t = db.subtable("t").unwrap();
    std::thread::scope(|s| {
        for w in 0..4u32 {
            let (db, t) = (Arc::clone(&db), t.clone());
            s.spawn(move || {
                for i in 0..300u32 {
                    let key = [w.to_be_bytes(), i.to_be_bytes()].concat();
                    if w % 2 == 0 {
                        t.put(&key, "sync").unwrap();
                    } else {
                        let mut batch = WriteBatch::new();
                        batch.put(&t, &key, "async");
                        block_on(db.write_async(batch, WriteOptions::default()))
                            .0
                            .unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(t.scan::<&[u8]>(..).count(), 1200);
}
