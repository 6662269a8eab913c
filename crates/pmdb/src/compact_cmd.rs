//! `pmdb compact`: opens a database and moves everything below the active memtables down
//! the tiers — frozen memtables into the global index, the global index into SST level
//! 1 (freeing its PM), full levels into deeper ones — then reports where the data lies.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pmdb_engine::Db;

use crate::damage_args::DamageArgs;
use crate::paths::default_pool_dir;

#[derive(Args)]
pub struct CompactArgs {
    /// Database directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
}

pub fn run(args: CompactArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = args.path.unwrap_or_else(default_pool_dir);
    let db = Db::open(&dir, args.damage.options(false))?;
    if let Some(reason) = db.read_only() {
        return Err(format!(
            "{}: nothing was compacted: the database is read-only: {reason}",
            dir.display()
        )
        .into());
    }
    // What could not be compacted is reported after what was.
    let outcome = db.compact();
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
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("pmdb: not everything was compacted: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}
