//! Joins whose small side names the other side's keys: the scan of the large side reads
//! the keys the hash join's build side holds (DataFusion's dynamic filter, an IN list)
//! instead of its whole key range, as TPC-C's Stock-Level needs (a few hundred order
//! lines against a warehouse's stock). Each query is compared with its twin written so
//! that nothing narrows, and the rows each scan read are taken from EXPLAIN ANALYZE.

mod common;

use common::rows_of;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const ITEMS: i64 = 5000;

fn loaded() -> (tempfile::TempDir, SqlEngine) {
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlEngine::open(Db::open(dir.path(), DbOptions::default()).unwrap()).unwrap();
    sql.execute(&format!(
        "CREATE TABLE order_line (w INT, d INT, o INT, n INT, item INT, PRIMARY KEY (w, d, o, n));
         CREATE TABLE stock (w INT, item INT, qty INT, PRIMARY KEY (w, item));
         INSERT INTO stock SELECT w, g, (g * 7) % 100
             FROM generate_series(1, {ITEMS}) AS t(g), (VALUES (1), (2)) AS ws(w);
         INSERT INTO order_line SELECT 1, d, o, n, ((o * 131 + n * 17 + d) % {ITEMS}) + 1
             FROM generate_series(1, 3) AS ds(d), generate_series(1, 40) AS os(o),
                  generate_series(1, 10) AS ns(n);"
    ))
    .unwrap();
    (dir, sql)
}

fn rows(sql: &SqlEngine, q: &str) -> Vec<String> {
    rows_of(sql.execute(q).unwrap().pop().unwrap())
}

/// The rows each scan of `q` read, by table, in the order EXPLAIN ANALYZE shows them.
fn rows_read(sql: &SqlEngine, q: &str) -> Vec<(String, usize)> {
    let plan = rows(sql, &format!("EXPLAIN ANALYZE {q}")).join("\n");
    let mut read = Vec::new();
    for line in plan.lines().filter(|l| l.contains("PmdbScan: table=")) {
        let table = line.split("table=").nth(1).unwrap();
        let table = table[..table.find(',').unwrap()].to_string();
        let n = line
            .split("rows_read=")
            .nth(1)
            .unwrap_or_else(|| panic!("no rows_read in {line}"));
        // DataFusion shows counts as `200`, `10.00 K` or `1.20 M`.
        let n = &n[..n.find([',', ']']).unwrap_or(n.len())];
        let (number, scale) = match n.split_once(' ') {
            Some((x, "K")) => (x, 1e3),
            Some((x, "M")) => (x, 1e6),
            _ => (n, 1.0),
        };
        let n = number.parse::<f64>().unwrap() * scale;
        read.push((table, n.round() as usize));
    }
    read
}

/// The rows `table`'s scans read for `q`.
fn read_of(sql: &SqlEngine, q: &str, table: &str) -> usize {
    rows_read(sql, q)
        .iter()
        .filter(|(t, _)| t == table)
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn stock_level_reads_the_stock_of_its_order_lines_only() {
    let (_dir, sql) = loaded();
    let q = "SELECT COUNT(DISTINCT (s.item)) FROM order_line ol, stock s
             WHERE ol.w = 1 AND ol.d = 2 AND ol.o < 31 AND ol.o >= 31 - 20
               AND s.w = 1 AND s.item = ol.item AND s.qty < 50";
    // The same, written so that no filter narrows a scan (DataFusion still folds the
    // `+ 0`, so the join's keys go through a function).
    let twin = "SELECT COUNT(DISTINCT (s.item)) FROM order_line ol, stock s
                WHERE abs(ol.w) = 1 AND abs(ol.d) = 2 AND abs(ol.o) < 31 AND abs(ol.o) >= 11
                  AND abs(s.w) = 1 AND abs(s.item) = abs(ol.item) AND s.qty < 50";
    let answer = rows(&sql, q);
    assert_eq!(answer, rows(&sql, twin));
    assert_ne!(answer, ["0"], "the test's data joins");
    let lines = read_of(&sql, q, "order_line");
    assert_eq!(lines, 200, "20 orders of 10 lines, read by key range");
    let stock = read_of(&sql, q, "stock");
    assert!(
        stock <= lines,
        "the stock of the order lines' items only: {stock} rows read"
    );
    assert!(read_of(&sql, twin, "stock") >= 2 * ITEMS as usize);
}

#[test]
fn a_narrowed_join_gives_what_the_whole_join_gives() {
    let (_dir, sql) = loaded();
    for (q, twin) in [
        // Inner join, the item list with repeats.
        (
            "SELECT ol.o, ol.n, s.qty FROM order_line ol JOIN stock s
                ON s.w = ol.w AND s.item = ol.item
             WHERE ol.w = 1 AND ol.d = 3 AND ol.o BETWEEN 5 AND 9 ORDER BY 1, 2",
            "SELECT ol.o, ol.n, s.qty FROM order_line ol JOIN stock s
                ON abs(s.w) = abs(ol.w) AND abs(s.item) = abs(ol.item)
             WHERE abs(ol.w) = 1 AND abs(ol.d) = 3 AND abs(ol.o) BETWEEN 5 AND 9 ORDER BY 1, 2",
        ),
        // The stock side kept whole by an outer join.
        (
            "SELECT count(*), count(ol.o) FROM stock s LEFT JOIN order_line ol
                ON ol.w = s.w AND ol.item = s.item AND ol.d = 1 AND ol.o = 7
             WHERE s.w = 2",
            "SELECT count(*), count(ol.o) FROM stock s LEFT JOIN order_line ol
                ON abs(ol.w) = abs(s.w) AND abs(ol.item) = abs(s.item) AND abs(ol.d) = 1
                   AND abs(ol.o) = 7
             WHERE abs(s.w) = 2",
        ),
        // No order line matches: the build side is empty.
        (
            "SELECT count(*) FROM order_line ol JOIN stock s ON s.w = ol.w AND s.item = ol.item
             WHERE ol.w = 1 AND ol.d = 9",
            "SELECT count(*) FROM order_line ol JOIN stock s
                ON abs(s.w) = abs(ol.w) AND abs(s.item) = abs(ol.item)
             WHERE abs(ol.w) = 1 AND abs(ol.d) = 9",
        ),
        // The large side without a pinned column, joined on its whole key: a full scan
        // narrowed to the keys (a row IN list).
        (
            "SELECT s.w, s.item, s.qty FROM order_line ol JOIN stock s
                ON s.w = ol.w AND s.item = ol.item
             WHERE ol.w = 1 AND ol.d = 1 AND ol.o = 3 ORDER BY 1, 2",
            "SELECT s.w, s.item, s.qty FROM order_line ol JOIN stock s
                ON abs(s.w) = abs(ol.w) AND abs(s.item) = abs(ol.item)
             WHERE abs(ol.w) = 1 AND abs(ol.d) = 1 AND abs(ol.o) = 3 ORDER BY 1, 2",
        ),
        // Joined on a column after the key's first: it narrows nothing, and the scan
        // reads everything.
        (
            "SELECT s.w, s.item, s.qty FROM order_line ol JOIN stock s ON s.item = ol.item
             WHERE ol.w = 1 AND ol.d = 1 AND ol.o = 3 ORDER BY 1, 2",
            "SELECT s.w, s.item, s.qty FROM order_line ol JOIN stock s
                ON abs(s.item) = abs(ol.item)
             WHERE abs(ol.w) = 1 AND abs(ol.d) = 1 AND abs(ol.o) = 3 ORDER BY 1, 2",
        ),
    ] {
        assert_eq!(rows(&sql, q), rows(&sql, twin), "{q}");
    }
    let keyed = "SELECT s.w, s.item, s.qty FROM order_line ol JOIN stock s
                    ON s.w = ol.w AND s.item = ol.item
                 WHERE ol.w = 1 AND ol.d = 1 AND ol.o = 3";
    assert!(read_of(&sql, keyed, "stock") <= 10, "the stock of 10 items");
}

#[test]
fn a_narrowed_join_reads_a_blocks_own_writes() {
    let (_dir, sql) = loaded();
    let q = "SELECT s.item, s.qty FROM order_line ol JOIN stock s
                ON s.w = ol.w AND s.item = ol.item
             WHERE ol.w = 1 AND ol.d = 1 AND ol.o = 4 ORDER BY 1";
    let before = rows(&sql, q);
    let out = sql
        .execute(
            "BEGIN;
             UPDATE stock SET qty = qty + 1000 WHERE w = 1;
             INSERT INTO order_line VALUES (1, 1, 4, 11, 4999);",
        )
        .unwrap();
    assert_eq!(out.len(), 3);
    let inside = rows(&sql, q);
    sql.execute("ROLLBACK").unwrap();
    assert_eq!(inside.len(), before.len() + 1);
    assert!(
        inside
            .iter()
            .all(|r| r.split('|').nth(1).unwrap().parse::<i64>().unwrap() >= 1000)
    );
    assert_eq!(rows(&sql, q), before);
}
