//! Queries PostgreSQL answers that DataFusion alone refuses: subqueries correlated by
//! something other than equality (run per outer row, as PostgreSQL's SubPlan), in the
//! select list, in CASE, in WHERE, under EXISTS and IN (`1 IN (SELECT …)` in a select
//! list); scalar subqueries that do not aggregate (the value of their one row, NULL for
//! none, 21000 for more); and select lists that name two items alike, whose columns
//! keep the names PostgreSQL gives them; select lists of no column (`SELECT FROM t`,
//! `EXISTS (SELECT FROM …)`, `SELECT;`), whose rows have no column. The answers are
//! PostgreSQL 15's for the same statements.

mod common;

use common::{Fixture, rows_of};
use datafusion::sql::parser::Statement as DfStatement;

const T1: &str = "
    CREATE TABLE t1 (a INT, b INT, c INT);
    INSERT INTO t1 VALUES (1, 10, 5), (2, 20, 3), (3, 30, 4), (4, NULL, 1);
";

#[test]
fn subqueries_correlated_by_inequality() {
    let f = Fixture::new(T1);
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a, (SELECT count(*) FROM t1 AS x WHERE x.b < t1.b) FROM t1 ORDER BY a"
        ),
        ["1|0", "2|1", "3|2", "4|0"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a, (SELECT max(x.a) FROM t1 x WHERE x.b > t1.b) FROM t1 ORDER BY a"
        ),
        ["1|3", "2|3", "3|", "4|"]
    );
    // Uncorrelated in a CASE, beside a correlated one.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a, CASE WHEN c > (SELECT avg(c) FROM t1) THEN 1 ELSE 0 END,
                    (SELECT count(*) FROM t1 x WHERE x.c > t1.c AND x.a <> t1.a)
             FROM t1 ORDER BY a"
        ),
        ["1|1|0", "2|0|2", "3|1|1", "4|0|3"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a FROM t1 WHERE EXISTS (SELECT 1 FROM t1 x WHERE x.c > t1.c) ORDER BY a"
        ),
        ["2", "3", "4"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t1 x WHERE x.c > t1.c)"
        ),
        ["1"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a FROM t1 WHERE b > (SELECT min(x.b) FROM t1 x WHERE x.a < t1.a) ORDER BY a"
        ),
        ["2", "3"]
    );
    // Inside a block, the subquery reads the block's own writes.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "INSERT INTO t1 VALUES (5, 5, 9)");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT (SELECT count(*) FROM t1 x WHERE x.b < t1.b) FROM t1 WHERE a = 1"
        ),
        ["1"]
    );
    f.tag(&mut s, "ROLLBACK");
}

#[test]
fn scalar_subqueries_give_their_one_row_or_fail() {
    let f = Fixture::new(T1);
    let mut s = f.session();
    // Correlated by equality and not aggregated, under an alias, in CASE and in WHERE.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a, (SELECT x.b AS v FROM t1 x WHERE x.a = t1.a + 1),
                    CASE WHEN c > 3 THEN (SELECT x.c FROM t1 x WHERE x.a = t1.a AND t1.c > 4) END
             FROM t1 ORDER BY a"
        ),
        ["1|20|5", "2|30|", "3||", "4||"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a FROM t1 WHERE (SELECT x.c FROM t1 x WHERE x.a = t1.a - 1) > 3 ORDER BY a"
        ),
        ["2", "4"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT (SELECT b FROM t1 WHERE a = 9)"),
        [""]
    );
    // A row limit or an aggregate bounds the rows already.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT (SELECT a FROM t1 ORDER BY c LIMIT 1), (SELECT count(*) FROM t1)"
        ),
        ["4|4"]
    );
    // The value keeps its type: a json value stays json.
    let out = f.run(
        &mut s,
        "SELECT (SELECT json_build_object('a', x.a) FROM t1 x WHERE x.a = 1)",
    );
    let pmdb_sql::Output::Rows { schema, .. } = out else {
        panic!("rows expected")
    };
    assert_eq!(
        pmdb_sql::text_type(schema.field(0)),
        Some(pmdb_sql::types::SqlType::Json)
    );
    // More than one row is PostgreSQL's 21000, correlated or not, wherever it is.
    for q in [
        "SELECT a, (SELECT x.b FROM t1 x WHERE x.a >= t1.a) FROM t1",
        "SELECT a, (SELECT x.b FROM t1 x WHERE x.c = t1.c OR x.a = 1) FROM t1",
        "SELECT (SELECT b FROM t1)",
        "SELECT a FROM t1 WHERE b = (SELECT b FROM t1 WHERE b > 10)",
    ] {
        assert_eq!(f.sqlstate(&mut s, q), "21000", "{q}");
    }
}

#[test]
fn in_subqueries_in_a_select_list() {
    let f = Fixture::new(T1);
    let mut s = f.session();
    // SQL's NULL rules: NULL sought in a set that is not empty, or a value not found
    // where the set has a NULL, is NULL; nothing is in an empty set.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 1 IN (SELECT a FROM t1), 9 IN (SELECT a FROM t1), \
                    9 NOT IN (SELECT b FROM t1), NULL IN (SELECT a FROM t1), \
                    1 IN (SELECT a FROM t1 WHERE a > 5), \
                    NULL NOT IN (SELECT a FROM t1 WHERE a > 5)"
        ),
        ["true|false|||false|true"]
    );
    // Correlated by an inequality, per outer row.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a, b IN (SELECT x.b FROM t1 x WHERE x.a < t1.a) FROM t1 ORDER BY a"
        ),
        ["1|false", "2|false", "3|false", "4|"]
    );
}

#[test]
fn repeated_names_in_a_select_list() {
    let f = Fixture::new(T1);
    let mut s = f.session();
    let shown = |out: &pmdb_sql::Output| match out {
        pmdb_sql::Output::Rows { schema, .. } => schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let out = f.run(&mut s, "SELECT a, a, a + 1, a + 1 FROM t1 WHERE a = 1");
    assert_eq!(shown(&out), ["a", "a", "?column?", "?column?"]);
    assert_eq!(rows_of(out), ["1|1|2|2"]);
    let out = f.run(
        &mut s,
        "SELECT (SELECT count(*) FROM t1 x WHERE x.b < t1.b),
                (SELECT count(*) FROM t1 x WHERE x.b > t1.b)
         FROM t1 WHERE a = 2",
    );
    assert_eq!(shown(&out), ["count", "count"]);
    assert_eq!(rows_of(out), ["1|1"]);
    assert_eq!(
        f.rows(&mut s, "SELECT q.a FROM (SELECT a, a FROM t1) q ORDER BY 1"),
        ["1", "2", "3", "4"]
    );
    // Two items given one name, and an item named as a column it also shows.
    let out = f.run(
        &mut s,
        "SELECT a AS k, b AS k, c + 1 AS c, c FROM t1 WHERE a = 2",
    );
    assert_eq!(shown(&out), ["k", "k", "c", "c"]);
    assert_eq!(rows_of(out), ["2|20|4|3"]);
    // Prepared: described and run with the same names.
    let statement: DfStatement = pmdb_sql::parse("SELECT a, a FROM t1 WHERE a = $1")
        .unwrap()
        .pop_front()
        .unwrap();
    let p = f.rt.block_on(s.prepare(statement)).unwrap();
    let described: Vec<String> = p
        .columns()
        .unwrap()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(described, ["a", "a"]);
    let out =
        f.rt.block_on(s.run_prepared(&p, vec![datafusion::common::ScalarValue::Int32(Some(3))]))
            .unwrap();
    assert_eq!(shown(&out), ["a", "a"]);
    assert_eq!(rows_of(out), ["3|3"]);
}

/// The rows of `sql`'s answer, each as its number of columns.
fn row_widths(f: &Fixture, s: &mut pmdb_sql::SqlSession, sql: &str) -> Vec<usize> {
    match f.run(s, sql) {
        pmdb_sql::Output::Rows { schema, batches } => batches
            .iter()
            .flat_map(|b| std::iter::repeat_n(schema.fields().len(), b.num_rows()))
            .collect(),
        _ => panic!("{sql}: no rows"),
    }
}

#[test]
fn select_lists_of_no_column() {
    let f = Fixture::new(T1);
    let mut s = f.session();
    assert_eq!(row_widths(&f, &mut s, "SELECT"), [0]);
    assert_eq!(row_widths(&f, &mut s, "SELECT;"), [0]);
    assert_eq!(row_widths(&f, &mut s, "SELECT FROM t1"), [0; 4]);
    assert_eq!(
        row_widths(&f, &mut s, "SELECT FROM t1 WHERE b > 15"),
        [0; 2]
    );
    assert_eq!(
        row_widths(
            &f,
            &mut s,
            "SELECT FROM t1 UNION ALL SELECT FROM t1 WHERE a = 1"
        ),
        [0; 5]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a FROM t1 WHERE EXISTS (SELECT FROM t1 AS x WHERE x.c > t1.c) ORDER BY a"
        ),
        ["2", "3", "4"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT count(*) FROM (SELECT FROM t1) AS s"),
        ["4"]
    );
    // A name that is a keyword, quoted, is a column as ever.
    f.tag(&mut s, "CREATE TABLE k (\"from\" INT)");
    f.tag(&mut s, "INSERT INTO k VALUES (7)");
    assert_eq!(f.rows(&mut s, "SELECT \"from\" FROM k"), ["7"]);
}
