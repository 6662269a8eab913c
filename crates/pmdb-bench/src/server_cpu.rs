//! The CPU time a server under load spends, from /proc: user plus system time of this
//! process (a server running in it), or of a process tree (PostgreSQL: the postmaster
//! and every process descended from it). A benchmark reads it before and after a run;
//! the difference is the server's CPU during the run.

use std::collections::HashMap;

/// Whose CPU time to read.
#[derive(Clone, Copy, Debug)]
pub enum Meter {
    /// This process: a server running in it, with the benchmark's own thread idle
    /// while the load generator (a child, whose time is not counted) runs.
    ThisProcess,
    /// A process and all its descendants. Descendants that have exited and been
    /// reaped are counted through the root's cutime and cstime, so a reading after a
    /// run includes the backends that ended during it.
    Tree(u32),
}

impl Meter {
    /// CPU seconds spent so far.
    pub fn seconds(self) -> Result<f64, String> {
        let ticks = match self {
            Meter::ThisProcess => read("self")?.own(),
            Meter::Tree(root) => tree_ticks(root)?,
        };
        Ok(ticks as f64 / clock_ticks_per_second()? as f64)
    }
}

/// The unit of /proc's CPU times: the kernel's AT_CLKTCK, from this process's
/// auxiliary vector (native-endian pairs of words: type, value).
fn clock_ticks_per_second() -> Result<u64, String> {
    const AT_CLKTCK: usize = 17;
    let auxv = std::fs::read("/proc/self/auxv").map_err(|e| format!("/proc/self/auxv: {e}"))?;
    let word = std::mem::size_of::<usize>();
    auxv.chunks_exact(2 * word)
        .find_map(|pair| {
            let (key, value) = pair.split_at(word);
            let read = |b: &[u8]| usize::from_ne_bytes(b.try_into().expect("one word"));
            (read(key) == AT_CLKTCK).then(|| read(value) as u64)
        })
        .filter(|&hz| hz > 0)
        .ok_or_else(|| "/proc/self/auxv: no clock tick".to_string())
}

/// The fields of /proc/PID/stat this module uses, in clock ticks.
#[derive(Debug, PartialEq)]
struct Stat {
    ppid: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

impl Stat {
    fn parse(text: &str) -> Option<Stat> {
        // The command name is in parentheses and may hold spaces and parentheses.
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let n = |i: usize| f.get(i)?.parse::<u64>().ok();
        Some(Stat {
            ppid: u32::try_from(n(1)?).ok()?,
            utime: n(11)?,
            stime: n(12)?,
            cutime: n(13)?,
            cstime: n(14)?,
        })
    }

    fn own(&self) -> u64 {
        self.utime + self.stime
    }
}

fn read(pid: &str) -> Result<Stat, String> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    Stat::parse(&text).ok_or_else(|| format!("{path}: unexpected format"))
}

fn tree_ticks(root: u32) -> Result<u64, String> {
    let mut stats = HashMap::new();
    let entries = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // A process may exit between listing and reading; its time is then the
        // root's cutime, or belongs to no descendant.
        if let Ok(stat) = read(&pid.to_string()) {
            stats.insert(pid, stat);
        }
    }
    let root_stat = stats
        .get(&root)
        .ok_or_else(|| format!("process {root} is not running"))?;
    let descends = |mut pid: u32| {
        while let Some(s) = stats.get(&pid) {
            if s.ppid == root {
                return true;
            }
            pid = s.ppid;
        }
        false
    };
    let descendants: u64 = stats
        .iter()
        .filter(|&(&pid, _)| descends(pid))
        .map(|(_, s)| s.own())
        .sum();
    Ok(root_stat.own() + root_stat.cutime + root_stat.cstime + descendants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_a_parenthesized_name() {
        let text = "4242 (postgres: pmdb (x) idle) S 4100 4100 4100 0 -1 4194560 \
                    1200 0 0 0 345 67 8 9 20 0 1 0 80135 3133440 360 0\n";
        assert_eq!(
            Stat::parse(text),
            Some(Stat {
                ppid: 4100,
                utime: 345,
                stime: 67,
                cutime: 8,
                cstime: 9
            })
        );
        assert_eq!(Stat::parse("4242 (cut short) S 1"), None);
        assert!((1..=10_000).contains(&clock_ticks_per_second().unwrap()));
    }

    #[test]
    fn reads_this_process_and_its_tree() {
        let busy = std::time::Instant::now();
        while busy.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(busy.elapsed());
        }
        let own = Meter::ThisProcess.seconds().unwrap();
        assert!(own > 0.0);
        assert!(Meter::Tree(std::process::id()).seconds().unwrap() >= own);
        assert!(Meter::Tree(u32::MAX).seconds().is_err());
    }
}
