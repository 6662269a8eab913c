//! The prefaulter: keeps the zones a pool will hand out next pre-faulted, so the first
//! writes to a fresh zone — on a commit path, typically — take no page fault (on tmpfs a
//! fault allocates and zeroes a page: about 3 ms for a 4 MiB zone, against 0.2 ms for
//! writing the zone once its pages are mapped). It also grows the pool by an extent
//! before the last free zone is handed out, so no allocation waits for a new extent file.
//!
//! Pre-faulting is `MADV_POPULATE_WRITE`, which maps pages writable as a write fault
//! would but changes no byte, so it is safe on a zone that is handed out meanwhile, and
//! a spare is just a free zone: nothing persistent names it. Kernels before Linux 5.14
//! refuse the call; the pool then works as without a prefaulter.
//!
//! The work runs on a thread of its own, woken by each allocation, and is stopped and
//! joined when the [`Prefaulter`] drops. On the crash simulator each pass runs in the
//! allocating thread instead, right after the allocation, so a workload's fences stay
//! deterministic (the crash harness replays a workload and counts them).

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::{PmemError, Result};
use crate::pool::Pool;

/// A running prefaulter (see [`Pool::prefault_ahead`]); dropping it stops it.
pub struct Prefaulter {
    pool: Arc<Pool>,
    thread: Option<JoinHandle<()>>,
}

impl Pool {
    /// Keeps the `zones` free zones that `alloc_zone` hands out next pre-faulted, and grows
    /// the pool before it runs out of free zones, on a thread of its own (see
    /// `Prefaulter`) until the returned handle drops. Nothing persistent changes but the
    /// growth: a crash leaves every spare free. Fails on a read-only pool and when a
    /// prefaulter runs already.
    pub fn prefault_ahead(self: &Arc<Self>, zones: usize) -> Result<Prefaulter> {
        Prefaulter::start(self, zones)
    }
}

impl Prefaulter {
    fn start(pool: &Arc<Pool>, zones: usize) -> Result<Prefaulter> {
        let heap = pool.heap();
        let inline = pool.is_simulated();
        heap.start_spares(zones, inline)?;
        let thread = if inline {
            None
        } else {
            let serving = Arc::clone(pool);
            let spawned = std::thread::Builder::new()
                .name("pmdb-prefault".into())
                .spawn(move || serving.heap().serve_spares());
            match spawned {
                Ok(thread) => Some(thread),
                Err(source) => {
                    heap.stop_spares();
                    heap.spares_stopped();
                    return Err(PmemError::Io {
                        path: "<prefault thread>".into(),
                        source,
                    });
                }
            }
        };
        Ok(Prefaulter {
            pool: Arc::clone(pool),
            thread,
        })
    }
}

impl Drop for Prefaulter {
    fn drop(&mut self) {
        let heap = self.pool.heap();
        heap.stop_spares();
        if let Some(thread) = self.thread.take() {
            // A pass ends after at most one extent's growth and a few zones' faults.
            let _ = thread.join();
        }
        heap.spares_stopped();
    }
}
