//! The drivers' and ORMs' own test suites against a fresh `pmdb serve`, through
//! `scripts/compat/driver_suites.py`: a test that fails and is not in its suite's list of
//! known failures (`scripts/compat/<suite>-failures.txt`) is a regression. Skipped when
//! Python lacks pytest or the suite's driver, when the suite's source cannot be fetched,
//! or when the installed driver is not the one the list was recorded with.
//!
//! SQLAlchemy's suite takes minutes: by default a quarter of its test classes run (the
//! same ones every time); `PMDB_DRIVER_SUITES=full` runs all of it.

use std::process::Command;

/// Runs `suite`, whose driver is the Python module `driver`: the share `1/share` of its
/// test classes, or all of them when `PMDB_DRIVER_SUITES=full`.
fn suite_has_no_regression(suite: &str, driver: &str, share: u32) {
    let has = Command::new("python3")
        .args(["-c", &format!("import pytest, {driver}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("python3 with pytest and {driver} is not installed: skipped");
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/compat/driver_suites.py"
    );
    let full = std::env::var("PMDB_DRIVER_SUITES").is_ok_and(|v| v == "full");
    let share = if full { 1 } else { share };
    let out = Command::new("python3")
        .args([script, suite, "--pmdb", env!("CARGO_BIN_EXE_pmdb")])
        .args(["--share", &share.to_string()])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => eprintln!("{report}"),
        Some(2 | 3) => eprintln!("{report}skipped"),
        _ => panic!("{report}"),
    }
}

/// SQLAlchemy's dialect compliance suite, the one every third-party dialect runs.
#[test]
fn the_sqlalchemy_dialect_suite_has_no_regression() {
    suite_has_no_regression("sqlalchemy", "psycopg", 4);
}

/// asyncpg's own test suite.
#[test]
fn the_asyncpg_suite_has_no_regression() {
    suite_has_no_regression("asyncpg", "asyncpg", 1);
}
