//! The recovery benchmark: X-Engine's experiment of reopening a semi-persistent memtable
//! (records in PM, DRAM index rebuilt at open) against replaying a write-ahead log.
//!
//! This module owns the whole experiment. A child process loads N records (8-byte keys,
//! 500-byte values, durable batches of [`BATCH`]) into pmdb or into RocksDB with its WAL
//! alone (a write buffer larger than the data, so nothing reaches an SST: checked), says
//! so on stdout, and is killed with SIGKILL. The parent then times the reopen up to the
//! first read of a known key, checks the value, and reports reopen times, records/s,
//! pmdb's [`RecoveryStats`](pmdb_engine::RecoveryStats) and RocksDB ÷ pmdb. Every run is
//! a fresh load and kill, so every timed reopen is a recovery from a crash (RocksDB's
//! default open also turns the replayed WAL into an SST, after which there would be
//! nothing left to replay). How the child is started is the caller's business: the CLI
//! re-runs its own executable with a hidden subcommand that calls [`serve_load`].

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{BackendChoice, DEFAULT_ZONE_SIZE, DEFAULT_ZONES_PER_EXTENT, PoolOptions};
use serde::{Deserialize, Serialize};

use crate::engines::{Result, disk_usage};
use crate::limits::{
    InvalidSetting, MAX_KEYS, MAX_THREADS, check, check_fits, check_memory, check_space,
};
use crate::machine::{Machine, filesystem_of};
use crate::progress::progress;
use crate::ycsb::{Layout, value};

/// Records per durable write batch while loading, for both engines.
pub const BATCH: u64 = 1000;
/// Most timed reopens per engine and size (each one a full load first).
pub const MAX_RUNS: usize = 100;
/// The engines this binary can measure.
#[cfg(not(feature = "rocksdb"))]
pub const ENGINES: &[&str] = &["pmdb"];
/// The engines this binary can measure.
#[cfg(feature = "rocksdb")]
pub const ENGINES: &[&str] = &["pmdb", "rocksdb"];

/// X-Engine's records: 8-byte keys, one 500-byte value.
const LAYOUT: Layout = Layout::XENGINE;
const TABLE: &str = "usertable";
/// The most extents the benchmark's pmdb pool grows to, as in the other benchmarks.
const MAX_EXTENTS: u32 = 256;
const POOL_BYTES: u64 = MAX_EXTENTS as u64 * DEFAULT_ZONES_PER_EXTENT as u64 * DEFAULT_ZONE_SIZE;
/// Keys read back (untimed) after the timed read, spread over the whole load.
const SAMPLE: u64 = 1000;
/// What the loading child prints: progress, then the line that lets the parent kill it.
const LOADING: &str = "loading ";
const LOADED: &str = "loaded ";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecoveryConfig {
    pub dir: PathBuf,
    pub engines: Vec<String>,
    /// Database sizes, in records.
    pub records: Vec<u64>,
    /// Load, kill and timed reopen cycles per engine and size.
    pub runs: usize,
    /// pmdb's index rebuild threads; 0 is one per core.
    pub recovery_threads: usize,
}

impl RecoveryConfig {
    /// Refuses a configuration that could not run to the end: unknown engines (RocksDB
    /// when it is not built in), no runs or sizes, absurd counts, or more data than the
    /// pool, the filesystem of `dir` or the memory holds.
    pub fn validate(&self) -> std::result::Result<(), InvalidSetting> {
        if self.engines.is_empty() {
            return Err(InvalidSetting::new(
                "engines",
                "must name at least one engine",
            ));
        }
        if let Some(e) = self.engines.iter().find(|e| !ENGINES.contains(&e.as_str())) {
            let reason = if e == "rocksdb" {
                "names rocksdb, which is not built into this binary (build with --features rocksdb)"
                    .to_string()
            } else {
                format!("must be among {}, not {e:?}", ENGINES.join(", "))
            };
            return Err(InvalidSetting::new("engines", reason));
        }
        if self.records.is_empty() {
            return Err(InvalidSetting::new(
                "records",
                "must name at least one size",
            ));
        }
        for &records in &self.records {
            check("records", records, 1..=MAX_KEYS)?;
        }
        check("runs", self.runs, 1..=MAX_RUNS)?;
        check("recovery_threads", self.recovery_threads, 0..=MAX_THREADS)?;
        let largest = self.records.iter().copied().max().unwrap_or(0);
        let data = data_bytes(largest);
        check_fits(
            "records",
            data,
            Some(POOL_BYTES),
            "fits in the benchmark's pool",
        )?;
        // One engine's data at a time: each is deleted before the next loads.
        check_space("records", data, &self.dir)?;
        check_memory("records", self.memory_need(largest))
    }

    /// A lower bound on the memory one engine's run takes: its data, when the directory
    /// is tmpfs, and RocksDB's memtable, which the replay rebuilds in DRAM.
    fn memory_need(&self, records: u64) -> u64 {
        let data = data_bytes(records);
        let on_tmpfs = if filesystem_of(&self.dir) == "tmpfs" {
            data
        } else {
            0
        };
        let memtable = if self.engines.iter().any(|e| e == "rocksdb") {
            data
        } else {
            0
        };
        on_tmpfs.saturating_add(memtable)
    }
}

/// Key and value bytes of `records` records.
fn data_bytes(records: u64) -> u64 {
    records.saturating_mul((LAYOUT.key(0).len() + LAYOUT.value_size()) as u64)
}

/// What the loading child is asked to do.
#[derive(Clone, Debug)]
pub struct LoadJob {
    pub engine: String,
    pub dir: PathBuf,
    pub records: u64,
}

/// One load, kill and timed reopen.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    /// The load, as the child timed it.
    pub load_secs: f64,
    /// Bytes the engine's files occupy on the device after the load.
    pub data_bytes: u64,
    /// From the start of the open to the first read of the last key loaded returning.
    pub reopen_secs: f64,
    /// Records loaded ÷ reopen time.
    pub records_per_sec: f64,
    /// Keys read back and checked after the timed read (the timed one included).
    pub verified_keys: u64,
    pub pmdb: Option<PmdbRecovery>,
    pub rocksdb: Option<RocksRecovery>,
}

/// pmdb's [`RecoveryStats`](pmdb_engine::RecoveryStats) for one reopen.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PmdbRecovery {
    pub records: u64,
    pub bytes: u64,
    pub zones: usize,
    pub memtables: usize,
    pub threads: usize,
    /// `Db::open` as recovery timed it, and the index rebuild within it.
    pub open_ms: f64,
    pub rebuild_ms: f64,
    pub rebuild_records_per_sec: f64,
}

/// What RocksDB's reopen had to work with and left behind.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RocksRecovery {
    pub wal_files: usize,
    pub wal_bytes: u64,
    /// `rocksdb.estimate-num-keys` after the reopen (exact here: no overwrites, no
    /// deletes).
    pub keys: u64,
    /// SST files after the reopen: the replayed memtable, written to L0 by `DB::open`.
    pub sst_files_after_open: usize,
    /// That L0 write's time inside `DB::open`, from RocksDB's LOG (None if the LOG did
    /// not say).
    pub l0_write_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineResult {
    /// Name, version and backend.
    pub engine: String,
    pub settings: String,
    pub runs: Vec<RunResult>,
    pub median_reopen_secs: f64,
    pub median_records_per_sec: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SizeResult {
    pub records: u64,
    pub engines: Vec<EngineResult>,
    /// RocksDB's median reopen ÷ pmdb's, when both ran.
    pub rocksdb_over_pmdb: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecoveryReport {
    pub machine: Machine,
    pub command: String,
    pub filesystem: String,
    pub config: RecoveryConfig,
    pub key_size: usize,
    pub value_size: usize,
    pub batch: u64,
    pub rocksdb_built_in: bool,
    pub results: Vec<SizeResult>,
}

/// Runs the experiment; `launch` gives the command that runs [`serve_load`] for a job
/// in a child process.
pub fn run(
    config: &RecoveryConfig,
    command: String,
    launch: &dyn Fn(&LoadJob) -> Command,
) -> Result<RecoveryReport> {
    config.validate()?;
    std::fs::create_dir_all(&config.dir)?;
    let mut results = Vec::new();
    for &records in &config.records {
        let mut engines = Vec::new();
        for engine in &config.engines {
            let dir = config.dir.join(format!("recovery-{engine}"));
            let bar = progress(&format!("{engine}, {records} records"), records);
            let mut runs = Vec::new();
            let mut name = engine.clone();
            for run in 1..=config.runs {
                bar.set_message(format!("{engine} {records}: load {run}/{}", config.runs));
                bar.set_position(0);
                let _ = std::fs::remove_dir_all(&dir);
                // Checked again before every load: the filesystem is shared.
                check_space("records", data_bytes(records), &config.dir)?;
                let job = LoadJob {
                    engine: engine.clone(),
                    dir: dir.clone(),
                    records,
                };
                let load_secs = load_and_kill(launch(&job), &job, &bar)?;
                bar.set_message(format!("{engine} {records}: reopen {run}/{}", config.runs));
                let data_bytes = disk_usage(&dir);
                let reopened = reopen(&job, config.recovery_threads)?;
                let _ = std::fs::remove_dir_all(&dir);
                name = reopened.engine;
                runs.push(RunResult {
                    load_secs,
                    data_bytes,
                    reopen_secs: reopened.secs,
                    records_per_sec: records as f64 / reopened.secs,
                    verified_keys: reopened.verified,
                    pmdb: reopened.pmdb,
                    rocksdb: reopened.rocksdb,
                });
            }
            bar.finish_and_clear();
            let median_reopen_secs = median(runs.iter().map(|r| r.reopen_secs).collect());
            let settings = match engine.as_str() {
                #[cfg(feature = "rocksdb")]
                "rocksdb" => rocks::settings(records),
                _ => pmdb_settings(config.recovery_threads),
            };
            engines.push(EngineResult {
                engine: name,
                settings,
                runs,
                median_reopen_secs,
                median_records_per_sec: records as f64 / median_reopen_secs,
            });
        }
        let median_of = |id: &str| {
            config
                .engines
                .iter()
                .zip(&engines)
                .find(|(e, _)| *e == id)
                .map(|(_, r)| r.median_reopen_secs)
        };
        let rocksdb_over_pmdb = median_of("rocksdb")
            .zip(median_of("pmdb"))
            .map(|(r, p)| r / p);
        results.push(SizeResult {
            records,
            engines,
            rocksdb_over_pmdb,
        });
    }
    Ok(RecoveryReport {
        machine: Machine::detect(),
        command,
        filesystem: filesystem_of(&config.dir),
        config: config.clone(),
        key_size: LAYOUT.key(0).len(),
        value_size: LAYOUT.value_size(),
        batch: BATCH,
        rocksdb_built_in: cfg!(feature = "rocksdb"),
        results,
    })
}

/// Starts the loading child, follows its progress on `bar`, and kills it with SIGKILL
/// once it has loaded everything; returns the load time it reported.
fn load_and_kill(mut command: Command, job: &LoadJob, bar: &indicatif::ProgressBar) -> Result<f64> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the {} load: {e}", job.engine))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the load's stdout is not piped")?;
    let mut load_secs = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(done) = line.strip_prefix(LOADING) {
            bar.set_position(done.parse().unwrap_or(0));
        } else if let Some(rest) = line.strip_prefix(LOADED) {
            load_secs = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok());
            break;
        }
    }
    // Killed whether or not it finished: a child that went astray must not outlive us.
    let _ = child.kill();
    let status = child.wait()?;
    load_secs.ok_or_else(|| {
        format!(
            "the {} load of {} records ended ({status}) before it reported finishing",
            job.engine, job.records
        )
        .into()
    })
}

/// The loading child's side: loads `job`, prints progress and then the line that tells
/// the parent it is done, and waits (database open) until it is killed or its stdin
/// closes.
pub fn serve_load(job: &LoadJob) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let start = Instant::now();
    let mut loaded = |done: u64| -> Result<()> {
        if done < job.records {
            writeln!(out, "{LOADING}{done}")?;
            return Ok(());
        }
        writeln!(
            out,
            "{LOADED}{} {:.6}",
            job.records,
            start.elapsed().as_secs_f64()
        )?;
        out.flush()?;
        // The parent kills us now; EOF on stdin means it is gone without doing so.
        std::io::stdin().read_to_end(&mut Vec::new())?;
        Ok(())
    };
    match job.engine.as_str() {
        "pmdb" => load_pmdb(job, &mut loaded),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocks::load(job, &mut loaded),
        other => Err(format!("unknown engine {other:?} (built in: {ENGINES:?})").into()),
    }
}

fn pmdb_options(recovery_threads: usize, create: bool) -> DbOptions {
    DbOptions {
        pool: PoolOptions {
            backend: BackendChoice::Auto,
            max_extents: Some(MAX_EXTENTS),
            ..PoolOptions::default()
        },
        create_if_missing: create,
        recovery_threads,
        ..DbOptions::default()
    }
}

/// Batches of [`BATCH`] records numbered from 0, as `(first, end)`.
fn batches(records: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..records)
        .step_by(BATCH as usize)
        .map(move |first| (first, (first + BATCH).min(records)))
}

/// Loads with `sync` writes, calling `loaded` after every batch with the records so far.
fn load_pmdb(job: &LoadJob, loaded: &mut dyn FnMut(u64) -> Result<()>) -> Result<()> {
    let db = Db::open(&job.dir, pmdb_options(0, true))?;
    let table = db.subtable(TABLE)?;
    for (first, end) in batches(job.records) {
        let mut batch = WriteBatch::new();
        for i in first..end {
            batch.put(&table, LAYOUT.key(i), value(&LAYOUT, i, 0));
        }
        db.write(batch, WriteOptions { sync: true })?;
        loaded(end)?;
    }
    Ok(())
}

/// What one timed reopen found.
struct Reopened {
    engine: String,
    secs: f64,
    verified: u64,
    pmdb: Option<PmdbRecovery>,
    rocksdb: Option<RocksRecovery>,
}

fn reopen(job: &LoadJob, recovery_threads: usize) -> Result<Reopened> {
    match job.engine.as_str() {
        "pmdb" => reopen_pmdb(job, recovery_threads),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocks::reopen(job),
        other => Err(format!("unknown engine {other:?}").into()),
    }
}

fn reopen_pmdb(job: &LoadJob, recovery_threads: usize) -> Result<Reopened> {
    let last = job.records - 1;
    let key = LAYOUT.key(last);
    let start = Instant::now();
    let db = Db::open(&job.dir, pmdb_options(recovery_threads, false))?;
    let table = db.existing_subtable(TABLE)?;
    let first = table.get(&key)?;
    let secs = start.elapsed().as_secs_f64();
    check_value(job, last, first.as_deref())?;
    drop(first);
    let mut verified = 1;
    for i in sample(job.records) {
        check_value(job, i, table.get(LAYOUT.key(i))?.as_deref())?;
        verified += 1;
    }
    let s = db.recovery_stats();
    Ok(Reopened {
        engine: format!(
            "pmdb {} ({})",
            env!("CARGO_PKG_VERSION"),
            db.device().backend
        ),
        secs,
        verified,
        pmdb: Some(PmdbRecovery {
            records: s.records,
            bytes: s.bytes,
            zones: s.zones,
            memtables: s.memtables,
            threads: s.threads,
            open_ms: s.elapsed.as_secs_f64() * 1e3,
            rebuild_ms: s.rebuild.as_secs_f64() * 1e3,
            rebuild_records_per_sec: s.records_per_sec(),
        }),
        rocksdb: None,
    })
}

/// Up to [`SAMPLE`] record numbers spread evenly over `records`.
fn sample(records: u64) -> impl Iterator<Item = u64> {
    let n = records.min(SAMPLE);
    (0..n).map(move |j| j * records / n)
}

/// An error unless the reopened database gave record `i` the value it was loaded with.
fn check_value(job: &LoadJob, i: u64, got: Option<&[u8]>) -> Result<()> {
    match got {
        Some(v) if v == value(&LAYOUT, i, 0) => Ok(()),
        Some(_) => Err(format!(
            "{}: record {i} of {} read back with a value other than the one loaded",
            job.engine, job.records
        )
        .into()),
        None => Err(format!(
            "{}: record {i} of {} is missing after the reopen",
            job.engine, job.records
        )
        .into()),
    }
}

/// pmdb's settings, stated for the report.
fn pmdb_settings(recovery_threads: usize) -> String {
    let threads = if recovery_threads == 0 {
        "one per core".to_string()
    } else {
        recovery_threads.to_string()
    };
    format!(
        "WriteOptions {{ sync: true }}, default geometry (4 MiB zones, 256 MiB memtables), \
         index rebuild threads: {threads}"
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// RocksDB with its WAL alone: the write buffer holds the whole load, so the reopen
/// must replay every record from the log.
#[cfg(feature = "rocksdb")]
mod rocks {
    use std::path::Path;
    use std::time::Instant;

    use rocksdb::{DB, Options, WriteBatch, WriteOptions};

    use super::{
        LAYOUT, LoadJob, Reopened, Result, RocksRecovery, batches, check_value, data_bytes, sample,
    };
    use crate::limits::fmt_bytes;

    /// RocksDB caps a write buffer at 64 GiB.
    const MAX_WRITE_BUFFER: u64 = 64 << 30;

    /// A quarter more than the data, at least 64 MiB (RocksDB's default): the
    /// memtable's per-entry overhead (internal key, skiplist node, about 6% here) stays
    /// inside, so the memtable never fills and nothing is flushed. No more than that:
    /// RocksDB preallocates its WAL in blocks of 1.1 write buffers, and on tmpfs that
    /// space is memory.
    fn write_buffer(records: u64) -> usize {
        let data = data_bytes(records);
        data.saturating_add(data / 4)
            .clamp(64 << 20, MAX_WRITE_BUFFER) as usize
    }

    fn options(records: u64, create: bool) -> Options {
        let mut options = Options::default();
        options.create_if_missing(create);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as i32;
        options.increase_parallelism(cores);
        options.set_level_compaction_dynamic_level_bytes(true);
        options.set_write_buffer_size(write_buffer(records));
        options
    }

    pub(super) fn settings(records: u64) -> String {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        format!(
            "WAL on, WriteOptions::set_sync(true); write_buffer_size {} (1.25 × the data; \
             max_write_buffer_number 2, the default), increase_parallelism({cores}), \
             level_compaction_dynamic_level_bytes true; other options default, \
             avoid_flush_during_recovery false among them: DB::open replays the WAL into \
             a memtable and writes it to an L0 SST before returning",
            fmt_bytes(write_buffer(records) as u64)
        )
    }

    pub(super) fn load(job: &LoadJob, loaded: &mut dyn FnMut(u64) -> Result<()>) -> Result<()> {
        let db = DB::open(&options(job.records, true), &job.dir)?;
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        for (first, end) in batches(job.records) {
            let mut batch = WriteBatch::default();
            for i in first..end {
                batch.put(LAYOUT.key(i), super::value(&LAYOUT, i, 0));
            }
            db.write_opt(batch, &sync)?;
            loaded(end)?;
        }
        Ok(())
    }

    /// Files directly in `dir` whose names end in `ext`: how many, and their bytes.
    fn files(dir: &Path, ext: &str) -> Result<(usize, u64)> {
        let (mut n, mut bytes) = (0, 0);
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().ends_with(ext) {
                n += 1;
                bytes += entry.metadata()?.len();
            }
        }
        Ok((n, bytes))
    }

    pub(super) fn reopen(job: &LoadJob) -> Result<Reopened> {
        let (ssts, _) = files(&job.dir, ".sst")?;
        if ssts > 0 {
            return Err(format!(
                "RocksDB wrote {ssts} .sst files while loading {} records into {}: the reopen \
                 would not replay the whole WAL, so it would not measure WAL recovery",
                job.records,
                job.dir.display()
            )
            .into());
        }
        let (wal_files, wal_bytes) = files(&job.dir, ".log")?;
        let options = options(job.records, false);
        let last = job.records - 1;
        let key = LAYOUT.key(last);
        let start = Instant::now();
        let db = DB::open(&options, &job.dir)?;
        let first = db.get_pinned(&key)?;
        let secs = start.elapsed().as_secs_f64();
        check_value(job, last, first.as_deref())?;
        drop(first);
        let mut verified = 1;
        for i in sample(job.records) {
            check_value(job, i, db.get_pinned(LAYOUT.key(i))?.as_deref())?;
            verified += 1;
        }
        let keys = db
            .property_int_value("rocksdb.estimate-num-keys")?
            .unwrap_or(0);
        drop(db);
        let (sst_files_after_open, _) = files(&job.dir, ".sst")?;
        let log = std::fs::read_to_string(job.dir.join("LOG")).unwrap_or_default();
        Ok(Reopened {
            engine: "RocksDB (system librocksdb)".into(),
            secs,
            verified,
            pmdb: None,
            rocksdb: Some(RocksRecovery {
                wal_files,
                wal_bytes,
                keys,
                sst_files_after_open,
                l0_write_ms: l0_write_ms(&log),
            }),
        })
    }

    /// The time between RocksDB's LOG lines "[WriteLevel0TableForRecovery] Level-0
    /// table #N: started" and the one that reports its bytes, summed over the tables.
    fn l0_write_ms(log: &str) -> Option<f64> {
        // "2025/01/31-12:34:56.789012 <thread> ..." — seconds within the day suffice: an
        // open does not cross midnight often, and one that does is reported as unknown.
        let at = |line: &str| -> Option<f64> {
            let time = line.split_whitespace().next()?.split_once('-')?.1;
            let mut parts = time.split(':');
            let h: f64 = parts.next()?.parse().ok()?;
            let m: f64 = parts.next()?.parse().ok()?;
            let s: f64 = parts.next()?.parse().ok()?;
            Some(h * 3600.0 + m * 60.0 + s)
        };
        let mut total = 0.0;
        let mut started = None;
        let mut seen = false;
        for line in log
            .lines()
            .filter(|l| l.contains("[WriteLevel0TableForRecovery] Level-0 table #"))
        {
            if line.ends_with(": started") {
                started = Some(at(line)?);
            } else if let Some(t0) = started.take() {
                let took = at(line)? - t0;
                if took < 0.0 {
                    return None;
                }
                total += took;
                seen = true;
            }
        }
        seen.then_some(total * 1e3)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn reads_the_l0_write_from_the_log() {
            let log = "2025/01/31-12:00:00.100000 7f [db/db_impl/db_impl_open.cc:1000] Recovering log #4 mode 2\n\
                       2025/01/31-12:00:01.250000 7f [db/db_impl/db_impl_open.cc:1500] [default] [WriteLevel0TableForRecovery] Level-0 table #7: started\n\
                       2025/01/31-12:00:01.750000 7f [db/db_impl/db_impl_open.cc:1550] [default] [WriteLevel0TableForRecovery] Level-0 table #7: 5000 bytes OK\n";
            let ms = super::l0_write_ms(log).unwrap();
            assert!((ms - 500.0).abs() < 1e-6, "{ms}");
            assert_eq!(super::l0_write_ms("nothing here"), None);
        }
    }
}

/// "1 M", "10 M", "2000": record counts as the tables and the chart label them.
fn fmt_count(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{} M", n / 1_000_000)
    } else {
        n.to_string()
    }
}

pub fn markdown(r: &RecoveryReport) -> String {
    let m = &r.machine;
    let c = &r.config;
    let mut out =
        String::from("# pmdb recovery: PM memtable reopen against RocksDB's WAL replay\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores, {} GiB), Linux {}, flush `{}`, pmdb {}. Device: {} ({}). \
         Keys {} B, values {} B, loaded in durable batches of {} records by a child process \
         killed with SIGKILL once loaded; {} run(s) per engine and size, each a fresh load.\n\n\
         Command: `{}`\n\n",
        m.cpu,
        m.cores,
        m.memory_gib,
        m.kernel,
        m.flush_instruction,
        m.pmdb_version,
        r.filesystem,
        c.dir.display(),
        r.key_size,
        r.value_size,
        r.batch,
        c.runs,
        r.command
    ));
    if !r.rocksdb_built_in {
        out.push_str(
            "**RocksDB was not built into this binary** (build with `--features rocksdb`): \
             pmdb alone.\n\n",
        );
    }
    out.push_str(
        "Reopen: from the start of the open to the first read of the last key loaded \
         returning its value (pmdb: `Db::open` + subtable + get; RocksDB: `DB::open` + get).\n\n",
    );
    out.push_str("| records | engine | reopen (median) | records/s | runs | load | data on device |\n|---:|---|---:|---:|---|---:|---:|\n");
    for s in &r.results {
        for e in &s.engines {
            let runs: Vec<String> = e
                .runs
                .iter()
                .map(|x| format!("{:.3}", x.reopen_secs))
                .collect();
            let load = median(e.runs.iter().map(|x| x.load_secs).collect());
            let bytes = e.runs.first().map_or(0, |x| x.data_bytes);
            out.push_str(&format!(
                "| {} | {} | {:.3} s | {:.2} M | {} s | {:.2} s | {} |\n",
                s.records,
                e.engine,
                e.median_reopen_secs,
                e.median_records_per_sec / 1e6,
                runs.join(", "),
                load,
                crate::limits::fmt_bytes(bytes)
            ));
        }
    }
    let ratios: Vec<&SizeResult> = r
        .results
        .iter()
        .filter(|s| s.rocksdb_over_pmdb.is_some())
        .collect();
    if !ratios.is_empty() {
        out.push_str("\n| records | RocksDB ÷ pmdb (median reopen) |\n|---:|---:|\n");
        for s in ratios {
            out.push_str(&format!(
                "| {} | {:.1}× |\n",
                s.records,
                s.rocksdb_over_pmdb.unwrap_or_default()
            ));
        }
    }
    // Every run with its size and number (from 1).
    let runs = || {
        r.results.iter().flat_map(|s| {
            s.engines.iter().flat_map(move |e| {
                e.runs
                    .iter()
                    .enumerate()
                    .map(move |(i, x)| (s.records, i + 1, x))
            })
        })
    };
    let pmdb: Vec<_> = runs()
        .filter_map(|(n, i, x)| Some((n, i, x.pmdb.as_ref()?)))
        .collect();
    if !pmdb.is_empty() {
        out.push_str(
            "\n## pmdb's recovery stats, per run\n\n\
             | records | run | records recovered | bytes | zones | memtables | threads | \
             Db::open | index rebuild | rebuild records/s |\n\
             |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
    }
    for (records, run, p) in pmdb {
        out.push_str(&format!(
            "| {records} | {run} | {} | {} | {} | {} | {} | {:.0} ms | {:.0} ms | {:.2} M |\n",
            p.records,
            p.bytes,
            p.zones,
            p.memtables,
            p.threads,
            p.open_ms,
            p.rebuild_ms,
            p.rebuild_records_per_sec / 1e6
        ));
    }
    let rocks: Vec<_> = runs()
        .filter_map(|(n, i, x)| Some((n, i, x.rocksdb.as_ref()?)))
        .collect();
    if !rocks.is_empty() {
        out.push_str(
            "\n## RocksDB's reopen, per run\n\n\
             | records | run | WAL files | WAL bytes | keys after reopen | SSTs after reopen | \
             L0 write in DB::open |\n|---:|---:|---:|---:|---:|---:|---:|\n",
        );
    }
    for (records, run, k) in rocks {
        let l0 = k
            .l0_write_ms
            .map_or_else(|| "—".to_string(), |ms| format!("{ms:.0} ms"));
        out.push_str(&format!(
            "| {records} | {run} | {} | {} | {} | {} | {l0} |\n",
            k.wal_files, k.wal_bytes, k.keys, k.sst_files_after_open
        ));
    }
    let verified: Vec<String> = r
        .results
        .iter()
        .flat_map(|s| {
            s.engines.iter().map(move |e| {
                let keys = e.runs.iter().map(|x| x.verified_keys).min().unwrap_or(0);
                format!("{} at {}: {keys}", e.engine, s.records)
            })
        })
        .collect();
    out.push_str(&format!(
        "\nEvery timed read returned the value written. Keys read back and checked per run \
         (the timed one and up to {SAMPLE} spread over the load): {}.\n\n## Settings\n\n",
        verified.join("; ")
    ));
    let mut seen = Vec::new();
    for s in &r.results {
        for e in &s.engines {
            if !seen.contains(&(&e.engine, &e.settings)) {
                seen.push((&e.engine, &e.settings));
                out.push_str(&format!(
                    "- {} ({} records): {}\n",
                    e.engine, s.records, e.settings
                ));
            }
        }
    }
    out
}

/// The reopen times as grouped bars (one group per size), written to
/// `<dir>/recovery.svg`.
pub fn chart(r: &RecoveryReport, dir: &Path) -> Result<PathBuf> {
    let Some(first) = r.results.first() else {
        return Err("the report has no results to chart".into());
    };
    std::fs::create_dir_all(dir)?;
    let categories: Vec<String> = r
        .results
        .iter()
        .map(|s| format!("{} records", fmt_count(s.records)))
        .collect();
    let series: Vec<(String, Vec<f64>)> = first
        .engines
        .iter()
        .map(|e| {
            let ms = r
                .results
                .iter()
                .map(|s| {
                    s.engines
                        .iter()
                        .find(|x| x.engine == e.engine)
                        .map_or(0.0, |x| x.median_reopen_secs * 1e3)
                })
                .collect();
            (e.engine.clone(), ms)
        })
        .collect();
    let path = dir.join("recovery.svg");
    crate::charts::grouped_bars(
        &path,
        "Reopen after SIGKILL until the first read (median)",
        "milliseconds",
        &categories,
        &series,
    )?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> RecoveryConfig {
        RecoveryConfig {
            dir: dir.into(),
            engines: vec!["pmdb".into()],
            records: vec![2500],
            runs: 1,
            recovery_threads: 0,
        }
    }

    /// The child's load and the parent's reopen, in one process: a dropped `Db` is not a
    /// crash, but recovery reads the same records.
    #[test]
    fn loads_and_reopens_pmdb_in_process() {
        let dir = tempfile::tempdir().unwrap();
        let job = LoadJob {
            engine: "pmdb".into(),
            dir: dir.path().join("db"),
            records: 2500,
        };
        let mut seen = Vec::new();
        load_pmdb(&job, &mut |n| {
            seen.push(n);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [1000, 2000, 2500]);
        let r = reopen(&job, 1).unwrap();
        assert_eq!(r.verified, 1 + 1000);
        let p = r.pmdb.unwrap();
        assert_eq!((p.records, p.threads), (2500, 1));
        assert!(r.engine.starts_with("pmdb"));
        assert!(disk_usage(&job.dir) > 2500 * 508);
        let missing = LoadJob {
            dir: dir.path().join("none"),
            ..job
        };
        assert!(reopen(&missing, 1).is_err());
    }

    #[test]
    fn refuses_configs_that_cannot_run() {
        let dir = tempfile::tempdir().unwrap();
        let good = config(dir.path());
        assert!(good.validate().is_ok());
        type Spoil = fn(&mut RecoveryConfig);
        let cases: [(&str, Spoil); 7] = [
            ("engines", |c| c.engines.clear()),
            ("engines", |c| c.engines = vec!["lmdb".into()]),
            ("records", |c| c.records.clear()),
            ("records", |c| c.records = vec![0]),
            ("records", |c| c.records = vec![MAX_KEYS + 1]),
            ("runs", |c| c.runs = 0),
            ("recovery_threads", |c| c.recovery_threads = MAX_THREADS + 1),
        ];
        for (name, spoil) in cases {
            let mut c = good.clone();
            spoil(&mut c);
            let e = c.validate().unwrap_err();
            assert_eq!(e.name, name, "{e}");
        }
        #[cfg(not(feature = "rocksdb"))]
        {
            let mut c = good.clone();
            c.engines.push("rocksdb".into());
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains("not built into this binary"), "{e}");
        }
    }

    #[test]
    fn a_child_that_dies_early_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let job = LoadJob {
            engine: "pmdb".into(),
            dir: dir.path().into(),
            records: 10,
        };
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo 'loading 5'; exit 3"]);
        let e = load_and_kill(sh, &job, &indicatif::ProgressBar::hidden())
            .unwrap_err()
            .to_string();
        assert!(e.contains("before it reported finishing"), "{e}");
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo 'loaded 10 0.25'; exec sleep 30"]);
        let t0 = Instant::now();
        let secs = load_and_kill(sh, &job, &indicatif::ProgressBar::hidden()).unwrap();
        assert_eq!(secs, 0.25);
        assert!(t0.elapsed().as_secs() < 10, "the child was not killed");
    }

    #[test]
    fn medians_and_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
        assert_eq!(fmt_count(10_000_000), "10 M");
        assert_eq!(fmt_count(2000), "2000");
        assert_eq!(sample(3).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(sample(1_000_000).count(), 1000);
    }
}
