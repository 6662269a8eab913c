//! Persistence backends and how one is chosen: DAX when `MAP_SYNC` is granted, Memory on
//! a DRAM-backed filesystem (tmpfs, ramfs), File otherwise; CrashSim only for tests
//! (the `crashsim` feature).

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::str::FromStr;

/// How a pool makes stores durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Real PM mapped with `MAP_SYNC`: CPU cache flushes and fences persist.
    Dax,
    /// A DRAM-backed file (tmpfs): CPU flushes and fences give PM's cost model; survives a
    /// process crash, not a power loss.
    Memory,
    /// An ordinary filesystem: persistence is `msync` of the dirty pages; survives power
    /// loss.
    File,
    /// Test backend: a second, persisted image that only fenced flushes reach.
    #[cfg(feature = "crashsim")]
    CrashSim,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Dax => "dax",
            Backend::Memory => "memory",
            Backend::File => "file",
            #[cfg(feature = "crashsim")]
            Backend::CrashSim => "crashsim",
        }
    }

    /// What a power loss or a process crash does to acknowledged data on this backend.
    pub fn durability(self) -> &'static str {
        match self {
            Backend::Dax => "survives power loss (flush + fence reach the PM domain)",
            Backend::Memory => "survives a process crash; lost on power loss or reboot",
            Backend::File => "survives power loss once msync returns",
            #[cfg(feature = "crashsim")]
            Backend::CrashSim => "simulated: only flushed and fenced lines survive",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which backend to use when opening a file-backed pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// DAX if `MAP_SYNC` works, Memory on tmpfs/ramfs, File otherwise.
    #[default]
    Auto,
    /// Require DAX; opening fails with `DaxUnavailable` if `MAP_SYNC` is refused.
    Dax,
    /// CPU flushes regardless of the filesystem (its durability is then the filesystem's
    /// page cache: a process crash, not a power loss).
    Memory,
    /// `msync` regardless of the filesystem.
    File,
}

impl BackendChoice {
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Dax => "dax",
            BackendChoice::Memory => "memory",
            BackendChoice::File => "file",
        }
    }
}

impl FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "dax" => Ok(BackendChoice::Dax),
            "memory" => Ok(BackendChoice::Memory),
            "file" => Ok(BackendChoice::File),
            other => Err(format!(
                "unknown backend {other:?} (expected auto, dax, memory or file)"
            )),
        }
    }
}

const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// The filesystem kind of `path`, as statfs names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    /// tmpfs or ramfs: DRAM-backed.
    Ram,
    /// Anything else.
    Other(i64),
}

/// Asks statfs which filesystem holds `path`.
pub fn filesystem_kind(path: &Path) -> std::io::Result<FsKind> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statfs only writes into the zeroed struct we pass; `c` is NUL-terminated.
    let (rc, st) = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut st), st)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between libcs
    let kind = st.f_type as i64;
    Ok(if kind == TMPFS_MAGIC || kind == RAMFS_MAGIC {
        FsKind::Ram
    } else {
        FsKind::Other(kind)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices() {
        assert_eq!("file".parse::<BackendChoice>(), Ok(BackendChoice::File));
        assert!(
            "nvme"
                .parse::<BackendChoice>()
                .unwrap_err()
                .contains("nvme")
        );
    }

    #[test]
    fn dev_shm_is_ram_when_mounted() {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            assert_eq!(filesystem_kind(shm).unwrap(), FsKind::Ram);
        }
        assert!(filesystem_kind(Path::new("/no/such/dir")).is_err());
    }
}
