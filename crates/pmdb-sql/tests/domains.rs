//! Domains as PostgreSQL has them: CREATE DOMAIN in PostgreSQL's forms (AS optional,
//! NOT NULL, NULL, DEFAULT, named and unnamed CHECKs), over a type, an enum type or
//! another domain (whose rules it keeps); values cast to a domain and values written to
//! a column of one checked by the same rules, with PostgreSQL's SQLSTATEs and messages;
//! a column's default taken from its domain; DROP DOMAIN refused while something depends
//! on it; what pmdb cannot honour refused (0A000); domains kept across a reopen, rolled
//! back with their block and dropped with their schema.

mod common;

use common::{Fixture, rows_of, shown};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const DOMAINS: &str = "CREATE DOMAIN positive AS INT CHECK (VALUE > 0);
    CREATE DOMAIN small positive NOT NULL CONSTRAINT under_ten CHECK (VALUE < 10);
    CREATE DOMAIN code text DEFAULT 'none' NULL CHECK (length(VALUE) <= 4)";

fn error(f: &Fixture, s: &mut pmdb_sql::SqlSession, sql: &str) -> String {
    let e = f.try_run(s, sql).expect_err(sql);
    format!("{} {e}", e.sqlstate())
}

#[test]
fn casts_to_a_domain_check_its_rules_and_those_of_the_domain_it_is_over() {
    let f = Fixture::new(DOMAINS);
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT 3::small, CAST(7 AS positive)"),
        ["3|7"]
    );
    assert_eq!(f.rows(&mut s, "SELECT NULL::positive IS NULL"), ["true"]);
    assert_eq!(
        error(&f, &mut s, "SELECT (-1)::positive"),
        "23514 value for domain positive violates check constraint \"positive_check\""
    );
    // small is over positive: positive's CHECK holds for it too, besides its own.
    assert_eq!(
        error(&f, &mut s, "SELECT 0::small"),
        "23514 value for domain small violates check constraint \"positive_check\""
    );
    assert_eq!(
        error(&f, &mut s, "SELECT 12::small"),
        "23514 value for domain small violates check constraint \"under_ten\""
    );
    assert_eq!(
        error(&f, &mut s, "SELECT NULL::small"),
        "23502 domain small does not allow null values"
    );
    assert_eq!(
        error(&f, &mut s, "SELECT 'toolong'::code"),
        "23514 value for domain code violates check constraint \"code_check\""
    );
    // A value of a domain computes as one of its base type, and is named by the domain.
    assert_eq!(
        shown(f.try_run(&mut s, "SELECT 4::small * 2, 4::small")),
        shown(f.try_run(&mut s, "SELECT 4::int * 2, 4::int AS small"))
    );
    let named = shown_names(&f, &mut s, "SELECT 4::small, 'ab'::code");
    assert_eq!(named, ["small", "code"]);
    // Every row of a query is checked, not the first alone.
    f.tag(&mut s, "CREATE TABLE n (k INT PRIMARY KEY)");
    f.tag(&mut s, "INSERT INTO n VALUES (1), (5), (11)");
    assert_eq!(
        f.rows(&mut s, "SELECT k::small FROM n WHERE k < 10 ORDER BY k"),
        ["1", "5"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT k::small FROM n"), "23514");
    assert_eq!(f.sqlstate(&mut s, "SELECT '{1}'::small[]"), "0A000");
}

fn shown_names(f: &Fixture, s: &mut pmdb_sql::SqlSession, sql: &str) -> Vec<String> {
    match f.run(s, sql) {
        pmdb_sql::Output::Rows { schema, .. } => {
            schema.fields().iter().map(|f| f.name().clone()).collect()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn columns_of_a_domain_take_its_default_and_refuse_what_it_refuses() {
    let f = Fixture::new(DOMAINS);
    let mut s = f.session();
    f.tag(
        &mut s,
        "CREATE TABLE t (k INT PRIMARY KEY, p positive, m small DEFAULT 5, c code)",
    );
    f.tag(&mut s, "INSERT INTO t (k, p, m) VALUES (1, 2, 3)");
    f.tag(&mut s, "INSERT INTO t (k, p) VALUES (2, NULL)");
    assert_eq!(
        f.rows(&mut s, "SELECT k, p, m, c FROM t ORDER BY k"),
        ["1|2|3|none", "2||5|none"]
    );
    assert_eq!(
        error(&f, &mut s, "INSERT INTO t VALUES (3, -4, 1, 'a')"),
        "23514 value for domain positive violates check constraint \"positive_check\""
    );
    assert_eq!(
        error(&f, &mut s, "INSERT INTO t VALUES (3, 4, NULL, 'a')"),
        "23502 domain small does not allow null values"
    );
    assert_eq!(
        error(&f, &mut s, "UPDATE t SET m = m + 9 WHERE k = 1"),
        "23514 value for domain small violates check constraint \"under_ten\""
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO t (k, c) VALUES (4, 'abcde')"),
        "23514"
    );
    // Nothing of the refused statements was written.
    assert_eq!(f.rows(&mut s, "SELECT count(*), sum(m) FROM t"), ["2|8"]);
    assert_eq!(
        f.sqlstate(&mut s, "DROP DOMAIN positive"),
        "2BP01",
        "a column and a domain depend on it"
    );
    assert_eq!(f.sqlstate(&mut s, "DROP DOMAIN small CASCADE"), "0A000");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TABLE t ADD COLUMN q positive"),
        "0A000"
    );
    // A column given another type is no longer of its domain.
    f.tag(&mut s, "ALTER TABLE t ALTER COLUMN c TYPE TEXT");
    f.tag(&mut s, "INSERT INTO t (k, c) VALUES (5, 'abcde')");
    f.tag(&mut s, "DROP DOMAIN code");
    f.tag(&mut s, "DROP TABLE t");
    f.tag(&mut s, "DROP DOMAIN small");
    f.tag(&mut s, "DROP DOMAIN positive");
    assert_eq!(f.sqlstate(&mut s, "DROP DOMAIN positive"), "42704");
    f.tag(&mut s, "DROP DOMAIN IF EXISTS positive");
}

#[test]
fn domains_are_made_in_postgresqls_forms_and_refused_where_pmdb_cannot_honour_them() {
    let f = Fixture::new("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')");
    let mut s = f.session();
    f.tag(&mut s, "CREATE DOMAIN cheerful mood CHECK (VALUE <> 'sad')");
    assert_eq!(f.rows(&mut s, "SELECT 'ok'::cheerful"), ["ok"]);
    assert_eq!(f.sqlstate(&mut s, "SELECT 'sad'::cheerful"), "23514");
    assert_eq!(f.sqlstate(&mut s, "SELECT 'angry'::cheerful"), "22P02");
    f.tag(
        &mut s,
        "CREATE DOMAIN two AS numeric(6,2) CHECK (VALUE > 1) CHECK (VALUE < 100)",
    );
    assert_eq!(
        error(&f, &mut s, "SELECT 100::two"),
        "23514 value for domain two violates check constraint \"two_check1\""
    );
    assert_eq!(f.rows(&mut s, "SELECT 2.5::two"), ["2.50"]);
    f.tag(&mut s, "CREATE DOMAIN bytes_c AS text COLLATE \"C\"");
    for (sql, state) in [
        ("CREATE DOMAIN mood AS int", "42710"),
        ("CREATE DOMAIN two AS int", "42710"),
        ("CREATE DOMAIN bad AS int CHECK (VALUE + 1)", "42804"),
        ("CREATE DOMAIN bad AS int CHECK (other > 1)", "42703"),
        ("CREATE DOMAIN bad AS text COLLATE \"en_US\"", "0A000"),
        (
            "CREATE DOMAIN bad AS int CONSTRAINT u UNIQUE (VALUE)",
            "0A000",
        ),
        // A type PostgreSQL does not know either.
        ("CREATE DOMAIN bad AS no_such_type", "42704"),
        ("CREATE DOMAIN bad AS inet", "0A000"),
        ("ALTER DOMAIN two SET DEFAULT 3", "0A000"),
        (
            "ALTER DOMAIN two ADD CONSTRAINT big CHECK (VALUE > 50)",
            "0A000",
        ),
    ] {
        assert_eq!(f.sqlstate(&mut s, sql), state, "{sql}");
    }
    assert_eq!(f.sqlstate(&mut s, "CREATE TYPE two AS ENUM ('a')"), "42710");
    assert_eq!(f.sqlstate(&mut s, "DROP TYPE mood"), "2BP01");
}

#[test]
fn domains_roll_back_with_their_block_and_go_with_their_schema() {
    let f = Fixture::new("CREATE SCHEMA app");
    let mut s = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "CREATE DOMAIN gone AS int CHECK (VALUE > 0)");
    assert_eq!(f.rows(&mut s, "SELECT 1::gone"), ["1"]);
    f.tag(&mut s, "ROLLBACK");
    assert!(f.engine.catalog().domain_types().is_empty());
    f.tag(
        &mut s,
        "CREATE DOMAIN app.level AS int CHECK (VALUE BETWEEN 1 AND 3)",
    );
    f.tag(&mut s, "CREATE DOMAIN app.top app.level NOT NULL");
    f.tag(&mut s, "CREATE TABLE app.t (k INT PRIMARY KEY, l app.top)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO app.t VALUES (1, 4)"),
        "23514"
    );
    assert_eq!(f.sqlstate(&mut s, "DROP SCHEMA app"), "2BP01");
    f.tag(&mut s, "DROP SCHEMA app CASCADE");
    assert!(f.engine.catalog().domain_types().is_empty());
}

#[test]
fn domains_and_their_columns_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    {
        let engine = open();
        engine.execute(DOMAINS).unwrap();
        engine
            .execute("CREATE TABLE t (k INT PRIMARY KEY, m small, c code)")
            .unwrap();
        engine.execute("INSERT INTO t VALUES (1, 2, 'ab')").unwrap();
    }
    let engine = open();
    let rows = |sql: &str| rows_of(engine.execute(sql).unwrap().pop().unwrap());
    assert_eq!(rows("SELECT k, m, c FROM t"), ["1|2|ab"]);
    assert_eq!(rows("SELECT 9::small"), ["9"]);
    let refused = |sql: &str| engine.execute(sql).unwrap_err().sqlstate().to_owned();
    assert_eq!(refused("SELECT 0::small"), "23514");
    assert_eq!(refused("INSERT INTO t VALUES (2, 10, 'a')"), "23514");
    assert_eq!(refused("INSERT INTO t VALUES (2, NULL, 'a')"), "23502");
    engine
        .execute("INSERT INTO t (k, m) VALUES (2, 1)")
        .unwrap();
    assert_eq!(rows("SELECT c FROM t WHERE k = 2"), ["none"]);
}
