//! Savepoints in transaction blocks: ROLLBACK TO SAVEPOINT undoes the block's writes
//! since (rows, index entries, row counts) and gives back the row locks taken since;
//! RELEASE keeps them; names nest and repeat as in PostgreSQL; a rollback to a savepoint
//! revives a block an error failed.

mod common;

use common::Fixture;
use pmdb_sql::TxnStatus;

const ITEMS: &str = "
    CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), qty BIGINT);
    CREATE INDEX by_name ON items (name);
    INSERT INTO items VALUES (1, 'bolt', 10), (2, 'nut', 20);
";

#[test]
fn rollback_to_a_savepoint_undoes_the_writes_made_after_it() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO items VALUES (3, 'gear', 30)");
    assert_eq!(f.tag(&mut a, "SAVEPOINT before_changes"), "SAVEPOINT");
    f.tag(&mut a, "UPDATE items SET qty = qty + 1 WHERE id = 1");
    f.tag(&mut a, "DELETE FROM items WHERE id = 2");
    f.tag(&mut a, "INSERT INTO items VALUES (4, 'cog', 40)");
    f.tag(&mut a, "SAVEPOINT Inner");
    f.tag(&mut a, "UPDATE items SET name = 'washer' WHERE id = 3");
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["3"]);
    // Names fold to lower case unless quoted.
    assert_eq!(f.tag(&mut a, "ROLLBACK TO SAVEPOINT inner"), "ROLLBACK");
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM items WHERE name = 'gear'"),
        ["3"]
    );
    f.tag(&mut a, "ROLLBACK TO before_changes");
    let all = "SELECT id, name, qty FROM items ORDER BY id";
    assert_eq!(f.rows(&mut a, all), ["1|bolt|10", "2|nut|20", "3|gear|30"]);
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["3"]);
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM items WHERE name = 'cog'"),
        Vec::<String>::new(),
        "the index entry of the undone insert is gone"
    );
    // The savepoint stays after a rollback to it; the one opened after it is gone.
    f.tag(&mut a, "UPDATE items SET qty = 0 WHERE id = 2");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT before_changes");
    assert_eq!(f.sqlstate(&mut a, "RELEASE SAVEPOINT inner"), "3B001");
    assert_eq!(a.status(), TxnStatus::Failed);
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT before_changes");
    assert_eq!(f.tag(&mut a, "COMMIT"), "COMMIT");
    let mut b = f.session();
    assert_eq!(f.rows(&mut b, all), ["1|bolt|10", "2|nut|20", "3|gear|30"]);
    assert_eq!(f.rows(&mut b, "SELECT count(*) FROM items"), ["3"]);
}

#[test]
fn release_keeps_the_writes_and_a_repeated_name_means_the_latest() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "SAVEPOINT s");
    f.tag(&mut a, "UPDATE items SET qty = 11 WHERE id = 1");
    f.tag(&mut a, "SAVEPOINT s");
    f.tag(&mut a, "UPDATE items SET qty = 12 WHERE id = 1");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT s");
    let qty = "SELECT qty FROM items WHERE id = 1";
    assert_eq!(
        f.rows(&mut a, qty),
        ["11"],
        "the latest s is rolled back to"
    );
    assert_eq!(f.tag(&mut a, "RELEASE SAVEPOINT s"), "RELEASE");
    f.tag(&mut a, "UPDATE items SET qty = 13 WHERE id = 1");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT s");
    assert_eq!(f.rows(&mut a, qty), ["10"], "the first s remains");
    f.tag(&mut a, "UPDATE items SET qty = 14 WHERE id = 1");
    f.tag(&mut a, "RELEASE s");
    assert_eq!(f.sqlstate(&mut a, "ROLLBACK TO s"), "3B001");
    f.tag(&mut a, "ROLLBACK");
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "SAVEPOINT s");
    f.tag(&mut a, "UPDATE items SET qty = 15 WHERE id = 1");
    f.tag(&mut a, "RELEASE SAVEPOINT s");
    f.tag(&mut a, "COMMIT");
    assert_eq!(f.rows(&mut f.session(), qty), ["15"]);
}

#[test]
fn a_rollback_to_a_savepoint_revives_a_failed_block() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO items VALUES (3, 'gear', 30)");
    f.tag(&mut a, "SAVEPOINT attempt");
    f.tag(&mut a, "INSERT INTO items VALUES (4, 'cog', 40)");
    assert_eq!(
        f.sqlstate(&mut a, "INSERT INTO items VALUES (1, 'dup', 0)"),
        "23505"
    );
    assert_eq!(a.status(), TxnStatus::Failed);
    assert_eq!(f.sqlstate(&mut a, "SELECT 1"), "25P02");
    assert_eq!(f.sqlstate(&mut a, "SAVEPOINT again"), "25P02");
    assert_eq!(f.sqlstate(&mut a, "RELEASE attempt"), "25P02");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT attempt");
    assert_eq!(a.status(), TxnStatus::InBlock);
    f.tag(&mut a, "INSERT INTO items VALUES (5, 'pin', 50)");
    f.tag(&mut a, "COMMIT");
    assert_eq!(
        f.rows(&mut f.session(), "SELECT id FROM items ORDER BY id"),
        ["1", "2", "3", "5"]
    );
    // Outside a block there is no savepoint to take, release or return to.
    for statement in ["SAVEPOINT s", "RELEASE s", "ROLLBACK TO s"] {
        assert_eq!(f.sqlstate(&mut a, statement), "25P01", "{statement}");
    }
}

#[test]
fn a_rollback_to_a_savepoint_gives_back_the_row_locks_taken_after_it() {
    let f = Fixture::new(ITEMS);
    let (mut a, mut b) = (f.session(), f.session());
    f.tag(&mut a, "BEGIN");
    f.rows(&mut a, "SELECT * FROM items WHERE id = 1 FOR KEY SHARE");
    f.tag(&mut a, "SAVEPOINT s");
    f.rows(&mut a, "SELECT * FROM items WHERE id = 1 FOR UPDATE");
    f.tag(&mut a, "UPDATE items SET qty = 0 WHERE id = 2");
    let lock_2 = "SELECT * FROM items WHERE id = 2 FOR UPDATE NOWAIT";
    let lock_1 = "SELECT * FROM items WHERE id = 1 FOR UPDATE NOWAIT";
    f.tag(&mut b, "BEGIN");
    assert_eq!(f.sqlstate(&mut b, lock_2), "55P03");
    f.tag(&mut b, "ROLLBACK");
    f.tag(&mut a, "ROLLBACK TO SAVEPOINT s");
    f.tag(&mut b, "BEGIN");
    assert_eq!(
        f.rows(&mut b, lock_2),
        ["2|nut|20"],
        "the row is free again"
    );
    // The lock taken before the savepoint is held, back in its weaker mode.
    assert_eq!(f.sqlstate(&mut b, lock_1), "55P03");
    f.tag(&mut b, "ROLLBACK");
    f.tag(&mut b, "BEGIN");
    f.rows(
        &mut b,
        "SELECT * FROM items WHERE id = 1 FOR NO KEY UPDATE NOWAIT",
    );
    f.tag(&mut b, "COMMIT");
    f.tag(&mut a, "COMMIT");
}
