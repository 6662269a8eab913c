//! DO blocks: their statements run as one (committed together, or not at all when the
//! block raises), exception handlers undo what their block did before the error, RAISE
//! gives notices or errors with the block's SQLSTATE, and notices of DDL (`IF EXISTS`,
//! `IF NOT EXISTS`) and of transaction control reach the session's client.

mod common;

use common::Fixture;
use pmdb_sql::{Severity, SqlError, TxnStatus};

const ITEMS: &str = "CREATE TABLE items (id INT PRIMARY KEY, name TEXT)";

#[test]
fn a_block_commits_all_of_its_statements_or_none() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    let ok = "DO $$ BEGIN INSERT INTO items VALUES (1, 'a'); \
              UPDATE items SET name = 'b' WHERE id = 1; END $$";
    assert_eq!(f.tag(&mut a, ok), "DO");
    assert_eq!(a.status(), TxnStatus::Idle);
    let failing = "DO $$ BEGIN INSERT INTO items VALUES (2, 'c'); \
                   RAISE EXCEPTION 'stop at %', 2 USING ERRCODE = 'check_violation', \
                   HINT = 'a ' || 'hint'; END $$";
    let e = f.try_run(&mut a, failing).unwrap_err();
    let SqlError::Raised(raised) = &e else {
        panic!("{e:?}");
    };
    assert_eq!(raised.sqlstate, "23514");
    assert_eq!(raised.message, "stop at 2");
    assert_eq!(raised.hint.as_deref(), Some("a hint"));
    assert_eq!(
        raised.context.as_deref(),
        Some("PL/pgSQL function inline_code_block line 1 at RAISE")
    );
    let mut b = f.session();
    assert_eq!(f.rows(&mut b, "SELECT * FROM items ORDER BY id"), ["1|b"]);
    // A statement's own error says which statement, as PostgreSQL's CONTEXT does.
    let e = f
        .try_run(&mut a, "DO $$ BEGIN PERFORM 1 / 0; END $$")
        .unwrap_err();
    assert_eq!(e.sqlstate(), "22012");
    assert_eq!(
        e.context(),
        Some(
            "SQL statement \"SELECT 1 / 0\"\nPL/pgSQL function inline_code_block line 1 at PERFORM"
        )
    );
    // In a block, a raising DO fails the block as any statement's error does.
    f.tag(&mut a, "BEGIN");
    f.tag(&mut a, "INSERT INTO items VALUES (3, 'd')");
    assert_eq!(
        f.sqlstate(&mut a, "DO $$ BEGIN RAISE 'no'; END $$"),
        "P0001"
    );
    assert_eq!(a.status(), TxnStatus::Failed);
    f.tag(&mut a, "ROLLBACK");
    assert_eq!(f.rows(&mut b, "SELECT count(*) FROM items"), ["1"]);
}

#[test]
fn an_exception_handler_undoes_its_block_and_goes_on() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    f.tag(&mut a, "INSERT INTO items VALUES (1, 'a')");
    let body = "DO $$
        BEGIN
            INSERT INTO items VALUES (2, 'kept');
            BEGIN
                INSERT INTO items VALUES (3, 'undone');
                INSERT INTO items VALUES (1, 'duplicate');
            EXCEPTION WHEN unique_violation THEN
                INSERT INTO items VALUES (4, 'handled');
            END;
            IF (SELECT count(*) FROM items) = 3 THEN
                INSERT INTO items VALUES (5, 'three before');
            ELSE
                RAISE 'the handler did not undo its block';
            END IF;
        END $$";
    assert_eq!(f.tag(&mut a, body), "DO");
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM items ORDER BY id"),
        ["1", "2", "4", "5"]
    );
    // An error no inner handler catches undoes the inner block, then the outer one.
    let nested = "DO $$
        BEGIN
            INSERT INTO items VALUES (6, 'outer');
            BEGIN
                INSERT INTO items VALUES (7, 'inner');
                BEGIN
                    INSERT INTO items VALUES (8, 'innermost');
                    PERFORM 1 / 0;
                EXCEPTION WHEN unique_violation THEN NULL;
                END;
            EXCEPTION WHEN division_by_zero THEN
                INSERT INTO items VALUES (9, 'caught');
            END;
        END $$";
    f.tag(&mut a, nested);
    assert_eq!(
        f.rows(&mut a, "SELECT id FROM items WHERE id > 5 ORDER BY id"),
        ["6", "9"]
    );
    // A handler that does not catch the error lets it through; RAISE re-raises.
    let uncaught = "DO $$ BEGIN INSERT INTO items VALUES (1, 'x'); \
                    EXCEPTION WHEN division_by_zero THEN NULL; END $$";
    assert_eq!(f.sqlstate(&mut a, uncaught), "23505");
    let again = "DO $$ BEGIN PERFORM 1 / 0; EXCEPTION WHEN others THEN RAISE; END $$";
    assert_eq!(f.sqlstate(&mut a, again), "22012");
    // Migrations' idiom: make a type unless it exists.
    let make_type = "DO $$ BEGIN CREATE TYPE mood AS ENUM ('ok'); \
                     EXCEPTION WHEN duplicate_object THEN NULL; END $$";
    f.tag(&mut a, make_type);
    f.tag(&mut a, make_type);
    assert_eq!(f.rows(&mut a, "SELECT 'ok'::mood"), ["ok"]);
}

#[test]
fn notices_reach_the_session_in_order() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    let notices = |s: &pmdb_sql::SqlSession| -> Vec<(Severity, String, String)> {
        s.take_notices()
            .into_iter()
            .map(|n| (n.severity, n.sqlstate, n.message))
            .collect()
    };
    f.tag(&mut a, "DROP TABLE IF EXISTS missing");
    assert_eq!(
        notices(&a),
        [(
            Severity::Notice,
            "00000".into(),
            "table \"missing\" does not exist, skipping".into()
        )]
    );
    f.tag(
        &mut a,
        "CREATE TABLE IF NOT EXISTS items (id INT PRIMARY KEY)",
    );
    assert_eq!(
        notices(&a)[0].2,
        "relation \"items\" already exists, skipping"
    );
    f.tag(&mut a, "COMMIT");
    assert_eq!(notices(&a)[0].1, "25P01");
    f.tag(
        &mut a,
        "DO $$ BEGIN RAISE NOTICE '% and %%', 'one'; RAISE WARNING 'two'; \
         RAISE LOG 'three' USING ERRCODE = '01004'; END $$",
    );
    assert_eq!(
        notices(&a),
        [
            (Severity::Notice, "00000".into(), "one and %".into()),
            (Severity::Warning, "01000".into(), "two".into()),
            (Severity::Log, "01004".into(), "three".into()),
        ]
    );
    // Another statement forgets the notices nobody took.
    f.tag(&mut a, "DROP VIEW IF EXISTS missing");
    f.tag(&mut a, "DROP INDEX IF EXISTS missing");
    assert_eq!(
        notices(&a)[0].2,
        "index \"missing\" does not exist, skipping"
    );
}

#[test]
fn what_a_block_cannot_honour_is_refused_before_it_runs() {
    let f = Fixture::new(ITEMS);
    let mut a = f.session();
    for body in [
        "DO $$ DECLARE n int; BEGIN INSERT INTO items VALUES (1, 'a'); END $$",
        "DO $$ BEGIN INSERT INTO items VALUES (1, 'a'); FOR i IN 1..2 LOOP NULL; END LOOP; END $$",
        "DO LANGUAGE sql $$ INSERT INTO items VALUES (1, 'a') $$",
    ] {
        assert_eq!(f.sqlstate(&mut a, body), "0A000", "{body}");
    }
    assert_eq!(f.rows(&mut a, "SELECT count(*) FROM items"), ["0"]);
    // A query's rows need somewhere to go (PERFORM discards them).
    assert_eq!(f.sqlstate(&mut a, "DO $$ BEGIN SELECT 1; END $$"), "42601");
    f.tag(&mut a, "DO $$ BEGIN PERFORM count(*) FROM items; END $$");
    f.tag(
        &mut a,
        "DO $$ BEGIN EXECUTE 'INSERT INTO items VALUES (' || 7 || ', ''x'')'; END $$",
    );
    assert_eq!(f.rows(&mut a, "SELECT id FROM items"), ["7"]);
    assert_eq!(
        f.sqlstate(
            &mut a,
            "DO $$ BEGIN ASSERT (SELECT count(*) FROM items) = 0, 'not empty'; END $$"
        ),
        "P0004"
    );
}
