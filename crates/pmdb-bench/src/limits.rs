//! The ranges benchmark settings accept, and the one check they all go through. A setting
//! out of range is refused before any work starts: a zero count would divide by zero or
//! spin for ever, and an absurd one would run for days or exhaust the machine. The `pmdb`
//! CLI's parsers phrase their errors with [`accepted`] too, so a bad value reads the same
//! whichever side catches it.

use std::fmt::Display;
use std::ops::{Range, RangeInclusive};
use std::path::Path;

/// Most threads a benchmark spawns per phase.
pub const MAX_THREADS: usize = 1024;
/// Most records a YCSB run loads.
pub const MAX_RECORDS: u64 = 1_000_000_000;
/// Most operations of one measurement (YCSB operations and warm-up, puts, gets, lookups,
/// device-layer operations): a billion is already hours at microseconds each.
pub const MAX_OPERATIONS: u64 = 1_000_000_000;
/// Most keys of a database (engine benchmark) or an index (index benchmark).
pub const MAX_KEYS: u64 = 100_000_000;
/// Largest emulated PM latency, in ns (per flushed line, per read access).
pub const MAX_EMULATED_NS: u64 = 100_000;
/// Largest emulated write bandwidth cap, MB/s (0: no cap).
pub const MAX_BANDWIDTH_MB_S: u64 = 1_000_000;
/// Largest NVM latency factor of a sweep (multiples of DRAM latency).
pub const MAX_NVM_FACTOR: u32 = 100;
/// Largest DRAM latency an NVM sweep multiplies, in ns.
pub const MAX_DRAM_LATENCY_NS: u64 = 1000;

/// A setting outside what it accepts, named as the configuration names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name} {reason}")]
pub struct InvalidSetting {
    pub name: String,
    /// What is wrong, as a clause following the name ("must be … , not 0").
    pub reason: String,
}

impl InvalidSetting {
    pub fn new(name: impl Into<String>, reason: impl Into<String>) -> InvalidSetting {
        InvalidSetting {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

/// How every range error states what is accepted: "must be a whole number from 1 to 1024".
pub fn accepted(kind: &str, lo: impl Display, hi: impl Display) -> String {
    format!("must be {kind} from {lo} to {hi}")
}

/// `value` if it lies in `range`, else an error naming the setting and the range.
pub fn check<T: PartialOrd + Display>(
    name: &str,
    value: T,
    range: RangeInclusive<T>,
) -> Result<T, InvalidSetting> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(InvalidSetting::new(
            name,
            format!(
                "{}, not {value}",
                accepted("a whole number", range.start(), range.end())
            ),
        ))
    }
}

/// Refuses a run whose data cannot fit: `need` is a lower bound on the bytes `name`
/// asks for and `room` what `place` has ("is free in /dev/shm"), so a refusal is certain
/// to be right. Unknown room refuses nothing.
pub fn check_fits(
    name: &str,
    need: u64,
    room: Option<u64>,
    place: impl Display,
) -> Result<(), InvalidSetting> {
    match room {
        Some(room) if need > room => Err(InvalidSetting::new(
            name,
            format!(
                "needs at least {} but only {} {place}",
                fmt_bytes(need),
                fmt_bytes(room)
            ),
        )),
        _ => Ok(()),
    }
}

/// Refuses a run whose data cannot fit in the filesystem of `dir` (a run that fills it
/// fails part-way, or on tmpfs dies of SIGBUS).
pub fn check_space(name: &str, need: u64, dir: &Path) -> Result<(), InvalidSetting> {
    check_fits(
        name,
        need,
        crate::machine::free_space(dir),
        format_args!("is free in {}", dir.display()),
    )
}

/// Refuses a run whose DRAM structures cannot fit in the memory available now.
pub fn check_memory(name: &str, need: u64) -> Result<(), InvalidSetting> {
    check_fits(
        name,
        need,
        crate::machine::available_memory(),
        "of memory is available",
    )
}

/// Items `total` split over `parts` threads: the range part `i` takes, the first parts
/// taking one more when the split is uneven, so that the parts add up to `total`.
pub fn split(total: u64, parts: usize, i: usize) -> Range<u64> {
    let (parts, i) = (parts as u64, i as u64);
    let (each, extra) = (total / parts, total % parts);
    let start = i * each + i.min(extra);
    start..start + each + u64::from(i < extra)
}

/// A byte count with a binary unit, for messages.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_setting_and_the_range() {
        assert_eq!(check("threads", 4, 1..=8), Ok(4));
        assert_eq!(
            check("threads", 0, 1..=8).unwrap_err().to_string(),
            "threads must be a whole number from 1 to 8, not 0"
        );
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(4 << 30), "4 GiB");
    }

    #[test]
    fn refuses_what_cannot_fit() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_space("records", 1, dir.path()).is_ok());
        let e = check_space("records", u64::MAX, &dir.path().join("not/yet")).unwrap_err();
        assert!(e.to_string().starts_with("records needs at least"), "{e}");
        assert!(check_memory("keys", u64::MAX).is_err());
    }

    #[test]
    fn splits_add_up() {
        assert_eq!(
            (0..3).map(|i| split(7, 3, i)).collect::<Vec<_>>(),
            [0..3, 3..5, 5..7]
        );
        assert_eq!(split(1, 2, 1), 1..1);
    }
}
