//! `pmdb compact`: opens a database and moves everything below the active memtables down
//! the tiers — frozen memtables into the global index, the global index into SST level
//! 1 (freeing its PM), full levels into deeper ones — then reports where the data lies.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pmdb_engine::{Db, DbOptions};

use crate::paths::default_pool_dir;

#[derive(Args)]
pub struct CompactArgs {
    /// Database directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
}

pub fn run(args: CompactArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = args.path.unwrap_or_else(default_pool_dir);
    let db = Db::open(
        &dir,
        DbOptions {
            create_if_missing: false,
            ..DbOptions::default()
        },
    )?;
    db.compact()?;
    let t = db.tier_stats();
    println!(
        "compacted {}: {} memtables merged, {} generations flushed, {} level compactions, {} B written",
        dir.display(),
        t.merges,
        t.flushes,
        t.compactions,
        t.sst_bytes_written
    );
    for s in db.subtable_stats() {
        println!(
            "subtable    {}: {} memtables, {} global-index generations, {} B in SSTs",
            s.name,
            s.memtables,
            s.gi_generations,
            s.sst_bytes()
        );
    }
    Ok(ExitCode::SUCCESS)
}
