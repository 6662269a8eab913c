//! PostgreSQL as a TPC-H peer: a throwaway cluster ([`crate::postgres`]) tuned as a
//! user running TPC-H would tune it, loaded with COPY, indexed on the join keys and
//! analyzed; queried through psql. Without it the benchmark runs without this peer.

use std::path::Path;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::WriterBuilder;

use crate::postgres::{Listen, Postgres};
use crate::tpch::TABLES;
use crate::tpch::run::SqlTarget;

/// Indexes on the join keys besides the primary keys (which already lead with
/// l_orderkey and ps_partkey).
const JOIN_INDEXES: [&str; 2] = [
    "CREATE INDEX lineitem_partkey ON lineitem (l_partkey)",
    "CREATE INDEX orders_custkey ON orders (o_custkey)",
];

/// Seconds after which a query is cancelled and counted as failed.
pub const TIMEOUT_SECS: u64 = 300;

/// Starts a cluster under `dir` tuned for TPC-H, reached by its socket.
pub fn start(bin: &Path, dir: &Path) -> Result<Postgres, String> {
    Postgres::start(bin, dir, tuned_settings(), Listen::SocketOnly)
}

impl Postgres {
    /// Creates the tables (with their primary keys), COPYs `tables` in from CSV files
    /// written under `dir`, builds the join-key indexes and runs ANALYZE: the seconds of
    /// those steps (writing the CSV files is not counted).
    pub fn load(&self, tables: &[(&str, Vec<RecordBatch>)], dir: &Path) -> Result<f64, String> {
        let csv_dir = dir.join("csv");
        std::fs::create_dir_all(&csv_dir).map_err(|e| e.to_string())?;
        let mut script = String::new();
        for ((name, ddl), (_, batches)) in TABLES.iter().zip(tables) {
            let path = csv_dir.join(format!("{name}.csv"));
            let file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
            let mut w = WriterBuilder::new()
                .with_header(false)
                .build(std::io::BufWriter::new(file));
            for b in batches {
                w.write(b).map_err(|e| e.to_string())?;
            }
            drop(w);
            script.push_str(&format!(
                "{ddl};\nCOPY {name} FROM '{}' (FORMAT csv);\n",
                path.display()
            ));
        }
        for ix in JOIN_INDEXES {
            script.push_str(&format!("{ix};\n"));
        }
        script.push_str("ANALYZE;\n");
        let started = Instant::now();
        self.psql(&script)?;
        let secs = started.elapsed().as_secs_f64();
        std::fs::remove_dir_all(&csv_dir).map_err(|e| e.to_string())?;
        Ok(secs)
    }

    pub fn describe(&self) -> String {
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!(
            "{}: primary keys, indexes on lineitem(l_partkey) and orders(o_custkey) (the other \
             join keys lead a primary key), ANALYZE; {}; statement_timeout {TIMEOUT_SECS} s",
            self.version,
            settings.join(", ")
        )
    }
}

/// Settings for an analytic load on this machine: memory sized to it, parallel
/// workers on, page costs of memory-speed storage.
fn tuned_settings() -> Vec<(String, String)> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mem_mib = crate::machine::available_memory().unwrap_or(8 << 30) >> 20;
    vec![
        (
            "shared_buffers".into(),
            format!("{}MB", (mem_mib / 4).min(8192)),
        ),
        ("effective_cache_size".into(), format!("{}MB", mem_mib / 2)),
        ("work_mem".into(), "256MB".into()),
        ("maintenance_work_mem".into(), "1GB".into()),
        ("max_parallel_workers_per_gather".into(), cores.to_string()),
        ("max_parallel_workers".into(), cores.to_string()),
        ("max_parallel_maintenance_workers".into(), cores.to_string()),
        ("random_page_cost".into(), "1.1".into()),
        ("effective_io_concurrency".into(), "200".into()),
    ]
}

impl SqlTarget for Postgres {
    fn name(&self) -> String {
        "PostgreSQL".into()
    }

    fn run(&mut self, sql: &str) -> Result<(Vec<Vec<String>>, f64), String> {
        let script = format!("SET statement_timeout = '{TIMEOUT_SECS}s';\n\\timing on\n{sql}\n");
        let out = self.psql(&script)?;
        let mut rows = Vec::new();
        let mut ms = None;
        for line in out.lines() {
            if let Some(t) = line.strip_prefix("Time: ") {
                ms = t
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<f64>().ok());
            } else if !line.is_empty() {
                rows.push(line.split('|').map(str::to_string).collect());
            }
        }
        let ms = ms.ok_or("psql gave no timing")?;
        Ok((rows, ms / 1e3))
    }
}
