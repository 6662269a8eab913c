//! JSON and JSONB as PostgreSQL has them: json kept as written, jsonb in PostgreSQL's
//! canonical text (the answers below are PostgreSQL 15's for the same statements), the
//! operators and functions, invalid input refused with 22P02, jsonb equality by value,
//! what pmdb cannot order or group refused with 0A000, and values kept across a reopen
//! and in columnar segments.

mod common;

use common::{Fixture, rows_of};
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlType, text_type};

const DOCS: &str = r#"
    CREATE TABLE docs (id INT PRIMARY KEY, j JSONB, t JSON);
    INSERT INTO docs VALUES
        (1, '{"b": 1, "a": [1, 2.50, {"c": "x"}], "b": 2}', '{"b":1,  "a":[1,2]}'),
        (2, '"str"', '[1, "k"]'),
        (3, NULL, 'null');
"#;

#[test]
fn values_operators_and_functions() {
    let f = Fixture::new(DOCS);
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT id, j, t FROM docs ORDER BY id"),
        [
            r#"1|{"a": [1, 2.50, {"c": "x"}], "b": 2}|{"b":1,  "a":[1,2]}"#,
            r#"2|"str"|[1, "k"]"#,
            "3||null"
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT j -> 'a', j -> 'a' -> 2 ->> 'c', j ->> 'b', t -> 'a', t ->> 'b', t -> 1 \
             FROM docs ORDER BY id"
        ),
        [
            r#"[1, 2.50, {"c": "x"}]|x|2|[1,2]|1|"#,
            r#"|||||"k""#,
            "|||||"
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT j #> '{a,2}', j #>> '{a,1}', jsonb_typeof(j), json_typeof(t) FROM docs \
             ORDER BY id"
        ),
        [
            r#"{"c": "x"}|2.50|object|object"#,
            "||string|array",
            "|||null"
        ]
    );
    let ids = |s: &mut pmdb_sql::SqlSession, q: &str| f.rows(s, q);
    assert_eq!(
        ids(
            &mut s,
            r#"SELECT id FROM docs WHERE j @> '{"a": [{"c": "x"}]}'"#
        ),
        ["1"]
    );
    assert_eq!(
        ids(&mut s, r#"SELECT id FROM docs WHERE '[1]' <@ t::jsonb"#),
        ["2"]
    );
    assert_eq!(ids(&mut s, "SELECT id FROM docs WHERE j ? 'a'"), ["1"]);
    assert_eq!(
        ids(&mut s, "SELECT id FROM docs WHERE t::jsonb ?| '{k,zz}'"),
        ["2"]
    );
    assert_eq!(
        ids(&mut s, "SELECT id FROM docs WHERE t::jsonb ?& '{k,zz}'"),
        Vec::<String>::new()
    );
    // Equal by value: keys in any order, 2.5 is 2.50.
    assert_eq!(
        ids(
            &mut s,
            r#"SELECT id FROM docs WHERE j = '{"b":2, "a": [1, 2.5, {"c":"x"}]}'"#
        ),
        ["1"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            r#"SELECT jsonb_array_length(j -> 'a'), jsonb_build_object('x', 1, 'y', 'two', 'z', j -> 'a'),
                      to_jsonb('he"llo'::text), jsonb_extract_path_text(j, 'a', '2', 'c'),
                      '{"a":1, "a":2}'::jsonb, '{"a":  1}'::json
               FROM docs WHERE id = 1"#
        ),
        [r#"3|{"x": 1, "y": "two", "z": [1, 2.50, {"c": "x"}]}|"he\"llo"|x|{"a": 2}|{"a":  1}"#]
    );
    for (bad, sqlstate) in [
        ("INSERT INTO docs VALUES (4, '{bad', '1')", "22P02"),
        ("INSERT INTO docs VALUES (4, '1', '[1,]')", "22P02"),
        (
            "SELECT jsonb_array_length(j) FROM docs WHERE id = 1",
            "22023",
        ),
        ("SELECT * FROM docs ORDER BY j", "0A000"),
        ("SELECT count(*) FROM docs GROUP BY j", "0A000"),
        ("SELECT id FROM docs WHERE j > '{}'", "0A000"),
        ("CREATE TABLE k (j JSONB PRIMARY KEY)", "0A000"),
        ("CREATE INDEX docs_j ON docs (j)", "0A000"),
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), sqlstate, "{bad}");
    }
}

#[test]
fn values_survive_a_reopen_and_columnar_segments() {
    let dir = tempfile::tempdir().unwrap();
    let open = || SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    {
        let sql = open();
        sql.execute(DOCS).unwrap();
        sql.execute("ANALYZE docs").unwrap();
    }
    let sql = open();
    let one = |q: &str| rows_of(sql.execute(q).unwrap().pop().unwrap());
    assert_eq!(
        one("SELECT j ->> 'b', t FROM docs WHERE id = 1"),
        [r#"2|{"b":1,  "a":[1,2]}"#]
    );
    assert_eq!(one("SELECT count(*) FROM docs WHERE j IS NOT NULL"), ["2"]);
}

/// A json, jsonb or uuid value cast to text or varchar is text: it compares as text and
/// its column is no longer of the value's type.
#[test]
fn values_cast_to_text_are_text() {
    let f = Fixture::new(
        "CREATE TABLE d (id INT PRIMARY KEY, data JSON, j JSONB, u UUID);
         INSERT INTO d VALUES (1, '{\"a\": \"x\"}', '[1]', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
    );
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT CAST(data -> 'a' AS VARCHAR) = '\"x\"'::VARCHAR, (data -> 'a')::text = '\"x\"', \
             CAST(data AS TEXT) = '{\"a\": \"x\"}', j::text < '[2]' FROM d"
        ),
        ["true|true|true|true"]
    );
    let Output::Rows { schema, .. } = f.run(
        &mut s,
        "SELECT data::text, j::varchar, u::text, data FROM d",
    ) else {
        panic!("no rows");
    };
    let types: Vec<_> = schema.fields().iter().map(|f| text_type(f)).collect();
    assert_eq!(types, [None, None, None, Some(SqlType::Json)]);
}
