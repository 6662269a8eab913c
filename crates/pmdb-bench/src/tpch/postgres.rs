//! PostgreSQL as a TPC-H peer: a throwaway cluster in the benchmark's directory (same
//! filesystem as pmdb), tuned as a user running TPC-H would tune it, loaded with COPY,
//! indexed on the join keys and analyzed; queried through psql. Install it with
//! `apt-get install postgresql`; without it the benchmark runs without this peer.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::csv::WriterBuilder;

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

pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    socket: PathBuf,
    /// The user the server runs as when this process is root (initdb refuses root).
    run_as: Option<String>,
    pub version: String,
    pub settings: Vec<(String, String)>,
}

/// The directory holding PostgreSQL's server programs, if it is installed.
pub fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|d| d.join("initdb").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{:?} failed: {}{}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        ))
    }
}

/// The uid and gid of `user`, from /etc/passwd.
fn ids_of(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&user))
            .then(|| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))?
    })
}

impl Postgres {
    /// Creates and starts a cluster under `dir` with programs from `bin`.
    pub fn start(bin: &Path, dir: &Path) -> Result<Postgres, String> {
        let root = rustix::process::geteuid().is_root();
        let run_as = root.then(|| "postgres".to_string());
        let data = dir.join("pgdata");
        let socket = dir.join("pgsocket");
        std::fs::create_dir_all(&socket).map_err(|e| e.to_string())?;
        if let Some(user) = &run_as {
            let (uid, gid) = ids_of(user)
                .ok_or_else(|| format!("running as root needs a {user} user to run PostgreSQL"))?;
            for d in [dir, socket.as_path()] {
                std::os::unix::fs::chown(d, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
            }
        }
        let pg = Postgres {
            bin: bin.to_path_buf(),
            data,
            socket,
            run_as,
            version: output(Command::new(bin.join("postgres")).arg("--version"))?
                .trim()
                .to_string(),
            settings: tuned_settings(),
        };
        output(pg.server_command("initdb").args([
            "-D",
            &pg.data.to_string_lossy(),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-instructions",
        ]))?;
        let mut conf = String::from("\n# pmdb bench tpch\nlisten_addresses = ''\n");
        for (k, v) in &pg.settings {
            conf.push_str(&format!("{k} = '{v}'\n"));
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(pg.data.join("postgresql.conf"))
            .and_then(|mut f| f.write_all(conf.as_bytes()))
            .map_err(|e| e.to_string())?;
        output(pg.server_command("pg_ctl").args([
            "-D",
            &pg.data.to_string_lossy(),
            "-l",
            &dir.join("postgres.log").to_string_lossy(),
            "-o",
            &format!("-k {}", pg.socket.display()),
            "-w",
            "start",
        ]))?;
        Ok(pg)
    }

    fn server_command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    /// Runs `script` in one psql session: its output, unaligned, `|` between columns.
    fn psql(&self, script: &str) -> Result<String, String> {
        let psql = Some(self.bin.join("psql"))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| PathBuf::from("psql"));
        let mut child = Command::new(psql)
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                "|",
                "-v",
                "ON_ERROR_STOP=1",
                "-U",
                "postgres",
            ])
            .arg("-h")
            .arg(&self.socket)
            .args(["-d", "postgres"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("psql: {e}"))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(script.as_bytes())
            .map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

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

impl Drop for Postgres {
    fn drop(&mut self) {
        // Stopping is best effort: the directory is removed with the run's anyway.
        let _ = output(self.server_command("pg_ctl").args([
            "-D",
            &self.data.to_string_lossy(),
            "-m",
            "immediate",
            "stop",
        ]));
    }
}
