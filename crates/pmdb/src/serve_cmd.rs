//! `pmdb serve`: the PostgreSQL wire-protocol server on a database, until SIGTERM or
//! SIGINT, which shut it down gracefully (clients get a grace period; what was
//! committed is already durable).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use pmdb_engine::Db;
use pmdb_server::{Auth, DatabaseStore, Server, ServerOptions, TlsFiles, Users};
use pmdb_sql::SqlEngine;

use crate::damage_args::DamageArgs;
use crate::paths::default_pool_dir;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed at start)
    #[arg(long, default_value = "127.0.0.1:5432")]
    listen: SocketAddr,
    /// Also listen on a Unix-domain socket in this directory (`.s.PGSQL.<port>`, as
    /// PostgreSQL names it), where local clients connect by default (`psql -h DIR`)
    #[arg(long, value_name = "DIR")]
    socket_dir: Option<PathBuf>,
    /// Database directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
    /// A user allowed in with SCRAM-SHA-256, as NAME:PASSWORD (may be given more than once)
    #[arg(long = "user", value_name = "NAME:PASSWORD")]
    users: Vec<String>,
    /// A file of NAME:PASSWORD lines, one user each (keep it private)
    #[arg(long, value_name = "FILE")]
    users_file: Option<PathBuf>,
    /// Let anyone connect without a password. Without users this is the default on a
    /// loopback address, and required on any other.
    #[arg(long)]
    trust: bool,
    /// TLS certificate chain (PEM); with --tls-key, clients may ask for TLS
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Connections served at once
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_connections: u32,
    /// Seconds a shutdown waits for connected clients before it closes them
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=3600))]
    shutdown_grace: u64,
}

fn auth(args: &ServeArgs) -> Result<Auth, Box<dyn std::error::Error>> {
    let mut users = match &args.users_file {
        Some(f) => Users::from_file(f)?,
        None => Users::default(),
    };
    for u in &args.users {
        users.add(u)?;
    }
    match (users.is_empty(), args.trust) {
        (false, true) => Err("--trust and --user/--users-file exclude each other".into()),
        (false, false) => Ok(Auth::Scram(users)),
        (true, true) => Ok(Auth::Trust),
        (true, false) if args.listen.ip().is_loopback() => {
            eprintln!(
                "pmdb serve: no users given: trusting connections on the loopback address \
                 (give --user or --users-file to require passwords)"
            );
            Ok(Auth::Trust)
        }
        (true, false) => Err(format!(
            "listening on {} needs users (--user NAME:PASSWORD or --users-file FILE), or \
             --trust to let anyone in",
            args.listen
        )
        .into()),
    }
}

pub fn run(args: ServeArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let options = ServerOptions {
        listen: args.listen,
        socket_dir: args.socket_dir.clone(),
        auth: auth(&args)?,
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
        max_connections: args.max_connections as usize,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        databases: None,
    };
    let dir = args.path.unwrap_or_else(default_pool_dir);
    // CREATE DATABASE makes each database in a directory of its own under the server's.
    let options = ServerOptions {
        databases: Some(DatabaseStore {
            dir: dir.join("databases"),
            options: args.damage.options(true),
        }),
        ..options
    };
    let engine = SqlEngine::open(Db::open(&dir, args.damage.options(true))?)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("pmdb-serve")
        .build()?;
    runtime.block_on(async {
        let server = Server::new(engine.sessions(), options).start().await?;
        let local = server
            .local_socket()
            .map(|p| format!(" and {}", p.display()))
            .unwrap_or_default();
        println!(
            "pmdb serve: listening on {}{local} (database {})",
            server.local_addr(),
            dir.display()
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        eprintln!("pmdb serve: shutting down");
        server.shutdown();
        server.wait().await;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    drop(runtime);
    drop(engine);
    eprintln!("pmdb serve: stopped");
    Ok(ExitCode::SUCCESS)
}
