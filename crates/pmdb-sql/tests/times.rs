//! TIME columns as PostgreSQL has them: read from its input forms (`4:05 PM`, a date
//! before the time, `24:00:00`, `allballs`), written as `HH:MM:SS` with the fraction
//! digits they need, compared, sorted and keyed in time order, added to intervals and
//! dates, bound as parameters, kept across a reopen and in columnar segments; input
//! PostgreSQL refuses refused with its state, and a precision pmdb would have to round
//! to refused with 0A000. Each expected answer is PostgreSQL 15's for the same statement.

mod common;

use common::{Fixture, same_from_segments_and_after_reopen};
use datafusion::common::ScalarValue;
use datafusion::sql::parser::Statement as DfStatement;

const TABLE: &str = "CREATE TABLE tm (id INT PRIMARY KEY, t TIME NOT NULL, u TIME(6))";

const ROWS: &str = "INSERT INTO tm VALUES
    (1, '12:34:56.789', '04:05 PM'), (2, '24:00:00', NULL), (3, '2003-04-12 00:00:01', '1:2'),
    (4, TIME '08:00', 'allballs'), (5, '12:34:56.7890004', '23:59:59.999999')";

fn fixture() -> Fixture {
    let f = Fixture::new(TABLE);
    let mut s = f.session();
    f.tag(&mut s, ROWS);
    f
}

#[test]
fn read_and_written_as_postgresql_does() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT id, t::text, u::text FROM tm ORDER BY t, id"),
        [
            "3|00:00:01|01:02:00",
            "4|08:00:00|00:00:00",
            "1|12:34:56.789|16:05:00",
            "5|12:34:56.789|23:59:59.999999",
            "2|24:00:00|",
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM tm WHERE t > '08:00' AND t < '1:00 PM' ORDER BY id"
        ),
        ["1", "5"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM tm WHERE t = '12:34:56.789' ORDER BY id"
        ),
        ["1", "5"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT min(t)::text, max(t)::text FROM tm"),
        ["00:00:01|24:00:00"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT (t + INTERVAL '1 hour')::text, (DATE '2024-02-29' + t)::text \
             FROM tm WHERE id = 4"
        ),
        ["09:00:00|2024-02-29 08:00:00"]
    );
    // The clock's time of day compares with a column's (every row is on one side), and
    // `localtime` / `localtimestamp` are the statement's time without a zone (UTC's).
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT count(*) FROM tm WHERE t <= current_time OR t > localtime"
        ),
        ["5"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT localtimestamp = now()::timestamp, localtime = now()::time"
        ),
        ["true|true"]
    );
    f.tag(&mut s, "UPDATE tm SET u = t WHERE id = 2");
    assert_eq!(
        f.rows(&mut s, "SELECT u::text FROM tm WHERE id = 2"),
        ["24:00:00"]
    );
}

#[test]
fn time_keys_and_indexes_order_by_time() {
    let f = Fixture::new("CREATE TABLE slots (at TIME PRIMARY KEY, room INT)");
    let mut s = f.session();
    f.tag(
        &mut s,
        "INSERT INTO slots VALUES ('10:00', 1), ('9:30', 2), ('23:00', 3), ('00:15', 4)",
    );
    f.tag(&mut s, "CREATE INDEX slots_room ON slots (room)");
    assert_eq!(
        f.rows(&mut s, "SELECT at::text FROM slots ORDER BY at"),
        ["00:15:00", "09:30:00", "10:00:00", "23:00:00"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT room FROM slots WHERE at = '09:30:00'"),
        ["2"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO slots VALUES ('9:30 AM', 5)"),
        "23505"
    );
}

#[test]
fn bad_input_and_what_pmdb_cannot_honour_are_refused() {
    let f = fixture();
    let mut s = f.session();
    for (bad, state) in [
        ("INSERT INTO tm VALUES (9, '25:00', NULL)", "22008"),
        ("INSERT INTO tm VALUES (9, '24:00:01', NULL)", "22008"),
        ("INSERT INTO tm VALUES (9, '12:60', NULL)", "22008"),
        ("INSERT INTO tm VALUES (9, 'noon', NULL)", "22007"),
        ("SELECT '13:00 PM'::time", "22008"),
        ("SELECT CAST('1:2:3:4' AS TIME)", "22007"),
        ("CREATE TABLE rounded (t TIME(3))", "0A000"),
        ("CREATE TABLE zoned (t TIME WITH TIME ZONE)", "0A000"),
        // TIMESTAMP's precision is microseconds too: fewer digits would round.
        ("CREATE TABLE rounded (t TIMESTAMP(0))", "0A000"),
        (
            "CREATE TABLE rounded (t TIMESTAMP(3) WITH TIME ZONE)",
            "0A000",
        ),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM tm"),
        ["5"],
        "nothing changed"
    );
    // Six digits is the precision pmdb keeps: taken as written.
    f.tag(
        &mut s,
        "CREATE TABLE precise (a TIME(6), b TIMESTAMP(6), c TIMESTAMPTZ(6))",
    );
}

#[test]
fn parameters_bind_and_values_survive_a_reopen_and_segments() {
    let (rows, _, _) = same_from_segments_and_after_reopen(
        |engine| {
            engine.execute(TABLE).unwrap();
            engine.execute(ROWS).unwrap();
            let rt = tokio::runtime::Runtime::new().unwrap();
            let mut s = engine.session();
            let statement: DfStatement =
                pmdb_sql::parse("INSERT INTO tm VALUES ($1, $2::time, $3)")
                    .unwrap()
                    .pop_front()
                    .unwrap();
            let p = rt.block_on(s.prepare(statement)).unwrap();
            let noon = ScalarValue::Time64Microsecond(Some(12 * 3_600_000_000 + 5));
            rt.block_on(s.run_prepared(&p, vec![ScalarValue::Int32(Some(6)), noon.clone(), noon]))
                .unwrap();
        },
        "tm",
        "SELECT id, t::text, u::text FROM tm ORDER BY id",
    );
    assert_eq!(rows[5], "6|12:00:00.000005|12:00:00.000005");
}
