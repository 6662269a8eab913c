//! DDL against open transactions, as PostgreSQL's relation locks order them: DDL (and
//! TRUNCATE) on a table waits for the transactions that are writing it, so an index, a
//! constraint or a rewrite sees their rows once committed; DDL that drops, empties or
//! rewrites a table waits for the transactions reading it too, and their reads wait for
//! it; CREATE INDEX lets readers go; writers that come after waiting DDL wait behind it;
//! and other sessions never see a definition whose DDL has not ended.

mod common;

use common::Fixture;

const ACCOUNTS: &str = "
    CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance BIGINT);
    INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);
";

#[test]
fn create_index_waits_for_an_open_writer_and_indexes_its_rows() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    f.tag(&mut a, "UPDATE accounts SET owner = 'dee' WHERE id = 1");
    let waiting = f.start(f.session(), "CREATE INDEX by_owner ON accounts (owner)");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(waiting);
    out.unwrap();
    for (owner, id) in [("cy", "3"), ("dee", "1"), ("bob", "2")] {
        let q = format!("SELECT id FROM accounts WHERE owner = '{owner}'");
        assert_eq!(f.rows(&mut b, &q), [id], "{q}");
    }
    assert!(
        f.rows(&mut b, "SELECT id FROM accounts WHERE owner = 'ann'")
            .is_empty()
    );
}

#[test]
fn a_unique_index_sees_an_open_writers_duplicate() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'ann', 5)");
    let waiting = f.start(
        f.session(),
        "CREATE UNIQUE INDEX one_owner ON accounts (owner)",
    );
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(waiting);
    assert_eq!(out.unwrap_err().sqlstate(), "23505");
}

#[test]
fn a_constraint_added_sees_an_open_writers_rows() {
    for ddl in [
        "ALTER TABLE accounts ADD CONSTRAINT positive CHECK (balance > 0)",
        "ALTER TABLE accounts ALTER COLUMN owner SET NOT NULL",
    ] {
        let f = Fixture::new(ACCOUNTS);
        let mut a = f.session();
        f.tag(&mut a, "BEGIN");
        f.tag(&mut a, "INSERT INTO accounts VALUES (3, NULL, -5)");
        let waiting = f.start(f.session(), ddl);
        f.still_waiting(&waiting);
        f.tag(&mut a, "COMMIT");
        let (_, out) = f.finish(waiting);
        let e = out.expect_err(ddl);
        assert!(["23514", "23502"].contains(&e.sqlstate()), "{ddl}: {e}");
    }
}

#[test]
fn a_foreign_key_added_waits_for_an_open_deleter_of_the_parent() {
    let f = Fixture::new(
        "CREATE TABLE parent (id INT PRIMARY KEY);
         CREATE TABLE child (id INT PRIMARY KEY, p INT);
         INSERT INTO parent VALUES (1), (2);
         INSERT INTO child VALUES (10, 1);",
    );
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "DELETE FROM parent WHERE id = 1");
    let waiting = f.start(
        f.session(),
        "ALTER TABLE child ADD FOREIGN KEY (p) REFERENCES parent",
    );
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(waiting);
    assert_eq!(out.unwrap_err().sqlstate(), "23503");
}

#[test]
fn a_rewrite_keeps_the_rows_an_open_writer_commits() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    f.tag(&mut a, "DELETE FROM accounts WHERE id = 2");
    let waiting = f.start(
        f.session(),
        "ALTER TABLE accounts ALTER COLUMN balance TYPE NUMERIC(12,2)",
    );
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(waiting);
    out.unwrap();
    assert_eq!(
        f.rows(&mut b, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|100.00", "3|5.00"]
    );
}

#[test]
fn a_writer_and_ddl_waiting_for_each_other_is_a_deadlock() {
    let f = Fixture::new(
        "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance BIGINT);
         INSERT INTO accounts VALUES (1, 'ann', 100), (2, 'bob', 50);
         CREATE TABLE other (id INT PRIMARY KEY);",
    );
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    f.tag(&mut b, "BEGIN");
    f.tag(&mut b, "ALTER TABLE other ADD COLUMN note TEXT");
    // b waits for a's writes to accounts; a then writes the table b's DDL holds.
    let waiting = f.start(b, "CREATE INDEX by_owner ON accounts (owner)");
    f.still_waiting(&waiting);
    assert_eq!(f.sqlstate(&mut a, "INSERT INTO other VALUES (1)"), "40P01");
    f.tag(&mut a, "ROLLBACK");
    let (mut b, out) = f.finish(waiting);
    out.unwrap();
    f.tag(&mut b, "COMMIT");
}

#[test]
fn writers_that_come_after_waiting_ddl_wait_behind_it() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    let ddl = f.start(f.session(), "CREATE INDEX by_owner ON accounts (owner)");
    f.still_waiting(&ddl);
    // A writer sharing the table's lock with a would keep the DDL out for as long as
    // writers overlap: it waits for its turn instead.
    let late = f.start(f.session(), "INSERT INTO accounts VALUES (4, 'dee', 6)");
    f.still_waiting(&late);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(ddl);
    out.unwrap();
    let (mut c, out) = f.finish(late);
    out.unwrap();
    assert_eq!(
        f.rows(
            &mut c,
            "SELECT id FROM accounts WHERE owner IN ('cy', 'dee') ORDER BY id"
        ),
        ["3", "4"]
    );
}

#[test]
fn ddl_waiting_past_its_lock_timeout_lets_the_writers_behind_it_go() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "UPDATE accounts SET balance = 1 WHERE id = 1");
    // What the server does for `SET lock_timeout = '300ms'`.
    b.set_lock_timeout(300);
    let ddl = f.start(b, "ALTER TABLE accounts ADD COLUMN note TEXT");
    std::thread::sleep(std::time::Duration::from_millis(50));
    let late = f.start(f.session(), "UPDATE accounts SET balance = 2 WHERE id = 2");
    let (_, out) = f.finish(ddl);
    assert_eq!(out.unwrap_err().sqlstate(), "55P03");
    // The writer queued behind the DDL goes once the DDL gives up, while a still
    // writes.
    let (_, out) = f.finish(late);
    out.unwrap();
    f.tag(&mut a, "COMMIT");
}

#[test]
fn truncate_waits_for_an_open_writer_and_takes_its_rows_too() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    let waiting = f.start(f.session(), "TRUNCATE accounts");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(waiting);
    out.unwrap();
    assert!(f.rows(&mut b, "SELECT * FROM accounts").is_empty());
}

#[test]
fn readers_wait_for_open_ddl_of_their_table_then_read_what_it_left() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(
        &mut a,
        "ALTER TABLE accounts ADD COLUMN note TEXT DEFAULT 'x'",
    );
    f.tag(&mut a, "CREATE TABLE fresh (id INT PRIMARY KEY)");
    // The block sees its own DDL.
    assert_eq!(
        f.rows(&mut a, "SELECT id, note FROM accounts ORDER BY id"),
        ["1|x", "2|x"]
    );
    // Another session sees no new table, and its read of the altered one waits.
    assert_eq!(f.sqlstate(&mut b, "SELECT * FROM fresh"), "42P01");
    let all = "SELECT * FROM accounts ORDER BY id";
    let waiting = f.start(b, all);
    f.still_waiting(&waiting);
    f.tag(&mut a, "ROLLBACK");
    let (b, out) = f.finish(waiting);
    assert_eq!(common::rows_of(out.unwrap()), ["1|ann|100", "2|bob|50"]);

    f.tag(&mut a, "BEGIN");
    f.tag(
        &mut a,
        "ALTER TABLE accounts ADD COLUMN note TEXT DEFAULT 'x'",
    );
    let waiting = f.start(b, all);
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (b, out) = f.finish(waiting);
    assert_eq!(common::rows_of(out.unwrap()), ["1|ann|100|x", "2|bob|50|x"]);

    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "DROP TABLE accounts");
    f.tag(&mut a, "SAVEPOINT s");
    assert_eq!(f.sqlstate(&mut a, "SELECT * FROM accounts"), "42P01");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT s");
    let waiting = f.start(b, "SELECT count(*) FROM accounts");
    f.still_waiting(&waiting);
    assert_eq!(f.tag(&mut a, "COMMIT"), "COMMIT");
    let (_, out) = f.finish(waiting);
    assert_eq!(out.unwrap_err().sqlstate(), "42P01");
}

#[test]
fn an_open_create_index_lets_readers_go_and_keeps_writers_waiting() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "CREATE INDEX by_owner ON accounts (owner)");
    assert_eq!(f.rows(&mut b, "SELECT count(*) FROM accounts"), ["2"]);
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.rows(&mut b, "SELECT owner FROM accounts WHERE id = 2 FOR UPDATE"),
        ["bob"]
    );
    f.tag(&mut b, "COMMIT");
    let writer = f.start(b, "INSERT INTO accounts VALUES (3, 'cy', 5)");
    f.still_waiting(&writer);
    f.tag(&mut a, "COMMIT");
    let (mut b, out) = f.finish(writer);
    out.unwrap();
    assert_eq!(
        f.rows(&mut b, "SELECT id FROM accounts WHERE owner = 'cy'"),
        ["3"]
    );
}

#[test]
fn ddl_waits_for_an_open_reader_of_its_table() {
    for ddl in [
        "TRUNCATE accounts",
        "DROP TABLE accounts",
        "ALTER TABLE accounts DROP COLUMN owner",
        "ALTER TABLE accounts ALTER COLUMN balance TYPE NUMERIC(12,2)",
    ] {
        let f = Fixture::new(ACCOUNTS);
        let mut a = f.session();
        f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        let all = "SELECT * FROM accounts ORDER BY id";
        assert_eq!(f.rows(&mut a, all), ["1|ann|100", "2|bob|50"]);
        let waiting = f.start(f.session(), ddl);
        f.still_waiting(&waiting);
        // The block reads the table as it read it before, whatever the DDL does.
        assert_eq!(f.rows(&mut a, all), ["1|ann|100", "2|bob|50"], "{ddl}");
        f.tag(&mut a, "COMMIT");
        let (_, out) = f.finish(waiting);
        out.unwrap();
    }
}

#[test]
fn ddl_waits_for_a_prepared_reader_in_a_block() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    let statement = pmdb_sql::parse("SELECT balance FROM accounts WHERE id = $1")
        .unwrap()
        .pop_front()
        .unwrap();
    let prepared = f.rt.block_on(a.prepare(statement)).unwrap();
    let read = |a: &mut pmdb_sql::SqlSession| {
        let params = vec![datafusion::common::ScalarValue::Int32(Some(2))];
        common::rows_of(f.rt.block_on(a.run_prepared(&prepared, params)).unwrap())
    };
    f.tag(&mut a, "BEGIN");
    assert_eq!(read(&mut a), ["50"]);
    let waiting = f.start(f.session(), "TRUNCATE accounts");
    f.still_waiting(&waiting);
    assert_eq!(read(&mut a), ["50"]);
    f.tag(&mut a, "COMMIT");
    let (_, out) = f.finish(waiting);
    out.unwrap();
    assert!(read(&mut a).is_empty());
}

#[test]
fn a_table_made_from_a_query_keeps_its_source_until_its_block_ends() {
    for make in [
        "CREATE TABLE copied AS SELECT * FROM accounts",
        "CREATE MATERIALIZED VIEW copied AS SELECT owner FROM accounts",
    ] {
        let f = Fixture::new(ACCOUNTS);
        let (mut a, mut b) = (f.session(), f.session());
        f.tag(&mut a, "BEGIN");
        f.tag(&mut a, make);
        f.tag(&mut b, "BEGIN");
        let waiting = f.start(b, "TRUNCATE accounts");
        f.still_waiting(&waiting);
        f.tag(&mut a, "COMMIT");
        let (mut b, out) = f.finish(waiting);
        out.unwrap();
        f.tag(&mut b, "COMMIT");
        assert_eq!(
            f.rows(&mut b, "SELECT count(*) FROM copied"),
            ["2"],
            "{make}"
        );
    }
}
