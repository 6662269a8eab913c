//! UNIQUE constraints and unique indexes as PostgreSQL enforces them: a repeated value
//! is 23505 (NULLs are distinct), on INSERT, UPDATE, COPY and when the index is built;
//! a writer of a value another open transaction has written waits for it, then fails
//! with 23505 if it committed, or goes on if it rolled back — for unique indexes and
//! primary keys alike.

mod common;

use common::Fixture;
use pmdb_sql::TxnStatus;

const USERS: &str = "
    CREATE TABLE users (
        id INT PRIMARY KEY,
        email TEXT UNIQUE,
        org INT,
        handle VARCHAR(20),
        CONSTRAINT users_org_handle UNIQUE (org, handle)
    );
    INSERT INTO users VALUES (1, 'a@x', 1, 'ann'), (2, 'b@x', 1, 'bob'), (3, NULL, 2, 'ann');
";

#[test]
fn repeated_values_are_refused() {
    let f = Fixture::new(USERS);
    let mut s = f.session();
    for dup in [
        "INSERT INTO users VALUES (4, 'a@x', 3, 'cy')",
        "INSERT INTO users VALUES (4, 'c@x', 1, 'bob')",
        "INSERT INTO users VALUES (4, 'c@x', 5, 'x'), (5, 'c@x', 6, 'y')",
        "UPDATE users SET email = 'b@x' WHERE id = 1",
        "UPDATE users SET org = 1 WHERE id = 3",
        "INSERT INTO users SELECT id + 10, email, org, handle FROM users WHERE id = 1",
    ] {
        assert_eq!(f.sqlstate(&mut s, dup), "23505", "{dup}");
    }
    let err = f
        .try_run(&mut s, "INSERT INTO users VALUES (9, 'a@x', 9, 'z')")
        .unwrap_err();
    assert_eq!(
        err.message(),
        "duplicate key value violates unique constraint \"users_email_key\""
    );
    assert_eq!(err.detail(), Some("Key (email)=(a@x) already exists."));
    // NULLs are distinct; a row may keep its own values; a value freed may be reused.
    f.tag(
        &mut s,
        "INSERT INTO users VALUES (4, NULL, 2, NULL), (5, NULL, 2, NULL)",
    );
    f.tag(
        &mut s,
        "UPDATE users SET email = 'a@x', org = 1 WHERE id = 1",
    );
    f.tag(&mut s, "UPDATE users SET email = 'z@x' WHERE id = 2");
    f.tag(&mut s, "INSERT INTO users VALUES (6, 'b@x', 7, 'dee')");
    f.tag(&mut s, "DELETE FROM users WHERE id = 6");
    f.tag(&mut s, "INSERT INTO users VALUES (7, 'b@x', 7, 'dee')");
    // In a block: a value the block freed is free for it.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM users WHERE id = 7");
    f.tag(&mut s, "INSERT INTO users VALUES (8, 'b@x', 7, 'dee')");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO users VALUES (9, 'b@x', 0, 'q')"),
        "23505",
        "the block's own earlier insert counts"
    );
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM users WHERE email = 'b@x'"),
        ["7"]
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "CREATE TABLE bad (a INT, UNIQUE NULLS NOT DISTINCT (a))"
        ),
        "0A000"
    );
}

#[test]
fn unique_indexes_are_built_only_over_unique_rows() {
    let f = Fixture::new(
        "CREATE TABLE t (k INT PRIMARY KEY, a INT, b TEXT);
         INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'x'), (3, NULL, 'y'), (4, NULL, 'y')",
    );
    let mut s = f.session();
    assert_eq!(
        f.sqlstate(&mut s, "CREATE UNIQUE INDEX t_b ON t (b)"),
        "23505"
    );
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("t"))
            .unwrap()
            .def()
            .indexes
            .is_empty(),
        "the failed index is not there"
    );
    f.tag(&mut s, "CREATE UNIQUE INDEX t_a ON t (a)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO t VALUES (5, 2, 'z')"),
        "23505"
    );
    f.tag(&mut s, "INSERT INTO t VALUES (5, NULL, 'z')");
    f.tag(&mut s, "DROP INDEX t_a");
    f.tag(&mut s, "INSERT INTO t VALUES (6, 2, 'z')");
    // COPY checks each row too.
    let csv = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(csv.path(), "10,7,p\n11,7,q\n").unwrap();
    f.tag(&mut s, "CREATE UNIQUE INDEX t_b2 ON t (b, k)");
    f.tag(
        &mut s,
        "CREATE TABLE c (k INT PRIMARY KEY, a INT UNIQUE, b TEXT)",
    );
    let copy = format!("COPY c FROM '{}' WITH (FORMAT csv)", csv.path().display());
    assert_eq!(f.sqlstate(&mut s, &copy), "23505");
}

#[test]
fn a_second_writer_of_a_value_waits_for_the_first() {
    let f = Fixture::new(USERS);
    // The first commits: the second fails with 23505.
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO users VALUES (10, 'new@x', 5, 'n')");
    let b = f.start(
        f.session(),
        "INSERT INTO users VALUES (11, 'new@x', 6, 'm')",
    );
    f.still_waiting(&b);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(b);
    assert_eq!(out.unwrap_err().sqlstate(), "23505");
    // The first rolls back: the second goes on.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "UPDATE users SET email = 'moved@x' WHERE id = 1");
    let c = f.start(
        f.session(),
        "UPDATE users SET email = 'moved@x' WHERE id = 2",
    );
    f.still_waiting(&c);
    f.tag(&mut a, "ROLLBACK");
    let (_, out) = f.finish(c);
    out.unwrap();
    assert_eq!(
        f.rows(&mut b, "SELECT id FROM users WHERE email = 'moved@x'"),
        ["2"]
    );
    // The same for a primary key, between two blocks.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO users VALUES (20, NULL, NULL, NULL)");
    let mut d = f.session();
    f.tag(&mut d, "BEGIN");
    f.rows(&mut d, "SELECT 1");
    let d = f.start(d, "INSERT INTO users VALUES (20, NULL, NULL, NULL)");
    f.still_waiting(&d);
    f.tag(&mut a, "COMMIT");
    let (d, out) = f.finish(d);
    assert_eq!(out.unwrap_err().sqlstate(), "23505");
    assert_eq!(d.status(), TxnStatus::Failed);
}

#[test]
fn prepared_and_fast_path_writes_are_checked() {
    let f = Fixture::new("CREATE TABLE k (id SERIAL PRIMARY KEY, code TEXT UNIQUE, n INT)");
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO k (code, n) VALUES ('a', 1)");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO k (code, n) VALUES ('a', 2)"),
        "23505"
    );
    f.tag(&mut s, "INSERT INTO k (code, n) VALUES ('b', 2)");
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE k SET code = 'a' WHERE id = 3"),
        "23505"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT id, code FROM k ORDER BY id"),
        ["1|a", "3|b"]
    );
}
