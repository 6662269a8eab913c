//! Views as PostgreSQL has them: CREATE [OR REPLACE] VIEW, DROP VIEW, views over views,
//! column names given or taken from the query, a CTE of the same name shadowing a view,
//! read-only (changing a view's rows is refused), dependencies that refuse a DROP
//! without CASCADE, and the definitions kept across a reopen.

mod common;

use common::Fixture;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const SHOP: &str = "
    CREATE TABLE items (id INT PRIMARY KEY, name TEXT, price INT);
    INSERT INTO items VALUES (1, 'pen', 2), (2, 'pad', 5), (3, 'ink', 9);
    CREATE VIEW dear AS SELECT id, name, price FROM items WHERE price > 3;
";

#[test]
fn views_read_their_query_at_each_statement() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT name FROM dear ORDER BY id"),
        ["pad", "ink"]
    );
    // The rows are read when the view is: a change to the table shows.
    f.tag(&mut s, "UPDATE items SET price = 4 WHERE id = 1");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM dear"), ["3"]);
    // Views over views, with the column names they give; aliases and joins.
    f.tag(
        &mut s,
        "CREATE VIEW cheapest (item, cost) AS SELECT name, price FROM dear WHERE price < 6",
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT c.item, i.id FROM cheapest c JOIN items i ON i.name = c.item ORDER BY 2"
        ),
        ["pen|1", "pad|2"]
    );
    // A CTE of the same name is the statement's own.
    assert_eq!(
        f.rows(&mut s, "WITH dear AS (SELECT 7 AS id) SELECT id FROM dear"),
        ["7"]
    );
    // In a block, the view reads the block's own changes.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DELETE FROM items WHERE id = 3");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM dear"), ["2"]);
    f.tag(&mut s, "ROLLBACK");
    // OR REPLACE changes what the view reads.
    f.tag(
        &mut s,
        "CREATE OR REPLACE VIEW dear AS SELECT id, name, price FROM items WHERE price > 8",
    );
    assert_eq!(f.rows(&mut s, "SELECT name FROM dear"), ["ink"]);
}

#[test]
fn what_postgresql_refuses_is_refused() {
    let f = Fixture::new(SHOP);
    let mut s = f.session();
    f.tag(
        &mut s,
        "CREATE VIEW dearest AS SELECT * FROM dear WHERE price > 8",
    );
    for (bad, state) in [
        ("INSERT INTO dear VALUES (9, 'x', 9)", "0A000"),
        ("UPDATE dear SET price = 1", "0A000"),
        ("DELETE FROM dear", "0A000"),
        ("CREATE VIEW dear AS SELECT 1", "42P07"),
        ("CREATE TABLE dear (a INT)", "42P07"),
        ("CREATE VIEW bad AS SELECT missing FROM items", "42703"),
        (
            "CREATE VIEW bad (a, b, c, d) AS SELECT id, name FROM items",
            "42601",
        ),
        ("CREATE OR REPLACE MATERIALIZED VIEW m AS SELECT 1", "0A000"),
        // Dependencies: a DROP that would leave a view without its relation.
        ("DROP TABLE items", "2BP01"),
        ("DROP VIEW dear", "2BP01"),
        ("DROP TABLE dear", "42809"),
        ("DROP VIEW items", "42809"),
        ("DROP VIEW nothing", "42P01"),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), state, "{bad}");
    }
    f.tag(&mut s, "DROP VIEW IF EXISTS nothing");
    // CASCADE takes the views that depend, and theirs.
    f.tag(&mut s, "DROP TABLE items CASCADE");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM dearest"), "42P01");
    f.tag(&mut s, "CREATE VIEW dear AS SELECT 1 AS one");
}

#[test]
fn views_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    open().execute(SHOP).unwrap();
    let sql = open();
    assert_eq!(
        sql.catalog()
            .view(&pmdb_sql::names::RelName::public("dear"))
            .unwrap()
            .query,
        "SELECT id, name, price FROM items WHERE price > 3"
    );
    let out = sql
        .execute("SELECT count(*) FROM dear")
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(common::rows_of(out), ["2"]);
    // The view's id is its own: a table made after it gets another.
    sql.execute("CREATE TABLE later (a INT)").unwrap();
    let table_id = sql
        .catalog()
        .table(&pmdb_sql::names::RelName::public("later"))
        .unwrap()
        .def()
        .id;
    assert_ne!(
        table_id,
        sql.catalog()
            .view(&pmdb_sql::names::RelName::public("dear"))
            .unwrap()
            .id
    );
}
