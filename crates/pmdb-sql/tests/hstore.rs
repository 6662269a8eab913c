//! The hstore extension as PostgreSQL 15 has it (the answers below are PostgreSQL's for
//! the same statements): CREATE and DROP EXTENSION, the type usable only while the
//! extension is installed, values in canonical form, the operators and functions, DROP
//! EXTENSION refused while a column is of the type, the extension kept across a reopen,
//! rolled back with its transaction, and a table of the type refused when the catalog
//! has no extension for it.

mod common;

use common::{Fixture, rows_of, same_from_segments_and_after_reopen};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::SqlEngine;

const KV: &str = "
    CREATE EXTENSION hstore;
    CREATE TABLE kv (id INT PRIMARY KEY, h HSTORE);
    INSERT INTO kv VALUES (1, 'b=>2, a=>1'), (2, 'c=>NULL, \"x y\"=>\"q\\\"z\"'), (3, NULL);
";

#[test]
fn the_type_exists_while_the_extension_is_installed() {
    let f = Fixture::new("");
    let mut s = f.session();
    // PostgreSQL knows no such type until the extension is installed (42704); a type
    // PostgreSQL has and pmdb does not is 0A000.
    assert_eq!(f.sqlstate(&mut s, "CREATE TABLE t (h hstore)"), "42704");
    assert_eq!(
        f.try_run(&mut s, "CREATE TABLE t (h HSTORE)")
            .expect_err("no such type")
            .to_string(),
        "type \"hstore\" does not exist"
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE t (h tsvector, i inet)"),
        "0A000"
    );
    assert_eq!(f.sqlstate(&mut s, "CREATE TABLE t (h inet)"), "0A000");
    assert_eq!(f.tag(&mut s, "CREATE EXTENSION hstore"), "CREATE EXTENSION");
    assert_eq!(f.sqlstate(&mut s, "CREATE EXTENSION hstore"), "42710");
    assert_eq!(
        f.tag(&mut s, "CREATE EXTENSION IF NOT EXISTS hstore"),
        "CREATE EXTENSION"
    );
    assert_eq!(f.rows(&mut s, "SELECT 'a=>1'::hstore"), [r#""a"=>"1""#]);
    assert_eq!(f.tag(&mut s, "DROP EXTENSION hstore"), "DROP EXTENSION");
    assert_eq!(f.sqlstate(&mut s, "DROP EXTENSION hstore"), "42704");
    assert_eq!(
        f.tag(&mut s, "DROP EXTENSION IF EXISTS hstore"),
        "DROP EXTENSION"
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT 'a=>1'::hstore"), "42704");
    // What pmdb does not have, or cannot install as asked.
    assert_eq!(f.sqlstate(&mut s, "CREATE EXTENSION postgis"), "0A000");
    assert_eq!(
        f.sqlstate(&mut s, "CREATE EXTENSION hstore WITH SCHEMA other"),
        "0A000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE EXTENSION hstore VERSION '2.0'"),
        "0A000"
    );
    // A type of the name takes the extension's place.
    f.run(&mut s, "CREATE TYPE hstore AS ENUM ('x')");
    assert_eq!(f.sqlstate(&mut s, "CREATE EXTENSION hstore"), "42710");
}

#[test]
fn values_are_kept_in_canonical_form() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT id, h FROM kv ORDER BY id"),
        [
            r#"1|"a"=>"1", "b"=>"2""#,
            r#"2|"c"=>NULL, "x y"=>"q\"z""#,
            "3|"
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 'b=>1, a=>2, aa=>NULL, a=>3, c=>\"NULL\"'::hstore, ''::hstore"
        ),
        [r#""a"=>"2", "b"=>"1", "c"=>"NULL", "aa"=>NULL|"#]
    );
    for bad in ["'a'::hstore", "'a=>1, =>2'::hstore", "'a=>1 b=>2'::hstore"] {
        assert_eq!(
            f.sqlstate(&mut s, &format!("SELECT {bad}")),
            "42601",
            "{bad}"
        );
    }
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO kv VALUES (4, 'a=>')"),
        "42601"
    );
    // Equal values, whatever order their text gives the keys in.
    assert_eq!(
        f.rows(&mut s, "SELECT id FROM kv WHERE h = 'a=>1, b=>2'"),
        ["1"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM kv WHERE h <> 'a=>1, b=>2' ORDER BY id"
        ),
        ["2"]
    );
    // No key or index over hstore (pmdb has no order for it), no ordering operators.
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TABLE k (h hstore PRIMARY KEY)"),
        "0A000"
    );
    assert_eq!(f.sqlstate(&mut s, "CREATE INDEX ON kv (h)"), "0A000");
    assert_eq!(f.sqlstate(&mut s, "SELECT h < 'a=>1' FROM kv"), "42883");
    assert_eq!(
        f.sqlstate(&mut s, "SELECT ARRAY['a=>1']::hstore[]"),
        "0A000"
    );
}

#[test]
fn operators_and_functions() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, h -> 'a', h -> ARRAY['a', 'c', 'z'], h ? 'c', h ?| ARRAY['b', 'q'], \
             h ?& ARRAY['a', 'b'], h @> 'a=>1', 'c=>NULL' <@ h FROM kv ORDER BY id"
        ),
        [
            "1|1|[1, , ]|false|true|true|true|false",
            "2||[, , ]|true|false|false|false|true",
            "3|||||||"
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT h || 'b=>3, c=>4', h - 'a'::text, h - ARRAY['a', 'b'], \
             h - 'a=>1, b=>3'::hstore FROM kv WHERE id = 1"
        ),
        [r#""a"=>"1", "b"=>"3", "c"=>"4"|"b"=>"2"||"b"=>"2""#]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT akeys(h), avals(h), hstore_to_json(h), hstore_to_jsonb(h), \
             exist(h, 'a'), defined(h, 'c'), delete(h, 'b'), slice(h, ARRAY['b', 'z']) \
             FROM kv WHERE id = 1"
        ),
        [r#"[a, b]|[1, 2]|{"a": "1", "b": "2"}|{"a": "1", "b": "2"}|true|false|"a"=>"1"|"b"=>"2""#]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT hstore('k', 'v'), hstore('k', NULL), hstore(NULL::text, 'v'), \
             hstore(ARRAY['a', 'b'], ARRAY['1', NULL]), hstore(ARRAY['a', '1', 'b', '2'])"
        ),
        [r#""k"=>"v"|"k"=>NULL||"a"=>"1", "b"=>NULL|"a"=>"1", "b"=>"2""#]
    );
    assert_eq!(
        f.sqlstate(&mut s, "SELECT hstore(ARRAY['a', '1', 'b'])"),
        "2202E"
    );
    assert_eq!(
        f.sqlstate(&mut s, "SELECT hstore(ARRAY['a'], ARRAY['1', '2'])"),
        "2202E"
    );
    assert_eq!(
        f.sqlstate(&mut s, "SELECT hstore(ARRAY[NULL, 'b'])"),
        "22004"
    );
    // An update through the operators keeps the canonical form.
    f.run(
        &mut s,
        "UPDATE kv SET h = (h || 'z=>9') - 'a'::text WHERE id = 1",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT h FROM kv WHERE id = 1"),
        [r#""b"=>"2", "z"=>"9""#]
    );
}

#[test]
fn drop_extension_is_refused_while_a_column_is_of_its_type() {
    let f = Fixture::new(KV);
    let mut s = f.session();
    assert_eq!(f.sqlstate(&mut s, "DROP EXTENSION hstore"), "2BP01");
    assert_eq!(f.sqlstate(&mut s, "DROP EXTENSION hstore CASCADE"), "0A000");
    f.run(&mut s, "CREATE DOMAIN pairs AS hstore");
    f.run(&mut s, "DROP TABLE kv");
    assert_eq!(f.sqlstate(&mut s, "DROP EXTENSION hstore"), "2BP01");
    f.run(&mut s, "DROP DOMAIN pairs");
    assert_eq!(f.tag(&mut s, "DROP EXTENSION hstore"), "DROP EXTENSION");
}

#[test]
fn the_extension_follows_its_transaction() {
    let f = Fixture::new("");
    let mut s = f.session();
    f.run(&mut s, "BEGIN");
    f.run(&mut s, "CREATE EXTENSION hstore");
    assert_eq!(f.rows(&mut s, "SELECT 'a=>1'::hstore -> 'a'"), ["1"]);
    f.run(&mut s, "ROLLBACK");
    assert_eq!(f.sqlstate(&mut s, "SELECT 'a=>1'::hstore"), "42704");
    f.run(&mut s, "BEGIN");
    f.run(&mut s, "CREATE EXTENSION hstore");
    f.run(&mut s, "COMMIT");
    assert_eq!(f.rows(&mut s, "SELECT 'a=>1'::hstore -> 'a'"), ["1"]);
}

#[test]
fn values_survive_a_reopen_and_columnar_segments() {
    let (rows, engine, _dir) = same_from_segments_and_after_reopen(
        |e| {
            e.execute(KV).unwrap();
        },
        "kv",
        "SELECT id, h, h -> 'a' FROM kv ORDER BY id",
    );
    assert_eq!(
        rows,
        [
            r#"1|"a"=>"1", "b"=>"2"|1"#,
            r#"2|"c"=>NULL, "x y"=>"q\"z"|"#,
            "3||"
        ]
    );
    let out = engine
        .execute("SELECT count(*) FROM kv WHERE h ? 'c'")
        .unwrap();
    assert_eq!(rows_of(out.into_iter().next().unwrap()), ["1"]);
}

#[test]
fn a_table_of_hstore_without_the_extension_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Db::open(dir.path(), DbOptions::small()).unwrap();
    {
        let engine = SqlEngine::open(open()).unwrap();
        engine.execute(KV).unwrap();
    }
    // The extension's entry deleted behind the catalog's back.
    {
        let db = open();
        let cat = db.subtable("sql.catalog").unwrap();
        assert!(cat.get(b"Xhstore").unwrap().is_some());
        cat.delete(b"Xhstore").unwrap();
    }
    let e = SqlEngine::open(open()).err().expect("the open fails");
    let message = e.to_string();
    assert!(
        message.contains("\"kv\"") && message.contains("no hstore extension"),
        "{message}"
    );
}
