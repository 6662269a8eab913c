//! The helper threads' loop: take a job, prefetch its lines, count it; sleep when the
//! queue stays empty, until the producer's next push (or a short timeout) wakes them.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use pmdb_pmem::{CACHE_LINE, CacheLevel, prefetch_range};

use crate::topology::Stage;
use crate::{Job, Shared};

/// Empty polls before a helper parks.
const SPINS: u32 = 256;
/// The longest a parked helper sleeps without a wake-up (a push may race its park).
const NAP: Duration = Duration::from_millis(1);

pub(crate) fn spawn(
    shared: Arc<Shared>,
    (cpu, stage): (usize, Stage),
    index: usize,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("pmdb-prefetch-{index}"))
        .spawn(move || {
            // Pinning can be refused (a CPU outside the process's set); the helper then
            // runs where the OS puts it, which the placement reports as intended only.
            core_affinity::set_for_current(core_affinity::CoreId { id: cpu });
            run(&shared, stage);
        })
}

fn run(shared: &Shared, stage: Stage) {
    let queue = match (stage, &shared.staged) {
        (Stage::Second, Some(staged)) => staged,
        _ => &shared.queue,
    };
    let mut idle = 0;
    while !shared.stop.load(Ordering::Acquire) {
        let Some(job) = queue.pop() else {
            idle += 1;
            if idle < SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::park_timeout(NAP);
            }
            continue;
        };
        idle = 0;
        serve(shared, stage, job);
    }
}

fn serve(shared: &Shared, stage: Stage, job: Job) {
    let c = &shared.counters;
    let level = match stage {
        Stage::First => CacheLevel::Outer,
        Stage::Only | Stage::Second => CacheLevel::Nearest,
    };
    prefetch_range(job.addr as *const u8, job.len, level);
    if let (Stage::First, Some(staged)) = (stage, &shared.staged) {
        if staged.push(job).is_err() {
            c.dropped.fetch_add(1, Ordering::Relaxed);
            c.dropped_between.fetch_add(1, Ordering::Release);
        }
        return;
    }
    let first = job.addr & !(CACHE_LINE - 1);
    let lines = job
        .addr
        .saturating_add(job.len)
        .saturating_sub(first)
        .div_ceil(CACHE_LINE);
    c.lines.fetch_add(lines as u64, Ordering::Relaxed);
    c.done.fetch_add(1, Ordering::Release);
}
