//! Latency and bandwidth emulation of slower persistent memory, in the spirit of Quartz:
//! delays are added in software at fixed points, so they approximate a device rather than
//! model its internals.
//!
//! Where each knob is charged:
//! * `read_latency_ns`: once per [`crate::Pool::charge_read`] call. The engine calls it
//!   once per dependent PM access (a record fetched by a get, a block touched by a scan);
//!   plain loads through [`crate::Pool::read`] are not charged, since a load cannot be
//!   intercepted without hardware help.
//! * `write_latency_ns`: once per cache line written back by `flush`/`persist`.
//! * `write_bandwidth_mb_s`: the bytes written back by `flush`/`persist` are paced by a
//!   pool-wide token bucket, so sustained write-back cannot exceed the cap.
//!
//! Delays are busy-waits (sleeping has millisecond granularity), so they cost CPU time
//! exactly as a stalled load or flush would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Emulation knobs; all zero (off) by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emulation {
    /// Extra nanoseconds per PM read access charged with `charge_read`.
    pub read_latency_ns: u64,
    /// Extra nanoseconds per cache line flushed.
    pub write_latency_ns: u64,
    /// Cap on flushed bytes per second, in MB/s (10^6 bytes); 0 is unlimited.
    pub write_bandwidth_mb_s: u64,
}

impl Emulation {
    pub fn is_off(&self) -> bool {
        *self == Emulation::default()
    }
}

/// Charges the delays of one pool.
pub(crate) struct Emulator {
    knobs: Emulation,
    start: Instant,
    /// Nanoseconds since `start` at which the write bandwidth budget is next free.
    bandwidth_free_at: AtomicU64,
}

impl Emulator {
    pub fn new(knobs: Emulation) -> Emulator {
        Emulator {
            knobs,
            start: Instant::now(),
            bandwidth_free_at: AtomicU64::new(0),
        }
    }

    pub fn knobs(&self) -> Emulation {
        self.knobs
    }

    pub fn charge_read(&self) {
        spin_for(self.knobs.read_latency_ns);
    }

    pub fn charge_flush(&self, lines: usize, bytes: usize) {
        if self.knobs.is_off() {
            return;
        }
        spin_for(self.knobs.write_latency_ns * lines as u64);
        // bytes / (mb_s * 1e6 B/s) in ns = bytes * 1000 / mb_s.
        if let Some(cost) = (bytes as u64 * 1000).checked_div(self.knobs.write_bandwidth_mb_s) {
            let now = self.start.elapsed().as_nanos() as u64;
            let mut free_at = self.bandwidth_free_at.load(Ordering::Relaxed);
            let done = loop {
                let done = free_at.max(now) + cost;
                match self.bandwidth_free_at.compare_exchange_weak(
                    free_at,
                    done,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break done,
                    Err(seen) => free_at = seen,
                }
            };
            let until = self.start + Duration::from_nanos(done);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }
}

fn spin_for(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_cap_paces_write_back() {
        // 1 MB/s: 2,000 bytes must take at least 2 ms in total.
        let emu = Emulator::new(Emulation {
            write_bandwidth_mb_s: 1,
            ..Emulation::default()
        });
        let t = Instant::now();
        emu.charge_flush(16, 1000);
        emu.charge_flush(16, 1000);
        assert!(t.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn off_by_default() {
        assert!(Emulation::default().is_off());
    }
}
