//! Where pmdb keeps its data when no path is given: a tmpfs directory when the machine
//! has one (the Memory backend: PM's cost model, survives a process crash), else a
//! directory under the current one.

use std::path::PathBuf;

use pmdb_pmem::{FsKind, filesystem_kind};

/// `/dev/shm/<name>` when /dev/shm is tmpfs, else `./<fallback>`.
pub fn default_dir(name: &str, fallback: &str) -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    match filesystem_kind(&shm) {
        Ok(FsKind::Ram) => shm.join(name),
        _ => PathBuf::from(fallback),
    }
}

pub fn default_pool_dir() -> PathBuf {
    default_dir("pmdb", "pmdb-data")
}
