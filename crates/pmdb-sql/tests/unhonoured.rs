//! Clauses the parser accepts but pmdb would not honour are refused (0A000, or 42601
//! where PostgreSQL's grammar has no such form), as plain statements and when prepared;
//! nothing they name is done.

mod common;

use common::rows_of;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

#[test]
fn clauses_nothing_honours_are_refused_before_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    engine
        .execute(
            "CREATE TABLE t (id INT PRIMARY KEY, g INT, x BIGINT);
             INSERT INTO t VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30);",
        )
        .unwrap();
    let refused = [
        ("SELECT * FROM t TABLESAMPLE BERNOULLI (10)", "0A000"),
        (
            "SELECT * FROM generate_series(1, 3) WITH ORDINALITY",
            "0A000",
        ),
        (
            "SELECT sum(x) OVER (w ORDER BY id) FROM t WINDOW w AS (PARTITION BY g)",
            "0A000",
        ),
        (
            "SELECT * FROM t START WITH id = 1 CONNECT BY PRIOR id = g",
            "0A000",
        ),
        ("SELECT id INTO t2 FROM t", "0A000"),
        ("EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM t", "0A000"),
        ("PREPARE p AS SELECT * FROM t", "0A000"),
        (
            "CREATE FUNCTION one() RETURNS INT AS 'SELECT 1' LANGUAGE sql",
            "0A000",
        ),
        ("DROP FUNCTION one", "0A000"),
        ("CREATE SCHEMA s AUTHORIZATION someone", "0A000"),
        ("CREATE SCHEMA AUTHORIZATION someone", "0A000"),
        ("CREATE TABLE c (b INT) INHERITS (t)", "0A000"),
        ("CREATE TABLE m (a INT) PARTITION BY RANGE (a)", "0A000"),
        ("CREATE TABLE l (LIKE t)", "0A000"),
        ("TRUNCATE t PARTITION (p1)", "0A000"),
        ("TRUNCATE t RESTART IDENTITY", "0A000"),
        ("SELECT * FROM t a JOIN t b", "42601"),
        ("SELECT * FROM t a LEFT JOIN t b", "42601"),
        ("SELECT * FROM t FOR XML RAW", "0A000"),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = engine.session();
    for (sql, sqlstate) in refused {
        let e = engine.execute(sql).expect_err(sql);
        assert_eq!(e.sqlstate(), sqlstate, "{sql}: {e}");
        // Prepared, the same.
        if let Ok(mut statements) = pmdb_sql::parse(sql) {
            let statement = statements.pop_front().unwrap();
            let e = rt.block_on(session.prepare(statement)).expect_err(sql);
            assert_eq!(e.sqlstate(), sqlstate, "prepared {sql}: {e}");
        }
    }
    // TRUNCATE … PARTITION and RESTART IDENTITY left the table whole; no table or schema
    // was made.
    let count = engine.execute("SELECT count(*) FROM t").unwrap().pop();
    assert_eq!(rows_of(count.unwrap()), ["3"]);
    for name in ["t2", "c", "m", "l"] {
        assert!(
            engine
                .catalog()
                .table(&pmdb_sql::names::RelName::public(name))
                .is_none(),
            "{name} was created"
        );
    }
    // Forms that mean what they say still run.
    for sql in [
        "SELECT * FROM t CROSS JOIN t u",
        "SELECT * FROM t a JOIN t b ON a.id = b.g",
        "SELECT sum(x) OVER (PARTITION BY g ORDER BY id) FROM t",
        "EXPLAIN SELECT * FROM t",
        "TRUNCATE t",
    ] {
        engine.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}
