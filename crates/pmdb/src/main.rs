//! pmdb: the command-line entry point — pool administration, inspection, SQL and
//! benchmarks.

#![forbid(unsafe_code)]

mod bench_cmd;
#[cfg(feature = "sql")]
mod bench_pgbench;
#[cfg(feature = "sql")]
mod bench_server;
#[cfg(feature = "sql")]
mod bench_sysbench;
#[cfg(feature = "sql")]
mod bench_tpcc;
#[cfg(feature = "sql")]
mod bench_tpch;
mod compact_cmd;
mod damage_args;
mod input;
mod paths;
mod pool_cmd;
#[cfg(feature = "sql")]
mod serve_cmd;
#[cfg(feature = "sql")]
mod sql_cmd;
#[cfg(feature = "sql")]
mod sql_table;
mod sst_cmd;
mod stats_cmd;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "pmdb",
    version,
    about = "pmdb: a transactional storage engine on persistent memory"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create, inspect and check pools.
    #[command(subcommand)]
    Pool(pool_cmd::PoolCommand),
    /// Run benchmarks (with no arguments: the quick YCSB suite against the peers).
    Bench(Box<bench_cmd::BenchArgs>),
    /// Open a database (running recovery) and report what recovery did and what it holds.
    Stats(stats_cmd::StatsArgs),
    /// Merge and compact everything below the active memtables into SST files.
    Compact(compact_cmd::CompactArgs),
    /// SQL: an interactive shell, or run statements (-c) or a file (-f).
    #[cfg(feature = "sql")]
    Sql(sql_cmd::SqlArgs),
    /// Serve SQL over the PostgreSQL wire protocol (psql, drivers, pgbench).
    #[cfg(feature = "sql")]
    Serve(serve_cmd::ServeArgs),
    /// Inspect SST files.
    #[command(subcommand)]
    Sst(sst_cmd::SstCommand),
}

/// Parses the command line. Option values may start with a hyphen, so that `--records -5`
/// or `--zone-size -4K` reaches the option's parser and its range message instead of
/// being taken for an unknown flag.
fn parse() -> Result<Cli, clap::Error> {
    fn hyphens_are_values(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            if a.get_action().takes_values() {
                a.allow_hyphen_values(true)
            } else {
                a
            }
        })
        .mut_subcommands(hyphens_are_values)
    }
    let matches = hyphens_are_values(Cli::command()).try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

fn main() -> ExitCode {
    // RUST_LOG=info shows the engine's recovery line on every open.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = match parse() {
        Ok(cli) => cli,
        // A value refused by its parser is one sentence naming the option and what it
        // accepts; clap's usage hints below it would only bury that.
        Err(e) if e.kind() == ErrorKind::ValueValidation => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("pmdb: {}", first.strip_prefix("error: ").unwrap_or(first));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Pool(cmd) => pool_cmd::run(cmd),
        Command::Bench(args) => bench_cmd::run(*args),
        Command::Stats(args) => stats_cmd::run(args),
        Command::Compact(args) => compact_cmd::run(args),
        #[cfg(feature = "sql")]
        Command::Sql(args) => sql_cmd::run(args),
        #[cfg(feature = "sql")]
        Command::Serve(args) => serve_cmd::run(args),
        Command::Sst(cmd) => sst_cmd::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pmdb: {e}");
            ExitCode::from(2)
        }
    }
}
