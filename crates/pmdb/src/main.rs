//! pmdb: the command-line entry point — pool administration and benchmarks.

#![forbid(unsafe_code)]

mod bench_cmd;
mod paths;
mod pool_cmd;
mod size;
mod stats_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Bench(bench_cmd::BenchArgs),
    /// Open a database (running recovery) and report what recovery did and what it holds.
    Stats(stats_cmd::StatsArgs),
}

fn main() -> ExitCode {
    // RUST_LOG=info shows the engine's recovery line on every open.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Pool(cmd) => pool_cmd::run(cmd),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Stats(args) => stats_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pmdb: {e}");
            ExitCode::from(2)
        }
    }
}
