//! Columnar segments end to end: a bulk load builds them, full scans read them and
//! answer exactly as the rows do, any other change makes scans read rows again, and
//! ANALYZE builds them anew.

use datafusion::arrow::util::pretty::pretty_format_batches;
use std::sync::Arc;

use pmdb_engine::{Db, DbOptions};
use pmdb_prefetch::{PrefetchOptions, Prefetcher};
use pmdb_sql::{Output, ScanOptions, SqlEngine};

fn open(dir: &std::path::Path) -> SqlEngine {
    SqlEngine::open(Db::open(dir.join("db"), DbOptions::small()).unwrap()).unwrap()
}

fn text(sql: &SqlEngine, q: &str) -> String {
    match sql.execute(q).unwrap().pop().unwrap() {
        Output::Rows { batches, .. } | Output::Returned { batches, .. } => {
            pretty_format_batches(&batches).unwrap().to_string()
        }
        other => panic!("{q}: {other:?}, not rows"),
    }
}

fn plan(sql: &SqlEngine, q: &str) -> String {
    text(sql, &format!("EXPLAIN {q}"))
}

const QUERIES: &[&str] = &[
    "SELECT * FROM t ORDER BY k",
    "SELECT count(*) FROM t",
    "SELECT count(s), sum(d), min(dt), max(ts), avg(f), sum(n), sum(big), sum(r) FROM t",
    "SELECT b, count(*), sum(d) FROM t GROUP BY b ORDER BY b",
    "SELECT k, s FROM t WHERE s LIKE 'name 1%' ORDER BY k LIMIT 7",
    "SELECT * FROM t LIMIT 3",
];

/// Every query answers the same read through segments (with the prefetcher too, where
/// the machine has a core for it) and through rows.
fn same_both_ways(sql: &SqlEngine) {
    let prefetcher = Prefetcher::start(&PrefetchOptions::default())
        .ok()
        .map(Arc::new);
    for q in QUERIES {
        if let Some(p) = &prefetcher {
            let before = p.stats();
            sql.set_scan_options(ScanOptions {
                prefetcher: Some(Arc::clone(p)),
                ..Default::default()
            });
            let prefetched = text(sql, q);
            sql.set_scan_options(ScanOptions::default());
            agree(q, &prefetched, &text(sql, q));
            let after = p.stats();
            if plan(sql, q).contains("columnar") {
                assert!(
                    after.queued + after.dropped > before.queued + before.dropped,
                    "{q}"
                );
            }
        }
        sql.set_scan_options(ScanOptions::default());
        let columnar = text(sql, q);
        sql.set_scan_options(ScanOptions {
            columnar: false,
            ..Default::default()
        });
        let rows = text(sql, q);
        sql.set_scan_options(ScanOptions::default());
        agree(q, &columnar, &rows);
    }
}

/// The answers of `q` read two ways are the same (a LIMIT without ORDER BY: as many).
fn agree(q: &str, a: &str, b: &str) {
    if q.ends_with("LIMIT 3") {
        assert_eq!(a.lines().count(), b.lines().count(), "{q}");
    } else if a != b {
        let diff = a.lines().zip(b.lines()).find(|(x, y)| x != y);
        panic!(
            "{q}: {} lines one way, {} the other; first difference {diff:?}",
            a.lines().count(),
            b.lines().count()
        );
    }
}

fn csv(dir: &std::path::Path, name: &str, keys: impl Iterator<Item = i64>) -> String {
    let mut out = String::new();
    for k in keys {
        // Every seventh row has NULLs in all columns that allow them.
        if k % 7 == 0 {
            out.push_str(&format!("{k},,,,,,,,,\n"));
            continue;
        }
        out.push_str(&format!(
            "{k},name {k},{}.{:02},{},{},2024-{:02}-{:02},2024-01-01T{:02}:00:00,{},{},{}\n",
            k * 3,
            k.rem_euclid(100),
            k as f64 / 8.0,
            k % 3 == 0,
            k.rem_euclid(12) + 1,
            k.rem_euclid(28) + 1,
            k.rem_euclid(24),
            k % 1000,
            k * 1_000_003,
            k as f32 / 4.0,
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    format!("COPY t FROM '{}' WITH (FORMAT csv)", path.display())
}

const TABLE: &str = "CREATE TABLE t (k BIGINT PRIMARY KEY, s VARCHAR(30), d DECIMAL(14,2), \
    f DOUBLE, b BOOLEAN, dt DATE, ts TIMESTAMP, n SMALLINT, big BIGINT, r REAL)";

#[test]
fn loads_build_segments_that_full_scans_read() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(TABLE).unwrap();
    // Two loads, the second above the first: both build chunks, cut at each commit.
    sql.execute(&csv(dir.path(), "a.csv", 1..20_000)).unwrap();
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(p.contains("access=columnar segments"), "{p}");
    sql.execute(&csv(dir.path(), "b.csv", 20_000..30_001))
        .unwrap();
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(p.contains("access=columnar segments"), "{p}");
    // Filters on the key still read rows by key range; the key column reads rows.
    let p = plan(&sql, "SELECT s FROM t WHERE k = 5");
    assert!(p.contains("primary key, 1 range(s)"), "{p}");
    same_both_ways(&sql);
    assert!(text(&sql, "SELECT count(*) FROM t").contains("30000"));

    // Any other change to the rows: scans read rows, and answer the change.
    sql.execute("UPDATE t SET s = 'changed' WHERE k = 15000")
        .unwrap();
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(!p.contains("columnar"), "{p}");
    assert!(text(&sql, "SELECT count(*) FROM t WHERE s = 'changed'").contains("| 1 "));
    same_both_ways(&sql);

    // ANALYZE builds them anew; they hold the change and last across reopen.
    sql.execute("ANALYZE t").unwrap();
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(p.contains("access=columnar segments"), "{p}");
    same_both_ways(&sql);
    drop(sql);
    let sql = open(dir.path());
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(p.contains("access=columnar segments"), "{p}");
    assert!(text(&sql, "SELECT count(*) FROM t WHERE s = 'changed'").contains("| 1 "));
    same_both_ways(&sql);

    // A load whose keys fall below the last one cannot keep chunks in key order.
    sql.execute(&csv(dir.path(), "c.csv", (-500..0).rev()))
        .unwrap();
    let p = plan(&sql, "SELECT sum(d) FROM t");
    assert!(!p.contains("columnar"), "{p}");
    same_both_ways(&sql);
    sql.execute("ANALYZE").unwrap();
    assert!(plan(&sql, "SELECT sum(d) FROM t").contains("access=columnar segments"));
    same_both_ways(&sql);
}

#[test]
fn tables_without_a_primary_key_and_empty_tables_use_segments() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(&TABLE.replace(" PRIMARY KEY", "")).unwrap();
    assert!(plan(&sql, "SELECT * FROM t").contains("access=columnar segments"));
    assert!(text(&sql, "SELECT count(*) FROM t").contains("| 0 "));
    sql.execute(&csv(dir.path(), "a.csv", 1..10_000)).unwrap();
    assert!(plan(&sql, "SELECT * FROM t").contains("access=columnar segments"));
    same_both_ways(&sql);
    sql.execute("DELETE FROM t WHERE k % 2 = 0").unwrap();
    assert!(!plan(&sql, "SELECT * FROM t").contains("columnar"));
    same_both_ways(&sql);
    sql.execute("ANALYZE t").unwrap();
    assert!(plan(&sql, "SELECT * FROM t").contains("access=columnar segments"));
    same_both_ways(&sql);
}

#[test]
fn a_damaged_chunk_is_an_error_and_the_rows_still_answer() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(TABLE).unwrap();
    sql.execute(&csv(dir.path(), "a.csv", 1..3_000)).unwrap();
    let table = sql
        .catalog()
        .table(&pmdb_sql::names::RelName::public("t"))
        .unwrap();
    let segments = table.segments().unwrap().clone();
    // Flip one byte in the middle of column d's (position 2) first chunk, as damage to
    // the media would, and cut column s's (position 1) last chunk short.
    let first_d = segments
        .scan(vec![0, 2]..vec![0, 3])
        .next()
        .unwrap()
        .unwrap()
        .to_owned();
    let mut bad = first_d.1.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    segments.put(&first_d.0, &bad).unwrap();
    let e = sql.execute("SELECT sum(d) FROM t").unwrap_err();
    assert_eq!(e.sqlstate(), "XX001", "{e}");
    assert!(
        e.to_string().contains("columnar segment of table \"t\""),
        "{e}"
    );
    assert!(e.to_string().contains("checksum"), "{e}");
    let last_s = segments
        .scan_rev(vec![0, 1]..vec![0, 2])
        .next()
        .unwrap()
        .unwrap()
        .to_owned();
    segments
        .put(&last_s.0, &last_s.1[..last_s.1.len() - 1])
        .unwrap();
    let e = sql.execute("SELECT count(s) FROM t").unwrap_err();
    assert_eq!(e.sqlstate(), "XX001", "{e}");
    // The rows are untouched: read as rows, every query still answers, and nothing
    // was thrown away.
    sql.set_scan_options(ScanOptions {
        columnar: false,
        ..Default::default()
    });
    assert!(text(&sql, "SELECT count(*), count(s) FROM t").contains("2999"));
    // ANALYZE builds the segments anew only when they are stale; a change makes them so.
    sql.execute("UPDATE t SET n = n WHERE k = 1").unwrap();
    sql.execute("ANALYZE t").unwrap();
    sql.set_scan_options(ScanOptions::default());
    same_both_ways(&sql);
}
