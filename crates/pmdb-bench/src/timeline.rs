//! Throughput over time. While a phase runs, a sampler thread closes a window every few
//! seconds and records the operations done in it and where the engine's data lies (PM
//! in use, bytes of files), so a report shows whether an engine holds its speed as it
//! fills, flushes and compacts — the steady state the capacity tier is for.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engines::{Engine, Footprint};

/// One window of a phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// When the window closed, in seconds since the phase started measuring.
    pub end_secs: f64,
    pub ops: u64,
    pub ops_per_sec: f64,
    /// Where the engine's data lay when the window closed.
    pub footprint: Footprint,
    /// False for the last window, cut short by the end of the phase.
    pub full: bool,
}

/// The measured threads' side: they mark the start and count what they do; the sampler
/// thread turns that into windows.
pub struct Timeline {
    window: Duration,
    done: AtomicU64,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    start: Option<Instant>,
    stopped: bool,
}

impl Timeline {
    pub fn new(window: Duration) -> Timeline {
        Timeline {
            window,
            done: AtomicU64::new(0),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// Marks the start of the measurement (the first call wins) and returns it.
    pub fn start(&self) -> Instant {
        let mut s = self.state.lock().expect("timeline");
        let start = *s.start.get_or_insert_with(Instant::now);
        self.changed.notify_all();
        start
    }

    /// When the measurement started, if it has.
    pub fn started(&self) -> Option<Instant> {
        self.state.lock().expect("timeline").start
    }

    /// Counts `n` more operations done.
    pub fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Ends the phase: the sampler closes its last window and returns.
    pub fn stop(&self) {
        self.state.lock().expect("timeline").stopped = true;
        self.changed.notify_all();
    }

    /// The sampler: waits for the start, then closes a window every `window` until
    /// [`Timeline::stop`], reading `engine`'s footprint (it lives in `dir`) each time.
    pub fn sample(&self, engine: &dyn Engine, dir: &Path) -> Vec<Window> {
        let mut windows = Vec::new();
        let mut s = self.state.lock().expect("timeline");
        while s.start.is_none() && !s.stopped {
            s = self.changed.wait(s).expect("timeline");
        }
        let Some(start) = s.start else {
            return windows;
        };
        let (mut last_ops, mut last_end) = (0, Duration::ZERO);
        loop {
            let end = last_end + self.window;
            while !s.stopped && start.elapsed() < end {
                let left = end.saturating_sub(start.elapsed());
                s = self.changed.wait_timeout(s, left).expect("timeline").0;
            }
            let full = !s.stopped;
            let end = if full { end } else { start.elapsed() };
            drop(s);
            let ops = self.done.load(Ordering::Relaxed);
            let secs = (end - last_end).as_secs_f64();
            if full || ops > last_ops {
                windows.push(Window {
                    end_secs: end.as_secs_f64(),
                    ops: ops - last_ops,
                    ops_per_sec: (ops - last_ops) as f64 / secs.max(1e-9),
                    footprint: engine.footprint(dir),
                    full,
                });
            }
            if !full {
                return windows;
            }
            (last_ops, last_end) = (ops, end);
            s = self.state.lock().expect("timeline");
        }
    }
}

/// Runs `work` while sampling it: `work` gets the timeline to start and count on.
pub fn sampled<R: Send>(
    engine: &dyn Engine,
    dir: &Path,
    window: Duration,
    work: impl FnOnce(&Timeline) -> R + Send,
) -> (R, Vec<Window>) {
    let timeline = Timeline::new(window);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| timeline.sample(engine, dir));
        let out = work(&timeline);
        timeline.stop();
        (out, sampler.join().expect("sampler thread"))
    })
}

/// The full windows' throughput: (first, last, lowest), if there are any.
pub fn steadiness(windows: &[Window]) -> Option<(f64, f64, f64)> {
    let full: Vec<f64> = windows
        .iter()
        .filter(|w| w.full)
        .map(|w| w.ops_per_sec)
        .collect();
    Some((
        *full.first()?,
        *full.last()?,
        full.iter().copied().fold(f64::INFINITY, f64::min),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Result, Worker};

    struct Fixed;

    impl Engine for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        fn settings(&self) -> String {
            String::new()
        }
        fn worker(&self) -> Result<Box<dyn Worker + '_>> {
            Err("no workers".into())
        }
        fn footprint(&self, _dir: &Path) -> Footprint {
            Footprint {
                pm_bytes: 7,
                file_bytes: 9,
            }
        }
    }

    #[test]
    fn windows_count_what_was_done_in_them() {
        let dir = tempfile::tempdir().unwrap();
        let ((), windows) = sampled(&Fixed, dir.path(), Duration::from_millis(40), |t| {
            std::thread::sleep(Duration::from_millis(30));
            t.start();
            for _ in 0..5 {
                t.add(100);
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        assert_eq!(windows.iter().map(|w| w.ops).sum::<u64>(), 500);
        assert!(
            windows.iter().filter(|w| w.full).count() >= 2,
            "{windows:?}"
        );
        assert!(windows.windows(2).all(|p| p[0].end_secs < p[1].end_secs));
        // Windows are timed from the start mark, not from before it.
        assert!(windows[0].end_secs < 0.06, "{windows:?}");
        assert_eq!(windows[0].footprint.total(), 16);
        let (first, last, low) = steadiness(&windows).unwrap();
        assert!(first > 0.0 && last > 0.0 && low <= first.min(last));
    }

    #[test]
    fn a_phase_that_never_starts_has_no_windows() {
        let dir = tempfile::tempdir().unwrap();
        let ((), windows) = sampled(&Fixed, dir.path(), Duration::from_millis(10), |_| {
            std::thread::sleep(Duration::from_millis(30));
        });
        assert!(windows.is_empty());
        assert_eq!(steadiness(&windows), None);
    }
}
