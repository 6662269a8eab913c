//! Crash simulation of rows stored out of line: a script of inserts, updates that move
//! rows in and out of line and between keys, and deletes, crashed at its crash points.
//! After recovery every row reads whole and as the last statement acknowledged for it
//! left it (or as the statement in flight did), and the chunks stored are exactly those
//! the rows name: none lost, none left behind.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{rows_of, stored_chunks};
use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use pmdb_sql::SqlEngine;

fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

/// A row as a statement left it: (version, body length), or gone.
type State = Option<(u32, usize)>;

/// The body of version `v`: a letter of its own, `len` times.
fn body(v: u32, len: usize) -> String {
    char::from(b'a' + (v % 26) as u8).to_string().repeat(len)
}

/// What statement `i` of the script does: the row it changes and how it leaves it.
fn step(i: u32, rows: &BTreeMap<u32, (u32, usize)>) -> (String, Vec<(u32, State)>) {
    let mix = i.wrapping_mul(2_654_435_761).rotate_left(7);
    let len = [10, 900, 5000, 13_000, 21_000][(mix % 5) as usize];
    let id = (mix >> 8) % 12;
    match (rows.get(&id), mix % 7) {
        (None, _) => (
            format!("INSERT INTO t VALUES ({id}, {i}, '{}')", body(i, len)),
            vec![(id, Some((i, len)))],
        ),
        (Some(_), 0) => (format!("DELETE FROM t WHERE id = {id}"), vec![(id, None)]),
        (Some(&(v, old)), 1) if !rows.contains_key(&(id + 100)) => (
            // Moves the row to another key, unchanged.
            format!("UPDATE t SET id = id + 100 WHERE id = {id}"),
            vec![(id, None), (id + 100, Some((v, old)))],
        ),
        (Some(_), _) => (
            format!(
                "UPDATE t SET v = {i}, body = '{}' WHERE id = {id}",
                body(i, len)
            ),
            vec![(id, Some((i, len)))],
        ),
    }
}

#[test]
fn long_rows_are_whole_or_absent_after_a_crash() {
    let report = CrashTest::new(11)
        .options(options().pool)
        .max_points(300)
        .mixes(3)
        .run(
            |pool: &Arc<Pool>, acks: &mut AckLog<Vec<(u32, State)>>| {
                let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
                let sql = SqlEngine::open(db).unwrap();
                sql.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, body TEXT)")
                    .unwrap();
                acks.ack(vec![]);
                let mut rows = BTreeMap::new();
                for i in 0..60 {
                    let (statement, effect) = step(i, &rows);
                    sql.execute(&statement)
                        .unwrap_or_else(|e| panic!("{statement}: {e}"));
                    for (id, state) in &effect {
                        match state {
                            Some(s) => rows.insert(*id, *s),
                            None => rows.remove(id),
                        };
                    }
                    acks.ack(effect);
                }
            },
            |pool: &Arc<Pool>,
             acked: &[&Vec<(u32, State)>],
             in_flight: Option<&Vec<(u32, State)>>| {
                let db = Db::open_pool(Arc::clone(pool), options())
                    .map_err(|e| format!("open after crash: {e}"))?;
                let sql = SqlEngine::open(db).map_err(|e| format!("SQL open after crash: {e}"))?;
                if sql
                    .catalog()
                    .table(&pmdb_sql::names::RelName::public("t"))
                    .is_none()
                {
                    return if acked.is_empty() {
                        Ok(())
                    } else {
                        Err("table t is gone".into())
                    };
                }
                let mut want: BTreeMap<u32, (u32, usize)> = BTreeMap::new();
                let apply = |want: &mut BTreeMap<u32, (u32, usize)>, effect: &[(u32, State)]| {
                    for (id, state) in effect {
                        match state {
                            Some(s) => want.insert(*id, *s),
                            None => want.remove(id),
                        };
                    }
                };
                for effect in acked {
                    apply(&mut want, effect);
                }
                let mut after = want.clone();
                if let Some(effect) = in_flight {
                    apply(&mut after, effect);
                }
                let out = sql
                    .execute("SELECT id, v, body FROM t ORDER BY id")
                    .map_err(|e| format!("reading after crash: {e}"))?
                    .pop()
                    .expect("a result");
                let mut found = BTreeMap::new();
                for row in rows_of(out) {
                    let mut parts = row.splitn(3, '|');
                    let id: u32 = parts.next().unwrap().parse().unwrap();
                    let v: u32 = parts.next().unwrap().parse().unwrap();
                    let b = parts.next().unwrap_or("");
                    if b != body(v, b.len()) {
                        return Err(format!("row {id} holds a body not of version {v}"));
                    }
                    found.insert(id, (v, b.len()));
                }
                if found != want && found != after {
                    return Err(format!(
                        "rows {found:?}, where the acknowledged statements left {want:?}"
                    ));
                }
                stored_chunks(&sql, "t").map(drop)
            },
        )
        .unwrap_or_else(|f| panic!("{f}"));
    assert!(report.images >= 300, "{} crash images", report.images);
}
