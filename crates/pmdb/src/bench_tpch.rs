//! `pmdb bench tpch`: generates TPC-H in-process, loads it into pmdb (and into
//! PostgreSQL when it is installed), and runs the 22 queries on pmdb, on DataFusion over
//! the same data in memory (the reference every answer is checked against) and on
//! PostgreSQL.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use datafusion::arrow::array::RecordBatch;
use pmdb_bench::machine::Machine;
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_bench::tpch::memory::MemoryTarget;
use pmdb_bench::tpch::run::{Load, SqlTarget, TpchReport, run_queries, timed, total, write};
use pmdb_bench::tpch::verify::rows_of;
use pmdb_bench::tpch::{self, postgres};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine};

use crate::input::whole;
use crate::paths::default_dir;

#[derive(Args)]
pub struct TpchArgs {
    /// Scale factor (1 is about 1 GB of data)
    #[arg(long, default_value_t = 1.0, value_parser = scale_factor)]
    sf: f64,
    /// Runs of each query; the median is reported
    #[arg(long, default_value_t = 3, value_parser = whole(1..=9usize))]
    runs: usize,
    /// Queries to run, comma-separated numbers [default: all 22]
    #[arg(long, value_delimiter = ',', value_parser = whole(1..=22usize))]
    queries: Vec<usize>,
    /// Directory the engines' data goes in (its pmdb/ and postgres/ are replaced)
    /// [default: /dev/shm/pmdb-bench-tpch on tmpfs]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Leave PostgreSQL out even when it is installed
    #[arg(long)]
    no_postgres: bool,
    /// Directory for the JSON, Markdown and SVG report
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
}

fn scale_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(sf) if (0.001..=100.0).contains(&sf) => Ok(sf),
        _ => Err(format!("{s:?} is not a scale factor from 0.001 to 100")),
    }
}

/// pmdb's SQL as a TPC-H target.
struct PmdbTarget(SqlEngine);

impl SqlTarget for PmdbTarget {
    fn name(&self) -> String {
        "pmdb".into()
    }

    fn run(&mut self, sql: &str) -> Result<(Vec<Vec<String>>, f64), String> {
        let (mut outputs, secs) = timed(|| self.0.execute(sql)).map_err(|e| e.to_string())?;
        match outputs.pop() {
            Some(Output::Rows { batches, .. }) => {
                Ok((rows_of(&batches).map_err(|e| e.to_string())?, secs))
            }
            _ => Err("the query gave no rows".into()),
        }
    }
}

fn load_pmdb(sql: &SqlEngine, data: &[(&str, Vec<RecordBatch>)]) -> Result<f64, String> {
    let rows: u64 = data
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| b.num_rows() as u64))
        .sum();
    let bar = progress("loading pmdb (rows)", rows);
    let started = Instant::now();
    for ((name, ddl), (_, batches)) in tpch::TABLES.iter().zip(data) {
        sql.execute(ddl).map_err(|e| e.to_string())?;
        sql.load(
            name,
            batches.iter().map(|b| {
                bar.inc(b.num_rows() as u64);
                Ok(b.clone())
            }),
        )
        .map_err(|e| format!("loading {name}: {e}"))?;
    }
    let secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(secs)
}

pub fn run(a: TpchArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = a
        .dir
        .unwrap_or_else(|| default_dir("pmdb-bench-tpch", "bench-data-tpch"));
    // Only the bench's own subdirectories are removed, before and after.
    let ours = [dir.join("pmdb"), dir.join("postgres")];
    for d in &ours {
        if d.exists() {
            std::fs::remove_dir_all(d)?;
        }
    }
    std::fs::create_dir_all(&dir)?;
    let queries: Vec<usize> = if a.queries.is_empty() {
        (1..=22).collect()
    } else {
        a.queries.clone()
    };

    let bar = progress("generating TPC-H tables", tpch::TABLES.len() as u64);
    let data = tpch::generate_all(a.sf)?;
    bar.finish_and_clear();

    let mut loads = Vec::new();
    let mut notes = vec![
        "pmdb: the same tables with their primary keys, loaded with `SqlEngine::load` \
         (bulk load, committed every 8 MiB), default options, data on the directory's \
         filesystem"
            .to_string(),
        "DataFusion in memory: the generated Arrow batches as MemTables, one partition \
         per core — the same executor with no storage"
            .to_string(),
        "prefetcher off/on and --read-mode with the tables compacted to SSTs: pending \
         (not measured in this run)"
            .to_string(),
    ];
    let sql = SqlEngine::open(Db::open(dir.join("pmdb"), DbOptions::default())?)?;
    let secs = load_pmdb(&sql, &data)?;
    println!("pmdb loaded SF {} in {secs:.1} s", a.sf);
    loads.push(Load {
        engine: "pmdb".into(),
        seconds: secs,
        what: "CREATE TABLE with primary keys, bulk load".into(),
    });

    let mut targets: Vec<Box<dyn SqlTarget>> = vec![
        Box::new(MemoryTarget::new(&data)?),
        Box::new(PmdbTarget(sql)),
    ];
    let pg_bin = if a.no_postgres {
        None
    } else {
        postgres::find()
    };
    match &pg_bin {
        None if !a.no_postgres => {
            println!(
                "PostgreSQL is not installed (apt-get install postgresql): running without it"
            );
            notes.push("PostgreSQL: not installed on this machine".into());
        }
        None => notes.push("PostgreSQL: left out (--no-postgres)".into()),
        Some(bin) => {
            let pg = postgres::Postgres::start(bin, &dir.join("postgres"))?;
            println!("loading {} (COPY, indexes, ANALYZE) ...", pg.version);
            let secs = pg.load(&data, &dir.join("postgres"))?;
            println!("PostgreSQL loaded SF {} in {secs:.1} s", a.sf);
            loads.push(Load {
                engine: "PostgreSQL".into(),
                seconds: secs,
                what: "CREATE TABLE with primary keys, COPY from CSV, CREATE INDEX on join keys, ANALYZE".into(),
            });
            notes.push(pg.describe());
            targets.push(Box::new(pg));
        }
    }
    drop(data);

    let results = run_queries(&mut targets, &queries, a.sf, a.runs);
    let reference = targets[0].name();
    drop(targets);
    let report = TpchReport {
        machine: Machine::detect(),
        command: command_line(),
        scale_factor: a.sf,
        runs: a.runs,
        reference,
        loads,
        queries: results,
        notes,
    };
    let penalty = postgres::TIMEOUT_SECS as f64;
    let md = write(&a.out, &report, penalty)?;
    for e in report
        .queries
        .first()
        .map(|q| q.engines.as_slice())
        .unwrap_or_default()
    {
        let (t, failed) = total(&report.queries, &e.engine, penalty);
        println!(
            "{:24} {t:8.2} s for {} queries ({failed} failed)",
            e.engine,
            queries.len()
        );
    }
    let mismatches: Vec<String> = report
        .queries
        .iter()
        .flat_map(|q| {
            q.engines
                .iter()
                .filter(|e| e.check != "ok")
                .map(move |e| format!("Q{} {}: {}", q.query, e.engine, e.check))
        })
        .collect();
    for m in &mismatches {
        println!("{m}");
    }
    println!("report: {}", md.display());
    for d in ours.iter().filter(|d| d.exists()) {
        std::fs::remove_dir_all(d)?;
    }
    // The directory itself goes too when the bench made it and left nothing else.
    let _ = std::fs::remove_dir(&dir);
    Ok(if mismatches.iter().any(|m| m.contains("pmdb")) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
