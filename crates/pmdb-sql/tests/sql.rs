//! SQL end to end over a real database: DDL, DML, queries, pushdown, errors and
//! persistence across reopen.

mod common;

use common::rows_of;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Output, SqlEngine, SqlError};

fn open(dir: &std::path::Path) -> SqlEngine {
    SqlEngine::open(Db::open(dir, DbOptions::small()).unwrap()).unwrap()
}

/// The rows of the last statement of `sql`, one string per row, columns joined by '|'.
fn rows(sql: &SqlEngine, q: &str) -> Vec<String> {
    rows_of(sql.execute(q).unwrap().pop().unwrap())
}

fn command(sql: &SqlEngine, q: &str) -> String {
    match sql.execute(q).unwrap().pop().unwrap() {
        Output::Command(c) => c.to_string(),
        other => panic!("{q}: {other:?}, not a command"),
    }
}

fn error(sql: &SqlEngine, q: &str) -> SqlError {
    sql.execute(q).expect_err(q)
}

const ACCOUNTS: &str = "
    CREATE TABLE accounts (
        id BIGINT PRIMARY KEY,
        owner VARCHAR(20) NOT NULL,
        balance DECIMAL(12,2),
        opened DATE,
        active BOOLEAN
    );
    INSERT INTO accounts VALUES
        (1, 'ada', 100.50, DATE '2020-01-02', true),
        (2, 'grace', 20.00, DATE '2021-03-04', true),
        (3, 'edsger', NULL, NULL, false),
        (4, 'barbara', 7.25, DATE '2019-12-31', true);
";

#[test]
fn tables_rows_and_queries() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    assert_eq!(
        rows(
            &sql,
            "SELECT id, owner, balance, opened FROM accounts ORDER BY id"
        ),
        [
            "1|ada|100.50|2020-01-02",
            "2|grace|20.00|2021-03-04",
            "3|edsger||",
            "4|barbara|7.25|2019-12-31"
        ]
    );
    assert_eq!(
        rows(
            &sql,
            "SELECT sum(balance), count(*), count(opened) FROM accounts WHERE active"
        ),
        ["127.75|3|3"]
    );
    assert_eq!(
        rows(&sql, "SELECT owner FROM accounts WHERE id = 3"),
        ["edsger"]
    );
    assert_eq!(
        rows(
            &sql,
            "SELECT owner FROM accounts WHERE id > 1 AND id <= 3 ORDER BY id"
        ),
        ["grace", "edsger"]
    );
    assert_eq!(
        rows(
            &sql,
            "SELECT owner FROM accounts WHERE id IN (4, 1, 9) ORDER BY id"
        ),
        ["ada", "barbara"]
    );
    // A key range the filter narrows is a range scan, not a full one.
    let plan = rows(&sql, "EXPLAIN SELECT owner FROM accounts WHERE id = 3").join("\n");
    assert!(plan.contains("access=primary key, 1 range(s)"), "{plan}");
}

#[test]
fn statements_change_rows_atomically_and_check_constraints() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    let dup = error(
        &sql,
        "INSERT INTO accounts VALUES (5, 'x', 1, NULL, true), (2, 'y', 1, NULL, true)",
    );
    assert_eq!(dup.sqlstate(), "23505", "{dup}");
    // Nothing of the failed statement was applied.
    assert_eq!(rows(&sql, "SELECT count(*) FROM accounts"), ["4"]);
    let dup = error(
        &sql,
        "INSERT INTO accounts VALUES (6, 'x', 1, NULL, true), (6, 'y', 1, NULL, true)",
    );
    assert_eq!(dup.sqlstate(), "23505", "{dup}");
    let nn = error(&sql, "INSERT INTO accounts (id, balance) VALUES (7, 1)");
    assert_eq!(nn.sqlstate(), "23502", "{nn}");
    let long = error(
        &sql,
        "INSERT INTO accounts VALUES (8, 'a name far longer than twenty', 1, NULL, true)",
    );
    assert_eq!(long.sqlstate(), "22001", "{long}");
    let big = error(
        &sql,
        "INSERT INTO accounts VALUES (8, 'x', 12345678901.5, NULL, true)",
    );
    // PostgreSQL's numeric field overflow.
    assert_eq!(big.sqlstate(), "22003", "{big}");

    assert_eq!(
        command(
            &sql,
            "UPDATE accounts SET balance = balance + 1 WHERE active"
        ),
        "UPDATE 3"
    );
    assert_eq!(
        rows(&sql, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|101.50", "2|21.00", "3|", "4|8.25"]
    );
    // Assignments that print alike: a column to itself, two columns to one value.
    assert_eq!(
        command(
            &sql,
            "UPDATE accounts SET owner = owner, balance = 5, active = true WHERE id = 4"
        ),
        "UPDATE 1"
    );
    assert_eq!(
        command(
            &sql,
            "UPDATE accounts SET balance = 8.25, active = true WHERE id = 4"
        ),
        "UPDATE 1"
    );
    assert_eq!(
        rows(
            &sql,
            "SELECT owner, balance, active FROM accounts WHERE id = 4"
        ),
        ["barbara|8.25|true"]
    );
    // Moving a row to a key that exists fails and changes nothing.
    let moved = error(&sql, "UPDATE accounts SET id = 2 WHERE id = 1");
    assert_eq!(moved.sqlstate(), "23505", "{moved}");
    assert_eq!(
        command(&sql, "UPDATE accounts SET id = 10 WHERE id = 1"),
        "UPDATE 1"
    );
    assert_eq!(
        rows(&sql, "SELECT owner FROM accounts WHERE id = 10"),
        ["ada"]
    );
    assert!(rows(&sql, "SELECT owner FROM accounts WHERE id = 1").is_empty());
    assert_eq!(
        command(&sql, "DELETE FROM accounts WHERE balance IS NULL"),
        "DELETE 1"
    );
    assert_eq!(rows(&sql, "SELECT count(*) FROM accounts"), ["3"]);
}

/// The forms DataFusion's own DML hooks applied to every row before apache/datafusion
/// PR 24657: a WHERE with IN or EXISTS subqueries, or one that is always false.
#[test]
fn delete_and_update_with_subqueries_or_false_touch_only_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    sql.execute(
        "CREATE TABLE closed (account BIGINT NOT NULL);
         INSERT INTO closed VALUES (2), (4);",
    )
    .unwrap();
    assert_eq!(
        command(&sql, "DELETE FROM accounts WHERE false"),
        "DELETE 0"
    );
    assert_eq!(
        command(&sql, "UPDATE accounts SET balance = 0 WHERE 1 = 0"),
        "UPDATE 0"
    );
    assert_eq!(
        command(&sql, "DELETE FROM accounts WHERE id = 1 AND false"),
        "DELETE 0"
    );
    assert_eq!(
        rows(&sql, "SELECT count(*), sum(balance) FROM accounts"),
        ["4|127.75"]
    );

    assert_eq!(
        command(
            &sql,
            "UPDATE accounts SET active = false WHERE id IN (SELECT account FROM closed)"
        ),
        "UPDATE 2"
    );
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE active ORDER BY id"),
        ["1"]
    );
    assert_eq!(
        command(
            &sql,
            "UPDATE accounts a SET balance = 1 WHERE EXISTS (SELECT 1 FROM closed c WHERE c.account = a.id)"
        ),
        "UPDATE 2"
    );
    assert_eq!(
        command(
            &sql,
            "DELETE FROM accounts WHERE id IN (SELECT account FROM closed) AND id > 2"
        ),
        "DELETE 1"
    );
    assert_eq!(
        command(
            &sql,
            "DELETE FROM accounts a WHERE NOT EXISTS (SELECT 1 FROM closed c WHERE c.account = a.id) AND id > 1"
        ),
        "DELETE 1"
    );
    assert_eq!(
        rows(&sql, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|100.50", "2|1.00"]
    );
    // A self-referencing subquery.
    assert_eq!(
        command(
            &sql,
            "DELETE FROM accounts WHERE balance < (SELECT max(balance) FROM accounts)"
        ),
        "DELETE 1"
    );
    assert_eq!(rows(&sql, "SELECT id FROM accounts"), ["1"]);
}

#[test]
fn indexes_follow_every_change_and_serve_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    command(&sql, "CREATE INDEX by_owner ON accounts (owner)");
    let plan = rows(
        &sql,
        "EXPLAIN SELECT id FROM accounts WHERE owner = 'grace'",
    )
    .join("\n");
    assert!(plan.contains("access=index by_owner"), "{plan}");
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE owner = 'grace'"),
        ["2"]
    );
    command(&sql, "UPDATE accounts SET owner = 'hopper' WHERE id = 2");
    command(
        &sql,
        "INSERT INTO accounts VALUES (5, 'grace', 1, NULL, true)",
    );
    command(&sql, "DELETE FROM accounts WHERE id = 1");
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE owner = 'grace'"),
        ["5"]
    );
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE owner = 'hopper'"),
        ["2"]
    );
    assert!(rows(&sql, "SELECT id FROM accounts WHERE owner = 'ada'").is_empty());
    assert_eq!(
        error(&sql, "CREATE INDEX by_owner ON accounts (id)").sqlstate(),
        "42710"
    );
    command(&sql, "CREATE INDEX IF NOT EXISTS by_owner ON accounts (id)");
    drop(sql);

    let sql = open(dir.path());
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE owner = 'grace'"),
        ["5"]
    );
    command(&sql, "DROP INDEX by_owner");
    let plan = rows(
        &sql,
        "EXPLAIN SELECT id FROM accounts WHERE owner = 'grace'",
    )
    .join("\n");
    assert!(plan.contains("access=full"), "{plan}");
    assert_eq!(
        rows(&sql, "SELECT id FROM accounts WHERE owner = 'grace'"),
        ["5"]
    );
    let subtables = sql.db().subtable_names();
    // The catalog, the rows and the columnar segments.
    assert_eq!(
        subtables.iter().filter(|s| s.starts_with("sql.")).count(),
        3,
        "{subtables:?}"
    );
}

/// The access a scan of `q` takes, as EXPLAIN shows it.
fn access(sql: &SqlEngine, q: &str) -> String {
    let plan = rows(sql, &format!("EXPLAIN {q}")).join("\n");
    let at = plan.find("access=").unwrap_or_else(|| panic!("{plan}"));
    let rest = &plan[at + "access=".len()..];
    rest[..rest.find(", projection").unwrap_or(rest.len())].to_string()
}

#[test]
fn disjunctions_and_row_in_lists_read_only_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(
        "CREATE TABLE stock (w INT, i INT, qty INT, PRIMARY KEY (w, i));
         INSERT INTO stock SELECT g % 4, g, g * 10 FROM generate_series(1, 400) AS t(g);
         CREATE INDEX by_qty ON stock (qty);",
    )
    .unwrap();
    // Each query beside the same filter that no key narrows (`+ 0`): same rows, and the
    // access path reads only the keys the filter names.
    let cases = [
        (
            "(w, i) IN ((1, 5), (2, 6), (1, 5), (3, 999))",
            "(w + 0 = 1 AND i + 0 = 5) OR (w + 0 = 2 AND i + 0 = 6) \
             OR (w + 0 = 3 AND i + 0 = 999)",
            "primary key, 3 range(s)",
        ),
        (
            "(w = 1 AND i = 9) OR (w = 2 AND i BETWEEN 10 AND 30)",
            "(w + 0 = 1 AND i + 0 = 9) OR (w + 0 = 2 AND i + 0 BETWEEN 10 AND 30)",
            "primary key, 2 range(s)",
        ),
        (
            "w = 3 AND (i = 7 OR i = 11 OR i > 390)",
            "w + 0 = 3 AND (i + 0 = 7 OR i + 0 = 11 OR i + 0 > 390)",
            "primary key, 3 range(s)",
        ),
        (
            "(w = 1 AND i < 50) OR (w = 1 AND i < 20) OR w = 2",
            "(w + 0 = 1 AND i + 0 < 50) OR (w + 0 = 1 AND i + 0 < 20) OR w + 0 = 2",
            "primary key, 2 range(s)",
        ),
        (
            "qty = 50 OR qty = 70",
            "qty + 0 = 50 OR qty + 0 = 70",
            "index by_qty, 2 range(s)",
        ),
        ("w = 1 OR qty = 70", "w + 0 = 1 OR qty + 0 = 70", "full"),
    ];
    for (filter, unnarrowed, how) in cases {
        let q = format!("SELECT w, i, qty FROM stock WHERE {filter} ORDER BY w, i");
        assert!(
            access(&sql, &q).starts_with(how),
            "{q}: {}",
            access(&sql, &q)
        );
        let full = format!("SELECT w, i, qty FROM stock WHERE {unnarrowed} ORDER BY w, i");
        assert!(access(&sql, &full).starts_with("full"), "{full}");
        let got = rows(&sql, &q);
        assert!(!got.is_empty(), "{q}");
        assert_eq!(got, rows(&sql, &full), "{q}");
    }
    // Rows locked through a row IN list are those it names, each once.
    let mut out = sql
        .execute(
            "BEGIN; SELECT i, qty FROM stock WHERE (w, i) IN ((1, 5), (2, 6), (1, 5)) \
             ORDER BY i FOR UPDATE; COMMIT",
        )
        .unwrap();
    out.pop();
    assert_eq!(rows_of(out.pop().unwrap()), ["5|50", "6|60"]);
}

#[test]
fn an_index_that_pins_more_key_columns_is_read_instead_of_the_primary_key() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(
        "CREATE TABLE customer (w INT, d INT, id INT, last TEXT, first TEXT,
                                PRIMARY KEY (w, d, id));
         INSERT INTO customer SELECT g % 2, g % 3, g, 'name' || (g % 7), 'f' || g
             FROM generate_series(1, 300) AS t(g);
         CREATE INDEX by_name ON customer (w, d, last, first);
         CREATE INDEX by_first ON customer (first);",
    )
    .unwrap();
    let cases = [
        // TPC-C's customer by last name: the index pins three columns, the key two.
        (
            "w = 1 AND d = 2 AND last = 'name3'",
            "index by_name, 1 range(s)",
        ),
        (
            "w = 1 AND d = 2 AND last IN ('name3', 'name4')",
            "index by_name, 2 range(s)",
        ),
        // The whole key pinned: one row, whatever an index would pin.
        (
            "w = 1 AND d = 2 AND id = 5 AND last = 'name5'",
            "primary key, 1 range(s)",
        ),
        // As far as each other, the index in part: the key, with no second read per row.
        ("w = 1 AND d = 2", "primary key, 1 range(s)"),
        // As far as the key, with every column of the index pinned: the index.
        ("w = 1 AND first = 'f7'", "index by_first, 1 range(s)"),
        (
            "w = 1 AND d = 2 AND id > 100 AND first = 'f107'",
            "primary key",
        ),
    ];
    for (filter, how) in cases {
        let q = format!("SELECT id, last, first FROM customer WHERE {filter} ORDER BY id");
        assert!(
            access(&sql, &q).starts_with(how),
            "{q}: {}",
            access(&sql, &q)
        );
        let unnarrowed = format!(
            "SELECT id, last, first FROM customer WHERE {} ORDER BY id",
            filter
                .replace("w =", "w + 0 =")
                .replace("d =", "d + 0 =")
                .replace("first =", "first || '' =")
        );
        assert!(
            access(&sql, &unnarrowed).starts_with("full"),
            "{unnarrowed}"
        );
        let got = rows(&sql, &q);
        assert!(!got.is_empty(), "{q}");
        assert_eq!(got, rows(&sql, &unnarrowed), "{q}");
    }
}

#[test]
fn tables_persist_and_drop_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let sql = open(dir.path());
        sql.execute(ACCOUNTS).unwrap();
        sql.execute(
            "CREATE TABLE log (at TIMESTAMP, what TEXT, n SMALLINT, x REAL, y DOUBLE PRECISION);
             INSERT INTO log VALUES (TIMESTAMP '2024-05-06 07:08:09.5', 'a', 1, 1.5, 2.25),
                                    (NULL, 'b', -2, NULL, NULL),
                                    (NULL, 'b', -2, NULL, NULL);",
        )
        .unwrap();
    }
    let sql = open(dir.path());
    assert_eq!(rows(&sql, "SELECT count(*) FROM accounts"), ["4"]);
    // A table without a primary key keeps duplicate rows, each under its own row id.
    assert_eq!(
        rows(&sql, "SELECT at, what, n, x, y FROM log ORDER BY what, n"),
        ["2024-05-06T07:08:09.500|a|1|1.5|2.25", "|b|-2||", "|b|-2||"]
    );
    assert_eq!(
        command(&sql, "DELETE FROM log WHERE what = 'b'"),
        "DELETE 2"
    );
    command(&sql, "INSERT INTO log (what) VALUES ('c')");
    assert_eq!(rows(&sql, "SELECT what FROM log ORDER BY what"), ["a", "c"]);
    assert_eq!(error(&sql, "CREATE TABLE log (a INT)").sqlstate(), "42P07");
    command(&sql, "DROP TABLE log");
    assert_eq!(error(&sql, "SELECT * FROM log").sqlstate(), "42P01");
    assert_eq!(error(&sql, "DROP TABLE log").sqlstate(), "42P01");
    command(&sql, "DROP TABLE IF EXISTS log");
    drop(sql);
    let sql = open(dir.path());
    assert!(
        sql.catalog()
            .table(&pmdb_sql::names::RelName::public("log"))
            .is_none()
    );
    assert_eq!(
        sql.db()
            .subtable_names()
            .iter()
            .filter(|s| s.starts_with("sql."))
            .count(),
        3
    );
}

#[test]
fn bad_statements_are_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    for (q, state) in [
        ("SELEC 1", "42601"),
        ("SELECT nope FROM accounts", "42703"),
        ("SELECT * FROM nowhere", "42P01"),
        ("CREATE TABLE t (a DECIMAL(50, 2))", "42P16"),
        ("CREATE TABLE t (a INT, a INT)", "42P16"),
        (
            "CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))",
            "42P16",
        ),
        ("CREATE TABLE t (a INTERVAL HOUR)", "0A000"),
        ("UPDATE accounts SET nope = 1", "42703"),
        // As in PostgreSQL, the columns a short row leaves out get their defaults (here
        // none: NULL), which NOT NULL refuses.
        ("INSERT INTO accounts VALUES (1)", "23502"),
        (
            "INSERT INTO accounts VALUES (1, 'a', 2, DATE '2020-01-01', true, 5)",
            "42601",
        ),
    ] {
        let e = error(&sql, q);
        assert_eq!(e.sqlstate(), state, "{q}: {e}");
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(rows(&sql, "SELECT count(*) FROM accounts"), ["4"]);
}

#[test]
fn copy_loads_csv_files() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    let csv = dir.path().join("more.csv");
    std::fs::write(
        &csv,
        "id,owner,balance,opened,active\n10,x,1.5,2022-02-02,true\n11,y,,,false\n",
    )
    .unwrap();
    let q = format!(
        "COPY accounts FROM '{}' WITH (FORMAT csv, HEADER true)",
        csv.display()
    );
    assert_eq!(command(&sql, &q), "COPY 2");
    assert_eq!(
        rows(
            &sql,
            "SELECT owner, balance FROM accounts WHERE id >= 10 ORDER BY id"
        ),
        ["x|1.50", "y|"]
    );
    // Loading the same rows again meets their keys.
    let again = error(&sql, &q);
    assert_eq!(again.sqlstate(), "23505", "{again}");
    let missing = error(&sql, "COPY accounts FROM '/nonexistent/file.csv'");
    assert!(missing.to_string().contains("COPY accounts"), "{missing}");
    assert_eq!(rows(&sql, "SELECT count(*) FROM accounts"), ["6"]);
}

#[test]
fn grouping_by_a_primary_key_determines_the_tables_other_columns() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(
        "CREATE TABLE warehouse (w_id INT PRIMARY KEY, w_ytd DECIMAL(12,2));
         CREATE TABLE history (h_id INT PRIMARY KEY, h_w_id INT, h_amount DECIMAL(6,2));
         INSERT INTO warehouse VALUES (1, 30.00), (2, 5.00);
         INSERT INTO history VALUES (1, 1, 10.00), (2, 1, 20.00), (3, 2, 4.00);",
    )
    .unwrap();
    // As in PostgreSQL: w_ytd depends on the key w_id, so it needs no GROUP BY of its own.
    assert_eq!(
        rows(
            &sql,
            "SELECT w_id, w_ytd, sum(h_amount) FROM history, warehouse \
             WHERE h_w_id = w_id GROUP BY w_id ORDER BY w_id"
        ),
        ["1|30.00|30.00", "2|5.00|4.00"]
    );
    // A column the key does not determine still needs one.
    assert!(
        sql.execute("SELECT h_w_id, h_amount FROM history GROUP BY h_w_id")
            .is_err()
    );
}

#[test]
fn unknown_and_ambiguous_columns_are_named_as_postgresql_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    command(&sql, "CREATE TABLE u (id INT PRIMARY KEY, v TEXT)");
    for (q, state, message) in [
        ("SELECT a FROM u", "42703", "column \"a\" does not exist"),
        ("SELECT u.a FROM u", "42703", "column u.a does not exist"),
        (
            "SELECT id FROM u x, u y",
            "42702",
            "column reference \"id\" is ambiguous",
        ),
    ] {
        let e = error(&sql, q);
        assert_eq!(
            (e.sqlstate(), e.to_string().as_str()),
            (state, message),
            "{q}"
        );
    }
}

/// LIKE with an escape character other than the backslash (SQLAlchemy's `contains`,
/// `startswith` and `endswith` with `autoescape` write `ESCAPE '/'`), over literal and
/// computed patterns, as PostgreSQL 15 answers.
#[test]
fn like_takes_any_escape_character() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(
        "CREATE TABLE notes (id INT PRIMARY KEY, t TEXT);
         INSERT INTO notes VALUES (1, '10%'), (2, '100'), (3, 'a/b'), (4, 'a\\b'), (5, 'a_b');",
    )
    .unwrap();
    for (query, ids) in [
        ("t LIKE '%/%' ESCAPE '/'", "1"),
        ("t LIKE '%' || '#%' ESCAPE '#'", "1"),
        ("t LIKE 'a//b' ESCAPE '/'", "3"),
        ("t LIKE 'a\\b' ESCAPE '#'", "4"),
        ("t LIKE 'a!_b' ESCAPE '!'", "5"),
        ("t NOT LIKE 'a%' ESCAPE '!'", "1,2"),
        ("t ILIKE 'A/_B' ESCAPE '/'", "5"),
    ] {
        let got = rows(
            &sql,
            &format!("SELECT string_agg(id::text, ',' ORDER BY id) FROM notes WHERE {query}"),
        );
        assert_eq!(got, [ids], "{query}");
    }
    let e = error(&sql, "SELECT id FROM notes WHERE t LIKE 'a/' ESCAPE '/'");
    assert_eq!(e.sqlstate(), "22025");
}

/// The standard's `FETCH FIRST | NEXT n ROWS ONLY` limits as LIMIT does, after an
/// OFFSET, with a parenthesized expression (SQLAlchemy's form) or no count (one row),
/// in subqueries too; PERCENT is refused, not ignored.
#[test]
fn fetch_first_limits_rows() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    for (query, expected) in [
        (
            "SELECT id FROM accounts ORDER BY id FETCH FIRST 2 ROWS ONLY",
            "1,2",
        ),
        (
            "SELECT id FROM accounts ORDER BY id OFFSET 1 ROWS FETCH NEXT 2 ROWS ONLY",
            "2,3",
        ),
        (
            "SELECT id FROM accounts ORDER BY id FETCH FIRST ROW ONLY",
            "1",
        ),
        (
            "SELECT id FROM accounts ORDER BY id OFFSET (1 + 1) ROWS FETCH FIRST (2 * 1) ROWS ONLY",
            "3,4",
        ),
        (
            "SELECT id FROM accounts WHERE id = (SELECT id FROM accounts ORDER BY id DESC \
             FETCH FIRST 1 ROWS ONLY)",
            "4",
        ),
    ] {
        let got = rows(&sql, query).join(",");
        assert_eq!(got, expected, "{query}");
    }
    let refused = "SELECT id FROM accounts FETCH FIRST 50 PERCENT ROWS ONLY";
    assert_eq!(error(&sql, refused).sqlstate(), "0A000", "{refused}");
}

/// A WITH clause before INSERT, UPDATE and DELETE, as PostgreSQL 15 runs it: the common
/// table expressions feed the statement's source, its FROM and its subqueries; a
/// recursive WITH and one that changes rows are refused with 0A000.
#[test]
fn with_clauses_feed_insert_update_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    sql.execute("CREATE TABLE rich (id BIGINT PRIMARY KEY, owner VARCHAR(20))")
        .unwrap();
    assert_eq!(
        command(
            &sql,
            "WITH r AS (SELECT id, owner FROM accounts WHERE balance > 10) \
             INSERT INTO rich SELECT id, owner FROM r"
        ),
        "INSERT 0 2"
    );
    assert_eq!(
        command(
            &sql,
            "WITH r AS (SELECT id FROM rich), bonus (id, amount) AS (SELECT id, 5 FROM r) \
             UPDATE accounts SET balance = balance + bonus.amount FROM bonus \
             WHERE accounts.id = bonus.id"
        ),
        "UPDATE 2"
    );
    assert_eq!(
        command(
            &sql,
            "WITH poor AS (SELECT id FROM accounts WHERE balance < 10 OR balance IS NULL) \
             DELETE FROM accounts a WHERE a.id = (SELECT p.id FROM poor p WHERE p.id = a.id)"
        ),
        "DELETE 2"
    );
    assert_eq!(
        rows(&sql, "SELECT id, balance FROM accounts ORDER BY id"),
        ["1|105.50", "2|25.00"]
    );
    for refused in [
        "WITH RECURSIVE r AS (SELECT 1) DELETE FROM rich",
        "WITH d AS (DELETE FROM rich RETURNING id) DELETE FROM accounts WHERE id IN \
         (SELECT id FROM d)",
    ] {
        assert_eq!(error(&sql, refused).sqlstate(), "0A000", "{refused}");
    }
    assert_eq!(rows(&sql, "SELECT count(*) FROM rich"), ["2"]);
}

/// `to_char` with PostgreSQL's templates over timestamps, timestamptz (in UTC), dates
/// and times, as PostgreSQL 15 answers; a NULL value or template gives NULL, and a
/// number or an interval is refused rather than formatted some other way.
#[test]
fn to_char_reads_postgresqls_templates() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    assert_eq!(
        rows(
            &sql,
            "SELECT to_char(TIMESTAMP '2024-03-05 14:07:09', 'YYYY-MM-DD HH24:MI:SS'),
                    to_char(TIMESTAMPTZ '2024-03-05 14:07:09+02', 'FMDD Mon YYYY HH12 am TZ'),
                    to_char(DATE '2024-03-05', 'Day DD'),
                    to_char(TIME '10:30:05', 'HH24:MI:SS YYYY'),
                    to_char(CAST(NULL AS DATE), 'YYYY') IS NULL"
        ),
        ["2024-03-05 14:07:09|5 Mar 2024 12 pm UTC|Tuesday   05|10:30:05 0000|true"]
    );
    for refused in [
        "SELECT to_char(12.5, '999.99')",
        "SELECT to_char(INTERVAL '1 day', 'DD')",
    ] {
        assert_eq!(error(&sql, refused).sqlstate(), "0A000", "{refused}");
    }
}

#[test]
fn explain_answers_in_postgresqls_json_and_refuses_what_it_cannot_show() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(ACCOUNTS).unwrap();
    sql.execute("CREATE TABLE cards (id INT PRIMARY KEY, account BIGINT)")
        .unwrap();
    let plan = rows(
        &sql,
        "EXPLAIN (FORMAT JSON, VERBOSE) SELECT a.owner, count(*) FROM accounts a \
         JOIN cards c ON c.account = a.id WHERE a.owner = 'grace' GROUP BY a.owner",
    )
    .join("\n");
    for part in [
        r#""Node Type": "Aggregate""#,
        r#""Group Key": ["#,
        r#""Node Type": "Hash Join""#,
        r#""Relation Name": "accounts""#,
        r#""Alias": "a""#,
        r#""Relation Name": "cards""#,
        r#""Filter": "(accounts.\"owner\" = 'grace')""#,
        r#""Output": ["#,
    ] {
        assert!(plan.contains(part), "{part} missing from {plan}");
    }
    assert!(
        plan.starts_with('[') && plan.contains(r#""Plan": {"#),
        "{plan}"
    );
    assert!(!plan.contains("Actual"), "{plan}");

    // ANALYZE runs the statement in the block, whose rollback undoes it.
    let plan = rows(
        &sql,
        "BEGIN; EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO cards VALUES (1, 2), (2, 2)",
    )
    .join("\n");
    for part in [
        r#""Operation": "Insert""#,
        r#""Actual Total Time": "#,
        r#""Execution Time": "#,
    ] {
        assert!(plan.contains(part), "{part} missing from {plan}");
    }
    assert_eq!(rows(&sql, "SELECT count(*) FROM cards"), ["2"]);
    sql.execute("ROLLBACK").unwrap();
    assert_eq!(rows(&sql, "SELECT count(*) FROM cards"), ["0"]);

    // The text form is the plan DataFusion runs, with its scans' access.
    let text = rows(
        &sql,
        "EXPLAIN (ANALYZE false, COSTS off) SELECT * FROM cards",
    )
    .join("\n");
    assert!(text.contains("PmdbScan: table=cards"), "{text}");

    for (q, state) in [
        ("EXPLAIN (FORMAT XML) SELECT 1", "0A000"),
        ("EXPLAIN (BUFFERS) SELECT 1", "0A000"),
        ("EXPLAIN (ANALYZE, WAL on) SELECT 1", "0A000"),
        ("EXPLAIN (COLOUR) SELECT 1", "42601"),
        ("EXPLAIN (TIMING off) SELECT 1", "22023"),
        ("EXPLAIN (ANALYZE maybe) SELECT 1", "22023"),
    ] {
        assert_eq!(error(&sql, q).sqlstate(), state, "{q}");
    }
    sql.execute("BEGIN READ ONLY").unwrap();
    assert_eq!(
        error(&sql, "EXPLAIN (ANALYZE) DELETE FROM cards").sqlstate(),
        "25006"
    );
    sql.execute("ROLLBACK").unwrap();
}

#[test]
fn errors_in_constant_expressions_fail_the_statement_as_postgresql_folds_them() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute("CREATE TABLE e (a INT)").unwrap();
    // No row reaches these expressions; PostgreSQL evaluates them when it plans.
    for (q, state) in [
        ("SELECT * FROM e WHERE 1 / 0 = 1", "22012"),
        ("SELECT 1 / 0 FROM e", "22012"),
        ("SELECT CASE WHEN a > 0 THEN 1 / 0 END FROM e", "22012"),
        ("SELECT * FROM e WHERE a > 1 OR 1 / 0 = 1", "22012"),
        ("SELECT * FROM e WHERE a = 'abc'::int", "22P02"),
        ("SELECT * FROM e WHERE a = 'abc'::bigint", "22P02"),
        ("SELECT 'x'::boolean", "22P02"),
    ] {
        assert_eq!(error(&sql, q).sqlstate(), state, "{q}");
    }
    assert_eq!(
        error(&sql, "SELECT * FROM e WHERE a = 'abc'::int").to_string(),
        "invalid input syntax for type integer: \"abc\""
    );
    // A branch the constant condition skips is never evaluated, nor is a column's.
    assert_eq!(
        rows(&sql, "SELECT CASE WHEN 1 = 1 THEN 0 ELSE 1 / 0 END"),
        ["0"]
    );
    assert_eq!(rows(&sql, "SELECT coalesce(1, 1 / 0)"), ["1"]);
    assert!(rows(&sql, "SELECT * FROM e WHERE a / 0 = 1").is_empty());
    // Nor is a volatile function: the sequence advances once per call at run time.
    sql.execute("CREATE SEQUENCE s").unwrap();
    assert!(rows(&sql, "SELECT nextval('s') FROM e").is_empty());
    assert_eq!(rows(&sql, "SELECT nextval('s')"), ["1"]);
}

#[test]
fn make_interval_takes_its_arguments_by_position_or_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    assert_eq!(
        rows(
            &sql,
            "SELECT make_interval(secs => 86404.5)::text, make_interval(1, 2, 3, 4, 5, 6, 7.25)::text, \
             make_interval(days => -1, hours => 25)::text, make_interval()::text"
        ),
        ["24:00:04.5|1 year 2 mons 25 days 05:06:07.25|-1 days +25:00:00|00:00:00"]
    );
    for (q, state) in [
        ("SELECT make_interval(bogus => 1)", "42883"),
        ("SELECT make_interval(days => 1, days => 2)", "42883"),
        ("SELECT make_interval(years => 2147483647)", "22008"),
    ] {
        assert_eq!(error(&sql, q).sqlstate(), state, "{q}");
    }
    // INTERVAL(p) keeps microseconds for p of 6 or more, as PostgreSQL does.
    sql.execute(
        "CREATE TABLE t (x INTERVAL(9)); INSERT INTO t VALUES (make_interval(secs => 1.000001))",
    )
    .unwrap();
    assert_eq!(rows(&sql, "SELECT x::text FROM t"), ["00:00:01.000001"]);
    assert_eq!(
        error(&sql, "CREATE TABLE u (x INTERVAL(3))").sqlstate(),
        "0A000"
    );
    // An interval frame offset over dates: PostgreSQL 15's answers.
    sql.execute(
        "CREATE TABLE w (id INT PRIMARY KEY, d DATE);
         INSERT INTO w VALUES (1, '2020-01-01'), (2, '2020-01-05'), (3, '2020-01-20')",
    )
    .unwrap();
    assert_eq!(
        rows(
            &sql,
            "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL '7 days' PRECEDING \
             AND INTERVAL '1 day 12:00:00' FOLLOWING) FROM w ORDER BY id"
        ),
        ["1|1", "2|2", "3|1"]
    );
    // The offsets written as cast strings, which the parser reads only in parentheses.
    assert_eq!(
        rows(
            &sql,
            "SELECT id, count(*) OVER (ORDER BY d RANGE BETWEEN '7 days'::interval PRECEDING \
             AND '1 day 12:00:00' :: INTERVAL FOLLOWING) FROM w ORDER BY id"
        ),
        ["1|1", "2|2", "3|1"]
    );
    assert_eq!(
        rows(
            &sql,
            "SELECT id, count(*) OVER (ORDER BY d RANGE '1 week'::interval PRECEDING) \
             FROM w ORDER BY id"
        ),
        ["1|1", "2|2", "3|1"]
    );
}

#[test]
fn fetch_with_ties_keeps_the_rows_that_tie_with_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let sql = open(dir.path());
    sql.execute(
        "CREATE TABLE st (id INT PRIMARY KEY, x INT);
         INSERT INTO st VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 4), (6, 5)",
    )
    .unwrap();
    // PostgreSQL 15's answers.
    for (q, want) in [
        (
            "SELECT id, x FROM st ORDER BY x FETCH FIRST 4 ROWS WITH TIES",
            &["1|1", "2|2", "3|3", "4|4", "5|4"][..],
        ),
        (
            "SELECT id, x FROM st ORDER BY x DESC OFFSET 1 FETCH FIRST 1 ROWS WITH TIES",
            &["4|4", "5|4"],
        ),
        (
            "SELECT st.id FROM st ORDER BY st.x OFFSET 2 ROWS FETCH FIRST (1::INTEGER) ROWS WITH TIES",
            &["3"],
        ),
        (
            "SELECT count(*) FROM (SELECT x FROM st ORDER BY x FETCH NEXT 1 ROW WITH TIES) s",
            &["1"],
        ),
    ] {
        assert_eq!(rows(&sql, q), want, "{q}");
    }
    assert_eq!(
        error(&sql, "SELECT id FROM st FETCH FIRST 2 ROWS WITH TIES").sqlstate(),
        "42601"
    );
}
