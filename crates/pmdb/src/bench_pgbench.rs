//! `pmdb bench pgbench`: pgbench's TPC-B-like load against `pmdb serve` and, in the same
//! run, against PostgreSQL on the same filesystem, both over TCP on the loopback
//! address: `pgbench -i -s SCALE`, then each query mode at each client count.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use pmdb_bench::machine::{Machine, filesystem_of};
use pmdb_bench::pgbench::{self, Mode, PgbenchReport, RunResult, Setup, Target};
use pmdb_bench::postgres::{Listen, Postgres};
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_engine::{Db, DbOptions};
use pmdb_server::{Auth, Server, ServerOptions};
use pmdb_sql::SqlEngine;

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

/// A port nobody listens on now, for PostgreSQL.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// PostgreSQL's durability settings are its defaults, spelled out; memory and WAL
/// sized as its manual's "Resource Consumption" and "WAL Configuration" chapters advise
/// for a write-heavy load.
fn postgres_settings() -> Vec<(String, String)> {
    let mem_mib = pmdb_bench::machine::available_memory().unwrap_or(8 << 30) >> 20;
    [
        ("fsync", "on".to_string()),
        ("synchronous_commit", "on".to_string()),
        ("full_page_writes", "on".to_string()),
        ("shared_buffers", format!("{}MB", (mem_mib / 4).min(8192))),
        ("effective_cache_size", format!("{}MB", mem_mib / 2)),
        ("max_wal_size", "4GB".to_string()),
        ("checkpoint_completion_target", "0.9".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

type Failure = Box<dyn std::error::Error>;

/// Initializes `target` and runs every mode at every client count against it.
fn drive(
    a: &PgbenchArgs,
    bin: &std::path::Path,
    target: &Target,
    logs: &std::path::Path,
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
            let r = pgbench::run(bin, target, mode, clients, a.seconds, logs)?;
            // Printed, not drawn: the progress bar is hidden when stdout is no terminal.
            bar.suspend(|| {
                println!(
                    "{:<10} {:<8} c{:<2} {:>8.0} TPS  p50 {:.2} ms  p99 {:.2} ms  retried {}  failed {}",
                    r.engine,
                    mode.name(),
                    clients,
                    r.tps,
                    r.latency.p50_ns as f64 / 1e6,
                    r.latency.p99_ns as f64 / 1e6,
                    r.retried,
                    r.failed
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
    let pg_bin = if a.no_postgres {
        None
    } else {
        let found = pmdb_bench::postgres::find();
        if found.is_none() {
            println!(
                "PostgreSQL is not installed (apt-get install postgresql): running without it"
            );
        }
        found
    };
    let servers = 1 + usize::from(pg_bin.is_some());
    let steps = servers * (1 + a.modes.len() * a.clients.len());
    let bar = progress("pgbench", steps as u64);
    let logs = dir.join("logs");
    let mut setups = Vec::new();
    let mut runs = Vec::new();

    // pmdb: the server in this process, as `pmdb serve` runs it.
    let pmdb_dir = dir.join("pmdb");
    if pmdb_dir.exists() {
        std::fs::remove_dir_all(&pmdb_dir)?;
    }
    {
        let engine = SqlEngine::open(Db::open(&pmdb_dir, DbOptions::default())?)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("pmdb-serve")
            .build()?;
        let options = ServerOptions {
            listen: "127.0.0.1:0".parse()?,
            auth: Auth::Trust,
            shutdown_grace: Duration::from_secs(1),
            ..ServerOptions::default()
        };
        let server = runtime.block_on(Server::new(engine.sessions(), options).start())?;
        let target = Target {
            engine: "pmdb".into(),
            port: server.local_addr().port(),
            user: "pmdb".into(),
            database: "pmdb".into(),
        };
        let outcome = drive(&a, &bin, &target, &logs, &bar);
        server.shutdown();
        runtime.block_on(server.wait());
        let (init, r) = outcome?;
        setups.push(Setup {
            engine: "pmdb".into(),
            description: format!(
                "pmdb {} (`pmdb serve`, in process), default options: every commit durable \
                 in the pool before it is acknowledged",
                env!("CARGO_PKG_VERSION")
            ),
            init_seconds: init,
        });
        runs.extend(r);
    }

    if let Some(pg_bin) = &pg_bin {
        let pg_dir = dir.join("postgres");
        if pg_dir.exists() {
            std::fs::remove_dir_all(&pg_dir)?;
        }
        std::fs::create_dir_all(&pg_dir)?;
        let port = free_port()?;
        let pg = Postgres::start(pg_bin, &pg_dir, postgres_settings(), Listen::Loopback(port))?;
        let target = Target {
            engine: "PostgreSQL".into(),
            port,
            user: "postgres".into(),
            database: "postgres".into(),
        };
        let (init, r) = drive(&a, &bin, &target, &logs, &bar)?;
        let settings: Vec<String> = pg
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        setups.push(Setup {
            engine: "PostgreSQL".into(),
            description: format!("{}: {}", pg.version, settings.join(", ")),
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
