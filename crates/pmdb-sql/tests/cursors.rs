//! Cursors as PostgreSQL has them: DECLARE … CURSOR in a block (WITH HOLD outside one),
//! FETCH by count, NEXT, ALL, and for SCROLL cursors backward and absolute, each
//! tagged `FETCH n`; the rows of the snapshot the cursor was declared at; CLOSE, and
//! the end of the block closing cursors without HOLD.

mod common;

use common::{Fixture, rows_of};
use pmdb_sql::{CommandTag, Output};

const T: &str = "
    CREATE TABLE t (k INT PRIMARY KEY);
    INSERT INTO t VALUES (1), (2), (3), (4), (5);
";

fn fetched(f: &Fixture, s: &mut pmdb_sql::SqlSession, sql: &str) -> (Vec<String>, CommandTag) {
    match f.run(s, sql) {
        Output::Returned {
            tag,
            schema,
            batches,
        } => (rows_of(Output::Rows { schema, batches }), tag),
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn fetch_walks_the_rows_of_the_declaring_snapshot() {
    let f = Fixture::new(T);
    let mut s = f.session();
    assert_eq!(
        f.sqlstate(&mut s, "DECLARE c CURSOR FOR SELECT k FROM t"),
        "25P01"
    );
    // The block is missing before the binary form is refused, as PostgreSQL checks.
    assert_eq!(
        f.sqlstate(&mut s, "DECLARE c BINARY CURSOR FOR SELECT k FROM t"),
        "25P01"
    );
    f.tag(&mut s, "BEGIN");
    assert_eq!(
        f.sqlstate(&mut s, "DECLARE b BINARY CURSOR FOR SELECT k FROM t"),
        "0A000"
    );
    f.tag(&mut s, "ROLLBACK");
    f.tag(&mut s, "BEGIN");
    assert_eq!(
        f.tag(&mut s, "DECLARE c CURSOR FOR SELECT k FROM t ORDER BY k"),
        "DECLARE CURSOR"
    );
    // Rows written after the DECLARE are not the cursor's.
    f.tag(&mut s, "INSERT INTO t VALUES (6)");
    assert_eq!(
        fetched(&f, &mut s, "FETCH 2 FROM c"),
        (vec!["1".into(), "2".into()], CommandTag::fetch(2))
    );
    assert_eq!(fetched(&f, &mut s, "FETCH NEXT FROM c").0, ["3"]);
    assert_eq!(fetched(&f, &mut s, "FETCH ALL FROM c").0, ["4", "5"]);
    assert_eq!(
        fetched(&f, &mut s, "FETCH NEXT FROM c"),
        (vec![], CommandTag::fetch(0))
    );
    // Its rows are kept, so it can go back (as PostgreSQL's can when its plan allows).
    assert_eq!(fetched(&f, &mut s, "FETCH PRIOR FROM c").0, ["5"]);
    // Declared NO SCROLL: no way back.
    f.tag(&mut s, "DECLARE n NO SCROLL CURSOR FOR SELECT k FROM t");
    assert_eq!(f.sqlstate(&mut s, "FETCH PRIOR FROM n"), "55000");
    f.tag(&mut s, "ROLLBACK");
    // The block's end closed it.
    f.tag(&mut s, "BEGIN");
    assert_eq!(f.sqlstate(&mut s, "FETCH NEXT FROM c"), "34000");
    f.tag(&mut s, "ROLLBACK");
}

#[test]
fn scroll_and_hold_cursors() {
    let f = Fixture::new(T);
    let mut s = f.session();
    f.tag(
        &mut s,
        "DECLARE h SCROLL CURSOR WITH HOLD FOR SELECT k FROM t ORDER BY k",
    );
    assert_eq!(fetched(&f, &mut s, "FETCH ABSOLUTE 4 FROM h").0, ["4"]);
    assert_eq!(fetched(&f, &mut s, "FETCH BACKWARD 2 FROM h").0, ["3", "2"]);
    assert_eq!(fetched(&f, &mut s, "FETCH LAST FROM h").0, ["5"]);
    assert_eq!(fetched(&f, &mut s, "FETCH FIRST FROM h").0, ["1"]);
    assert_eq!(fetched(&f, &mut s, "FETCH RELATIVE 2 FROM h").0, ["3"]);
    // MOVE goes as FETCH would, returning nothing.
    assert_eq!(f.tag(&mut s, "MOVE BACKWARD 2 IN h"), "MOVE 2");
    assert_eq!(fetched(&f, &mut s, "FETCH NEXT FROM h").0, ["2"]);
    assert_eq!(f.tag(&mut s, "move forward 1 from h;"), "MOVE 1");
    // Negative counts go backward.
    assert_eq!(fetched(&f, &mut s, "FETCH -1 FROM h").0, ["2"]);
    assert_eq!(f.tag(&mut s, "MOVE RELATIVE -1 FROM h"), "MOVE 1");
    assert_eq!(fetched(&f, &mut s, "FETCH NEXT FROM h").0, ["2"]);
    // A cursor's name alone: the next row.
    assert_eq!(fetched(&f, &mut s, "FETCH h").0, ["3"]);
    assert_eq!(f.tag(&mut s, "MOVE h;"), "MOVE 1");
    assert_eq!(f.tag(&mut s, "MOVE BACKWARD 2 FROM h"), "MOVE 2");
    // FROM left out before the name.
    assert_eq!(f.tag(&mut s, "MOVE FORWARD 2 h"), "MOVE 2");
    assert_eq!(fetched(&f, &mut s, "FETCH 1 h").0, ["5"]);
    assert_eq!(f.tag(&mut s, "MOVE BACKWARD 3 h"), "MOVE 3");
    // A held cursor outlives blocks.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "COMMIT");
    assert_eq!(
        fetched(&f, &mut s, "FETCH FORWARD ALL FROM h").0,
        ["3", "4", "5"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "DECLARE h CURSOR WITH HOLD FOR SELECT 1"),
        "42P03"
    );
    assert_eq!(f.tag(&mut s, "CLOSE h"), "CLOSE CURSOR");
    assert_eq!(f.sqlstate(&mut s, "CLOSE h"), "34000");
    f.tag(&mut s, "DECLARE a CURSOR WITH HOLD FOR SELECT 1");
    assert_eq!(f.tag(&mut s, "CLOSE ALL"), "CLOSE CURSOR ALL");
    assert_eq!(f.sqlstate(&mut s, "FETCH NEXT FROM a"), "34000");
}

/// A cursor over a query with a locking clause locks the rows its query returns when it
/// is declared (its rows are read then), to the block's end; WITH HOLD is refused for
/// it, as in PostgreSQL, whose locks would outlive the block. A SELECT with no FROM has
/// no row to lock.
#[test]
fn a_cursor_for_update_locks_its_rows_to_the_end_of_the_block() {
    let f = Fixture::new(T);
    let mut s = f.session();
    let mut other = f.session();
    f.tag(&mut s, "BEGIN");
    f.tag(
        &mut s,
        "DECLARE c CURSOR FOR SELECT k FROM t WHERE k <= 2 FOR UPDATE",
    );
    assert_eq!(
        f.sqlstate(&mut other, "SELECT k FROM t WHERE k = 2 FOR UPDATE NOWAIT"),
        "55P03"
    );
    assert_eq!(
        f.rows(&mut other, "SELECT k FROM t WHERE k = 3 FOR UPDATE NOWAIT"),
        ["3"]
    );
    assert_eq!(fetched(&f, &mut s, "FETCH ALL FROM c").0, ["1", "2"]);
    assert_eq!(
        f.sqlstate(
            &mut s,
            "DECLARE h CURSOR WITH HOLD FOR SELECT k FROM t FOR UPDATE"
        ),
        "0A000"
    );
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(
        f.rows(&mut other, "SELECT k FROM t WHERE k = 2 FOR UPDATE NOWAIT"),
        ["2"]
    );
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DECLARE n CURSOR FOR SELECT 1 FOR UPDATE");
    assert_eq!(fetched(&f, &mut s, "FETCH n").0, ["1"]);
    f.tag(&mut s, "COMMIT");
}
