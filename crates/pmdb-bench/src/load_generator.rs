//! What the external load generators (pgbench, go-tpc, sysbench) share: finding a
//! program that works, and the end of what one printed, where its error is.

use std::path::Path;
use std::process::Command;

/// Whether `program` runs and exits successfully with `arg` (its version option): a
/// program that is installed but broken counts as absent.
pub fn works(program: &Path, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
