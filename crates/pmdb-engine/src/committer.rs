//! Commits that do not hold their caller's thread: [`PendingCommit`], a future an async
//! task awaits. Its request joins the same queue synchronous writers use; a committer
//! thread of the database (started at the first such commit) leads the groups when no
//! synchronous writer does, so an executor thread never waits on a group, a fence or a
//! write stall. A thread that serves one client alone may say so
//! ([`lead_commits_here`]): its async commits are then driven on it, as synchronous ones
//! are, which saves two thread wake-ups per commit.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

use crate::commit::Request;
use crate::error::{DbError, Result};

/// What the committer thread drives: a database's commit queue.
pub(crate) trait Queue: Send + Sync + 'static {
    /// Leads groups while requests are queued (waiting while another writer leads).
    fn lead_queued(&self);
}

thread_local! {
    static LEADS_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Declares that nothing but one client's work runs on the calling thread (a connection
/// thread of a server, with a runtime of its own), so that waiting there holds up no one
/// else: from now on the async commits made on this thread are driven on it, leading
/// their group when no other writer leads, and their futures are ready when returned.
pub fn lead_commits_here() {
    LEADS_HERE.with(|l| l.set(true));
}

/// Whether the calling thread said [`lead_commits_here`].
pub(crate) fn leads_here() -> bool {
    LEADS_HERE.with(Cell::get)
}

/// How long the committer sleeps with nothing queued before it checks whether its
/// database is still open (a stop or a new request wakes it at once).
const IDLE: Duration = Duration::from_millis(100);

/// The committer thread while it runs.
#[derive(Default)]
pub(crate) struct Committer(Mutex<Option<Running>>);

struct Running {
    thread: JoinHandle<()>,
    stop: Arc<AtomicBool>,
}

impl Committer {
    /// Makes sure the committer runs and looks at the queue.
    pub fn notify<Q: Queue>(&self, queue: &Arc<Q>) -> Result<()> {
        let mut running = self.0.lock();
        if let Some(r) = running.as_ref().filter(|r| !r.thread.is_finished()) {
            r.thread.thread().unpark();
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let weak: Weak<dyn Queue> = Arc::downgrade(queue) as Weak<dyn Queue>;
        let (db, flag) = (weak, Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("pmdb-committer".into())
            .spawn(move || run(db, flag))
            .map_err(|e| DbError::GroupFailed(format!("cannot start the committer thread: {e}")))?;
        *running = Some(Running { thread, stop });
        Ok(())
    }

    /// Stops the committer once the queue is empty and waits for it, so that it no longer
    /// holds the database (which may then close on the caller's thread). A later async
    /// commit starts it again.
    pub fn stop(&self) {
        let running = self.0.lock().take();
        if let Some(r) = running {
            r.stop.store(true, Ordering::Release);
            r.thread.thread().unpark();
            if r.thread.join().is_err() {
                log::error!("the committer thread panicked");
            }
        }
    }
}

/// Leads groups while requests are queued; holds the database only while it does.
fn run(db: Weak<dyn Queue>, stop: Arc<AtomicBool>) {
    loop {
        match db.upgrade() {
            Some(queue) => queue.lead_queued(),
            None => return,
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        std::thread::park_timeout(IDLE);
    }
}

/// A commit on its way through the pipeline: resolves when it is durable and visible, or
/// with its own error. Dropping it does not withdraw the commit.
#[must_use = "the outcome of a commit must be looked at"]
pub struct PendingCommit(State);

enum State {
    Queued(Arc<Request>),
    Ready(Option<Result<()>>),
}

impl PendingCommit {
    pub(crate) fn queued(request: Arc<Request>) -> PendingCommit {
        PendingCommit(State::Queued(request))
    }

    pub(crate) fn ready(outcome: Result<()>) -> PendingCommit {
        PendingCommit(State::Ready(Some(outcome)))
    }
}

impl Future for PendingCommit {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let outcome = match &mut self.0 {
            State::Queued(request) => request.take_or_wake(cx.waker()),
            State::Ready(outcome) => outcome.take(),
        };
        match outcome {
            Some(outcome) => {
                self.0 = State::Ready(None);
                Poll::Ready(outcome)
            }
            None if matches!(self.0, State::Ready(None)) => Poll::Ready(Err(DbError::GroupFailed(
                "the commit's outcome was already taken".into(),
            ))),
            None => Poll::Pending,
        }
    }
}
