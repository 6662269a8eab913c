//! pgbench as a load generator: `pgbench -i` to create and fill its four tables, then
//! timed runs of its default TPC-B-like script against one server, in the simple or the
//! prepared query mode. Throughput and counts come from pgbench's summary; latency
//! percentiles from its per-transaction log (`-l`), each transaction's time from its
//! first try to its end, retries included; the server's CPU time from
//! [`crate::server_cpu`]. Also the report: JSON, Markdown and SVG.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;

use crate::charts::grouped_bars;
use crate::histogram::{Latencies, Summary};
use crate::load_generator::works;
use crate::machine::Machine;
use crate::report::write_report;
use crate::server_cpu::Meter;

/// pgbench, from PATH or a PostgreSQL installation.
pub fn find() -> Option<PathBuf> {
    let on_path = PathBuf::from("pgbench");
    if works(&on_path, "--version") {
        return Some(on_path);
    }
    crate::postgres::find()
        .map(|bin| bin.join("pgbench"))
        .filter(|p| works(p, "--version"))
}

/// A server pgbench (or go-tpc, [`crate::tpcc`], or sysbench, [`crate::sysbench`])
/// connects to over TCP.
#[derive(Clone, Debug)]
pub struct Target {
    pub engine: String,
    pub port: u16,
    pub user: String,
    pub database: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Simple,
    Prepared,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Simple => "simple",
            Mode::Prepared => "prepared",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "simple" => Ok(Mode::Simple),
            "prepared" => Ok(Mode::Prepared),
            _ => Err(format!("{s:?} is not a query mode (simple, prepared)")),
        }
    }
}

fn pgbench(bin: &Path, target: &Target) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &target.port.to_string(),
        "-U",
        &target.user,
    ])
    .env("PGCONNECT_TIMEOUT", "30");
    cmd
}

fn finish(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("pgbench: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "pgbench failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            stdout.trim()
        ))
    }
}

/// `pgbench -i -s scale`: the seconds it took.
pub fn initialize(bin: &Path, target: &Target, scale: u32) -> Result<f64, String> {
    let started = Instant::now();
    finish(
        pgbench(bin, target)
            .args(["-i", "-q", "-s", &scale.to_string()])
            .arg(&target.database),
    )?;
    Ok(started.elapsed().as_secs_f64())
}

/// One timed run's results.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub engine: String,
    pub mode: Mode,
    pub clients: usize,
    pub seconds: u64,
    /// Transactions per second, without the connections' set-up.
    pub tps: f64,
    pub transactions: u64,
    pub failed: u64,
    /// Transactions that were retried after a serialization failure (each counted once).
    pub retried: u64,
    pub latency: Summary,
    /// The server's CPU time (user and system) during the run.
    pub server_cpu_seconds: f64,
}

impl RunResult {
    /// The server's CPU milliseconds per transaction.
    pub fn cpu_ms_per_transaction(&self) -> f64 {
        self.server_cpu_seconds * 1e3 / self.transactions.max(1) as f64
    }
}

/// A timed run of the default script: `clients` clients on as many threads for
/// `seconds`, serialization failures retried until the run ends; the transaction log
/// goes under `log_dir`, the server's CPU time is read through `meter` before and after.
pub fn run(
    bin: &Path,
    target: &Target,
    mode: Mode,
    clients: usize,
    seconds: u64,
    log_dir: &Path,
    meter: Meter,
) -> Result<RunResult, String> {
    std::fs::create_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    let prefix = log_dir.join("pgbench_log");
    let cpu_before = meter.seconds()?;
    let out = finish(
        pgbench(bin, target)
            .args([
                "-M",
                mode.name(),
                "-c",
                &clients.to_string(),
                "-j",
                &clients.to_string(),
            ])
            .args([
                "-T",
                &seconds.to_string(),
                "--max-tries",
                "0",
                "-l",
                "--log-prefix",
            ])
            .arg(&prefix)
            .arg(&target.database),
    )?;
    let server_cpu_seconds = meter.seconds()? - cpu_before;
    let summary = Totals::parse(&out)?;
    let latency = read_logs(log_dir)?;
    std::fs::remove_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    Ok(RunResult {
        engine: target.engine.clone(),
        mode,
        clients,
        seconds,
        tps: summary.tps,
        transactions: summary.transactions,
        failed: summary.failed,
        retried: summary.retried,
        latency,
        server_cpu_seconds,
    })
}

/// What pgbench's summary says.
#[derive(Debug, PartialEq)]
struct Totals {
    tps: f64,
    transactions: u64,
    failed: u64,
    retried: u64,
}

fn first_number<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.split_whitespace().next()?.parse().ok()
}

impl Totals {
    fn parse(out: &str) -> Result<Totals, String> {
        let field = |prefix: &str| {
            out.lines()
                .find_map(|l| l.trim().strip_prefix(prefix))
                .map(str::trim)
        };
        let missing = |what: &str| format!("pgbench printed no {what}: {out}");
        Ok(Totals {
            tps: field("tps =")
                .and_then(first_number)
                .ok_or_else(|| missing("tps"))?,
            transactions: field("number of transactions actually processed:")
                .and_then(|v| first_number(v.split('/').next()?))
                .ok_or_else(|| missing("transaction count"))?,
            // pgbench leaves these lines out when there were none.
            failed: field("number of failed transactions:")
                .and_then(first_number)
                .unwrap_or(0),
            retried: field("number of transactions retried:")
                .and_then(first_number)
                .unwrap_or(0),
        })
    }
}

/// The latencies in every per-transaction log under `dir`: the third field of a line,
/// in microseconds (or a word, for a transaction that failed or was skipped).
fn read_logs(dir: &Path) -> Result<Summary, String> {
    let mut latencies = Latencies::default();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        record_log(&text, &mut latencies);
    }
    Ok(latencies.summary())
}

fn record_log(text: &str, latencies: &mut Latencies) {
    for line in text.lines() {
        if let Some(us) = line
            .split_whitespace()
            .nth(2)
            .and_then(|t| t.parse::<u64>().ok())
        {
            latencies.record(us.saturating_mul(1000));
        }
    }
}

/// How one server was set up and loaded.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub engine: String,
    /// Version, durability and settings.
    pub description: String,
    pub init_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PgbenchReport {
    pub command: String,
    pub machine: Machine,
    pub directory: String,
    pub filesystem: String,
    pub scale: u32,
    pub seconds: u64,
    pub setups: Vec<Setup>,
    pub runs: Vec<RunResult>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl PgbenchReport {
    fn find(&self, engine: &str, mode: Mode, clients: usize) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.engine == engine && r.mode == mode && r.clients == clients)
    }

    fn markdown(&self) -> String {
        let m = &self.machine;
        let mut md = format!(
            "# pgbench, scale {}\n\nCommand: `{}`\n\nMachine: {}, {} cores, {} GiB, Linux {}\n\n\
             Data: `{}` ({}). Every server listens on 127.0.0.1 and pgbench connects over TCP. \
             The script is pgbench's default (TPC-B-like), {} s per run, clients on as many \
             pgbench threads, serialization failures retried (`--max-tries 0`). Latency is \
             per transaction from pgbench's log, retries included. Server CPU is user plus \
             system time during the run, per transaction: pmdb's server runs in the \
             benchmark's process, so its CPU is that process's; PostgreSQL's is the sum over \
             the postmaster and every process descended from it.\n\n## Servers\n\n\
             | server | set-up | `pgbench -i` (s) |\n|---|---|---:|\n",
            self.scale,
            self.command,
            m.cpu,
            m.cores,
            m.memory_gib,
            m.kernel,
            self.directory,
            self.filesystem,
            self.seconds
        );
        for s in &self.setups {
            md.push_str(&format!(
                "| {} | {} | {:.2} |\n",
                s.engine, s.description, s.init_seconds
            ));
        }
        md.push_str(
            "\n## Runs\n\n| server | mode | clients | TPS | p50 ms | p95 ms | p99 ms | p99.9 ms | max ms | server CPU ms/transaction | transactions | retried | failed |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.runs {
            let l = &r.latency;
            md.push_str(&format!(
                "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {} | {} | {} |\n",
                r.engine,
                r.mode.name(),
                r.clients,
                r.tps,
                ms(l.p50_ns),
                ms(l.p95_ns),
                ms(l.p99_ns),
                ms(l.p999_ns),
                ms(l.max_ns),
                r.cpu_ms_per_transaction(),
                r.transactions,
                r.retried,
                r.failed
            ));
        }
        if let [first, others @ ..] = self.setups.as_slice() {
            for other in others {
                md.push_str(&format!(
                    "\n## {} against {}\n\n| mode | clients | TPS ratio | p99 ratio (lower is better) | server CPU per transaction ratio (lower is better) |\n|---|---:|---:|---:|---:|\n",
                    first.engine, other.engine
                ));
                for r in self.runs.iter().filter(|r| r.engine == first.engine) {
                    if let Some(o) = self.find(&other.engine, r.mode, r.clients) {
                        md.push_str(&format!(
                            "| {} | {} | {:.2}x | {:.2}x | {:.2}x |\n",
                            r.mode.name(),
                            r.clients,
                            r.tps / o.tps.max(f64::MIN_POSITIVE),
                            r.latency.p99_ns as f64 / o.latency.p99_ns.max(1) as f64,
                            r.cpu_ms_per_transaction()
                                / o.cpu_ms_per_transaction().max(f64::MIN_POSITIVE)
                        ));
                    }
                }
            }
        }
        md.push_str("\nCharts: `pgbench-tps.svg` (throughput), `pgbench-p99.svg` (p99 latency).\n");
        md
    }
}

/// Writes `pgbench.{json,md}` and the charts under `dir`; the Markdown's path.
pub fn write(dir: &Path, report: &PgbenchReport) -> Result<PathBuf, String> {
    let (_, md) = write_report(dir, "pgbench", report, &report.markdown())
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut categories = Vec::new();
    for r in &report.runs {
        let c = format!("{} c{}", r.mode.name(), r.clients);
        if !categories.contains(&c) {
            categories.push(c);
        }
    }
    let series = |value: fn(&RunResult) -> f64| {
        report
            .setups
            .iter()
            .map(|s| {
                let values = categories
                    .iter()
                    .map(|c| {
                        report
                            .runs
                            .iter()
                            .find(|r| {
                                r.engine == s.engine
                                    && format!("{} c{}", r.mode.name(), r.clients) == *c
                            })
                            .map_or(0.0, value)
                    })
                    .collect();
                (s.engine.clone(), values)
            })
            .collect::<Vec<_>>()
    };
    let title = format!("pgbench TPC-B-like, scale {}", report.scale);
    grouped_bars(
        &dir.join("pgbench-tps.svg"),
        &format!("{title}: throughput"),
        "transactions per second",
        &categories,
        &series(|r| r.tps),
    )
    .map_err(|e| e.to_string())?;
    grouped_bars(
        &dir.join("pgbench-p99.svg"),
        &format!("{title}: p99 latency"),
        "p99 latency (ms)",
        &categories,
        &series(|r| ms(r.latency.p99_ns)),
    )
    .map_err(|e| e.to_string())?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_tps_counts_and_retries() {
        let out = "transaction type: <builtin: TPC-B (sort of)>
scaling factor: 10
query mode: prepared
number of clients: 4
number of threads: 4
maximum number of tries: unlimited
duration: 10 s
number of transactions actually processed: 29632
number of failed transactions: 0 (0.000%)
number of transactions retried: 5873 (19.820%)
total number of retries: 7410
latency average = 1.349 ms
initial connection time = 7.093 ms
tps = 2959.414112 (without initial connection time)
";
        assert_eq!(
            Totals::parse(out).unwrap(),
            Totals {
                tps: 2959.414112,
                transactions: 29632,
                failed: 0,
                retried: 5873
            }
        );
        // Without retries pgbench prints no retry line; with -t it prints n/m.
        let out = "number of transactions actually processed: 100/100\ntps = 50.5 (without initial connection time)\n";
        assert_eq!(
            Totals::parse(out).unwrap(),
            Totals {
                tps: 50.5,
                transactions: 100,
                failed: 0,
                retried: 0
            }
        );
        assert!(Totals::parse("connection refused").is_err());
    }

    #[test]
    fn log_lines_give_latencies_and_failures_are_left_out() {
        let log = "0 1 1500 0 1700000000 123456\n0 2 2500 0 1700000000 223456 1\n1 1 failed 0 1700000000 323456 3\n";
        let mut l = Latencies::default();
        record_log(log, &mut l);
        let s = l.summary();
        assert_eq!(s.count, 2);
        assert!((1_499_000..=1_501_000).contains(&s.p50_ns), "{s:?}");
        assert!((2_499_000..=2_501_000).contains(&s.max_ns), "{s:?}");
    }
}
