//! The engine benchmark: durable puts (16 B keys, 100 B values) at 1 and 2 threads next to
//! the commit floor measured in the same run; gets on loaded databases of given sizes,
//! uniform and zipfian; and recovery (index rebuild) at 1 and 2 threads.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use pmdb_pmem::{BackendChoice, DEFAULT_ZONE_SIZE, DEFAULT_ZONES_PER_EXTENT, Pool, PoolOptions};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde::Serialize;

use crate::dist::{ZIPFIAN_CONSTANT, Zipfian, fnv64};
use crate::histogram::{Latencies, Summary, fmt_ns};
use crate::limits::{
    InvalidSetting, MAX_KEYS, MAX_OPERATIONS, MAX_THREADS, check, check_fits, check_space, split,
};
use crate::machine::{Machine, filesystem_of};
use crate::progress::{progress, tick};

#[derive(Clone, Debug, Serialize)]
pub struct EngineBenchConfig {
    pub dir: PathBuf,
    /// Durable puts per thread count.
    pub put_ops: u64,
    pub put_threads: Vec<usize>,
    /// Database sizes (records) for the get and recovery measurements.
    pub key_counts: Vec<u64>,
    pub get_ops: u64,
    pub recovery_threads: Vec<usize>,
    pub key_size: usize,
    pub value_size: usize,
    /// `DbOptions::prefault_zones` of every database the benchmark opens.
    pub prefault_zones: usize,
}

impl EngineBenchConfig {
    /// Refuses a configuration that could not run to the end: no operations, threads or
    /// keys, absurd counts, or more data than the pool or the filesystem of `dir` holds.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        check("put_ops", self.put_ops, 1..=MAX_OPERATIONS)?;
        check("get_ops", self.get_ops, 1..=MAX_OPERATIONS)?;
        for &threads in &self.put_threads {
            check("put_threads", threads, 1..=MAX_THREADS)?;
        }
        for &threads in &self.recovery_threads {
            check("recovery_threads", threads, 0..=MAX_THREADS)?;
        }
        for &keys in &self.key_counts {
            check("keys", keys, 1..=MAX_KEYS)?;
        }
        check("key_size", self.key_size, 1..=pmdb_engine::DEFAULT_MAX_KEY)?;
        check(
            "value_size",
            self.value_size,
            0..=pmdb_engine::DEFAULT_MAX_VALUE,
        )?;
        let record = (self.key_size + self.value_size) as u64;
        let largest = self.key_counts.iter().copied().max().unwrap_or(0);
        for (name, records) in [("put_ops", self.put_ops), ("keys", largest)] {
            let need = records.saturating_mul(record);
            check_fits(name, need, Some(POOL_BYTES), "fits in the benchmark's pool")?;
            check_space(name, need, &self.dir)?;
        }
        Ok(())
    }
}

/// The most extents a benchmark database grows to.
const MAX_EXTENTS: u32 = 256;
/// What a benchmark database holds at most (default geometry, [`MAX_EXTENTS`] extents).
const POOL_BYTES: u64 = MAX_EXTENTS as u64 * DEFAULT_ZONES_PER_EXTENT as u64 * DEFAULT_ZONE_SIZE;

#[derive(Clone, Debug, Serialize)]
pub struct PutResult {
    pub threads: usize,
    pub ops: u64,
    pub ops_per_sec: f64,
    pub latency: Summary,
    /// Throughput relative to one thread issuing the commit floor back to back.
    pub ratio_to_floor: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct GetResult {
    pub keys: u64,
    pub distribution: String,
    pub latency: Summary,
}

#[derive(Clone, Debug, Serialize)]
pub struct IndexSize {
    pub keys: u64,
    pub memtables: usize,
    pub index_entries: u64,
    pub index_bytes: u64,
    pub bytes_per_key: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RecoveryResult {
    pub keys: u64,
    pub threads: usize,
    pub records: u64,
    pub zones: usize,
    pub rebuild_ms: f64,
    pub open_ms: f64,
    pub records_per_sec: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EngineReport {
    pub machine: Machine,
    pub command: String,
    pub filesystem: String,
    pub backend: String,
    pub config: EngineBenchConfig,
    pub commit_floor: Summary,
    pub puts: Vec<PutResult>,
    pub load_secs: Vec<(u64, f64)>,
    /// The DRAM index of each loaded database.
    pub index: Vec<IndexSize>,
    pub gets: Vec<GetResult>,
    pub recovery: Vec<RecoveryResult>,
}

/// The i-th benchmark key: 16 hex digits of a hash, so inserts land all over the index.
pub fn bench_key(i: u64, size: usize) -> Vec<u8> {
    let mut k = format!("{:016x}", fnv64(i)).into_bytes();
    k.resize(size, b'0');
    k
}

fn options(config: &EngineBenchConfig) -> DbOptions {
    DbOptions {
        pool: PoolOptions {
            backend: BackendChoice::Auto,
            max_extents: Some(MAX_EXTENTS),
            ..PoolOptions::default()
        },
        prefault_zones: config.prefault_zones,
        ..DbOptions::default()
    }
}

fn fresh(dir: &Path, config: &EngineBenchConfig) -> pmdb_engine::Result<Db> {
    let _ = std::fs::remove_dir_all(dir);
    Db::open(dir, options(config))
}

pub fn run(
    config: &EngineBenchConfig,
    command: String,
) -> Result<EngineReport, Box<dyn std::error::Error>> {
    config.validate()?;
    std::fs::create_dir_all(&config.dir)?;
    let floor_dir = config.dir.join("floor");
    let _ = std::fs::remove_dir_all(&floor_dir);
    let pool = Pool::create(&floor_dir, &PoolOptions::default())?;
    let backend = pool.backend().name().to_string();
    let owner = pool.create_owner()?;
    let zone = pool.alloc_zone(owner)?.commit()?;
    let floor = crate::pmem::commit_floor(&pool, zone, config.put_ops, &backend)?;
    drop(pool);
    let _ = std::fs::remove_dir_all(&floor_dir);

    let value = vec![b'v'; config.value_size];
    let mut puts = Vec::new();
    for &threads in &config.put_threads {
        let dir = config.dir.join("puts");
        let db = fresh(&dir, config)?;
        let sub = db.subtable("usertable")?;
        let bar = progress(&format!("durable put, {threads} thread(s)"), config.put_ops);
        let start = Instant::now();
        let lats: Vec<pmdb_engine::Result<Latencies>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (sub, value, bar) = (sub.clone(), &value, &bar);
                    s.spawn(move || {
                        let mut lat = Latencies::default();
                        for i in split(config.put_ops, threads, t) {
                            let key = bench_key(i, config.key_size);
                            let t0 = Instant::now();
                            sub.put(&key, value)?;
                            lat.record(t0.elapsed().as_nanos() as u64);
                            tick(bar, i);
                        }
                        Ok(lat)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("put thread"))
                .collect()
        });
        let secs = start.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let mut all = Latencies::default();
        for lat in lats {
            all.merge(&lat?);
        }
        let ops = config.put_ops;
        let ops_per_sec = ops as f64 / secs;
        puts.push(PutResult {
            threads,
            ops,
            ops_per_sec,
            latency: all.summary(),
            ratio_to_floor: ops_per_sec / floor.ops_per_sec(),
        });
        drop((sub, db));
        let _ = std::fs::remove_dir_all(&dir);
    }

    let mut gets = Vec::new();
    let mut recovery = Vec::new();
    let mut load_secs = Vec::new();
    let mut index = Vec::new();
    for &keys in &config.key_counts {
        let dir = config.dir.join(format!("gets-{keys}"));
        let db = fresh(&dir, config)?;
        let sub = db.subtable("usertable")?;
        let bar = progress(&format!("load {keys} records"), keys);
        let start = Instant::now();
        for first in (0..keys).step_by(1000) {
            let mut batch = WriteBatch::new();
            for i in first..(first + 1000).min(keys) {
                batch.put(&sub, bench_key(i, config.key_size), &value);
            }
            db.write(batch, WriteOptions::default())?;
            bar.inc(1000.min(keys - first));
        }
        bar.finish_and_clear();
        load_secs.push((keys, start.elapsed().as_secs_f64()));
        for st in db.subtable_stats() {
            index.push(IndexSize {
                keys,
                memtables: st.memtables,
                index_entries: st.index_keys,
                index_bytes: st.index_bytes,
                bytes_per_key: st.index_bytes_per_key(),
            });
        }

        let zipf = Zipfian::new(keys, ZIPFIAN_CONSTANT)?;
        for dist in ["uniform", "zipfian"] {
            let mut rng = SmallRng::seed_from_u64(keys);
            let mut lat = Latencies::default();
            let bar = progress(&format!("get {dist}, {keys} records"), config.get_ops);
            for i in 0..config.get_ops {
                let k = if dist == "uniform" {
                    rand::Rng::random_range(&mut rng, 0..keys)
                } else {
                    zipf.next_scrambled(&mut rng)
                };
                let key = bench_key(k, config.key_size);
                let t0 = Instant::now();
                let v = sub.get(&key)?;
                let found = v.is_some_and(|v| v.len() == value.len());
                lat.record(t0.elapsed().as_nanos() as u64);
                if !found {
                    return Err(format!("key {k} of {keys} loaded is missing").into());
                }
                tick(&bar, i);
            }
            bar.finish_and_clear();
            gets.push(GetResult {
                keys,
                distribution: dist.into(),
                latency: lat.summary(),
            });
        }
        drop((sub, db));
        for &threads in &config.recovery_threads {
            let start = Instant::now();
            let db = Db::open(
                &dir,
                DbOptions {
                    recovery_threads: threads,
                    ..options(config)
                },
            )?;
            let open_ms = start.elapsed().as_secs_f64() * 1e3;
            let s = db.recovery_stats();
            recovery.push(RecoveryResult {
                keys,
                threads,
                records: s.records,
                zones: s.zones,
                rebuild_ms: s.rebuild.as_secs_f64() * 1e3,
                open_ms,
                records_per_sec: s.records_per_sec(),
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(EngineReport {
        machine: Machine::detect(),
        command,
        filesystem: filesystem_of(&config.dir),
        backend,
        config: config.clone(),
        commit_floor: floor,
        puts,
        load_secs,
        index,
        gets,
        recovery,
    })
}

pub fn markdown(r: &EngineReport) -> String {
    let m = &r.machine;
    let mut out = String::from("# pmdb engine: durable puts, gets, recovery\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores, {} GiB), Linux {}, flush `{}`, pmdb {}. Device: {} ({} backend). Keys {} B, values {} B, {} zones kept pre-faulted.\n\nCommand: `{}`\n\n",
        m.cpu, m.cores, m.memory_gib, m.kernel, m.flush_instruction, m.pmdb_version,
        r.filesystem, r.backend, r.config.key_size, r.config.value_size, r.config.prefault_zones, r.command
    ));
    out.push_str("## Durable put vs the commit floor\n\n");
    out.push_str(&format!(
        "Commit floor (116 B record persisted + 8-byte head persisted, one thread): mean {}, p50 {}, p99 {} — {:.0} ops/s.\n\n",
        fmt_ns(r.commit_floor.mean_ns),
        fmt_ns(r.commit_floor.p50_ns as f64),
        fmt_ns(r.commit_floor.p99_ns as f64),
        r.commit_floor.ops_per_sec()
    ));
    out.push_str("| threads | puts | ops/s | × floor | p50 | p99 | p99.9 |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    for p in &r.puts {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.2} | {} | {} | {} |\n",
            p.threads,
            p.ops,
            p.ops_per_sec,
            p.ratio_to_floor,
            fmt_ns(p.latency.p50_ns as f64),
            fmt_ns(p.latency.p99_ns as f64),
            fmt_ns(p.latency.p999_ns as f64)
        ));
    }
    out.push_str("\n## Get\n\n| records | distribution | mean | p50 | p99 | p99.9 |\n|---:|---|---:|---:|---:|---:|\n");
    for g in &r.gets {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            g.keys,
            g.distribution,
            fmt_ns(g.latency.mean_ns),
            fmt_ns(g.latency.p50_ns as f64),
            fmt_ns(g.latency.p99_ns as f64),
            fmt_ns(g.latency.p999_ns as f64)
        ));
    }
    out.push_str("\nLoad (batches of 1,000): ");
    out.push_str(
        &r.load_secs
            .iter()
            .map(|(k, s)| format!("{k} records in {s:.1} s ({:.0} records/s)", *k as f64 / s))
            .collect::<Vec<_>>()
            .join("; "),
    );
    out.push_str("\n\nIndex DRAM after the load: ");
    out.push_str(
        &r.index
            .iter()
            .map(|x| {
                format!(
                    "{} records in {} memtables, {} index entries, {:.1} MiB, {:.1} bytes/key",
                    x.keys,
                    x.memtables,
                    x.index_entries,
                    x.index_bytes as f64 / (1 << 20) as f64,
                    x.bytes_per_key
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    );
    out.push_str("\n\n## Recovery (index rebuild)\n\n| records | threads | zones | rebuild | whole open | records/s |\n|---:|---:|---:|---:|---:|---:|\n");
    for x in &r.recovery {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} ms | {:.0} ms | {:.2} M |\n",
            x.records,
            x.threads,
            x.zones,
            x.rebuild_ms,
            x.open_ms,
            x.records_per_sec / 1e6
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_puts_gets_and_recovery() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineBenchConfig {
            dir: dir.path().into(),
            put_ops: 2000,
            put_threads: vec![1, 2],
            key_counts: vec![5000],
            get_ops: 1000,
            recovery_threads: vec![1, 2],
            key_size: 16,
            value_size: 100,
            prefault_zones: 2,
        };
        let r = run(&config, "test".into()).unwrap();
        assert_eq!(r.puts.len(), 2);
        assert!(
            r.puts
                .iter()
                .all(|p| p.ops == 2000 && p.ratio_to_floor > 0.0)
        );
        assert_eq!(r.gets.len(), 2);
        assert!(r.gets.iter().all(|g| g.latency.count == 1000));
        assert_eq!(r.recovery.len(), 2);
        assert!(r.recovery.iter().all(|x| x.records == 5000));
        assert_eq!(r.recovery[1].threads, 2);
        let md = markdown(&r);
        assert!(md.contains("× floor") && md.contains("zipfian"), "{md}");
    }

    #[test]
    fn refuses_configs_that_cannot_run() {
        let dir = tempfile::tempdir().unwrap();
        let good = EngineBenchConfig {
            dir: dir.path().into(),
            put_ops: 10,
            put_threads: vec![1, 2],
            key_counts: vec![10],
            get_ops: 10,
            recovery_threads: vec![1],
            key_size: 16,
            value_size: 100,
            prefault_zones: 2,
        };
        type Spoil = fn(&mut EngineBenchConfig);
        let cases: [(&str, Spoil); 6] = [
            ("put_ops", |c| c.put_ops = 0),
            ("get_ops", |c| c.get_ops = 0),
            ("put_threads", |c| c.put_threads = vec![0]),
            ("keys", |c| c.key_counts = vec![0]),
            ("keys", |c| c.key_counts = vec![MAX_KEYS + 1]),
            // More than the pool holds.
            ("put_ops", |c| c.put_ops = MAX_OPERATIONS),
        ];
        for (name, spoil) in cases {
            let mut c = good.clone();
            spoil(&mut c);
            let e = run(&c, "test".into()).unwrap_err().to_string();
            assert!(e.starts_with(name), "{name}: {e}");
        }
        assert!(!dir.path().join("floor").exists());
    }
}
