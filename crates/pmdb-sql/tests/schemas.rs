//! Schemas as PostgreSQL has them: CREATE SCHEMA [IF NOT EXISTS], relations named
//! `schema.name` (tables, views, sequences, indexes, serial columns, foreign keys across
//! schemas), the same name in two schemas, DROP SCHEMA refused while it holds relations
//! and dropping them with CASCADE, DDL rolled back with its block, and everything kept
//! across a reopen.

mod common;

use common::Fixture;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;
use pmdb_sql::names::RelName;

const TWO_SCHEMAS: &str = "
    CREATE SCHEMA billing;
    CREATE TABLE items (id INT PRIMARY KEY, name TEXT);
    CREATE TABLE billing.items (id SERIAL PRIMARY KEY, price INT NOT NULL);
    INSERT INTO items VALUES (1, 'pen'), (2, 'pad');
    INSERT INTO billing.items (price) VALUES (10), (20), (30);
";

#[test]
fn a_name_means_its_own_relation_in_each_schema() {
    let f = Fixture::new(TWO_SCHEMAS);
    let mut s = f.session();
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM items"), ["2"]);
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM public.items"), ["2"]);
    assert_eq!(
        f.rows(&mut s, "SELECT id, price FROM billing.items ORDER BY id"),
        ["1|10", "2|20", "3|30"]
    );
    // Joins across schemas, aliases, and the fast path's statements.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT i.name, b.price FROM items i JOIN billing.items b ON b.id = i.id ORDER BY 1"
        ),
        ["pad|20", "pen|10"]
    );
    assert_eq!(
        f.tag(
            &mut s,
            "UPDATE billing.items SET price = price + 1 WHERE id = 2"
        ),
        "UPDATE 1"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT price FROM billing.items WHERE id = 2"),
        ["21"]
    );
    assert_eq!(
        f.tag(&mut s, "DELETE FROM billing.items b WHERE b.price > 25"),
        "DELETE 1"
    );
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM billing.items"), ["2"]);
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM items"), ["2"]);
    // The serial column's sequence lives beside its table.
    assert_eq!(
        f.rows(&mut s, "SELECT nextval('billing.items_id_seq')"),
        ["4"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "SELECT nextval('items_id_seq')"),
        "42P01"
    );
    // RETURNING, ON CONFLICT, FOR UPDATE and COPY name the table with its schema.
    assert_eq!(
        f.rows(
            &mut s,
            "INSERT INTO billing.items (price) VALUES (7) RETURNING id, price"
        ),
        ["5|7"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "INSERT INTO billing.items VALUES (5, 8) ON CONFLICT (id) DO UPDATE SET price = \
             excluded.price RETURNING price"
        ),
        ["8"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT price FROM billing.items WHERE id = 5 FOR UPDATE"
        ),
        ["8"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT b.price FROM billing.items b ORDER BY b.id LIMIT 1 FOR UPDATE OF b"
        ),
        ["10"]
    );
}

#[test]
fn every_kind_of_relation_lives_in_a_schema() {
    let f = Fixture::new(TWO_SCHEMAS);
    let mut s = f.session();
    f.tag(&mut s, "CREATE INDEX by_price ON billing.items (price)");
    // An index is named in its table's schema: the same name is free in public.
    f.tag(&mut s, "CREATE INDEX by_price ON items (name)");
    assert_eq!(
        f.sqlstate(&mut s, "CREATE INDEX billing.x ON billing.items (price)"),
        "42601"
    );
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM billing.items WHERE price = 20"),
        ["2"]
    );
    f.tag(&mut s, "DROP INDEX billing.by_price");
    f.tag(&mut s, "DROP INDEX by_price");
    // Views, sequences and foreign keys across schemas.
    f.tag(
        &mut s,
        "CREATE VIEW billing.dear AS SELECT id FROM billing.items WHERE price > 15",
    );
    assert_eq!(f.rows(&mut s, "SELECT id FROM billing.dear"), ["2", "3"]);
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM dear"), "42P01");
    f.tag(&mut s, "CREATE SEQUENCE billing.invoice_no START 100");
    assert_eq!(
        f.rows(&mut s, "SELECT nextval('billing.invoice_no')"),
        ["100"]
    );
    f.tag(
        &mut s,
        "CREATE TABLE billing.lines (item INT REFERENCES items (id), n INT DEFAULT \
         nextval('billing.invoice_no'))",
    );
    f.tag(&mut s, "INSERT INTO billing.lines (item) VALUES (1)");
    assert_eq!(
        f.rows(&mut s, "SELECT item, n FROM billing.lines"),
        ["1|101"]
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO billing.lines VALUES (9, 0)"),
        "23503"
    );
    assert_eq!(
        f.sqlstate(&mut s, "DELETE FROM items WHERE id = 1"),
        "23503"
    );
    // ALTER TABLE and renames stay within the schema.
    f.tag(
        &mut s,
        "ALTER TABLE billing.lines ADD COLUMN note TEXT DEFAULT 'none'",
    );
    f.tag(&mut s, "ALTER TABLE billing.lines RENAME TO invoice_lines");
    assert_eq!(
        f.rows(&mut s, "SELECT note FROM billing.invoice_lines"),
        ["none"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM invoice_lines"), "42P01");
    // Creating in a schema that does not exist.
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE nowhere.t (a INT)"),
        "3F000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE VIEW nowhere.v AS SELECT 1"),
        "3F000"
    );
    assert_eq!(f.sqlstate(&mut s, "CREATE SEQUENCE nowhere.s"), "3F000");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM nowhere.t"), "42P01");
}

#[test]
fn schemas_are_made_and_dropped_as_postgresql_does() {
    let f = Fixture::new(TWO_SCHEMAS);
    let mut s = f.session();
    assert_eq!(f.sqlstate(&mut s, "CREATE SCHEMA billing"), "42P06");
    assert_eq!(
        f.tag(&mut s, "CREATE SCHEMA IF NOT EXISTS billing"),
        "CREATE SCHEMA"
    );
    assert_eq!(f.sqlstate(&mut s, "CREATE SCHEMA public"), "42P06");
    assert_eq!(f.sqlstate(&mut s, "CREATE SCHEMA pg_mine"), "42939");
    assert_eq!(f.sqlstate(&mut s, "DROP SCHEMA public"), "0A000");
    assert_eq!(f.sqlstate(&mut s, "DROP SCHEMA nowhere"), "3F000");
    assert_eq!(
        f.tag(&mut s, "DROP SCHEMA IF EXISTS nowhere"),
        "DROP SCHEMA"
    );
    // Not while it holds relations; with CASCADE, they go with it.
    f.tag(
        &mut s,
        "CREATE VIEW billing.dear AS SELECT id FROM billing.items WHERE price > 15",
    );
    f.tag(&mut s, "CREATE SEQUENCE billing.invoice_no");
    assert_eq!(f.sqlstate(&mut s, "DROP SCHEMA billing"), "2BP01");
    // In a block that rolls back, the drop is undone.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "DROP SCHEMA billing CASCADE");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM billing.items"), "42P01");
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM billing.items"), ["3"]);
    f.tag(&mut s, "DROP SCHEMA billing CASCADE");
    assert_eq!(f.sqlstate(&mut s, "SELECT * FROM billing.items"), "42P01");
    assert_eq!(
        f.sqlstate(&mut s, "SELECT nextval('billing.invoice_no')"),
        "42P01"
    );
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM items"), ["2"]);
    // The name is free again, and so are its relations' names.
    f.tag(&mut s, "CREATE SCHEMA billing");
    f.tag(&mut s, "CREATE TABLE billing.items (a INT)");
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM billing.items"), ["0"]);
    // A schema made in a block that rolls back is gone.
    f.tag(&mut s, "BEGIN");
    f.tag(&mut s, "CREATE SCHEMA scratch");
    f.tag(&mut s, "CREATE TABLE scratch.t (a INT)");
    f.tag(&mut s, "ROLLBACK");
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE scratch.t (a INT)"),
        "3F000"
    );
    assert!(!f.engine.catalog().schema_exists("scratch"));
}

#[test]
fn a_sequence_another_schema_takes_values_from_keeps_its_schema() {
    let f = Fixture::new(
        "CREATE SCHEMA counters;
         CREATE SEQUENCE counters.n;
         CREATE TABLE t (a INT DEFAULT nextval('counters.n'));",
    );
    let mut s = f.session();
    assert_eq!(f.sqlstate(&mut s, "DROP SCHEMA counters CASCADE"), "2BP01");
    f.tag(&mut s, "INSERT INTO t DEFAULT VALUES");
    assert_eq!(f.rows(&mut s, "SELECT a FROM t"), ["1"]);
}

#[test]
fn schemas_and_their_relations_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    open()
        .execute(&format!(
            "{TWO_SCHEMAS}
             CREATE VIEW billing.cheap AS SELECT id FROM billing.items WHERE price < 15;
             CREATE SEQUENCE billing.invoice_no START 7;"
        ))
        .unwrap();
    let sql = open();
    assert!(sql.catalog().schema_exists("billing"));
    let table = sql
        .catalog()
        .table(&RelName::new("billing", "items"))
        .unwrap();
    assert_eq!(table.def().schema, "billing");
    assert!(
        sql.catalog()
            .view(&RelName::new("billing", "cheap"))
            .is_some()
    );
    let rows = |q: &str| common::rows_of(sql.execute(q).unwrap().pop().unwrap());
    assert_eq!(rows("SELECT id FROM billing.cheap"), ["1"]);
    assert_eq!(rows("SELECT nextval('billing.invoice_no')"), ["7"]);
    // Past the values given before (a reopen may skip some, as a crash may in
    // PostgreSQL).
    assert_eq!(rows("SELECT nextval('billing.items_id_seq') > 3"), ["true"]);
    assert_eq!(rows("SELECT count(*) FROM items"), ["2"]);
}
