//! Row locks as applications rely on them: `SELECT … FOR UPDATE | NO KEY UPDATE | SHARE |
//! KEY SHARE` with `OF`, `NOWAIT` and `SKIP LOCKED`, read committed waiters that act on
//! the row as its holder committed it (no lost update, no double claim), UPDATE and
//! DELETE locking whatever their key's width and their SET expressions, 40001 above read
//! committed, and locking clauses pmdb cannot honour refused with 0A000.

mod common;

use common::{Fixture, rows_of};
use pmdb_sql::{CommandTag, Output, TxnStatus};

const COUNTERS: &str = "
    CREATE TABLE counters (id INT PRIMARY KEY, v BIGINT, note VARCHAR(10));
    INSERT INTO counters VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c');
";

#[test]
fn two_read_modify_write_blocks_lose_no_update() {
    let f = Fixture::new(COUNTERS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.rows(&mut a, "SELECT v FROM counters WHERE id = 1 FOR UPDATE"),
        ["10"]
    );
    let waiting = f.start(b, "SELECT v FROM counters WHERE id = 1 FOR UPDATE");
    f.still_waiting(&waiting);
    // a writes what it read plus one, as a client computes it.
    f.tag(&mut a, "UPDATE counters SET v = 11 WHERE id = 1");
    f.tag(&mut a, "COMMIT");
    let (mut b, read) = f.finish(waiting);
    assert_eq!(rows_of(read.unwrap()), ["11"], "b reads what a committed");
    f.tag(&mut b, "UPDATE counters SET v = 12 WHERE id = 1");
    f.tag(&mut b, "COMMIT");
    assert_eq!(
        f.rows(&mut a, "SELECT v FROM counters WHERE id = 1"),
        ["12"]
    );
}

#[test]
fn the_oldest_row_is_claimed_once() {
    let f = Fixture::new(
        "CREATE TABLE new_order (w INT, d INT, o INT, PRIMARY KEY (w, d, o));
         INSERT INTO new_order VALUES (1, 1, 3001), (1, 1, 3002), (1, 1, 3003), (1, 2, 3001);",
    );
    const OLDEST: &str =
        "SELECT o FROM new_order WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1 FOR UPDATE";
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    assert_eq!(f.rows(&mut a, OLDEST), ["3001"]);
    let waiting = f.start(b, OLDEST);
    f.still_waiting(&waiting);
    assert_eq!(
        f.tag(
            &mut a,
            "DELETE FROM new_order WHERE w = 1 AND d = 1 AND o = 3001"
        ),
        "DELETE 1"
    );
    f.tag(&mut a, "COMMIT");
    let (mut b, read) = f.finish(waiting);
    assert_eq!(
        rows_of(read.unwrap()),
        ["3002"],
        "the row a deleted is passed over for the next"
    );
    // SKIP LOCKED takes the next free one; NOWAIT fails at once.
    let mut c = f.session();
    f.tag(&mut c, "BEGIN");
    assert_eq!(
        f.rows(
            &mut c,
            "SELECT o FROM new_order WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1 FOR UPDATE SKIP LOCKED"
        ),
        ["3003"]
    );
    assert_eq!(
        f.sqlstate(
            &mut c,
            "SELECT o FROM new_order WHERE w = 1 AND d = 1 AND o = 3002 FOR UPDATE NOWAIT"
        ),
        "55P03"
    );
    assert_eq!(c.status(), TxnStatus::Failed);
    f.tag(&mut c, "ROLLBACK");
    f.tag(&mut b, "COMMIT");
    // OFFSET counts locked rows; rows it skips are locked too.
    let mut d = f.session();
    f.tag(&mut d, "BEGIN");
    assert_eq!(
        f.rows(
            &mut d,
            "SELECT w, d, o FROM new_order ORDER BY d, o LIMIT 1 OFFSET 1 FOR SHARE"
        ),
        ["1|1|3003"]
    );
    assert_eq!(
        f.sqlstate(
            &mut c,
            "SELECT * FROM new_order WHERE d = 1 AND o = 3002 FOR UPDATE NOWAIT"
        ),
        "55P03"
    );
    // FOR SHARE does not keep others from sharing.
    assert_eq!(
        f.rows(
            &mut c,
            "SELECT * FROM new_order WHERE d = 1 FOR SHARE NOWAIT"
        ),
        ["1|1|3002", "1|1|3003"]
    );
    f.tag(&mut d, "COMMIT");
}

#[test]
fn update_and_delete_lock_rows_whatever_the_key_and_the_set_expressions() {
    let f = Fixture::new(
        "CREATE TABLE district (w INT, d INT, ytd DECIMAL(12,2), next_o INT, PRIMARY KEY (w, d));
         INSERT INTO district VALUES (1, 1, 100.00, 3001), (1, 2, 0, 1);",
    );
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    f.tag(
        &mut a,
        "UPDATE district SET ytd = ytd + 10.50, next_o = next_o + 1 WHERE w = 1 AND d = 1",
    );
    let waiting = f.start(
        b,
        "UPDATE district SET ytd = ytd + 1.25 WHERE w = 1 AND d = 1",
    );
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, updated) = f.finish(waiting);
    assert!(matches!(updated.unwrap(), Output::Command(t) if t == CommandTag::update(1)));
    f.tag(&mut b, "COMMIT");
    assert_eq!(
        f.rows(
            &mut a,
            "SELECT ytd, next_o FROM district WHERE w = 1 AND d = 1"
        ),
        ["111.75|3002"]
    );

    // A waiter whose row no longer qualifies once it is committed leaves it alone.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "UPDATE district SET next_o = 0 WHERE d = 2");
    let waiting = f.start(b, "DELETE FROM district WHERE next_o = 1");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, deleted) = f.finish(waiting);
    assert!(matches!(deleted.unwrap(), Output::Command(t) if t == CommandTag::delete(0)));
    assert_eq!(f.rows(&mut b, "SELECT count(*) FROM district"), ["2"]);

    // Above read committed, a row changed after the block's snapshot fails the statement.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.rows(&mut a, "SELECT count(*) FROM district");
    f.tag(&mut b, "UPDATE district SET ytd = 0 WHERE w = 1 AND d = 1");
    assert_eq!(
        f.sqlstate(&mut a, "UPDATE district SET ytd = ytd + 1 WHERE d = 1"),
        "40001"
    );
    f.tag(&mut a, "ROLLBACK");
}

#[test]
fn lock_modes_conflict_as_in_postgresql() {
    let f = Fixture::new(COUNTERS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    // KEY SHARE lets an UPDATE of other columns through, but not FOR UPDATE.
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM counters WHERE id = 1 FOR KEY SHARE"),
        ["1"]
    );
    f.tag(&mut b, "UPDATE counters SET v = v + 1 WHERE id = 1");
    assert_eq!(
        f.sqlstate(
            &mut b,
            "SELECT id FROM counters WHERE id = 1 FOR UPDATE NOWAIT"
        ),
        "55P03"
    );
    f.tag(&mut b, "ROLLBACK");
    f.tag(&mut a, "ROLLBACK");
    // NO KEY UPDATE blocks SHARE but not KEY SHARE; OF names the table (several at once).
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.rows(
            &mut a,
            "SELECT c.id FROM counters c, counters d WHERE c.id = 2 AND d.id = c.id \
             FOR NO KEY UPDATE OF c, d"
        ),
        ["2"]
    );
    assert_eq!(
        f.rows(
            &mut b,
            "SELECT id FROM counters WHERE id = 2 FOR KEY SHARE NOWAIT"
        ),
        ["2"]
    );
    assert_eq!(
        f.sqlstate(
            &mut b,
            "SELECT id FROM counters WHERE id = 2 FOR SHARE NOWAIT"
        ),
        "55P03"
    );
    f.tag(&mut a, "COMMIT");
    f.tag(&mut b, "ROLLBACK");
}

#[test]
fn for_update_of_one_table_of_a_join_locks_that_table_only() {
    let f = Fixture::new(
        "CREATE TABLE orders (id INT PRIMARY KEY, customer INT, total BIGINT);
         CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(10));
         INSERT INTO customers VALUES (1, 'ada'), (2, 'bob');
         INSERT INTO orders VALUES (10, 1, 5), (11, 2, 7), (12, 1, 9);",
    );
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    assert_eq!(
        f.rows(
            &mut a,
            "SELECT o.*, c.name FROM orders o JOIN customers c ON c.id = o.customer \
             WHERE c.name = 'ada' ORDER BY o.id FOR UPDATE OF o"
        ),
        ["10|1|5|ada", "12|1|9|ada"]
    );
    // The customers' rows are free, the orders' are not.
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.rows(&mut b, "SELECT * FROM customers FOR UPDATE NOWAIT"),
        ["1|ada", "2|bob"]
    );
    f.tag(&mut b, "ROLLBACK");
    assert_eq!(
        f.rows(
            &mut b,
            "SELECT id FROM orders ORDER BY id FOR UPDATE SKIP LOCKED"
        ),
        ["11"]
    );
    f.tag(&mut a, "COMMIT");
}

#[test]
fn locking_clauses_pmdb_cannot_honour_are_refused() {
    let f = Fixture::new(COUNTERS);
    let mut s = f.session();
    for sql in [
        "SELECT count(*) FROM counters FOR UPDATE",
        "SELECT note, sum(v) FROM counters GROUP BY note FOR UPDATE",
        "SELECT DISTINCT note FROM counters FOR SHARE",
        "SELECT id FROM counters UNION SELECT id FROM counters FOR UPDATE",
        "SELECT * FROM (SELECT * FROM counters FOR UPDATE) s",
        "SELECT * FROM (SELECT * FROM counters) s FOR UPDATE",
        "SELECT a.id FROM counters a LEFT JOIN counters b ON a.id = b.v FOR UPDATE",
        "SELECT id, row_number() OVER () FROM counters FOR UPDATE",
        "WITH x AS (SELECT * FROM counters FOR UPDATE) SELECT * FROM x",
        "INSERT INTO counters SELECT id + 10, v, note FROM counters FOR UPDATE",
    ] {
        assert_eq!(f.sqlstate(&mut s, sql), "0A000", "{sql}");
    }
    for sql in [
        "SELECT * FROM counters FOR UPDATE OF nowhere",
        // Once aliased, a table is named by its alias, as in PostgreSQL.
        "SELECT * FROM counters c FOR UPDATE OF counters",
    ] {
        assert_eq!(f.sqlstate(&mut s, sql), "42P01", "{sql}");
    }
    // Not locked when refused: the rows are free.
    f.tag(&mut s, "BEGIN READ ONLY");
    assert_eq!(
        f.sqlstate(&mut s, "SELECT * FROM counters FOR UPDATE"),
        "25006"
    );
    f.tag(&mut s, "ROLLBACK");
    // LEFT JOIN locking only the side that is never NULL is fine.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a.id, b.id FROM counters a LEFT JOIN counters b ON b.id = a.v \
             ORDER BY a.id FOR UPDATE OF a"
        ),
        ["1|", "2|", "3|"]
    );
}

#[test]
fn prepared_locking_selects_lock_at_each_run() {
    let f = Fixture::new(COUNTERS);
    let (mut a, mut b) = (f.session(), f.session());
    let statement = pmdb_sql::parse("SELECT v FROM counters WHERE id = $1 FOR UPDATE")
        .unwrap()
        .pop_front()
        .unwrap();
    let prepared = f.rt.block_on(a.prepare(statement)).unwrap();
    f.tag(&mut a, "BEGIN");
    let out =
        f.rt.block_on(a.run_prepared(
            &prepared,
            vec![datafusion::common::ScalarValue::Int32(Some(3))],
        ))
        .unwrap();
    assert_eq!(rows_of(out), ["30"]);
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.sqlstate(
            &mut b,
            "SELECT * FROM counters WHERE id = 3 FOR SHARE NOWAIT"
        ),
        "55P03"
    );
    f.tag(&mut b, "ROLLBACK");
    f.tag(&mut a, "COMMIT");
}
