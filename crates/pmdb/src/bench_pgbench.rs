//! `pmdb bench pgbench`: pgbench's TPC-B-like load against `pmdb serve` and, in the same
//! run, against PostgreSQL on the same filesystem, both over TCP on the loopback
//! address: `pgbench -i -s SCALE`, then each query mode at each client count, with each
//! server's CPU time per transaction.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pmdb_bench::machine::{Machine, filesystem_of};
use pmdb_bench::pgbench::{self, Mode, PgbenchReport, RunResult, Setup, Target};
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_bench::server_cpu::Meter;

use crate::bench_server::{Failure, pmdb_description, postgres_bin, start_postgres, with_pmdb};
use crate::input::whole;
use crate::paths::default_dir;

#[derive(Args)]
pub struct PgbenchArgs {
    /// pgbench's scale factor (100,000 accounts each)
    #[arg(long, default_value_t = 10, value_parser = whole(1..=1000u32))]
    scale: u32,
    /// Client counts to run, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2, 4], value_parser = whole(1..=64usize))]
    clients: Vec<usize>,
    /// Seconds of each run
    #[arg(long, default_value_t = 60, value_parser = whole(1..=3600u64))]
    seconds: u64,
    /// Query modes, comma-separated (simple, prepared)
    #[arg(long, value_delimiter = ',', default_values_t = [Mode::Simple, Mode::Prepared])]
    modes: Vec<Mode>,
    /// Directory the servers' data goes in (its pmdb/ and postgres/ are replaced)
    /// [default: /dev/shm/pmdb-bench-pgbench on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Leave PostgreSQL out even when it is installed
    #[arg(long)]
    no_postgres: bool,
    /// Directory for the JSON, Markdown and SVG report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

/// Initializes `target` and runs every mode at every client count against it.
fn drive(
    a: &PgbenchArgs,
    bin: &std::path::Path,
    target: &Target,
    logs: &std::path::Path,
    meter: Meter,
    bar: &indicatif::ProgressBar,
) -> Result<(f64, Vec<RunResult>), Failure> {
    bar.set_message(format!("{}: pgbench -i -s {}", target.engine, a.scale));
    let init = pgbench::initialize(bin, target, a.scale)?;
    bar.inc(1);
    let mut runs = Vec::new();
    for &mode in &a.modes {
        for &clients in &a.clients {
            bar.set_message(format!(
                "{}: {} mode, {clients} clients",
                target.engine,
                mode.name()
            ));
            let r = pgbench::run(bin, target, mode, clients, a.seconds, logs, meter)?;
            // Printed, not drawn: the progress bar is hidden when stdout is no terminal.
            bar.suspend(|| {
                println!(
                    "{:<10} {:<8} c{:<2} {:>8.0} TPS  p50 {:.2} ms  p99 {:.2} ms  retried {}  failed {}  server CPU {:.3} ms/transaction",
                    r.engine,
                    mode.name(),
                    clients,
                    r.tps,
                    r.latency.p50_ns as f64 / 1e6,
                    r.latency.p99_ns as f64 / 1e6,
                    r.retried,
                    r.failed,
                    r.cpu_ms_per_transaction()
                )
            });
            runs.push(r);
            bar.inc(1);
        }
    }
    Ok((init, runs))
}

pub fn run(a: PgbenchArgs) -> Result<ExitCode, Failure> {
    let Some(bin) = pgbench::find() else {
        eprintln!(
            "pgbench is not installed: install PostgreSQL's client programs \
             (apt-get install postgresql-client; add postgresql to compare with it)"
        );
        return Ok(ExitCode::from(2));
    };
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| default_dir("pmdb-bench-pgbench", "bench-data-pgbench"));
    std::fs::create_dir_all(&dir)?;
    let pg_bin = postgres_bin(a.no_postgres);
    let servers = 1 + usize::from(pg_bin.is_some());
    let steps = servers * (1 + a.modes.len() * a.clients.len());
    let bar = progress("pgbench", steps as u64);
    let logs = dir.join("logs");
    let mut setups = Vec::new();
    let mut runs = Vec::new();

    // pmdb: the server in this process, as `pmdb serve` runs it.
    let (init, r) = with_pmdb(&dir.join("pmdb"), |port| {
        let target = Target {
            engine: "pmdb".into(),
            port,
            user: "pmdb".into(),
            database: "pmdb".into(),
        };
        drive(&a, &bin, &target, &logs, Meter::ThisProcess, &bar)
    })?;
    setups.push(Setup {
        engine: "pmdb".into(),
        description: pmdb_description(),
        init_seconds: init,
    });
    runs.extend(r);

    if let Some(pg_bin) = &pg_bin {
        let (pg, port) = start_postgres(pg_bin, &dir.join("postgres"))?;
        let target = Target {
            engine: "PostgreSQL".into(),
            port,
            user: "postgres".into(),
            database: "postgres".into(),
        };
        let meter = Meter::Tree(pg.postmaster_pid()?);
        let (init, r) = drive(&a, &bin, &target, &logs, meter, &bar)?;
        setups.push(Setup {
            engine: "PostgreSQL".into(),
            description: pg.description(),
            init_seconds: init,
        });
        runs.extend(r);
    }
    bar.finish_and_clear();

    let report = PgbenchReport {
        command: command_line(),
        machine: Machine::detect(),
        directory: dir.display().to_string(),
        filesystem: filesystem_of(&dir),
        scale: a.scale,
        seconds: a.seconds,
        setups,
        runs,
    };
    let md = pgbench::write(&a.out, &report)?;
    println!("report: {}", md.display());
    if report.runs.iter().any(|r| r.failed > 0) {
        eprintln!("some transactions failed: see the report");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
