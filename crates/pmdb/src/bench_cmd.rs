//! `pmdb bench`: the benchmark suites. With no arguments it runs the quick device-layer
//! suite on the default tmpfs path (Memory backend) and on a disk path (File backend).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pmdb_bench::pmem::{PmemBenchConfig, Target};
use pmdb_pmem::{BackendChoice, Emulation};

use crate::paths::default_dir;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    suite: Option<Suite>,
}

#[derive(Subcommand)]
enum Suite {
    /// Device-layer costs: persist 64 B / 256 B / 4 KiB, 8-byte publish, commit floor,
    /// zone alloc + commit, on each backend.
    Pmem(PmemArgs),
    /// Engine: durable puts (1 and 2 threads) against the commit floor, gets on loaded
    /// databases (uniform and zipfian), recovery at 1 and 2 threads.
    Engine(EngineArgs),
    /// Memtable index candidates: insert and lookup cost at given sizes.
    Index(IndexArgs),
}

#[derive(Args)]
struct EngineArgs {
    /// Directory for the databases [default: /dev/shm/pmdb-bench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Durable puts per thread count
    #[arg(long, default_value_t = 500_000)]
    put_ops: u64,
    /// Database sizes for gets and recovery, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000")]
    keys: Vec<u64>,
    /// Gets per database size and distribution
    #[arg(long, default_value_t = 1_000_000)]
    get_ops: u64,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

#[derive(Args)]
struct IndexArgs {
    /// Index sizes, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000")]
    keys: Vec<u64>,
    /// Lookups per size
    #[arg(long, default_value_t = 2_000_000)]
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
    /// Operations per measurement on the Memory backend
    #[arg(long, default_value_t = 200_000)]
    ops: u64,
    /// Operations per measurement on the File backend
    #[arg(long, default_value_t = 2_000)]
    file_ops: u64,
    /// Zone allocations + commits measured on the Memory backend (the File backend
    /// measures --file-ops)
    #[arg(long, default_value_t = 100_000)]
    zone_ops: u64,
    /// Emulated extra latency per flushed cache line, ns
    #[arg(long, default_value_t = 0)]
    write_latency_ns: u64,
    /// Emulated write bandwidth cap, MB/s (0: none)
    #[arg(long, default_value_t = 0)]
    write_bandwidth_mb_s: u64,
    /// Directory for the JSON and Markdown report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

impl Default for PmemArgs {
    fn default() -> Self {
        PmemArgs {
            memory_dir: None,
            file_dir: "bench-data".into(),
            no_file: false,
            ops: 200_000,
            file_ops: 2_000,
            zone_ops: 100_000,
            write_latency_ns: 0,
            write_bandwidth_mb_s: 0,
            out: "bench-results".into(),
        }
    }
}

pub fn run(args: BenchArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match args.suite.unwrap_or(Suite::Pmem(PmemArgs::default())) {
        Suite::Pmem(a) => pmem(a),
        Suite::Engine(a) => engine(a),
        Suite::Index(a) => index(a),
    }
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
        value_size: 100,
    };
    let report = pmdb_bench::engine::run(&config, pmdb_bench::report::command_line())?;
    publish(
        &a.out,
        "engine",
        &report,
        &pmdb_bench::engine::markdown(&report),
    )
}

fn index(a: IndexArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let report = pmdb_bench::index::run(&a.keys, a.lookups, pmdb_bench::report::command_line());
    publish(
        &a.out,
        "index",
        &report,
        &pmdb_bench::index::markdown(&report),
    )
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
