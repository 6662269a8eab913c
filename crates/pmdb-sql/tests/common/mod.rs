//! What the SQL tests share: a database in a temporary directory with client sessions
//! on it, statements started without waiting for them (they may wait for row locks),
//! and results as one string per row.

#![allow(dead_code)]

use std::time::Duration;

use datafusion::arrow::util::pretty::pretty_format_batches;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlError, SqlSession};

/// A result's rows, one string per row, columns joined by '|'.
pub fn rows_of(out: Output) -> Vec<String> {
    match out {
        Output::Rows { batches, .. } | Output::Returned { batches, .. } => {
            pretty_format_batches(&batches)
                .unwrap()
                .to_string()
                .lines()
                .filter(|l| l.starts_with('|'))
                .skip(1)
                .map(|l| {
                    l.trim_matches('|')
                        .split('|')
                        .map(str::trim)
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect()
        }
        Output::Command(c) => panic!("a command ({c}), not rows"),
        Output::CopyOut { .. } => panic!("COPY data, not rows"),
    }
}

/// A result as a string: its columns (names, types, nullability) and its rows as a
/// table, or the command, or the error with its SQLSTATE.
pub fn shown(out: Result<Output, SqlError>) -> String {
    match out {
        Ok(Output::Rows { schema, batches }) => format!(
            "{:?}\n{}",
            schema
                .fields()
                .iter()
                .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
                .collect::<Vec<_>>(),
            pretty_format_batches(&batches).unwrap()
        ),
        Ok(other) => format!("{other:?}"),
        Err(e) => format!("error {} {e}", e.sqlstate()),
    }
}

pub type Started = tokio::task::JoinHandle<(SqlSession, Result<Output, SqlError>)>;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub rt: tokio::runtime::Runtime,
    pub engine: SqlEngine,
}

impl Fixture {
    pub fn new(setup: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        engine.execute(setup).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        Fixture {
            _dir: dir,
            rt,
            engine,
        }
    }

    pub fn session(&self) -> SqlSession {
        self.engine.session()
    }

    pub fn try_run(&self, s: &mut SqlSession, sql: &str) -> Result<Output, SqlError> {
        self.rt
            .block_on(s.execute(sql))
            .map(|mut out| out.pop().expect("a statement"))
    }

    pub fn run(&self, s: &mut SqlSession, sql: &str) -> Output {
        self.try_run(s, sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn tag(&self, s: &mut SqlSession, sql: &str) -> String {
        match self.run(s, sql) {
            Output::Command(tag) => tag.to_string(),
            Output::Rows { .. } | Output::Returned { .. } | Output::CopyOut { .. } => {
                panic!("{sql}: rows, not a command")
            }
        }
    }

    /// The rows of a query, one string per row, columns joined by '|'.
    pub fn rows(&self, s: &mut SqlSession, sql: &str) -> Vec<String> {
        rows_of(self.run(s, sql))
    }

    /// Starts `sql` in session `s` without waiting for it: it may wait for a row lock
    /// another session holds.
    pub fn start(&self, mut s: SqlSession, sql: &'static str) -> Started {
        self.rt.spawn(async move {
            let out = s
                .execute(sql)
                .await
                .map(|mut o| o.pop().expect("a statement"));
            (s, out)
        })
    }

    /// Asserts that a started statement is still waiting.
    pub fn still_waiting<T>(&self, started: &tokio::task::JoinHandle<T>) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!started.is_finished(), "the statement waits for a row lock");
    }

    pub fn finish(&self, started: Started) -> (SqlSession, Result<Output, SqlError>) {
        self.rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), started).await })
            .expect("the statement ends")
            .expect("the statement's task")
    }

    pub fn sqlstate(&self, s: &mut SqlSession, sql: &str) -> String {
        self.try_run(s, sql).expect_err(sql).sqlstate().to_owned()
    }
}

/// How many chunks of rows stored out of line table `name` holds, checked against its
/// rows: every chunk stored belongs to a stored row's reference, and every chunk a
/// reference names is stored.
pub fn stored_chunks(engine: &SqlEngine, name: &str) -> Result<usize, String> {
    let id = engine
        .catalog()
        .table(&pmdb_sql::names::RelName::public(name))
        .ok_or_else(|| format!("no table {name}"))?
        .def()
        .id;
    let db = engine.db();
    let mut named = std::collections::BTreeSet::new();
    let rows = db
        .existing_subtable(&format!("sql.{id}"))
        .map_err(|e| e.to_string())?;
    for e in rows.scan::<[u8]>(..) {
        let e = e.map_err(|e| e.to_string())?;
        let v = e.value();
        if v.starts_with(&[0xff, 0xff]) {
            // docs/format.md, "Row stored out of line": length u64, chunk size u32.
            let len = u64::from_le_bytes(v[2..10].try_into().unwrap());
            let size = u32::from_le_bytes(v[10..14].try_into().unwrap()) as u64;
            for n in 0..len.div_ceil(size) as u32 {
                named.insert([e.key(), &n.to_be_bytes()].concat());
            }
        }
    }
    let mut stored = std::collections::BTreeSet::new();
    if let Ok(sub) = db.existing_subtable(&format!("sql.{id}.chunks")) {
        for e in sub.scan::<[u8]>(..) {
            stored.insert(e.map_err(|e| e.to_string())?.key().to_vec());
        }
    }
    if stored != named {
        return Err(format!(
            "table {name} stores {} chunks, its rows name {} ({} stored that no row names)",
            stored.len(),
            named.len(),
            stored.difference(&named).count()
        ));
    }
    Ok(stored.len())
}

/// A database `fill` fills, whose `query` must answer the same from stored rows, from
/// the columnar segments `ANALYZE table` builds, and after a reopen: the rows, and the
/// reopened engine (with the directory that holds it) for more questions.
pub fn same_from_segments_and_after_reopen(
    fill: impl FnOnce(&SqlEngine),
    table: &str,
    query: &str,
) -> (Vec<String>, SqlEngine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let answer = |engine: &SqlEngine| rows_of(engine.execute(query).unwrap().pop().unwrap());
    let before = {
        let engine = open();
        fill(&engine);
        let before = answer(&engine);
        engine.execute(&format!("ANALYZE {table}")).unwrap();
        assert_eq!(answer(&engine), before, "from columnar segments");
        before
    };
    let engine = open();
    assert_eq!(answer(&engine), before, "after a reopen");
    (before, engine, dir)
}
