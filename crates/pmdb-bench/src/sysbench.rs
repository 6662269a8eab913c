//! sysbench as a load generator: its OLTP tests through its pgsql driver against one
//! server over TCP. `sysbench oltp_read_write prepare` creates and fills the sbtest
//! tables, then timed runs of each test at given thread counts follow on those tables.
//! Throughput, counts and latency come from sysbench's summary, the server's CPU from
//! [`crate::server_cpu`]. A run sysbench fails is kept with its error, so the tests
//! after it still run. Also the report: JSON, Markdown and SVG.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::str::FromStr;
use std::time::Instant;

use serde::Serialize;

use crate::charts::grouped_bars;
use crate::load_generator::{tail, works};
use crate::machine::Machine;
use crate::pgbench::Target;
use crate::report::write_report;
use crate::server_cpu::Meter;

/// How to install the sysbench this benchmark is written for (1.0.20 in Debian 12).
pub const INSTALL: &str = "apt-get install sysbench";

/// sysbench's OLTP tests, from reads only to writes only.
pub const TESTS: [&str; 7] = [
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "oltp_insert",
];

/// The latency percentile sysbench reports besides min, avg and max.
const PERCENTILE: u32 = 95;

/// sysbench, from PATH.
pub fn find() -> Option<PathBuf> {
    let bin = PathBuf::from("sysbench");
    works(&bin, "--version").then_some(bin)
}

/// The sbtest tables every command of a benchmark names.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Tables {
    pub count: u32,
    /// Rows in each.
    pub rows: u64,
}

fn sysbench(bin: &Path, target: &Target, test: &str, tables: Tables) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args([test, "--db-driver=pgsql", "--pgsql-host=127.0.0.1"])
        .arg(format!("--pgsql-port={}", target.port))
        .arg(format!("--pgsql-user={}", target.user))
        .arg(format!("--pgsql-db={}", target.database))
        .arg(format!("--tables={}", tables.count))
        .arg(format!("--table-size={}", tables.rows));
    cmd
}

/// The first FATAL message in `text` with the lines that continue it (a server's error
/// runs over several), and how many more FATAL lines followed: each failing thread
/// prints its own.
fn fatal(text: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("FATAL"));
    let mut message = lines.next()?.to_string();
    for l in lines.by_ref().take_while(|l| !l.trim().is_empty()) {
        message.push('\n');
        message.push_str(l);
    }
    let more = lines.filter(|l| l.starts_with("FATAL")).count();
    if more > 0 {
        message.push_str(&format!("\n(FATAL lines after this one: {more})"));
    }
    Some(message)
}

/// sysbench's standard output when it exited successfully, else its error: the first
/// FATAL message, or the end of what it printed.
fn finish(out: &Output) -> Result<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let printed = fatal(&stdout)
        .or_else(|| fatal(&stderr))
        .unwrap_or_else(|| format!("{}\n{}", tail(&stdout, 10), tail(&stderr, 20)));
    Err(format!("sysbench failed ({}):\n{printed}", out.status))
}

/// `sysbench oltp_read_write prepare`: creates the tables, fills them and indexes
/// their `k` column, one table after another. The seconds it took.
pub fn prepare(bin: &Path, target: &Target, tables: Tables) -> Result<f64, String> {
    let started = Instant::now();
    let out = sysbench(bin, target, "oltp_read_write", tables)
        .arg("prepare")
        .output()
        .map_err(|e| format!("sysbench: {e}"))?;
    finish(&out).map_err(|e| format!("{}: sysbench prepare: {e}", target.engine))?;
    Ok(started.elapsed().as_secs_f64())
}

/// sysbench's latencies of a run's transactions, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub p95: f64,
}

/// What sysbench's summary of a run says. A transaction is sysbench's event: one run
/// of the test's script.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub transactions: u64,
    pub tps: f64,
    pub queries: u64,
    pub qps: f64,
    /// Errors sysbench's pgsql driver ignores (deadlock, serialization failure, unique
    /// violation): the transaction is rolled back and run again.
    pub ignored_errors: u64,
    pub latency_ms: Latency,
}

/// The first word of `value` as a number, or an error naming the field.
fn number<T: FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("sysbench printed an unexpected {name}: {value}"))
}

/// `7085   (1416.58 per sec.)`: a count and its rate.
fn counted(name: &str, value: &str) -> Result<(u64, f64), String> {
    let (count, rate) = value
        .split_once('(')
        .ok_or_else(|| format!("sysbench printed an unexpected {name}: {value}"))?;
    Ok((number(name, count)?, number(name, rate)?))
}

impl Summary {
    fn parse(out: &str) -> Result<Summary, String> {
        // A thread that fails prints FATAL; sysbench may still print the others' totals.
        if let Some(message) = fatal(out) {
            return Err(message);
        }
        // `name:   value`, indented under its section; every name used is unique.
        let field = |name: &str| {
            out.lines()
                .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
                .ok_or_else(|| format!("sysbench printed no {name}:\n{}", tail(out, 10)))
        };
        let ms = |name: &str| number::<f64>(name, field(name)?);
        let (transactions, tps) = counted("transactions", field("transactions")?)?;
        let (queries, qps) = counted("queries", field("queries")?)?;
        let (ignored_errors, _) = counted("ignored errors", field("ignored errors")?)?;
        Ok(Summary {
            transactions,
            tps,
            queries,
            qps,
            ignored_errors,
            latency_ms: Latency {
                min: ms("min")?,
                avg: ms("avg")?,
                max: ms("max")?,
                p95: ms(&format!("{PERCENTILE}th percentile"))?,
            },
        })
    }
}

/// One timed run: a test at a thread count against one server.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub engine: String,
    pub test: String,
    pub threads: usize,
    pub seconds: u64,
    /// sysbench's summary, or its error when the run failed.
    pub outcome: Result<Summary, String>,
    /// The server's user and system CPU during the run.
    pub server_cpu_seconds: f64,
}

impl RunResult {
    pub fn summary(&self) -> Option<&Summary> {
        self.outcome.as_ref().ok()
    }

    /// The server's CPU per transaction, in milliseconds; none for a failed run.
    pub fn cpu_ms_per_transaction(&self) -> Option<f64> {
        self.summary()
            .map(|s| self.server_cpu_seconds * 1e3 / s.transactions.max(1) as f64)
    }
}

/// `sysbench TEST run` for `seconds` on `threads` connections, the server's CPU read
/// through `meter` before and after. A run sysbench fails (it exits with an error or
/// prints FATAL) is returned with that error; only a sysbench that cannot be started,
/// or CPU time that cannot be read, fails the call.
pub fn run(
    bin: &Path,
    target: &Target,
    test: &str,
    tables: Tables,
    threads: usize,
    seconds: u64,
    meter: Meter,
) -> Result<RunResult, String> {
    let cpu_before = meter.seconds()?;
    let out = sysbench(bin, target, test, tables)
        .arg(format!("--threads={threads}"))
        .arg(format!("--time={seconds}"))
        .arg(format!("--percentile={PERCENTILE}"))
        .args(["--report-interval=0", "--histogram=off", "run"])
        .output()
        .map_err(|e| format!("sysbench: {e}"))?;
    let cpu = meter.seconds()? - cpu_before;
    Ok(RunResult {
        engine: target.engine.clone(),
        test: test.to_string(),
        threads,
        seconds,
        outcome: finish(&out).and_then(|stdout| Summary::parse(&stdout)),
        server_cpu_seconds: cpu,
    })
}

/// How one server was set up and loaded.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub engine: String,
    /// Version, durability and settings.
    pub description: String,
    pub prepare_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SysbenchReport {
    pub command: String,
    pub machine: Machine,
    pub directory: String,
    pub filesystem: String,
    pub seconds: u64,
    pub tables: Tables,
    pub setups: Vec<Setup>,
    pub runs: Vec<RunResult>,
}

/// The distinct values of `key` over `runs`, in the order they ran.
fn in_order<'a, T: PartialEq>(runs: &'a [RunResult], key: impl Fn(&'a RunResult) -> T) -> Vec<T> {
    let mut values = Vec::new();
    for r in runs {
        let v = key(r);
        if !values.contains(&v) {
            values.push(v);
        }
    }
    values
}

impl SysbenchReport {
    fn tests(&self) -> Vec<&str> {
        in_order(&self.runs, |r| r.test.as_str())
    }

    fn threads(&self) -> Vec<usize> {
        in_order(&self.runs, |r| r.threads)
    }

    fn find(&self, engine: &str, test: &str, threads: usize) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.engine == engine && r.test == test && r.threads == threads)
    }

    /// A test's table: a row per thread count, each measure in a column per server,
    /// and the first server's TPS over the second's.
    fn test_table(&self, test: &str) -> String {
        let engines: Vec<&str> = self.setups.iter().map(|s| s.engine.as_str()).collect();
        let per_engine =
            |name: &str| -> Vec<String> { engines.iter().map(|e| format!("{name} {e}")).collect() };
        let mut header = vec!["threads".to_string()];
        header.extend(per_engine("TPS"));
        if let [first, second, ..] = engines.as_slice() {
            header.push(format!("{first} ÷ {second}"));
        }
        header.extend(per_engine("p95 ms"));
        header.extend(per_engine("errors"));
        header.extend(per_engine("server CPU ms / transaction"));
        let mut md = format!(
            "| {} |\n|{}\n",
            header.join(" | "),
            "---:|".repeat(header.len())
        );
        for threads in self.threads() {
            let runs: Vec<Option<&RunResult>> = engines
                .iter()
                .map(|e| self.find(e, test, threads))
                .collect();
            // Empty for a run that did not happen, `failed` for one that failed.
            let cells = |value: &dyn Fn(&RunResult, &Summary) -> String| -> Vec<String> {
                runs.iter()
                    .map(|r| match r {
                        Some(r) => r.summary().map_or("failed".into(), |s| value(r, s)),
                        None => String::new(),
                    })
                    .collect()
            };
            let mut row = vec![threads.to_string()];
            row.extend(cells(&|_, s| format!("{:.0}", s.tps)));
            if engines.len() > 1 {
                let tps: Vec<Option<f64>> = runs
                    .iter()
                    .map(|r| r.and_then(RunResult::summary).map(|s| s.tps))
                    .collect();
                row.push(match tps.as_slice() {
                    [Some(a), Some(b), ..] => format!("{:.2}x", a / b.max(f64::MIN_POSITIVE)),
                    _ => String::new(),
                });
            }
            row.extend(cells(&|_, s| format!("{:.2}", s.latency_ms.p95)));
            row.extend(cells(&|_, s| s.ignored_errors.to_string()));
            row.extend(cells(&|r, _| {
                format!("{:.3}", r.cpu_ms_per_transaction().unwrap_or_default())
            }));
            md.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        md
    }

    fn markdown(&self) -> String {
        let m = &self.machine;
        let mut md = format!(
            "# sysbench OLTP\n\nCommand: `{}`\n\nMachine: {}, {} cores, {} GiB, Linux {}\n\n\
             Data: `{}` ({}). Every server listens on 127.0.0.1 and sysbench (`{INSTALL}`) \
             connects over TCP with its pgsql driver. For each server, on a fresh server: \
             `sysbench oltp_read_write prepare` creates {} tables of {} rows (sysbench's \
             own schema, rows and secondary index), then each test runs on those tables \
             at each thread count for {} s, in the order below: the write tests change \
             what the tests after them read. A transaction is sysbench's event, one run of \
             the test's script (for oltp_point_select a single SELECT); latencies are \
             sysbench's, per transaction. Errors are those sysbench's pgsql driver \
             ignores (deadlock, serialization failure, unique violation): the transaction \
             is rolled back and run again. A run sysbench fails (it exits with an error or \
             prints FATAL) is marked failed, its error listed below, and the next run \
             goes on.\n\n\
             Server CPU is user plus system time during `sysbench run`, per transaction. \
             pmdb's server runs in the benchmark's process, so its CPU is that process's \
             (`/proc/self/stat`): meanwhile the benchmark only waits for sysbench, whose \
             own CPU, a child's, is not counted. PostgreSQL's is the sum over the \
             postmaster and every process descended from it (`/proc/PID/stat`), read \
             before and after the run; backends that exit during the run are counted \
             through the postmaster's cutime and cstime.\n\n## Servers\n\n\
             | server | set-up | prepare (s) |\n|---|---|---:|\n",
            self.command,
            m.cpu,
            m.cores,
            m.memory_gib,
            m.kernel,
            self.directory,
            self.filesystem,
            self.tables.count,
            self.tables.rows,
            self.seconds
        );
        for s in &self.setups {
            md.push_str(&format!(
                "| {} | {} | {:.1} |\n",
                s.engine, s.description, s.prepare_seconds
            ));
        }
        for test in self.tests() {
            md.push_str(&format!("\n## {test}\n\n{}", self.test_table(test)));
        }
        let failures: Vec<(&RunResult, &String)> = self
            .runs
            .iter()
            .filter_map(|r| Some((r, r.outcome.as_ref().err()?)))
            .collect();
        if !failures.is_empty() {
            md.push_str("\n## Failed runs\n");
            for (r, error) in failures {
                md.push_str(&format!(
                    "\n{}, {}, {} threads:\n\n```\n{}\n```\n",
                    r.engine,
                    r.test,
                    r.threads,
                    error.trim()
                ));
            }
        }
        md.push_str(
            "\nChart: `sysbench.svg` (TPS per test, server and thread count; t*n*: *n* \
             threads).\n",
        );
        md
    }
}

/// Writes `sysbench.{json,md,svg}` under `dir`; the Markdown's path.
pub fn write(dir: &Path, report: &SysbenchReport) -> Result<PathBuf, String> {
    let (_, md) = write_report(dir, "sysbench", report, &report.markdown())
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let tests = report.tests();
    let categories: Vec<String> = tests
        .iter()
        .map(|t| t.trim_start_matches("oltp_").to_string())
        .collect();
    // Side by side at each thread count, the servers' bars of a test.
    let mut series = Vec::new();
    for threads in report.threads() {
        for s in &report.setups {
            let values = tests
                .iter()
                .map(|t| {
                    report
                        .find(&s.engine, t, threads)
                        .and_then(RunResult::summary)
                        .map_or(0.0, |r| r.tps)
                })
                .collect();
            series.push((format!("{} t{threads}", s.engine), values));
        }
    }
    grouped_bars(
        &dir.join("sysbench.svg"),
        "sysbench OLTP: throughput",
        "transactions per second",
        &categories,
        &series,
    )
    .map_err(|e| e.to_string())?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    // sysbench 1.0.20's output of `oltp_read_only run` on 4 threads.
    const RUN: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4
Initializing random number generator from current time


Initializing worker threads...

Threads started!

SQL statistics:
    queries performed:
        read:                            99190
        write:                           0
        other:                           14170
        total:                           113360
    transactions:                        7085   (1416.58 per sec.)
    queries:                             113360 (22665.33 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          5.0004s
    total number of events:              7085

Latency (ms):
         min:                                    1.17
         avg:                                    2.82
         max:                                   13.41
         95th percentile:                        4.10
         sum:                                19979.55

Threads fairness:
    events (avg/stddev):           1771.2500/35.14
    execution time (avg/stddev):   4.9949/0.00
";

    #[test]
    fn the_summary_gives_rates_errors_and_latencies() {
        assert_eq!(
            Summary::parse(RUN).unwrap(),
            Summary {
                transactions: 7085,
                tps: 1416.58,
                queries: 113360,
                qps: 22665.33,
                ignored_errors: 0,
                latency_ms: Latency {
                    min: 1.17,
                    avg: 2.82,
                    max: 13.41,
                    p95: 4.10
                }
            }
        );
    }

    #[test]
    fn a_fatal_run_fails_with_its_first_message() {
        // sysbench 1.0.20 against tables that were never prepared; it then crashed.
        let out = "Initializing worker threads...

FATAL: PQprepare() failed: ERROR:  relation \"sbtest3\" does not exist
LINE 1: SELECT c FROM sbtest3 WHERE id=$1
                      ^

FATAL: PQprepare() failed: ERROR:  relation \"sbtest4\" does not exist
LINE 1: SELECT c FROM sbtest4 WHERE id=$1
                      ^

FATAL: PQprepare() failed: ERROR:  relation \"sbtest3\" does not exist
LINE 1: SELECT c FROM sbtest3 WHERE id=$1
                      ^

Threads started!
";
        let error = Summary::parse(out).unwrap_err();
        assert!(
            error.starts_with(
                "FATAL: PQprepare() failed: ERROR:  relation \"sbtest3\" does not exist\n\
                 LINE 1: SELECT c FROM sbtest3 WHERE id=$1\n"
            ),
            "{error}"
        );
        assert!(
            error.ends_with("\n(FATAL lines after this one: 2)"),
            "{error}"
        );
        // A summary printed after a thread's FATAL is not taken for the run's.
        let partial = format!("{RUN}FATAL: `thread_run' function failed\n");
        assert_eq!(
            Summary::parse(&partial).unwrap_err(),
            "FATAL: `thread_run' function failed"
        );
    }

    #[test]
    fn missing_or_malformed_fields_are_errors() {
        assert!(Summary::parse("").unwrap_err().contains("no transactions"));
        let no_percentile = RUN.replace("95th percentile", "99th percentile");
        assert!(
            Summary::parse(&no_percentile)
                .unwrap_err()
                .contains("no 95th percentile")
        );
        let no_rate = RUN.replace("(22665.33 per sec.)", "");
        assert!(
            Summary::parse(&no_rate)
                .unwrap_err()
                .contains("unexpected queries")
        );
        let not_a_number = RUN.replace("13.41", "n/a");
        assert!(
            Summary::parse(&not_a_number)
                .unwrap_err()
                .contains("unexpected max")
        );
    }

    #[test]
    fn the_report_compares_servers_and_lists_failures() {
        let summary = Summary::parse(RUN).unwrap();
        let run = |engine: &str, outcome: Result<Summary, String>| RunResult {
            engine: engine.into(),
            test: "oltp_read_only".into(),
            threads: 4,
            seconds: 5,
            outcome,
            server_cpu_seconds: 7.085,
        };
        let report = SysbenchReport {
            command: "pmdb bench sysbench".into(),
            machine: Machine::detect(),
            directory: "/dev/shm/x".into(),
            filesystem: "tmpfs".into(),
            seconds: 5,
            tables: Tables {
                count: 4,
                rows: 1000,
            },
            setups: ["pmdb", "PostgreSQL"]
                .map(|engine| Setup {
                    engine: engine.into(),
                    description: String::new(),
                    prepare_seconds: 1.0,
                })
                .to_vec(),
            runs: vec![
                run("pmdb", Ok(summary.clone())),
                run("PostgreSQL", Ok(summary)),
                RunResult {
                    test: "oltp_delete".into(),
                    ..run("pmdb", Err("FATAL: no such table".into()))
                },
            ],
        };
        let md = report.markdown();
        assert!(md.contains("| 4 | 1417 | 1417 | 1.00x | 4.10 | 4.10 | 0 | 0 | 1.000 | 1.000 |"));
        assert!(
            md.contains("| 4 | failed |  |  | failed |  | failed |  | failed |  |"),
            "{md}"
        );
        assert!(md.contains("pmdb, oltp_delete, 4 threads:\n\n```\nFATAL: no such table\n```"));
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &report).unwrap();
        assert!(dir.path().join("sysbench.svg").is_file());
    }
}
