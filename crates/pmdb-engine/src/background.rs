//! The database's background worker: work that must not wait on the commit path, done on
//! one thread per open database and stopped and joined when the database closes (a
//! stop flag cuts the job at hand short). Today it builds the Bloom filters of frozen
//! indexes. A queued job holds its index weakly: a generation flushed or a memtable
//! merged before its turn comes gives its PM back at once, and its filter is not built.
//! If the thread cannot be started the database runs without filters: reads stay
//! correct, only slower.
//!
//! On the crash simulator's pool, filters are built in the caller's thread instead: the
//! crash world needs every write and free at a point the workload decides, and a worker
//! holding the last reference to a flushed generation or memtable would give its PM back
//! at a moment of its own.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crate::index::Indexed;

pub(crate) struct Background {
    /// Build filters in the caller's thread.
    inline: bool,
    jobs: Option<Sender<Weak<dyn Indexed>>>,
    stop: Arc<AtomicBool>,
    /// Jobs queued and not finished.
    pending: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Background {
    /// The worker, or with `inline` none: each filter is built when it is asked for.
    pub fn start(inline: bool) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let pending = Arc::new(AtomicUsize::new(0));
        if inline {
            return Background {
                inline,
                jobs: None,
                stop,
                pending,
                thread: None,
            };
        }
        let (tx, rx) = channel::<Weak<dyn Indexed>>();
        let (worker_stop, worker_pending) = (Arc::clone(&stop), Arc::clone(&pending));
        let thread = std::thread::Builder::new()
            .name("pmdb-background".into())
            .spawn(move || {
                while let Ok(holder) = rx.recv() {
                    if !worker_stop.load(Ordering::Relaxed)
                        && let Some(holder) = holder.upgrade()
                        && let Err(e) = holder.index().build_filter(&worker_stop)
                    {
                        log::warn!("{}: no Bloom filter ({e})", holder.describe());
                    }
                    worker_pending.fetch_sub(1, Ordering::Release);
                }
            });
        let thread = thread
            .inspect_err(|e| log::warn!("no background worker ({e}): running without filters"))
            .ok();
        Background {
            inline,
            jobs: thread.as_ref().map(|_| tx),
            stop,
            pending,
            thread,
        }
    }

    /// Queues the building of a frozen index's filter (builds it now when inline).
    pub fn build_filter(&self, holder: Arc<dyn Indexed>) {
        if self.inline {
            if let Err(e) = holder.index().build_filter(&self.stop) {
                log::warn!("{}: no Bloom filter ({e})", holder.describe());
            }
            return;
        }
        if let Some(jobs) = &self.jobs {
            self.pending.fetch_add(1, Ordering::Acquire);
            if jobs.send(Arc::downgrade(&holder)).is_err() {
                self.pending.fetch_sub(1, Ordering::Release);
            }
        }
    }

    /// Waits until every queued job is done.
    #[cfg(test)]
    pub fn wait_idle(&self) {
        while self.pending.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The worker's receive fails once the queue is closed and drained.
        self.jobs = None;
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            log::warn!("the background worker panicked");
        }
    }
}
