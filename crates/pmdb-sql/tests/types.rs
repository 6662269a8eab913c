//! BYTEA, UUID and TIMESTAMPTZ as PostgreSQL has them: every input form PostgreSQL
//! reads (bytea `\x…` and escape text, uuids in any case, with or without hyphens and
//! braces, timestamps with any offset), invalid input refused with 22P02, values
//! compared, ordered and indexed by their own order, kept across a reopen and in
//! columnar segments, bound as parameters of prepared statements, and cast to text
//! (timestamps and arrays too) in the form PostgreSQL writes. Enum types: labels only,
//! in their type's order.

mod common;

use common::{Fixture, rows_of, same_from_segments_and_after_reopen};
use datafusion::common::ScalarValue;
use datafusion::sql::parser::Statement as DfStatement;
use pmdb_sql::{SqlSession, UTC};

const TABLE: &str = "CREATE TABLE v (
    id UUID PRIMARY KEY,
    b BYTEA,
    at TIMESTAMPTZ,
    n INT NOT NULL
)";

const ROWS: &str = "INSERT INTO v VALUES
    ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '\\xDEADbeef', '2024-01-02 03:04:05+02', 1),
    ('{00000000000000000000000000000001}', 'ab\\000c\\\\', '2024-01-02 01:00:00+00', 2),
    ('ffffffff-ffff-ffff-ffff-ffffffffffff', '\\x', '2023-12-31 20:00:00-05', 3),
    (gen_random_uuid(), NULL, NULL, 4)";

fn fixture() -> Fixture {
    let f = Fixture::new(TABLE);
    let mut s = f.session();
    f.tag(&mut s, ROWS);
    f
}

#[test]
fn input_forms_are_read_as_postgresql_reads_them() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT n, id, b, length(b), at FROM v WHERE n < 4 ORDER BY n"
        ),
        [
            "1|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|deadbeef|4|2024-01-02T01:04:05Z",
            "2|00000000-0000-0000-0000-000000000001|616200635c|5|2024-01-02T01:00:00Z",
            "3|ffffffff-ffff-ffff-ffff-ffffffffffff||0|2024-01-01T01:00:00Z",
        ]
    );
    // The generated uuid is a version 4 uuid in canonical form.
    let generated = f.rows(&mut s, "SELECT id FROM v WHERE n = 4");
    let id = &generated[0];
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(&id[14..15], "4", "{id}");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT '\\x0aff'::bytea, CAST('00000000-0000-0000-0000-00000000000A' AS UUID), \
             UUID '{12345678123456781234567812345678}'"
        ),
        ["0aff|00000000-0000-0000-0000-00000000000a|12345678-1234-5678-1234-567812345678"]
    );
    for bad in [
        "SELECT 'nope'::uuid",
        "SELECT '\\xabc'::bytea",
        "INSERT INTO v VALUES ('1234', NULL, NULL, 9)",
        "INSERT INTO v (id, b, n) VALUES (gen_random_uuid(), '\\q', 9)",
        "SELECT n FROM v WHERE id = 'not a uuid'",
    ] {
        assert_eq!(f.sqlstate(&mut s, bad), "22P02", "{bad}");
    }
    assert_eq!(f.rows(&mut s, "SELECT count(*) FROM v"), ["4"]);
}

#[test]
fn values_compare_and_sort_by_their_own_order() {
    let f = fixture();
    let mut s = f.session();
    // A uuid literal in any form finds the row (through the primary key, too).
    for lookup in [
        "SELECT n FROM v WHERE id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'",
        "SELECT n FROM v WHERE id = '{a0eebc999c0b4ef8bb6d6bb9bd380a11}'",
        "SELECT n FROM v WHERE id IN ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', \
         '00000000-0000-0000-0000-0000000000ff')",
        "SELECT n FROM v WHERE b = '\\xdeadbeef'",
        "SELECT n FROM v WHERE at = '2024-01-02 04:04:05+03'",
    ] {
        assert_eq!(f.rows(&mut s, lookup), ["1"], "{lookup}");
    }
    assert_eq!(
        f.rows(&mut s, "SELECT n FROM v WHERE n < 4 ORDER BY id"),
        ["2", "1", "3"]
    );
    // Bytes sort unsigned, shorter first on a common prefix; NULL last as in PostgreSQL.
    assert_eq!(
        f.rows(&mut s, "SELECT n FROM v ORDER BY b"),
        ["3", "2", "1", "4"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT n FROM v WHERE at IS NOT NULL ORDER BY at DESC"
        ),
        ["1", "2", "3"]
    );
    // Secondary indexes over the new types.
    f.tag(&mut s, "CREATE INDEX v_b ON v (b)");
    f.tag(&mut s, "CREATE UNIQUE INDEX v_at ON v (at)");
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT n FROM v WHERE b = '\\x' OR b = '\\xdeadbeef' ORDER BY n"
        ),
        ["1", "3"]
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO v VALUES (gen_random_uuid(), NULL, '2024-01-02 02:04:05+01', 5)"
        ),
        "23505"
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO v VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', NULL, NULL, 5)"
        ),
        "23505"
    );
    f.tag(
        &mut s,
        "UPDATE v SET b = '\\x0102' WHERE id = '00000000-0000-0000-0000-000000000001'",
    );
    assert_eq!(f.rows(&mut s, "SELECT b FROM v WHERE n = 2"), ["0102"]);
}

#[test]
fn values_survive_a_reopen_and_columnar_segments() {
    let (_, engine, _dir) = same_from_segments_and_after_reopen(
        |engine| {
            engine.execute(TABLE).unwrap();
            engine.execute(ROWS).unwrap();
        },
        "v",
        "SELECT n, id, b, at FROM v WHERE n < 4 ORDER BY n",
    );
    let n = |sql: &str| rows_of(engine.execute(sql).unwrap().pop().unwrap());
    assert_eq!(
        n("SELECT n FROM v WHERE id = 'ffffffff-ffff-ffff-ffff-ffffffffffff'"),
        ["3"]
    );
}

fn prepared(f: &Fixture, s: &mut SqlSession, sql: &str, params: Vec<ScalarValue>) -> Vec<String> {
    let statement: DfStatement = pmdb_sql::parse(sql).unwrap().pop_front().unwrap();
    let p = f.rt.block_on(s.prepare(statement)).unwrap();
    rows_of(f.rt.block_on(s.run_prepared(&p, params)).unwrap())
}

#[test]
fn parameters_of_the_new_types_bind() {
    let f = fixture();
    let mut s = f.session();
    let at = ScalarValue::TimestampMicrosecond(Some(1_704_157_200_000_000), Some(UTC.into()));
    assert_eq!(
        prepared(
            &f,
            &mut s,
            "SELECT n FROM v WHERE at = $1",
            vec![at.clone()]
        ),
        ["2"]
    );
    let bytes = ScalarValue::Binary(Some(vec![0xde, 0xad, 0xbe, 0xef]));
    assert_eq!(
        prepared(&f, &mut s, "SELECT n FROM v WHERE b = $1", vec![bytes]),
        ["1"]
    );
    let id = ScalarValue::Utf8(Some("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF".into()));
    assert_eq!(
        prepared(&f, &mut s, "SELECT n FROM v WHERE id = $1", vec![id]),
        ["3"]
    );
    // Through an INSERT that binds them as literals, with RETURNING.
    let row = vec![
        ScalarValue::Utf8(Some("12345678-1234-5678-1234-567812345678".into())),
        ScalarValue::Binary(Some(vec![0, 255])),
        at,
    ];
    assert_eq!(
        prepared(
            &f,
            &mut s,
            "INSERT INTO v VALUES ($1, $2, $3, 7) RETURNING id, b, at",
            row
        ),
        ["12345678-1234-5678-1234-567812345678|00ff|2024-01-02T01:00:00Z"]
    );
}

#[test]
fn the_time_zone_is_set_to_utc_only() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(&mut s, "SELECT set_config('TimeZone', 'Etc/UTC', false)"),
        ["Etc/UTC"]
    );
    assert_eq!(
        f.sqlstate(
            &mut s,
            "SELECT set_config('TimeZone', 'Europe/Paris', false)"
        ),
        "0A000"
    );
}

/// CHAR(n) as PostgreSQL has it: values kept without trailing blanks and shown padded
/// to n; trailing blanks do not count in comparisons, lookups by key or length; blanks
/// beyond n are cut, anything else beyond n is 22001.
#[test]
fn char_values_are_blank_padded() {
    let f = Fixture::new(
        "CREATE TABLE ch (id CHAR(4) PRIMARY KEY, c CHAR(5), v VARCHAR(5));
         INSERT INTO ch VALUES ('a', 'ab', 'ab'), ('bb  ', 'ab   ', 'ab  '), ('c', 'abcde', NULL);",
    );
    let mut s = f.session();
    // As shown: padded.
    let batches = match f.run(&mut s, "SELECT id, c FROM ch ORDER BY id") {
        pmdb_sql::Output::Rows { batches, .. } => batches,
        other => panic!("{other:?}"),
    };
    let shown: Vec<(String, String)> = batches
        .iter()
        .map(pmdb_sql::padded_chars)
        .flat_map(|b| {
            use datafusion::arrow::array::AsArray;
            let (id, c) = (
                b.column(0).as_string::<i32>().clone(),
                b.column(1).as_string::<i32>().clone(),
            );
            (0..b.num_rows())
                .map(|r| (id.value(r).to_owned(), c.value(r).to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        shown,
        [
            pair("a   ", "ab   "),
            pair("bb  ", "ab   "),
            pair("c   ", "abcde")
        ]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT c || '|', length(c), c = 'ab   ', v = 'ab' FROM ch ORDER BY id"
        ),
        ["ab||2|true|true", "ab||2|true|false", "abcde||5|false|"]
    );
    assert_eq!(f.rows(&mut s, "SELECT c FROM ch WHERE id = 'bb'"), ["ab"]);
    assert_eq!(
        f.rows(&mut s, "SELECT c FROM ch WHERE id = 'bb      '"),
        ["ab"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM ch WHERE c IN ('ab  ', 'zz') ORDER BY id"
        ),
        ["a", "bb"]
    );
    f.tag(&mut s, "INSERT INTO ch VALUES ('d', 'abcde   ', 'x')");
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO ch VALUES ('e', 'abcdef', 'x')"),
        "22001"
    );
}

/// An explicit cast to VARCHAR(n) or CHAR(n) cuts the text to n characters (storing into
/// such a column refuses it instead, 22001) and is of that type; the answers are
/// PostgreSQL 15's.
#[test]
fn casts_to_a_length_cut_the_text() {
    let f = Fixture::new(
        "CREATE TABLE w (id INT PRIMARY KEY, v VARCHAR(3));
         INSERT INTO w VALUES (1, 'abcdef'::varchar(3)), (2, CAST(12345 AS VARCHAR(2)))",
    );
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 'abcdef'::varchar(3), CAST('abcdef' AS CHAR(2)), 'éàü'::varchar(2), \
             'ab   '::char(4) || '|', 'xyz'::char, 'abc'::varchar, NULL::varchar(2)"
        ),
        ["abc|ab|éà|ab||x|abc|"]
    );
    assert_eq!(f.rows(&mut s, "SELECT v FROM w ORDER BY id"), ["abc", "12"]);
    let pmdb_sql::Output::Rows { schema, .. } = f.run(
        &mut s,
        "SELECT 'a'::varchar(3), 'a'::char(2), 'a'::varchar, v::varchar(1) FROM w",
    ) else {
        panic!("rows expected")
    };
    let types: Vec<Option<String>> = schema
        .fields()
        .iter()
        .map(|f| pmdb_sql::text_type(f).map(|t| t.to_string()))
        .collect();
    assert_eq!(
        types,
        [
            Some("VARCHAR(3)".to_string()),
            Some("CHAR(2)".to_string()),
            None,
            Some("VARCHAR(1)".to_string())
        ]
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO w VALUES (3, 'abcd')"),
        "22001"
    );
}

/// Fractions made integers as PostgreSQL makes them, in casts and in writes to integer
/// columns: a numeric (a number with a fraction written in SQL is one) rounded half away
/// from zero, a floating-point number half to even. The answers are PostgreSQL 15's.
#[test]
fn fractions_become_integers_rounded_as_postgresql_rounds_them() {
    let f = Fixture::new("CREATE TABLE ri (a INT, b BIGINT, c SMALLINT)");
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 3.7::int, 2.5::int, (-2.5)::int, 2.5::float8::int, 3.5::float8::int, \
             CAST(2.5 AS BIGINT), CAST(1.5::real AS SMALLINT), CAST(2.5 AS DECIMAL(3,1))::int"
        ),
        ["4|3|-3|2|4|3|2|3"]
    );
    f.tag(&mut s, "INSERT INTO ri VALUES (2.5, 3.5::float8, 1.5)");
    f.tag(
        &mut s,
        "INSERT INTO ri VALUES (2.4, 2.5::float8, -1.5::real)",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT a, b, c FROM ri ORDER BY a"),
        ["2|2|-2", "3|4|2"]
    );
}

#[test]
fn numeric_without_a_precision_keeps_ten_places_and_agrees_with_casts() {
    let f = Fixture::new("CREATE TABLE n (id INT PRIMARY KEY, x NUMERIC, y DECIMAL DEFAULT 0)");
    let mut s = f.session();
    f.tag(
        &mut s,
        "INSERT INTO n VALUES (1, 19.99, 2), (2, 0.1234567890, 1000000), \
         (3, -5.0000000001, 3), (4, '9999999999999999999999999999.9999999999', DEFAULT)",
    );
    // A number given with more places than the ten kept is refused, where rounding
    // would lose what was written: literals, text, COPY, UPDATE's and upserts' SET.
    for refused in [
        "INSERT INTO n VALUES (5, 0.123456789012, 0)",
        "INSERT INTO n VALUES (5, 1E-27, 0)",
        "INSERT INTO n VALUES (5, '-5.00000000005', 0)",
        "SELECT 0.00000000001::numeric",
        "UPDATE n SET x = -0.00000000001 WHERE id = 1",
        "INSERT INTO n VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET x = 1e-11",
    ] {
        assert_eq!(f.sqlstate(&mut s, refused), "22003", "{refused}");
    }
    // Places that are zeros are not lost; computed numbers are rounded to ten places,
    // half away from zero, as PostgreSQL rounds a quotient to its precision.
    f.tag(&mut s, "INSERT INTO n VALUES (5, 1.500000000000000, 1E1)");
    f.tag(&mut s, "UPDATE n SET x = x / 3 WHERE id = 5");
    assert_eq!(
        f.rows(&mut s, "SELECT x, y FROM n WHERE id = 5"),
        ["0.5000000000|10.0000000000"]
    );
    f.tag(&mut s, "UPDATE n SET x = 2 / 3.0 WHERE id = 5");
    assert_eq!(
        f.rows(&mut s, "SELECT x FROM n WHERE id = 5"),
        ["0.6666666667"]
    );
    f.tag(&mut s, "DELETE FROM n WHERE id = 5");
    assert_eq!(
        f.rows(&mut s, "SELECT id, x, y FROM n ORDER BY id"),
        [
            "1|19.9900000000|2.0000000000",
            "2|0.1234567890|1000000.0000000000",
            "3|-5.0000000001|3.0000000000",
            "4|9999999999999999999999999999.9999999999|0.0000000000",
        ]
    );
    // A column and a cast are one type: compared, joined and summed exactly.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id FROM n WHERE x = '19.99'::numeric OR x < 0 ORDER BY id"
        ),
        ["1", "3"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT sum(x * y) FROM n WHERE id < 4"),
        ["123481.76899999970000000000"]
    );
    // Beyond 28 digits before the point: PostgreSQL's numeric overflow, nothing written.
    assert_eq!(
        f.sqlstate(
            &mut s,
            "INSERT INTO n VALUES (5, 10000000000000000000000000000, 0)"
        ),
        "22003"
    );
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE n SET x = x * 10 WHERE id = 4"),
        "22003"
    );
    // Indexed and keyed like any decimal.
    f.tag(&mut s, "CREATE INDEX n_x ON n (x)");
    assert_eq!(f.rows(&mut s, "SELECT id FROM n WHERE x = 19.99"), ["1"]);
    f.tag(&mut s, "CREATE TABLE k (x NUMERIC PRIMARY KEY)");
    f.tag(&mut s, "INSERT INTO k SELECT x FROM n");
    assert_eq!(f.sqlstate(&mut s, "INSERT INTO k VALUES (19.99)"), "23505");
    // CREATE TABLE AS of `::numeric` is unconstrained, as in PostgreSQL.
    f.tag(
        &mut s,
        "CREATE TABLE c AS SELECT x::numeric AS a, x::numeric(5, 2) AS b FROM n WHERE id = 1",
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_name = 'c' ORDER BY column_name"
        )
        .len(),
        2
    );
}

#[test]
fn numbers_written_with_a_fraction_keep_their_digits_as_decimals() {
    let f = Fixture::new(
        "CREATE TABLE w (id INT PRIMARY KEY, x NUMERIC, y NUMERIC(12,3), d DOUBLE PRECISION, \
         r REAL)",
    );
    let mut s = f.session();
    // Read by DataFusion as doubles, these came out of Arrow's cast with digits that
    // were never written (987654321.9869999104).
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 987654321.987::numeric, 123456789012.34::numeric, (-2.5)::numeric(3,0), \
             CAST(0.125 AS NUMERIC(4,2))"
        ),
        ["987654321.9870000000|123456789012.3400000000|-3|0.13"]
    );
    f.tag(
        &mut s,
        "INSERT INTO w VALUES (1, 987654321.987, 123456789.1235, 987654321.987, 0.1)",
    );
    f.tag(&mut s, "UPDATE w SET x = x + 0.001 WHERE id = 1");
    assert_eq!(
        f.rows(&mut s, "SELECT x, y FROM w"),
        ["987654321.9880000000|123456789.124"]
    );
    // A double or real computed or stored keeps 15 (6) significant digits, as
    // PostgreSQL's float8_numeric and float4_numeric keep them.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT d::numeric, r::numeric, (0.1::float8 + 0.2)::numeric(20,18) FROM w"
        ),
        ["987654321.9870000000|0.1000000000|0.300000000000000000"]
    );
    // FLOAT is PostgreSQL's double; FLOAT(p) up to 24 a real.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT arrow_typeof(1.5::float), arrow_typeof(CAST(1 AS FLOAT(10))), \
             arrow_typeof(1.5::float(25))"
        ),
        ["Float64|Float32|Float64"]
    );
    // Written with more digits than a double holds, or with an exponent, a number is
    // still the decimal written, as in PostgreSQL.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 0.12345678901234567891::numeric(30,25), 1.5e3, 1E-27::numeric(30,28), \
             arrow_typeof(2.5), arrow_typeof(1e3)"
        ),
        [
            "0.1234567890123456789100000|1500|0.0000000000000000000000000010|\
             Decimal128(2, 1)|Decimal128(4, 0)"
        ]
    );
    f.tag(&mut s, "CREATE TABLE wide (x NUMERIC(38,1))");
    f.tag(
        &mut s,
        "INSERT INTO wide VALUES (123456789012345678901234567.5)",
    );
    assert_eq!(
        f.rows(&mut s, "SELECT x FROM wide"),
        ["123456789012345678901234567.5"]
    );
    // Decimal quotients keep up to 20 places, as PostgreSQL's keep at least 16
    // significant digits; ceil, floor and trunc give whole numbers.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT 1 / 3.0, 2.50 / 2, ceil(1.5), floor(-1.5), trunc(2.75), 1.0 / 4"
        ),
        ["0.33333333333333333333|1.25000000000000000000|2|-2|2|0.25000000000000000000"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT 1.0 / 0"), "22012");
    f.tag(&mut s, "ALTER TABLE w ALTER COLUMN d TYPE NUMERIC(15,4)");
    assert_eq!(f.rows(&mut s, "SELECT d FROM w"), ["987654321.9870"]);
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO w VALUES (2, 1e30, 0)"),
        "22003"
    );
}

#[test]
fn decimals_round_to_a_number_of_places_as_numerics() {
    let f = Fixture::new("CREATE TABLE r (id INT PRIMARY KEY, t NUMERIC(10,3), u NUMERIC)");
    let mut s = f.session();
    f.tag(
        &mut s,
        "INSERT INTO r VALUES (1, 2.567, 2.5), (2, -2.565, -0.125)",
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT round(t, 2), round(t), round(u, 2), round(avg(t) OVER (), 1), \
             round(2.567::numeric(5,3), 2) FROM r ORDER BY id"
        ),
        ["2.57|3|2.50|0.0|2.57", "-2.57|-3|-0.13|0.0|2.57"]
    );
    // Places that are not a literal keep the column's scale.
    assert_eq!(
        f.rows(&mut s, "SELECT round(t, id) FROM r ORDER BY id"),
        ["2.600", "-2.570"]
    );
}

#[test]
fn numeric_without_a_precision_survives_a_reopen_and_columnar_segments() {
    same_from_segments_and_after_reopen(
        |engine| {
            engine
                .execute("CREATE TABLE m (id INT PRIMARY KEY, x NUMERIC)")
                .unwrap();
            engine
                .execute("INSERT INTO m VALUES (1, 1.5), (2, -0.0000000001), (3, NULL)")
                .unwrap();
        },
        "m",
        "SELECT id, x FROM m ORDER BY id",
    );
}

#[test]
fn conditional_expressions_keep_the_type_their_branches_share() {
    let f = Fixture::new(
        "CREATE TABLE u (id INT PRIMARY KEY, g UUID, v VARCHAR(5), t TEXT);
         INSERT INTO u VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'x', 'y')",
    );
    let mut s = f.session();
    let types = |s: &mut pmdb_sql::SqlSession, sql: &str| {
        let pmdb_sql::Output::Rows { schema, .. } = f.run(s, sql) else {
            panic!("{sql}: rows expected")
        };
        schema
            .fields()
            .iter()
            .map(|f| pmdb_sql::text_type(f).map(|t| t.to_string()))
            .collect::<Vec<_>>()
    };
    // As PostgreSQL describes them: uuid, json and varchar branches stay so.
    assert_eq!(
        types(
            &mut s,
            "SELECT CASE WHEN id > 0 THEN g END, coalesce(g, NULL), nullif(g, g),
                    CASE WHEN id > 0 THEN json_build_object('a', id) END, coalesce(v, v)
             FROM u"
        ),
        [
            Some("UUID".to_string()),
            Some("UUID".to_string()),
            Some("UUID".to_string()),
            Some("JSON".to_string()),
            Some("VARCHAR(5)".to_string())
        ]
    );
    // Also under a sort by a column the select list leaves out (a projection above it).
    assert_eq!(
        types(
            &mut s,
            "SELECT CASE WHEN id > 0 THEN g END FROM u ORDER BY t"
        ),
        [Some("UUID".to_string())]
    );
    // Branches of different types are text.
    assert_eq!(
        types(
            &mut s,
            "SELECT CASE WHEN id > 0 THEN g ELSE t END, coalesce(v, t) FROM u"
        ),
        [None, None]
    );
}

#[test]
fn timestamps_and_arrays_cast_to_text_read_as_postgresql_writes_them() {
    let f = fixture();
    let mut s = f.session();
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT at::text, CAST(at AS TIMESTAMP)::text FROM v WHERE n = 2"
        ),
        ["2024-01-02 01:00:00+00|2024-01-02 01:00:00"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT '2016-10-10 01:02:03.5'::timestamp::text, ARRAY[1, NULL, 3]::text, \
             ARRAY['a b', '', 'NULL', 'x\"y']::text, ARRAY[true, false]::text, \
             (INTERVAL '1 day 2 hours')::text"
        ),
        [
            "2016-10-10 01:02:03.5|{1,NULL,3}|{\"a b\",\"\",\"NULL\",\"x\\\"y\"}|{t,f}|1 day 02:00:00"
        ]
    );
}

#[test]
fn timestamps_of_any_year_postgresql_takes_are_cast_and_bound() {
    let f = fixture();
    let mut s = f.session();
    // Years before 1677 and after 2262 (beyond a count of nanoseconds), as PostgreSQL 15
    // writes them.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT '1500-06-01 12:30:00.25'::timestamp::text, \
             CAST('9999-12-31 23:59:59.999999' AS TIMESTAMP)::text, \
             '0001-01-01 00:00:00+00'::timestamptz::text"
        ),
        ["1500-06-01 12:30:00.25|9999-12-31 23:59:59.999999|0001-01-01 00:00:00+00"]
    );
    let old = ScalarValue::TimestampMicrosecond(Some(-62_130_221_633_000_000), None);
    assert_eq!(
        prepared(
            &f,
            &mut s,
            "SELECT CAST($1 AS TIMESTAMP)::text",
            vec![old.clone()]
        ),
        ["0001-03-04 05:06:07"]
    );
    // Into a column, through an INSERT that binds its parameters as literals.
    f.tag(
        &mut s,
        "CREATE TABLE historic (id INT PRIMARY KEY, at TIMESTAMP)",
    );
    assert_eq!(
        prepared(
            &f,
            &mut s,
            "INSERT INTO historic VALUES (1, $1::TIMESTAMP WITHOUT TIME ZONE) RETURNING id",
            vec![old],
        ),
        ["1"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT at::text FROM historic"),
        ["0001-03-04 05:06:07"]
    );
}

const MOODS: &str = "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')";

/// Enum types: values are the type's labels (anything else is 22P02, written or cast),
/// sorted and compared by the labels' order, which ALTER TYPE … ADD VALUE extends; a
/// type a column is of cannot be dropped.
#[test]
fn enum_values_are_labels_in_their_types_order() {
    let f = Fixture::new(MOODS);
    let mut s = f.session();
    f.tag(&mut s, "CREATE TABLE p (name TEXT PRIMARY KEY, m mood)");
    f.tag(
        &mut s,
        "INSERT INTO p VALUES ('a', 'happy'), ('b', 'sad'), ('c', 'ok'), ('d', NULL)",
    );
    assert_eq!(
        f.sqlstate(&mut s, "INSERT INTO p VALUES ('e', 'angry')"),
        "22P02"
    );
    assert_eq!(
        f.sqlstate(&mut s, "UPDATE p SET m = 'Happy' WHERE name = 'a'"),
        "22P02"
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT 'nope'::mood"), "22P02");
    assert_eq!(
        f.rows(&mut s, "SELECT name FROM p ORDER BY m NULLS LAST, name"),
        ["b", "c", "a", "d"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT name FROM p WHERE m > 'sad' ORDER BY m DESC"),
        ["a", "c"]
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT name FROM p WHERE m BETWEEN 'sad' AND CAST('ok' AS mood) ORDER BY name"
        ),
        ["b", "c"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT max(m) FROM p"), "0A000");
    assert_eq!(
        f.sqlstate(&mut s, "SELECT greatest(m, 'ok') FROM p"),
        "0A000"
    );
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT name, rank() OVER (ORDER BY m) FROM p WHERE m IS NOT NULL ORDER BY name"
        ),
        ["a|3", "b|1", "c|2"]
    );
    assert_eq!(
        f.rows(&mut s, "SELECT string_agg(name, ',' ORDER BY m) FROM p"),
        ["b,c,a,d"]
    );
    f.tag(&mut s, "ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'");
    f.tag(&mut s, "ALTER TYPE mood ADD VALUE IF NOT EXISTS 'meh'");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TYPE mood ADD VALUE 'meh'"),
        "42710"
    );
    f.tag(&mut s, "INSERT INTO p VALUES ('e', 'meh')");
    assert_eq!(
        f.rows(&mut s, "SELECT name FROM p WHERE m IS NOT NULL ORDER BY m"),
        ["b", "e", "c", "a"]
    );
    assert_eq!(f.sqlstate(&mut s, "DROP TYPE mood"), "2BP01");
    assert_eq!(f.sqlstate(&mut s, "DROP TYPE mood CASCADE"), "0A000");
    assert_eq!(
        f.sqlstate(&mut s, "ALTER TYPE mood RENAME VALUE 'ok' TO 'fine'"),
        "0A000"
    );
    assert_eq!(
        f.sqlstate(&mut s, "CREATE TYPE pair AS (a INT, b INT)"),
        "0A000"
    );
    // An array of the type: each element a label of it.
    assert_eq!(
        f.rows(&mut s, "SELECT cardinality(ARRAY['ok', 'meh']::mood[])"),
        ["2"]
    );
    assert_eq!(f.sqlstate(&mut s, "SELECT '{ok,fine}'::mood[]"), "22P02");
    f.tag(&mut s, "ALTER TYPE mood RENAME TO feeling");
    assert_eq!(f.rows(&mut s, "SELECT 'meh'::feeling"), ["meh"]);
    f.tag(&mut s, "DROP TABLE p");
    f.tag(&mut s, "DROP TYPE feeling");
    assert_eq!(f.sqlstate(&mut s, "DROP TYPE feeling"), "42704");
    f.tag(&mut s, "DROP TYPE IF EXISTS feeling");
}

#[test]
fn enum_types_survive_a_reopen_and_columnar_segments() {
    let (_, engine, _dir) = same_from_segments_and_after_reopen(
        |engine| {
            engine.execute(MOODS).unwrap();
            engine
                .execute("CREATE TABLE p (id INT PRIMARY KEY, m mood)")
                .unwrap();
            engine
                .execute("INSERT INTO p VALUES (1, 'ok'), (2, 'happy'), (3, 'sad')")
                .unwrap();
            engine.execute("ALTER TYPE mood ADD VALUE 'meh'").unwrap();
        },
        "p",
        "SELECT id, m FROM p ORDER BY m",
    );
    let n = |sql: &str| rows_of(engine.execute(sql).unwrap().pop().unwrap());
    assert_eq!(n("SELECT id FROM p ORDER BY m"), ["3", "1", "2"]);
    assert!(engine.execute("INSERT INTO p VALUES (4, 'meh')").is_ok());
    assert!(engine.execute("INSERT INTO p VALUES (5, 'nope')").is_err());
}

/// The type of the one column `sql` gives.
fn column_type(f: &Fixture, s: &mut SqlSession, sql: &str) -> String {
    match f.run(s, sql) {
        pmdb_sql::Output::Rows { schema, .. } => format!("{}", schema.field(0).data_type()),
        _ => panic!("{sql}: no rows"),
    }
}

#[test]
fn integers_never_wrap_around() {
    let f = Fixture::new(
        "CREATE TABLE big (id INT PRIMARY KEY, a INT, b BIGINT, c SMALLINT);
         INSERT INTO big VALUES (1, 2147483647, 9223372036854775807, 32767),
                                (2, -2147483648, 9223372036854775807, -32768)",
    );
    let mut s = f.session();
    // PostgreSQL 15: 22003, `integer out of range` and its kin, where DataFusion wrapped
    // (`a * a` was 1, `b + 1` the least bigint).
    for (sql, message) in [
        ("SELECT a * a FROM big WHERE id = 1", "integer out of range"),
        ("SELECT a + a FROM big", "integer out of range"),
        ("SELECT a - 1 FROM big WHERE id = 2", "integer out of range"),
        ("SELECT -a FROM big WHERE id = 2", "integer out of range"),
        ("SELECT b + 1 FROM big", "bigint out of range"),
        ("SELECT b * 2 FROM big", "bigint out of range"),
        ("SELECT c + c FROM big", "smallint out of range"),
        ("SELECT 9223372036854775807 + 1", "bigint out of range"),
        ("SELECT id FROM big WHERE b + id > 0", "bigint out of range"),
        (
            "SELECT abs(a) FROM big WHERE id = 2",
            "integer out of range",
        ),
        ("SELECT abs(c) FROM big", "smallint out of range"),
        (
            "SELECT abs(-9223372036854775807 - 1)",
            "bigint out of range",
        ),
    ] {
        let e = f.try_run(&mut s, sql).expect_err(sql);
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str()),
            ("22003", message),
            "{sql}"
        );
    }
    // Within range, the same operators answer as before.
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT a - 1, b - 1, c - 1, -c, 2 * 3 - 10, abs(-a), abs(c) FROM big WHERE id = 1"
        ),
        ["2147483646|9223372036854775806|32766|-32767|-4|2147483647|32767"]
    );
    // A sum of bigints is a NUMERIC, exact beyond a bigint's range, on the general path
    // and on a range read by key alike; a sum of smaller integers is a bigint.
    for sql in [
        "SELECT sum(b) FROM big",
        "SELECT sum(b) FROM big WHERE id BETWEEN 1 AND 2",
        "SELECT sum(b) FROM big WHERE id >= 1",
    ] {
        assert_eq!(f.rows(&mut s, sql), ["18446744073709551614"], "{sql}");
        assert_eq!(column_type(&f, &mut s, sql), "Decimal128(38, 0)", "{sql}");
    }
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, sum(b) OVER (ORDER BY id) FROM big ORDER BY id"
        ),
        ["1|9223372036854775807", "2|18446744073709551614"]
    );
    assert_eq!(column_type(&f, &mut s, "SELECT sum(a) FROM big"), "Int64");
    assert_eq!(
        column_type(
            &f,
            &mut s,
            "SELECT sum(c) FROM big WHERE id BETWEEN 1 AND 2"
        ),
        "Int64"
    );
}

#[test]
fn an_average_of_integers_is_numeric() {
    let f = Fixture::new(
        "CREATE TABLE big (id INT PRIMARY KEY, a INT, b BIGINT, c SMALLINT);
         INSERT INTO big VALUES (1, 1, 9223372036854775807, 1),
                                (2, 2, 9223372036854775806, 1),
                                (3, 2, 9223372036854775806, 2)",
    );
    let mut s = f.session();
    // PostgreSQL 15 answers `numeric` for each, with every digit of the bigints (a
    // double would give 9223372036854775808); pmdb keeps 14 places, cut as its
    // quotients' are (PostgreSQL rounds, to 16 significant digits or more).
    assert_eq!(
        f.rows(&mut s, "SELECT avg(a), avg(b), avg(c) FROM big"),
        ["1.66666666666666|9223372036854775806.33333333333333|1.33333333333333"]
    );
    for sql in [
        "SELECT avg(a) FROM big",
        "SELECT avg(b) FROM big",
        "SELECT avg(c) FROM big",
        "SELECT avg(a + 1) FROM big",
        "SELECT avg(id) OVER () FROM big",
    ] {
        assert_eq!(column_type(&f, &mut s, sql), "Decimal128(38, 14)", "{sql}");
    }
    assert_eq!(
        f.rows(
            &mut s,
            "SELECT id, avg(a) OVER (ORDER BY id), (avg(a) OVER ())::int FROM big ORDER BY id LIMIT 1"
        ),
        ["1|1.00000000000000|2"]
    );
    // Averages of other types keep theirs.
    assert_eq!(
        column_type(&f, &mut s, "SELECT avg(a::float8) FROM big"),
        "Float64"
    );
}

#[test]
fn a_cast_to_a_type_no_one_has_is_42704() {
    let f = fixture();
    let mut s = f.session();
    // PostgreSQL 15: 42704 for a name it does not know, whatever the statement; a type
    // PostgreSQL has and pmdb does not is refused as unsupported.
    for (sql, message) in [
        ("SELECT 1::foo", "type \"foo\" does not exist"),
        (
            "SELECT CAST('a' AS pg_catalog.nosuch)",
            "type \"pg_catalog.nosuch\" does not exist",
        ),
        ("SELECT 'a=>1'::hstore", "type \"hstore\" does not exist"),
    ] {
        let e = f.try_run(&mut s, sql).expect_err(sql);
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str()),
            ("42704", message),
            "{sql}"
        );
    }
    assert_eq!(f.sqlstate(&mut s, "SELECT 1::xml"), "0A000");
    assert_eq!(f.sqlstate(&mut s, "SELECT '$1'::money"), "0A000");
}
