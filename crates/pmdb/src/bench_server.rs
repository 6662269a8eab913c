//! The servers the wire-protocol benchmarks (pgbench, go-tpc) load, both on 127.0.0.1:
//! pmdb's, in this process as `pmdb serve` runs it, on a fresh pool; and PostgreSQL,
//! when installed, on a fresh cluster with the settings every such comparison uses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pmdb_bench::postgres::{Listen, Postgres, free_port, write_heavy_settings};
use pmdb_engine::{Db, DbOptions};
use pmdb_server::{Auth, Server, ServerOptions};
use pmdb_sql::SqlEngine;

pub type Failure = Box<dyn std::error::Error>;

/// What a report says of the pmdb server.
pub fn pmdb_description() -> String {
    format!(
        "pmdb {} (`pmdb serve`, in process), default options: every commit durable \
         in the pool before it is acknowledged",
        env!("CARGO_PKG_VERSION")
    )
}

/// Runs `drive` against a pmdb server in this process, on a fresh pool at `dir` (what
/// was there is removed), with trust authentication; `drive` gets its port. The server
/// is shut down when `drive` returns, whatever it returned.
pub fn with_pmdb<T>(
    dir: &Path,
    drive: impl FnOnce(u16) -> Result<T, Failure>,
) -> Result<T, Failure> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let engine = SqlEngine::open(Db::open(dir, DbOptions::default())?)?;
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
    let outcome = drive(server.local_addr().port());
    server.shutdown();
    runtime.block_on(server.wait());
    outcome
}

/// PostgreSQL's programs, unless `no_postgres`; says so when it is not installed.
pub fn postgres_bin(no_postgres: bool) -> Option<PathBuf> {
    if no_postgres {
        return None;
    }
    let found = pmdb_bench::postgres::find();
    if found.is_none() {
        println!("PostgreSQL is not installed (apt-get install postgresql): running without it");
    }
    found
}

/// A fresh PostgreSQL cluster at `dir` (what was there is removed), listening on a free
/// loopback port; the cluster and its port.
pub fn start_postgres(bin: &Path, dir: &Path) -> Result<(Postgres, u16), Failure> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let port = free_port()?;
    let pg = Postgres::start(bin, dir, write_heavy_settings(), Listen::Loopback(port))?;
    Ok((pg, port))
}
