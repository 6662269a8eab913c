//! `pmdb bench`: the benchmark suites. With no arguments it runs the quick YCSB suite
//! (A–F, pmdb against the peers built in) on the default tmpfs path.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pmdb_bench::limits::{
    MAX_BANDWIDTH_MB_S, MAX_DRAM_LATENCY_NS, MAX_EMULATED_NS, MAX_KEYS, MAX_NVM_FACTOR,
    MAX_OPERATIONS, MAX_RECORDS, MAX_THREADS,
};
use pmdb_bench::pmem::{PmemBenchConfig, Target};
use pmdb_bench::recovery::MAX_RUNS;
use pmdb_bench::ycsb_run::{MAX_WINDOW_SECS, MIN_POOL_MAX};
use pmdb_engine::DbOptions;
use pmdb_pmem::{BackendChoice, Emulation};

use crate::input::{as_option, factor, size, whole};
use crate::paths::default_dir;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    suite: Option<Suite>,
}

#[derive(Subcommand)]
enum Suite {
    /// YCSB core workloads A–F on pmdb and its peers, side by side (no suite given: the
    /// quick run of this).
    Ycsb(YcsbArgs),
    /// Device-layer costs: persist 64 B / 256 B / 4 KiB, 8-byte publish, commit floor,
    /// zone alloc + commit, on each backend.
    Pmem(PmemArgs),
    /// Engine: durable puts (1 and 2 threads) against the commit floor, gets on loaded
    /// databases (uniform and zipfian), recovery at 1 and 2 threads.
    Engine(EngineArgs),
    /// Memtable index candidates: insert and lookup cost at given sizes.
    Index(IndexArgs),
    /// One index measurement in a process of its own; prints it as JSON.
    #[command(hide = true)]
    IndexOne(IndexOneArgs),
    /// Recovery after SIGKILL: pmdb's reopen (DRAM index rebuilt over PM) against
    /// RocksDB's WAL replay, until the first read.
    Recovery(RecoveryArgs),
    /// The recovery benchmark's loading child: loads, reports, waits to be killed.
    #[command(hide = true)]
    RecoveryLoad(RecoveryLoadArgs),
    /// TPC-H: the 22 queries on pmdb, on DataFusion over in-memory Arrow (the reference
    /// every answer is checked against) and on PostgreSQL when it is installed.
    #[cfg(feature = "sql")]
    Tpch(crate::bench_tpch::TpchArgs),
    /// pgbench's TPC-B-like load against `pmdb serve` and PostgreSQL (when installed),
    /// both over TCP, with TPS and latency percentiles.
    #[cfg(feature = "sql")]
    Pgbench(crate::bench_pgbench::PgbenchArgs),
    /// TPC-C through go-tpc against `pmdb serve` and PostgreSQL (when installed), both
    /// over TCP, with tpmC, latency percentiles, server CPU per transaction and go-tpc's
    /// consistency check.
    #[cfg(feature = "sql")]
    Tpcc(crate::bench_tpcc::TpccArgs),
    /// sysbench's OLTP tests (point selects to inserts) through its pgsql driver against
    /// `pmdb serve` and PostgreSQL (when installed), both over TCP, with TPS, p95
    /// latency, errors and server CPU per transaction at each thread count.
    #[cfg(feature = "sql")]
    Sysbench(crate::bench_sysbench::SysbenchArgs),
    /// Redraw the charts and the Markdown of a YCSB report from its JSON.
    Replot(ReplotArgs),
}

#[derive(Args)]
struct ReplotArgs {
    /// The report's JSON (ycsb.json)
    report: PathBuf,
    /// Where to write [default: the report's directory]
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Largest pool cap accepted: 1 PiB.
const MAX_POOL: u64 = 1 << 50;

#[derive(Args)]
struct YcsbArgs {
    /// Directory the engines run in [default: /dev/shm/pmdb-bench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Engines, comma-separated: pmdb, pmdb-file, lmdb, sqlite (and rocksdb when built
    /// with the rocksdb feature)
    #[arg(long, value_delimiter = ',', default_value = "pmdb,lmdb,sqlite")]
    engines: Vec<String>,
    /// Workloads, comma-separated (run in YCSB's order A, B, C, F, D, E)
    #[arg(long, value_delimiter = ',', default_value = "A,B,C,D,E,F")]
    workloads: Vec<char>,
    /// Records loaded (1 to 10^9)
    #[arg(long, default_value_t = 100_000, value_parser = whole(1..=MAX_RECORDS))]
    records: u64,
    /// Operations measured per workload (1 to 10^9)
    #[arg(long, default_value_t = 100_000, value_parser = whole(1..=MAX_OPERATIONS))]
    operations: u64,
    /// Operations run before measuring, per workload (0 to 10^9)
    #[arg(long, default_value_t = 10_000, value_parser = whole(0..=MAX_OPERATIONS))]
    warmup: u64,
    /// Client threads (1 to 1024)
    #[arg(long, default_value_t = 1, value_parser = whole(1..=MAX_THREADS))]
    threads: usize,
    /// Record layout: ycsb ("user…" keys, 10 fields × 100 B) or xengine (8 B keys, 500 B
    /// values)
    #[arg(long, default_value = "ycsb", value_parser = ["ycsb", "xengine"])]
    preset: String,
    /// durable (every acknowledged write survives a crash) or relaxed
    #[arg(long, default_value = "durable", value_parser = ["durable", "relaxed"])]
    durability: String,
    #[arg(long, default_value_t = 42, value_parser = whole(0..=u64::MAX))]
    seed: u64,
    /// Also sweep pmdb over emulated PM latencies on workloads C and A, as multiples of
    /// DRAM latency (1x to 100x), e.g. 1x,2x,4x,8x,16x
    #[arg(long, value_delimiter = ',', value_parser = factor(1..=MAX_NVM_FACTOR))]
    nvm_latency: Vec<u32>,
    /// The DRAM latency the sweep's factors multiply, in ns (1 to 1000)
    #[arg(long, default_value_t = 100, value_parser = whole(1..=MAX_DRAM_LATENCY_NS))]
    dram_latency_ns: u64,
    /// Cap pmdb's pool at this size, e.g. 2G (at least 256 MiB) [default: pmdb's]
    #[arg(long, value_parser = size(MIN_POOL_MAX..=MAX_POOL))]
    pool_max: Option<u64>,
    /// Put pmdb's SSTs in this directory, and run the peers there too (e.g. a disk, with
    /// the pool on tmpfs) [default: everything in --dir]
    #[arg(long)]
    sst_dir: Option<PathBuf>,
    /// SST read modes, comma-separated: pread, mmap-copy, direct; pmdb runs once per mode
    /// [default: pmdb's]
    #[arg(long, value_delimiter = ',')]
    read_mode: Vec<String>,
    /// Length of a throughput-over-time window, in seconds (1 to 3600)
    #[arg(long, default_value_t = 10, value_parser = whole(1..=MAX_WINDOW_SECS))]
    window: u64,
    /// Compact every engine fully between the load and the workloads
    #[arg(long)]
    compact_after_load: bool,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

impl YcsbArgs {
    /// The quick suite `pmdb bench` runs with no arguments.
    fn quick() -> YcsbArgs {
        YcsbArgs {
            dir: None,
            engines: ["pmdb", "lmdb", "sqlite"].map(String::from).to_vec(),
            workloads: vec!['A', 'B', 'C', 'D', 'E', 'F'],
            records: 100_000,
            operations: 100_000,
            warmup: 10_000,
            threads: 1,
            preset: "ycsb".into(),
            durability: "durable".into(),
            seed: 42,
            nvm_latency: Vec::new(),
            dram_latency_ns: 100,
            pool_max: None,
            sst_dir: None,
            read_mode: Vec::new(),
            window: 10,
            compact_after_load: false,
            out: "bench-results".into(),
        }
    }
}

#[derive(Args)]
struct EngineArgs {
    /// Directory for the databases [default: /dev/shm/pmdb-bench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Durable puts per thread count (1 to 10^9)
    #[arg(long, default_value_t = 500_000, value_parser = whole(1..=MAX_OPERATIONS))]
    put_ops: u64,
    /// Database sizes for gets and recovery, comma-separated (each 1 to 10^8)
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000", value_parser = whole(1..=MAX_KEYS))]
    keys: Vec<u64>,
    /// Gets per database size and distribution (1 to 10^9)
    #[arg(long, default_value_t = 1_000_000, value_parser = whole(1..=MAX_OPERATIONS))]
    get_ops: u64,
    /// Value size of every put and loaded record, in bytes
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Free zones kept pre-faulted ahead of the commit path (0: none)
    #[arg(long, default_value_t = DbOptions::default().prefault_zones)]
    prefault_zones: usize,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

#[derive(Args)]
struct RecoveryArgs {
    /// Directory for the databases [default: /dev/shm/pmdb-bench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Engines, comma-separated: pmdb, rocksdb [default: those built in]
    #[arg(long, value_delimiter = ',')]
    engines: Option<Vec<String>>,
    /// Database sizes in records, comma-separated (each 1 to 10^8)
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000", value_parser = whole(1..=MAX_KEYS))]
    records: Vec<u64>,
    /// Load, kill and timed reopen cycles per engine and size (1 to 100)
    #[arg(long, default_value_t = 3, value_parser = whole(1..=MAX_RUNS))]
    runs: usize,
    /// pmdb's index rebuild threads (0: one per core; at most 1024)
    #[arg(long, default_value_t = 0, value_parser = whole(0..=MAX_THREADS))]
    recovery_threads: usize,
    /// Directory for the JSON and Markdown report and the chart
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

#[derive(Args)]
struct RecoveryLoadArgs {
    #[arg(long)]
    engine: String,
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, value_parser = whole(1..=MAX_KEYS))]
    records: u64,
}

#[derive(Args)]
struct IndexOneArgs {
    #[arg(long)]
    candidate: usize,
    #[arg(long, value_parser = whole(1..=MAX_KEYS))]
    keys: u64,
    #[arg(long, value_parser = whole(1..=MAX_OPERATIONS))]
    lookups: u64,
}

#[derive(Args)]
struct IndexArgs {
    /// Index sizes, comma-separated (each 1 to 10^8)
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000", value_parser = whole(1..=MAX_KEYS))]
    keys: Vec<u64>,
    /// Lookups per size (1 to 10^9)
    #[arg(long, default_value_t = 2_000_000, value_parser = whole(1..=MAX_OPERATIONS))]
    lookups: u64,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

#[derive(Args)]
struct PmemArgs {
    /// DRAM-backed directory for the Memory backend [default: /dev/shm/pmdb-bench]
    #[arg(long)]
    memory_dir: Option<PathBuf>,
    /// Disk directory for the File backend (msync)
    #[arg(long, default_value = "bench-data")]
    file_dir: PathBuf,
    /// Skip the File backend
    #[arg(long)]
    no_file: bool,
    /// Operations per measurement on the Memory backend (1 to 10^9)
    #[arg(long, default_value_t = 200_000, value_parser = whole(1..=MAX_OPERATIONS))]
    ops: u64,
    /// Operations per measurement on the File backend (1 to 10^9)
    #[arg(long, default_value_t = 2_000, value_parser = whole(1..=MAX_OPERATIONS))]
    file_ops: u64,
    /// Zone allocations + commits measured on the Memory backend (the File backend
    /// measures --file-ops; 1 to 10^9)
    #[arg(long, default_value_t = 100_000, value_parser = whole(1..=MAX_OPERATIONS))]
    zone_ops: u64,
    /// Emulated extra latency per flushed cache line, ns (0 to 100000)
    #[arg(long, default_value_t = 0, value_parser = whole(0..=MAX_EMULATED_NS))]
    write_latency_ns: u64,
    /// Emulated write bandwidth cap, MB/s (0: none; at most 1000000)
    #[arg(long, default_value_t = 0, value_parser = whole(0..=MAX_BANDWIDTH_MB_S))]
    write_bandwidth_mb_s: u64,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

pub fn run(args: BenchArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match args.suite.unwrap_or(Suite::Ycsb(YcsbArgs::quick())) {
        Suite::Ycsb(a) => ycsb(a),
        Suite::Pmem(a) => pmem(a),
        Suite::Engine(a) => engine(a),
        Suite::Index(a) => index(a),
        Suite::Recovery(a) => recovery(a),
        Suite::RecoveryLoad(a) => recovery_load(a),
        Suite::IndexOne(a) => index_one(a),
        Suite::Replot(a) => replot(a),
        #[cfg(feature = "sql")]
        Suite::Tpch(a) => crate::bench_tpch::run(a),
        #[cfg(feature = "sql")]
        Suite::Pgbench(a) => crate::bench_pgbench::run(a),
        #[cfg(feature = "sql")]
        Suite::Tpcc(a) => crate::bench_tpcc::run(a),
        #[cfg(feature = "sql")]
        Suite::Sysbench(a) => crate::bench_sysbench::run(a),
    }
}

fn replot(a: ReplotArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let text =
        std::fs::read_to_string(&a.report).map_err(|e| format!("{}: {e}", a.report.display()))?;
    let report: pmdb_bench::ycsb_run::YcsbReport = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a YCSB report: {e}", a.report.display()))?;
    let out = a.out.unwrap_or_else(|| {
        a.report
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    publish_ycsb(&out, &report)
}

/// Writes a YCSB report's JSON, Markdown and charts to `out`.
fn publish_ycsb(
    out: &std::path::Path,
    report: &pmdb_bench::ycsb_run::YcsbReport,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let charts =
        pmdb_bench::ycsb_run::charts(report, out).map_err(|e| e as Box<dyn std::error::Error>)?;
    let code = publish(out, "ycsb", report, &pmdb_bench::ycsb_run::markdown(report))?;
    for chart in charts {
        println!("chart written to {}", chart.display());
    }
    Ok(code)
}

fn publish(
    out: &std::path::Path,
    name: &str,
    data: &impl serde::Serialize,
    md: &str,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (json, md_path) = pmdb_bench::report::write_report(out, name, data, md)?;
    println!("{md}");
    println!(
        "report written to {} and {}",
        md_path.display(),
        json.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn ycsb(a: YcsbArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let layout = if a.preset == "xengine" {
        pmdb_bench::ycsb::Layout::XENGINE
    } else {
        pmdb_bench::ycsb::Layout::YCSB
    };
    let config = pmdb_bench::ycsb_run::YcsbConfig {
        dir: a
            .dir
            .unwrap_or_else(|| default_dir("pmdb-bench", "bench-data")),
        engines: a.engines,
        workloads: a.workloads.iter().map(|w| w.to_ascii_uppercase()).collect(),
        records: a.records,
        operations: a.operations,
        warmup: a.warmup,
        threads: a.threads,
        field_count: layout.field_count,
        field_length: layout.field_length,
        short_keys: layout.short_keys,
        durability: if a.durability == "relaxed" {
            pmdb_bench::engines::Durability::Relaxed
        } else {
            pmdb_bench::engines::Durability::Durable
        },
        seed: a.seed,
        nvm_factors: a.nvm_latency,
        dram_latency_ns: a.dram_latency_ns,
        pool_max: a.pool_max,
        sst_dir: a.sst_dir,
        read_modes: a.read_mode,
        window_secs: a.window,
        compact_after_load: a.compact_after_load,
    };
    config.validate().map_err(as_option)?;
    let report = pmdb_bench::ycsb_run::run(&config, pmdb_bench::report::command_line())
        .map_err(|e| e as Box<dyn std::error::Error>)?;
    publish_ycsb(&a.out, &report)
}

fn engine(a: EngineArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let config = pmdb_bench::engine::EngineBenchConfig {
        dir: a
            .dir
            .unwrap_or_else(|| default_dir("pmdb-bench", "bench-data")),
        put_ops: a.put_ops,
        put_threads: vec![1, 2],
        key_counts: a.keys,
        get_ops: a.get_ops,
        recovery_threads: vec![1, 2],
        key_size: 16,
        value_size: a.value_size,
        prefault_zones: a.prefault_zones,
    };
    config.validate().map_err(as_option)?;
    let report = pmdb_bench::engine::run(&config, pmdb_bench::report::command_line())?;
    publish(
        &a.out,
        "engine",
        &report,
        &pmdb_bench::engine::markdown(&report),
    )
}

fn index(a: IndexArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    pmdb_bench::index::validate(&a.keys, a.lookups).map_err(as_option)?;
    // Each measurement runs in this executable again, on the hidden index-one suite.
    let exe = std::env::current_exe()?;
    let one = |candidate: usize, keys: u64| -> Result<_, Box<dyn std::error::Error>> {
        let out = std::process::Command::new(&exe)
            .args(["bench", "index-one", "--candidate", &candidate.to_string()])
            .args([
                "--keys",
                &keys.to_string(),
                "--lookups",
                &a.lookups.to_string(),
            ])
            .stderr(std::process::Stdio::inherit())
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "index measurement {candidate} at {keys} keys failed: {}",
                out.status
            )
            .into());
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let report =
        pmdb_bench::index::run(&a.keys, a.lookups, pmdb_bench::report::command_line(), one)?;
    publish(
        &a.out,
        "index",
        &report,
        &pmdb_bench::index::markdown(&report),
    )
}

fn recovery(a: RecoveryArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    use pmdb_bench::recovery::{ENGINES, LoadJob, RecoveryConfig};
    let config = RecoveryConfig {
        dir: a
            .dir
            .unwrap_or_else(|| default_dir("pmdb-bench", "bench-data")),
        engines: a
            .engines
            .unwrap_or_else(|| ENGINES.iter().map(|e| e.to_string()).collect()),
        records: a.records,
        runs: a.runs,
        recovery_threads: a.recovery_threads,
    };
    config.validate().map_err(as_option)?;
    if !ENGINES.contains(&"rocksdb") {
        eprintln!(
            "RocksDB is not built into this binary (build with --features rocksdb): pmdb alone"
        );
    }
    // The loading child is this executable again, on the hidden recovery-load suite.
    let exe = std::env::current_exe()?;
    let launch = |job: &LoadJob| {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["bench", "recovery-load", "--engine", &job.engine, "--dir"])
            .arg(&job.dir)
            .args(["--records", &job.records.to_string()]);
        cmd
    };
    let report = pmdb_bench::recovery::run(&config, pmdb_bench::report::command_line(), &launch)
        .map_err(|e| e as Box<dyn std::error::Error>)?;
    let chart = pmdb_bench::recovery::chart(&report, &a.out)
        .map_err(|e| e as Box<dyn std::error::Error>)?;
    let code = publish(
        &a.out,
        "recovery",
        &report,
        &pmdb_bench::recovery::markdown(&report),
    )?;
    println!("chart written to {}", chart.display());
    Ok(code)
}

fn index_one(a: IndexOneArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let result = pmdb_bench::index::measure_one(a.candidate, a.keys, a.lookups)
        .ok_or_else(|| format!("no index candidate {}", a.candidate))?;
    println!("{}", serde_json::to_string(&result)?);
    Ok(ExitCode::SUCCESS)
}

fn recovery_load(a: RecoveryLoadArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    pmdb_bench::recovery::serve_load(&pmdb_bench::recovery::LoadJob {
        engine: a.engine,
        dir: a.dir,
        records: a.records,
    })
    .map_err(|e| e as Box<dyn std::error::Error>)?;
    Ok(ExitCode::SUCCESS)
}

fn pmem(a: PmemArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let memory_dir = a
        .memory_dir
        .unwrap_or_else(|| default_dir("pmdb-bench", "bench-data"));
    let mut targets = vec![Target {
        dir: memory_dir,
        backend: BackendChoice::Memory,
        ops: a.ops,
        zone_ops: a.zone_ops,
    }];
    if !a.no_file {
        targets.push(Target {
            dir: a.file_dir,
            backend: BackendChoice::File,
            ops: a.file_ops,
            zone_ops: a.file_ops,
        });
    }
    for t in &targets {
        std::fs::create_dir_all(&t.dir)?;
    }
    let config = PmemBenchConfig {
        targets,
        sizes: vec![64, 256, 4096],
        emulation: Emulation {
            write_latency_ns: a.write_latency_ns,
            write_bandwidth_mb_s: a.write_bandwidth_mb_s,
            ..Emulation::default()
        },
    };
    let report = pmdb_bench::pmem::run(&config, pmdb_bench::report::command_line())?;
    publish(
        &a.out,
        "pmem",
        &report,
        &pmdb_bench::pmem::markdown(&report),
    )
}
