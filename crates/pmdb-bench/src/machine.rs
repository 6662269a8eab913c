//! The machine a benchmark ran on: CPU, cores, memory, kernel, and the filesystem of the
//! benchmark's path — recorded in every report.

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    pub flush_instruction: String,
    pub pmdb_version: String,
}

impl Machine {
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: (mem_kib / (1024.0 * 1024.0) * 10.0).round() / 10.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            flush_instruction: pmdb_pmem::flush_insn().name().into(),
            pmdb_version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// The filesystem type holding `path` (e.g. `tmpfs`, `ext4`), from /proc/self/mounts.
pub fn filesystem_of(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, point, fstype) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(point)
                .then(|| (point.len(), fstype.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs)
        .unwrap_or_else(|| "unknown".into())
}

/// Bytes an unprivileged process can still write under `path` (or under its nearest
/// existing ancestor, for a directory a run is about to create); None if unknown.
pub fn free_space(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let st = rustix::fs::statvfs(existing).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Memory available to a new allocation now (MemAvailable), in bytes; None if unknown.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_this_machine() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(m.memory_gib > 0.0);
        assert_ne!(m.kernel, "unknown");
    }

    #[test]
    fn measures_free_space_and_memory() {
        let dir = tempfile::tempdir().unwrap();
        let here = free_space(dir.path()).unwrap();
        assert!(here > 0);
        assert!(free_space(&dir.path().join("a/b/c")).is_some());
        assert!(available_memory().unwrap() > 0);
    }

    #[test]
    fn names_the_filesystem() {
        assert_ne!(filesystem_of(Path::new("/")), "unknown");
        if Path::new("/dev/shm").is_dir() {
            assert_eq!(filesystem_of(Path::new("/dev/shm")), "tmpfs");
        }
    }
}
