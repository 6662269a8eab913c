//! `pmdb stats`: opens a database read-only, which runs recovery in DRAM alone (the pool
//! is not changed), and reports what recovery found and what the subtables hold.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pmdb_engine::{Db, DbOptions};

use pmdb_bench::limits::MAX_THREADS;

use crate::input::whole;
use crate::paths::default_pool_dir;

#[derive(Args)]
pub struct StatsArgs {
    /// Database directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
    /// Threads for the index rebuild (0: one per core)
    #[arg(long, default_value_t = 0, value_parser = whole(0..=MAX_THREADS))]
    threads: usize,
}

pub fn run(args: StatsArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = args.path.unwrap_or_else(default_pool_dir);
    let db = Db::open_read_only(
        &dir,
        DbOptions {
            recovery_threads: args.threads,
            ..DbOptions::default()
        },
    )?;
    let s = db.recovery_stats();
    println!("database    {}", dir.display());
    println!("backend     {}", db.device().backend);
    println!("{s}");
    println!("rebuild     {:.2} M records/s", s.records_per_sec() / 1e6);
    println!("last seq    {}", db.last_seq());
    for damage in &s.damage {
        println!("damage      {damage}");
    }
    for s in db.subtable_stats() {
        println!(
            "subtable    {}: {} records in {} memtables; index {} keys, {} versions, {} bytes of DRAM ({:.1} bytes/key)",
            s.name,
            s.records,
            s.memtables,
            s.index_keys,
            s.index_versions,
            s.index_bytes,
            s.index_bytes_per_key()
        );
        let levels: Vec<String> = s
            .levels
            .iter()
            .enumerate()
            .map(|(i, (files, bytes))| format!("L{} {files} files {bytes} B", i + 1))
            .collect();
        println!(
            "  tiers     global index {} generations over {} B of PM; SSTs {} B: {}",
            s.gi_generations,
            s.gi_bytes,
            s.sst_bytes(),
            if levels.is_empty() {
                "none".to_string()
            } else {
                levels.join(", ")
            }
        );
    }
    let alloc = db.device().alloc;
    println!(
        "pm          {} of {} zones owned, {} free ({} B per zone)",
        alloc.owned_zones,
        alloc.zones,
        alloc.free_zones,
        db.device().zone_size
    );
    Ok(if s.damage.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
