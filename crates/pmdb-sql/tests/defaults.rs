//! Column defaults, sequences and generated keys as PostgreSQL gives them: DEFAULT
//! expressions (constants and functions, the DEFAULT keyword in VALUES and SET,
//! `INSERT … DEFAULT VALUES`, columns an INSERT leaves out, INSERT … SELECT included);
//! CREATE/DROP SEQUENCE with nextval, currval, setval and lastval; SERIAL, BIGSERIAL,
//! SMALLSERIAL and identity columns; values never handed out twice across a reopen.

mod common;

use common::{Fixture, rows_of};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

#[test]
fn defaults_fill_what_an_insert_leaves_out() {
    let f = Fixture::new(
        "CREATE TABLE t (
            k INT PRIMARY KEY,
            name VARCHAR(20) DEFAULT 'nobody',
            qty BIGINT NOT NULL DEFAULT 7 * 6,
            price DECIMAL(6,2) DEFAULT 1.5,
            note TEXT,
            made TIMESTAMP DEFAULT now()
        )",
    );
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO t (k) VALUES (1)");
    f.tag(
        &mut s,
        "INSERT INTO t VALUES (2, DEFAULT, 3, DEFAULT, 'x', DEFAULT)",
    );
    f.tag(
        &mut s,
        "INSERT INTO t (k, name) VALUES (3, 'ann'), (4, DEFAULT)",
    );
    // A row shorter than the table fills its first columns, the rest their defaults.
    f.tag(&mut s, "INSERT INTO t VALUES (5, 'bob')");
    f.tag(&mut s, "INSERT INTO t (name, k) SELECT 'sel', 6");
    let all = "SELECT k, name, qty, price, note, made IS NOT NULL FROM t ORDER BY k";
    assert_eq!(
        f.rows(&mut s, all),
        [
            "1|nobody|42|1.50||true",
            "2|nobody|3|1.50|x|true",
            "3|ann|42|1.50||true",
            "4|nobody|42|1.50||true",
            "5|bob|42|1.50||true",
            "6|sel|42|1.50||true",
        ]
    );
    // SET col = DEFAULT; a column without a default gets NULL.
    f.tag(
        &mut s,
        "UPDATE t SET qty = DEFAULT, note = DEFAULT WHERE k = 2",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT qty, note IS NULL FROM t WHERE k = 2"),
        ["42|true"]
    );
    // An explicit NULL is not the default.
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO t (k, qty) VALUES (9, NULL)"),
        "23502"
    );
}

#[test]
fn default_values_and_bad_defaults() {
    let f = Fixture::new("CREATE TABLE d (a INT DEFAULT 1, b TEXT DEFAULT 'b', c DATE)");
    let mut s = f.session();
    assert_eq!(f.tag(&mut s, "INSERT INTO d DEFAULT VALUES"), "INSERT 0 1");
    assert_eq!(f.rows(&mut s, "SELECT a, b, c FROM d"), ["1|b|"]);
    // Defaults may not name columns or hold subqueries, and must plan.
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE e (a INT, b INT DEFAULT a)"),
        "0A000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE e (a INT DEFAULT (SELECT 1))"),
        "0A000"
    );
    assert!(
        f.try_run(&mut s, "CREATE TABLE e (a INT DEFAULT no_such_function())")
            .is_err()
    );
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("e"))
            .is_none()
    );
}

#[test]
fn sequences_hand_out_values_in_order() {
    let f = Fixture::new("CREATE SEQUENCE s");
    let mut s = f.session();
    assert_eq!(
        f.sqlstate(&mut s, "SELECT currval('s')"),
        "55000",
        "currval before any nextval in the session"
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT lastval()"), "55000");
    assert_eq!(f.rows(&mut s, "SELECT nextval('s')"), ["1"]);
    assert_eq!(f.rows(&mut s, "SELECT nextval('S')"), ["2"], "names fold");
    assert_eq!(f.rows(&mut s, "SELECT currval('public.s')"), ["2"]);
    assert_eq!(f.rows(&mut s, "SELECT lastval()"), ["2"]);
    // Another session has its own currval.
    let mut other = f.session();
    assert_eq!(f.sqlstate(&mut other, "SELECT currval('s')"), "55000");
    assert_eq!(f.rows(&mut other, "SELECT nextval('s')"), ["3"]);
    assert_eq!(f.rows(&mut s, "SELECT currval('s')"), ["2"]);
    // A value for every row, even with a constant argument.
    f.tag(&mut s, "CREATE TABLE r (x INT)");
    f.tag(&mut s, "INSERT INTO r VALUES (1), (2), (3)");
    assert_eq!(
        f.rows(&mut s, "SELECT nextval('s') FROM r ORDER BY 1"),
        ["4", "5", "6"]
    );
    assert_eq!(f.rows(&mut s, "SELECT setval('s', 100)"), ["100"]);
    assert_eq!(f.rows(&mut s, "SELECT nextval('s')"), ["101"]);
    assert_eq!(f.rows(&mut s, "SELECT setval('s', 7, false)"), ["7"]);
    assert_eq!(f.rows(&mut s, "SELECT nextval('s')"), ["7"]);
    // Not transactional: a rolled-back block gives no value back.
    f.tag(&mut s, "BEGIN");
    assert_eq!(f.rows(&mut s, "SELECT nextval('s')"), ["8"]);
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(f.rows(&mut s, "SELECT nextval('s')"), ["9"]);
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('nope')"), "42P01");
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('r')"), "42809");
    assert_eq!(f.sqlstate(&mut s, "CREATE SEQUENCE r"), "42P07");
    assert_eq!(f.sqlstate(&mut s, "CREATE TABLE s (a INT)"), "42P07");
    f.tag(&mut s, "CREATE SEQUENCE IF NOT EXISTS s");
    assert_eq!(f.tag(&mut s, "DROP SEQUENCE s"), "DROP SEQUENCE");
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('s')"), "42P01");
    assert_eq!(f.sqlstate(&mut s, "SELECT lastval()"), "55000");
    f.tag(&mut s, "DROP SEQUENCE IF EXISTS s");
    assert_eq!(f.sqlstate(&mut s, "DROP SEQUENCE s"), "42P01");
}

#[test]
fn sequence_options_bounds_and_cycles() {
    let f = Fixture::new(
        "CREATE SEQUENCE up INCREMENT BY 5 MINVALUE 10 MAXVALUE 22 START WITH 12;
         CREATE SEQUENCE round AS SMALLINT MAXVALUE 3 CYCLE;
         CREATE SEQUENCE down INCREMENT -1",
    );
    let mut s = f.session();
    let next = |s: &mut _, name: &str| f.rows(s, &format!("SELECT nextval('{name}')"))[0].clone();
    assert_eq!(
        [next(&mut s, "up"), next(&mut s, "up"), next(&mut s, "up")],
        ["12", "17", "22"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('up')"), "2200H");
    let cycled: Vec<String> = (0..5).map(|_| next(&mut s, "round")).collect();
    assert_eq!(cycled, ["1", "2", "3", "1", "2"]);
    assert_eq!([next(&mut s, "down"), next(&mut s, "down")], ["-1", "-2"]);
    assert_eq!(f.sqlstate(&mut s, "SELECT setval('up', 5)"), "22003");
    for bad in [
        "CREATE SEQUENCE z INCREMENT BY 0",
        "CREATE SEQUENCE z MINVALUE 5 MAXVALUE 5",
        "CREATE SEQUENCE z AS INT MAXVALUE 3000000000",
        "CREATE SEQUENCE z START WITH 0",
        "CREATE SEQUENCE z AS TEXT",
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), "22023", "{bad}");
    }
}

#[test]
fn serial_columns_take_their_sequences_values() {
    let f = Fixture::new(
        "CREATE TABLE users (id SERIAL PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE events (id BIGSERIAL PRIMARY KEY, n SMALLSERIAL, what TEXT)",
    );
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO users (name) VALUES ('ann'), ('bob')");
    assert_eq!(f.rows(&mut s, "SELECT currval('users_id_seq')"), ["2"]);
    f.tag(&mut s, "INSERT INTO users VALUES (DEFAULT, 'cy')");
    // An explicit value goes in as given (BY DEFAULT), and the sequence does not move.
    f.tag(&mut s, "INSERT INTO users VALUES (10, 'dee')");
    f.tag(&mut s, "INSERT INTO users (name) SELECT 'eve'");
    assert_eq!(
        f.rows(&mut s, "SELECT id, name FROM users ORDER BY id"),
        ["1|ann", "2|bob", "3|cy", "4|eve", "10|dee"]
    );
    let out = f.run(
        &mut s,
        "INSERT INTO users (name) VALUES ('fay') RETURNING id",
    );
    assert_eq!(rows_of(out), ["5"]);
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT pg_get_serial_sequence('users', 'id'), pg_get_serial_sequence('users', 'name')"
        ),
        ["public.users_id_seq|"]
    );
    f.tag(&mut s, "INSERT INTO events (what) VALUES ('a'), ('b')");
    assert_eq!(
        f.rows(&mut s, "SELECT id, n, what FROM events ORDER BY id"),
        ["1|1|a", "2|2|b"]
    );
    // The sequence belongs to the column: it goes with the table, not alone.
    assert_eq!(f.sqlstate(&mut s, "DROP SEQUENCE users_id_seq"), "2BP01");
    f.tag(&mut s, "DROP TABLE users");
    assert!(
        f.engine
            .catalog()
            .sequence(&pmdb_sql::names::RelName::public("users_id_seq"))
            .is_none()
    );
    // A name taken by another relation: the serial's sequence takes the next free one.
    f.tag(&mut s, "CREATE SEQUENCE users_id_seq");
    f.tag(&mut s, "CREATE TABLE users (id SERIAL, name TEXT)");
    assert_eq!(
        f.rows(&mut s, "SELECT pg_get_serial_sequence('users', 'id')"),
        ["public.users_id_seq1"]
    );
    f.tag(&mut s, "INSERT INTO users (name) VALUES ('x')");
    assert_eq!(f.rows(&mut s, "SELECT id FROM users"), ["1"]);
}

#[test]
fn identity_columns() {
    let f = Fixture::new(
        "CREATE TABLE a (id INT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT);
         CREATE TABLE b (id BIGINT GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY 10 START WITH 100), v TEXT)",
    );
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO a (v) VALUES ('x'), ('y')");
    f.tag(&mut s, "INSERT INTO a VALUES (DEFAULT, 'z')");
    assert_eq!(
        f.rows(&mut s, "SELECT id, v FROM a ORDER BY id"),
        ["1|x", "2|y", "3|z"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO a VALUES (7, 'no')"),
        "428C9"
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO a (id, v) SELECT 8, 'no'"),
        "428C9"
    );
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE a SET id = 9 WHERE id = 1"),
        "428C9"
    );
    f.tag(&mut s, "UPDATE a SET id = DEFAULT WHERE id = 1");
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM a ORDER BY id"),
        ["2", "3", "4"]
    );
    f.tag(&mut s, "INSERT INTO b (v) VALUES ('p')");
    f.tag(&mut s, "INSERT INTO b VALUES (5, 'q')");
    f.tag(&mut s, "INSERT INTO b (v) VALUES ('r')");
    assert_eq!(
        f.rows(&mut s, "SELECT id, v FROM b ORDER BY id"),
        ["5|q", "100|p", "110|r"]
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "CREATE TABLE c (id TEXT GENERATED ALWAYS AS IDENTITY)"
        ),
        "22023"
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "CREATE TABLE c (id INT GENERATED ALWAYS AS (1 + 1) STORED)"
        ),
        "0A000"
    );
}

/// Prepared statements with parameters take the defaults too, through the fast path
/// and the general one alike.
#[test]
fn prepared_inserts_take_defaults() {
    let f = Fixture::new("CREATE TABLE p (id SERIAL PRIMARY KEY, name TEXT, n INT DEFAULT 5)");
    let mut s = f.session();
    let insert =
        f.rt.block_on(
            s.prepare(
                pmdb_sql::parse("INSERT INTO p (name) VALUES ($1)")
                    .unwrap()
                    .pop_front()
                    .unwrap(),
            ),
        )
        .unwrap();
    for name in ["a", "b", "c"] {
        f.rt.block_on(s.run_prepared(
            &insert,
            vec![datafusion::common::ScalarValue::Utf8(Some(name.into()))],
        ))
        .unwrap();
    }
    assert_eq!(
        f.rows(&mut s, "SELECT id, name, n FROM p ORDER BY id"),
        ["1|a|5", "2|b|5", "3|c|5"]
    );
    assert_eq!(f.rows(&mut s, "SELECT currval('p_id_seq')"), ["3"]);
}

/// After a reopen a sequence goes on past every value it handed out (some values are
/// skipped, as in PostgreSQL), and the tables keep their defaults.
#[test]
fn sequences_go_on_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let mut last = 0;
    for round in 0..3 {
        let engine = open();
        if round == 0 {
            engine
                .execute("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, v INT DEFAULT 3)")
                .unwrap();
        }
        for _ in 0..5 {
            engine.execute("INSERT INTO t (v) VALUES (1)").unwrap();
        }
        let out = engine.execute("SELECT id FROM t ORDER BY id").unwrap();
        let ids: Vec<i64> = rows_of(out.into_iter().next().unwrap())
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        assert_eq!(ids.len(), 5 * (round + 1));
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids[ids.len() - 5] > last, "no value handed out twice");
        last = *ids.last().unwrap();
    }
}

/// `INSERT … SELECT … FROM (VALUES …)` with more columns in the VALUES list than the
/// INSERT names (SQLAlchemy's many-row INSERT), with RETURNING, prepared or not: the
/// query runs on its own, the defaults fill the rest.
#[test]
fn inserts_from_queries_over_values_lists() {
    let f =
        Fixture::new("CREATE TABLE b (id SERIAL PRIMARY KEY, title TEXT, pages INT DEFAULT 100)");
    let mut s = f.session();
    let many = "INSERT INTO b (title) SELECT p0::VARCHAR FROM (VALUES ('one', 0), ('two', 1)) \
                AS imp_sen(p0, sen_counter) ORDER BY sen_counter RETURNING b.id, b.pages";
    assert_eq!(rows_of(f.run(&mut s, many)), ["1|100", "2|100"]);
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO b (pages, title) SELECT 5, 'x' UNION ALL SELECT 6, 'y'"
        ),
        "INSERT 0 2"
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO b (title) SELECT 'a', 'b'"),
        "42601"
    );
    let prepared = f
        .rt
        .block_on(s.prepare(
            pmdb_sql::parse(
                "INSERT INTO b (title, pages) SELECT p0::VARCHAR, p1::INTEGER FROM (VALUES ($1, $2, 0), ($3, $4, 1)) \
                 AS imp_sen(p0, p1, sen_counter) ORDER BY sen_counter RETURNING b.id",
            )
            .unwrap()
            .pop_front()
            .unwrap(),
        ))
        .unwrap();
    use datafusion::common::ScalarValue::{Int64, Utf8};
    let out =
        f.rt.block_on(s.run_prepared(
            &prepared,
            vec![
                Utf8(Some("p".into())),
                Int64(Some(1)),
                Utf8(Some("q".into())),
                Int64(Some(2)),
            ],
        ))
        .unwrap();
    assert_eq!(rows_of(out), ["5", "6"]);
    // UNION ALL gives its rows in no set order, so the ids of x and y may be either way.
    assert_eq!(
        f.rows(&mut s, "SELECT title, pages FROM b ORDER BY title"),
        ["one|100", "p|1", "q|2", "two|100", "x|5", "y|6"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM b WHERE title IN ('p', 'q') ORDER BY id"
        ),
        ["5", "6"]
    );
}

/// A sequence a column's default takes values from stays while the default does, as in
/// PostgreSQL (2BP01).
#[test]
fn a_sequence_in_use_is_not_dropped() {
    let f = Fixture::new(
        "CREATE SEQUENCE Shared; CREATE TABLE t (a INT DEFAULT nextval('public.\"shared\"'), b INT)",
    );
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO t (b) VALUES (1)");
    assert_eq!(f.rows(&mut s, "SELECT a FROM t"), ["1"]);
    assert_eq!(f.sqlstate(&mut s, "DROP SEQUENCE shared"), "2BP01");
    f.tag(&mut s, "ALTER TABLE t ALTER COLUMN a DROP DEFAULT");
    assert_eq!(f.tag(&mut s, "DROP SEQUENCE shared"), "DROP SEQUENCE");
}
