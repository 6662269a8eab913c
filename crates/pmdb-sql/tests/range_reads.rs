//! Range reads by primary key or by index (the fast path's range shapes: a key prefix
//! and a bound, ORDER BY, DISTINCT, LIMIT, aggregates) answer exactly as the general
//! path does: each query, generated at random over two tables with NULLs, repeats and
//! several types, is run next to its twin with `AND true` (which the fast path does not
//! take), and the columns (names, types, nullability) and rows must agree; prepared
//! forms are run with several sets of parameters against their literal twins.

mod common;

use common::shown as show;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::ScalarValue;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlError};

/// The columns (names, types, nullability) and the rows, sorted, of a result.
fn rows(out: Result<Output, SqlError>) -> (String, Vec<Vec<String>>) {
    let Ok(Output::Rows { schema, batches }) = out else {
        return (show(out), Vec::new());
    };
    let columns = show(Ok(Output::Rows {
        schema,
        batches: Vec::new(),
    }));
    let mut rows = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            let row = b
                .columns()
                .iter()
                .map(|c| array_value_to_string(c, i).unwrap());
            rows.push(row.collect());
        }
    }
    rows.sort();
    (columns, rows)
}

/// A small deterministic generator, so that a failure names a query that fails again.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.below(options.len() as u64) as usize]
    }
}

fn engine(dir: &std::path::Path) -> SqlEngine {
    let sql = SqlEngine::open(Db::open(dir, DbOptions::small()).unwrap()).unwrap();
    sql.execute(
        "CREATE TABLE s (id INT PRIMARY KEY, k INT, c CHAR(12), pad VARCHAR(20));
         CREATE TABLE r (a INT, b BIGINT, c VARCHAR(10), price DECIMAL(10,2), k SMALLINT,
                         d DATE, PRIMARY KEY (a, b));
         CREATE INDEX s_k ON s (k, pad);
         CREATE INDEX s_pad ON s (pad);
         CREATE INDEX r_ck ON r (c, k, d)",
    )
    .unwrap();
    let mut g = Lcg(7);
    let mut s_rows = Vec::new();
    for id in 1..=300 {
        let k = match g.below(10) {
            0 => "NULL".to_string(),
            _ => g.below(50).to_string(),
        };
        // c unique, so that ORDER BY c is a total order.
        let pad = match id % 11 {
            0 => "NULL".to_string(),
            _ => format!("'p{}'", id % 7),
        };
        s_rows.push(format!("({id}, {k}, 'c{:05}', {pad})", (id * 7919) % 1000));
    }
    sql.execute(&format!("INSERT INTO s VALUES {}", s_rows.join(", ")))
        .unwrap();
    let mut r_rows = Vec::new();
    for a in 1..=6 {
        for b in 0..40 {
            let c = match g.below(8) {
                0 => "NULL".to_string(),
                n => format!("'v{n}'"),
            };
            let price = match g.below(6) {
                0 => "NULL".to_string(),
                _ => format!("{}.{:02}", g.below(10_000), g.below(100)),
            };
            let k = if b % 9 == 0 {
                "NULL".to_string()
            } else {
                (b % 13).to_string()
            };
            let d = format!("DATE '2024-01-{:02}'", 1 + g.below(28));
            r_rows.push(format!("({a}, {}, {c}, {price}, {k}, {d})", b * 3 - 20));
        }
    }
    sql.execute(&format!("INSERT INTO r VALUES {}", r_rows.join(", ")))
        .unwrap();
    sql
}

/// A WHERE clause over an index of `s` or of `r`, and the index's columns followed by
/// the primary key's (the order of its entries).
fn index_condition(g: &mut Lcg, table: &str) -> (String, &'static str) {
    let k = |g: &mut Lcg| g.below(52) as i64 - 1;
    let pad = |g: &mut Lcg| format!("'p{}'", g.below(8));
    let c = |g: &mut Lcg| format!("'v{}'", g.below(9));
    match (table, g.below(6)) {
        ("s", 0) => (format!("k = {}", k(g)), "k, pad, id"),
        ("s", 1) => (format!("k = {} AND pad = {}", k(g), pad(g)), "k, pad, id"),
        ("s", 2) => (format!("pad > {} AND k = {}", pad(g), k(g)), "k, pad, id"),
        ("s", 3) => (format!("pad = {}", pad(g)), "pad, id"),
        ("s", 4) => (format!("pad < {}", pad(g)), "pad, id"),
        ("s", _) => (format!("pad BETWEEN {} AND {}", pad(g), pad(g)), "pad, id"),
        (_, 0) => (format!("c = {}", c(g)), "c, k, d, a, b"),
        (_, 1) => (
            format!("c = {} AND k = {}", c(g), g.below(14)),
            "c, k, d, a, b",
        ),
        (_, 2) => (
            format!("k < {} AND c = {}", g.below(14), c(g)),
            "c, k, d, a, b",
        ),
        (_, 3) => (format!("c <= {}", c(g)), "c, k, d, a, b"),
        (_, 4) => {
            let (x, y) = (g.below(14), g.below(14));
            (
                format!("c = {} AND k >= {x} AND k <= {y}", c(g)),
                "c, k, d, a, b",
            )
        }
        (_, _) => (
            format!("(c = {}) AND k > {}", c(g), g.below(14)),
            "c, k, d, a, b",
        ),
    }
}

/// An IN list of the keys of `s` or of `r`, or of prefixes of them.
fn key_list(g: &mut Lcg, table: &str) -> String {
    let n = 1 + g.below(5);
    let a = |g: &mut Lcg| g.below(8);
    let b = |g: &mut Lcg| g.below(150) as i64 - 30;
    let list = |g: &mut Lcg, item: &dyn Fn(&mut Lcg) -> String| {
        (0..n).map(|_| item(g)).collect::<Vec<_>>().join(", ")
    };
    match (table, g.below(3)) {
        ("s", _) => format!(
            "id IN ({})",
            list(g, &|g| (g.below(330) as i64 - 15).to_string())
        ),
        (_, 0) => format!("a IN ({})", list(g, &|g| a(g).to_string())),
        (_, 1) => format!(
            "(a, b) IN ({})",
            list(g, &|g| format!("({}, {})", a(g), b(g)))
        ),
        (_, _) => format!(
            "(b, a) IN ({})",
            list(g, &|g| format!("({}, {})", b(g), a(g)))
        ),
    }
}

/// A WHERE clause over the key of `s` or of `r`, or over one of their indexes.
fn condition(g: &mut Lcg, table: &str) -> String {
    match g.below(6) {
        0 | 1 => return index_condition(g, table).0,
        2 => return key_list(g, table),
        _ => {}
    }
    let v = |g: &mut Lcg| g.below(330) as i64 - 15;
    let w = |g: &mut Lcg| g.below(150) as i64 - 30;
    match (table, g.below(6)) {
        ("s", 0) => {
            let x = v(g);
            format!("id BETWEEN {x} AND {}", x + g.below(120) as i64 - 10)
        }
        ("s", 1) => format!("id > {} AND id <= {}", v(g), v(g)),
        ("s", 2) => format!("{} < id", v(g)),
        ("s", 3) => format!("id >= {} AND id < {}", v(g), v(g)),
        ("s", _) => {
            let x = v(g);
            format!("id BETWEEN {x} AND {}", x + 100)
        }
        (_, 0) => format!("a = {}", g.below(8)),
        (_, 1) => format!("a = {} AND b BETWEEN {} AND {}", g.below(8), w(g), w(g)),
        (_, 2) => format!("b < {} AND a = {}", w(g), g.below(8)),
        (_, 3) => format!("a >= {} AND a < {}", g.below(8), g.below(8)),
        (_, 4) => format!("{} <= b AND (a = {})", w(g), g.below(8)),
        (_, _) => format!("a <= {}", g.below(8)),
    }
}

fn query(g: &mut Lcg) -> String {
    let table = g.pick(&["s", "r"]);
    let (columns, key): (&[&str], &str) = match table {
        "s" => (&["id", "k", "c", "pad"], "id"),
        _ => (&["a", "b", "c", "price", "k", "d"], "a, b"),
    };
    let any = |g: &mut Lcg| columns[g.below(columns.len() as u64) as usize];
    let condition = condition(g, table);
    let limit = |g: &mut Lcg| match g.below(3) {
        0 => format!(" LIMIT {}", g.below(12)),
        _ => String::new(),
    };
    match g.below(9) {
        0 => format!("SELECT * FROM {table} WHERE {condition}{}", limit(g)),
        8 => {
            let by = any(g);
            let other = any(g);
            let (select, group) = match g.below(3) {
                0 => (by.to_string(), by.to_string()),
                1 => (
                    format!("{other}, {by} AS grouped"),
                    format!("{by}, {other}"),
                ),
                _ => (String::new(), by.to_string()),
            };
            let select = if select.is_empty() {
                select
            } else {
                format!("{select}, ")
            };
            format!(
                "SELECT {select}count(*), count({}), count(DISTINCT {}) AS kinds, min({}), \
                 max({}) AS top FROM {table} WHERE {condition} GROUP BY {group}",
                any(g),
                any(g),
                any(g),
                any(g)
            )
        }
        7 => {
            // In the order of an index's entries, one way, NULLs where its order puts
            // them or not.
            let (condition, order) = index_condition(g, table);
            let (dir, nulls) = (
                g.pick(&["", " DESC"]),
                g.pick(&["", " NULLS FIRST", " NULLS LAST"]),
            );
            let order: Vec<String> = order
                .split(", ")
                .map(|c| format!("{c}{dir}{nulls}"))
                .collect();
            let (x, y) = (any(g), any(g));
            format!(
                "SELECT {x}, {y} FROM {table} WHERE {condition} ORDER BY {}{}",
                order.join(", "),
                limit(g)
            )
        }
        1 => {
            let order = match (table, g.below(3)) {
                ("s", 0) => " ORDER BY id DESC",
                ("s", _) => " ORDER BY id",
                (_, 0) => " ORDER BY a DESC, b DESC",
                (_, _) => " ORDER BY a, b",
            };
            let (x, y) = (any(g), any(g));
            format!(
                "SELECT {x}, {y} FROM {table} WHERE {condition}{order}{}",
                limit(g)
            )
        }
        2 => {
            // Sorted by a column, then by the key so that the order is total.
            let by = any(g);
            let dir = g.pick(&["", " DESC", " NULLS FIRST", " DESC NULLS LAST"]);
            let (x, y) = (any(g), any(g));
            format!(
                "SELECT {x}, {y} FROM {table} WHERE {condition} ORDER BY {by}{dir}, {key}{}",
                limit(g)
            )
        }
        3 => {
            let x = any(g);
            let dir = g.pick(&["", " DESC"]);
            format!(
                "SELECT DISTINCT {x} FROM {table} WHERE {condition} ORDER BY {x}{dir}{}",
                limit(g)
            )
        }
        4 => {
            let (x, y) = (any(g), any(g));
            format!("SELECT DISTINCT {x}, {y} FROM {table} WHERE {condition} ORDER BY {y}, {x}")
        }
        _ => {
            let summed = match table {
                "s" => g.pick(&["id", "k"]),
                _ => g.pick(&["a", "b", "price", "k"]),
            };
            format!(
                "SELECT count(*), count({}), sum({summed}), min({}), max({}) AS top \
                 FROM {table} WHERE {condition}",
                any(g),
                any(g),
                any(g)
            )
        }
    }
}

/// `q` with `AND true` after its WHERE clause, which sends it the general way.
fn twin(q: &str) -> String {
    let at = [" ORDER BY", " LIMIT", " GROUP BY"]
        .iter()
        .filter_map(|clause| q.find(clause))
        .min()
        .unwrap_or(q.len());
    format!("{} AND true{}", &q[..at], &q[at..])
}

#[test]
fn range_reads_agree_with_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let sql = engine(dir.path());
    let run = |q: &str| show(sql.execute(q).map(|mut o| o.pop().unwrap()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut session = sql.session();
    let mut g = Lcg(2024);
    let rows = |q: &str| rows(sql.execute(q).map(|mut o| o.pop().unwrap()));
    for _ in 0..1200 {
        let q = query(&mut g);
        match (q.contains(" ORDER BY "), q.find(" LIMIT ")) {
            (true, _) => assert_eq!(run(&q), run(&twin(&q)), "{q}"),
            // Rows (and groups) come in no set order without ORDER BY, and LIMIT then
            // takes any of them.
            (false, None) => assert_eq!(rows(&q), rows(&twin(&q)), "{q}"),
            (false, Some(at)) => {
                let all = rows(&twin(&q[..at])).1;
                let ((columns, fast), (twin_columns, general)) = (rows(&q), rows(&twin(&q)));
                assert_eq!(columns, twin_columns, "{q}");
                assert_eq!(fast.len(), general.len(), "{q}");
                assert!(fast.iter().all(|r| all.contains(r)), "{q}: {fast:?}");
            }
        }
        let statement = pmdb_sql::parse(&q).unwrap().pop_front().unwrap();
        let prepared = rt.block_on(session.prepare(statement)).unwrap();
        assert!(prepared.on_fast_path(), "{q} goes the general way");
    }
    // Within a transaction block, the block's own writes are read.
    sql.execute("BEGIN; DELETE FROM r WHERE a = 2 AND b = -20; INSERT INTO r (a, b, c) VALUES (2, 500, 'new')")
        .unwrap();
    for q in [
        "SELECT b, c FROM r WHERE a = 2 ORDER BY b DESC LIMIT 3",
        "SELECT count(*), max(b) FROM r WHERE a = 2",
        "SELECT b FROM r WHERE a = 2 ORDER BY a, b LIMIT 2",
    ] {
        let (fast, general) = (run(q), run(&twin(q)));
        assert_eq!(fast, general, "{q}");
        assert!(!fast.contains("| -20 |"), "{q}: {fast}");
    }
    assert!(run("SELECT c FROM r WHERE a = 2 ORDER BY b DESC LIMIT 1").contains("new"));
    sql.execute("ROLLBACK").unwrap();
}

#[test]
fn prepared_range_reads_agree_with_literal_twins() {
    let dir = tempfile::tempdir().unwrap();
    let sql = engine(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut s = sql.session();
    let int = |v: i32| ScalarValue::Int32(Some(v));
    let big = |v: i64| ScalarValue::Int64(Some(v));
    let small = |v: i16| ScalarValue::Int16(Some(v));
    let string = |v: &str| ScalarValue::Utf8(Some(v.to_string()));
    let cases: &[(&str, Vec<Vec<ScalarValue>>)] = &[
        // sysbench's range statements.
        (
            "SELECT c FROM s WHERE id BETWEEN $1 AND $2",
            vec![
                vec![int(10), int(109)],
                vec![int(250), int(400)],
                vec![int(5), int(1)],
            ],
        ),
        (
            "SELECT SUM(k) FROM s WHERE id BETWEEN $1 AND $2",
            vec![vec![int(1), int(100)], vec![int(500), int(600)]],
        ),
        (
            "SELECT c FROM s WHERE id BETWEEN $1 AND $2 ORDER BY c",
            vec![vec![int(30), int(129)], vec![int(290), int(310)]],
        ),
        (
            "SELECT DISTINCT c FROM s WHERE id BETWEEN $1 AND $2 ORDER BY c",
            vec![vec![int(1), int(300)]],
        ),
        // TPC-C's: the oldest row of a prefix, the lines of one order, their sum.
        (
            "SELECT b FROM r WHERE a = $1 ORDER BY b ASC LIMIT $2",
            vec![
                vec![int(3), big(1)],
                vec![int(4), big(0)],
                vec![int(9), big(5)],
            ],
        ),
        (
            "SELECT b, price, d FROM r WHERE a = $1 AND b >= $2 ORDER BY b DESC LIMIT 4",
            vec![vec![int(1), big(50)], vec![int(6), big(-100)]],
        ),
        (
            "SELECT SUM(price), count(*) FROM r WHERE a = $1",
            vec![vec![int(2)], vec![int(7)]],
        ),
        // TPC-C's by index: the customers of a last name, how many, a customer's latest
        // order.
        (
            "SELECT a, b FROM r WHERE c = $1 AND k = $2 ORDER BY d",
            vec![vec![string("v3"), small(5)], vec![string("v1"), small(1)]],
        ),
        (
            "SELECT count(a) namecnt FROM r WHERE c = $1 AND k = $2",
            vec![vec![string("v2"), small(4)], vec![string("none"), small(4)]],
        ),
        (
            "SELECT id, pad FROM s WHERE k = $1 ORDER BY pad DESC NULLS LAST, id DESC LIMIT 1",
            vec![vec![int(7)], vec![int(12)], vec![int(60)]],
        ),
        // Delivery's sums of the lines of some orders, by district.
        (
            "SELECT a, SUM(price) FROM r WHERE (a, b) IN (($1, $2), ($3, $4), ($5, $6)) GROUP BY a",
            vec![
                vec![int(1), big(-20), int(1), big(1), int(3), big(4)],
                vec![int(2), big(7), int(9), big(7), int(2), big(7)],
            ],
        ),
        (
            "SELECT k, count(*), SUM(price) FROM r WHERE a IN ($1, $2) GROUP BY k",
            vec![vec![int(4), int(5)], vec![int(6), int(6)]],
        ),
    ];
    for (text, runs) in cases {
        let statement = pmdb_sql::parse(text).unwrap().pop_front().unwrap();
        let prepared = rt.block_on(s.prepare(statement)).unwrap();
        assert!(prepared.on_fast_path(), "{text} goes the general way");
        for params in runs {
            let mut literal = twin(text);
            for (i, p) in params.iter().enumerate().rev() {
                let value = match p {
                    ScalarValue::Utf8(Some(v)) => format!("'{v}'"),
                    p => p.to_string(),
                };
                literal = literal.replace(&format!("${}", i + 1), &value);
            }
            let a = show(rt.block_on(s.run_prepared(&prepared, params.clone())));
            let b = show(
                rt.block_on(s.execute(&literal))
                    .map(|mut o| o.pop().unwrap()),
            );
            let (mut a, mut b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
            if text.contains(" GROUP BY ") {
                a.sort();
                b.sort();
            }
            assert_eq!(a, b, "{text} with {params:?}");
        }
    }
}
