//! Running YCSB on the engines side by side: a load phase, then workloads in YCSB's
//! recommended order (A, B, C, F, D, E: the ones that insert come last), every engine on
//! the same device path with the same durability, one thread or several. Reports
//! throughput, per-operation latency percentiles and pmdb's ratio to each peer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use pmdb_pmem::Emulation;

use crate::engines::{self, Durability, Engine, IndexMemory, Worker};
use crate::histogram::{Latencies, Summary, fmt_ns};
use crate::limits::{
    InvalidSetting, MAX_DRAM_LATENCY_NS, MAX_NVM_FACTOR, MAX_OPERATIONS, MAX_RECORDS, MAX_THREADS,
    check, check_space, split,
};
use crate::machine::{Machine, filesystem_of};
use crate::progress::progress;
use crate::ycsb::{Counters, Generator, Layout, Op, OpKind, Workload, value};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct YcsbConfig {
    pub dir: PathBuf,
    pub engines: Vec<String>,
    pub workloads: Vec<char>,
    pub records: u64,
    pub operations: u64,
    pub warmup: u64,
    pub threads: usize,
    pub field_count: usize,
    pub field_length: usize,
    /// 8-byte binary keys (the xengine preset) instead of YCSB's strings.
    #[serde(default)]
    pub short_keys: bool,
    pub durability: Durability,
    pub seed: u64,
    /// NVM latency sweep: PM latency as multiples of DRAM's (1 = no emulation); empty
    /// for none. Runs pmdb alone on workloads C and A at each factor.
    #[serde(default)]
    pub nvm_factors: Vec<u32>,
    /// The DRAM latency the factors multiply.
    #[serde(default)]
    pub dram_latency_ns: u64,
}

impl YcsbConfig {
    fn layout(&self) -> Layout {
        Layout {
            field_count: self.field_count,
            field_length: self.field_length,
            short_keys: self.short_keys,
        }
    }

    /// Refuses a configuration that could not run to the end: no records or operations,
    /// no threads, absurd counts, unknown engines or workloads, values larger than the
    /// engines take, or records that cannot fit in `dir`.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.engines.is_empty() {
            return Err(InvalidSetting::new(
                "engines",
                "must name at least one engine",
            ));
        }
        if let Some(e) = self
            .engines
            .iter()
            .find(|e| !engines::ENGINES.contains(&e.as_str()))
        {
            return Err(InvalidSetting::new(
                "engines",
                format!("must be among {}, not {e:?}", engines::ENGINES.join(", ")),
            ));
        }
        if let Some(w) = self
            .workloads
            .iter()
            .find(|w| Workload::core(**w).is_none())
        {
            return Err(InvalidSetting::new(
                "workloads",
                format!("must be letters from A to F, not {w:?}"),
            ));
        }
        check("records", self.records, 1..=MAX_RECORDS)?;
        check("operations", self.operations, 1..=MAX_OPERATIONS)?;
        check("warmup", self.warmup, 0..=MAX_OPERATIONS)?;
        check("threads", self.threads, 1..=MAX_THREADS)?;
        check(
            "value size (field_count × field_length)",
            self.field_count.saturating_mul(self.field_length),
            1..=pmdb_engine::DEFAULT_MAX_VALUE,
        )?;
        for &factor in &self.nvm_factors {
            check("nvm_latency", factor, 1..=MAX_NVM_FACTOR)?;
        }
        if !self.nvm_factors.is_empty() {
            check(
                "dram_latency_ns",
                self.dram_latency_ns,
                1..=MAX_DRAM_LATENCY_NS,
            )?;
        }
        let layout = self.layout();
        let record = (layout.key(0).len() + layout.value_size()) as u64;
        check_space("records", self.records.saturating_mul(record), &self.dir)
    }
}

/// pmdb at one emulated PM latency.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepPoint {
    pub factor: u32,
    pub extra_read_ns: u64,
    pub extra_write_ns_per_line: u64,
    pub result: EngineResult,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpStats {
    pub kind: String,
    pub latency: Summary,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhaseResult {
    /// "load" or the workload letter.
    pub phase: String,
    pub operations: u64,
    pub secs: f64,
    pub ops_per_sec: f64,
    pub ops: Vec<OpStats>,
    /// Reads that found no record (a record claimed but not yet inserted by another
    /// thread).
    pub not_found: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineResult {
    pub engine: String,
    pub settings: String,
    pub phases: Vec<PhaseResult>,
    /// DRAM of the engine's index after the load and after the last workload, where the
    /// engine reports it.
    #[serde(default)]
    pub index_after_load: Option<IndexMemory>,
    #[serde(default)]
    pub index_at_end: Option<IndexMemory>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct YcsbReport {
    pub machine: Machine,
    pub command: String,
    pub filesystem: String,
    pub config: YcsbConfig,
    pub results: Vec<EngineResult>,
    #[serde(default)]
    pub nvm_sweep: Vec<SweepPoint>,
}

/// YCSB's recommended order of the core workloads.
pub const ORDER: [char; 6] = ['A', 'B', 'C', 'F', 'D', 'E'];

pub fn run(config: &YcsbConfig, command: String) -> engines::Result<YcsbReport> {
    config.validate()?;
    std::fs::create_dir_all(&config.dir)?;
    let mut results = Vec::new();
    for name in &config.engines {
        results.push(run_engine(
            name,
            config,
            &config.workloads,
            Emulation::default(),
        )?);
    }
    let mut nvm_sweep = Vec::new();
    for &factor in &config.nvm_factors {
        // Extra latency beyond DRAM's, charged per PM read access and per flushed line.
        let extra = u64::from(factor.saturating_sub(1)) * config.dram_latency_ns;
        let emulation = Emulation {
            read_latency_ns: extra,
            write_latency_ns: extra,
            write_bandwidth_mb_s: 0,
        };
        nvm_sweep.push(SweepPoint {
            factor,
            extra_read_ns: extra,
            extra_write_ns_per_line: extra,
            result: run_engine("pmdb", config, &['C', 'A'], emulation)?,
        });
    }
    Ok(YcsbReport {
        machine: Machine::detect(),
        command,
        filesystem: filesystem_of(&config.dir),
        config: config.clone(),
        results,
        nvm_sweep,
    })
}

/// Loads engine `name` in a fresh directory and runs `workloads` on it in YCSB's order.
fn run_engine(
    name: &str,
    config: &YcsbConfig,
    workloads: &[char],
    emulation: Emulation,
) -> engines::Result<EngineResult> {
    let layout = config.layout();
    let dir = config.dir.join(format!("ycsb-{name}"));
    let engine = engines::open(name, &dir, config.durability, emulation)?;
    let mut phases = vec![load(engine.as_ref(), config, &layout)?];
    let index_after_load = engine.index_memory();
    let counters = Counters::new(config.records);
    for w in ORDER.iter().filter(|w| workloads.contains(w)) {
        let workload = Workload::core(*w).ok_or_else(|| format!("no core workload {w:?}"))?;
        phases.push(run_workload(
            engine.as_ref(),
            config,
            &layout,
            &workload,
            &counters,
        )?);
    }
    let result = EngineResult {
        engine: engine.name(),
        settings: engine.settings(),
        phases,
        index_after_load,
        index_at_end: engine.index_memory(),
    };
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(result)
}

type ThreadOutcome = engines::Result<(BTreeMap<OpKind, Latencies>, u64)>;

fn load(engine: &dyn Engine, config: &YcsbConfig, layout: &Layout) -> engines::Result<PhaseResult> {
    let bar = progress(&format!("{}: load", engine.name()), config.records);
    let next = AtomicU64::new(0);
    let start = Instant::now();
    let outcomes: Vec<ThreadOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads)
            .map(|_| {
                s.spawn(|| -> ThreadOutcome {
                    let mut w = engine.worker()?;
                    let mut lat = Latencies::default();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= config.records {
                            break;
                        }
                        let (k, v) = (layout.key(n), value(layout, n, 0));
                        let t = Instant::now();
                        w.insert(&k, &v)?;
                        lat.record(t.elapsed().as_nanos() as u64);
                        if n.is_multiple_of(1024) {
                            bar.set_position(n);
                        }
                    }
                    Ok((BTreeMap::from([(OpKind::Insert, lat)]), 0))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("load thread"))
            .collect()
    });
    bar.finish_and_clear();
    phase(
        "load".into(),
        config.records,
        start.elapsed().as_secs_f64(),
        outcomes,
    )
}

fn run_workload(
    engine: &dyn Engine,
    config: &YcsbConfig,
    layout: &Layout,
    workload: &Workload,
    counters: &std::sync::Arc<Counters>,
) -> engines::Result<PhaseResult> {
    let bar = progress(
        &format!("{}: workload {}", engine.name(), workload.name),
        config.operations,
    );
    let start_line = std::sync::Barrier::new(config.threads);
    let started = std::sync::Mutex::new(None::<Instant>);
    let outcomes: Vec<ThreadOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads)
            .map(|t| {
                let (bar, start_line, started) = (&bar, &start_line, &started);
                s.spawn(move || -> ThreadOutcome {
                    let mut out = Vec::new();
                    let mut prepare = || -> engines::Result<_> {
                        let mut w = engine.worker()?;
                        let seed = config.seed ^ ((workload.name as u64) << 32) ^ t as u64;
                        let mut g = Generator::shared(
                            workload.clone(),
                            counters.clone(),
                            config.operations,
                            seed,
                        )?;
                        for _ in split(config.warmup, config.threads, t) {
                            execute(w.as_mut(), &g.next_op(), layout, counters, &mut out)?;
                        }
                        Ok((w, g))
                    };
                    let ready = prepare();
                    // Every thread reaches the start line, failed or not, so that one
                    // failure cannot leave the others waiting there for ever.
                    start_line.wait();
                    let (mut w, mut g) = ready?;
                    let mut lats: BTreeMap<OpKind, Latencies> = BTreeMap::new();
                    let mut not_found = 0;
                    started
                        .lock()
                        .expect("start time")
                        .get_or_insert_with(Instant::now);
                    for i in split(config.operations, config.threads, t) {
                        let op = g.next_op();
                        let t0 = Instant::now();
                        let found = execute(w.as_mut(), &op, layout, counters, &mut out)?;
                        lats.entry(op.kind())
                            .or_default()
                            .record(t0.elapsed().as_nanos() as u64);
                        not_found += u64::from(!found);
                        if i % 1024 == 1023 {
                            bar.inc(1024);
                        }
                    }
                    Ok((lats, not_found))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("workload thread"))
            .collect()
    });
    bar.finish_and_clear();
    let secs = started
        .into_inner()
        .expect("start time")
        .map_or(0.0, |t| t.elapsed().as_secs_f64());
    phase(workload.name.to_string(), config.operations, secs, outcomes)
}

/// Runs one operation; false for a read or read-modify-write that found nothing.
fn execute(
    w: &mut dyn Worker,
    op: &Op,
    layout: &Layout,
    counters: &Counters,
    out: &mut Vec<u8>,
) -> engines::Result<bool> {
    Ok(match *op {
        Op::Read(n) => w.read(&layout.key(n), out)?,
        Op::Update(n) => {
            w.update(&layout.key(n), &value(layout, n, 1))?;
            true
        }
        Op::Insert(n) => {
            w.insert(&layout.key(n), &value(layout, n, 0))?;
            counters.acknowledge(n);
            true
        }
        Op::Scan(n, len) => {
            w.scan(&layout.key(n), len as usize, out)?;
            true
        }
        Op::ReadModifyWrite(n) => {
            let k = layout.key(n);
            let found = w.read(&k, out)?;
            w.update(&k, &value(layout, n, 2))?;
            found
        }
    })
}

fn phase(
    name: String,
    operations: u64,
    secs: f64,
    outcomes: Vec<ThreadOutcome>,
) -> engines::Result<PhaseResult> {
    let mut merged: BTreeMap<OpKind, Latencies> = BTreeMap::new();
    let mut not_found = 0;
    for outcome in outcomes {
        let (lats, nf) = outcome?;
        not_found += nf;
        for (kind, l) in lats {
            merged.entry(kind).or_default().merge(&l);
        }
    }
    Ok(PhaseResult {
        phase: name,
        operations,
        secs,
        ops_per_sec: operations as f64 / secs.max(1e-9),
        ops: merged
            .into_iter()
            .map(|(kind, l)| OpStats {
                kind: format!("{kind:?}").to_lowercase(),
                latency: l.summary(),
            })
            .collect(),
        not_found,
    })
}

/// Percentiles of one operation kind in one phase, per engine.
fn percentile_series(r: &YcsbReport, phase: &str, kind: &str) -> Vec<(String, [u64; 4])> {
    r.results
        .iter()
        .filter_map(|e| {
            let p = e.phases.iter().find(|p| p.phase == phase)?;
            let o = p.ops.iter().find(|o| o.kind == kind)?;
            let l = &o.latency;
            Some((e.engine.clone(), [l.p50_ns, l.p95_ns, l.p99_ns, l.p999_ns]))
        })
        .collect()
}

/// The charts of a report, written next to it: throughput per phase and engine, and the
/// latency percentiles of a write (load inserts) and of a read (workload C).
pub fn charts(r: &YcsbReport, dir: &std::path::Path) -> engines::Result<Vec<PathBuf>> {
    let Some(first) = r.results.first() else {
        return Err("the report has no results to chart".into());
    };
    std::fs::create_dir_all(dir)?;
    let phases: Vec<String> = first.phases.iter().map(|p| p.phase.clone()).collect();
    let series: Vec<(String, Vec<f64>)> = (0..r.results.len())
        .map(|i| {
            let v = phases
                .iter()
                .map(|ph| throughput(r, i, ph).unwrap_or(0.0))
                .collect();
            (r.results[i].engine.clone(), v)
        })
        .collect();
    let mut written = Vec::new();
    let path = dir.join("ycsb-throughput.svg");
    crate::charts::grouped_bars(
        &path,
        &format!(
            "YCSB throughput, {} records, {:?}",
            r.config.records, r.config.durability
        ),
        "operations/s",
        &phases,
        &series,
    )?;
    written.push(path);
    if !r.nvm_sweep.is_empty() {
        let factors: Vec<String> = r
            .nvm_sweep
            .iter()
            .map(|p| format!("{}x", p.factor))
            .collect();
        let series: Vec<(String, Vec<f64>)> = ["C", "A"]
            .iter()
            .map(|ph| {
                let v = r
                    .nvm_sweep
                    .iter()
                    .map(|p| {
                        p.result
                            .phases
                            .iter()
                            .find(|x| x.phase == *ph)
                            .map_or(0.0, |x| x.ops_per_sec)
                    })
                    .collect();
                (format!("workload {ph}"), v)
            })
            .collect();
        let path = dir.join("ycsb-nvm-sweep.svg");
        crate::charts::lines(
            &path,
            "pmdb under emulated PM latency",
            "operations/s",
            &factors,
            &series,
            false,
        )?;
        written.push(path);
    }
    for (phase, kind, file, title) in [
        (
            "load",
            "insert",
            "ycsb-latency-insert.svg",
            "insert latency (load phase)",
        ),
        (
            "C",
            "read",
            "ycsb-latency-read.svg",
            "read latency (workload C)",
        ),
    ] {
        let s = percentile_series(r, phase, kind);
        if !s.is_empty() {
            let path = dir.join(file);
            crate::charts::percentiles(&path, title, &s)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// Throughput of `engine` in `phase`.
fn throughput(r: &YcsbReport, engine: usize, phase: &str) -> Option<f64> {
    r.results[engine]
        .phases
        .iter()
        .find(|p| p.phase == phase)
        .map(|p| p.ops_per_sec)
}

pub fn markdown(r: &YcsbReport) -> String {
    let m = &r.machine;
    let c = &r.config;
    let mut out = String::from("# YCSB: pmdb and its peers\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores, {} GiB), Linux {}. Device: `{}` ({}). {} records, {} operations per workload ({} warm-up), {} thread(s), {} × {} B values, {:?} durability, seed {}.\n\nCommand: `{}`\n\n",
        m.cpu, m.cores, m.memory_gib, m.kernel, c.dir.display(), r.filesystem, c.records, c.operations,
        c.warmup, c.threads, c.field_count, c.field_length, c.durability, c.seed, r.command
    ));
    out.push_str("Engines and the settings that give that durability:\n\n");
    for e in &r.results {
        out.push_str(&format!("- {}: {}\n", e.engine, e.settings));
    }
    for e in &r.results {
        if let (Some(load), Some(end)) = (e.index_after_load, e.index_at_end) {
            out.push_str(&format!(
                "\n{} index DRAM: {:.1} bytes per key after the load ({} entries, {} MiB), {:.1} after the last workload ({} entries, {} MiB).\n",
                e.engine,
                load.bytes_per_key(),
                load.keys,
                load.bytes >> 20,
                end.bytes_per_key(),
                end.keys,
                end.bytes >> 20
            ));
        }
    }
    let phases: Vec<String> = r
        .results
        .first()
        .map(|e| e.phases.iter().map(|p| p.phase.clone()).collect())
        .unwrap_or_default();
    out.push_str("\n## Throughput (operations/s)\n\n| phase |");
    for e in &r.results {
        out.push_str(&format!(" {} |", e.engine));
    }
    let pmdb = r.results.iter().position(|e| e.engine.starts_with("pmdb"));
    let peers: Vec<usize> = (0..r.results.len())
        .filter(|&i| !r.results[i].engine.starts_with("pmdb"))
        .collect();
    if pmdb.is_some() {
        for &p in &peers {
            out.push_str(&format!(
                " pmdb ÷ {} |",
                r.results[p].engine.split(' ').next().unwrap_or("")
            ));
        }
    }
    out.push_str("\n|---|");
    for _ in 0..r.results.len() + if pmdb.is_some() { peers.len() } else { 0 } {
        out.push_str("---:|");
    }
    out.push('\n');
    for ph in &phases {
        out.push_str(&format!("| {ph} |"));
        for i in 0..r.results.len() {
            out.push_str(&format!(" {:.0} |", throughput(r, i, ph).unwrap_or(0.0)));
        }
        if let Some(p) = pmdb {
            for &q in &peers {
                let ratio =
                    throughput(r, p, ph).unwrap_or(0.0) / throughput(r, q, ph).unwrap_or(f64::NAN);
                out.push_str(&format!(" {ratio:.2}× |"));
            }
        }
        out.push('\n');
    }
    if !r.nvm_sweep.is_empty() {
        out.push_str(&format!(
            "\n## NVM latency sweep (pmdb, emulated)\n\nPM latency as a multiple of a {} ns DRAM access: the extra (factor − 1) × {} ns is charged per PM read access and per flushed cache line (pmdb-pmem's emulation knobs: software delays, an approximation in the spirit of Quartz).\n\n| factor | extra ns | load ops/s | C ops/s | A ops/s |\n|---:|---:|---:|---:|---:|\n",
            c.dram_latency_ns, c.dram_latency_ns
        ));
        for p in &r.nvm_sweep {
            let t = |ph: &str| {
                p.result
                    .phases
                    .iter()
                    .find(|x| x.phase == ph)
                    .map_or(0.0, |x| x.ops_per_sec)
            };
            out.push_str(&format!(
                "| {}x | {} | {:.0} | {:.0} | {:.0} |\n",
                p.factor,
                p.extra_read_ns,
                t("load"),
                t("C"),
                t("A")
            ));
        }
        out.push_str("\n![NVM latency sweep](ycsb-nvm-sweep.svg)\n");
    }
    out.push_str("\n![throughput per workload and engine](ycsb-throughput.svg)\n\n![insert latency](ycsb-latency-insert.svg) ![read latency](ycsb-latency-read.svg)\n");
    out.push_str("\n## Latency per operation\n\n| phase | engine | operation | count | p50 | p95 | p99 | p99.9 |\n|---|---|---|---:|---:|---:|---:|---:|\n");
    for ph in &phases {
        for e in &r.results {
            let Some(p) = e.phases.iter().find(|p| &p.phase == ph) else {
                continue;
            };
            for o in &p.ops {
                let l = &o.latency;
                out.push_str(&format!(
                    "| {ph} | {} | {} | {} | {} | {} | {} | {} |\n",
                    e.engine,
                    o.kind,
                    l.count,
                    fmt_ns(l.p50_ns as f64),
                    fmt_ns(l.p95_ns as f64),
                    fmt_ns(l.p99_ns as f64),
                    fmt_ns(l.p999_ns as f64)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> YcsbConfig {
        YcsbConfig {
            dir: dir.into(),
            engines: engines::ENGINES.iter().map(|s| s.to_string()).collect(),
            workloads: ORDER.to_vec(),
            records: 500,
            operations: 400,
            warmup: 20,
            threads: 2,
            field_count: 2,
            field_length: 50,
            short_keys: false,
            durability: Durability::Relaxed,
            seed: 1,
            nvm_factors: vec![1, 4],
            dram_latency_ns: 100,
        }
    }

    #[test]
    fn runs_every_workload_on_every_engine() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let r = run(&config, "test".into()).unwrap();
        assert_eq!(r.results.len(), engines::ENGINES.len());
        for e in &r.results {
            let names: Vec<&str> = e.phases.iter().map(|p| p.phase.as_str()).collect();
            assert_eq!(
                names,
                ["load", "A", "B", "C", "F", "D", "E"],
                "{}",
                e.engine
            );
            for p in &e.phases {
                let counted: u64 = p.ops.iter().map(|o| o.latency.count).sum();
                assert_eq!(counted, p.operations, "{} {}", e.engine, p.phase);
                assert!(p.ops_per_sec > 0.0);
            }
            // Reads of loaded records always find them in A, B, C and F.
            for ph in ["A", "B", "C", "F"] {
                let p = e.phases.iter().find(|p| p.phase == ph).unwrap();
                assert_eq!(p.not_found, 0, "{} {ph}", e.engine);
            }
        }
        let md = markdown(&r);
        assert!(
            md.contains("pmdb ÷ LMDB") && md.contains("pmdb ÷ SQLite"),
            "{md}"
        );
        assert!(md.contains("| E |"));
    }

    #[test]
    fn refuses_configs_that_cannot_run() {
        let dir = tempfile::tempdir().unwrap();
        let good = config(dir.path());
        type Spoil = fn(&mut YcsbConfig);
        let cases: [(&str, Spoil); 9] = [
            ("records", |c| c.records = 0),
            ("records", |c| c.records = MAX_RECORDS + 1),
            ("operations", |c| c.operations = 0),
            ("threads", |c| c.threads = 0),
            ("threads", |c| c.threads = 100_000),
            ("engines", |c| {
                c.engines = vec!["pmdb".into(), "nope".into()]
            }),
            ("workloads", |c| c.workloads = vec!['Z']),
            ("nvm_latency", |c| c.nvm_factors = vec![0]),
            ("dram_latency_ns", |c| c.dram_latency_ns = 0),
        ];
        for (name, spoil) in cases {
            let mut c = good.clone();
            spoil(&mut c);
            let e = run(&c, "test".into()).unwrap_err().to_string();
            assert!(e.starts_with(name), "{name}: {e}");
        }
        // A table larger than the filesystem is refused before anything is written.
        let mut c = good.clone();
        c.field_count = 1000;
        c.field_length = 1000;
        c.records = MAX_RECORDS;
        let e = run(&c, "test".into()).unwrap_err().to_string();
        assert!(e.starts_with("records needs at least"), "{e}");
        assert!(!dir.path().join("ycsb-pmdb").exists());
    }

    #[test]
    fn fewer_operations_than_threads_and_no_warmup() {
        let dir = tempfile::tempdir().unwrap();
        let config = YcsbConfig {
            engines: vec!["lmdb".into()],
            workloads: vec!['D', 'E'],
            records: 1,
            operations: 3,
            warmup: 0,
            threads: 4,
            nvm_factors: Vec::new(),
            ..config(dir.path())
        };
        let r = run(&config, "test".into()).unwrap();
        for p in &r.results[0].phases {
            let counted: u64 = p.ops.iter().map(|o| o.latency.count).sum();
            assert_eq!(counted, p.operations, "{}", p.phase);
        }
        assert_eq!(r.results[0].phases[1].operations, 3);
    }
}
