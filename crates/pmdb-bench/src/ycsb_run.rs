//! Running YCSB on the engines side by side: a load phase, then workloads in YCSB's
//! recommended order (A, B, C, F, D, E: the ones that insert come last), every engine on
//! the same device path with the same durability, one thread or several. Reports
//! throughput, per-operation latency percentiles, pmdb's ratio to each peer, and per
//! phase the throughput and footprint over time (`timeline`). pmdb's pool may be capped
//! and its SSTs put on another device (`--sst-dir`, where the peers then run too), with
//! one run per SST read mode asked for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use pmdb_pmem::Emulation;

use crate::engines::{self, Durability, Engine, Footprint, IndexMemory, PmdbSetup, Worker};
use crate::histogram::{Latencies, Summary, fmt_ns};
use crate::limits::{
    InvalidSetting, MAX_DRAM_LATENCY_NS, MAX_NVM_FACTOR, MAX_OPERATIONS, MAX_RECORDS, MAX_THREADS,
    check, check_space, fmt_bytes, split,
};
use crate::machine::{Machine, filesystem_of};
use crate::progress::progress;
use crate::timeline::{Timeline, Window, sampled};
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
    /// Most bytes pmdb's pool may grow to [default: pmdb's].
    #[serde(default)]
    pub pool_max: Option<u64>,
    /// Where pmdb puts its SSTs and the peers run [default: in `dir` for all].
    #[serde(default)]
    pub sst_dir: Option<PathBuf>,
    /// pmdb runs once per SST read mode named here (pread, mmap-copy, direct); none:
    /// once, in its default mode.
    #[serde(default)]
    pub read_modes: Vec<String>,
    /// Length of a throughput-over-time window, in seconds.
    #[serde(default = "default_window")]
    pub window_secs: u64,
    /// Compact each engine (its own manual compaction) between the load and the
    /// workloads, so reads go to its lowest tier.
    #[serde(default)]
    pub compact_after_load: bool,
}

fn default_window() -> u64 {
    10
}

/// Smallest pool cap a run accepts: room for a few of pmdb's default memtables.
pub const MIN_POOL_MAX: u64 = 256 << 20;
/// Longest throughput-over-time window, in seconds.
pub const MAX_WINDOW_SECS: u64 = 3600;

impl YcsbConfig {
    fn layout(&self) -> Layout {
        Layout {
            field_count: self.field_count,
            field_length: self.field_length,
            short_keys: self.short_keys,
        }
    }

    /// Refuses a configuration that could not run to the end: no records or operations,
    /// no threads, absurd counts, unknown engines, workloads or read modes, values larger
    /// than the engines take, a pool cap too small, or records that cannot fit in `dir`
    /// (and `sst_dir`).
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
        if let Some(bytes) = self.pool_max {
            check("pool_max", bytes, MIN_POOL_MAX..=u64::MAX)?;
        }
        check("window", self.window_secs, 1..=MAX_WINDOW_SECS)?;
        self.pmdb_read_modes()?;
        let layout = self.layout();
        let record = (layout.key(0).len() + layout.value_size()) as u64;
        let need = self.records.saturating_mul(record);
        match &self.sst_dir {
            // The pool holds at most its cap; the rest goes to the SSTs.
            Some(sst) => {
                check_space(
                    "records",
                    need.min(self.pool_max.unwrap_or(need)),
                    &self.dir,
                )?;
                check_space("records", need, sst)
            }
            None => check_space("records", need, &self.dir),
        }
    }

    /// The read modes pmdb runs in: `None` alone for its default.
    fn pmdb_read_modes(&self) -> Result<Vec<Option<pmdb_engine::ReadMode>>, InvalidSetting> {
        if self.read_modes.is_empty() {
            return Ok(vec![None]);
        }
        self.read_modes
            .iter()
            .map(|m| {
                m.parse()
                    .map(Some)
                    .map_err(|e: String| InvalidSetting::new("read_mode", e))
            })
            .collect()
    }

    /// The directory engine `name` runs in: the peers go where pmdb's SSTs go.
    fn dir_of(&self, name: &str) -> PathBuf {
        match &self.sst_dir {
            Some(sst) if !name.starts_with("pmdb") => sst.join(format!("ycsb-{name}")),
            _ => self.dir.join(format!("ycsb-{name}")),
        }
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
    /// Throughput and footprint over time.
    #[serde(default)]
    pub windows: Vec<Window>,
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
    /// How long the compaction between load and workloads took, if one ran.
    #[serde(default)]
    pub compact_secs: Option<f64>,
    /// Where its data lay after the last phase, and the bytes of keys and values it then
    /// held (one version of each record).
    #[serde(default)]
    pub footprint_at_end: Option<Footprint>,
    #[serde(default)]
    pub live_bytes: u64,
    /// The engine's account of its background work, where it gives one.
    #[serde(default)]
    pub background: Option<String>,
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
    if let Some(sst) = &config.sst_dir {
        std::fs::create_dir_all(sst)?;
    }
    let mut results = Vec::new();
    for name in &config.engines {
        let modes = if name.starts_with("pmdb") {
            config.pmdb_read_modes()?
        } else {
            vec![None]
        };
        for read_mode in modes {
            let setup = PmdbSetup {
                read_mode,
                ..config.pmdb_setup(name)
            };
            results.push(run_engine(name, config, &config.workloads, &setup)?);
        }
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
        let setup = PmdbSetup {
            emulation,
            ..config.pmdb_setup("pmdb")
        };
        nvm_sweep.push(SweepPoint {
            factor,
            extra_read_ns: extra,
            extra_write_ns_per_line: extra,
            result: run_engine("pmdb", config, &['C', 'A'], &setup)?,
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

impl YcsbConfig {
    /// pmdb as this run sets it up when it runs as engine `name`.
    fn pmdb_setup(&self, name: &str) -> PmdbSetup {
        PmdbSetup {
            pool_max: self.pool_max,
            sst_dir: self
                .sst_dir
                .as_ref()
                .map(|d| d.join(format!("ycsb-{name}-sst"))),
            ..PmdbSetup::default()
        }
    }
}

/// Loads engine `name` in a fresh directory and runs `workloads` on it in YCSB's order.
fn run_engine(
    name: &str,
    config: &YcsbConfig,
    workloads: &[char],
    setup: &PmdbSetup,
) -> engines::Result<EngineResult> {
    let layout = config.layout();
    let dir = config.dir_of(name);
    let opened = engines::open(name, &dir, config.durability, setup)?;
    let engine = opened.as_ref();
    let window = Duration::from_secs(config.window_secs);
    let timed = |run: &(dyn Fn(&Timeline) -> engines::Result<PhaseResult> + Sync)| {
        let (phase, windows) = sampled(engine, &dir, window, run);
        phase.map(|p| PhaseResult { windows, ..p })
    };
    let mut phases = vec![timed(&|t| load(engine, config, &layout, t))?];
    let index_after_load = engine.index_memory();
    let compact_secs = if config.compact_after_load {
        let start = Instant::now();
        engine.compact()?;
        Some(start.elapsed().as_secs_f64())
    } else {
        None
    };
    let counters = Counters::new(config.records);
    for w in ORDER.iter().filter(|w| workloads.contains(w)) {
        let workload = Workload::core(*w).ok_or_else(|| format!("no core workload {w:?}"))?;
        phases.push(timed(&|t| {
            run_workload(engine, config, &layout, &workload, &counters, t)
        })?);
    }
    let records = counters.inserted();
    let result = EngineResult {
        engine: engine.name(),
        settings: engine.settings(),
        phases,
        index_after_load,
        index_at_end: engine.index_memory(),
        compact_secs,
        footprint_at_end: Some(engine.footprint(&dir)),
        live_bytes: records
            * (layout.key(records.saturating_sub(1)).len() + layout.value_size()) as u64,
        background: engine.background(),
    };
    drop(opened);
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(sst) = &setup.sst_dir {
        let _ = std::fs::remove_dir_all(sst);
    }
    Ok(result)
}

type ThreadOutcome = engines::Result<(BTreeMap<OpKind, Latencies>, u64)>;

/// Operations a thread does between two reports to the progress bar and the timeline.
const TALLY: u64 = 1024;

fn load(
    engine: &dyn Engine,
    config: &YcsbConfig,
    layout: &Layout,
    timeline: &Timeline,
) -> engines::Result<PhaseResult> {
    let bar = progress(&format!("{}: load", engine.name()), config.records);
    let next = AtomicU64::new(0);
    let start = timeline.start();
    let outcomes: Vec<ThreadOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads)
            .map(|_| {
                s.spawn(|| -> ThreadOutcome {
                    let mut w = engine.worker()?;
                    let mut lat = Latencies::default();
                    let mut untallied = 0;
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= config.records {
                            break;
                        }
                        let (k, v) = (layout.key(n), value(layout, n, 0));
                        let t = Instant::now();
                        w.insert(&k, &v)?;
                        lat.record(t.elapsed().as_nanos() as u64);
                        untallied += 1;
                        if untallied == TALLY {
                            timeline.add(TALLY);
                            bar.set_position(n);
                            untallied = 0;
                        }
                    }
                    timeline.add(untallied);
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
    timeline: &Timeline,
) -> engines::Result<PhaseResult> {
    let bar = progress(
        &format!("{}: workload {}", engine.name(), workload.name),
        config.operations,
    );
    let start_line = std::sync::Barrier::new(config.threads);
    let outcomes: Vec<ThreadOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.threads)
            .map(|t| {
                let (bar, start_line) = (&bar, &start_line);
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
                    timeline.start();
                    let mut untallied = 0;
                    for _ in split(config.operations, config.threads, t) {
                        let op = g.next_op();
                        let t0 = Instant::now();
                        let found = execute(w.as_mut(), &op, layout, counters, &mut out)?;
                        lats.entry(op.kind())
                            .or_default()
                            .record(t0.elapsed().as_nanos() as u64);
                        not_found += u64::from(!found);
                        untallied += 1;
                        if untallied == TALLY {
                            timeline.add(TALLY);
                            bar.inc(TALLY);
                            untallied = 0;
                        }
                    }
                    timeline.add(untallied);
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
    let secs = timeline
        .started()
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
        windows: Vec::new(),
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
    for phase in timed_phases(r) {
        let runs: Vec<(&str, &[Window])> = r
            .results
            .iter()
            .filter_map(|e| {
                let p = e.phases.iter().find(|p| p.phase == phase)?;
                Some((e.engine.as_str(), p.windows.as_slice()))
            })
            .collect();
        let throughput: Vec<(String, Vec<(f64, f64)>)> = runs
            .iter()
            .map(|(e, w)| {
                (
                    e.to_string(),
                    w.iter().map(|w| (w.end_secs, w.ops_per_sec)).collect(),
                )
            })
            .collect();
        let path = dir.join(format!("ycsb-timeline-{}.svg", phase.to_lowercase()));
        crate::charts::over_time(
            &path,
            &format!(
                "{} throughput per {} s window",
                phase_title(&phase),
                r.config.window_secs
            ),
            "operations/s",
            &throughput,
        )?;
        written.push(path);
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        let mut footprint: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (e, w) in &runs {
            if w.iter().any(|w| w.footprint.pm_bytes > 0) {
                footprint.push((
                    format!("{e}: PM"),
                    w.iter()
                        .map(|w| (w.end_secs, gib(w.footprint.pm_bytes)))
                        .collect(),
                ));
            }
            footprint.push((
                format!("{e}: files"),
                w.iter()
                    .map(|w| (w.end_secs, gib(w.footprint.file_bytes)))
                    .collect(),
            ));
        }
        let path = dir.join(format!("ycsb-footprint-{}.svg", phase.to_lowercase()));
        crate::charts::over_time(
            &path,
            &format!("{}: where the data lies", phase_title(&phase)),
            "GiB",
            &footprint,
        )?;
        written.push(path);
    }
    Ok(written)
}

/// Phases some engine ran for at least two full windows: the ones worth a timeline.
fn timed_phases(r: &YcsbReport) -> Vec<String> {
    let mut phases: Vec<String> = Vec::new();
    for e in &r.results {
        for p in &e.phases {
            if p.windows.iter().filter(|w| w.full).count() >= 2 && !phases.contains(&p.phase) {
                phases.push(p.phase.clone());
            }
        }
    }
    phases
}

fn phase_title(phase: &str) -> String {
    if phase == "load" {
        "load".into()
    } else {
        format!("workload {phase}")
    }
}

/// pmdb's read modes side by side, as ratios to `pread`, when the run had several.
fn read_modes_section(r: &YcsbReport, phases: &[String]) -> String {
    let pread = r
        .results
        .iter()
        .position(|e| e.engine.contains("pread reads"));
    let modes: Vec<usize> = (0..r.results.len())
        .filter(|&i| r.results[i].engine.contains(" reads)") && Some(i) != pread)
        .collect();
    let Some(base) = pread.filter(|_| !modes.is_empty()) else {
        return String::new();
    };
    let mut out = String::from("\n## SST read modes (ratio to pread)\n\n| phase |");
    for &m in &modes {
        out.push_str(&format!(" {} |", r.results[m].engine));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(modes.len()));
    out.push('\n');
    for ph in phases {
        out.push_str(&format!("| {ph} |"));
        for &m in &modes {
            let ratio =
                throughput(r, m, ph).unwrap_or(0.0) / throughput(r, base, ph).unwrap_or(f64::NAN);
            out.push_str(&format!(" {ratio:.2}× |"));
        }
        out.push('\n');
    }
    out
}

/// Throughput over time: per phase and engine, the first, last and lowest full window,
/// and the most PM the engine held.
fn timeline_section(r: &YcsbReport) -> String {
    let phases = timed_phases(r);
    if phases.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n## Throughput over time ({} s windows)\n\n| phase | engine | full windows | first ops/s | last ops/s | last ÷ first | lowest ops/s | most PM in use | PM + files at the end |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        r.config.window_secs
    );
    for ph in &phases {
        for e in &r.results {
            let Some(p) = e.phases.iter().find(|p| &p.phase == ph) else {
                continue;
            };
            let Some((first, last, low)) = crate::timeline::steadiness(&p.windows) else {
                continue;
            };
            let most_pm = p.windows.iter().map(|w| w.footprint.pm_bytes).max();
            let end = p.windows.last().map(|w| w.footprint.total());
            out.push_str(&format!(
                "| {ph} | {} | {} | {first:.0} | {last:.0} | {:.2} | {low:.0} | {} | {} |\n",
                e.engine,
                p.windows.iter().filter(|w| w.full).count(),
                last / first,
                most_pm.map_or("–".into(), fmt_bytes),
                end.map_or("–".into(), fmt_bytes),
            ));
        }
    }
    for ph in &phases {
        let name = ph.to_lowercase();
        out.push_str(&format!(
            "\n![{ph} throughput over time](ycsb-timeline-{name}.svg)\n![{ph} footprint over time](ycsb-footprint-{name}.svg)\n"
        ));
    }
    out
}

/// Space at the end of the run: what each engine holds for the live data, and its
/// account of the background work.
fn space_section(r: &YcsbReport) -> String {
    let mut out = String::from(
        "\n## Space at the end\n\nLive data: one version of every record, keys and values.\n\n| engine | live | PM | files | (PM + files) ÷ live |\n|---|---:|---:|---:|---:|\n",
    );
    let mut any = false;
    for e in &r.results {
        let Some(f) = e.footprint_at_end else {
            continue;
        };
        any = true;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} |\n",
            e.engine,
            fmt_bytes(e.live_bytes),
            fmt_bytes(f.pm_bytes),
            fmt_bytes(f.file_bytes),
            f.total() as f64 / e.live_bytes.max(1) as f64
        ));
    }
    let background: Vec<String> = r
        .results
        .iter()
        .filter_map(|e| Some(format!("- {}: {}\n", e.engine, e.background.as_ref()?)))
        .collect();
    if !background.is_empty() {
        out.push_str("\nBackground work:\n\n");
        out.push_str(&background.concat());
    }
    if any { out } else { String::new() }
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
    if let Some(sst) = &c.sst_dir {
        out.push_str(&format!(
            "pmdb keeps its pool in `{}` and its SSTs in `{}` ({}); the peers run in `{}` too.\n\n",
            c.dir.display(),
            sst.display(),
            filesystem_of(sst),
            sst.display()
        ));
    }
    if let Some(cap) = c.pool_max {
        out.push_str(&format!("pmdb's pool is capped at {}.\n\n", fmt_bytes(cap)));
    }
    out.push_str("Engines and the settings that give that durability:\n\n");
    for e in &r.results {
        out.push_str(&format!("- {}: {}\n", e.engine, e.settings));
    }
    let compacted: Vec<String> = r
        .results
        .iter()
        .filter_map(|e| Some(format!("{} {:.1} s", e.engine, e.compact_secs?)))
        .collect();
    if !compacted.is_empty() {
        out.push_str(&format!(
            "\nEach engine compacted fully after the load: {}.\n",
            compacted.join(", ")
        ));
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
    out.push_str(&read_modes_section(r, &phases));
    out.push_str(&timeline_section(r));
    out.push_str(&space_section(r));
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
            pool_max: None,
            sst_dir: None,
            read_modes: Vec::new(),
            window_secs: 10,
            compact_after_load: false,
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
        let cases: [(&str, Spoil); 12] = [
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
            ("pool_max", |c| c.pool_max = Some(1 << 20)),
            ("window", |c| c.window_secs = 0),
            ("read_mode", |c| c.read_modes = vec!["mmap".into()]),
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

    /// pmdb with its SSTs elsewhere, compacted after the load, once per read mode: the
    /// peers run beside the SSTs, reads come from the SSTs, and the report compares the
    /// modes and states where the data lay.
    #[test]
    fn tiers_read_modes_and_footprints() {
        let dir = tempfile::tempdir().unwrap();
        let sst = dir.path().join("disk");
        let config = YcsbConfig {
            engines: vec!["pmdb".into(), "lmdb".into()],
            workloads: vec!['C', 'E'],
            nvm_factors: Vec::new(),
            sst_dir: Some(sst.clone()),
            pool_max: Some(MIN_POOL_MAX),
            read_modes: vec!["pread".into(), "direct".into()],
            compact_after_load: true,
            ..config(&dir.path().join("pm"))
        };
        let r = run(&config, "test".into()).unwrap();
        let names: Vec<&str> = r.results.iter().map(|e| e.engine.as_str()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(names[0].ends_with("pread reads)") && names[1].ends_with("direct reads)"));
        for e in &r.results[..2] {
            assert!(e.compact_secs.is_some());
            let f = e.footprint_at_end.unwrap();
            // Compacted: the records are in SST files, under the SST directory.
            assert!(f.file_bytes > 0, "{f:?}");
            assert!(
                e.settings.contains(&sst.display().to_string()),
                "{}",
                e.settings
            );
            assert!(e.background.as_ref().unwrap().contains("flushes"));
            let c = e.phases.iter().find(|p| p.phase == "C").unwrap();
            assert_eq!(c.not_found, 0);
        }
        assert!(r.results[2].footprint_at_end.unwrap().file_bytes > 0);
        // At least the loaded records (workload E inserts more).
        let layout = config.layout();
        let loaded = config.records * (layout.key(0).len() + layout.value_size()) as u64;
        assert!(r.results.iter().all(|e| e.live_bytes >= loaded));
        let md = markdown(&r);
        assert!(md.contains("## SST read modes (ratio to pread)"), "{md}");
        assert!(md.contains("peers run in"), "{md}");
        assert!(md.contains("## Space at the end"), "{md}");
        // Every engine's directories are gone after the run.
        assert_eq!(std::fs::read_dir(&sst).unwrap().count(), 0);
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
