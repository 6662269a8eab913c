//! SQL transaction blocks across client sessions: BEGIN / COMMIT / ROLLBACK, reads of
//! the block's own changes (rows, indexes, UPDATE after UPDATE), isolation between
//! sessions, READ COMMITTED (the default) with writers of a row waiting for each other
//! and deadlocks as 40P01, serialization failures as SQLSTATE 40001, the failed-block
//! state, READ ONLY and SERIALIZABLE blocks, and columnar segments that stay honest when a block changes
//! a table whose segments hold its rows (without making the blocks conflict).

mod common;

use common::Fixture;
use pmdb_sql::{CommandTag, Output, SqlSession, TxnStatus};

const ACCOUNTS: &str = "
    CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(20), balance BIGINT);
    CREATE INDEX by_owner ON accounts (owner);
    INSERT INTO accounts VALUES (1, 'ada', 100), (2, 'grace', 50), (3, 'edsger', 0);
";

#[test]
fn a_block_sees_its_own_changes_and_others_see_them_at_commit() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    assert_eq!(f.tag(&mut a, "BEGIN"), "BEGIN");
    assert_eq!(a.status(), TxnStatus::InBlock);
    f.tag(&mut a, "INSERT INTO accounts VALUES (4, 'barbara', 7)");
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
    );
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
    );
    f.tag(&mut a, "DELETE FROM accounts WHERE id = 3");
    let inside = "SELECT id, balance FROM accounts ORDER BY id";
    assert_eq!(f.rows(&mut a, inside), ["1|102", "2|50", "4|7"]);
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM accounts WHERE owner = 'barbara'"),
        ["4"],
        "index lookups see the block's rows"
    );
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM accounts"), ["3"]);
    // Another session sees none of it yet.
    assert_eq!(f.rows(&mut b, inside), ["1|100", "2|50", "3|0"]);
    assert_eq!(f.tag(&mut a, "COMMIT"), "COMMIT");
    assert_eq!(a.status(), TxnStatus::Idle);
    assert_eq!(f.rows(&mut b, inside), ["1|102", "2|50", "4|7"]);
    assert_eq!(f.rows(&mut b, "SELECT count(*) FROM accounts"), ["3"]);
}

#[test]
fn rollback_discards_and_a_block_reads_one_snapshot() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "START TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(
        f.rows(&mut a, "SELECT balance FROM accounts WHERE id = 2"),
        ["50"]
    );
    f.tag(&mut b, "UPDATE accounts SET balance = 60 WHERE id = 2");
    assert_eq!(
        f.rows(&mut a, "SELECT balance FROM accounts WHERE id = 2"),
        ["50"],
        "the block's snapshot"
    );
    f.tag(&mut a, "INSERT INTO accounts VALUES (9, 'x', 1)");
    assert_eq!(f.tag(&mut a, "ROLLBACK"), "ROLLBACK");
    assert_eq!(
        f.rows(&mut a, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|100", "2|60", "3|0"]
    );
}

#[test]
fn the_second_of_two_conflicting_blocks_fails_with_40001_and_applies_nothing() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    // Under REPEATABLE READ, b waits for the row a holds, and a's commit then makes b's
    // snapshot too old for its write: the statement fails, as in PostgreSQL.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.tag(&mut b, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.rows(&mut b, "SELECT count(*) FROM accounts");
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance - 10 WHERE id = 1",
    );
    let waiting = f.start(b, "UPDATE accounts SET balance = balance - 20 WHERE id = 1");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, updated) = f.finish(waiting);
    assert_eq!(updated.unwrap_err().sqlstate(), "40001");
    assert_eq!(b.status(), TxnStatus::Failed);
    f.tag(&mut b, "ROLLBACK");
    // So does a write that finds its row by another column.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.tag(&mut b, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.rows(&mut b, "SELECT count(*) FROM accounts");
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = 0 WHERE owner = 'grace'",
    );
    let waiting = f.start(b, "UPDATE accounts SET balance = 1 WHERE owner = 'grace'");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, updated) = f.finish(waiting);
    assert_eq!(updated.unwrap_err().sqlstate(), "40001");
    f.tag(&mut b, "ROLLBACK");
    // A second inserter of a key waits for the first block, and fails with 23505 once
    // it commits.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.tag(&mut b, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.tag(&mut a, "INSERT INTO accounts VALUES (4, 'a', 4)");
    f.tag(&mut b, "INSERT INTO accounts VALUES (5, 'b', 5)");
    let waiting = f.start(b, "INSERT INTO accounts VALUES (4, 'b', 4)");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, inserted) = f.finish(waiting);
    assert_eq!(inserted.unwrap_err().sqlstate(), "23505");
    f.tag(&mut b, "ROLLBACK");
    // Under SERIALIZABLE, a block whose reads another's commit changed fails at COMMIT
    // (40001) and applies none of its writes.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    f.tag(&mut b, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    f.rows(&mut b, "SELECT balance FROM accounts WHERE id = 1");
    f.tag(&mut b, "INSERT INTO accounts VALUES (5, 'b', 5)");
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
    );
    f.tag(&mut a, "COMMIT");
    assert_eq!(f.sqlstate(&mut b, "COMMIT"), "40001");
    assert_eq!(
        b.status(),
        TxnStatus::Idle,
        "the failed commit ended the block"
    );
    assert_eq!(
        f.rows(
            &mut b,
            "SELECT id, owner, balance FROM accounts ORDER BY id"
        ),
        ["1|ada|91", "2|grace|0", "3|edsger|0", "4|a|4"]
    );
}

#[test]
fn read_committed_writers_of_a_row_wait_for_each_other_and_lose_nothing() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    let balance = |f: &Fixture, s: &mut SqlSession, id: i32| {
        f.rows(s, &format!("SELECT balance FROM accounts WHERE id = {id}"))
    };
    // BEGIN is READ COMMITTED, as in PostgreSQL: b waits for a, then adds to what a
    // committed, and neither fails.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 10 WHERE id = 1",
    );
    let waiting = f.start(b, "UPDATE accounts SET balance = balance + 20 WHERE id = 1");
    f.still_waiting(&waiting);
    assert_eq!(balance(&f, &mut a, 1), ["110"]);
    f.tag(&mut a, "COMMIT");
    let (mut b, updated) = f.finish(waiting);
    assert!(matches!(updated.unwrap(), Output::Command(tag) if tag == CommandTag::update(1)));
    assert_eq!(balance(&f, &mut b, 1), ["130"]);
    f.tag(&mut b, "COMMIT");
    assert_eq!(balance(&f, &mut a, 1), ["130"]);

    // A statement outside any block waits for the block too.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "UPDATE accounts SET balance = 0 WHERE id = 2");
    let waiting = f.start(b, "UPDATE accounts SET balance = balance + 1 WHERE id = 2");
    f.still_waiting(&waiting);
    f.tag(&mut a, "COMMIT");
    let (mut b, updated) = f.finish(waiting);
    updated.unwrap();
    assert_eq!(balance(&f, &mut b, 2), ["1"]);

    // Each statement of the block reads what was committed before it began.
    f.tag(&mut a, "BEGIN");
    assert_eq!(balance(&f, &mut a, 3), ["0"]);
    f.tag(&mut b, "UPDATE accounts SET balance = 7 WHERE id = 3");
    assert_eq!(balance(&f, &mut a, 3), ["7"]);
    f.tag(&mut a, "ROLLBACK");

    // Two blocks that wait for each other's rows: the one that would close the cycle
    // fails with 40P01, its block with it, and the other goes on.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut b, "BEGIN");
    f.tag(&mut a, "UPDATE accounts SET balance = 1 WHERE id = 1");
    f.tag(&mut b, "UPDATE accounts SET balance = 2 WHERE id = 2");
    let waiting = f.start(a, "UPDATE accounts SET balance = 1 WHERE id = 2");
    f.still_waiting(&waiting);
    assert_eq!(
        f.sqlstate(&mut b, "UPDATE accounts SET balance = 2 WHERE id = 1"),
        "40P01"
    );
    assert_eq!(b.status(), TxnStatus::Failed);
    f.tag(&mut b, "ROLLBACK");
    let (mut a, updated) = f.finish(waiting);
    updated.unwrap();
    f.tag(&mut a, "COMMIT");
    assert_eq!(
        f.rows(&mut b, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|1", "2|1", "3|7"]
    );
}

#[test]
fn an_error_fails_the_block_until_it_ends() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO accounts VALUES (7, 'x', 1)");
    assert_eq!(
        f.sqlstate(&mut a, "INSERT INTO accounts VALUES (1, 'dup', 0)"),
        "23505"
    );
    assert_eq!(a.status(), TxnStatus::Failed);
    assert_eq!(f.sqlstate(&mut a, "SELECT 1"), "25P02");
    assert_eq!(
        f.tag(&mut a, "COMMIT"),
        "ROLLBACK",
        "a failed block rolls back"
    );
    assert_eq!(a.status(), TxnStatus::Idle);
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM accounts"), ["3"]);
    // Savepoints and SET TRANSACTION need a block.
    assert_eq!(f.sqlstate(&mut a, "SAVEPOINT s"), "25P01");
    assert_eq!(
        f.sqlstate(&mut a, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        "25P01"
    );
}

#[test]
fn read_only_and_serializable_blocks() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN READ ONLY");
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM accounts"), ["3"]);
    assert_eq!(
        f.sqlstate(&mut a, "DELETE FROM accounts WHERE id = 1"),
        "25006"
    );
    f.tag(&mut a, "ROLLBACK");

    // Write skew: each block checks the total and takes from a different account.
    let skew = |isolation: &str, a: &mut SqlSession, b: &mut SqlSession| {
        for s in [&mut *a, &mut *b] {
            f.tag(s, &format!("BEGIN ISOLATION LEVEL {isolation}"));
            assert_eq!(f.rows(s, "SELECT sum(balance) FROM accounts"), ["150"]);
        }
        f.tag(
            a,
            "UPDATE accounts SET balance = balance - 150 WHERE id = 1",
        );
        f.tag(
            b,
            "UPDATE accounts SET balance = balance - 150 WHERE id = 2",
        );
        f.tag(a, "COMMIT");
        f.try_run(b, "COMMIT")
    };
    assert!(skew("REPEATABLE READ", &mut a, &mut b).is_ok());
    f.tag(&mut a, "UPDATE accounts SET balance = 100 WHERE id = 1");
    f.tag(&mut a, "UPDATE accounts SET balance = 50 WHERE id = 2");
    let err = skew("SERIALIZABLE", &mut a, &mut b).expect_err("write skew refused");
    assert_eq!(err.sqlstate(), "40001", "{err}");

    // SET TRANSACTION before the first query picks the isolation of the block.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
    f.rows(&mut a, "SELECT 1");
    assert_eq!(
        f.sqlstate(&mut a, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"),
        "25001"
    );
}

#[test]
fn a_block_changing_a_table_with_whole_segments_makes_them_stale() {
    let f = Fixture::new(
        "CREATE TABLE t (k INT PRIMARY KEY, v BIGINT);
         INSERT INTO t SELECT value, value * 2 FROM generate_series(1, 2000);
         ANALYZE t;",
    );
    let (mut a, mut b) = (f.session(), f.session());
    let total = "SELECT count(*), sum(v) FROM t";
    assert_eq!(f.rows(&mut a, total), ["2000|4002000"]);
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO t VALUES (5000, 1)");
    f.tag(&mut a, "DELETE FROM t WHERE k = 1");
    assert_eq!(
        f.rows(&mut a, total),
        ["2000|4001999"],
        "the block's own view"
    );
    assert_eq!(
        f.rows(&mut b, total),
        ["2000|4002000"],
        "the segments still hold"
    );
    f.tag(&mut a, "COMMIT");
    assert_eq!(f.rows(&mut b, total), ["2000|4001999"]);
    // ANALYZE builds them again, with the count made exact.
    f.tag(&mut b, "ANALYZE t");
    assert_eq!(f.rows(&mut b, total), ["2000|4001999"]);
}

#[test]
fn blocks_writing_a_table_whose_segments_go_stale_do_not_conflict() {
    let f = Fixture::new(
        "CREATE TABLE t (k INT PRIMARY KEY, v BIGINT);
         INSERT INTO t SELECT value, value * 2 FROM generate_series(1, 100);
         ANALYZE t;",
    );
    let (mut a, mut b, mut c) = (f.session(), f.session(), f.session());
    // a and b both see the segments whole and make them stale; c begins after a has,
    // so it finds them stale already: the three write different rows and all commit.
    for (s, k) in [(&mut a, 1000), (&mut b, 1001)] {
        f.tag(s, "BEGIN");
        f.tag(s, &format!("INSERT INTO t VALUES ({k}, 0)"));
    }
    f.tag(&mut a, "COMMIT");
    f.tag(&mut c, "BEGIN");
    f.tag(&mut c, "INSERT INTO t VALUES (1002, 0)");
    f.tag(&mut b, "COMMIT");
    f.tag(&mut c, "COMMIT");
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM t"), ["103"]);
}

#[test]
fn prepare_finds_parameter_and_column_types_without_running() {
    use datafusion::arrow::datatypes::DataType;
    let f = Fixture::new(ACCOUNTS);
    let mut s = f.session();
    let mut describe = |sql: &str| {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        f.rt.block_on(s.prepare(statement)).unwrap()
    };
    let d = describe("SELECT owner, balance FROM accounts WHERE id = $1");
    assert_eq!(d.parameter_types(), [Some(DataType::Int32)]);
    let columns = d.columns().expect("rows");
    assert_eq!(columns.field(0).name(), "owner");
    assert_eq!(columns.field(1).data_type(), &DataType::Int64);
    let d = describe("UPDATE accounts SET balance = balance + $1 WHERE id = $2");
    assert_eq!(
        d.parameter_types(),
        [Some(DataType::Int64), Some(DataType::Int32)]
    );
    assert!(d.columns().is_none());
    let d = describe("INSERT INTO accounts VALUES ($1, $2, $3)");
    assert_eq!(
        d.parameter_types(),
        [
            Some(DataType::Int32),
            Some(DataType::Utf8),
            Some(DataType::Int64)
        ]
    );
    let d = describe("CREATE TABLE x (a INT)");
    assert!(d.parameters().is_empty() && d.columns().is_none());
    assert_eq!(
        f.rows(&mut f.session(), "SELECT count(*) FROM accounts"),
        ["3"],
        "nothing ran"
    );
}

#[test]
fn a_block_reads_the_snapshot_of_its_first_statement_not_of_begin() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    let balance = "SELECT balance FROM accounts WHERE id = 1";
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    // Committed after BEGIN but before the block's first statement: seen, and a write of
    // the same row does not conflict with it.
    f.tag(&mut b, "UPDATE accounts SET balance = 111 WHERE id = 1");
    assert_eq!(f.rows(&mut a, balance), ["111"]);
    // Committed after the first statement: not seen.
    f.tag(&mut b, "UPDATE accounts SET balance = 222 WHERE id = 2");
    assert_eq!(
        f.rows(&mut a, "SELECT balance FROM accounts WHERE id = 2"),
        ["50"]
    );
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
    );
    f.tag(&mut a, "COMMIT");
    assert_eq!(f.rows(&mut b, balance), ["112"]);
    // SET TRANSACTION still works until the first statement, and not after.
    f.tag(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    f.tag(&mut a, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
    f.rows(&mut a, balance);
    assert_eq!(
        f.sqlstate(&mut a, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"),
        "25001"
    );
    f.tag(&mut a, "ROLLBACK");
}

#[test]
fn one_sessions_set_reaches_no_other() {
    let f = Fixture::new(ACCOUNTS);
    let (mut a, mut b) = (f.session(), f.session());
    const SETTING: &str = "SELECT value FROM information_schema.df_settings \
                           WHERE name = 'datafusion.execution.batch_size'";
    let default = f.rows(&mut b, SETTING);
    assert_ne!(default, ["7"]);
    f.tag(&mut a, "SET datafusion.execution.batch_size = 7");
    assert_eq!(f.rows(&mut a, SETTING), ["7"]);
    assert_eq!(f.rows(&mut b, SETTING), default, "b keeps its own settings");
    assert_eq!(
        f.rows(&mut f.session(), SETTING),
        default,
        "a new session starts from the defaults"
    );
    // a's setting is in force for its own queries.
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM accounts"), ["3"]);
}

/// `txid_current()` gives a transaction one id for all its statements and the next
/// transaction another: a block, and each statement outside one, is a transaction; two
/// sessions never share an id, and ids rise above every commit made.
#[test]
fn txid_current_names_the_transaction_it_is_called_in() {
    let f = Fixture::new(ACCOUNTS);
    let mut a = f.session();
    let mut b = f.session();
    let id = |s: &mut SqlSession| -> i64 { f.rows(s, "SELECT txid_current()")[0].parse().unwrap() };
    let outside = [id(&mut a), id(&mut a)];
    assert_ne!(outside[0], outside[1], "two statements outside a block");
    f.tag(&mut a, "BEGIN");
    let first = id(&mut a);
    f.tag(
        &mut a,
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
    );
    assert_eq!(id(&mut a), first, "one block, one id");
    let other = id(&mut b);
    assert_ne!(other, first, "another session's transaction");
    f.tag(&mut a, "COMMIT");
    let after = id(&mut a);
    assert!(
        after > first && after != other,
        "{after} after {first} and {other}"
    );
    f.tag(&mut b, "BEGIN");
    let in_b = id(&mut b);
    f.tag(&mut b, "ROLLBACK");
    assert_ne!(
        id(&mut b),
        in_b,
        "a rolled-back block's id is not given again"
    );
    // A statement of several rows is one transaction.
    let rows = f.rows(&mut a, "SELECT txid_current() FROM accounts ORDER BY id");
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| *r == rows[0]), "{rows:?}");
}
