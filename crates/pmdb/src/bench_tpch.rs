//! `pmdb bench tpch`: generates TPC-H in-process, loads it into pmdb (and into
//! PostgreSQL when it is installed), and runs the 22 queries on pmdb, on DataFusion over
//! the same data in memory (the reference every answer is checked against) and on
//! PostgreSQL.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use datafusion::arrow::array::RecordBatch;
use pmdb_bench::machine::Machine;
use pmdb_bench::progress::progress;
use pmdb_bench::report::command_line;
use pmdb_bench::tpch::memory::MemoryTarget;
use pmdb_bench::tpch::run::{Load, SqlTarget, TpchReport, merge, run_queries, timed, total, write};
use pmdb_bench::tpch::verify::rows_of;
use pmdb_bench::tpch::{self, postgres};
use pmdb_engine::{Db, DbOptions, ReadMode};
use pmdb_prefetch::{PrefetchOptions, Prefetcher};
use pmdb_sql::{Output, ScanOptions, SqlEngine};

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
    /// Also run pmdb's queries with the helper-thread prefetcher (mapping M1)
    #[arg(long)]
    prefetch: bool,
    /// Then compact the tables to SSTs and run pmdb's queries again with each of these
    /// block read modes, comma-separated (pread, mmap-copy, direct)
    #[arg(long, value_delimiter = ',')]
    read_mode: Vec<ReadMode>,
}

fn scale_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(sf) if (0.001..=100.0).contains(&sf) => Ok(sf),
        _ => Err(format!("{s:?} is not a scale factor from 0.001 to 100")),
    }
}

/// pmdb's SQL as a TPC-H target, read with its scan options.
struct PmdbTarget {
    sql: Arc<SqlEngine>,
    name: String,
    options: ScanOptions,
}

impl PmdbTarget {
    /// The targets of `sql`: as it reads by default, then with the prefetcher.
    fn of(
        sql: &Arc<SqlEngine>,
        name: &str,
        prefetcher: &Option<Arc<Prefetcher>>,
    ) -> Vec<Box<dyn SqlTarget>> {
        let mut out: Vec<Box<dyn SqlTarget>> = vec![Box::new(PmdbTarget {
            sql: Arc::clone(sql),
            name: name.to_string(),
            options: ScanOptions::default(),
        })];
        if let Some(p) = prefetcher {
            out.push(Box::new(PmdbTarget {
                sql: Arc::clone(sql),
                name: format!("{name} + prefetch"),
                options: ScanOptions {
                    prefetcher: Some(Arc::clone(p)),
                    ..Default::default()
                },
            }));
        }
        out
    }
}

impl SqlTarget for PmdbTarget {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn run(&mut self, sql: &str) -> Result<(Vec<Vec<String>>, f64), String> {
        self.sql.set_scan_options(self.options.clone());
        let (mut outputs, secs) = timed(|| self.sql.execute(sql)).map_err(|e| e.to_string())?;
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
    // As a user would after a load: ANALYZE builds the columnar segments of tables
    // whose rows did not arrive in key order.
    bar.set_message("ANALYZE");
    sql.execute("ANALYZE")
        .map_err(|e| format!("ANALYZE: {e}"))?;
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
         (bulk load, committed every 8 MiB, building columnar segments where rows arrive \
         in key order), then ANALYZE (which builds them for partsupp, generated out of key \
         order); default options, data on the directory's filesystem"
            .to_string(),
        "DataFusion in memory: the generated Arrow batches as MemTables, one partition \
         per core — the same executor with no storage"
            .to_string(),
    ];
    let prefetcher = if a.prefetch {
        let p = Prefetcher::start(&PrefetchOptions::default())?;
        notes.push(format!(
            "pmdb + prefetch: the helper-thread prefetcher, mapping M1, one helper pinned \
             to CPU {:?}, queue of {} jobs; each scan of the columnar segments hands it \
             its next two chunks of every column it reads",
            p.placement().far,
            PrefetchOptions::default().queue_capacity,
        ));
        Some(Arc::new(p))
    } else {
        notes.push("prefetcher: not run (--prefetch)".into());
        None
    };
    let sql = Arc::new(SqlEngine::open(Db::open(
        dir.join("pmdb"),
        DbOptions::default(),
    )?)?);
    let secs = load_pmdb(&sql, &data)?;
    println!("pmdb loaded SF {} in {secs:.1} s", a.sf);
    loads.push(Load {
        engine: "pmdb".into(),
        seconds: secs,
        what: "CREATE TABLE with primary keys, bulk load, ANALYZE".into(),
    });

    let mut targets: Vec<Box<dyn SqlTarget>> = vec![Box::new(MemoryTarget::new(&data)?)];
    targets.extend(PmdbTarget::of(&sql, "pmdb", &prefetcher));
    let pg_bin = if a.no_postgres {
        None
    } else {
        pmdb_bench::postgres::find()
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
            let pg = postgres::start(bin, &dir.join("postgres"))?;
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

    let mut results = run_queries(&mut targets, &queries, a.sf, a.runs);
    let reference = targets[0].name();
    // Only the reference stays: pmdb is reopened below, and PostgreSQL is done.
    targets.truncate(1);
    drop(sql);
    if !a.read_mode.is_empty() {
        let path = dir.join("pmdb");
        let started = Instant::now();
        println!("compacting pmdb's tables to SSTs ...");
        Db::open(&path, DbOptions::default())?.compact()?;
        notes.push(format!(
            "pmdb (SSTs, mode): after the PM runs, every memtable and global index was \
             compacted to SSTs under the database directory ({:.1} s), and the database \
             reopened with that block read mode: pread into a buffer and mmap + copy are \
             served by the block cache, direct reads the mapped file with no copy",
            started.elapsed().as_secs_f64()
        ));
        for mode in &a.read_mode {
            let options = DbOptions {
                read_mode: *mode,
                ..DbOptions::default()
            };
            // The previous mode's targets hold the database: they go before it reopens.
            targets.truncate(1);
            let sql = Arc::new(SqlEngine::open(Db::open(&path, options)?)?);
            targets.extend(PmdbTarget::of(
                &sql,
                &format!("pmdb (SSTs, {mode})"),
                &prefetcher,
            ));
            merge(
                &mut results,
                run_queries(&mut targets, &queries, a.sf, a.runs),
            );
        }
    } else {
        notes.push("read modes: not run (--read-mode)".into());
    }
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
