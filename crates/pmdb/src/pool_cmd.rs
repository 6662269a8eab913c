//! `pmdb pool create | info | check`, in the spirit of pmempool.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pmdb_pmem::{
    BackendChoice, DEFAULT_MAX_OWNERS, DEFAULT_ZONE_SIZE, DEFAULT_ZONES_PER_EXTENT, Pool,
    PoolOptions,
};

use pmdb_bench::limits::{accepted, check_space, fmt_bytes};
use pmdb_engine::{Db, DbError, DbOptions};

use crate::input::{as_option, power_of_two_size, size, whole};
use crate::paths::default_pool_dir;

/// Most extents a pool has (pmdb-pmem's format limit).
const MAX_EXTENTS: u64 = 4096;
/// Largest size option accepted before the geometry is known; the geometry then narrows
/// it (at most [`MAX_EXTENTS`] extents).
const MAX_SIZE: u64 = 1 << 50;
/// Largest zone: one zone holds the engine's largest record, and beyond a gigabyte a
/// zone only wastes space.
const MAX_ZONE_SIZE: u64 = 1 << 30;
/// Most zones per extent, and most owner slots (pmdb-pmem's format limits).
const MAX_ZONES_PER_EXTENT: u32 = 1 << 20;
const MAX_OWNERS: u32 = 1 << 24;

#[derive(Subcommand)]
pub enum PoolCommand {
    /// Create a pool.
    Create(CreateArgs),
    /// Show a pool's backend, geometry, occupancy and owners (read-only).
    Info(InfoArgs),
    /// Verify headers and owner words, then the database in the pool (root cells, catalog,
    /// memtables) as recovery reads it, all read-only; exits 1 on any damage.
    Check(PathArg),
}

#[derive(Args)]
pub struct PathArg {
    /// Pool directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
    /// Backend: auto, dax, memory or file
    #[arg(long, default_value = "auto", value_parser = parse_backend)]
    backend: BackendChoice,
}

impl PathArg {
    fn dir(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(default_pool_dir)
    }

    fn options(&self) -> PoolOptions {
        PoolOptions::default().with_backend(self.backend)
    }

    /// To inspect: nothing in the pool directory changes.
    fn read_only(&self) -> PoolOptions {
        self.options().with_read_only()
    }
}

#[derive(Args)]
pub struct CreateArgs {
    #[command(flatten)]
    target: PathArg,
    /// Size to create now, rounded up to whole extents, at most --max-size [default: one
    /// extent]
    #[arg(long, value_parser = size(1..=MAX_SIZE))]
    size: Option<u64>,
    /// Largest size the pool may grow to: 1 to 4096 extents
    #[arg(long, default_value = "8GiB", value_parser = size(1..=MAX_SIZE))]
    max_size: u64,
    /// Zone size (power of two, 4 KiB to 1 GiB)
    #[arg(long, default_value_t = DEFAULT_ZONE_SIZE, value_parser = power_of_two_size(4096..=MAX_ZONE_SIZE))]
    zone_size: u64,
    /// Zones per extent file (1 to 1048576)
    #[arg(long, default_value_t = DEFAULT_ZONES_PER_EXTENT, value_parser = whole(1..=MAX_ZONES_PER_EXTENT))]
    zones_per_extent: u32,
    /// Owner slots in the registry (1 to 16777216)
    #[arg(long, default_value_t = DEFAULT_MAX_OWNERS, value_parser = whole(1..=MAX_OWNERS))]
    max_owners: u32,
}

#[derive(Args)]
pub struct InfoArgs {
    #[command(flatten)]
    target: PathArg,
    /// List every live owner with its zone count
    #[arg(long)]
    owners: bool,
}

fn parse_backend(s: &str) -> Result<BackendChoice, String> {
    s.parse()
}

pub fn run(cmd: PoolCommand) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match cmd {
        PoolCommand::Create(args) => create(args),
        PoolCommand::Info(args) => {
            let pool = Pool::open(args.target.dir(), &args.target.read_only())?;
            print_info(&pool, args.owners);
            Ok(ExitCode::SUCCESS)
        }
        PoolCommand::Check(target) => Ok(check(&target)),
    }
}

/// Checks the sizes against the geometry, which each option alone could not: the pool has
/// 1 to [`MAX_EXTENTS`] extents of zone size × zones per extent, creates --size now and
/// must find room for it. Returns the extents to create now and at most.
fn extents(args: &CreateArgs) -> Result<(u32, u32), String> {
    let extent = args.zone_size * u64::from(args.zones_per_extent);
    let (lo, hi) = (extent, extent.saturating_mul(MAX_EXTENTS));
    if !(lo..=hi).contains(&args.max_size) {
        return Err(format!(
            "--max-size {} (1 to {MAX_EXTENTS} extents of --zone-size × --zones-per-extent)",
            accepted("a size", fmt_bytes(lo), fmt_bytes(hi))
        ));
    }
    let max_extents = args.max_size / extent;
    if let Some(size) = args.size
        && size > max_extents * extent
    {
        return Err(format!(
            "--size {} (--max-size in whole extents)",
            accepted("a size", "1 B", fmt_bytes(max_extents * extent))
        ));
    }
    let initial = args.size.map_or(1, |s| s.div_ceil(extent));
    let name = if args.size.is_some() {
        "size"
    } else {
        "zone_size × zones_per_extent (one extent)"
    };
    check_space(name, initial * extent, &args.target.dir()).map_err(as_option)?;
    // Both fit in u32: at most MAX_EXTENTS.
    Ok((initial as u32, max_extents as u32))
}

fn create(args: CreateArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (initial_extents, max_extents) = extents(&args)?;
    let options = PoolOptions {
        zone_size: Some(args.zone_size),
        zones_per_extent: args.zones_per_extent,
        max_owners: args.max_owners,
        initial_extents,
        max_extents: Some(max_extents),
        ..args.target.options()
    };
    let pool = Pool::create(args.target.dir(), &options)?;
    println!("created pool {}", args.target.dir().display());
    print_info(&pool, false);
    Ok(ExitCode::SUCCESS)
}

fn print_info(pool: &Pool, owners: bool) {
    let s = pool.alloc_stats();
    let r = pool.recovery_report();
    let dir = pool
        .dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let row = |k: &str, v: String| println!("{k:<12}{v}");
    row("pool", dir);
    row("uuid", pool.uuid_string());
    row("format", format!("version {}", pmdb_pmem::FORMAT_VERSION));
    row(
        "backend",
        format!("{} ({})", pool.backend(), pool.backend().durability()),
    );
    row("flush", pool.flush_insn().name().to_string());
    row("zone size", fmt_bytes(pool.zone_size()));
    row(
        "extents",
        format!(
            "{} of at most {} ({} mapped, {} zones each)",
            s.extents,
            pool.max_extents(),
            fmt_bytes(pool.mapped_bytes()),
            pool.zones_per_extent()
        ),
    );
    row(
        "zones",
        format!(
            "{} total, {} free, {} owned ({} owned)",
            s.zones,
            s.free_zones,
            s.owned_zones,
            fmt_bytes(s.owned_zones * pool.zone_size())
        ),
    );
    row(
        "owners",
        format!("{} live of {} slots", s.live_owners, pool.max_owners()),
    );
    row(
        "recovery",
        format!(
            "{} zone owner words and {} registry slots scanned in {:.3} ms",
            r.words_scanned,
            r.registry_slots,
            r.elapsed.as_secs_f64() * 1e3
        ),
    );
    if owners {
        for owner in pool.owners() {
            let zones = pool.zones_of(owner);
            println!("  {owner}: {} zones", zones.len());
        }
    }
}

/// Opens the pool read-only (which verifies every extent header and scans every owner
/// word, changing nothing) and reports damage; exit status 1 if there is any.
fn check(target: &PathArg) -> ExitCode {
    let dir = target.dir();
    let pool = match Pool::open(&dir, &target.read_only()) {
        Ok(pool) => pool,
        Err(e) => {
            println!("{}: damaged: {e}", dir.display());
            return ExitCode::from(1);
        }
    };
    let r = pool.recovery_report();
    for anomaly in &r.anomalies {
        println!("{}: damaged: {anomaly}", dir.display());
    }
    if !r.anomalies.is_empty() {
        return ExitCode::from(1);
    }
    println!(
        "{}: consistent ({} extents, {} owner words, {} live owners)",
        dir.display(),
        r.extents,
        r.words_scanned,
        r.live_owners
    );
    drop(pool);
    if check_database(&dir, target.read_only()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The engine's part of the check: the database opened read-only, so recovery runs in
/// DRAM and writes nothing, then what it found damaged. True when nothing was.
fn check_database(dir: &Path, pool: PoolOptions) -> bool {
    let options = DbOptions {
        pool,
        ..DbOptions::default()
    };
    match Db::open_read_only(dir, options) {
        Ok(db) => {
            let stats = db.recovery_stats();
            for damage in &stats.damage {
                println!("{}: damaged: {damage}", dir.display());
            }
            let tables = db.verify_tables();
            for problem in &tables {
                println!("{}: damaged SST: {problem}", dir.display());
            }
            if stats.damage.is_empty() && tables.is_empty() {
                println!(
                    "{}: database consistent ({} subtables, {} memtables, {} records)",
                    dir.display(),
                    stats.subtables,
                    stats.memtables,
                    stats.records
                );
            }
            stats.damage.is_empty() && tables.is_empty()
        }
        Err(DbError::NoDatabase { .. }) => {
            println!("{}: holds no pmdb database", dir.display());
            true
        }
        Err(e @ DbError::NotADatabase { .. }) => {
            println!("{}: {e}", dir.display());
            true
        }
        Err(e) => {
            println!("{}: damaged: {e}", dir.display());
            false
        }
    }
}
