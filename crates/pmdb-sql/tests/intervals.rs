//! INTERVAL columns as PostgreSQL has them: read from its input forms, written in its
//! output style, compared and sorted by span (a month as 30 days), scaled by numbers,
//! added to timestamps, bound as parameters, kept across a reopen and in columnar
//! segments; what pmdb cannot do as PostgreSQL does (interval keys and indexes, GROUP BY
//! and DISTINCT over intervals) refused with 0A000. Each expected answer is PostgreSQL
//! 15's for the same statement.

mod common;

use common::{Fixture, same_from_segments_and_after_reopen};
use datafusion::arrow::datatypes::IntervalMonthDayNano;
use datafusion::common::ScalarValue;
use datafusion::sql::parser::Statement as DfStatement;

const TABLE: &str = "CREATE TABLE iv (id INT PRIMARY KEY, d INTERVAL NOT NULL)";

const ROWS: &str = "INSERT INTO iv VALUES
    (1, '1 day 2 hours'), (2, INTERVAL '1 mon'), (3, '30 days'),
    (4, '-1 day +02:03:00'), (5, 'P1Y2M3DT4H5M6.5S')";

fn fixture() -> Fixture {
    let f = Fixture::new(TABLE);
    let mut s = f.session();
    f.tag(&mut s, ROWS);
    f
}

#[test]
fn written_and_ordered_as_postgresql_does() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT id, d::text AS shown FROM iv ORDER BY d, id"),
        [
            "4|-1 days +02:03:00",
            "1|1 day 02:00:00",
            "2|1 mon",
            "3|30 days",
            "5|1 year 2 mons 3 days 04:05:06.5",
        ]
    );
    // '1 mon' equals '30 days', and is less than '40 days'.
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM iv WHERE d = '30 days' ORDER BY id"),
        ["2", "3"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM iv WHERE d BETWEEN '20 days' AND '40 days' ORDER BY id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM iv WHERE d IN ('1 day', '720 hours') ORDER BY id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM iv WHERE d > '1 day' ORDER BY id DESC"
        ),
        ["5", "3", "2", "1"]
    );
    // Sums add field by field, as PostgreSQL's do.
    assert_eq!(
        f.rows(&mut s, "SELECT sum(d)::text FROM iv"),
        ["1 year 3 mons 33 days 08:08:06.5"]
    );
}

#[test]
fn arithmetic_as_postgresql_does() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT (d * 2)::text, (d / 4)::text, (1.5 * d)::text, (d + INTERVAL '1 hour')::text \
             FROM iv WHERE id IN (2, 4, 5) ORDER BY id"
        ),
        [
            "2 mons|7 days 12:00:00|1 mon 15 days|1 mon 01:00:00",
            "-2 days +04:06:00|-05:29:15|-1 days -08:55:30|-1 days +03:03:00",
            "2 years 4 mons 6 days 08:10:13|3 mons 15 days 19:01:16.625|\
             1 year 9 mons 4 days 18:07:39.75|1 year 2 mons 3 days 05:05:06.5",
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT TIMESTAMP '2024-01-31 10:00:00' + d FROM iv WHERE id = 2"
        ),
        ["2024-02-29T10:00:00"]
    );
    f.tag(&mut s, "UPDATE iv SET d = d * 2 WHERE id = 1");
    assert_eq!(
        f.rows(&mut s, "SELECT d::text FROM iv WHERE id = 1"),
        ["2 days 04:00:00"]
    );
}

#[test]
fn bad_input_and_what_pmdb_cannot_honour_are_refused() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO iv VALUES (9, '1 fortnight')"),
        "22007"
    );
    assert_eq!(
        f.sqlstate(&mut s, "SELECT '999999999999 years'::interval"),
        "22015"
    );
    for refused in [
        "CREATE INDEX iv_d ON iv (d)",
        "CREATE TABLE keyed (d INTERVAL PRIMARY KEY)",
        "SELECT d, count(*) FROM iv GROUP BY d",
        "SELECT DISTINCT d FROM iv",
        "SELECT max(d) FROM iv",
        "SELECT id, min(d) FROM iv GROUP BY id",
        "CREATE TABLE fielded (d INTERVAL DAY TO SECOND)",
    ] {
        assert_eq!(f.sqlstate(&mut s, refused), "0A000", "{refused}");
    }
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM iv"),
        ["5"],
        "nothing changed"
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
            let day = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 1, 0)));
            let statement: DfStatement = pmdb_sql::parse("INSERT INTO iv VALUES ($1, $2)")
                .unwrap()
                .pop_front()
                .unwrap();
            let p = rt.block_on(s.prepare(statement)).unwrap();
            rt.block_on(s.run_prepared(&p, vec![ScalarValue::Int32(Some(6)), day]))
                .unwrap();
        },
        "iv",
        "SELECT id, d::text FROM iv ORDER BY id",
    );
    assert_eq!(rows[5], "6|1 day");
}
