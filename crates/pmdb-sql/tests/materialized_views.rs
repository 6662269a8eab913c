//! Materialized views as PostgreSQL has them: CREATE MATERIALIZED VIEW [IF NOT EXISTS]
//! with the query's rows (and column names given or taken from it), indexes on it,
//! rows that only REFRESH changes (in a block too, undone by its rollback), CONCURRENTLY
//! with a unique index, dependencies in both directions (a table or view it reads, the
//! views that read it), DROP of the right kind, and the definition kept across a reopen.

mod common;

use common::Fixture;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;
use pmdb_sql::names::RelName;

const SHOP: &str = "
    CREATE TABLE items (id INT PRIMARY KEY, name TEXT, price INT);
    INSERT INTO items VALUES (1, 'pen', 2), (2, 'pad', 5), (3, 'ink', 9);
    CREATE VIEW dear AS SELECT id, name, price FROM items WHERE price > 3;
";

#[test]
fn materialized_views_keep_their_rows_until_refreshed() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    assert_eq!(
        f.tag(
            &mut s,
            "CREATE MATERIALIZED VIEW prices (item, cost) AS SELECT name, price FROM dear"
        ),
        "SELECT 2"
    );
    assert_eq!(
        f.tag(
            &mut s,
            "CREATE MATERIALIZED VIEW IF NOT EXISTS prices AS SELECT 1"
        ),
        "CREATE MATERIALIZED VIEW"
    );
    f.tag(&mut s, "CREATE UNIQUE INDEX prices_item ON prices (item)");
    // The rows are the query's when it ran: a change to the table does not show.
    f.tag(&mut s, "INSERT INTO items VALUES (4, 'nib', 7)");
    assert_eq!(
        f.rows(&mut s, "SELECT item, cost FROM prices ORDER BY cost"),
        ["pad|5", "ink|9"]
    );
    assert_eq!(
        f.tag(&mut s, "REFRESH MATERIALIZED VIEW CONCURRENTLY prices"),
        "REFRESH MATERIALIZED VIEW"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT item FROM prices ORDER BY cost"),
        ["pad", "nib", "ink"]
    );
    // The unique index is filled again with the rows: a repeated item fails the
    // refresh, and the view keeps the rows it had.
    f.tag(&mut s, "INSERT INTO items VALUES (5, 'pad', 8)");
    assert_eq!(
        f.sqlstate(&mut s, "REFRESH MATERIALIZED VIEW prices"),
        "23505"
    );
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM prices"), ["3"]);
    f.tag(&mut s, "DELETE FROM items WHERE id = 5");
    // In a block: the refresh reads the block's changes and goes with its rollback.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM items WHERE id = 3");
    f.tag(&mut s, "REFRESH MATERIALIZED VIEW prices");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM prices"), ["2"]);
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM prices"), ["3"]);
    // Another session reads the rows committed.
    let mut other = f.session();
    assert_eq!(
        f.rows(&mut other, "SELECT item FROM prices WHERE cost = 9"),
        ["ink"]
    );
}

#[test]
fn what_postgresql_refuses_is_refused() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    f.tag(&mut s, "CREATE MATERIALIZED VIEW m AS SELECT * FROM items");
    f.tag(&mut s, "CREATE VIEW over_m AS SELECT name FROM m");
    f.tag(&mut s, "CREATE TEMP TABLE scratch (a INT)");
    for (bad, state) in [
        // Its rows are its query's.
        ("INSERT INTO m VALUES (9, 'x', 9)", "42809"),
        ("UPDATE m SET price = 1", "42809"),
        ("DELETE FROM m", "42809"),
        ("TRUNCATE m", "42809"),
        ("ALTER TABLE m ADD COLUMN extra INT", "42809"),
        ("REFRESH MATERIALIZED VIEW CONCURRENTLY m", "55000"),
        ("REFRESH MATERIALIZED VIEW m WITH NO DATA", "0A000"),
        ("REFRESH MATERIALIZED VIEW items", "42809"),
        ("REFRESH MATERIALIZED VIEW nothing", "42P01"),
        ("CREATE MATERIALIZED VIEW m AS SELECT 1", "42P07"),
        (
            "CREATE MATERIALIZED VIEW t AS SELECT * FROM scratch",
            "0A000",
        ),
        ("CREATE MATERIALIZED VIEW t (a, b) AS SELECT 1", "42601"),
        ("CREATE OR REPLACE MATERIALIZED VIEW t AS SELECT 1", "0A000"),
        // Dependencies, both ways.
        ("DROP TABLE items", "2BP01"),
        ("DROP MATERIALIZED VIEW m", "2BP01"),
        ("ALTER TABLE items DROP COLUMN name", "2BP01"),
        // A DROP of the wrong kind.
        ("DROP TABLE m", "42809"),
        ("DROP VIEW m", "42809"),
        ("DROP MATERIALIZED VIEW items", "42809"),
        ("DROP MATERIALIZED VIEW dear", "42809"),
        ("DROP MATERIALIZED VIEW nothing", "42P01"),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
    f.tag(&mut s, "DROP MATERIALIZED VIEW IF EXISTS nothing");
    // A renamed column keeps its rows and its place.
    f.tag(&mut s, "ALTER TABLE m RENAME COLUMN price TO cost");
    f.tag(&mut s, "REFRESH MATERIALIZED VIEW m");
    assert_eq!(f.rows(&mut s, "SELECT max(cost) FROM m"), ["9"]);
    // CASCADE takes the materialized view and the view over it.
    f.tag(&mut s, "DROP TABLE items CASCADE");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM m"), "42P01");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM over_m"), "42P01");
    let left: Vec<String> = f
        .engine
        .catalog()
        .tables()
        .iter()
        .map(|t| t.name().name.clone())
        .collect();
    assert_eq!(left, ["scratch"]);
}

#[test]
fn materialized_views_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    {
        let sql = open();
        sql.execute(SHOP).unwrap();
        sql.execute("CREATE MATERIALIZED VIEW m AS SELECT name FROM dear")
            .unwrap();
        sql.execute("INSERT INTO items VALUES (4, 'nib', 7)")
            .unwrap();
        sql.execute("REFRESH MATERIALIZED VIEW m").unwrap();
    }
    let sql = open();
    let table = sql.catalog().table(&RelName::public("m")).unwrap();
    assert_eq!(
        table.def().materialized.as_deref(),
        Some("SELECT name FROM dear")
    );
    let out = sql
        .execute("SELECT count(*) FROM m")
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(common::rows_of(out), ["3"]);
    // Still not a table that takes rows.
    let err = sql.execute("INSERT INTO m VALUES ('x')").unwrap_err();
    assert_eq!(err.sqlstate(), "42809");
}
