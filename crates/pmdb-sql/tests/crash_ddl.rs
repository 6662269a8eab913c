//! Crash simulation of the SQL layer: a script of DDL and DML (serial and unique
//! columns, sequences, unique indexes, foreign keys with a cascading delete and checks
//! among them, views, whose rows count as their own, a materialized view refreshed and
//! dropped with its table, table rebuilds: columns dropped and retyped, and DDL in
//! transaction blocks that commit, roll back, and roll back to a savepoint, schemas
//! made and dropped with what they hold, enum types and domains, TRUNCATE of tables larger than one commit's
//! batch) crashed at its crash points. After recovery
//! the catalog opens, every table holds what the script had
//! left after its acknowledged statements (or after the one in flight too: each
//! statement is all there or not at all), row counts and index entries agree with the
//! rows, columnar segments that say they hold the rows hold exactly them, and no
//! subtable is left that no table names.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use pmdb_engine::{Db, DbOptions};
use pmdb_pmem::{AckLog, CrashTest, Pool};
use pmdb_sql::keycode::decode_key_prefix;
use pmdb_sql::{Output, ScanOptions, SqlEngine};

/// `{csv}` stands for a file of [`CSV_ROWS`] rows of table c, in key order.
const SCRIPT: &[&str] = &[
    "CREATE TABLE a (k INT PRIMARY KEY, v VARCHAR(40), n BIGINT)",
    "INSERT INTO a VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30), (4, 'four', 40)",
    "CREATE INDEX a_v ON a (v)",
    "CREATE TABLE b (x INT, y TEXT)",
    "INSERT INTO b VALUES (1, 'p'), (2, 'q'), (5, 'q'), (NULL, 'r')",
    "UPDATE a SET v = 'deux', n = n + 1 WHERE k = 2",
    "INSERT INTO a SELECT x + 10, y, x FROM b WHERE x IS NOT NULL",
    "DELETE FROM a WHERE k IN (SELECT x FROM b)",
    "CREATE TABLE g AS SELECT k, v, n * 2 AS twice FROM a WHERE k > 1",
    "CREATE VIEW w AS SELECT k, v FROM a WHERE k > 2",
    "CREATE INDEX a_n ON a (n, v)",
    "DROP INDEX a_v",
    "DROP TABLE b",
    "CREATE TABLE c (d DATE PRIMARY KEY, amount DECIMAL(9,2) NOT NULL)",
    "COPY c FROM '{csv}' WITH (FORMAT csv)",
    "INSERT INTO c VALUES (DATE '2024-01-01', 1.50), (DATE '2024-01-02', 2.25)",
    "ANALYZE c",
    "CREATE TABLE f (id INT PRIMARY KEY, cd DATE REFERENCES c ON DELETE CASCADE, q INT CHECK (q > 0))",
    "INSERT INTO f VALUES (1, DATE '2024-01-01', 1), (2, DATE '2024-01-02', 2), (3, NULL, 3)",
    "DELETE FROM c WHERE d >= DATE '2024-01-02'",
    "ALTER TABLE f ADD CONSTRAINT f_small CHECK (q < 10)",
    "ALTER TABLE f DROP CONSTRAINT f_cd_fkey",
    "UPDATE a SET k = k + 100 WHERE n > 20",
    "CREATE TABLE s (id SERIAL PRIMARY KEY, u TEXT UNIQUE, n INT DEFAULT 5)",
    "INSERT INTO s (u) VALUES ('x'), ('y'), (NULL)",
    "ALTER TABLE s ADD COLUMN extra INT DEFAULT 3",
    "INSERT INTO s (u, extra) VALUES ('z', 4)",
    "ALTER TABLE s RENAME COLUMN u TO w",
    "ALTER TABLE s RENAME TO s2",
    "ALTER TABLE f ADD FOREIGN KEY (cd) REFERENCES c",
    "ALTER TABLE c ALTER COLUMN amount TYPE DECIMAL(12,1)",
    "ALTER TABLE s2 DROP COLUMN n, ALTER COLUMN extra TYPE BIGINT USING extra * 2",
    "INSERT INTO s2 (w) VALUES ('after')",
    "ALTER TABLE f DROP COLUMN q",
    "CREATE UNIQUE INDEX a_n_unique ON a (n)",
    "CREATE MATERIALIZED VIEW m (key, v) AS SELECT k, v FROM a WHERE k > 1",
    "CREATE UNIQUE INDEX m_key ON m (key)",
    "INSERT INTO a VALUES (50, 'fifty', 500)",
    "REFRESH MATERIALIZED VIEW CONCURRENTLY m",
    "BEGIN; INSERT INTO a VALUES (51, 'x', 510); REFRESH MATERIALIZED VIEW m; ROLLBACK",
    "CREATE SCHEMA app",
    "CREATE TABLE app.t (id SERIAL PRIMARY KEY, v TEXT UNIQUE)",
    "INSERT INTO app.t (v) VALUES ('x'), ('y')",
    "CREATE VIEW app.tv AS SELECT v FROM app.t WHERE id > 1",
    "CREATE TYPE app.kind AS ENUM ('a', 'b')",
    "CREATE TABLE app.k (id INT PRIMARY KEY, kind app.kind)",
    // Enum types: made, given labels, renamed, dropped, in blocks and out.
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    "CREATE TABLE e (k INT PRIMARY KEY, m mood)",
    "INSERT INTO e VALUES (1, 'ok'), (2, 'happy')",
    "ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'",
    "INSERT INTO e VALUES (3, 'meh')",
    "BEGIN; ALTER TYPE mood ADD VALUE 'gone'; CREATE TYPE scratch_t AS ENUM ('x'); ROLLBACK",
    "CREATE TYPE dropped AS ENUM ('z')",
    "BEGIN; ALTER TYPE mood RENAME TO feeling; DROP TYPE dropped; COMMIT",
    // Domains: made over a type and over a domain, columns of them, dropped, in blocks.
    "CREATE DOMAIN pos AS INT CHECK (VALUE > 0)",
    "CREATE DOMAIN small pos NOT NULL DEFAULT 3 CHECK (VALUE < 10)",
    "CREATE TABLE dom (k INT PRIMARY KEY, p pos, s small)",
    "INSERT INTO dom (k, p) VALUES (1, 1), (2, 5)",
    "BEGIN; CREATE DOMAIN scratch_d AS text; CREATE TABLE scratch_t (x scratch_d); ROLLBACK",
    "CREATE DOMAIN short_lived AS feeling",
    "BEGIN; DROP DOMAIN short_lived; CREATE DOMAIN app.lvl AS INT; \
     CREATE TABLE app.lv (k INT PRIMARY KEY, l app.lvl); COMMIT",
    "CREATE SCHEMA kept",
    "CREATE TABLE kept.t (a INT PRIMARY KEY)",
    "INSERT INTO kept.t VALUES (1), (2)",
    "BEGIN; CREATE SCHEMA scratch; CREATE TABLE scratch.x (a INT); DROP SCHEMA app CASCADE; \
     ROLLBACK",
    // DDL in blocks: whole with its block's commit, absent after a rollback.
    "BEGIN; CREATE TABLE t1 (k INT PRIMARY KEY, v TEXT); CREATE INDEX t1_v ON t1 (v); \
     INSERT INTO t1 VALUES (1, 'a'), (2, 'b'); ALTER TABLE f ADD COLUMN z INT DEFAULT 9; \
     DROP TABLE g; CREATE SEQUENCE t1_seq; COMMENT ON COLUMN t1.v IS 'vee'; COMMIT",
    "BEGIN; DROP TABLE t1; CREATE TABLE gone (x INT); INSERT INTO gone VALUES (1); \
     ALTER TABLE c RENAME TO c2; ROLLBACK",
    "BEGIN; CREATE TABLE sp (x INT); SAVEPOINT p; DROP TABLE f; ALTER TABLE t1 DROP COLUMN v; \
     ROLLBACK TO SAVEPOINT p; INSERT INTO sp VALUES (1); ALTER TABLE t1 ADD COLUMN w INT; \
     COMMIT",
    "CREATE SEQUENCE later START WITH 10",
    "CREATE OR REPLACE VIEW w AS SELECT k FROM a WHERE k > 100",
    "DROP VIEW w",
    // Outside a block, at once: c (hundreds of rows) and f, which references it.
    "TRUNCATE c CASCADE",
    "DROP TABLE a CASCADE",
    "DROP TABLE s2",
    "DROP SCHEMA app CASCADE",
];

/// Small memtables, tiering by hand: the crash points are the statements' own.
fn options() -> DbOptions {
    DbOptions {
        memtable_size: 64 << 10,
        ..DbOptions::small().manual_tiering()
    }
}

const CSV_ROWS: usize = 600;

/// The script, with the file it loads written into `dir`.
fn script(dir: &std::path::Path) -> Vec<String> {
    let csv = dir.join("c.csv");
    let rows: String = (0..CSV_ROWS)
        .map(|i| {
            let (year, month, day) = (2020 + i / 336, i / 28 % 12 + 1, i % 28 + 1);
            format!("{year}-{month:02}-{day:02},{i}.{:02}\n", i % 100)
        })
        .collect();
    std::fs::write(&csv, rows).unwrap();
    SCRIPT
        .iter()
        .map(|s| s.replace("{csv}", &csv.display().to_string()))
        .collect()
}

/// Every table's rows, as sorted text, and the schemas besides `public`.
type Contents = BTreeMap<String, Vec<String>>;

fn contents(sql: &SqlEngine) -> Result<Contents, String> {
    let mut out = Contents::new();
    let schemas = sql
        .catalog()
        .schemas()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    out.insert("schemas".into(), schemas);
    let types = sql
        .catalog()
        .enum_types()
        .iter()
        .map(|t| format!("{}: {}", t.rel_name().quoted(), t.labels.join(",")))
        .collect();
    out.insert("enum types".into(), types);
    let domains = sql
        .catalog()
        .domain_types()
        .iter()
        .map(|d| format!("{:?}", d.def))
        .collect();
    out.insert("domains".into(), domains);
    let tables = sql
        .catalog()
        .tables()
        .into_iter()
        .map(|t| t.def().rel_name().quoted());
    let views = sql
        .catalog()
        .views()
        .into_iter()
        .map(|v| v.rel_name().quoted());
    for name in tables.chain(views) {
        let q = format!("SELECT * FROM {name}");
        let batches = match sql.execute(&q).map_err(|e| format!("{q}: {e}"))?.pop() {
            Some(Output::Rows { batches, .. }) => batches,
            other => return Err(format!("{q}: {other:?}")),
        };
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &batches {
            let f: Vec<_> = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
                .collect();
            for r in 0..b.num_rows() {
                rows.push(
                    f.iter()
                        .map(|f| f.value(r).to_string())
                        .collect::<Vec<_>>()
                        .join("|"),
                );
            }
        }
        rows.sort();
        out.insert(name, rows);
    }
    Ok(out)
}

/// Row counts, index entries, segments and subtables agree with the rows.
fn consistent(sql: &SqlEngine) -> Result<(), String> {
    let mut named = Vec::new();
    let mut covered = false;
    for t in sql.catalog().tables() {
        covered |= t
            .covered_at(&sql.db().snapshot())
            .map_err(|e| e.to_string())?;
        let rows = t.rows().scan::<[u8]>(..).count() as u64;
        if rows != t.row_count() {
            return Err(format!(
                "table {} holds {rows} rows; its count says {}",
                t.def().name,
                t.row_count()
            ));
        }
        for ix in t.indexes() {
            let mut entries = 0;
            for e in ix.subtable.scan::<[u8]>(..) {
                let e = e.map_err(|e| e.to_string())?;
                let (_, row_key) =
                    decode_key_prefix(&ix.types, e.key()).map_err(|e| e.to_string())?;
                if t.rows().get(row_key).map_err(|e| e.to_string())?.is_none() {
                    return Err(format!("index {} names a missing row", ix.def.name));
                }
                entries += 1;
            }
            if entries != rows {
                return Err(format!(
                    "index {} has {entries} entries for {rows} rows",
                    ix.def.name
                ));
            }
        }
        named.extend(t.subtable_names());
    }
    for s in sql.db().subtable_names() {
        if s.starts_with("sql.") && s != "sql.catalog" && !named.contains(&s) {
            return Err(format!("subtable {s} is left over"));
        }
    }
    if covered {
        let columnar = contents(sql)?;
        sql.set_scan_options(ScanOptions {
            columnar: false,
            ..Default::default()
        });
        let rows = contents(sql);
        sql.set_scan_options(ScanOptions::default());
        let rows = rows?;
        if columnar != rows {
            return Err(format!(
                "the columnar segments hold {columnar:?}, the rows {rows:?}"
            ));
        }
    }
    Ok(())
}

/// Whether `got` is `loaded` but for the loaded table, which holds a first part of
/// its rows in key order (the text order of these rows).
fn loaded_part(got: &Contents, loaded: &Contents) -> bool {
    got.keys().eq(loaded.keys())
        && got.iter().all(|(name, rows)| {
            rows == &loaded[name] || (name == "c" && loaded[name].starts_with(rows))
        })
}

/// What the database holds after each prefix of the script, on a database that does
/// not crash.
fn states(script: &[String]) -> Vec<Contents> {
    let dir = tempfile::tempdir().unwrap();
    let sql = SqlEngine::open(Db::open(dir.path(), options()).unwrap()).unwrap();
    let mut states = vec![contents(&sql).unwrap()];
    for s in script {
        sql.execute(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        states.push(contents(&sql).unwrap());
    }
    states
}

fn run(seed: u64, script: &[String]) -> usize {
    let states = states(script);
    let report = CrashTest::new(seed)
        .options(options().pool)
        .max_points(400)
        .mixes(4)
        .run(
            |pool: &Arc<Pool>, acks: &mut AckLog<usize>| {
                let db = Db::open_pool(Arc::clone(pool), options()).unwrap();
                let sql = SqlEngine::open(db).unwrap();
                for (i, s) in script.iter().enumerate() {
                    sql.execute(s).unwrap_or_else(|e| panic!("{s}: {e}"));
                    acks.ack(i + 1);
                }
            },
            |pool: &Arc<Pool>, acked: &[&usize], in_flight: Option<&usize>| {
                let db = Db::open_pool(Arc::clone(pool), options())
                    .map_err(|e| format!("open after crash: {e}"))?;
                let sql = SqlEngine::open(db).map_err(|e| format!("SQL open after crash: {e}"))?;
                consistent(&sql)?;
                let got = contents(&sql)?;
                let done = acked.last().map_or(0, |&&n| n);
                if got == states[done] {
                    return Ok(());
                }
                match in_flight {
                    Some(&n) if got == states[n] => Ok(()),
                    // COPY commits as it goes: a crash may leave the first rows loaded.
                    Some(&n)
                        if script[n - 1].starts_with("COPY") && loaded_part(&got, &states[n]) =>
                    {
                        Ok(())
                    }
                    _ => Err(format!(
                        "after {done} statements the tables hold {got:?}, not {:?}",
                        states[done]
                    )),
                }
            },
        )
        .unwrap_or_else(|f| panic!("{f}"));
    report.images
}

#[test]
fn ddl_and_dml_survive_every_crash_point() {
    let files = tempfile::tempdir().unwrap();
    let images = run(1, &script(files.path()));
    assert!(images >= 400, "{images} crash images");
}

/// TRUNCATE outside a block of a table that takes many commits' batches to delete, and
/// of the one that references it: both whole or both untouched after any crash.
#[test]
fn truncate_is_whole_after_every_crash_point() {
    let script: Vec<String> = [
        "CREATE TABLE p (k INT PRIMARY KEY, v TEXT)",
        "INSERT INTO p SELECT g, 'row ' || g FROM generate_series(1, 2000) AS s(g)",
        "CREATE INDEX p_v ON p (v)",
        "CREATE TABLE ch (id INT PRIMARY KEY, pk INT REFERENCES p)",
        "INSERT INTO ch SELECT g, g FROM generate_series(1, 300) AS s(g)",
        "TRUNCATE p CASCADE",
        "INSERT INTO p VALUES (1, 'after')",
    ]
    .map(String::from)
    .into();
    let images = run(2, &script);
    assert!(images >= 400, "{images} crash images");
}
