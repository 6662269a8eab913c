//! go-tpc as a load generator: TPC-C through its PostgreSQL driver against one server
//! over TCP. `go-tpc tpcc prepare` creates and loads the warehouses, timed `run`s at
//! given thread counts follow, then `check` tests TPC-C's consistency conditions on what
//! the runs left. Throughput, counts and latency percentiles come from go-tpc's summary,
//! the server's CPU from [`crate::server_cpu`]. Also the report: JSON, Markdown and SVG.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::Serialize;

use crate::charts::grouped_bars;
use crate::load_generator::{tail, works};
use crate::machine::Machine;
use crate::pgbench::Target;
use crate::report::write_report;
use crate::server_cpu::Meter;

/// How to install the go-tpc this benchmark is written for. The version is pinned
/// because `@latest` on the module proxy resolves to an older release without the
/// PostgreSQL driver.
pub const INSTALL: &str = "go install github.com/pingcap/go-tpc/cmd/go-tpc@v1.0.12";

/// go-tpc, from PATH or where `go install` puts it (`$(go env GOPATH)/bin`).
pub fn find() -> Option<PathBuf> {
    let on_path = PathBuf::from("go-tpc");
    if works(&on_path, "version") {
        return Some(on_path);
    }
    let gopath = Command::new("go")
        .args(["env", "GOPATH"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    std::env::split_paths(String::from_utf8_lossy(&gopath.stdout).trim())
        .map(|d| d.join("bin").join("go-tpc"))
        .find(|p| works(p, "version"))
}

fn go_tpc(bin: &Path, target: &Target, action: &str, warehouses: u32, threads: usize) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["tpcc", action, "-d", "postgres", "-H", "127.0.0.1"])
        .args(["-P", &target.port.to_string(), "-U", &target.user])
        .args(["-D", &target.database, "--conn-params", "sslmode=disable"])
        .args(["--warehouses", &warehouses.to_string()])
        .args(["-T", &threads.to_string()]);
    cmd
}

fn finish(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("go-tpc: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{what} failed ({}):\n{}\n{}",
            out.status,
            tail(&stdout, 10),
            tail(&String::from_utf8_lossy(&out.stderr), 20)
        ))
    }
}

/// `go-tpc tpcc prepare`: creates the database when the server has none of that name,
/// the tables and their indexes, and loads `warehouses` warehouses on `threads`
/// connections. The seconds it took.
pub fn prepare(
    bin: &Path,
    target: &Target,
    warehouses: u32,
    threads: usize,
) -> Result<f64, String> {
    let started = Instant::now();
    // go-tpc's check after loading is left out: the check after the runs covers the
    // same conditions on data the runs have changed.
    finish(
        go_tpc(bin, target, "prepare", warehouses, threads).arg("--no-check"),
        &format!(
            "{}: go-tpc tpcc prepare --warehouses {warehouses}",
            target.engine
        ),
    )?;
    Ok(started.elapsed().as_secs_f64())
}

/// One transaction type's results in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Transaction {
    /// go-tpc's name, e.g. NEW_ORDER.
    pub name: String,
    /// Transactions that completed.
    pub count: u64,
    /// Transactions that failed.
    pub errors: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// The types in TPC-C's mix order; go-tpc prints them alphabetically.
const MIX: [&str; 5] = [
    "NEW_ORDER",
    "PAYMENT",
    "ORDER_STATUS",
    "DELIVERY",
    "STOCK_LEVEL",
];

/// TPC-C's name of a go-tpc transaction type: NEW_ORDER is New-Order.
fn display_name(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            let mut c = lower.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// What go-tpc's summary says.
#[derive(Debug, PartialEq)]
struct Summary {
    tpmc: f64,
    tpm_total: f64,
    transactions: Vec<Transaction>,
    /// The first failure go-tpc printed, if any.
    first_error: Option<String>,
}

/// `Key: value, Key: value` as go-tpc prints a summary line's fields.
fn fields(text: &str) -> impl Fn(&str) -> Option<f64> + '_ {
    move |key: &str| {
        text.split(", ").find_map(|f| {
            let (k, v) = f.split_once(": ")?;
            (k.trim() == key).then(|| v.trim().trim_end_matches('%').parse().ok())?
        })
    }
}

impl Summary {
    fn parse(out: &str) -> Result<Summary, String> {
        let mut transactions: Vec<Transaction> = Vec::new();
        let mut tpm = None;
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("[Summary] ") {
                let (name, text) = rest
                    .split_once(" - ")
                    .ok_or_else(|| format!("go-tpc printed an unexpected summary: {line}"))?;
                let field = fields(text);
                let (name, failed) = match name.trim().strip_suffix("_ERR") {
                    Some(base) => (base, true),
                    None => (name.trim(), false),
                };
                let count = field("Count")
                    .ok_or_else(|| format!("go-tpc printed no count: {line}"))?
                    as u64;
                let i = match transactions.iter().position(|t| t.name == name) {
                    Some(i) => i,
                    None => {
                        transactions.push(Transaction {
                            name: name.to_string(),
                            count: 0,
                            errors: 0,
                            p50_ms: 0.0,
                            p95_ms: 0.0,
                            p99_ms: 0.0,
                        });
                        transactions.len() - 1
                    }
                };
                let t = &mut transactions[i];
                if failed {
                    t.errors = count;
                } else {
                    t.count = count;
                    t.p50_ms = field("50th(ms)").unwrap_or(0.0);
                    t.p95_ms = field("95th(ms)").unwrap_or(0.0);
                    t.p99_ms = field("99th(ms)").unwrap_or(0.0);
                }
            } else if let Some(rest) = line.strip_prefix("tpmC: ") {
                let field = fields(line);
                tpm = Some((
                    first_number(rest)?,
                    field("tpmTotal").ok_or_else(|| format!("no tpmTotal in: {line}"))?,
                ));
            }
        }
        if transactions.is_empty() {
            return Err(format!("go-tpc printed no summary:\n{}", tail(out, 10)));
        }
        transactions.sort_by_key(|t| MIX.iter().position(|m| *m == t.name).unwrap_or(MIX.len()));
        // go-tpc prints no tpmC line when no New-Order completed.
        let (tpmc, tpm_total) = tpm.unwrap_or((0.0, 0.0));
        Ok(Summary {
            tpmc,
            tpm_total,
            transactions,
            first_error: out
                .lines()
                .find_map(|l| l.split_once("execute run failed, err "))
                .map(|(_, e)| e.trim().to_string()),
        })
    }
}

fn first_number(text: &str) -> Result<f64, String> {
    text.split(',')
        .next()
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("go-tpc printed an unexpected tpmC: {text}"))
}

/// One timed run's results.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub engine: String,
    pub warehouses: u32,
    pub threads: usize,
    pub seconds: u64,
    pub tpmc: f64,
    pub tpm_total: f64,
    /// Completed transactions of every type.
    pub transactions: u64,
    pub errors: u64,
    /// Per type, in TPC-C's mix order.
    pub types: Vec<Transaction>,
    /// The server's user and system CPU during the run.
    pub server_cpu_seconds: f64,
    pub first_error: Option<String>,
}

impl RunResult {
    /// The server's CPU per completed transaction, in milliseconds.
    pub fn cpu_ms_per_transaction(&self) -> f64 {
        self.server_cpu_seconds * 1e3 / self.transactions.max(1) as f64
    }
}

/// `go-tpc tpcc run` for `seconds` on `threads` connections, the server's CPU read
/// through `meter` before and after. A failed transaction is counted and its thread goes
/// on (`--ignore-error`); without that go-tpc ends the thread.
pub fn run(
    bin: &Path,
    target: &Target,
    warehouses: u32,
    threads: usize,
    seconds: u64,
    meter: Meter,
) -> Result<RunResult, String> {
    let cpu_before = meter.seconds()?;
    let out = finish(
        go_tpc(bin, target, "run", warehouses, threads).args([
            "--time",
            &format!("{seconds}s"),
            "--ignore-error",
        ]),
        &format!(
            "{}: go-tpc tpcc run --warehouses {warehouses} -T {threads}",
            target.engine
        ),
    )?;
    let cpu = meter.seconds()? - cpu_before;
    let s = Summary::parse(&out)?;
    Ok(RunResult {
        engine: target.engine.clone(),
        warehouses,
        threads,
        seconds,
        tpmc: s.tpmc,
        tpm_total: s.tpm_total,
        transactions: s.transactions.iter().map(|t| t.count).sum(),
        errors: s.transactions.iter().map(|t| t.errors).sum(),
        types: s.transactions,
        server_cpu_seconds: cpu,
        first_error: s.first_error,
    })
}

/// What `go-tpc tpcc check` found.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// go-tpc's message for each condition that does not hold; empty when all hold.
    pub failures: Vec<String>,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    fn parse(out: &str) -> Check {
        // go-tpc reports a failed condition this way and still exits 0.
        Check {
            failures: out
                .lines()
                .filter_map(|l| l.split_once("execute check failed, err "))
                .map(|(_, e)| e.trim().to_string())
                .collect(),
        }
    }
}

/// `go-tpc tpcc check`: TPC-C's consistency conditions 3.3.2.1–3.3.2.10 and 3.3.2.12.
pub fn check(
    bin: &Path,
    target: &Target,
    warehouses: u32,
    threads: usize,
) -> Result<Check, String> {
    let out = finish(
        &mut go_tpc(bin, target, "check", warehouses, threads),
        &format!(
            "{}: go-tpc tpcc check --warehouses {warehouses}",
            target.engine
        ),
    )?;
    Ok(Check::parse(&out))
}

/// How one server was set up.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub engine: String,
    /// Version, durability and settings.
    pub description: String,
}

/// One server loaded with a number of warehouses, and what `check` found after the runs.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    pub engine: String,
    pub warehouses: u32,
    pub prepare_seconds: f64,
    pub check: Check,
}

#[derive(Clone, Debug, Serialize)]
pub struct TpccReport {
    pub command: String,
    pub machine: Machine,
    pub directory: String,
    pub filesystem: String,
    pub seconds: u64,
    pub load_threads: usize,
    pub setups: Vec<Setup>,
    pub loads: Vec<Load>,
    pub runs: Vec<RunResult>,
}

/// `n` with commas between thousands, as the docs write counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl TpccReport {
    pub fn checks_passed(&self) -> bool {
        self.loads.iter().all(|l| l.check.passed())
    }

    /// Warehouse and thread counts in the order they ran.
    fn shapes(&self) -> Vec<(u32, usize)> {
        let mut shapes = Vec::new();
        for r in &self.runs {
            if !shapes.contains(&(r.warehouses, r.threads)) {
                shapes.push((r.warehouses, r.threads));
            }
        }
        shapes
    }

    fn find(&self, engine: &str, warehouses: u32, threads: usize) -> Option<&RunResult> {
        self.runs
            .iter()
            .find(|r| r.engine == engine && r.warehouses == warehouses && r.threads == threads)
    }

    fn markdown(&self) -> String {
        let m = &self.machine;
        let mut md = format!(
            "# TPC-C (go-tpc)\n\nCommand: `{}`\n\nMachine: {}, {} cores, {} GiB, Linux {}\n\n\
             Data: `{}` ({}). Every server listens on 127.0.0.1 and go-tpc (`{INSTALL}`) \
             connects over TCP with its PostgreSQL driver. For each server and warehouse \
             count, on a fresh server: `go-tpc tpcc prepare` on {} connections, then \
             `go-tpc tpcc run` at each thread count for {} s (`--ignore-error`: a failed \
             transaction is counted and its thread goes on), then `go-tpc tpcc check` \
             (TPC-C's consistency conditions 3.3.2.1–3.3.2.10 and 3.3.2.12) on what the \
             runs left. Latencies are go-tpc's, per transaction.\n\n\
             Server CPU is user plus system time during `go-tpc tpcc run`, per completed \
             transaction of any type. pmdb's server runs in the benchmark's process, so its \
             CPU is that process's (`/proc/self/stat`): meanwhile the benchmark only waits \
             for go-tpc, whose own CPU, a child's, is not counted. PostgreSQL's is the sum \
             over the postmaster and every process descended from it (`/proc/PID/stat`), \
             read before and after the run; backends that exit during the run are counted \
             through the postmaster's cutime and cstime.\n\n## Servers\n\n\
             | server | set-up |\n|---|---|\n",
            self.command,
            m.cpu,
            m.cores,
            m.memory_gib,
            m.kernel,
            self.directory,
            self.filesystem,
            self.load_threads,
            self.seconds
        );
        for s in &self.setups {
            md.push_str(&format!("| {} | {} |\n", s.engine, s.description));
        }
        md.push_str(
            "\n## Loads and checks\n\n| server | warehouses | prepare (s) | check |\n\
             |---|---:|---:|---|\n",
        );
        for l in &self.loads {
            let check = if l.check.passed() {
                "passed".to_string()
            } else {
                format!("**failed**: {}", l.check.failures.join("; "))
            };
            md.push_str(&format!(
                "| {} | {} | {:.1} | {} |\n",
                l.engine, l.warehouses, l.prepare_seconds, check
            ));
        }
        md.push_str(
            "\n## Runs\n\n| server | warehouses | threads | tpmC | tpmTotal | transactions | failed | server CPU (s) | server CPU ms / transaction |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.runs {
            md.push_str(&format!(
                "| {} | {} | {} | {:.0} | {:.0} | {} | {} | {:.1} | {:.2} |\n",
                r.engine,
                r.warehouses,
                r.threads,
                r.tpmc,
                r.tpm_total,
                thousands(r.transactions),
                r.errors,
                r.server_cpu_seconds,
                r.cpu_ms_per_transaction()
            ));
        }
        let failures: Vec<&RunResult> = self
            .runs
            .iter()
            .filter(|r| r.first_error.is_some())
            .collect();
        if !failures.is_empty() {
            md.push_str("\nFirst failure of each run with failures:\n\n");
            for r in failures {
                md.push_str(&format!(
                    "- {}, {} warehouses, {} threads: `{}`\n",
                    r.engine,
                    r.warehouses,
                    r.threads,
                    r.first_error.as_deref().unwrap_or_default()
                ));
            }
        }
        if let [first, others @ ..] = self.setups.as_slice() {
            for other in others {
                md.push_str(&format!(
                    "\n## {} against {}\n\n| warehouses | threads | tpmC ratio | server CPU per transaction ratio (lower is better) |\n|---:|---:|---:|---:|\n",
                    first.engine, other.engine
                ));
                for r in self.runs.iter().filter(|r| r.engine == first.engine) {
                    if let Some(o) = self.find(&other.engine, r.warehouses, r.threads) {
                        md.push_str(&format!(
                            "| {} | {} | {:.2}x | {:.2}x |\n",
                            r.warehouses,
                            r.threads,
                            r.tpmc / o.tpmc.max(f64::MIN_POSITIVE),
                            r.cpu_ms_per_transaction()
                                / o.cpu_ms_per_transaction().max(f64::MIN_POSITIVE)
                        ));
                    }
                }
            }
        }
        for (warehouses, threads) in self.shapes() {
            let runs: Vec<&RunResult> = self
                .setups
                .iter()
                .filter_map(|s| self.find(&s.engine, warehouses, threads))
                .collect();
            md.push_str(&format!(
                "\n## {warehouses} warehouses, {threads} threads\n\n| transaction |"
            ));
            for r in &runs {
                md.push_str(&format!(
                    " {e} count | {e} failed | {e} p50 / p95 / p99 ms |",
                    e = r.engine
                ));
            }
            md.push_str("\n|---|");
            md.push_str(&"---:|---:|---:|".repeat(runs.len()));
            md.push('\n');
            let mut names: Vec<&str> = Vec::new();
            for t in runs.iter().flat_map(|r| &r.types) {
                if !names.contains(&t.name.as_str()) {
                    names.push(&t.name);
                }
            }
            for name in names {
                md.push_str(&format!("| {} |", display_name(name)));
                for r in &runs {
                    match r.types.iter().find(|t| t.name == name) {
                        Some(t) => md.push_str(&format!(
                            " {} | {} | {:.1} / {:.1} / {:.1} |",
                            thousands(t.count),
                            t.errors,
                            t.p50_ms,
                            t.p95_ms,
                            t.p99_ms
                        )),
                        None => md.push_str(" 0 | 0 | |"),
                    }
                }
                md.push('\n');
            }
            let tpmc: Vec<String> = runs
                .iter()
                .map(|r| format!("{} {}", r.engine, thousands(r.tpmc.round() as u64)))
                .collect();
            md.push_str(&format!("\n**tpmC: {}", tpmc.join(", ")));
            if let [first, second, ..] = runs.as_slice() {
                md.push_str(&format!(
                    " ({:.2}x)",
                    first.tpmc / second.tpmc.max(f64::MIN_POSITIVE)
                ));
            }
            md.push_str(".**\n");
        }
        md.push_str("\nChart: `tpcc-tpmc.svg` (tpmC per warehouse and thread count).\n");
        md
    }
}

/// Writes `tpcc.{json,md}` and the chart under `dir`; the Markdown's path.
pub fn write(dir: &Path, report: &TpccReport) -> Result<PathBuf, String> {
    let (_, md) = write_report(dir, "tpcc", report, &report.markdown())
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let shapes = report.shapes();
    let categories: Vec<String> = shapes
        .iter()
        .map(|(w, t)| format!("{w} warehouses, {t} threads"))
        .collect();
    let series: Vec<(String, Vec<f64>)> = report
        .setups
        .iter()
        .map(|s| {
            let values = shapes
                .iter()
                .map(|&(w, t)| report.find(&s.engine, w, t).map_or(0.0, |r| r.tpmc))
                .collect();
            (s.engine.clone(), values)
        })
        .collect();
    grouped_bars(
        &dir.join("tpcc-tpmc.svg"),
        "TPC-C (go-tpc): throughput",
        "tpmC (New-Order transactions per minute)",
        &categories,
        &series,
    )
    .map_err(|e| e.to_string())?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_tpmc_counts_percentiles_and_errors() {
        // go-tpc v1.0.12's output of a run whose connections were terminated, its
        // per-interval lines but one cut, the statement in the error shortened.
        let out = "[2026-11-29 02:48:41] execute run failed, err exec SELECT s_i_id FROM stock FOR UPDATE failed read tcp 127.0.0.1:41202->127.0.0.1:55999: read: connection reset by peer
[Current] NEW_ORDER - Takes(s): 10.0, Count: 1500, TPM: 9000.0, Sum(ms): 6000.0, Avg(ms): 4.0, 50th(ms): 4.2, 90th(ms): 8.4, 95th(ms): 10.0, 99th(ms): 14.2, 99.9th(ms): 30.4, Max(ms): 60.0
Finished
[Summary] DELIVERY - Takes(s): 7.9, Count: 182, TPM: 1385.3, Sum(ms): 1608.7, Avg(ms): 8.8, 50th(ms): 8.4, 90th(ms): 13.6, 95th(ms): 14.7, 99th(ms): 19.9, 99.9th(ms): 39.8, Max(ms): 39.8
[Summary] NEW_ORDER - Takes(s): 8.0, Count: 1828, TPM: 13773.2, Sum(ms): 8905.8, Avg(ms): 4.9, 50th(ms): 4.2, 90th(ms): 8.4, 95th(ms): 10.0, 99th(ms): 14.2, 99.9th(ms): 30.4, Max(ms): 117.4
[Summary] NEW_ORDER_ERR - Takes(s): 7.9, Count: 3, TPM: 22.7, Sum(ms): 20.1, Avg(ms): 6.7, 50th(ms): 6.3, 90th(ms): 8.9, 95th(ms): 8.9, 99th(ms): 8.9, 99.9th(ms): 8.9, Max(ms): 8.9
[Summary] ORDER_STATUS - Takes(s): 8.0, Count: 189, TPM: 1422.3, Sum(ms): 244.7, Avg(ms): 1.3, 50th(ms): 1.0, 90th(ms): 2.6, 95th(ms): 3.7, 99th(ms): 6.3, 99.9th(ms): 8.4, Max(ms): 8.4
[Summary] PAYMENT - Takes(s): 8.0, Count: 1751, TPM: 13184.0, Sum(ms): 4094.5, Avg(ms): 2.3, 50th(ms): 2.1, 90th(ms): 4.7, 95th(ms): 6.3, 99th(ms): 9.4, 99.9th(ms): 13.1, Max(ms): 54.5
[Summary] STOCK_LEVEL_ERR - Takes(s): 7.0, Count: 2, TPM: 17.1, Sum(ms): 9.0, Avg(ms): 4.5, 50th(ms): 4.2, 90th(ms): 4.7, 95th(ms): 4.7, 99th(ms): 4.7, 99.9th(ms): 4.7, Max(ms): 4.7
tpmC: 13772.7, tpmTotal: 30937.8, efficiency: 107097.2%
";
        let s = Summary::parse(out).unwrap();
        assert_eq!((s.tpmc, s.tpm_total), (13772.7, 30937.8));
        let names: Vec<&str> = s.transactions.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, MIX);
        assert_eq!(
            s.transactions[0],
            Transaction {
                name: "NEW_ORDER".into(),
                count: 1828,
                errors: 3,
                p50_ms: 4.2,
                p95_ms: 10.0,
                p99_ms: 14.2
            }
        );
        // A type whose every transaction failed has only its _ERR line.
        let stock = &s.transactions[4];
        assert_eq!((stock.count, stock.errors, stock.p99_ms), (0, 2, 0.0));
        assert_eq!(
            s.first_error.as_deref(),
            Some(
                "exec SELECT s_i_id FROM stock FOR UPDATE failed read tcp \
                 127.0.0.1:41202->127.0.0.1:55999: read: connection reset by peer"
            )
        );
        assert!(Summary::parse("Finished\n").is_err());
        assert_eq!(display_name("ORDER_STATUS"), "Order-Status");
    }

    #[test]
    fn a_failed_condition_is_read_from_the_output() {
        let out = "begin to check warehouse 1 at condition 3.3.2.11
execute check failed, err check warehouse 1 at condition 3.3.2.11 failed all of (count(*) from ORDER) - (count(*) from NEW-ORDER) for each district defined by (O_W_ID, O_D_ID) = (NO_W_ID, NO_D_ID) = (C_W_ID, C_D_ID) should be 2100 in warehouse 1
Finished
";
        let c = Check::parse(out);
        assert!(!c.passed());
        assert!(c.failures[0].starts_with("check warehouse 1 at condition 3.3.2.11 failed"));
        assert!(
            Check::parse("begin to check warehouse 1 at condition 3.3.2.1\nFinished\n").passed()
        );
        assert_eq!(thousands(20258), "20,258");
        assert_eq!(thousands(226), "226");
    }
}
