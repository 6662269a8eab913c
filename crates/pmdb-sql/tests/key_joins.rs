//! Joins of rows read by their keys take the fast path and answer exactly as the
//! general path does: those of rows read by their whole keys (New-Order's customer and
//! warehouse), and those of a range of one table's key with rows of others read by key
//! for each (Stock-Level's order lines and stock). Each is run next to its twin with
//! `AND true` (which the fast path does not take), for keys with rows and keys without,
//! with NULLs, as literals and as prepared statements, and inside a block that changed
//! the rows. Joins the fast path cannot serve alike are checked to go the general way.

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
    // Two values for one key column, which agree: each is checked on the rows.
    "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = {w} AND c_w_id = {w} \
     AND c_w_id = w_id AND c_d_id = {d} AND c_id = {c}",
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
        // A key column left free, a condition on a CHAR column (whose trailing blanks
        // do not count), a column two tables have, a locking clause, an expression
        // shown.
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id AND c_id = 1",
        "SELECT c_last, w_tax FROM customer, warehouse WHERE w_id = 1 AND c_w_id = w_id \
         AND c_d_id = 1 AND c_id = 1 AND c_credit = 'GC'",
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

/// Stock-Level's tables: order lines of orders 1..=30 of two districts, some naming no
/// item or one with no stock row, and stock rows with some quantities NULL.
fn stock_engine(dir: &std::path::Path) -> SqlEngine {
    let sql = SqlEngine::open(Db::open(dir, DbOptions::small()).unwrap()).unwrap();
    sql.execute(
        "CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT,
                                  ol_i_id INT, ol_amount DECIMAL(6,2), ol_info VARCHAR(8),
                                  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
         CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT, s_data VARCHAR(8),
                             PRIMARY KEY (s_w_id, s_i_id))",
    )
    .unwrap();
    let mut lines = Vec::new();
    for d in 1..=2 {
        for o in 1..=30 {
            for n in 1..=(o % 4 + 2) {
                let item = match (o * 7 + n * 3 + d) % 23 {
                    0 => "NULL".to_string(),
                    i => i.to_string(),
                };
                let info = if n == 2 {
                    "NULL".into()
                } else {
                    format!("'i{}'", n % 3)
                };
                lines.push(format!("(1, {d}, {o}, {n}, {item}, {n}.{o}, {info})"));
            }
        }
    }
    sql.execute(&format!(
        "INSERT INTO order_line VALUES {}",
        lines.join(", ")
    ))
    .unwrap();
    // Items 1..=20 have stock; 21 and 22 have none.
    let stock: Vec<String> = (1..=20)
        .map(|i| {
            let q = if i % 9 == 0 {
                "NULL".into()
            } else {
                (i * 5 % 31).to_string()
            };
            format!("(1, {i}, {q}, 'd{}')", i % 4)
        })
        .collect();
    sql.execute(&format!("INSERT INTO stock VALUES {}", stock.join(", ")))
        .unwrap();
    sql
}

const RANGE_JOINS: &[&str] = &[
    // Stock-Level's, as go-tpc sends it: with a hint for TiDB, a comment to PostgreSQL.
    "SELECT /*+ TIDB_INLJ(order_line,stock) */ COUNT(DISTINCT (s_i_id)) stock_count \
     FROM order_line, stock WHERE ol_w_id = 1 AND ol_d_id = {d} AND ol_o_id < {o} AND ol_o_id >= {o} - 20 \
     AND s_w_id = 1 AND s_i_id = ol_i_id AND s_quantity < {q}",
    // Rows shown, the driver named second, qualified names and aliases, BETWEEN.
    "SELECT s.s_quantity AS left_over, ol_o_id, ol_number, s_data, ol_amount \
     FROM stock s, order_line WHERE ol_i_id = s.s_i_id AND s.s_w_id = ol_w_id \
     AND ol_w_id = 1 AND ol_d_id = {d} AND ol_o_id BETWEEN {o} - 5 AND {o}",
    // Aggregates of both tables, conditions on columns outside the keys.
    "SELECT count(*), count(ol_info), sum(ol_amount), min(s_quantity), max(ol_info) AS top, \
     count(DISTINCT s_data) FROM order_line, stock WHERE ol_w_id = 1 AND ol_d_id = {d} \
     AND ol_o_id > {o} AND s_w_id = 1 AND s_i_id = ol_i_id AND s_quantity >= {q} \
     AND ol_info <> 'i0'",
    // A bound alone on the key's first column, and a condition with NULL.
    "SELECT count(*) FROM order_line, stock WHERE ol_w_id <= 1 AND s_w_id = 1 \
     AND s_i_id = ol_i_id AND s_quantity <> NULL",
    // Rows of a range and one row by a given key: a product.
    "SELECT ol_o_id, ol_number, s_quantity FROM order_line, stock WHERE ol_w_id = 1 \
     AND ol_d_id = {d} AND ol_o_id = {o} AND s_w_id = 1 AND s_i_id = {q}",
];

#[test]
fn joins_of_a_range_agree_with_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let sql = stock_engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = sql.session();
    // Rows in any order: a join's order is the plan's.
    let run = |q: &str| {
        let mut lines: Vec<String> = show(sql.execute(q).map(|mut o| o.pop().unwrap()))
            .lines()
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines.join("\n")
    };
    for form in RANGE_JOINS {
        for (d, o, q) in [
            (1, 21, 15),
            (2, 30, 10),
            (1, 5, 0),
            (3, 21, 15),
            (2, 12, 40),
        ] {
            let text = form
                .replace("{d}", &d.to_string())
                .replace("{o}", &o.to_string())
                .replace("{q}", &q.to_string());
            assert!(
                fast(&rt, &mut session, &text),
                "{text} goes the general way"
            );
            let (a, b) = (run(&text), run(&twin(&text)));
            assert_eq!(a, b, "{text}");
        }
    }
    // The first form finds rows: the comparison is not of two empty results.
    let q = RANGE_JOINS[0]
        .replace("{d}", "1")
        .replace("{o}", "21")
        .replace("{q}", "15");
    assert!(!run(&q).contains("| 0 "), "{}", run(&q));
    // A block's own writes are read, on either side of the join.
    sql.execute(
        "BEGIN; UPDATE stock SET s_quantity = 0 WHERE s_w_id = 1 AND s_i_id = 4;
         DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 2 AND ol_o_id = 29",
    )
    .unwrap();
    for form in RANGE_JOINS {
        let text = form
            .replace("{d}", "2")
            .replace("{o}", "30")
            .replace("{q}", "4");
        let (a, b) = (run(&text), run(&twin(&text)));
        assert_eq!(a, b, "{text}");
    }
    sql.execute("ROLLBACK").unwrap();
}

#[test]
fn prepared_stock_level_agrees_with_literal_twins() {
    let dir = tempfile::tempdir().unwrap();
    let sql = stock_engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut s = sql.session();
    let text = "SELECT COUNT(DISTINCT (s_i_id)) stock_count FROM order_line, stock \
                WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 - 20 \
                AND s_w_id = $5 AND s_i_id = ol_i_id AND s_quantity < $6";
    let statement = pmdb_sql::parse(text).unwrap().pop_front().unwrap();
    let prepared = rt.block_on(s.prepare(statement)).unwrap();
    assert!(prepared.on_fast_path());
    let mut counts = Vec::new();
    for (d, o, q) in [
        (1, 21, 15),
        (2, 31, 12),
        (1, 10, 30),
        (2, 22, -1),
        (1, 21, 40),
    ] {
        let params = [1, d, o, o, 1, q]
            .map(|v| ScalarValue::Int32(Some(v)))
            .to_vec();
        let a = show(rt.block_on(s.run_prepared(&prepared, params)));
        let literal = twin(
            &text
                .replace("$1", "1")
                .replace("$2", &d.to_string())
                .replace("$3", &o.to_string())
                .replace("$4", &o.to_string())
                .replace("$5", "1")
                .replace("$6", &q.to_string()),
        );
        let b = show(
            rt.block_on(s.execute(&literal))
                .map(|mut o| o.pop().unwrap()),
        );
        assert_eq!(a, b, "{d} {o} {q}");
        counts.push(a);
    }
    counts.dedup();
    assert!(counts.len() > 1, "every run counted alike: {counts:?}");
}

#[test]
fn range_joins_the_fast_path_cannot_serve_alike_go_the_general_way() {
    let dir = tempfile::tempdir().unwrap();
    let sql = stock_engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = sql.session();
    for q in [
        // Stock read by a part of its key; no range of either key; a column and an
        // aggregate; GROUP BY; ORDER BY; a comparison of two columns other than
        // equality; columns of two types set equal.
        "SELECT count(*) FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1",
        "SELECT count(*) FROM order_line, stock WHERE s_i_id = ol_i_id AND s_w_id = ol_w_id",
        "SELECT ol_o_id, count(*) FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1 \
         AND s_i_id = ol_i_id",
        "SELECT ol_o_id, count(*) FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1 \
         AND s_i_id = ol_i_id GROUP BY ol_o_id",
        "SELECT ol_o_id FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1 \
         AND s_i_id = ol_i_id ORDER BY ol_o_id",
        "SELECT count(*) FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1 \
         AND s_i_id = ol_i_id AND s_quantity < ol_number",
        "SELECT count(*) FROM order_line, stock WHERE ol_w_id = 1 AND s_w_id = 1 \
         AND s_i_id = ol_i_id AND s_data = ol_amount",
    ] {
        assert!(!fast(&rt, &mut session, q), "{q} takes the fast path");
        let run = |q: &str| show(sql.execute(q).map(|mut o| o.pop().unwrap()));
        let general = q.replace(" GROUP BY", " AND true GROUP BY");
        let general = general.replace(" ORDER BY", " AND true ORDER BY");
        let general = if general == q { twin(q) } else { general };
        assert_eq!(run(q), run(&general), "{q}");
    }
}
