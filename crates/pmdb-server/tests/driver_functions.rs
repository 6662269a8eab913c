//! What drivers and their test suites call beyond tables: `pg_sleep`, which a cancel
//! (`pg_cancel_backend` included) and `statement_timeout` stop; `pg_terminate_backend`,
//! which ends a connection, idle or busy; the quoting functions;
//! a prepared query whose result type DDL changed, which fails as PostgreSQL's does so
//! that drivers prepare it again; a set-returning function named by its alias; enum
//! types as drivers look them up.

mod common;

use std::time::{Duration, Instant};

use common::{TestServer, sqlstate};

#[test]
fn pg_sleep_waits_and_a_cancel_or_a_time_limit_stops_it() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let a = server.connect().await;
        let started = Instant::now();
        let row = a.query_one("SELECT pg_sleep(0.2)", &[]).await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(row.get::<_, Option<String>>(0), None);

        let pid: i32 = a
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let b = server.connect().await;
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let found: bool = b
                .query_one("SELECT pg_cancel_backend($1::int)", &[&pid])
                .await
                .unwrap()
                .get(0);
            let unknown: bool = b
                .query_one("SELECT pg_cancel_backend(-5)", &[])
                .await
                .unwrap()
                .get(0);
            (found, unknown)
        });
        let started = Instant::now();
        let e = a.simple_query("SELECT pg_sleep(30)").await.unwrap_err();
        assert_eq!(sqlstate(&e), "57014");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(canceller.await.unwrap(), (true, false));

        a.batch_execute("SET statement_timeout = 200")
            .await
            .unwrap();
        let e = a.simple_query("SELECT pg_sleep(30)").await.unwrap_err();
        assert_eq!(sqlstate(&e), "57014");
        // The connection goes on.
        a.batch_execute("SET statement_timeout = 0; SELECT 1")
            .await
            .unwrap();
    });
}

#[test]
fn quoting_functions_quote_as_postgresql() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        let row = c
            .query_one(
                r"SELECT quote_literal('it''s'), quote_literal('a\b'), quote_literal(NULL::text),
                        quote_nullable(NULL::text), quote_ident('Abc'), quote_ident('abc'),
                        quote_ident('select')",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<Option<String>> = (0..7).map(|i| row.get(i)).collect();
        let want = [
            Some("'it''s'"),
            Some(r"E'a\\b'"),
            None,
            Some("NULL"),
            Some("\"Abc\""),
            Some("abc"),
            Some("\"select\""),
        ];
        assert_eq!(got, want.map(|w| w.map(str::to_owned)));
    });
}

#[test]
fn a_prepared_query_whose_result_type_changed_fails_to_be_prepared_again() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute("CREATE TABLE t (a INT, b INT); INSERT INTO t VALUES (1, 2)")
            .await
            .unwrap();
        let stmt = c.prepare("SELECT * FROM t").await.unwrap();
        // DDL that keeps the row type keeps the statement working.
        c.batch_execute("CREATE INDEX t_a ON t (a)").await.unwrap();
        assert_eq!(c.query(&stmt, &[]).await.unwrap().len(), 1);

        c.batch_execute("ALTER TABLE t ALTER COLUMN b TYPE TEXT")
            .await
            .unwrap();
        let e = c.query(&stmt, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "0A000");
        let db = e.as_db_error().unwrap();
        assert_eq!(db.message(), "cached plan must not change result type");
        assert_eq!(db.routine(), Some("RevalidateCachedQuery"));
        // Prepared again, it reads the new type.
        let again = c.prepare("SELECT b FROM t").await.unwrap();
        let b: String = c.query_one(&again, &[]).await.unwrap().get(0);
        assert_eq!(b, "2");
    });
}

#[test]
fn a_set_returning_function_in_from_is_named_by_its_alias() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        let rows = c
            .query(
                "SELECT 'a' || i::text AS s, i FROM generate_series(1, 3) AS i ORDER BY i",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            [
                ("a1".to_owned(), 1),
                ("a2".to_owned(), 2),
                ("a3".to_owned(), 3)
            ]
        );
    });
}

#[test]
fn pg_terminate_backend_ends_a_connection_idle_or_busy() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let admin = server.connect().await;
        // The pid parameter is an int4, as in PostgreSQL (drivers send a number).
        let terminate = admin
            .prepare("SELECT pg_terminate_backend($1)")
            .await
            .unwrap();
        assert_eq!(terminate.params(), [tokio_postgres::types::Type::INT4]);
        // The newest other connection, as pg_stat_activity shows it (from its start-up on).
        let newest = async |admin: &tokio_postgres::Client| -> i32 {
            let pid: i64 = admin
                .query_one(
                    "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() \
                     ORDER BY backend_start DESC, pid DESC LIMIT 1",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            i32::try_from(pid).unwrap()
        };
        // A connection that has run nothing yet is there to end.
        let idle = server.connect().await;
        let idle_pid = newest(&admin).await;
        let ended: bool = admin
            .query_one(&terminate, &[&idle_pid])
            .await
            .unwrap()
            .get(0);
        assert!(ended);
        let e = idle.simple_query("SELECT 1").await.unwrap_err();
        assert!(e.is_closed() || sqlstate(&e) == "57P01", "{e}");
        // A busy one: its statement stops and the connection ends.
        let busy = server.connect().await;
        let busy_pid = newest(&admin).await;
        let sleeping = tokio::spawn(async move { busy.simple_query("SELECT pg_sleep(30)").await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        assert!(
            admin
                .query_one(&terminate, &[&busy_pid])
                .await
                .unwrap()
                .get::<_, bool>(0)
        );
        let e = sleeping.await.unwrap().unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        // Told why the connection ends, not that its statement was cancelled.
        assert_eq!(sqlstate(&e), "57P01", "{e}");
        // No such process.
        let none: bool = admin.query_one(&terminate, &[&-5i32]).await.unwrap().get(0);
        assert!(!none);
        admin.batch_execute("SELECT 1").await.unwrap();
    });
}

/// A column of an enum type is described with the type's oid, which a driver looks up
/// in `pg_type` (typtype `e`, as a `"char"`) and `pg_enum` (its labels in order), as
/// tokio-postgres does; asyncpg turns `jit` off with `set_config` before it looks.
#[test]
fn enum_types_are_described_as_postgresql_describes_them() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let c = server.connect().await;
        c.batch_execute(
            "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
             CREATE TABLE p (id INT PRIMARY KEY, m mood);
             INSERT INTO p VALUES (1, 'ok'), (2, 'happy');
             ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'",
        )
        .await
        .unwrap();
        let rows = c.query("SELECT m FROM p ORDER BY id", &[]).await.unwrap();
        let ty = rows[0].columns()[0].type_().clone();
        assert_eq!(ty.name(), "mood");
        assert_eq!(
            ty.kind(),
            &tokio_postgres::types::Kind::Enum(vec![
                "sad".into(),
                "meh".into(),
                "ok".into(),
                "happy".into()
            ])
        );
        let oid: u32 = c
            .query_one("SELECT 'mood'::regtype::oid", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(oid, ty.oid());
        let shown: String = c
            .query_one(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = 'p'::regclass AND attname = 'm'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "mood");
        let off: String = c
            .query_one("SELECT set_config('jit', 'off', false)", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(off, "off");
        // Taken as SET takes it (a PostgreSQL built without JIT takes it too); a value
        // SET refuses, set_config refuses.
        let on: String = c
            .query_one("SELECT set_config('jit', 'on', false)", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(on, "on");
        let err = c
            .query_one("SELECT set_config('TimeZone', 'Asia/Tokyo', false)", &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err), "0A000");
    });
}
