//! Result columns carry the names PostgreSQL gives them (its FigureColname), whether the
//! statement runs at once or is prepared and run with parameters: a column by its name, a
//! function by its own, a cast of something unnamed by its type, a subquery by its
//! column, `case` (or its ELSE's name), `exists`, `array`, `row`, else `?column?`.

mod common;

use common::Fixture;
use pmdb_sql::Output;

const SETUP: &str = "CREATE TABLE t (a INT PRIMARY KEY, b TEXT, c NUMERIC(10,2)); \
                     INSERT INTO t VALUES (1, 'x', 2.5)";

/// Each query and the names PostgreSQL 15 shows for its columns.
const QUERIES: &[(&str, &[&str])] = &[
    ("SELECT 1", &["?column?"]),
    ("SELECT 1 + 1, 'x', 2.5, true, NULL", &["?column?"; 5]),
    (
        "SELECT a, a * 2, -a, a IS NULL FROM t",
        &["a", "?column?", "?column?", "?column?"],
    ),
    ("SELECT t.a, b AS named FROM t", &["a", "named"]),
    (
        "SELECT count(*), sum(c), avg(a), max(b) FROM t",
        &["count", "sum", "avg", "max"],
    ),
    (
        "SELECT upper(b), length(b), coalesce(a, 2) FROM t",
        &["upper", "length", "coalesce"],
    ),
    (
        "SELECT b::int, CAST(a AS TEXT), 1::int, '7'::numeric FROM t WHERE false",
        &["b", "a", "int4", "numeric"],
    ),
    (
        "SELECT CASE WHEN a = 1 THEN 1 END, CASE WHEN a = 1 THEN 'y' ELSE b END FROM t",
        &["case", "b"],
    ),
    (
        "SELECT EXISTS (SELECT 1 FROM t), (SELECT b FROM t), (SELECT 1)",
        &["exists", "b", "?column?"],
    ),
    ("SELECT now(), current_user", &["now", "current_user"]),
    ("SELECT row_number() OVER () FROM t", &["row_number"]),
    (
        "SELECT DATE '2024-01-02', INTERVAL '1 day'",
        &["date", "interval"],
    ),
    ("SELECT a, a FROM t", &["a", "a"]),
    (
        "SELECT sum(a::bigint), sum(a), avg(a::real), avg(a), count(a::text) FROM t",
        &["sum", "sum", "avg", "avg", "count"],
    ),
    (
        "SELECT ARRAY[a]::text, ROW(a, b), 'x'::text::varchar FROM t",
        &["array", "row", "varchar"],
    ),
    (
        "SELECT '{1}'::int[], '{}'::json[], '{}'::uuid[], ARRAY['{}']::jsonb[]",
        &["int4", "json", "uuid", "array"],
    ),
];

fn names(out: Output) -> Vec<String> {
    match out {
        Output::Rows { schema, .. } => schema.fields().iter().map(|f| f.name().clone()).collect(),
        _ => panic!("rows expected"),
    }
}

#[test]
fn columns_are_named_as_postgresql_names_them() {
    let f = Fixture::new(SETUP);
    let mut s = f.session();
    for (sql, expected) in QUERIES {
        assert_eq!(names(f.run(&mut s, sql)), *expected, "{sql}");
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
        let described: Vec<String> = prepared
            .columns()
            .expect("a query's columns")
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(described, *expected, "described: {sql}");
        let out =
            f.rt.block_on(s.run_prepared(&prepared, Vec::new()))
                .unwrap();
        assert_eq!(names(out), *expected, "prepared: {sql}");
    }
}

#[test]
fn rows_from_a_query_that_repeats_a_name_can_be_inserted() {
    let f = Fixture::new(SETUP);
    let mut s = f.session();
    f.tag(&mut s, "CREATE TABLE pairs (x INT, y INT)");
    assert_eq!(
        f.tag(
            &mut s,
            "INSERT INTO pairs SELECT value, value FROM generate_series(1, 3)"
        ),
        "INSERT 0 3"
    );
    assert_eq!(f.rows(&mut s, "SELECT sum(x), sum(y) FROM pairs"), ["6|6"]);
}

#[test]
fn aggregates_whose_arguments_differ_by_a_cast_are_apart() {
    let f = Fixture::new(SETUP);
    let mut s = f.session();
    f.tag(&mut s, "INSERT INTO t VALUES (2, 'y', 1), (4, 'z', 1)");
    // DataFusion names `sum(a::bigint)` as `sum(a)` and refused the pair; PostgreSQL 15
    // gives each its own answer.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT max(a::text), max(a), min(-a::bigint), min(-a), count(c::int), count(c) FROM t"
        ),
        ["4|4|-4|-4|3|3"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT b, sum(a::bigint * 2), sum(a) FROM t GROUP BY b ORDER BY b"
        ),
        ["x|2|1", "y|4|2", "z|8|4"]
    );
}
