//! `pmdb bench sysbench`: sysbench's OLTP tests through its pgsql driver against
//! `pmdb serve` and, in the same run, against PostgreSQL on the same filesystem, both
//! over TCP on the loopback address: for each server a fresh server, `sysbench
//! oltp_read_write prepare`, then a timed run of each test at each thread count.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use pmdb_bench::machine::{Machine, filesystem_of};
use pmdb_bench::pgbench::Target;
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_bench::server_cpu::Meter;
use pmdb_bench::sysbench::{self, RunResult, Setup, SysbenchReport, Tables};

use crate::bench_server::{Failure, pmdb_description, postgres_bin, start_postgres, with_pmdb};
use crate::input::whole;
use crate::paths::default_dir;

#[derive(Args)]
pub struct SysbenchArgs {
    /// sysbench's OLTP tests, comma-separated, run in this order on the same tables
    #[arg(long, value_delimiter = ',', default_values = sysbench::TESTS, value_parser = sysbench::TESTS)]
    tests: Vec<String>,
    /// Client thread counts to run each test at, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 16], value_parser = whole(1..=64usize))]
    threads: Vec<usize>,
    /// Seconds of each run
    #[arg(long, default_value_t = 30, value_parser = whole(1..=3600u64))]
    seconds: u64,
    /// Tables sysbench creates and the tests spread over
    #[arg(long, default_value_t = 4, value_parser = whole(1..=1000u32))]
    tables: u32,
    /// Rows in each table
    #[arg(long, default_value_t = 100_000, value_parser = whole(1..=100_000_000u64))]
    table_size: u64,
    /// Directory the servers' data goes in (its pmdb/ and postgres/ are replaced)
    /// [default: /dev/shm/pmdb-bench-sysbench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Leave PostgreSQL out even when it is installed
    #[arg(long)]
    no_postgres: bool,
    /// Directory for the JSON, Markdown and SVG report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

impl SysbenchArgs {
    fn tables(&self) -> Tables {
        Tables {
            count: self.tables,
            rows: self.table_size,
        }
    }
}

/// The line printed for a run.
fn run_line(r: &RunResult) -> String {
    let head = format!("{:<10} {:<21} t{:<2}", r.engine, r.test, r.threads);
    match &r.outcome {
        Ok(s) => format!(
            "{head} {:>8.0} TPS  p95 {:.2} ms  errors {}  server CPU {:.3} ms/transaction",
            s.tps,
            s.latency_ms.p95,
            s.ignored_errors,
            r.cpu_ms_per_transaction().unwrap_or_default()
        ),
        Err(e) => format!("{head} FAILED: {}", e.lines().next().unwrap_or_default()),
    }
}

/// Loads the tables into `target` and runs every test at every thread count against it;
/// the seconds the load took and the runs.
fn drive(
    a: &SysbenchArgs,
    bin: &Path,
    target: &Target,
    meter: Meter,
    bar: &indicatif::ProgressBar,
) -> Result<(f64, Vec<RunResult>), Failure> {
    bar.set_message(format!(
        "{}: prepare {} × {} rows",
        target.engine, a.tables, a.table_size
    ));
    let prepare_seconds = sysbench::prepare(bin, target, a.tables())?;
    bar.inc(1);
    let mut runs = Vec::new();
    for test in &a.tests {
        for &threads in &a.threads {
            bar.set_message(format!("{}: {test}, {threads} threads", target.engine));
            let r = sysbench::run(bin, target, test, a.tables(), threads, a.seconds, meter)?;
            // Printed, not drawn: the progress bar is hidden when stdout is no terminal.
            bar.suspend(|| println!("{}", run_line(&r)));
            runs.push(r);
            bar.inc(1);
        }
    }
    Ok((prepare_seconds, runs))
}

pub fn run(a: SysbenchArgs) -> Result<ExitCode, Failure> {
    let Some(bin) = sysbench::find() else {
        eprintln!("sysbench is not installed: {}", sysbench::INSTALL);
        return Ok(ExitCode::from(2));
    };
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| default_dir("pmdb-bench-sysbench", "bench-data-sysbench"));
    std::fs::create_dir_all(&dir)?;
    let pg_bin = postgres_bin(a.no_postgres);
    let servers = 1 + usize::from(pg_bin.is_some());
    let steps = servers * (1 + a.tests.len() * a.threads.len());
    let bar = progress("sysbench", steps as u64);
    let mut setups = Vec::new();
    let mut runs = Vec::new();

    // pmdb: the server in this process, as `pmdb serve` runs it; it takes any database
    // name, so it is asked for sysbench's own.
    let (prepare_seconds, r) = with_pmdb(&dir.join("pmdb"), |port| {
        let target = Target {
            engine: "pmdb".into(),
            port,
            user: "pmdb".into(),
            database: "sbtest".into(),
        };
        drive(&a, &bin, &target, Meter::ThisProcess, &bar)
    })?;
    setups.push(Setup {
        engine: "pmdb".into(),
        description: pmdb_description(),
        prepare_seconds,
    });
    runs.extend(r);

    if let Some(pg_bin) = &pg_bin {
        let (pg, port) = start_postgres(pg_bin, &dir.join("postgres"))?;
        // sysbench creates no database: its tables go in the fresh cluster's own, as
        // pgbench's do.
        let target = Target {
            engine: "PostgreSQL".into(),
            port,
            user: "postgres".into(),
            database: "postgres".into(),
        };
        let meter = Meter::Tree(pg.postmaster_pid()?);
        let (prepare_seconds, r) = drive(&a, &bin, &target, meter, &bar)?;
        setups.push(Setup {
            engine: target.engine,
            description: pg.description(),
            prepare_seconds,
        });
        runs.extend(r);
    }
    bar.finish_and_clear();

    let report = SysbenchReport {
        command: command_line(),
        machine: Machine::detect(),
        directory: dir.display().to_string(),
        filesystem: filesystem_of(&dir),
        seconds: a.seconds,
        tables: a.tables(),
        setups,
        runs,
    };
    let md = sysbench::write(&a.out, &report)?;
    println!("report: {}", md.display());
    if report.runs.iter().any(|r| r.outcome.is_err()) {
        eprintln!("some runs failed: see the report");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
