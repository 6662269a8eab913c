//! The TPC-H run: every query on every engine (median of N runs), each answer checked
//! against the reference engine's, the load times, and the report (JSON, Markdown, an
//! SVG chart).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::machine::Machine;
use crate::progress::progress;
use crate::report::write_report;
use crate::tpch::{query, query_name, verify};

/// An engine that answers SQL.
pub trait SqlTarget {
    fn name(&self) -> String;
    /// Runs `sql`: the answer as rows of text and the time it took in seconds (the
    /// engine's own measure when it has one, else the call's).
    fn run(&mut self, sql: &str) -> Result<(Vec<Vec<String>>, f64), String>;
}

/// Times `f`: its answer and its seconds.
pub fn timed<T, E>(f: impl FnOnce() -> Result<T, E>) -> Result<(T, f64), E> {
    let started = Instant::now();
    let out = f()?;
    Ok((out, started.elapsed().as_secs_f64()))
}

#[derive(Serialize, Clone, Debug)]
pub struct EngineResult {
    pub engine: String,
    /// Median seconds of the runs; `None` when the query failed or timed out.
    pub seconds: Option<f64>,
    pub runs: Vec<f64>,
    /// "ok", or why the answer is not the reference's (or the error).
    pub check: String,
}

#[derive(Serialize, Clone, Debug)]
pub struct QueryResult {
    pub query: usize,
    pub name: String,
    pub rows: usize,
    pub engines: Vec<EngineResult>,
}

#[derive(Serialize, Clone, Debug)]
pub struct Load {
    pub engine: String,
    pub seconds: f64,
    pub what: String,
}

#[derive(Serialize, Debug)]
pub struct TpchReport {
    pub machine: Machine,
    pub command: String,
    pub scale_factor: f64,
    pub runs: usize,
    pub reference: String,
    pub loads: Vec<Load>,
    pub queries: Vec<QueryResult>,
    /// How each engine was set up (settings, indexes, what is pending).
    pub notes: Vec<String>,
}

/// Runs queries `queries` on `targets`; `targets[0]` is the reference whose answers the
/// others must match. A query an engine fails counts as `penalty` seconds in totals.
pub fn run_queries(
    targets: &mut [Box<dyn SqlTarget>],
    queries: &[usize],
    sf: f64,
    runs: usize,
) -> Vec<QueryResult> {
    let bar = progress("TPC-H queries", (queries.len() * targets.len()) as u64);
    let mut out = Vec::new();
    for &q in queries {
        let text = query(q, sf);
        let mut expected: Option<Vec<Vec<String>>> = None;
        let mut engines = Vec::new();
        for t in targets.iter_mut() {
            bar.set_message(format!("Q{q} on {}", t.name()));
            let mut times = Vec::new();
            let mut check = String::from("ok");
            for run in 0..runs {
                match t.run(&text) {
                    Ok((rows, secs)) => {
                        times.push(secs);
                        if run > 0 {
                            continue;
                        }
                        match &expected {
                            None => expected = Some(rows),
                            Some(e) => {
                                if let Err(why) = verify::compare(&rows, e) {
                                    check = format!("differs: {why}");
                                }
                            }
                        }
                    }
                    Err(e) => {
                        check = format!("failed: {e}");
                        times.clear();
                        break;
                    }
                }
            }
            engines.push(EngineResult {
                engine: t.name(),
                seconds: median(&times),
                runs: times,
                check,
            });
            bar.inc(1);
        }
        out.push(QueryResult {
            query: q,
            name: query_name(q).to_string(),
            rows: expected.as_ref().map_or(0, Vec::len),
            engines,
        });
    }
    bar.finish_and_clear();
    out
}

/// Adds the engines of `more` (a later run of the same queries, whose first engine is
/// the same reference) to `into`, leaving out the reference's second run.
pub fn merge(into: &mut [QueryResult], more: Vec<QueryResult>) {
    for (q, m) in into.iter_mut().zip(more) {
        debug_assert_eq!(q.query, m.query);
        q.engines.extend(m.engines.into_iter().skip(1));
    }
}

fn median(times: &[f64]) -> Option<f64> {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    t.get(t.len() / 2).copied()
}

/// An engine's total over the queries, counting a failed query as `penalty` seconds;
/// with the number of such queries.
pub fn total(queries: &[QueryResult], engine: &str, penalty: f64) -> (f64, usize) {
    let mut sum = 0.0;
    let mut failed = 0;
    for q in queries {
        if let Some(e) = q.engines.iter().find(|e| e.engine == engine) {
            match e.seconds {
                Some(s) => sum += s,
                None => {
                    sum += penalty;
                    failed += 1;
                }
            }
        }
    }
    (sum, failed)
}

/// Writes `tpch.json`, `tpch.md` and `tpch.svg` into `dir`; the Markdown's path.
pub fn write(dir: &Path, report: &TpchReport, penalty: f64) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let engines: Vec<String> = report
        .queries
        .first()
        .map(|q| q.engines.iter().map(|e| e.engine.clone()).collect())
        .unwrap_or_default();
    let mut md = String::new();
    md.push_str(&format!(
        "# TPC-H, scale factor {}\n\nCommand: `{}`\n\nMachine: {}, {} cores, {} GiB, Linux {}\n\n",
        report.scale_factor,
        report.command,
        report.machine.cpu,
        report.machine.cores,
        report.machine.memory_gib,
        report.machine.kernel
    ));
    md.push_str(&format!(
        "Each time is the median of {} runs of the query (planning included), in seconds. \
         Every answer is checked against {}'s in the same run.\n\n",
        report.runs, report.reference
    ));
    md.push_str("## Load\n\n| engine | seconds | what |\n|---|---:|---|\n");
    for l in &report.loads {
        md.push_str(&format!(
            "| {} | {:.1} | {} |\n",
            l.engine, l.seconds, l.what
        ));
    }
    md.push_str("\n## Queries\n\n| query | rows |");
    for e in &engines {
        md.push_str(&format!(" {e} |"));
    }
    md.push_str(" checks |\n|---|---:|");
    md.push_str(&"---:|".repeat(engines.len()));
    md.push_str("---|\n");
    for q in &report.queries {
        md.push_str(&format!("| Q{} {} | {} |", q.query, q.name, q.rows));
        for e in &q.engines {
            match e.seconds {
                Some(s) => md.push_str(&format!(" {s:.3} |")),
                None => md.push_str(" — |"),
            }
        }
        let bad: Vec<String> = q
            .engines
            .iter()
            .filter(|e| e.check != "ok")
            .map(|e| format!("{}: {}", e.engine, e.check))
            .collect();
        md.push_str(&format!(
            " {} |\n",
            if bad.is_empty() {
                "all match".into()
            } else {
                bad.join("; ")
            }
        ));
    }
    md.push_str("\n## Totals\n\n| engine | total seconds | failed (counted as ");
    md.push_str(&format!(
        "{penalty:.0} s) | ratio to pmdb |\n|---|---:|---:|---:|\n"
    ));
    let pmdb_total = total(&report.queries, "pmdb", penalty).0;
    for e in &engines {
        let (t, failed) = total(&report.queries, e, penalty);
        md.push_str(&format!(
            "| {e} | {t:.2} | {failed} | {:.2}x |\n",
            if pmdb_total > 0.0 {
                t / pmdb_total
            } else {
                0.0
            }
        ));
    }
    if !report.notes.is_empty() {
        md.push_str("\n## Setup\n\n");
        for n in &report.notes {
            md.push_str(&format!("- {n}\n"));
        }
    }
    md.push_str("\n![per-query times](tpch.svg)\n");
    let categories: Vec<String> = report
        .queries
        .iter()
        .map(|q| format!("Q{}", q.query))
        .collect();
    let series: Vec<(String, Vec<f64>)> = engines
        .iter()
        .map(|e| {
            (
                e.clone(),
                report
                    .queries
                    .iter()
                    .map(|q| {
                        q.engines
                            .iter()
                            .find(|x| &x.engine == e)
                            .and_then(|x| x.seconds)
                            .unwrap_or(penalty)
                    })
                    .collect(),
            )
        })
        .collect();
    crate::charts::grouped_bars(
        &dir.join("tpch.svg"),
        &format!(
            "TPC-H SF {}: seconds per query (lower is better)",
            report.scale_factor
        ),
        "seconds",
        &categories,
        &series,
    )
    .map_err(|e| e.to_string())?;
    let (_, md_path) = write_report(dir, "tpch", report, &md).map_err(|e| e.to_string())?;
    Ok(md_path)
}
