//! DDL in transaction blocks, as PostgreSQL runs it: undone by ROLLBACK, by a rollback
//! to a savepoint taken before it, by a failed block and by a client that goes away;
//! whole after COMMIT, across a reopen; other sessions' writers wait for a table whose
//! DDL has not ended instead of writing into it (a table not yet created is not there); one transaction's DDL at a time, a wait
//! in a cycle a deadlock; DDL that would read the block's own uncommitted rows refused.

mod common;

use common::{Fixture, rows_of};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const ACCOUNTS: &str = "
    CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance BIGINT);
    INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);
";

/// The tables, views and sequences the catalog holds, by name.
fn relations(f: &Fixture) -> Vec<String> {
    let c = f.engine.catalog();
    let mut names: Vec<String> = c
        .tables()
        .iter()
        .map(|t| format!("table {}", t.def().name))
        .chain(c.views().iter().map(|v| format!("view {}", v.name)))
        .chain(
            c.sequences()
                .iter()
                .map(|s| format!("sequence {}", s.def().name)),
        )
        .collect();
    names.sort();
    names
}

#[test]
fn rollback_undoes_every_kind_of_ddl() {
    let f = Fixture::new(ACCOUNTS);
    let mut s = f.session();
    let before = relations(&f);
    f.tag(&mut s, "BEGIN");
    f.tag(
        &mut s,
        "CREATE TABLE audit (id SERIAL PRIMARY KEY, note TEXT UNIQUE)",
    );
    f.tag(&mut s, "INSERT INTO audit (note) VALUES ('x'), ('y')");
    f.tag(&mut s, "ALTER TABLE accounts ADD COLUMN opened DATE");
    f.tag(&mut s, "ALTER TABLE accounts RENAME COLUMN owner TO holder");
    f.tag(&mut s, "CREATE INDEX accounts_holder ON accounts (holder)");
    f.tag(
        &mut s,
        "ALTER TABLE accounts ALTER COLUMN balance TYPE NUMERIC(12,2)",
    );
    f.tag(
        &mut s,
        "CREATE VIEW rich AS SELECT id FROM accounts WHERE balance > 60",
    );
    f.tag(&mut s, "CREATE SEQUENCE tickets");
    assert_eq!(f.rows(&mut s, "SELECT nextval('tickets')"), ["1"]);
    assert_eq!(f.rows(&mut s, "SELECT * FROM rich"), ["1"]);
    assert_eq!(
        f.rows(&mut s, "SELECT holder, balance FROM accounts ORDER BY id"),
        ["ann|100.00", "bob|50.00"]
    );
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(relations(&f), before);
    assert_eq!(
        f.rows(&mut s, "SELECT * FROM accounts ORDER BY id"),
        ["1|ann|100", "2|bob|50"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT nextval('tickets')"), "42P01");
    let accounts = f
        .engine
        .catalog()
        .table(&pmdb_sql::names::RelName::public("accounts"))
        .unwrap();
    assert!(
        accounts.indexes().is_empty(),
        "the index went with the block"
    );
    // The names are free again, and the table works as before.
    f.tag(&mut s, "CREATE TABLE audit (id INT PRIMARY KEY)");
    f.tag(
        &mut s,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 2",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT balance FROM accounts WHERE id = 2"),
        ["51"]
    );
}

#[test]
fn a_dropped_table_comes_back_with_its_rows() {
    let f = Fixture::new(
        "CREATE TABLE parent (id INT PRIMARY KEY);
         CREATE TABLE child (id INT PRIMARY KEY, p INT REFERENCES parent);
         INSERT INTO parent VALUES (1), (2);
         INSERT INTO child VALUES (10, 1);",
    );
    let mut s = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DROP TABLE parent CASCADE");
    f.tag(&mut s, "INSERT INTO child VALUES (11, 99)");
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM parent ORDER BY id"),
        ["1", "2"]
    );
    assert_eq!(f.rows(&mut s, "SELECT * FROM child"), ["10|1"]);
    // The foreign key is back: a child without its parent is refused again.
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO child VALUES (12, 99)"),
        "23503"
    );
}

#[test]
fn a_rollback_to_a_savepoint_undoes_the_ddl_after_it() {
    let f = Fixture::new(ACCOUNTS);
    let mut s = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "SAVEPOINT before_any");
    f.tag(&mut s, "CREATE TABLE first (x INT)");
    f.tag(&mut s, "SAVEPOINT after_first");
    f.tag(&mut s, "DROP TABLE accounts");
    f.tag(&mut s, "CREATE TABLE second (y INT)");
    f.tag(&mut s, "ROLLBACK TO SAVEPOINT after_first");
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("accounts"))
            .is_some()
    );
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("second"))
            .is_none()
    );
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("first"))
            .is_some()
    );
    // Again, to the same savepoint, after more DDL.
    f.tag(&mut s, "ALTER TABLE accounts DROP COLUMN owner");
    f.tag(&mut s, "ROLLBACK TO SAVEPOINT after_first");
    assert_eq!(
        f.rows(&mut s, "SELECT * FROM accounts ORDER BY id"),
        ["1|ann|100", "2|bob|50"]
    );
    // To one taken before any DDL: the block's catalog changes are all gone, and
    // another session may change the catalog while the block goes on.
    f.tag(&mut s, "ROLLBACK TO SAVEPOINT before_any");
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("first"))
            .is_none()
    );
    let mut other = f.session();
    f.tag(&mut other, "CREATE TABLE meanwhile (z INT)");
    f.tag(&mut s, "CREATE TABLE kept (k INT)");
    f.tag(&mut s, "COMMIT");
    let mut names: Vec<_> = ["accounts", "kept", "meanwhile"]
        .iter()
        .filter(|n| {
            f.engine
                .catalog()
                .table(&pmdb_sql::names::RelName::public(**n))
                .is_some()
        })
        .collect();
    names.sort();
    assert_eq!(names, [&"accounts", &"kept", &"meanwhile"]);
}

#[test]
fn a_failed_block_and_a_client_gone_roll_the_ddl_back() {
    let f = Fixture::new(ACCOUNTS);
    let mut s = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "CREATE TABLE doomed (x INT PRIMARY KEY)");
    assert_eq!(f.sqlstate(&mut s, "SELECT 1 / 0"), "22012");
    // COMMIT of a failed block rolls it back.
    assert_eq!(f.tag(&mut s, "COMMIT"), "ROLLBACK");
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("doomed"))
            .is_none()
    );
    let mut gone = f.session();
    f.tag(&mut gone, "BEGIN");
    f.tag(&mut gone, "DROP TABLE accounts");
    drop(gone);
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM accounts"),
        ["2"],
        "the table of a client gone mid-block stays"
    );
    // Its catalog lock went with it.
    f.tag(&mut s, "CREATE TABLE after (x INT)");
}

#[test]
fn committed_ddl_is_all_there_after_a_reopen_and_rolled_back_ddl_is_not() {
    let dir = tempfile::tempdir().unwrap();
    {
        let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        sql.execute(ACCOUNTS).unwrap();
        sql.execute(
            "BEGIN;
             CREATE TABLE ledger (id SERIAL PRIMARY KEY, account INT REFERENCES accounts, amount BIGINT);
             INSERT INTO ledger (account, amount) VALUES (1, 5), (2, 7);
             ALTER TABLE accounts ADD COLUMN frozen BOOLEAN DEFAULT false;
             COMMIT;
             BEGIN;
             DROP TABLE ledger;
             ALTER TABLE accounts RENAME TO gone;
             ROLLBACK;",
        )
        .unwrap();
        // A block its client leaves open is not committed (a crash before COMMIT: the
        // crash simulation's).
        let mut s = sql.session();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(s.execute("BEGIN; CREATE TABLE unfinished (x INT); DROP TABLE ledger"))
            .unwrap();
        drop(s);
    }
    let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let rows = |q: &str| rows_of(sql.execute(q).unwrap().pop().unwrap());
    assert_eq!(
        rows("SELECT account, amount FROM ledger ORDER BY id"),
        ["1|5", "2|7"]
    );
    assert_eq!(
        rows("SELECT id, frozen FROM accounts ORDER BY id"),
        ["1|false", "2|false"]
    );
    assert!(
        sql.catalog()
            .table(&pmdb_sql::names::RelName::public("unfinished"))
            .is_none()
    );
    // The serial's sequence goes on after the values it gave.
    sql.execute("INSERT INTO ledger (account, amount) VALUES (1, 1)")
        .unwrap();
    assert_eq!(rows("SELECT count(DISTINCT id) FROM ledger"), ["3"]);
}

#[test]
fn a_writer_waits_for_a_table_whose_ddl_has_not_ended() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "CREATE TABLE fresh (id INT PRIMARY KEY)");
    // As in PostgreSQL, another session does not see a table whose CREATE has not
    // committed.
    assert_eq!(
        f.sqlstate(&mut b, "INSERT INTO fresh VALUES (1)"),
        "42P01",
        "not yet there"
    );
    f.tag(&mut a, "ROLLBACK");

    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "ALTER TABLE accounts ADD COLUMN note TEXT");
    let waiting = f.start(b, "INSERT INTO accounts VALUES (3, 'cy', 1)");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(waiting);
    out.unwrap();
    assert_eq!(
        f.rows(&mut b, "SELECT id, note FROM accounts ORDER BY id"),
        ["1|", "2|", "3|"]
    );
}

#[test]
fn one_transaction_changes_the_catalog_at_a_time() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "CREATE TABLE one (x INT)");
    let waiting = f.start(f.session(), "CREATE TABLE two (y INT)");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(waiting);
    out.unwrap();

    // a holds b's row and waits for the catalog; b waits for the catalog: a deadlock,
    // found and broken (40P01), not waited out.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    f.tag(&mut b, "UPDATE accounts SET balance = 0 WHERE id = 1");
    f.tag(&mut a, "CREATE TABLE three (z INT)");
    let waiting = f.start(a, "UPDATE accounts SET balance = 1 WHERE id = 1");
    f.still_waiting(&waiting);
    // b's wait would close the cycle.
    assert_eq!(f.sqlstate(&mut b, "CREATE TABLE four (w INT)"), "40P01");
    f.tag(&mut b, "ROLLBACK");
    let (mut a, out) = f.finish(waiting);
    out.unwrap();
    f.tag(&mut a, "COMMIT");
    assert!(
        f.engine
            .catalog()
            .table(&pmdb_sql::names::RelName::public("three"))
            .is_some()
    );
}

#[test]
fn ddl_that_would_read_the_blocks_own_rows_is_refused() {
    let f = Fixture::new(ACCOUNTS);
    let mut s = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "INSERT INTO accounts VALUES (3, NULL, 5)");
    for ddl in [
        "CREATE INDEX accounts_owner ON accounts (owner)",
        "ALTER TABLE accounts ALTER COLUMN owner SET NOT NULL",
        "ALTER TABLE accounts DROP COLUMN owner",
        "ALTER TABLE accounts ADD CONSTRAINT positive CHECK (balance > 0)",
    ] {
        f.tag(&mut s, "SAVEPOINT p");
        assert_eq!(f.sqlstate(&mut s, ddl), "0A000", "{ddl}");
        f.tag(&mut s, "ROLLBACK TO SAVEPOINT p");
    }
    // What reads no row is fine.
    f.tag(&mut s, "ALTER TABLE accounts ADD COLUMN extra INT");
    f.tag(&mut s, "ALTER TABLE accounts RENAME COLUMN owner TO holder");
    f.tag(&mut s, "COMMIT");
    assert_eq!(
        f.rows(&mut s, "SELECT id, holder, extra FROM accounts ORDER BY id"),
        ["1|ann|", "2|bob|", "3||"]
    );
}
