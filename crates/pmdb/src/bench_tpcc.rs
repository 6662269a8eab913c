//! `pmdb bench tpcc`: TPC-C through go-tpc's PostgreSQL driver against `pmdb serve` and,
//! in the same run, against PostgreSQL on the same filesystem, both over TCP on the
//! loopback address: for each warehouse count a fresh server, `go-tpc tpcc prepare`, a
//! timed run at each thread count, then `go-tpc tpcc check`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use pmdb_bench::machine::{Machine, filesystem_of};
use pmdb_bench::pgbench::Target;
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_bench::server_cpu::Meter;
use pmdb_bench::tpcc::{self, Load, RunResult, Setup, TpccReport};

use crate::bench_server::{Failure, pmdb_description, postgres_bin, start_postgres, with_pmdb};
use crate::input::whole;
use crate::paths::default_dir;

#[derive(Args)]
pub struct TpccArgs {
    /// Warehouse counts, comma-separated; each is loaded into a fresh server
    #[arg(long, value_delimiter = ',', default_values_t = [2u32, 10], value_parser = whole(1..=1000u32))]
    warehouses: Vec<u32>,
    /// Client thread counts to run at each warehouse count, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4], value_parser = whole(1..=64usize))]
    threads: Vec<usize>,
    /// Seconds of each run
    #[arg(long, default_value_t = 60, value_parser = whole(1..=3600u64))]
    seconds: u64,
    /// go-tpc's threads for loading (`prepare`) and for `check`
    #[arg(long, default_value_t = 2, value_parser = whole(1..=64usize))]
    load_threads: usize,
    /// Directory the servers' data goes in (its pmdb/ and postgres/ are replaced)
    /// [default: /dev/shm/pmdb-bench-tpcc on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Leave PostgreSQL out even when it is installed
    #[arg(long)]
    no_postgres: bool,
    /// Directory for the JSON, Markdown and SVG report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

/// Loads `warehouses` into `target`, runs every thread count against it and checks it.
fn drive(
    a: &TpccArgs,
    bin: &Path,
    target: &Target,
    warehouses: u32,
    meter: Meter,
    bar: &indicatif::ProgressBar,
) -> Result<(Load, Vec<RunResult>), Failure> {
    bar.set_message(format!(
        "{}: prepare {warehouses} warehouses",
        target.engine
    ));
    let prepare_seconds = tpcc::prepare(bin, target, warehouses, a.load_threads)?;
    bar.inc(1);
    let mut runs = Vec::new();
    for &threads in &a.threads {
        bar.set_message(format!(
            "{}: {warehouses} warehouses, {threads} threads",
            target.engine
        ));
        let r = tpcc::run(bin, target, warehouses, threads, a.seconds, meter)?;
        // Printed, not drawn: the progress bar is hidden when stdout is no terminal.
        bar.suspend(|| {
            println!(
                "{:<10} w{:<4} t{:<2} {:>8.0} tpmC  {:>8} transactions  failed {}  server CPU {:.2} ms/transaction",
                r.engine,
                warehouses,
                threads,
                r.tpmc,
                r.transactions,
                r.errors,
                r.cpu_ms_per_transaction()
            )
        });
        runs.push(r);
        bar.inc(1);
    }
    bar.set_message(format!("{}: check {warehouses} warehouses", target.engine));
    let check = tpcc::check(bin, target, warehouses, a.load_threads)?;
    bar.suspend(|| {
        println!(
            "{:<10} w{:<4} check {}",
            target.engine,
            warehouses,
            if check.passed() { "passed" } else { "FAILED" }
        )
    });
    bar.inc(1);
    let load = Load {
        engine: target.engine.clone(),
        warehouses,
        prepare_seconds,
        check,
    };
    Ok((load, runs))
}

pub fn run(a: TpccArgs) -> Result<ExitCode, Failure> {
    let Some(bin) = tpcc::find() else {
        eprintln!(
            "go-tpc is not installed: {} (pin the version: @latest resolves to an older \
             release without the PostgreSQL driver)",
            tpcc::INSTALL
        );
        return Ok(ExitCode::from(2));
    };
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(|| default_dir("pmdb-bench-tpcc", "bench-data-tpcc"));
    std::fs::create_dir_all(&dir)?;
    let pg_bin = postgres_bin(a.no_postgres);
    let servers = 1 + usize::from(pg_bin.is_some());
    let steps = servers * a.warehouses.len() * (2 + a.threads.len());
    let bar = progress("tpcc", steps as u64);
    let mut setups = vec![Setup {
        engine: "pmdb".into(),
        description: pmdb_description(),
    }];
    let mut loads = Vec::new();
    let mut runs = Vec::new();

    // pmdb: the server in this process, as `pmdb serve` runs it; it takes any database
    // name, so both servers are asked for go-tpc's own.
    for &warehouses in &a.warehouses {
        let (load, r) = with_pmdb(&dir.join("pmdb"), |port| {
            let target = Target {
                engine: "pmdb".into(),
                port,
                user: "pmdb".into(),
                database: "tpcc".into(),
            };
            drive(&a, &bin, &target, warehouses, Meter::ThisProcess, &bar)
        })?;
        loads.push(load);
        runs.extend(r);
    }

    if let Some(pg_bin) = &pg_bin {
        for &warehouses in &a.warehouses {
            let (pg, port) = start_postgres(pg_bin, &dir.join("postgres"))?;
            // go-tpc creates the database it is given when the server has none.
            let target = Target {
                engine: "PostgreSQL".into(),
                port,
                user: "postgres".into(),
                database: "tpcc".into(),
            };
            let meter = Meter::Tree(pg.postmaster_pid()?);
            let (load, r) = drive(&a, &bin, &target, warehouses, meter, &bar)?;
            if !setups.iter().any(|s| s.engine == target.engine) {
                setups.push(Setup {
                    engine: target.engine.clone(),
                    description: pg.description(),
                });
            }
            loads.push(load);
            runs.extend(r);
        }
    }
    bar.finish_and_clear();

    let report = TpccReport {
        command: command_line(),
        machine: Machine::detect(),
        directory: dir.display().to_string(),
        filesystem: filesystem_of(&dir),
        seconds: a.seconds,
        load_threads: a.load_threads,
        setups,
        loads,
        runs,
    };
    let md = tpcc::write(&a.out, &report)?;
    println!("report: {}", md.display());
    if report.runs.iter().any(|r| r.errors > 0) {
        eprintln!("some transactions failed: see the report");
    }
    if !report.checks_passed() {
        eprintln!("go-tpc's consistency check failed: see the report");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
