//! Temporary relations as PostgreSQL has them: a session's own (another session does
//! not see them), found before `public`'s by an unqualified name, named `pg_temp.name`
//! too, with their indexes, constraints and views; dropped by DISCARD ALL, when the
//! session closes, and at the next open when a session left them.

mod common;

use common::Fixture;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;
use pmdb_sql::names::RelName;

#[test]
fn a_temporary_table_is_the_sessions_own_and_comes_first() {
    let f = Fixture::new("CREATE TABLE t (a INT); INSERT INTO t VALUES (1);");
    let (mut s, mut other) = (f.session(), f.session());
    f.tag(&mut s, "CREATE TEMP TABLE t (a INT, b TEXT)");
    f.tag(&mut s, "INSERT INTO t VALUES (2, 'x')");
    assert_eq!(f.rows(&mut s, "SELECT a, b FROM t"), ["2|x"]);
    assert_eq!(f.rows(&mut s, "SELECT a, b FROM pg_temp.t"), ["2|x"]);
    assert_eq!(f.rows(&mut s, "SELECT a FROM public.t"), ["1"]);
    // Another session sees public's table only.
    assert_eq!(f.rows(&mut other, "SELECT a FROM t"), ["1"]);
    // Writes, RETURNING, joins and COPY find the temporary table.
    assert_eq!(f.rows(&mut s, "UPDATE t SET b = 'y' RETURNING b"), ["y"]);
    assert_eq!(
        f.rows(&mut s, "SELECT p.a, t.a FROM public.t p, t"),
        ["1|2"]
    );
    f.tag(&mut s, "DELETE FROM t");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM t"), ["0"]);
    // DROP drops the temporary one; the name then finds public's again.
    f.tag(&mut s, "DROP TABLE t");
    assert_eq!(f.rows(&mut s, "SELECT a FROM t"), ["1"]);
    // Only the session's temporary schema takes a temporary relation.
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TEMP TABLE public.x (a INT)"),
        "42P16"
    );
}

#[test]
fn temporary_tables_have_keys_indexes_and_views() {
    let f = Fixture::new("");
    let mut s = f.session();
    f.tag(
        &mut s,
        "CREATE TEMPORARY TABLE user_tmp (id INT NOT NULL, name VARCHAR(50), foo INT, \
         CONSTRAINT user_tmp_pk PRIMARY KEY (id), CONSTRAINT user_tmp_uq UNIQUE (name))",
    );
    f.tag(&mut s, "CREATE INDEX user_tmp_ix ON user_tmp (foo)");
    f.tag(
        &mut s,
        "CREATE TEMPORARY VIEW user_tmp_v AS SELECT * FROM user_tmp",
    );
    f.tag(&mut s, "INSERT INTO user_tmp VALUES (1, 'n', 3)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO user_tmp VALUES (1, 'm', 3)"),
        "23505"
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO user_tmp VALUES (2, 'n', 3)"),
        "23505"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT name FROM user_tmp_v WHERE foo = 3"),
        ["n"]
    );
    // A view over a temporary table is temporary too.
    f.tag(&mut s, "CREATE VIEW names AS SELECT name FROM user_tmp");
    let temp = f
        .engine
        .catalog()
        .schemas()
        .into_iter()
        .find(|n| pmdb_sql::is_temporary(&n.name))
        .expect("a temporary schema");
    for name in ["user_tmp", "user_tmp_v", "names"] {
        assert!(
            f.engine
                .catalog()
                .names_a_relation(&RelName::new(temp.name.clone(), name)),
            "{name}"
        );
    }
    assert!(f.engine.catalog().view(&RelName::public("names")).is_none());
    // The primary key keeps the name it was given.
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE user_tmp DROP CONSTRAINT user_tmp_pkey"),
        "42704"
    );
    f.tag(&mut s, "DROP VIEW user_tmp_v");
    f.tag(&mut s, "DROP VIEW names");
    f.tag(&mut s, "ALTER TABLE user_tmp DROP CONSTRAINT user_tmp_pk");
}

#[test]
fn temporary_relations_go_with_their_session() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let sql = open();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut s = sql.session();
    let run = |s: &mut pmdb_sql::SqlSession, q: &str| rt.block_on(s.execute(q)).unwrap();
    let temporary = |sql: &SqlEngine| {
        sql.catalog()
            .schemas()
            .iter()
            .filter(|n| pmdb_sql::is_temporary(&n.name))
            .count()
    };
    run(
        &mut s,
        "CREATE TEMP TABLE a (x INT); INSERT INTO a VALUES (1)",
    );
    assert_eq!(temporary(&sql), 1);
    // DISCARD ALL drops them.
    rt.block_on(s.discard_all()).unwrap();
    assert_eq!(temporary(&sql), 0);
    assert!(rt.block_on(s.execute("SELECT * FROM a")).is_err());
    // So does closing the session, an open block rolled back first.
    run(
        &mut s,
        "CREATE TEMP TABLE a (x INT); BEGIN; INSERT INTO a VALUES (2)",
    );
    rt.block_on(s.close()).unwrap();
    assert_eq!(temporary(&sql), 0);
    // A session that ends without closing leaves them to the next open.
    let mut left = sql.session();
    run(
        &mut left,
        "CREATE TEMP TABLE b (x INT) ; CREATE TEMP VIEW bv AS SELECT x FROM b",
    );
    drop(left);
    drop(s);
    assert_eq!(temporary(&sql), 1);
    drop(sql);
    let sql = open();
    assert_eq!(temporary(&sql), 0);
    assert!(sql.execute("SELECT * FROM b").is_err());
}
