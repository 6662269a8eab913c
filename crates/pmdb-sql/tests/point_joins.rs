//! Joins of rows read by their whole keys (New-Order's customer and warehouse) take the
//! fast path and answer exactly as the general path does: each is run next to its twin
//! with `AND true` (which the fast path does not take), for keys with rows and keys
//! without, as literals and as prepared statements, and inside a block that changed the
//! rows. Joins the fast path cannot serve alike are checked to go the general way.

mod common;

use common::shown as show;
use datafusion::common::ScalarValue;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlSession};

fn engine(dir: &std::path::Path) -> SqlEngine {
    let sql = SqlEngine::open(Db::open(dir, DbOptions::small()).unwrap()).unwrap();
    sql.execute(
        "CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_name VARCHAR(10), w_tax DECIMAL(4,4));
         CREATE TABLE customer (c_w_id INT, c_d_id SMALLINT, c_id INT, c_last VARCHAR(16),
                                c_credit CHAR(2), c_discount DECIMAL(4,4),
                                PRIMARY KEY (c_w_id, c_d_id, c_id));
         CREATE TABLE district (d_w_id INT, d_id SMALLINT, d_tax DECIMAL(4,4),
                                PRIMARY KEY (d_w_id, d_id))",
    )
    .unwrap();
    let mut rows = Vec::new();
    for w in 1..=3 {
        sql.execute(&format!(
            "INSERT INTO warehouse VALUES ({w}, 'w{w}', 0.0{w}{w})"
        ))
        .unwrap();
        for d in 1..=4 {
            sql.execute(&format!("INSERT INTO district VALUES ({w}, {d}, 0.{d}{w})"))
                .unwrap();
            for c in 1..=5 {
                let last = if c == 3 {
                    "NULL".into()
                } else {
                    format!("'last{c}'")
                };
                rows.push(format!("({w}, {d}, {c}, {last}, 'GC', 0.{c}{d}{w})"));
            }
        }
    }
    sql.execute(&format!("INSERT INTO customer VALUES {}", rows.join(", ")))
        .unwrap();
    sql
}

/// How many rows `q` gives.
fn count(sql: &SqlEngine, q: &str) -> usize {
    match sql.execute(q).unwrap().pop().unwrap() {
        Output::Rows { batches, .. } => batches.iter().map(|b| b.num_rows()).sum(),
        other => panic!("{q}: {other:?}"),
    }
}

/// `q` with `AND true` after its WHERE clause, which sends it the general way.
fn twin(q: &str) -> String {
    format!("{q} AND true")
}

fn fast(rt: &tokio::runtime::Runtime, s: &mut SqlSession, q: &str) -> bool {
    let statement = pmdb_sql::parse(q).unwrap().pop_front().unwrap();
    rt.block_on(s.prepare(statement))
        .is_ok_and(|p| p.on_fast_path())
}

const SERVED: &[&str] = &[
    // New-Order's, as go-tpc sends it.
    "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
     WHERE w_id = {w} AND c_w_id = w_id AND c_d_id = {d} AND c_id = {c}",
    "SELECT c.c_last AS last, w.w_name, c.c_id, w_tax FROM warehouse w, customer c \
     WHERE c.c_id = {c} AND (c.c_d_id = {d}) AND {w} = w.w_id AND w.w_id = c.c_w_id",
    "SELECT w_name, d_tax, c_last, c_discount FROM customer, district, warehouse \
     WHERE c_w_id = d_w_id AND d_w_id = w_id AND w_id = {w} AND c_d_id = d_id \
     AND d_id = {d} AND c_id = {c}",
    "SELECT c_id, d_id, d_tax FROM customer, district \
     WHERE c_w_id = {w} AND d_w_id = {w} AND c_d_id = {d} AND d_id = 2 AND c_id = {c}",
];

#[test]
fn joins_by_key_agree_with_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let sql = engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = sql.session();
    let run = |q: &str| show(sql.execute(q).map(|mut o| o.pop().unwrap()));
    for form in SERVED {
        // Keys with rows, and keys one of whose rows is missing.
        for (w, d, c) in [
            (1, 1, 1),
            (3, 4, 5),
            (2, 2, 3),
            (4, 1, 1),
            (1, 9, 1),
            (1, 1, 0),
        ] {
            let q = form
                .replace("{w}", &w.to_string())
                .replace("{d}", &d.to_string())
                .replace("{c}", &c.to_string());
            assert!(fast(&rt, &mut session, &q), "{q} goes the general way");
            let (a, b) = (run(&q), run(&twin(&q)));
            assert_eq!(a, b, "{q}");
            let found = (1..=3).contains(&w) && (1..=4).contains(&d) && (1..=5).contains(&c);
            assert_eq!(count(&sql, &q), usize::from(found), "{q}: {a}");
        }
    }
    // A block's own writes are read.
    sql.execute(
        "BEGIN; UPDATE customer SET c_last = 'renamed' WHERE c_w_id = 2 AND c_d_id = 3 AND c_id = 4;
         DELETE FROM warehouse WHERE w_id = 3",
    )
    .unwrap();
    for (w, d, c) in [(2, 3, 4), (3, 1, 1)] {
        let q = SERVED[0]
            .replace("{w}", &w.to_string())
            .replace("{d}", &d.to_string())
            .replace("{c}", &c.to_string());
        let (a, b) = (run(&q), run(&twin(&q)));
        assert_eq!(a, b, "{q}");
        assert_eq!(a.contains("renamed"), w == 2, "{q}: {a}");
        assert_eq!(count(&sql, &q), usize::from(w == 2), "{q}: {a}");
    }
    sql.execute("ROLLBACK").unwrap();
}

#[test]
fn joins_the_fast_path_cannot_serve_alike_go_the_general_way() {
    let dir = tempfile::tempdir().unwrap();
    let sql = engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = sql.session();
    for q in [
        // A key column left free, a non-key condition, two values for one key, a column
        // two tables have, a locking clause, an expression shown.
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id AND c_id = 1",
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id \
         AND c_d_id = 1 AND c_id = 1 AND c_credit = 'GC'",
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = 2 \
         AND c_w_id = w_id AND c_d_id = 1 AND c_id = 1",
        "SELECT c_last FROM customer a, customer b WHERE a.c_w_id = 1 AND a.c_d_id = 1 \
         AND a.c_id = 1 AND b.c_w_id = 1 AND b.c_d_id = 1 AND b.c_id = 2",
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id \
         AND c_d_id = 1 AND c_id = 1 FOR UPDATE",
        "SELECT c_discount * w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id \
         AND c_d_id = 1 AND c_id = 1",
    ] {
        assert!(!fast(&rt, &mut session, q), "{q} takes the fast path");
        let general = q.replace(" FOR UPDATE", " AND true FOR UPDATE");
        let general = if general == q { twin(q) } else { general };
        let run = |q: &str| show(sql.execute(q).map(|mut o| o.pop().unwrap()));
        assert_eq!(run(q), run(&general), "{q}");
    }
}

#[test]
fn prepared_joins_by_key_agree_with_literal_twins() {
    let dir = tempfile::tempdir().unwrap();
    let sql = engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut s = sql.session();
    let text = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
                WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3";
    let statement = pmdb_sql::parse(text).unwrap().pop_front().unwrap();
    let prepared = rt.block_on(s.prepare(statement)).unwrap();
    assert!(prepared.on_fast_path());
    for (w, d, c) in [(1, 2, 3), (3, 3, 5), (5, 1, 1), (2, 4, 2)] {
        let params = vec![
            ScalarValue::Int32(Some(w)),
            ScalarValue::Int16(Some(d)),
            ScalarValue::Int32(Some(c)),
        ];
        let a = show(rt.block_on(s.run_prepared(&prepared, params)));
        let literal = twin(
            &text
                .replace("$1", &w.to_string())
                .replace("$2", &d.to_string())
                .replace("$3", &c.to_string()),
        );
        let b = show(
            rt.block_on(s.execute(&literal))
                .map(|mut o| o.pop().unwrap()),
        );
        assert_eq!(a, b, "{w} {d} {c}");
    }
}
