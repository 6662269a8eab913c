//! Prepared statements answer exactly as the same statements written with literals do:
//! each is prepared once and run with several sets of parameters on one copy of a table,
//! while its literal twin runs on another copy, and results, command tags, errors and the
//! tables afterwards must agree — through the fast path's kept shape, DataFusion's kept
//! plan, statements bound at each run, and after DDL replaced the tables a plan named.

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::common::ScalarValue;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlError, SqlSession};

fn show(out: Result<Output, SqlError>) -> String {
    match out {
        Ok(
            Output::Rows { schema, batches }
            | Output::Returned {
                schema, batches, ..
            },
        ) => format!(
            "{:?}\n{}",
            schema
                .fields()
                .iter()
                .map(|f| (f.name().clone(), f.data_type().clone()))
                .collect::<Vec<_>>(),
            pretty_format_batches(&batches).unwrap()
        ),
        Ok(Output::Command(tag)) => tag.to_string(),
        Ok(copy @ Output::CopyOut { .. }) => format!("{copy:?}"),
        Err(e) => format!("error {}", e.sqlstate()),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    engine: SqlEngine,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        for t in ["p", "l"] {
            engine
                .execute(&format!(
                    "CREATE TABLE {t} (id INT PRIMARY KEY, n BIGINT NOT NULL, name VARCHAR(8),
                                       price DECIMAL(8,2), at TIMESTAMP);
                     INSERT INTO {t} VALUES (1, 10, 'a', 1.50, NULL), (2, 20, 'b', NULL, NULL),
                                            (3, 30, 'c', 3.00, NULL)"
                ))
                .unwrap();
        }
        Fixture {
            _dir: dir,
            rt: tokio::runtime::Runtime::new().unwrap(),
            engine,
        }
    }

    /// Runs `sql` (with `{t}` for the table) prepared on table p with each of `runs`, and
    /// its literal twin (each `$n` written out) on table l; asserts they agree.
    fn agree(&self, s: &mut SqlSession, sql: &str, runs: &[(&[ScalarValue], &[&str])]) {
        let statement = pmdb_sql::parse(&sql.replace("{t}", "p"))
            .unwrap()
            .pop_front()
            .unwrap();
        let prepared = self.rt.block_on(s.prepare(statement)).unwrap();
        for (params, literals) in runs {
            let mut twin = sql.replace("{t}", "l");
            for (i, literal) in literals.iter().enumerate().rev() {
                twin = twin.replace(&format!("${}", i + 1), literal);
            }
            let a = show(self.rt.block_on(s.run_prepared(&prepared, params.to_vec())));
            let b = show(
                self.rt
                    .block_on(s.execute(&twin))
                    .map(|mut o| o.pop().unwrap()),
            );
            assert_eq!(a, b, "{sql} with {params:?}");
        }
    }

    fn tables_agree(&self) {
        let all = |t: &str| {
            show(
                self.engine
                    .execute(&format!(
                        "SELECT id, n, name, price, at FROM {t} ORDER BY id"
                    ))
                    .map(|mut o| o.pop().unwrap()),
            )
        };
        assert_eq!(all("p"), all("l"));
    }
}

fn int(v: i32) -> ScalarValue {
    ScalarValue::Int32(Some(v))
}

fn big(v: i64) -> ScalarValue {
    ScalarValue::Int64(Some(v))
}

fn text(v: &str) -> ScalarValue {
    ScalarValue::Utf8(Some(v.into()))
}

#[test]
fn prepared_statements_agree_with_their_literal_twins() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    // The fast path's shapes, with parameters in every place a value goes.
    f.agree(
        &mut s,
        "SELECT n, name FROM {t} WHERE id = $1",
        &[
            (&[int(1)], &["1"]),
            (&[int(3)], &["3"]),
            (&[int(99)], &["99"]),
            (&[ScalarValue::Int32(None)], &["NULL"]),
            // An INT8 parameter for the INT key, in range.
            (&[big(2)], &["2"]),
        ],
    );
    f.agree(
        &mut s,
        "SELECT id, n FROM {t} WHERE id IN ($1, $2, $3)",
        &[
            (&[int(3), int(1), int(3)], &["3", "1", "3"]),
            (
                &[int(2), int(99), ScalarValue::Int32(None)],
                &["2", "99", "NULL"],
            ),
        ],
    );
    f.agree(
        &mut s,
        "UPDATE {t} SET n = n + $1, name = $2 WHERE id = $3",
        &[
            (&[big(5), text("x"), int(1)], &["5", "'x'", "1"]),
            (&[big(-7), text("y"), int(2)], &["-7", "'y'", "2"]),
            (&[big(1), text("z"), int(77)], &["1", "'z'", "77"]),
            (
                &[big(1), text("toolongname"), int(3)],
                &["1", "'toolongname'", "3"],
            ),
            (
                &[big(i64::MAX), text("o"), int(3)],
                &["9223372036854775807", "'o'", "3"],
            ),
        ],
    );
    f.agree(
        &mut s,
        "UPDATE {t} SET n = n - $1 WHERE id = $2",
        &[(&[big(3), int(1)], &["3", "1"])],
    );
    // Sums of decimals (TPC-C's `w_ytd = w_ytd + $1`) and of values (`$1 + 1`).
    f.agree(
        &mut s,
        "UPDATE {t} SET price = price + $1, n = $2 + 1 WHERE id = $3",
        &[
            (
                &[ScalarValue::Decimal128(Some(125), 8, 2), big(7), int(1)],
                &["1.25", "7", "1"],
            ),
            (&[text("-0.5"), big(-3), int(3)], &["-0.5", "-3", "3"]),
            // Finer than the column's scale, then past its precision.
            (&[text("0.125"), big(0), int(1)], &["0.125", "0", "1"]),
            (
                &[text("999999.99"), big(0), int(1)],
                &["999999.99", "0", "1"],
            ),
            (
                &[text("1"), big(i64::MAX), int(1)],
                &["1", "9223372036854775807", "1"],
            ),
            (&[text("2"), big(1), int(2)], &["2", "1", "2"]),
        ],
    );
    f.agree(
        &mut s,
        "INSERT INTO {t} (id, n, name, price) VALUES ($1, $2, $3, $4)",
        &[
            (
                &[
                    int(4),
                    big(40),
                    text("d"),
                    ScalarValue::Decimal128(Some(425), 38, 2),
                ],
                &["4", "40", "'d'", "4.25"],
            ),
            (
                &[int(5), big(50), ScalarValue::Utf8(None), text("0.5")],
                &["5", "50", "NULL", "0.5"],
            ),
            // A duplicate key, and a NULL where NOT NULL is asked.
            (
                &[int(1), big(1), text("e"), text("1")],
                &["1", "1", "'e'", "1"],
            ),
            (
                &[int(6), ScalarValue::Int64(None), text("f"), text("1")],
                &["6", "NULL", "'f'", "1"],
            ),
        ],
    );
    f.agree(
        &mut s,
        "DELETE FROM {t} WHERE id = $1",
        &[(&[int(5)], &["5"]), (&[int(55)], &["55"])],
    );
    // Plans DataFusion keeps: a query with a parameter in a filter and an aggregate.
    f.agree(
        &mut s,
        "SELECT name, n * 2 AS twice FROM {t} WHERE n > $1 ORDER BY id",
        &[
            (&[big(15)], &["15"]),
            (&[big(0)], &["0"]),
            (&[big(1000)], &["1000"]),
        ],
    );
    f.agree(
        &mut s,
        "SELECT count(*) AS c, sum(n) AS s FROM {t} WHERE name <> $1",
        &[(&[text("a")], &["'a'"]), (&[text("zz")], &["'zz'"])],
    );
    f.agree(
        &mut s,
        "INSERT INTO {t} (id, n) SELECT id + $1, n FROM {t} WHERE id < $2",
        &[(&[int(100), int(3)], &["100", "3"])],
    );
    // Statements pmdb runs itself, bound at each run.
    f.agree(
        &mut s,
        "UPDATE {t} SET n = n + $1 WHERE name = $2",
        &[(&[big(1), text("c")], &["1", "'c'"])],
    );
    f.agree(
        &mut s,
        "UPDATE {t} SET at = $1, price = $2 WHERE name = $3",
        &[(
            &[
                ScalarValue::TimestampMicrosecond(Some(1_704_164_645_500_000), None),
                ScalarValue::Decimal128(Some(-1234), 38, 3),
                text("c"),
            ],
            &["TIMESTAMP '2024-01-02 03:04:05.5'", "-1.234", "'c'"],
        )],
    );
    f.agree(
        &mut s,
        "DELETE FROM {t} WHERE n > $1",
        &[(&[big(100)], &["100"])],
    );
    f.tables_agree();
}

#[test]
fn a_statement_prepared_before_ddl_runs_against_the_new_tables() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    let prepare = |s: &mut SqlSession, sql: &str| {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        f.rt.block_on(s.prepare(statement)).unwrap()
    };
    let point = prepare(&mut s, "SELECT name FROM p WHERE id = $1");
    let query = prepare(&mut s, "SELECT name FROM p WHERE n >= $1 ORDER BY name");
    let update = prepare(&mut s, "UPDATE p SET name = $1 WHERE id = $2");
    // The table is replaced by one whose columns are in another order.
    f.engine
        .execute(
            "DROP TABLE p;
             CREATE TABLE p (name VARCHAR(8), id INT PRIMARY KEY, n BIGINT NOT NULL);
             INSERT INTO p VALUES ('new', 1, 100), ('newer', 2, 200)",
        )
        .unwrap();
    let run = |s: &mut SqlSession, p: &pmdb_sql::Prepared, params: Vec<ScalarValue>| {
        show(f.rt.block_on(s.run_prepared(p, params)))
    };
    assert!(run(&mut s, &point, vec![int(2)]).contains("| newer |"));
    assert_eq!(run(&mut s, &update, vec![text("upd"), int(1)]), "UPDATE 1");
    let rows = run(&mut s, &query, vec![big(100)]);
    assert!(
        rows.contains("| upd   |") && rows.contains("| newer |"),
        "{rows}"
    );
    // Dropped for good: the error a new statement would get.
    f.engine.execute("DROP TABLE p").unwrap();
    assert_eq!(run(&mut s, &point, vec![int(1)]), "error 42P01");
}

#[test]
fn parameters_are_checked_against_the_statement() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    let statement = pmdb_sql::parse("SELECT n FROM p WHERE id = $1 AND n > $2")
        .unwrap()
        .pop_front()
        .unwrap();
    let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
    assert_eq!(prepared.parameters().len(), 2);
    // Too few parameters, and one that does not convert to its planned type.
    let few = f.rt.block_on(s.run_prepared(&prepared, vec![int(1)]));
    assert_eq!(show(few), "error 08P01");
    let bad =
        f.rt.block_on(s.run_prepared(&prepared, vec![text("x"), big(0)]));
    assert_eq!(show(bad), "error 22P02");
    let outside =
        f.rt.block_on(s.run_prepared(&prepared, vec![big(1 << 40), big(0)]));
    assert_eq!(show(outside), "error 22003");
    let good =
        f.rt.block_on(s.run_prepared(&prepared, vec![text("2"), big(0)]));
    assert!(show(good).contains("| 20 |"));
}

#[test]
fn described_columns_have_the_types_of_the_rows() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    // DataFusion types a CASE by its first branch, a UNION by its first input, until its
    // analyzer coerces them: the description must be the coerced type the rows have.
    for sql in [
        "SELECT CASE WHEN $1::numeric(8,2) IS NULL THEN 0 ELSE $1::numeric(8,2) END",
        "SELECT CASE WHEN n > $1 THEN id ELSE price END FROM p",
        "SELECT n FROM p WHERE id = $1 UNION ALL SELECT price FROM p",
    ] {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
        let described = prepared.columns().expect("a query describes its columns");
        assert!(
            matches!(
                described.field(0).data_type(),
                datafusion::arrow::datatypes::DataType::Decimal128(..)
            ),
            "{sql}: {described:?}"
        );
        let out = f.rt.block_on(s.run_prepared(&prepared, vec![int(1)]));
        let Ok(Output::Rows { schema, batches }) = out else {
            panic!("{sql}: {}", show(out));
        };
        assert_eq!(
            schema.field(0).data_type(),
            described.field(0).data_type(),
            "{sql}"
        );
        for b in batches {
            assert_eq!(
                b.schema().field(0).data_type(),
                described.field(0).data_type()
            );
        }
    }
}

/// UPDATE … FROM and DELETE … USING with parameters (as every driver sends them) are
/// described, each parameter typed as the column it is set to or compared with, and run
/// as their literal twins do; neither describes result columns.
#[test]
fn update_from_and_delete_using_take_parameters() {
    use datafusion::arrow::datatypes::DataType;
    let f = Fixture::new();
    let mut s = f.engine.session();
    let described = |s: &mut SqlSession, sql: &str| {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
        assert!(prepared.columns().is_none(), "{sql}");
        prepared.parameter_types()
    };
    assert_eq!(
        described(
            &mut s,
            "UPDATE p SET n = $1, name = o.name FROM l AS o WHERE p.id = o.id AND o.price > $2"
        ),
        [Some(DataType::Int64), Some(DataType::Decimal128(8, 2))]
    );
    assert_eq!(
        described(
            &mut s,
            "DELETE FROM p USING l WHERE p.id = l.id AND l.name = $1"
        ),
        [Some(DataType::Utf8)]
    );
    f.agree(
        &mut s,
        "UPDATE {t} SET n = o.n + $1 FROM {t} AS o WHERE {t}.id = o.id + $2",
        &[
            (&[big(5), int(1)], &["5", "1"]),
            (&[big(-1), int(2)], &["-1", "2"]),
        ],
    );
    f.agree(
        &mut s,
        "DELETE FROM {t} USING {t} AS o WHERE {t}.id = o.id + 1 AND o.n > $1",
        &[(&[big(25)], &["25"]), (&[big(0)], &["0"])],
    );
    f.tables_agree();
}

/// `now()` and `CURRENT_TIMESTAMP` in an UPDATE's SET (TPC-C's Delivery sets
/// `ol_delivery_d = now()` on rows named by a key IN list) stay on the fast path and
/// write the time of the run, as the general path does.
#[test]
fn updates_setting_the_time_stay_on_the_fast_path() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    f.engine.execute("CREATE TABLE mark (t TIMESTAMP)").unwrap();
    for set in ["now()", "CURRENT_TIMESTAMP", "NOW()"] {
        let sql = format!("UPDATE p SET at = {set} WHERE id IN ($1, $2)");
        let statement = pmdb_sql::parse(&sql).unwrap().pop_front().unwrap();
        let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
        assert!(prepared.on_fast_path(), "{sql} goes the general way");
        f.engine
            .execute("DELETE FROM mark; INSERT INTO mark SELECT now()::timestamp")
            .unwrap();
        let out =
            f.rt.block_on(s.run_prepared(&prepared, vec![int(1), int(3)]));
        assert_eq!(show(out), "UPDATE 2");
        let within = "SELECT count(*) AS n FROM p, mark
                      WHERE at >= mark.t AND at <= now()::timestamp";
        let counted = show(f.engine.execute(within).map(|mut o| o.pop().unwrap()));
        assert!(counted.contains("| 2 |"), "{sql}: {counted}");
    }
}

/// A parameter in a row IN list has its column's type, as PostgreSQL describes it, so
/// that a value sent as text (lib/pq sends every value so) is read as that type and the
/// statement stays on the fast path (go-tpc's New-Order and Delivery).
#[test]
fn row_in_list_parameters_have_their_columns_types() {
    let f = Fixture::new();
    f.engine
        .execute(
            "CREATE TABLE pair (w INT, d SMALLINT, v BIGINT, PRIMARY KEY (w, d));
             INSERT INTO pair VALUES (1, 1, 10), (1, 2, 20), (2, 1, 30)",
        )
        .unwrap();
    let mut s = f.engine.session();
    for (sql, shown) in [
        (
            "SELECT v FROM pair WHERE (w, d) IN (($1, $2), ($3, $4))",
            &["| 20 |", "| 30 |"][..],
        ),
        (
            "SELECT v FROM pair WHERE (w, d) IN (($1, $2), ($3, $4)) FOR UPDATE",
            &["| 20 |", "| 30 |"],
        ),
        (
            "UPDATE pair SET v = v + 1 WHERE (w, d) IN (($1, $2), ($3, $4))",
            &["UPDATE 2"],
        ),
        (
            "DELETE FROM pair WHERE (w, d) IN (($1, $2), ($3, $4))",
            &["DELETE 2"],
        ),
    ] {
        let statement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
        let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
        use datafusion::arrow::datatypes::DataType as T;
        let expected = [T::Int32, T::Int16, T::Int32, T::Int16].map(Some);
        assert_eq!(prepared.parameter_types(), expected.as_slice(), "{sql}");
        assert!(prepared.on_fast_path(), "{sql} goes the general way");
        let params = ["1", "2", "2", "1"].map(text).to_vec();
        let out = show(f.rt.block_on(s.run_prepared(&prepared, params)));
        assert!(shown.iter().all(|x| out.contains(x)), "{sql}: {out}");
    }
}

/// Window frame offsets given as parameters (planned again at each run with the values
/// bound in) agree with the offsets written out; an interval parameter is typed as one
/// where its cast says so.
#[test]
fn window_frame_offsets_may_be_parameters() {
    let f = Fixture::new();
    let mut s = f.engine.session();
    f.agree(
        &mut s,
        "SELECT id, sum(n) OVER (ORDER BY n ROWS BETWEEN $1 PRECEDING AND CURRENT ROW) \
         FROM {t} ORDER BY id",
        &[(&[big(1)], &["1"]), (&[big(0)], &["0"])],
    );
    f.agree(
        &mut s,
        "SELECT id, sum(n) OVER (ORDER BY n RANGE BETWEEN $1 PRECEDING AND $2 FOLLOWING) \
         FROM {t} WHERE id < $3 ORDER BY id",
        &[
            (&[big(10), big(0), int(9)], &["10", "0", "9"]),
            (&[big(5), big(10), int(3)], &["5", "10", "3"]),
        ],
    );
    let statement = pmdb_sql::parse(
        "SELECT id, count(*) OVER (ORDER BY at RANGE BETWEEN $1::interval PRECEDING \
         AND CURRENT ROW) FROM p",
    )
    .unwrap()
    .pop_front()
    .unwrap();
    let prepared = f.rt.block_on(s.prepare(statement)).unwrap();
    assert!(matches!(
        prepared.parameters()[0].as_ref().map(|p| p.data_type()),
        Some(datafusion::arrow::datatypes::DataType::Interval(_))
    ));
}
