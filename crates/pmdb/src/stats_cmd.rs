//! `pmdb stats`: opens a database read-only, which runs recovery in DRAM alone (the pool
//! is not changed), and reports what recovery found, what the subtables hold, and the
//! write and space amplification (the live bytes by a full scan, unless `--no-scan`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pmdb_engine::{Amplification, Db, DbOptions};

use pmdb_bench::limits::{MAX_THREADS, fmt_bytes};

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
    /// Skip the full scan that measures the live bytes (space amplification is then
    /// unknown)
    #[arg(long)]
    no_scan: bool,
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
            .filter(|(_, (files, _))| *files > 0)
            .map(|(i, (files, bytes))| format!("L{i} {files} files {bytes} B"))
            .collect();
        println!(
            "  tiers     PM {} B (memtables {} B, global index {} B in {} generations, {} sealed); SSTs {} B: {}",
            s.pm_bytes(),
            s.memtable_bytes,
            s.gi_bytes,
            s.gi_generations,
            s.sealed_generations,
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
        "pm          {} of {} zones owned, {} free ({} B per zone); generations go to SSTs past {} of data in PM",
        alloc.owned_zones,
        alloc.zones,
        alloc.free_zones,
        db.device().zone_size,
        fmt_bytes(db.options().flush_watermark())
    );
    let mut amp = db.amplification();
    let mut scanned = true;
    let unscanned = if args.no_scan {
        "not scanned"
    } else {
        match live_bytes(&db) {
            Ok(live) => amp.live_bytes = Some(live),
            Err(e) => {
                println!("damage      the scan for live bytes failed: {e}");
                scanned = false;
            }
        }
        "unknown"
    };
    print_amplification(&amp, unscanned);
    Ok(if s.damage.is_empty() && scanned {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Scans the database for its live bytes behind a spinner (drawn only on a terminal).
fn live_bytes(db: &Db) -> pmdb_engine::Result<u64> {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
    );
    bar.set_message("scanning for live bytes");
    bar.enable_steady_tick(Duration::from_millis(100));
    let live = db.live_bytes(|keys, bytes| {
        bar.set_message(format!(
            "scanning for live bytes: {keys} keys, {}",
            fmt_bytes(bytes)
        ));
    });
    bar.finish_and_clear();
    live
}

/// The amplification lines; `unscanned` stands for the live bytes if they are unknown.
fn print_amplification(a: &Amplification, unscanned: &str) {
    let ratio = |r: Option<f64>| r.map_or("unknown".to_string(), |r| format!("{r:.2}x"));
    let live = a.live_bytes.map_or(unscanned.to_string(), fmt_bytes);
    println!(
        "amplification  write {}, space {} (live {live}, PM {}, SST {})",
        ratio(a.write_amp()),
        ratio(a.space_amp()),
        fmt_bytes(a.pm_bytes_in_use),
        fmt_bytes(a.sst_bytes_live)
    );
    println!(
        "  written   {} committed, {} of it flushed out of PM; {} to SSTs ({} by flushes, {} by compactions)",
        fmt_bytes(a.committed_bytes),
        fmt_bytes(a.flushed_bytes),
        fmt_bytes(a.sst_bytes_written()),
        fmt_bytes(a.flush_bytes_written),
        fmt_bytes(a.compaction_bytes_written)
    );
}
