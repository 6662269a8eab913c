//! The key-value engines a benchmark compares, behind one interface, each configured for
//! the same durability: "durable" means an acknowledged write survives a process crash on
//! tmpfs and a power loss on a disk; "relaxed" drops the per-write sync everywhere.

use std::path::Path;

use pmdb_pmem::BackendChoice;

mod interface;
// heed marks opening an environment unsafe; this adapter is the one place that may.
#[allow(unsafe_code)]
pub mod lmdb;
pub mod pmdb;
#[cfg(feature = "rocksdb")]
pub mod rocks;
pub mod sqlite;

pub use interface::{
    Durability, Engine, Error, Footprint, IndexMemory, Result, Worker, disk_usage,
};
pub use pmdb::PmdbSetup;

/// The engines built into this binary, by name.
/// `pmdb` takes the backend the directory gives (Memory on tmpfs, File on a disk);
/// `pmdb-file` forces the File backend (msync) wherever it runs.
#[cfg(not(feature = "rocksdb"))]
pub const ENGINES: &[&str] = &["pmdb", "pmdb-file", "lmdb", "sqlite"];
/// The engines built into this binary, by name.
#[cfg(feature = "rocksdb")]
pub const ENGINES: &[&str] = &["pmdb", "pmdb-file", "rocksdb", "lmdb", "sqlite"];

/// Opens engine `name` in a fresh directory `dir`; `pmdb` (emulation, tiers) applies to
/// pmdb only.
pub fn open(
    name: &str,
    dir: &Path,
    durability: Durability,
    pmdb: &PmdbSetup,
) -> Result<Box<dyn Engine>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    Ok(match name {
        "pmdb" => Box::new(pmdb::PmdbEngine::open(
            dir,
            durability,
            BackendChoice::Auto,
            pmdb,
        )?),
        "pmdb-file" => Box::new(pmdb::PmdbEngine::open(
            dir,
            durability,
            BackendChoice::File,
            pmdb,
        )?),
        "lmdb" => Box::new(lmdb::LmdbEngine::open(dir, durability)?),
        "sqlite" => Box::new(sqlite::SqliteEngine::open(dir, durability)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(rocks::RocksEngine::open(dir, durability)?),
        other => return Err(format!("unknown engine {other:?} (built in: {ENGINES:?})").into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine stores, overwrites, reads back and scans in key order.
    #[test]
    fn engines_agree_on_basic_semantics() {
        for name in ENGINES {
            let dir = tempfile::tempdir().unwrap();
            let engine = open(
                name,
                &dir.path().join(name),
                Durability::Durable,
                &PmdbSetup::default(),
            )
            .unwrap();
            let mut w = engine.worker().unwrap();
            for k in ["b", "a", "d", "c"] {
                w.insert(k.as_bytes(), format!("v-{k}").as_bytes()).unwrap();
            }
            w.update(b"c", b"new").unwrap();
            let mut out = Vec::new();
            assert!(w.read(b"c", &mut out).unwrap(), "{name}");
            assert_eq!(out, b"new", "{name}");
            assert!(!w.read(b"zz", &mut out).unwrap(), "{name}");
            assert_eq!(w.scan(b"b", 2, &mut out).unwrap(), 2, "{name}");
            assert_eq!(w.scan(b"bb", 10, &mut out).unwrap(), 2, "{name}");
            assert!(!engine.settings().is_empty());
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(
            open(
                "nope",
                dir.path(),
                Durability::Durable,
                &PmdbSetup::default()
            )
            .is_err()
        );
    }
}
