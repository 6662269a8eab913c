//! Rows longer than one engine record: stored out of line in chunks written with the
//! row, read back whole by every path (scans, point reads, index lookups, filters,
//! transaction blocks, savepoints, table rebuilds, columnar segments, a reopen), their
//! chunks reclaimed with the row, damage to them reported; rows and statements larger
//! than a memtable committed whole, and a row larger than the pool refused with nothing
//! changed. The databases here take records of at most 4 KiB, so a few KiB already go
//! out of line.

mod common;

use common::{Fixture, rows_of, stored_chunks};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{SqlEngine, SqlSession};

const TABLE: &str = "CREATE TABLE t (id INT PRIMARY KEY, k INT, body TEXT, b BYTEA);
                     CREATE INDEX t_k ON t (k)";

fn chunks(engine: &SqlEngine, name: &str) -> usize {
    stored_chunks(engine, name).unwrap_or_else(|e| panic!("{e}"))
}

fn fixture() -> Fixture {
    let f = Fixture::new(TABLE);
    let mut s = f.session();
    f.tag(
        &mut s,
        "INSERT INTO t VALUES
            (1, 10, 'short', NULL),
            (2, 20, repeat('ab', 3000) || 'zz', CAST(repeat('q', 9000) AS BYTEA)),
            (3, 30, repeat('c', 40000) || 'end', NULL)",
    );
    f
}

#[test]
fn long_rows_are_read_whole_by_every_path() {
    let f = fixture();
    let mut s = f.session();
    assert!(chunks(&f.engine, "t") > 10);
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, length(body), right(body, 3), length(b) FROM t ORDER BY id"
        ),
        ["1|5|ort|", "2|6002|bzz|9000", "3|40003|end|"]
    );
    // A point read by key, a lookup through an index, a filter over the long column.
    assert_eq!(
        f.rows(&mut s, "SELECT length(body) FROM t WHERE id = 3"),
        ["40003"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT id, length(b) FROM t WHERE k = 20"),
        ["2|9000"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM t WHERE body LIKE '%zz'"),
        ["2"]
    );
}

#[test]
fn chunks_follow_their_row_through_updates_and_deletes() {
    let f = fixture();
    let mut s = f.session();
    // Grows out of line, shrinks back, grows within, moves to another key.
    f.tag(
        &mut s,
        "UPDATE t SET body = repeat('g', 20000) WHERE id = 1",
    );
    f.tag(&mut s, "UPDATE t SET body = 'small' WHERE id = 3");
    f.tag(&mut s, "UPDATE t SET body = body || body WHERE id = 2");
    f.tag(&mut s, "UPDATE t SET id = 7 WHERE id = 2");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, length(body), length(b) FROM t ORDER BY id"
        ),
        ["1|20000|", "3|5|", "7|12004|9000"]
    );
    let before = chunks(&f.engine, "t");
    assert!(before > 0);
    f.tag(&mut s, "DELETE FROM t WHERE id = 7");
    assert!(chunks(&f.engine, "t") < before);
    f.tag(&mut s, "TRUNCATE t");
    assert_eq!(chunks(&f.engine, "t"), 0);
}

#[test]
fn blocks_and_savepoints_see_their_own_long_rows() {
    let f = fixture();
    let mut s = f.session();
    let mut other = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(
        &mut s,
        "INSERT INTO t VALUES (4, 40, repeat('d', 9000), NULL)",
    );
    f.tag(&mut s, "SAVEPOINT a");
    f.tag(
        &mut s,
        "UPDATE t SET body = repeat('e', 15000) WHERE id = 4",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT length(body) FROM t WHERE id = 4"),
        ["15000"]
    );
    f.tag(&mut s, "ROLLBACK TO SAVEPOINT a");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT left(body, 1), length(body) FROM t WHERE k = 40"
        ),
        ["d|9000"]
    );
    assert!(
        f.rows(&mut other, "SELECT id FROM t WHERE id = 4")
            .is_empty()
    );
    f.tag(&mut s, "COMMIT");
    assert_eq!(
        f.rows(&mut other, "SELECT length(body) FROM t WHERE id = 4"),
        ["9000"]
    );
    let committed = chunks(&f.engine, "t");
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM t WHERE id = 4");
    f.tag(
        &mut s,
        "INSERT INTO t VALUES (5, 50, repeat('f', 30000), NULL)",
    );
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(chunks(&f.engine, "t"), committed);
    assert_eq!(
        f.rows(&mut s, "SELECT id, length(body) FROM t WHERE id > 3"),
        ["4|9000"]
    );
}

#[test]
fn long_rows_survive_schema_changes_segments_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let rows = |s: &mut SqlSession, sql: &str| {
        rows_of(rt.block_on(s.execute(sql)).unwrap().pop().unwrap())
    };
    let want = ["1|5|ort|x", "2|6002|bzz|x", "3|40003|end|x"];
    {
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        engine.execute(TABLE).unwrap();
        engine
            .execute(
                "INSERT INTO t VALUES
                    (1, 10, 'short', NULL),
                    (2, 20, repeat('ab', 3000) || 'zz', NULL),
                    (3, 30, repeat('c', 40000) || 'end', NULL)",
            )
            .unwrap();
        engine
            .execute(
                "ALTER TABLE t ADD COLUMN tag TEXT DEFAULT 'x';
                 ALTER TABLE t ALTER COLUMN k TYPE BIGINT;
                 ANALYZE t",
            )
            .unwrap();
        let mut s = engine.session();
        assert_eq!(
            rows(
                &mut s,
                "SELECT id, length(body), right(body, 3), tag FROM t ORDER BY id"
            ),
            want
        );
        chunks(&engine, "t");
    }
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let mut s = engine.session();
    assert_eq!(
        rows(
            &mut s,
            "SELECT id, length(body), right(body, 3), tag FROM t ORDER BY id"
        ),
        want
    );
    let id = engine
        .catalog()
        .table(&pmdb_sql::names::RelName::public("t"))
        .unwrap()
        .def()
        .id;
    engine.execute("DROP TABLE t").unwrap();
    assert!(
        !engine
            .db()
            .subtable_names()
            .contains(&format!("sql.{id}.chunks")),
        "the chunks go with the table"
    );
}

#[test]
fn damaged_chunks_are_reported_not_served() {
    let f = fixture();
    let mut s = f.session();
    let id = f
        .engine
        .catalog()
        .table(&pmdb_sql::names::RelName::public("t"))
        .unwrap()
        .def()
        .id;
    let sub = f
        .engine
        .db()
        .existing_subtable(&format!("sql.{id}.chunks"))
        .unwrap();
    let first: Vec<u8> = sub.scan::<[u8]>(..).next().unwrap().unwrap().key().to_vec();
    let mut changed = sub.get(&first).unwrap().unwrap().to_vec();
    changed[100] ^= 1;
    sub.put(&first, &changed).unwrap();
    let e = f
        .try_run(&mut s, "SELECT length(body) FROM t WHERE id = 2")
        .expect_err("a damaged chunk");
    assert_eq!(e.sqlstate(), "XX001", "{e}");
    assert!(e.to_string().contains("checksum"), "{e}");
    sub.delete(&first).unwrap();
    let e = f
        .try_run(&mut s, "SELECT body FROM t ORDER BY id")
        .expect_err("a missing chunk");
    assert!(e.to_string().contains("chunk 0 is missing"), "{e}");
    // The other rows are still served.
    assert_eq!(
        f.rows(&mut s, "SELECT length(body) FROM t WHERE id = 3"),
        ["40003"]
    );
}

#[test]
fn rows_and_statements_larger_than_a_memtable_commit_whole() {
    let f = fixture();
    let mut s = f.session();
    // The small geometry's memtables hold 128 KiB: each of these writes is larger.
    f.tag(
        &mut s,
        "INSERT INTO t VALUES (9, 90, repeat('h', 300000) || 'end', NULL)",
    );
    f.tag(
        &mut s,
        "UPDATE t SET body = repeat('u', 250000) WHERE id = 3",
    );
    f.tag(
        &mut s,
        "INSERT INTO t SELECT g, g, repeat('s', 20000), NULL FROM generate_series(100, 119) AS g",
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, length(body), right(body, 3) FROM t WHERE id IN (3, 9)"
        ),
        ["3|250000|uuu", "9|300003|end"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT count(*), sum(length(body)) FROM t WHERE id >= 100"
        ),
        ["20|400000"]
    );
    // A block whose writes are larger than a memtable rolls back whole.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM t WHERE id >= 100");
    f.tag(
        &mut s,
        "INSERT INTO t VALUES (10, 100, repeat('b', 200000), NULL)",
    );
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM t WHERE id = 10 OR id >= 100"),
        ["20"]
    );
}

#[test]
fn a_row_larger_than_the_pool_is_refused_with_nothing_changed() {
    let f = fixture();
    let mut s = f.session();
    let before = chunks(&f.engine, "t");
    // The small geometry's pool grows to 2 MiB: this row cannot be stored whole.
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO t VALUES (9, 90, repeat('h', 3000000), NULL)"
        ),
        "53100"
    );
    assert_eq!(chunks(&f.engine, "t"), before);
    assert_eq!(
        f.rows(&mut s, "SELECT id, length(body) FROM t ORDER BY id"),
        ["1|5", "2|6002", "3|40003"]
    );
    f.tag(&mut s, "INSERT INTO t VALUES (4, 40, 'after', NULL)");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM t"), ["4"]);
}
