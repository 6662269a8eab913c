//! SQLite's sqllogictest corpus against pmdb, record by record, through the
//! `sqllogictest` crate's runner: each file on a fresh database, with the label
//! `postgresql` (the corpus's PostgreSQL variants apply). Every record is counted as
//! passed, skipped, refused (pmdb gave an error where a result was expected), accepted
//! (a result where an error was expected) or wrong (a different result): pmdb may refuse
//! what it cannot do yet, but it may never answer wrongly.
//!
//! The corpus lives beside the repository (`shared/sqllogictest`, or the directory
//! `PMDB_SQLLOGICTEST_DIR` names); without it these tests say so and pass. CI runs
//! `select1.test`; the whole corpus runs with
//! `cargo test -p pmdb-sql --test sqllogictest -- --ignored --nocapture`, a part of it
//! with `PMDB_SQLLOGICTEST_ONLY=select,evidence/` (path prefixes) set;
//! `PMDB_SQLLOGICTEST_SHOW_REFUSED=1` prints each refused record with its error.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, Sessions, SqlEngine, SqlError, SqlSession};
use sqllogictest::{
    AsyncDB, Condition, DBOutput, DefaultColumnType, Record, RecordOutput, Runner, TestErrorKind,
};

/// One connection of the runner: a client session.
struct Connection(SqlSession);

#[async_trait::async_trait]
impl AsyncDB for Connection {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let out = self.0.execute(sql).await?.pop();
        Ok(match out {
            None => DBOutput::StatementComplete(0),
            Some(Output::Command(tag)) => DBOutput::StatementComplete(tag.rows().unwrap_or(0)),
            Some(
                Output::Rows { schema, batches }
                | Output::Returned {
                    schema, batches, ..
                }
                | Output::CopyOut {
                    schema, batches, ..
                },
            ) => {
                let types = schema
                    .fields()
                    .iter()
                    .map(|f| column_type(f.data_type()))
                    .collect();
                let mut rows = Vec::new();
                for b in &batches {
                    let cells: Vec<Vec<String>> =
                        b.columns().iter().map(|c| cells(c.as_ref())).collect();
                    for r in 0..b.num_rows() {
                        rows.push(cells.iter().map(|c| c[r].clone()).collect());
                    }
                }
                DBOutput::Rows { types, rows }
            }
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "postgresql"
    }
}

fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64 => DefaultColumnType::Integer,
        DataType::Float32 | DataType::Float64 | DataType::Decimal128(..) => {
            DefaultColumnType::FloatingPoint
        }
        _ => DefaultColumnType::Text,
    }
}

/// A column's values as sqllogictest writes them: NULL, integers as they are (truth
/// values as 1 and 0, as the corpus's engines give them), real numbers with three
/// decimals, `(empty)` for an empty string, unprintable bytes as `@`.
fn cells(a: &dyn Array) -> Vec<String> {
    let real = |i: usize| -> Option<f64> {
        match a.data_type() {
            DataType::Float64 => Some(a.as_primitive::<Float64Type>().value(i)),
            DataType::Float32 => Some(f64::from(a.as_primitive::<Float32Type>().value(i))),
            DataType::Decimal128(_, scale) => {
                let v = a
                    .as_primitive::<datafusion::arrow::datatypes::Decimal128Type>()
                    .value(i);
                Some(v as f64 / 10f64.powi(i32::from(*scale)))
            }
            _ => None,
        }
    };
    let formatter = ArrayFormatter::try_new(a, &FormatOptions::default()).expect("a formatter");
    (0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return "NULL".to_string();
            }
            if let Some(v) = real(i) {
                return format!("{v:.3}");
            }
            if let Some(b) = a.as_boolean_opt() {
                return if b.value(i) { "1" } else { "0" }.to_string();
            }
            let s = formatter.value(i).to_string();
            if s.is_empty() {
                return "(empty)".to_string();
            }
            s.chars()
                .map(|c| if (' '..='~').contains(&c) { c } else { '@' })
                .collect()
        })
        .collect()
}

/// Whether the values match: the corpus lists them one a line (SQLite's way), or a row
/// a line.
fn values_match(
    normalize: sqllogictest::Normalizer,
    actual: &[Vec<String>],
    expected: &[String],
) -> bool {
    let expected: Vec<String> = expected.iter().map(normalize).collect();
    let values: Vec<String> = actual.iter().flatten().map(normalize).collect();
    let rows: Vec<String> = actual.iter().map(|r| normalize(&r.join(" "))).collect();
    values == expected || rows == expected
}

/// Where the corpus is, if it is there.
fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("PMDB_SQLLOGICTEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/sqllogictest")
        });
    dir.is_dir().then_some(dir)
}

#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    passed: usize,
    skipped: usize,
    refused: usize,
    accepted: usize,
    wrong: usize,
}

/// Runs one file on a fresh database; the counts, and the first few wrong records.
/// Runs the records of the file at `path` on a thread with the stack a server's
/// connection has, as the corpus nests expressions deeper than a test thread's stack holds.
fn run_file(path: &Path) -> (Counts, Vec<String>) {
    let path = path.to_owned();
    std::thread::Builder::new()
        .stack_size(pmdb_sql::STATEMENT_STACK)
        .spawn(move || run_records(&path))
        .expect("a thread starts")
        .join()
        .expect("the file's records ran")
}

fn run_records(path: &Path) -> (Counts, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    // The default options: select5's 64 tables do not fit the small test pools.
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::default()).unwrap()).unwrap();
    let sessions: Sessions = engine.sessions();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The parser takes no comment after a condition (`onlyif sqlite # why`).
    let script: String = std::fs::read_to_string(path)
        .expect("the file reads")
        .lines()
        .map(|l| match l.split_once(" #") {
            Some((condition, _)) if l.starts_with("onlyif ") || l.starts_with("skipif ") => {
                format!("{condition}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let name = path.display().to_string();
    let records =
        sqllogictest::parse_with_name::<DefaultColumnType>(&script, name).expect("the file parses");
    let mut counts = Counts::default();
    let mut wrong = Vec::new();
    let show_refused = std::env::var_os("PMDB_SQLLOGICTEST_SHOW_REFUSED").is_some();
    rt.block_on(async {
        let mut runner = Runner::new(move || {
            let session = sessions.open();
            async move { Ok::<_, SqlError>(Connection(session)) }
        });
        runner.add_label("postgresql");
        // The corpus's results were recorded with SQLite's threshold: more than 8 values
        // are given as their hash.
        runner.with_hash_threshold(8);
        runner.with_column_validator(|_, _| true);
        runner.with_validator(values_match);
        // The conditions since the last statement or query: SQLite's `onlyif x` before
        // `halt` halts only engine x, where the parser keeps halts unconditional.
        let mut conditions: Vec<Condition> = Vec::new();
        for record in records {
            match &record {
                Record::Condition(c) => conditions.push(c.clone()),
                Record::Halt { .. } => {
                    let applies = |c: &Condition| match c {
                        Condition::OnlyIf { label } => label == "postgresql",
                        Condition::SkipIf { label } => label != "postgresql",
                    };
                    if conditions.iter().all(applies) {
                        break;
                    }
                    conditions.clear();
                    continue;
                }
                Record::Statement { .. } | Record::Query { .. } => conditions.clear(),
                _ => {}
            }
            let counted = matches!(record, Record::Statement { .. } | Record::Query { .. });
            match runner.run_async(record).await {
                Ok(RecordOutput::Nothing) if counted => counts.skipped += 1,
                Ok(_) if counted => counts.passed += 1,
                Ok(_) => {}
                Err(e) => match e.kind() {
                    TestErrorKind::Fail { .. } => {
                        counts.refused += 1;
                        if show_refused {
                            eprintln!("refused: {}", e.to_string().replace('\n', " | "));
                        }
                    }
                    TestErrorKind::Ok { .. } => counts.accepted += 1,
                    _ => {
                        counts.wrong += 1;
                        if wrong.len() < 5 {
                            wrong.push(e.to_string());
                        }
                    }
                },
            }
        }
    });
    (counts, wrong)
}

#[test]
fn select1_is_answered_whole_and_right() {
    let Some(dir) = corpus() else {
        eprintln!("the sqllogictest corpus is not there: nothing to run");
        return;
    };
    let (counts, wrong) = run_file(&dir.join("select1.test"));
    eprintln!("select1.test: {counts:?}");
    assert!(wrong.is_empty(), "wrong answers: {wrong:#?}");
    // PostgreSQL answers every record of select1: so must pmdb.
    assert_eq!(counts.refused, 0, "refused records: {counts:?}");
    assert!(counts.passed > 0, "no record passed: {counts:?}");
}

#[test]
#[ignore = "the whole corpus takes minutes: run it with --ignored"]
fn whole_corpus() {
    let Some(dir) = corpus() else {
        eprintln!("the sqllogictest corpus is not there: nothing to run");
        return;
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "test") {
                files.push(path);
            }
        }
    }
    files.sort();
    // PMDB_SQLLOGICTEST_ONLY=select,evidence/ runs the files whose path starts so.
    if let Ok(only) = std::env::var("PMDB_SQLLOGICTEST_ONLY") {
        let prefixes: Vec<&str> = only.split(',').collect();
        files.retain(|f| {
            let name = f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
            prefixes.iter().any(|p| name.starts_with(p))
        });
    }
    let mut total = Counts::default();
    println!("| file | passed | skipped | refused | accepted | wrong |");
    println!("|---|---:|---:|---:|---:|---:|");
    for f in &files {
        let (c, wrong) = run_file(f);
        let name = f.strip_prefix(&dir).unwrap().display();
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            c.passed, c.skipped, c.refused, c.accepted, c.wrong
        );
        for w in wrong {
            eprintln!("{name}: {w}");
        }
        total.passed += c.passed;
        total.skipped += c.skipped;
        total.refused += c.refused;
        total.accepted += c.accepted;
        total.wrong += c.wrong;
    }
    println!(
        "| all | {} | {} | {} | {} | {} |",
        total.passed, total.skipped, total.refused, total.accepted, total.wrong
    );
}
