//! The server with a real driver (tokio-postgres): the simple and extended protocols,
//! parameters and results of each type in the binary format, transactions and
//! serialization failures, savepoints and the transaction status ReadyForQuery reports,
//! SCRAM passwords, the connection limit, cancel requests, and
//! malformed input that must not take the server down.

use std::sync::Arc;
use std::time::Duration;

use pmdb_server::{Auth, Users};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

mod common;

use common::{RawClient, TestServer, sqlstate};

#[test]
fn simple_and_extended_queries_with_typed_parameters_and_results() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, small SMALLINT, big BIGINT, name VARCHAR(20),
                             price DECIMAL(10,2), day DATE, at TIMESTAMP, ok BOOLEAN, f DOUBLE);
             INSERT INTO t VALUES (1, 2, 3, 'one', 1.25, '2024-02-29', '2024-02-29 12:34:56', true, 0.5)",
        )
        .await
        .unwrap();
        // Extended protocol: parameters of each type, results in the binary format.
        let insert = c
            .prepare("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
            .await
            .unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(1999, 12, 31).unwrap();
        let at = day.and_hms_opt(23, 59, 58).unwrap();
        let price = rust_decimal::Decimal::new(-12345, 2);
        let n = c
            .execute(
                &insert,
                &[&2i32, &-7i16, &(1i64 << 40), &"it's \"quoted\"", &price, &day, &at, &false, &-1.5f64],
            )
            .await
            .unwrap();
        assert_eq!(n, 1);
        c.execute(&insert, &[&3i32, &None::<i16>, &None::<i64>, &None::<&str>, &None::<rust_decimal::Decimal>, &None::<chrono::NaiveDate>, &None::<chrono::NaiveDateTime>, &None::<bool>, &None::<f64>])
            .await
            .unwrap();
        let row = c
            .query_one("SELECT * FROM t WHERE id = $1", &[&2i32])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i32>("id"), 2);
        assert_eq!(row.get::<_, i16>("small"), -7);
        assert_eq!(row.get::<_, i64>("big"), 1 << 40);
        assert_eq!(row.get::<_, &str>("name"), "it's \"quoted\"");
        assert_eq!(row.get::<_, rust_decimal::Decimal>("price"), price);
        assert_eq!(row.get::<_, chrono::NaiveDate>("day"), day);
        assert_eq!(row.get::<_, chrono::NaiveDateTime>("at"), at);
        assert!(!row.get::<_, bool>("ok"));
        assert_eq!(row.get::<_, f64>("f"), -1.5);
        let nulls = c.query_one("SELECT * FROM t WHERE id = 3", &[]).await.unwrap();
        assert_eq!(nulls.get::<_, Option<i64>>("big"), None);
        assert_eq!(nulls.get::<_, Option<&str>>("name"), None);
        // A statement prepared once runs many times.
        let count = c.prepare("SELECT count(*) FROM t WHERE id >= $1").await.unwrap();
        for (from, n) in [(1i32, 3i64), (2, 2), (4, 0)] {
            assert_eq!(c.query_one(&count, &[&from]).await.unwrap().get::<_, i64>(0), n);
        }
        // The simple protocol gives text.
        let rows = c.simple_query("SELECT name FROM t WHERE id = 1").await.unwrap();
        let SimpleQueryMessage::Row(r) = &rows[1] else { panic!("{rows:?}") };
        assert_eq!(r.get(0), Some("one"));
        // Floats in text as PostgreSQL writes them; whole numbers written in SQL are
        // integers where they fit, as PostgreSQL types them.
        let rows = c
            .simple_query(
                "SELECT 8::float8, 1e20::float8, 0.1::real, 'NaN'::float8, -1.5e-7::float8, \
                 2 + 3, f::text FROM t WHERE id = 1",
            )
            .await
            .unwrap();
        let SimpleQueryMessage::Row(r) = &rows[1] else { panic!("{rows:?}") };
        let texts: Vec<_> = (0..7).map(|i| r.get(i).unwrap()).collect();
        assert_eq!(texts, ["8", "1e+20", "0.1", "NaN", "-1.5e-07", "5", "0.5"]);
        let typed = c
            .prepare("SELECT 1, id + 1, 2147483648, count(*), sum(big), small + 1 FROM t GROUP BY id, small")
            .await
            .unwrap();
        let types: Vec<_> = typed.columns().iter().map(|c| c.type_().clone()).collect();
        assert_eq!(
            types,
            [Type::INT4, Type::INT4, Type::INT8, Type::INT8, Type::NUMERIC, Type::INT4]
        );
        let updated = c
            .execute("UPDATE t SET big = big + $1 WHERE id = $2", &[&10i64, &1i32])
            .await
            .unwrap();
        assert_eq!(updated, 1);
        assert_eq!(
            c.query_one("SELECT big FROM t WHERE id = 1", &[]).await.unwrap().get::<_, i64>(0),
            13
        );
        // Session settings drivers set and read.
        c.batch_execute("SET application_name = 'wire test'; SET extra_float_digits = 3").await.unwrap();
        let shown = c.simple_query("SHOW application_name").await.unwrap();
        let SimpleQueryMessage::Row(r) = &shown[1] else { panic!("{shown:?}") };
        assert_eq!(r.get(0), Some("wire test"));
    });
}

/// A number given for a NUMERIC without a precision keeps every digit or is refused: a
/// parameter with more places than the ten pmdb keeps is 22003 and writes nothing, where
/// rounding it would have lost digits without a word; one with trailing zeros goes in.
/// A double is read through its 15 significant digits and rounded. A literal with a fraction is described as numeric, as PostgreSQL describes it.
#[test]
fn numeric_parameters_keep_their_digits_or_are_refused() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE m (id INT PRIMARY KEY, x NUMERIC)")
            .await
            .unwrap();
        let d = |n: i64, scale: u32| rust_decimal::Decimal::new(n, scale);
        let insert = c.prepare("INSERT INTO m VALUES ($1, $2)").await.unwrap();
        let e = c.execute(&insert, &[&1i32, &d(1, 27)]).await.unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("22003"), "{e:?}");
        c.execute(&insert, &[&2i32, &d(1_500_000_000_000, 12)])
            .await
            .unwrap();
        let rows = c.query("SELECT id, x FROM m", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, rust_decimal::Decimal>(1), d(15, 1));
        // A double, approximate already, keeps its 15 significant digits, as
        // PostgreSQL's float8_numeric, rounded to the ten places.
        let double = c
            .prepare("INSERT INTO m VALUES ($1, $2::float8)")
            .await
            .unwrap();
        c.execute(&double, &[&3i32, &(0.1f64 + 0.2)]).await.unwrap();
        c.execute(&double, &[&4i32, &2.5e-11f64]).await.unwrap();
        let rows = c
            .query("SELECT x FROM m WHERE id > 2 ORDER BY id", &[])
            .await
            .unwrap();
        let x: Vec<rust_decimal::Decimal> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(x, [d(3, 1), d(0, 0)]);
        let literal = c.prepare("SELECT 2.5, 1e-3").await.unwrap();
        assert_eq!(literal.columns()[0].type_(), &Type::NUMERIC);
        let row = c.query_one(&literal, &[]).await.unwrap();
        assert_eq!(row.get::<_, rust_decimal::Decimal>(1), d(1, 3));
    });
}

/// A parameter whose type the client declared in Parse has that type, as in PostgreSQL,
/// where the plan would have typed it otherwise and lost its value: a numeric added to
/// an integer literal stays a numeric, one compared with an integer column is compared
/// as a numeric, and a parameter alone in a select list is described as declared.
/// An interval of days and microseconds, in PostgreSQL's binary form.
#[derive(Debug)]
struct Micros {
    days: i32,
    micros: i64,
}

impl tokio_postgres::types::ToSql for Micros {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use bytes::BufMut;
        out.put_i64(self.micros);
        out.put_i32(self.days);
        out.put_i32(0);
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }

    tokio_postgres::types::to_sql_checked!();
}

#[test]
fn parameters_take_the_types_their_client_declared() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE p (id INT PRIMARY KEY); INSERT INTO p VALUES (5), (6)")
            .await
            .unwrap();
        let d = |n: i64, scale: u32| rust_decimal::Decimal::new(n, scale);
        let sum = c
            .prepare_typed("SELECT $1 + 1, $2 + 1", &[Type::NUMERIC, Type::FLOAT8])
            .await
            .unwrap();
        assert_eq!(sum.columns()[0].type_(), &Type::NUMERIC);
        assert_eq!(sum.columns()[1].type_(), &Type::FLOAT8);
        let row = c.query_one(&sum, &[&d(157_563, 4), &1.5f64]).await.unwrap();
        assert_eq!(row.get::<_, rust_decimal::Decimal>(0), d(167_563, 4));
        assert_eq!(row.get::<_, f64>(1), 2.5);
        let alone = c
            .prepare_typed("SELECT $1", &[Type::NUMERIC])
            .await
            .unwrap();
        assert_eq!(alone.params(), [Type::NUMERIC]);
        assert_eq!(alone.columns()[0].type_(), &Type::NUMERIC);
        let by_id = c
            .prepare_typed("SELECT id FROM p WHERE id = $1", &[Type::NUMERIC])
            .await
            .unwrap();
        assert!(c.query(&by_id, &[&d(55, 1)]).await.unwrap().is_empty());
        let row = c.query_one(&by_id, &[&d(5, 0)]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 5);
        // pg_typeof names the type a client is told of.
        c.batch_execute(
            "CREATE TYPE mood AS ENUM ('ok'); \
             CREATE TABLE ty (v VARCHAR(3), n NUMERIC, m mood, t TIMESTAMPTZ)",
        )
        .await
        .unwrap();
        let row = c
            .query_one(
                "SELECT pg_typeof(1::int)::text, pg_typeof(v)::text, pg_typeof(n)::text, \
                   pg_typeof(m)::text, pg_typeof(t)::text, pg_typeof(1.5::float)::text \
                 FROM (SELECT 1) x LEFT JOIN ty ON true",
                &[],
            )
            .await
            .unwrap();
        let names: Vec<String> = (0..6).map(|i| row.get(i)).collect();
        assert_eq!(
            names,
            [
                "integer",
                "character varying",
                "numeric",
                "mood",
                "timestamp with time zone",
                "double precision"
            ]
        );
        // An interval where the plan would take a timestamp (`timestamp - $2`).
        let earlier = c
            .prepare_typed(
                "SELECT ($1::timestamp - $2)::text, $2",
                &[Type::TIMESTAMP, Type::INTERVAL],
            )
            .await
            .unwrap();
        assert_eq!(earlier.params(), [Type::TIMESTAMP, Type::INTERVAL]);
        assert_eq!(earlier.columns()[1].type_(), &Type::INTERVAL);
        let at = chrono::NaiveDate::from_ymd_opt(2026, 1, 2)
            .unwrap()
            .and_hms_opt(3, 4, 5)
            .unwrap();
        let row = c
            .query_one(
                &earlier,
                &[
                    &at,
                    &Micros {
                        days: 1,
                        micros: 4_000_000,
                    },
                ],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "2026-01-01 03:04:01");
        // A declaration the plan agrees with changes nothing.
        let int = c
            .prepare_typed("SELECT id FROM p WHERE id = $1", &[Type::INT4])
            .await
            .unwrap();
        assert_eq!(int.params(), [Type::INT4]);
        assert_eq!(
            c.query_one(&int, &[&6i32]).await.unwrap().get::<_, i32>(0),
            6
        );
    });
}

#[test]
fn errors_carry_their_sqlstate_and_the_connection_survives() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE t (id INT PRIMARY KEY)")
            .await
            .unwrap();
        c.execute("INSERT INTO t VALUES (1)", &[]).await.unwrap();
        let cases = [
            ("INSERT INTO t VALUES (1)", "23505"),
            ("SELECT * FROM missing", "42P01"),
            ("SELEC 1", "42601"),
            ("SELECT 1/0", "22012"),
            ("SHOW no_such_setting", "42704"),
        ];
        for (sql, code) in cases {
            let e = c.simple_query(sql).await.expect_err(sql);
            assert_eq!(sqlstate(&e), code, "{sql}: {e}");
            let e = c.query(sql, &[]).await.expect_err(sql);
            assert_eq!(sqlstate(&e), code, "{sql} (extended): {e}");
        }
        // A prepared statement with too few parameters bound is refused by the driver;
        // one naming a parameter that is never described cannot be prepared wrongly.
        assert_eq!(
            c.query_one("SELECT count(*) FROM t", &[])
                .await
                .unwrap()
                .get::<_, i64>(0),
            1
        );
    });
}

#[test]
fn transactions_commit_roll_back_and_conflict_with_40001() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let mut a = s.connect().await;
        let mut b = s.connect().await;
        a.batch_execute("CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT); INSERT INTO acct VALUES (1, 100), (2, 100)")
            .await
            .unwrap();
        let tx = a.transaction().await.unwrap();
        tx.execute("UPDATE acct SET bal = bal - 10 WHERE id = 1", &[]).await.unwrap();
        tx.execute("UPDATE acct SET bal = bal + 10 WHERE id = 2", &[]).await.unwrap();
        let inside: i64 = tx.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(inside, 90);
        let outside: i64 = b.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(outside, 100);
        tx.commit().await.unwrap();
        let tx = a.transaction().await.unwrap();
        tx.execute("DELETE FROM acct", &[]).await.unwrap();
        tx.rollback().await.unwrap();
        // A sum of bigints is a numeric, as in PostgreSQL.
        let total: rust_decimal::Decimal =
            b.query_one("SELECT sum(bal) FROM acct", &[]).await.unwrap().get(0);
        assert_eq!(total, 200.into());

        // Under REPEATABLE READ, a block whose snapshot missed another's commit of a row
        // it then writes fails at that statement, as in PostgreSQL.
        let repeatable = tokio_postgres::IsolationLevel::RepeatableRead;
        let ta = a.build_transaction().isolation_level(repeatable).start().await.unwrap();
        let tb = b.build_transaction().isolation_level(repeatable).start().await.unwrap();
        tb.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap();
        ta.execute("UPDATE acct SET bal = 0 WHERE id = 1", &[]).await.unwrap();
        ta.commit().await.unwrap();
        let e = tb
            .execute("UPDATE acct SET bal = 1 WHERE id = 1", &[])
            .await
            .expect_err("the second writer must fail");
        assert_eq!(sqlstate(&e), "40001", "{e}");
        drop(tb);
        // A second inserter of a key waits for the first block, and once it commits
        // fails with 23505, as in PostgreSQL.
        let ta = a.build_transaction().isolation_level(repeatable).start().await.unwrap();
        let tb = b.build_transaction().isolation_level(repeatable).start().await.unwrap();
        ta.execute("INSERT INTO acct VALUES (3, 3)", &[]).await.unwrap();
        let (second, ()) = tokio::join!(
            tb.execute("INSERT INTO acct VALUES (3, 4)", &[]),
            async {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                ta.commit().await.unwrap();
            }
        );
        let e = second.expect_err("the second writer must fail");
        assert_eq!(sqlstate(&e), "23505", "{e}");
        drop(tb);
        // Under SERIALIZABLE, a write skew is found at COMMIT, which fails with 40001.
        let serializable = tokio_postgres::IsolationLevel::Serializable;
        let ta = a.build_transaction().isolation_level(serializable).start().await.unwrap();
        let tb = b.build_transaction().isolation_level(serializable).start().await.unwrap();
        ta.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap();
        tb.query_one("SELECT bal FROM acct WHERE id = 2", &[]).await.unwrap();
        ta.execute("UPDATE acct SET bal = bal + 1 WHERE id = 2", &[]).await.unwrap();
        tb.execute("UPDATE acct SET bal = bal + 1 WHERE id = 1", &[]).await.unwrap();
        ta.commit().await.unwrap();
        let e = tb.commit().await.expect_err("the second writer must fail");
        assert_eq!(sqlstate(&e), "40001", "{e}");
        // The client may go on (after its ROLLBACK, which is accepted).
        b.batch_execute("ROLLBACK").await.unwrap();
        let bal: i64 = b.query_one("SELECT bal FROM acct WHERE id = 1", &[]).await.unwrap().get(0);
        assert_eq!(bal, 0);
        // After an error in a block, statements fail until it ends.
        b.batch_execute("BEGIN").await.unwrap();
        assert!(b.batch_execute("SELECT * FROM missing").await.is_err());
        let e = b.batch_execute("SELECT 1").await.unwrap_err();
        assert_eq!(sqlstate(&e), "25P02");
        b.batch_execute("ROLLBACK").await.unwrap();
        b.batch_execute("SELECT 1").await.unwrap();

        // The isolation settings are the session's: READ COMMITTED by default, a block's
        // own level while it is open, and SET default_transaction_isolation changes the
        // blocks to come.
        let isolation = |rows: Vec<tokio_postgres::SimpleQueryMessage>| {
            rows.into_iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                    _ => None,
                })
                .unwrap()
        };
        let show = "SHOW transaction_isolation";
        assert_eq!(isolation(b.simple_query(show).await.unwrap()), "read committed");
        b.batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE").await.unwrap();
        assert_eq!(isolation(b.simple_query(show).await.unwrap()), "serializable");
        // (Three Query messages: in one, the SET and BEGIN would share the transaction
        // the SET began, of the level before it, as in PostgreSQL.)
        b.batch_execute("COMMIT").await.unwrap();
        b.batch_execute("SET default_transaction_isolation = 'repeatable read'")
            .await
            .unwrap();
        b.batch_execute("BEGIN").await.unwrap();
        assert_eq!(isolation(b.simple_query(show).await.unwrap()), "repeatable read");
        b.batch_execute("COMMIT").await.unwrap();
        // READ UNCOMMITTED runs as READ COMMITTED and is shown as asked, as in PostgreSQL.
        b.batch_execute("BEGIN ISOLATION LEVEL READ UNCOMMITTED")
            .await
            .unwrap();
        assert_eq!(isolation(b.simple_query(show).await.unwrap()), "read uncommitted");
        b.batch_execute("COMMIT").await.unwrap();
        let e = b
            .batch_execute("SET default_transaction_isolation = 'sometimes'")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "22023");
    });
}

#[test]
fn scram_passwords_are_checked() {
    let mut users = Users::default();
    users.add("ada:lovelace").unwrap();
    let s = TestServer::start(Auth::Scram(users), 16);
    s.rt.block_on(async {
        let c = s
            .try_connect("ada", "lovelace")
            .await
            .expect("the right password");
        c.batch_execute("SELECT 1").await.unwrap();
        for (user, password) in [("ada", "wrong"), ("nobody", "lovelace")] {
            let Err(e) = s.try_connect(user, password).await else {
                panic!("{user} was let in")
            };
            assert_eq!(sqlstate(&e), "28P01", "{user}: {e}");
        }
    });
}

#[test]
fn connections_beyond_the_limit_are_refused_with_53300() {
    let s = TestServer::start(Auth::Trust, 1);
    s.rt.block_on(async {
        let first = s.connect().await;
        let Err(e) = s.try_connect("pmdb", "x").await else {
            panic!("the second connection was let in")
        };
        assert_eq!(sqlstate(&e), "53300", "{e}");
        drop(first);
        // Its slot comes back once it is gone.
        let mut again = None;
        for _ in 0..50 {
            if let Ok(c) = s.try_connect("pmdb", "x").await {
                again = Some(c);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        again
            .expect("a slot freed")
            .batch_execute("SELECT 1")
            .await
            .unwrap();
    });
}

#[test]
fn shutdown_closes_connections_still_open_after_the_grace_period() {
    let mut s = TestServer::trusting();
    let (idle, in_block) = s.rt.block_on(async {
        let idle = s.connect().await;
        idle.batch_execute(
            "CREATE TABLE g (k INT PRIMARY KEY, v INT); INSERT INTO g VALUES (1, 1)",
        )
        .await
        .unwrap();
        let in_block = s.connect().await;
        in_block
            .batch_execute("BEGIN; INSERT INTO g VALUES (2, 2)")
            .await
            .unwrap();
        (idle, in_block)
    });
    let server = s.server.take().unwrap();
    server.shutdown();
    s.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(20), server.wait())
            .await
            .expect("the connections left open were closed after the grace period");
        assert!(idle.batch_execute("SELECT 1").await.is_err());
        assert!(in_block.batch_execute("COMMIT").await.is_err());
    });
    // The committed row is there, the open block's is not.
    let engine = s.engine.as_ref().unwrap();
    let rows: usize = match engine.execute("SELECT k FROM g").unwrap().pop() {
        Some(pmdb_sql::Output::Rows { batches, .. }) => batches.iter().map(|b| b.num_rows()).sum(),
        _ => panic!("no rows"),
    };
    assert_eq!(rows, 1);
}

#[test]
fn a_running_query_can_be_cancelled() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = Arc::new(s.connect().await);
        let token = c.cancel_token();
        let slow = tokio::spawn({
            let c = Arc::clone(&c);
            async move {
                c.simple_query(
                    "SELECT count(*) FROM generate_series(1, 300000) a, generate_series(1, 300000) b",
                )
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await.unwrap();
        let e = tokio::time::timeout(Duration::from_secs(20), slow)
            .await
            .expect("cancelled in time")
            .unwrap()
            .expect_err("cancelled");
        assert_eq!(sqlstate(&e), "57014", "{e}");
        c.batch_execute("SELECT 1").await.unwrap();
    });
}

#[test]
fn savepoints_revive_a_failed_block_and_ready_for_query_says_so() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let mut raw = RawClient::connect(s.port()).await;
        let steps = [
            ("CREATE TABLE t (id INT PRIMARY KEY, v INT)", 'I'),
            ("BEGIN", 'T'),
            ("INSERT INTO t VALUES (1, 1)", 'T'),
            ("SAVEPOINT s", 'T'),
            ("INSERT INTO t VALUES (1, 2)", 'E'),
            ("SELECT 1", 'E'),
            ("ROLLBACK TO SAVEPOINT s", 'T'),
            ("SELEC 1", 'E'),
            ("ROLLBACK TO s", 'T'),
            ("INSERT INTO t VALUES (2, 2)", 'T'),
            ("RELEASE s", 'T'),
            ("COMMIT", 'I'),
            ("SAVEPOINT s", 'I'),
        ];
        for (sql, status) in steps {
            assert_eq!(raw.status_after(sql).await, status, "after {sql}");
        }
        // A COMMIT that fails (40001) ends its block: the client is idle, not failed.
        let mut other = RawClient::connect(s.port()).await;
        let serializable = "BEGIN ISOLATION LEVEL SERIALIZABLE";
        assert_eq!(raw.status_after(serializable).await, 'T');
        assert_eq!(other.status_after(serializable).await, 'T');
        assert_eq!(raw.status_after("SELECT v FROM t WHERE id = 1").await, 'T');
        assert_eq!(
            other.status_after("SELECT v FROM t WHERE id = 2").await,
            'T'
        );
        assert_eq!(
            raw.status_after("UPDATE t SET v = 5 WHERE id = 2").await,
            'T'
        );
        assert_eq!(
            other.status_after("UPDATE t SET v = 6 WHERE id = 1").await,
            'T'
        );
        assert_eq!(raw.status_after("COMMIT").await, 'I');
        assert_eq!(other.status_after("COMMIT").await, 'I');
        assert_eq!(other.error.as_deref(), Some("40001"));
        // A driver's nested transactions: the inner one fails and rolls back, the
        // outer one commits.
        let mut c = s.connect().await;
        let mut outer = c.transaction().await.unwrap();
        outer
            .execute("INSERT INTO t VALUES (3, 3)", &[])
            .await
            .unwrap();
        {
            let inner = outer.savepoint("inner").await.unwrap();
            inner
                .execute("INSERT INTO t VALUES (4, 4)", &[])
                .await
                .unwrap();
            let e = inner
                .execute("INSERT INTO t VALUES (1, 9)", &[])
                .await
                .unwrap_err();
            assert_eq!(sqlstate(&e), "23505");
            inner.rollback().await.unwrap();
        }
        outer
            .execute("INSERT INTO t VALUES (5, 5)", &[])
            .await
            .unwrap();
        outer.commit().await.unwrap();
        let ids: Vec<i32> = c
            .query("SELECT id FROM t ORDER BY id", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(ids, [1, 2, 3, 5]);
    });
}

#[test]
fn returning_rows_come_with_the_commands_own_tag() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE r (id INT PRIMARY KEY, name TEXT)")
            .await
            .unwrap();
        let inserted = c
            .query(
                "INSERT INTO r VALUES ($1, $2), ($3, $4) RETURNING id, upper(name)",
                &[&1i32, &"a", &2i32, &"b"],
            )
            .await
            .unwrap();
        let got: Vec<(i32, String)> = inserted.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got, [(1, "A".into()), (2, "B".into())]);
        // The count in CommandComplete is the command's.
        let n = c
            .execute("UPDATE r SET name = 'c' WHERE id = 1 RETURNING id", &[])
            .await
            .unwrap();
        assert_eq!(n, 1);
        let messages = c
            .simple_query("DELETE FROM r WHERE id >= 1 RETURNING name")
            .await
            .unwrap();
        let rows = messages
            .iter()
            .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
            .count();
        assert_eq!(rows, 2);
        assert!(matches!(
            messages.last(),
            Some(SimpleQueryMessage::CommandComplete(2))
        ));
    });
}

#[test]
fn malformed_messages_never_take_the_server_down() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let addr = format!("127.0.0.1:{}", s.port());
        let garbage: Vec<Vec<u8>> = vec![
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            vec![0, 0, 0, 3],                         // a length below its own size
            vec![0xff, 0xff, 0xff, 0xff, 0, 3, 0, 0], // an absurd length
            vec![0, 0, 0, 8, 0, 3, 0],                // truncated
            vec![0, 0, 0, 9, 0, 9, 0, 0, b'x'],       // an unknown protocol version
        ];
        for bytes in garbage {
            let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let _ = sock.write_all(&bytes).await;
            let _ = sock.shutdown().await;
            let mut reply = Vec::new();
            let _ =
                tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut reply)).await;
        }
        // After startup: an unknown message type and an oversized query.
        let c = s.connect().await;
        c.batch_execute("SELECT 1").await.unwrap();
        let huge = format!("SELECT '{}'", "x".repeat(2 << 20));
        let _ = c.simple_query(&huge).await;
        // The server still serves.
        let c = s.connect().await;
        c.batch_execute("SELECT 1").await.unwrap();
    });
}

#[test]
fn copy_from_stdin_finds_the_sessions_temporary_table() {
    use futures::SinkExt;
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        // A temporary table of the same name shadows public's, for COPY as for a query.
        c.batch_execute("CREATE TABLE shadowed (a TEXT); CREATE TEMP TABLE shadowed (a TEXT)")
            .await
            .unwrap();
        let sink = c.copy_in("COPY shadowed FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"one\ntwo\n"))
            .await
            .unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let counts = c
            .query_one(
                "SELECT (SELECT count(*) FROM shadowed), (SELECT count(*) FROM public.shadowed)",
                &[],
            )
            .await
            .unwrap();
        assert_eq!((counts.get::<_, i64>(0), counts.get::<_, i64>(1)), (2, 0));
    });
}

#[test]
fn copy_from_stdin_truncate_and_adding_a_primary_key() {
    use futures::SinkExt;
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE acc (id INT NOT NULL, note VARCHAR(20), n BIGINT)")
            .await
            .unwrap();
        let sink = c
            .copy_in("COPY acc FROM STDIN WITH (FREEZE ON)")
            .await
            .unwrap();
        futures::pin_mut!(sink);
        let mut data = String::new();
        for i in 1..=5000 {
            data.push_str(&format!("{i}\tnote {i}\t{}\n", i * 2));
        }
        data.push_str("5001\t\\N\t\\N\n5002\ttab\\there\t7\n");
        // In pieces that cut lines in two.
        for piece in data.as_bytes().chunks(1000) {
            sink.send(bytes::Bytes::copy_from_slice(piece))
                .await
                .unwrap();
        }
        assert_eq!(sink.finish().await.unwrap(), 5002);
        let row = c
            .query_one("SELECT count(*), sum(n) FROM acc", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 5002);
        assert_eq!(
            row.get::<_, rust_decimal::Decimal>(1),
            (5000 * 5001 + 7).into()
        );
        let tab: String = c
            .query_one("SELECT note FROM acc WHERE id = 5002", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(tab, "tab\there");
        // A bad row fails the COPY with its line.
        let sink = c.copy_in("COPY acc FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"x\ty\t1\n"))
            .await
            .unwrap();
        let e = sink.finish().await.expect_err("not an integer");
        assert!(e.code().is_some(), "{e}");

        c.batch_execute("ALTER TABLE acc ADD PRIMARY KEY (id)")
            .await
            .unwrap();
        let n: i64 = c
            .query_one("SELECT n FROM acc WHERE id = 2500", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 5000);
        let e = c
            .batch_execute("INSERT INTO acc VALUES (1, 'again', 0)")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "23505", "{e}");
        let e = c
            .batch_execute("ALTER TABLE acc ADD PRIMARY KEY (n)")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "42P16", "{e}");
        // A key with duplicates cannot be added, and the table stays as it was.
        c.batch_execute("CREATE TABLE dup (a INT, b INT); INSERT INTO dup VALUES (1, 1), (1, 2)")
            .await
            .unwrap();
        let e = c
            .batch_execute("ALTER TABLE dup ADD PRIMARY KEY (a)")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "23505", "{e}");
        let n: i64 = c
            .query_one("SELECT count(*) FROM dup", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);

        c.batch_execute("BEGIN; TRUNCATE acc; ROLLBACK")
            .await
            .unwrap();
        let n: i64 = c
            .query_one("SELECT count(*) FROM acc", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 5002);
        c.batch_execute("TRUNCATE TABLE acc, dup").await.unwrap();
        let n: i64 = c
            .query_one("SELECT count(*) FROM acc", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
    });
}

/// A CHAR(n) value goes out blank-padded to n characters, as PostgreSQL sends it: in
/// text and binary results and in COPY's text and CSV, multibyte characters counted as
/// one.
#[test]
fn char_values_go_out_blank_padded() {
    use futures::TryStreamExt;
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE pc (id INT PRIMARY KEY, c CHAR(4), v VARCHAR(4));
             INSERT INTO pc VALUES (1, 'ab', 'ab'), (2, 'éé', 'é'), (3, NULL, NULL), (4, 'abcd', '')",
        )
        .await
        .unwrap();
        let simple: Vec<Option<String>> = c
            .simple_query("SELECT c FROM pc ORDER BY id")
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_owned)),
                _ => None,
            })
            .collect();
        let expected = [Some("ab  "), Some("éé  "), None, Some("abcd")].map(|v| v.map(String::from));
        assert_eq!(simple, expected);
        let binary: Vec<Option<String>> = c
            .query("SELECT c FROM pc WHERE id > $1 ORDER BY id", &[&0i32])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(binary, expected);
        let both = c
            .query_one("SELECT c, v FROM pc WHERE id = 2", &[])
            .await
            .unwrap();
        assert_eq!((both.get::<_, &str>(0), both.get::<_, &str>(1)), ("éé  ", "é"));
        let copied = |sql: &'static str| {
            let c = &c;
            async move {
                let stream = c.copy_out(sql).await.unwrap();
                let parts: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
                String::from_utf8(parts.concat()).unwrap()
            }
        };
        assert_eq!(
            copied("COPY pc (id, c) TO STDOUT").await,
            "1\tab  \n2\téé  \n3\t\\N\n4\tabcd\n"
        );
        assert_eq!(
            copied("COPY (SELECT c FROM pc WHERE id = 1) TO STDOUT (FORMAT csv)").await,
            "ab  \n"
        );
    });
}

/// The tables `\d` lists, by psql's query.
/// COPY … TO STDOUT writes what PostgreSQL writes: text with its escapes and `\\N`, CSV
/// with a header and quotes, binary with its header and trailer; COPY … FROM STDIN with a
/// column list fills the other columns with their defaults.
#[test]
fn copy_to_stdout_and_from_stdin_with_a_column_list() {
    use futures::{SinkExt, TryStreamExt};
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE ct (id SERIAL PRIMARY KEY, s TEXT, d DECIMAL(8,2) DEFAULT 1.25,
                              at TIMESTAMP);
             INSERT INTO ct (s, d, at) VALUES ('a\tb', 1.5, '2024-01-02 03:04:05'),
                                              (NULL, NULL, '2024-01-02 03:04:05.5'),
                                              ('q\"u,o', -2, NULL)",
        )
        .await
        .unwrap();
        let copied = |sql: &'static str| {
            let c = &c;
            async move {
                let stream = c.copy_out(sql).await.unwrap();
                let parts: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
                parts.concat()
            }
        };
        assert_eq!(
            String::from_utf8(copied("COPY ct TO STDOUT").await).unwrap(),
            "1\ta\\tb\t1.50\t2024-01-02 03:04:05\n\
             2\t\\N\t\\N\t2024-01-02 03:04:05.5\n\
             3\tq\"u,o\t-2.00\t\\N\n"
        );
        assert_eq!(
            String::from_utf8(
                copied("COPY (SELECT id, s FROM ct ORDER BY id) TO STDOUT (FORMAT csv, HEADER)")
                    .await
            )
            .unwrap(),
            "id,s\n1,a\tb\n2,\n3,\"q\"\"u,o\"\n"
        );
        let binary = copied("COPY ct (id) TO STDOUT (FORMAT binary)").await;
        assert!(binary.starts_with(b"PGCOPY\n\xff\r\n\0"), "{binary:?}");
        assert!(binary.ends_with(&[0xff, 0xff]), "{binary:?}");
        // Header, 3 rows of one 4-byte field (2 + 4 + 4 bytes each), trailer.
        assert_eq!(binary.len(), 19 + 3 * 10 + 2);
        let empty = copied("COPY (SELECT 1 WHERE false) TO STDOUT (FORMAT binary)").await;
        assert_eq!(empty.len(), 19 + 2);
        // A column list in: the serial and the default fill the rest.
        let sink = c.copy_in("COPY ct (at, s) FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(
            b"\\N\tx\n2020-01-01 00:00:00\ty\n",
        ))
        .await
        .unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let rows = c
            .query(
                "SELECT id, s, d::text FROM ct WHERE id > 3 ORDER BY id",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<(i32, String, String)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(
            got,
            [
                (4, "x".into(), "1.25".into()),
                (5, "y".into(), "1.25".into())
            ]
        );
        let Err(e) = c
            .copy_in::<_, bytes::Bytes>("COPY ct (nope) FROM STDIN")
            .await
        else {
            panic!("a column that does not exist");
        };
        assert_eq!(sqlstate(&e), "42703", "{e}");
    });
}

/// A query of the catalog reads it in a cursor and under EXPLAIN too, as SQLAlchemy's
/// server-side cursors and asyncpg's `explain()` send them.
#[test]
fn catalog_queries_run_in_cursors_and_under_explain() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "BEGIN; DECLARE v CURSOR FOR SELECT pg_catalog.version(), t.typname \
             FROM pg_catalog.pg_type t WHERE t.typname = 'int4'",
        )
        .await
        .unwrap();
        let row = c.query_one("FETCH NEXT FROM v", &[]).await.unwrap();
        assert!(row.get::<_, String>(0).starts_with("PostgreSQL 15"));
        assert_eq!(row.get::<_, String>(1), "int4");
        c.batch_execute("COMMIT").await.unwrap();
        let explain = c
            .prepare("EXPLAIN (FORMAT JSON, ANALYZE) SELECT typname FROM pg_type WHERE typlen > $1")
            .await
            .unwrap();
        // Its parameters are its query's.
        let query = c
            .prepare("SELECT typname FROM pg_type WHERE typlen > $1")
            .await
            .unwrap();
        assert_eq!(explain.params(), query.params());
        assert_eq!(explain.columns()[0].type_(), &Type::JSON);
        let rows = c
            .simple_query(
                "EXPLAIN (FORMAT JSON, ANALYZE) SELECT typname FROM pg_type WHERE typlen > 2",
            )
            .await
            .unwrap();
        let text = rows
            .iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
                _ => None,
            })
            .expect("a plan");
        assert!(text.contains(r#""Relation Name": "pg_type""#), "{text}");
        assert!(text.contains(r#""Actual Total Time": "#), "{text}");
    });
}

/// COPY … FROM STDIN WHERE loads only the rows the condition is true for (NULL is not
/// true), their defaults computed, the count in the tag; a condition that is no boolean,
/// names no column or holds a subquery is refused before any row, as is WHERE on COPY TO.
#[test]
fn copy_from_stdin_where_loads_the_rows_it_is_true_for() {
    use futures::SinkExt;
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE cw (id SERIAL PRIMARY KEY, a TEXT, b INT)")
            .await
            .unwrap();
        let sink = c
            .copy_in("COPY cw (a, b) FROM STDIN WHERE b > 1 AND a <> 'skip'")
            .await
            .unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(
            b"x\t1\ny\t2\nskip\t3\nz\t\\N\nw\t5\n",
        ))
        .await
        .unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let rows = c
            .query("SELECT id, a FROM cw ORDER BY id", &[])
            .await
            .unwrap();
        let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got, [(2, "y".into()), (5, "w".into())]);
        for (sql, state) in [
            ("COPY cw FROM STDIN WHERE b", "42804"),
            ("COPY cw FROM STDIN WHERE nope > 1", "42703"),
            ("COPY cw FROM STDIN WHERE b IN (SELECT 1)", "0A000"),
            ("COPY cw TO STDOUT WHERE b > 1", "42601"),
        ] {
            // In the simple protocol: a copy_in that failed to start leaves a Sync
            // whose answer tokio-postgres takes for the next statement's.
            let Err(e) = c.batch_execute(sql).await else {
                panic!("{sql} accepted");
            };
            assert_eq!(sqlstate(&e), state, "{sql}: {e}");
        }
    });
}

/// COPY … FROM STDIN in binary, as asyncpg's `copy_records_to_table` and
/// tokio-postgres's binary writer send it: every type's binary form read; a field whose
/// bytes do not fit its column's type is 22P03 and nothing is loaded.
#[test]
fn copy_from_stdin_in_binary() {
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::Type;
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE bc (id SERIAL PRIMARY KEY, i INT, b BIGINT, f DOUBLE PRECISION,
                              t TEXT, d DATE, at TIMESTAMP, ok BOOLEAN, by BYTEA)",
        )
        .await
        .unwrap();
        let sink = c
            .copy_in("COPY bc (i, b, f, t, d, at, ok, by) FROM STDIN (FORMAT binary)")
            .await
            .unwrap();
        let types = [
            Type::INT4,
            Type::INT8,
            Type::FLOAT8,
            Type::TEXT,
            Type::DATE,
            Type::TIMESTAMP,
            Type::BOOL,
            Type::BYTEA,
        ];
        let writer = BinaryCopyInWriter::new(sink, &types);
        futures::pin_mut!(writer);
        let day = chrono::NaiveDate::from_ymd_opt(1999, 12, 31).unwrap();
        let at = day.and_hms_micro_opt(23, 59, 58, 250_000).unwrap();
        let bytes: &[u8] = &[0, 0xff];
        writer
            .as_mut()
            .write(&[
                &7i32,
                &(1i64 << 40),
                &1.25f64,
                &"tab\there",
                &day,
                &at,
                &true,
                &bytes,
            ])
            .await
            .unwrap();
        let none: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
            &None::<i32>,
            &None::<i64>,
            &None::<f64>,
            &None::<String>,
            &None::<chrono::NaiveDate>,
            &None::<chrono::NaiveDateTime>,
            &None::<bool>,
            &None::<Vec<u8>>,
        ];
        writer.as_mut().write(&none).await.unwrap();
        assert_eq!(writer.finish().await.unwrap(), 2);
        let rows = c
            .query("SELECT i, b, f, t, d, at, ok, by FROM bc ORDER BY id", &[])
            .await
            .unwrap();
        assert_eq!(rows[0].get::<_, i32>(0), 7);
        assert_eq!(rows[0].get::<_, i64>(1), 1 << 40);
        assert_eq!(rows[0].get::<_, f64>(2), 1.25);
        assert_eq!(rows[0].get::<_, String>(3), "tab\there");
        assert_eq!(rows[0].get::<_, chrono::NaiveDate>(4), day);
        assert_eq!(rows[0].get::<_, chrono::NaiveDateTime>(5), at);
        assert!(rows[0].get::<_, bool>(6));
        assert_eq!(rows[0].get::<_, Vec<u8>>(7), bytes);
        assert_eq!(rows[1].get::<_, Option<i32>>(0), None);
        // An 8-byte integer for an INT column.
        let sink = c
            .copy_in("COPY bc (i) FROM STDIN (FORMAT binary)")
            .await
            .unwrap();
        let writer = BinaryCopyInWriter::new(sink, &[Type::INT8]);
        futures::pin_mut!(writer);
        let sent = writer.as_mut().write(&[&5i64]).await;
        let e = match sent {
            Err(e) => e,
            Ok(()) => writer.finish().await.unwrap_err(),
        };
        assert_eq!(sqlstate(&e), "22P03", "{e}");
        let n: i64 = c
            .query_one("SELECT count(*) FROM bc", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);
    });
}

async fn table_names(c: &Client) -> Vec<String> {
    c.query(
        "SELECT c.relname FROM pg_catalog.pg_class c
           LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r','p','') AND n.nspname !~ '^pg_toast'
            AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get::<_, String>(0))
    .collect()
}

/// pg_catalog follows DDL, and answers the catalog SQL drivers and psql send: casts to
/// regclass, `OPERATOR(pg_catalog.~)`, COLLATE, format_type, and joins with relations
/// pmdb never has rows in.
#[test]
fn pg_catalog_follows_ddl_and_answers_catalog_sql() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, who VARCHAR(20) NOT NULL, total DECIMAL(10,2), tip NUMERIC);
             CREATE INDEX orders_who ON orders (who);
             CREATE TABLE scratch (x INT)",
        )
        .await
        .unwrap();
        assert_eq!(table_names(&c).await, ["orders", "scratch"]);
        c.batch_execute("DROP TABLE scratch").await.unwrap();
        assert_eq!(table_names(&c).await, ["orders"]);

        let columns = c
            .query(
                "SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) FROM pg_catalog.pg_attrdef d
                     WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef)
                 FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid = 'orders'::regclass AND a.attnum > 0 AND NOT a.attisdropped
                 ORDER BY a.attnum",
                &[],
            )
            .await
            .unwrap();
        let columns: Vec<(String, String, bool)> = columns
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(
            columns,
            [
                ("id".into(), "bigint".into(), true),
                ("who".into(), "character varying(20)".into(), true),
                ("total".into(), "numeric(10,2)".into(), false),
                ("tip".into(), "numeric".into(), false),
            ]
        );
        // An identity column's sequence is its identity, no default (as reflection
        // reads it).
        c.batch_execute(
            "CREATE TABLE ids (id INT GENERATED ALWAYS AS IDENTITY \
             (START WITH 42 NO MINVALUE NO MAXVALUE), n SERIAL)",
        )
        .await
        .unwrap();
        let identities = c
            .query(
                "SELECT a.attname, a.attidentity::text, a.atthasdef,
                   (SELECT count(*) FROM pg_catalog.pg_attrdef d
                     WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum)
                 FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid = 'ids'::regclass AND a.attnum > 0 ORDER BY a.attnum",
                &[],
            )
            .await
            .unwrap();
        let identities: Vec<(String, String, bool, i64)> = identities
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        assert_eq!(
            identities,
            [
                ("id".into(), "a".into(), false, 0),
                ("n".into(), "".into(), true, 1)
            ]
        );
        let found = c
            .query_one(
                "SELECT c.relname FROM pg_catalog.pg_class c
                  WHERE c.relname OPERATOR(pg_catalog.~) '^(orders)$' COLLATE pg_catalog.default",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(found.get::<_, String>(0), "orders");
        let indexes = c
            .query(
                "SELECT c2.relname, i.indisprimary, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
                        pg_catalog.pg_get_constraintdef(con.oid, true)
                   FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
                   LEFT JOIN pg_catalog.pg_constraint con
                     ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
                  WHERE c.oid = 'orders'::regclass AND c.oid = i.indrelid AND i.indexrelid = c2.oid
                  ORDER BY i.indisprimary DESC, c2.relname",
                &[],
            )
            .await
            .unwrap();
        let indexes: Vec<(String, bool, String, Option<String>)> = indexes
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        assert_eq!(
            indexes,
            [
                (
                    "orders_pkey".into(),
                    true,
                    "CREATE UNIQUE INDEX orders_pkey ON public.orders USING btree (id)".into(),
                    Some("PRIMARY KEY (id)".into())
                ),
                (
                    "orders_who".into(),
                    false,
                    "CREATE INDEX orders_who ON public.orders USING btree (who)".into(),
                    None
                ),
            ]
        );
        // psycopg's type lookup (SQLAlchemy runs it on connect): a known type, and an
        // extension type pmdb does not have, which is no row.
        let type_info = "SELECT typname AS name, oid, typarray AS array_oid,
                oid::regtype::text AS regtype, typdelim AS delimiter
              FROM pg_type t WHERE t.oid = to_regtype($1) ORDER BY t.oid";
        let int4 = c.query(type_info, &[&"int4"]).await.unwrap();
        assert_eq!(int4.len(), 1);
        assert_eq!(int4[0].get::<_, String>(3), "integer");
        assert!(c.query(type_info, &[&"hstore"]).await.unwrap().is_empty());
        // Publications and inheritance: pmdb has none, and says so with no rows.
        let none = c
            .simple_query(
                "SELECT pubname, NULL FROM pg_catalog.pg_publication p
                   JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
                  WHERE pr.prrelid = 'orders'::regclass
                 UNION
                 SELECT c.oid::pg_catalog.regclass::pg_catalog.text, NULL FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
                  WHERE c.oid = i.inhparent ORDER BY 1",
            )
            .await
            .unwrap();
        assert!(
            !none.iter().any(|m| matches!(m, SimpleQueryMessage::Row(_))),
            "{none:?}"
        );
    });
}

/// `DEALLOCATE ALL` (which psycopg sends after a rollback once it has prepared
/// statements) forgets every statement the protocol prepared; `DEALLOCATE` of a name
/// never prepared is 26000, as in PostgreSQL.
#[test]
fn deallocate_forgets_prepared_statements() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        let one = c.prepare("SELECT 1::bigint").await.unwrap();
        let two = c.prepare("SELECT 2::bigint").await.unwrap();
        assert_eq!(c.query_one(&one, &[]).await.unwrap().get::<_, i64>(0), 1);
        let e = c.simple_query("DEALLOCATE nope").await.unwrap_err();
        assert_eq!(sqlstate(&e), "26000", "{e}");
        assert_eq!(c.query_one(&two, &[]).await.unwrap().get::<_, i64>(0), 2);
        c.simple_query("DEALLOCATE ALL").await.unwrap();
        for gone in [&one, &two] {
            let e = c.query_one(gone, &[]).await.unwrap_err();
            assert_eq!(sqlstate(&e), "26000", "{e}");
        }
        // Statements prepared afterwards work as before.
        let three = c.prepare("SELECT 3::bigint").await.unwrap();
        assert_eq!(c.query_one(&three, &[]).await.unwrap().get::<_, i64>(0), 3);
    });
}

/// `pg_prepared_statements` lists the session's statements prepared by name, the
/// protocol's and SQL's, as PostgreSQL 15 does: the text given, the parameters' types,
/// whether SQL prepared it, and how often it ran; another session sees none of them,
/// and DEALLOCATE takes them out.
#[test]
fn pg_prepared_statements_lists_the_sessions_named_statements() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        let other = s.connect().await;
        let listed = "SELECT name, statement, parameter_types::text, from_sql, generic_plans, \
                      custom_plans, prepare_time <= now() FROM pg_prepared_statements \
                      ORDER BY name";
        assert_eq!(text_rows(&c, listed).await, Vec::<String>::new());
        // tokio-postgres names each statement it prepares.
        let one = c.prepare("SELECT $1::int + 1").await.unwrap();
        c.query_one(&one, &[&1i32]).await.unwrap();
        c.query_one(&one, &[&2i32]).await.unwrap();
        c.batch_execute("PREPARE q (int) AS SELECT $1")
            .await
            .unwrap_err();
        c.batch_execute("PREPARE q AS SELECT $1::text, $2::bigint")
            .await
            .unwrap();
        // In name order: `q`, then the name tokio-postgres gave its statement.
        let rows = text_rows(&c, listed).await;
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(
            rows[0],
            "q|PREPARE q AS SELECT $1::text, $2::bigint|{text,bigint}|t|0|0|t"
        );
        assert!(
            rows[1].ends_with("|SELECT $1::int + 1|{integer}|f|2|0|t"),
            "{rows:?}"
        );
        c.batch_execute("EXECUTE q ('a', 1)").await.unwrap();
        assert_eq!(
            text_rows(
                &c,
                "SELECT generic_plans FROM pg_prepared_statements WHERE name = 'q'"
            )
            .await,
            ["1"]
        );
        assert_eq!(
            text_rows(&other, "SELECT count(*) FROM pg_prepared_statements").await,
            ["0"]
        );
        c.batch_execute("DEALLOCATE q").await.unwrap();
        assert_eq!(
            text_rows(
                &c,
                "SELECT count(*) FROM pg_prepared_statements WHERE from_sql"
            )
            .await,
            ["0"]
        );
    });
}

/// The same text sent to Parse again gets the plan of the moment: the plans a
/// connection keeps by text give way to DDL as a new Parse would (a column added, a
/// table dropped and made again with other columns, the table of a block rolled back);
/// DISCARD PLANS forgets them, in a block too.
#[test]
fn plans_kept_by_text_give_way_to_ddl() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, a BIGINT); INSERT INTO t VALUES (1, 10)",
        )
        .await
        .unwrap();
        let select = "SELECT * FROM t WHERE id = $1";
        for _ in 0..2 {
            let rows = c.query(select, &[&1i64]).await.unwrap();
            assert_eq!((rows[0].len(), rows[0].get::<_, i64>(1)), (2, 10));
        }
        c.batch_execute("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'")
            .await
            .unwrap();
        let rows = c.query(select, &[&1i64]).await.unwrap();
        assert_eq!((rows[0].len(), rows[0].get::<_, &str>(2)), (3, "x"));
        let insert = "INSERT INTO t VALUES ($1, $2)";
        c.execute(insert, &[&2i64, &20i64]).await.unwrap();
        c.batch_execute(
            "DROP TABLE t; CREATE TABLE t (id TEXT PRIMARY KEY, a TEXT);
             INSERT INTO t VALUES ('k', 'v')",
        )
        .await
        .unwrap();
        let rows = c.query("SELECT * FROM t", &[]).await.unwrap();
        assert_eq!(rows[0].get::<_, &str>(1), "v");
        c.execute(insert, &[&"l", &"w"]).await.unwrap();
        c.batch_execute("BEGIN; CREATE TABLE u (id BIGINT PRIMARY KEY)")
            .await
            .unwrap();
        assert!(c.query("SELECT * FROM u", &[]).await.unwrap().is_empty());
        c.batch_execute("DISCARD PLANS").await.unwrap();
        assert!(c.query("SELECT * FROM u", &[]).await.unwrap().is_empty());
        c.batch_execute("ROLLBACK").await.unwrap();
        let e = c.query("SELECT * FROM u", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "42P01", "{e}");
        let rows = c.query("SELECT count(*) FROM t", &[]).await.unwrap();
        assert_eq!(rows[0].get::<_, i64>(0), 2);
    });
}

/// What a pool does to a connection it takes back (asyncpg: `pg_advisory_unlock_all()`,
/// `CLOSE ALL`, `UNLISTEN *`, `RESET ALL`; others `DISCARD ALL`), and who the session is.
#[test]
fn sessions_reset_as_pools_reset_them_and_know_who_they_are() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        let row = c
            .query_one("SELECT current_user, session_user, current_database()", &[])
            .await
            .unwrap();
        let who: (String, String, String) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(who, ("pmdb".into(), "pmdb".into(), "pmdb".into()));
        c.batch_execute(
            "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;
             CREATE SEQUENCE s; SET application_name = 'app'",
        )
        .await
        .unwrap();
        let one = c.prepare("SELECT 1::bigint").await.unwrap();
        c.query_one("SELECT nextval('s')", &[]).await.unwrap();
        c.batch_execute("BEGIN; DECLARE k CURSOR FOR SELECT 1")
            .await
            .unwrap();
        let e = c.simple_query("DISCARD ALL").await.unwrap_err();
        assert_eq!(sqlstate(&e), "25001", "{e}");
        c.batch_execute("ROLLBACK; DECLARE h CURSOR WITH HOLD FOR SELECT 1")
            .await
            .unwrap();
        c.simple_query("DISCARD ALL").await.unwrap();
        // No statement prepared, no cursor, no sequence value handed out, no setting.
        let e = c.query_one(&one, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "26000", "{e}");
        let e = c.simple_query("FETCH NEXT FROM h").await.unwrap_err();
        assert_eq!(sqlstate(&e), "34000", "{e}");
        let e = c.query_one("SELECT currval('s')", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "55000", "{e}");
        let name = c.query_one("SHOW application_name", &[]).await.unwrap();
        assert_eq!(name.get::<_, String>(0), "");
    });
}

/// The rows of `sql` through the simple protocol, each its columns' text joined by '|'
/// (a NULL as nothing).
async fn text_rows(c: &Client, sql: &str) -> Vec<String> {
    c.simple_query(sql)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .collect()
}

/// `information_schema.columns` as PostgreSQL 15 answers it (the expected rows are its
/// answers for the same DDL, but for a default shown as it was written, `'x'` where
/// PostgreSQL shows `'x'::character varying`, and view columns not updatable, as pmdb's
/// views are not): the standard's type names, lengths, precisions and scales,
/// primary-key columns not nullable, defaults and identities, view columns too; and
/// `information_schema.tables`, `.views` and `.sequences` beside it.
#[test]
fn information_schema_speaks_postgresqls_types() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE ist (b INTEGER PRIMARY KEY, d NUMERIC(10,2), g CHAR(5), h VARCHAR(7),
               i TEXT, k TIME, m TIMESTAMPTZ, f DOUBLE PRECISION, t SERIAL,
               u INT GENERATED ALWAYS AS IDENTITY, v VARCHAR(3) NOT NULL DEFAULT 'x', w NUMERIC);
             CREATE VIEW isv AS SELECT b, h FROM ist",
        )
        .await
        .unwrap();
        let shown = text_rows(
            &c,
            "SELECT c.table_name, column_name, ordinal_position, column_default, is_nullable,
                   data_type, character_maximum_length, character_octet_length,
                   numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision,
                   udt_name, is_identity, identity_generation, identity_start, is_updatable
                 FROM information_schema.columns c
                 WHERE c.table_name IN ('ist', 'isv')
                 ORDER BY c.table_name, ordinal_position",
        )
        .await;
        assert_eq!(
            shown,
            [
                "ist|b|1||NO|integer|||32|2|0||int4|NO|||YES",
                "ist|d|2||YES|numeric|||10|10|2||numeric|NO|||YES",
                "ist|g|3||YES|character|5|20|||||bpchar|NO|||YES",
                "ist|h|4||YES|character varying|7|28|||||varchar|NO|||YES",
                "ist|i|5||YES|text||1073741824|||||text|NO|||YES",
                "ist|k|6||YES|time without time zone||||||6|time|NO|||YES",
                "ist|m|7||YES|timestamp with time zone||||||6|timestamptz|NO|||YES",
                "ist|f|8||YES|double precision|||53|2|||float8|NO|||YES",
                "ist|t|9|nextval('ist_t_seq'::regclass)|NO|integer|||32|2|0||int4|NO|||YES",
                "ist|u|10||NO|integer|||32|2|0||int4|YES|ALWAYS|1|YES",
                "ist|v|11|'x'|NO|character varying|3|12|||||varchar|NO|||YES",
                "ist|w|12||YES|numeric||||10|||numeric|NO|||YES",
                "isv|b|1||YES|integer|||32|2|0||int4|NO|||NO",
                "isv|h|2||YES|character varying|7|28|||||varchar|NO|||NO",
            ]
        );
        // Unaliased, the relation is still `columns` to the rest of the query.
        let row = c
            .query_one(
                "SELECT columns.data_type FROM information_schema.columns \
                 WHERE columns.table_name = 'ist' AND columns.column_name = 'k'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "time without time zone");
        let kinds: Vec<(String, String, String)> = c
            .query(
                "SELECT table_name, table_type, is_insertable_into FROM information_schema.tables \
                 WHERE table_schema = 'public' ORDER BY table_name",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let kind = |t: &str, k: &str, i: &str| (t.to_owned(), k.to_owned(), i.to_owned());
        assert_eq!(
            kinds,
            [kind("ist", "BASE TABLE", "YES"), kind("isv", "VIEW", "NO")]
        );
        let definition = c
            .query_one(
                "SELECT view_definition FROM information_schema.views WHERE table_name = 'isv'",
                &[],
            )
            .await
            .unwrap();
        assert!(
            definition.get::<_, String>(0).contains("FROM ist"),
            "{definition:?}"
        );
        // PostgreSQL 15's rows for the same sequences: a serial column's is listed, an
        // identity column's is not.
        c.batch_execute(
            "CREATE SEQUENCE iss AS smallint INCREMENT BY 5 MINVALUE 3 MAXVALUE 300 START 10 CYCLE",
        )
        .await
        .unwrap();
        let sequences = text_rows(
            &c,
            "SELECT sequence_catalog, sequence_schema, sequence_name, data_type,
                   numeric_precision, numeric_precision_radix, numeric_scale, start_value,
                   minimum_value, maximum_value, increment, cycle_option
                 FROM information_schema.sequences ORDER BY sequence_name",
        )
        .await;
        assert_eq!(
            sequences,
            [
                "pmdb|public|iss|smallint|16|2|0|10|3|300|5|YES",
                "pmdb|public|ist_t_seq|integer|32|2|0|1|1|2147483647|1|NO",
            ]
        );
    });
}

/// A parameter's type is what the statement makes of it, as PostgreSQL describes it:
/// cast (`$1::int`), a LIMIT, an interval; drivers that encode by the described type
/// (asyncpg) send their values so.
#[test]
fn parameters_are_described_by_what_the_statement_makes_of_them() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        let described = |sql: &'static str| {
            let c = &c;
            async move {
                let p = c.prepare(sql).await.unwrap();
                p.params().to_vec()
            }
        };
        assert_eq!(described("SELECT $1::int + 1").await, [Type::INT4]);
        assert_eq!(described("SELECT CAST($1 AS BIGINT)").await, [Type::INT8]);
        assert_eq!(
            described("SELECT * FROM (VALUES (1), (2)) v(x) LIMIT $1 OFFSET $2").await,
            [Type::INT8, Type::INT8]
        );
        assert_eq!(described("SELECT $1::interval").await, [Type::INTERVAL]);
        let row = c.query_one("SELECT $1::int", &[&41i32]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 41);
        // A time travels in binary both ways as microseconds since midnight.
        assert_eq!(described("SELECT $1::time").await, [Type::TIME]);
        let at = chrono::NaiveTime::from_hms_micro_opt(23, 59, 58, 999_999).unwrap();
        let row = c
            .query_one("SELECT $1::time, $1::time + INTERVAL '1 second'", &[&at])
            .await
            .unwrap();
        assert_eq!(row.get::<_, chrono::NaiveTime>(0), at);
        assert_eq!(
            row.get::<_, chrono::NaiveTime>(1).to_string(),
            "23:59:59.999999"
        );
    });
}

/// `pg_stat_activity`, as pools and test harnesses read it: one row per connection, its
/// `pid` the one `pg_backend_pid()` gives, its state following its transaction, its
/// statement the last one it ran; a connection that closes leaves it.
#[test]
fn pg_stat_activity_shows_each_connection() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let (a, b) = (s.connect().await, s.connect().await);
        let a_pid: i64 = a
            .query_one("SELECT pg_backend_pid()::bigint", &[])
            .await
            .unwrap()
            .get(0);
        a.batch_execute("BEGIN; SELECT 42").await.unwrap();
        let idle = "SELECT pid::bigint, query FROM pg_stat_activity \
                    WHERE state = 'idle in transaction' AND pid != pg_backend_pid() \
                    AND usename = current_user AND datname = current_database()";
        let rows = b.query(idle, &[]).await.unwrap();
        let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got, [(a_pid, "BEGIN; SELECT 42".to_owned())]);
        let me = b
            .query_one(
                "SELECT state, query, backend_start <= query_start FROM pg_stat_activity \
                 WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(me.get::<_, String>(0), "active");
        assert!(me.get::<_, String>(1).contains("pg_backend_pid"));
        assert!(me.get::<_, bool>(2));
        a.batch_execute("COMMIT").await.unwrap();
        let state: String = b
            .query_one(
                "SELECT state FROM pg_stat_activity WHERE pid = $1::bigint",
                &[&a_pid],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(state, "idle");
        drop(a);
        let mut left = false;
        for _ in 0..100 {
            let n: i64 = b
                .query_one("SELECT count(*) FROM pg_stat_activity", &[])
                .await
                .unwrap()
                .get(0);
            if n == 1 {
                left = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(left, "a closed connection leaves pg_stat_activity");
    });
}

/// Comments as reflection reads them: `obj_description`, `col_description`, and
/// `pg_description` joined with `pg_constraint`.
#[test]
fn comments_are_read_as_postgresql_shows_them() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT CONSTRAINT v_short CHECK (length(v) < 9));
             COMMENT ON TABLE t IS 'the table';
             COMMENT ON COLUMN t.v IS 'a column';
             COMMENT ON CONSTRAINT v_short ON t IS 'short'",
        )
        .await
        .unwrap();
        let row = c
            .query_one(
                "SELECT obj_description('t'::regclass, 'pg_class'), \
                        col_description('t'::regclass, 2), col_description('t'::regclass, 1)",
                &[],
            )
            .await
            .unwrap();
        let got: (String, String, Option<String>) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(got, ("the table".into(), "a column".into(), None));
        let rows = c
            .query(
                "SELECT con.conname, d.description FROM pg_constraint con \
                 JOIN pg_description d ON d.objoid = con.oid ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got, [("v_short".to_owned(), "short".to_owned())]);
    });
}

#[test]
fn psql_describes_checks_foreign_keys_and_the_keys_that_reference_a_table() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE par (a INT, b INT, PRIMARY KEY (b, a));
             CREATE TABLE ch (id INT PRIMARY KEY, pa INT, pb INT CHECK (pb > 0),
                              FOREIGN KEY (pb, pa) REFERENCES par (b, a));
             CREATE TABLE lone (x INT)",
        )
        .await
        .unwrap();
        // psql lists checks only when relchecks says there are some, and foreign keys
        // (PostgreSQL's are triggers) only when relhastriggers is set.
        let flags = c
            .query(
                "SELECT c.relname, c.relchecks, c.relhastriggers FROM pg_catalog.pg_class c
                 WHERE c.relname IN ('par', 'ch', 'lone') ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        let flags: Vec<(String, i64, bool)> = flags
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        assert_eq!(
            flags,
            [
                ("ch".into(), 1, true),
                ("lone".into(), 0, false),
                ("par".into(), 0, true)
            ]
        );
        let check = c
            .query_one(
                "SELECT pg_catalog.pg_get_constraintdef(r.oid, true), \
                        pg_catalog.pg_get_constraintdef(r.oid) \
                 FROM pg_catalog.pg_constraint r \
                 WHERE r.conrelid = 'ch'::regclass AND r.contype = 'c'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(check.get::<_, String>(0), "CHECK (pb > 0)");
        assert_eq!(check.get::<_, String>(1), "CHECK ((pb > 0))");
        // "Referenced by", as psql 15 asks it: the oid written as text, unioned with
        // the partition ancestors (none: pmdb has no partitions).
        let oid: u32 = c
            .query_one("SELECT 'par'::regclass::oid", &[])
            .await
            .unwrap()
            .get(0);
        let referencing = c
            .query(
                &format!(
                    "SELECT conname, conrelid::pg_catalog.regclass AS ontable
                     FROM pg_catalog.pg_constraint c
                     WHERE confrelid IN (SELECT pg_catalog.pg_partition_ancestors('{oid}')
                                         UNION ALL VALUES ('{oid}'::pg_catalog.regclass))
                       AND contype = 'f' AND conparentid = 0
                     ORDER BY conname"
                ),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(referencing.len(), 1);
        assert_eq!(referencing[0].get::<_, String>(0), "ch_pb_pa_fkey");
    });
}

#[test]
fn catalog_functions_quote_names_that_need_it() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            r#"CREATE TABLE "Par" ("A b" INT PRIMARY KEY);
               CREATE TABLE "(2)" (x INT GENERATED BY DEFAULT AS IDENTITY, y INT REFERENCES "Par")"#,
        )
        .await
        .unwrap();
        let row = c
            .query_one(
                r#"SELECT pg_get_indexdef('"Par_pkey"'::regclass),
                          (SELECT pg_get_constraintdef(oid) FROM pg_constraint
                           WHERE conrelid = '"(2)"'::regclass AND contype = 'f'),
                          CAST(CAST('"(2)"'::regclass AS oid) AS regclass)::text,
                          pg_get_serial_sequence(CAST(CAST('"(2)"'::regclass AS oid) AS regclass)::text, 'x')"#,
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            row.get::<_, String>(0),
            r#"CREATE UNIQUE INDEX "Par_pkey" ON public."Par" USING btree ("A b")"#
        );
        assert_eq!(
            row.get::<_, String>(1),
            r#"FOREIGN KEY (y) REFERENCES "Par"("A b")"#
        );
        assert_eq!(row.get::<_, String>(2), r#""(2)""#);
        assert!(row.get::<_, Option<String>>(3).is_some());
    });
}

#[test]
fn timestamps_beyond_nanoseconds_reach_go_out_whole() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        // Years a nanosecond count cannot hold (before 1677, after 2262), in both forms.
        c.batch_execute(
            "CREATE TABLE far (id INT PRIMARY KEY, at TIMESTAMP);
             INSERT INTO far VALUES (1, '0001-01-01 00:00:00'), (2, '1500-06-01 12:30:00.25'),
                                    (3, '9999-12-31 23:59:59.999999')",
        )
        .await
        .unwrap();
        let text: Vec<String> = c
            .simple_query("SELECT at FROM far ORDER BY id")
            .await
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(
            text,
            [
                "0001-01-01 00:00:00",
                "1500-06-01 12:30:00.25",
                "9999-12-31 23:59:59.999999"
            ]
        );
        let binary: Vec<chrono::NaiveDateTime> = c
            .query("SELECT at FROM far ORDER BY id", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let shown: Vec<String> = binary
            .iter()
            .map(|t| t.format("%Y-%m-%d %H:%M:%S%.f").to_string())
            .collect();
        assert_eq!(
            shown,
            [
                "0001-01-01 00:00:00",
                "1500-06-01 12:30:00.250",
                "9999-12-31 23:59:59.999999"
            ]
        );
    });
}

/// The system catalog as psql and the drivers read it follows the session's snapshot of
/// the catalog: another session's DDL shows once it commits, and what it drops stays
/// until then, as in PostgreSQL.
#[test]
fn the_system_catalog_shows_another_sessions_ddl_once_it_commits() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let ddl = server.connect().await;
        let other = server.connect().await;
        ddl.batch_execute("CREATE TABLE kept (id INT PRIMARY KEY)")
            .await
            .unwrap();
        ddl.batch_execute(
            "BEGIN; CREATE TABLE fresh (id INT PRIMARY KEY); DROP TABLE kept; \
             CREATE VIEW seen AS SELECT 1 AS one",
        )
        .await
        .unwrap();
        let relations = async |c: &Client| -> (Vec<String>, Vec<String>) {
            let names = async |sql: &str| -> Vec<String> {
                let mut names: Vec<String> = c
                    .query(sql, &[])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                names.sort();
                names
            };
            (
                names("SELECT relname FROM pg_catalog.pg_class WHERE relkind IN ('r', 'v')")
                    .await,
                names("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
                    .await,
            )
        };
        // The catalog's functions read it as the session calling them does.
        let known = async |c: &Client| -> (bool, bool) {
            let row = c
                .query_one(
                    "SELECT 'fresh'::regclass IS NOT NULL, 'kept'::regclass IS NOT NULL",
                    &[],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        };
        let changed = vec!["fresh".to_owned(), "seen".to_owned()];
        let committed = vec!["kept".to_owned()];
        assert_eq!(relations(&ddl).await, (changed.clone(), changed.clone()));
        assert_eq!(relations(&other).await, (committed.clone(), committed));
        assert_eq!(known(&ddl).await, (true, false));
        assert_eq!(known(&other).await, (false, true));
        ddl.batch_execute("COMMIT").await.unwrap();
        assert_eq!(relations(&other).await, (changed.clone(), changed));
        assert_eq!(known(&other).await, (true, false));
    });
}

/// A select list of no column (`SELECT FROM t WHERE … FOR UPDATE`, `SELECT;`) returns
/// rows with no column in them, described as PostgreSQL describes them (a
/// RowDescription of no field, not NoData) in both protocols, and locks what it reads.
#[test]
fn queries_of_no_column_return_their_rows() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);
             INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        )
        .await
        .unwrap();
        let simple = c.simple_query("SELECT FROM t WHERE id > 1").await.unwrap();
        let rows: Vec<usize> = simple
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(r.len()),
                _ => None,
            })
            .collect();
        assert_eq!(rows, [0, 0]);
        assert!(matches!(
            simple.last(),
            Some(SimpleQueryMessage::CommandComplete(2))
        ));
        let one = c.query("SELECT", &[]).await.unwrap();
        assert_eq!(one.len(), 1);
        assert!(one[0].is_empty());
        let stmt = c
            .prepare("SELECT FROM t WHERE id >= $1 FOR UPDATE")
            .await
            .unwrap();
        assert!(stmt.columns().is_empty());
        assert_eq!(stmt.params(), [Type::INT4]);
        assert_eq!(c.query(&stmt, &[&2i32]).await.unwrap().len(), 2);
        // By hand: Parse, Describe the statement, Bind, Describe the portal, Execute.
        let mut raw = RawClient::connect(s.port()).await;
        let mut bind = b"\0\0\0\0\0\x01".to_vec();
        bind.extend_from_slice(&1i32.to_be_bytes());
        bind.extend_from_slice(b"2\0\0");
        let messages = [
            common::message(b'P', b"\0SELECT FROM t WHERE id >= $1\0\0\0"),
            common::message(b'D', b"S\0"),
            common::message(b'B', &bind),
            common::message(b'D', b"P\0"),
            common::message(b'E', b"\0\0\0\0\0"),
            common::message(b'S', b""),
        ]
        .concat();
        raw.send(&messages).await;
        assert_eq!(raw.ready().await, b'I');
        assert_eq!(raw.kinds, b"1tT2TDDCZ", "{:?}", raw.error);
        assert_eq!(raw.rows, [Vec::<Option<String>>::new(), Vec::new()]);
        let exists = c
            .query_one("SELECT EXISTS (SELECT FROM t WHERE id = 3)", &[])
            .await
            .unwrap();
        assert!(exists.get::<_, bool>(0));

        // The rows it returned are locked to the end of the block.
        let mut holder = s.connect().await;
        let other = s.connect().await;
        let block = holder.transaction().await.unwrap();
        block
            .query("SELECT FROM t WHERE id = 1 FOR UPDATE", &[])
            .await
            .unwrap();
        other.batch_execute("SET lock_timeout = 200").await.unwrap();
        let e = other
            .execute("UPDATE t SET v = 'z' WHERE id = 1", &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "55P03");
        assert_eq!(
            other
                .execute("UPDATE t SET v = 'y' WHERE id = 2", &[])
                .await
                .unwrap(),
            1
        );
        block.rollback().await.unwrap();
    });
}

/// CSV as PostgreSQL reads and writes it with its options: QUOTE and ESCAPE, a quoted
/// field that goes on over lines (and over CopyData pieces), FORCE_NOT_NULL and
/// FORCE_NULL in, FORCE_QUOTE out (never the header), an unterminated quote refused.
#[test]
fn csv_copies_take_quote_escape_and_force_options() {
    use futures::{SinkExt, TryStreamExt};
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE cq (id INT PRIMARY KEY, a TEXT, b TEXT)")
            .await
            .unwrap();
        let sink = c.copy_in("COPY cq FROM STDIN (FORMAT csv)").await.unwrap();
        futures::pin_mut!(sink);
        for piece in ["1,\"two\nli", "nes\",x\n2,\"q\"\"u\",\n3,,\"\"\n"] {
            sink.send(bytes::Bytes::from(piece)).await.unwrap();
        }
        assert_eq!(sink.finish().await.unwrap(), 3);
        let sink = c
            .copy_in(
                "COPY cq FROM STDIN (FORMAT csv, DELIMITER '|', QUOTE '*', ESCAPE '!', \
                 NULL 'n-u-l-l', FORCE_NOT_NULL (a), FORCE_NULL (b))",
            )
            .await
            .unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(
            b"4|*!**|*n-u-l-l*\n5|n-u-l-l|*a!!b*\n",
        ))
        .await
        .unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
        let rows = c
            .query("SELECT id, a, b FROM cq ORDER BY id", &[])
            .await
            .unwrap();
        let got: Vec<(i32, Option<String>, Option<String>)> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let some = |v: &str| Some(v.to_owned());
        assert_eq!(
            got,
            [
                (1, some("two\nlines"), some("x")),
                (2, some("q\"u"), None),
                (3, None, some("")),
                (4, some("*"), None),
                (5, some("n-u-l-l"), some("a!b")),
            ]
        );
        let stream = c
            .copy_out(
                "COPY cq TO STDOUT (FORMAT csv, HEADER, DELIMITER '|', QUOTE '*', ESCAPE '!', \
                 NULL 'n-u-l-l', FORCE_QUOTE (a))",
            )
            .await
            .unwrap();
        let parts: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
        assert_eq!(
            String::from_utf8(parts.concat()).unwrap(),
            "id|a|b\n1|*two\nlines*|x\n2|*q\"u*|n-u-l-l\n3|n-u-l-l|\n\
             4|*!**|n-u-l-l\n5|*n-u-l-l*|a!b\n"
        );
        let sink = c.copy_in("COPY cq FROM STDIN (FORMAT csv)").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"6,\"open\n"))
            .await
            .unwrap();
        let e = sink.finish().await.unwrap_err();
        assert_eq!(sqlstate(&e), "22P04", "{e}");
        for (sql, state) in [
            ("COPY cq FROM STDIN (FORMAT csv, FORCE_QUOTE (a))", "0A000"),
            ("COPY cq FROM STDIN (QUOTE '*')", "0A000"),
            ("COPY cq FROM STDIN (FORMAT csv, FORCE_NULL (zz))", "42P10"),
        ] {
            // Each on a connection of its own: tokio-postgres's failed COPY leaves its
            // connection waiting.
            let c = s.connect().await;
            let Err(e) = c.copy_in::<_, bytes::Bytes>(sql).await else {
                panic!("{sql}: accepted");
            };
            assert_eq!(sqlstate(&e), state, "{sql}: {e}");
        }
        let c = s.connect().await;
        let Err(e) = c
            .copy_out("COPY cq TO STDOUT (FORMAT csv, FORCE_QUOTE (zz))")
            .await
        else {
            panic!("a FORCE_QUOTE column the COPY does not write");
        };
        assert_eq!(sqlstate(&e), "42P10", "{e}");
    });
}

/// `search_path` as PostgreSQL takes it: unqualified names are looked up in its schemas
/// in order and made in the first that exists (3F000 with none), `current_schema()`,
/// `current_schemas(true)`,
/// `pg_table_is_visible`, `nextval` and `::regclass` follow it, a plan kept for a text
/// is made again under another path, and `SET LOCAL` ends with its block.
#[test]
fn the_search_path_resolves_unqualified_names() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE SCHEMA app;
             CREATE TABLE t (v TEXT);
             INSERT INTO t VALUES ('public');
             SET search_path = app, public;
             CREATE TABLE t (v TEXT);
             CREATE SEQUENCE s START 7;
             INSERT INTO t VALUES ('app');
             CREATE TABLE only_public_before (x INT)",
        )
        .await
        .unwrap();
        let one = |sql: &'static str| {
            let c = &c;
            async move {
                let row = c.query_one(sql, &[]).await.unwrap();
                row.get::<_, Option<String>>(0)
            }
        };
        let value = "SELECT v FROM t";
        assert_eq!(one(value).await.as_deref(), Some("app"));
        assert_eq!(
            one("SELECT v FROM public.t").await.as_deref(),
            Some("public")
        );
        assert_eq!(one("SELECT current_schema()").await.as_deref(), Some("app"));
        assert_eq!(
            one("SELECT current_schemas(true)::text").await.as_deref(),
            Some("{pg_catalog,app,public}")
        );
        assert_eq!(
            one(
                "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relname = 'only_public_before'"
            )
            .await
            .as_deref(),
            Some("app")
        );
        let visible = c
            .query(
                "SELECT n.nspname, pg_table_is_visible(c.oid) FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 't' \
                 ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        let visible: Vec<(String, bool)> = visible.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(visible, [("app".into(), true), ("public".into(), false)]);
        let next: i64 = c
            .query_one("SELECT nextval('s')", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(next, 7);
        // The same text, prepared again under another path, finds the other table.
        c.batch_execute("SET search_path = public").await.unwrap();
        assert_eq!(one(value).await.as_deref(), Some("public"));
        // SET LOCAL lasts until its block ends.
        c.batch_execute("BEGIN; SET LOCAL search_path = app")
            .await
            .unwrap();
        assert_eq!(one(value).await.as_deref(), Some("app"));
        c.batch_execute("COMMIT").await.unwrap();
        assert_eq!(one(value).await.as_deref(), Some("public"));
        // A path of no schema that exists: names are missing, nothing can be made.
        c.batch_execute("SET search_path = nowhere").await.unwrap();
        let e = c.query(value, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "42P01", "{e}");
        let e = c.batch_execute("CREATE TABLE u (x INT)").await.unwrap_err();
        assert_eq!(sqlstate(&e), "3F000", "{e}");
        assert_eq!(one("SELECT current_schema()").await, None);
        // WITH names and table functions are no relations of the path.
        let rows = c
            .query(
                "WITH t AS (SELECT 'cte' AS v) SELECT v FROM t \
                 UNION ALL SELECT value::text FROM generate_series(1, 1)",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(rows.len(), 2);
    });
}

/// CREATE DATABASE makes a database of its own, which a client names to connect to it:
/// its own tables and catalog, `current_database()`, listed in `pg_database` of every
/// database; the names PostgreSQL and pmdb always have, a name made twice and a block
/// are refused as PostgreSQL refuses them; DROP DATABASE waits for no one (55006 while
/// a connection is on it) and then removes it.
#[test]
fn databases_are_made_connected_to_and_dropped() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let main = s.connect().await;
        main.batch_execute("CREATE TABLE only_main (x INT)")
            .await
            .unwrap();
        main.batch_execute("CREATE DATABASE app").await.unwrap();
        let app = s.connect_to("app").await;
        let name: String = app
            .query_one("SELECT current_database()", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(name, "app");
        let e = app.query("SELECT * FROM only_main", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "42P01", "{e}");
        app.batch_execute(
            "CREATE TABLE only_app (id SERIAL PRIMARY KEY, v TEXT);
             INSERT INTO only_app (v) VALUES ('a'), ('b')",
        )
        .await
        .unwrap();
        let n: i64 = app
            .query_one("SELECT count(*) FROM only_app", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);
        let e = main.query("SELECT * FROM only_app", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "42P01", "{e}");
        for c in [&main, &app] {
            let names: Vec<String> = c
                .query("SELECT datname FROM pg_database ORDER BY 1", &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            assert_eq!(names, ["app", "pmdb"]);
        }
        for (sql, state) in [
            ("CREATE DATABASE app", "42P04"),
            ("CREATE DATABASE postgres", "42P04"),
            ("DROP DATABASE app", "55006"),
            ("DROP DATABASE nowhere", "3D000"),
            ("DROP DATABASE pmdb", "0A000"),
            ("CREATE DATABASE latin ENCODING 'LATIN1'", "0A000"),
            (
                "CREATE DATABASE sorted WITH LC_COLLATE = 'en_US.UTF-8'",
                "0A000",
            ),
        ] {
            let e = main.batch_execute(sql).await.unwrap_err();
            assert_eq!(sqlstate(&e), state, "{sql}: {e}");
        }
        let e = app.batch_execute("DROP DATABASE app").await.unwrap_err();
        assert_eq!(sqlstate(&e), "55006", "{e}");
        main.batch_execute("DROP DATABASE IF EXISTS nowhere")
            .await
            .unwrap();
        let e = main
            .batch_execute("BEGIN; CREATE DATABASE other")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "25001", "{e}");
        main.batch_execute("ROLLBACK").await.unwrap();
        // Options that say what a pmdb database is, as Rails writes them.
        main.batch_execute("CREATE DATABASE rails_dev ENCODING = 'utf8'")
            .await
            .unwrap();
        main.batch_execute(
            "CREATE DATABASE app_test WITH OWNER = pmdb TEMPLATE template0 LC_COLLATE 'C' \
             CONNECTION LIMIT = -1",
        )
        .await
        .unwrap();
        let made = main
            .query(
                "SELECT datname FROM pg_database WHERE datname IN ('rails_dev', 'app_test')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(made.len(), 2);
        for name in ["rails_dev", "app_test"] {
            main.batch_execute(&format!("DROP DATABASE {name}"))
                .await
                .unwrap();
        }
        // Prepared through the extended protocol too (psycopg's way).
        main.execute("CREATE DATABASE \"Other One\"", &[])
            .await
            .unwrap();
        let other = s.connect_to("Other One").await;
        let e = other
            .query("SELECT * FROM only_app", &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "42P01", "{e}");
        drop(other);
        drop(app);
        // The connections' ends reach the server after their clients let go.
        let mut dropped = false;
        for _ in 0..100 {
            match main.batch_execute("DROP DATABASE app").await {
                Ok(()) => {
                    dropped = true;
                    break;
                }
                Err(e) if sqlstate(&e) == "55006" => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(dropped, "DROP DATABASE still found the closed connection");
        let names: Vec<String> = main
            .query("SELECT datname FROM pg_database ORDER BY 1", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(names, ["Other One", "pmdb"]);
        // A name no database was made with is the server's own, as before.
        let again = s.connect_to("app").await;
        again.query("SELECT * FROM only_main", &[]).await.unwrap();
    });
}

/// `set_config` sets what SET sets, checked alike, from the end of its statement (pg_dump's
/// scripts empty the search path with it): local to the block when asked, refused for a
/// value SET refuses, and undone with a statement that fails.
#[test]
fn set_config_changes_settings_as_set_does() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE SCHEMA app; CREATE TABLE app.t (v INT); INSERT INTO app.t VALUES (7)",
        )
        .await
        .unwrap();
        let shown = |sql: &'static str| {
            let c = &c;
            async move {
                let row = c.query_one(sql, &[]).await.unwrap();
                row.get::<_, String>(0)
            }
        };
        assert_eq!(
            shown("SELECT set_config('search_path', 'app', false)").await,
            "app"
        );
        assert_eq!(shown("SHOW search_path").await, "app");
        let v: i32 = c.query_one("SELECT v FROM t", &[]).await.unwrap().get(0);
        assert_eq!(v, 7);
        c.batch_execute("BEGIN").await.unwrap();
        assert_eq!(
            shown("SELECT set_config('statement_timeout', '5s', true)").await,
            "5s"
        );
        assert_eq!(shown("SHOW statement_timeout").await, "5s");
        c.batch_execute("COMMIT").await.unwrap();
        assert_eq!(shown("SHOW statement_timeout").await, "0");
        let e = c
            .query("SELECT set_config('TimeZone', 'Europe/Paris', false)", &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "0A000", "{e}");
        let e = c
            .query(
                "SELECT set_config('application_name', 'x', false), 1 / 0",
                &[],
            )
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "22012", "{e}");
        assert_eq!(shown("SHOW application_name").await, "");
        assert_eq!(
            shown("SELECT set_config('search_path', '', false)").await,
            ""
        );
        let e = c.batch_execute("CREATE TABLE u (x INT)").await.unwrap_err();
        assert_eq!(sqlstate(&e), "3F000", "{e}");
    });
}

/// `pg_indexes` lists each index with PostgreSQL's CREATE INDEX text (the rows are
/// PostgreSQL 15's for the same tables).
#[test]
fn pg_indexes_lists_every_index() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute(
            "CREATE TABLE pi (id INT PRIMARY KEY, a INT, b TEXT UNIQUE);
             CREATE INDEX pi_a ON pi (a);
             CREATE SCHEMA s2;
             CREATE TABLE s2.\"Q t\" (x INT PRIMARY KEY)",
        )
        .await
        .unwrap();
        let rows = c
            .query(
                "SELECT schemaname, tablename, indexname, tablespace, indexdef FROM pg_indexes \
                 WHERE schemaname IN ('public', 's2') ORDER BY indexname",
                &[],
            )
            .await
            .unwrap();
        let got: Vec<String> = rows
            .iter()
            .map(|r| {
                let tablespace: Option<String> = r.get(3);
                assert_eq!(tablespace, None);
                format!(
                    "{}|{}|{}|{}",
                    r.get::<_, String>(0),
                    r.get::<_, String>(1),
                    r.get::<_, String>(2),
                    r.get::<_, String>(4)
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "s2|Q t|Q t_pkey|CREATE UNIQUE INDEX \"Q t_pkey\" ON s2.\"Q t\" USING btree (x)",
                "public|pi|pi_a|CREATE INDEX pi_a ON public.pi USING btree (a)",
                "public|pi|pi_b_key|CREATE UNIQUE INDEX pi_b_key ON public.pi USING btree (b)",
                "public|pi|pi_pkey|CREATE UNIQUE INDEX pi_pkey ON public.pi USING btree (id)",
            ]
        );
    });
}

/// A chain of operators as deep as pmdb takes runs on a connection's stack, and a deeper
/// one is refused with 54001: such a chain once overflowed the connection's thread and
/// aborted the whole server.
#[test]
fn deep_chains_run_or_are_refused_and_the_server_goes_on() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE dc (a INT PRIMARY KEY); INSERT INTO dc VALUES (7)")
            .await
            .unwrap();
        let terms = pmdb_sql::MAX_STATEMENT_DEPTH / 20;
        let ors = (0..terms)
            .map(|i| format!("a = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let rows = c
            .query(&format!("SELECT a FROM dc WHERE {ors}"), &[])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        let deep = (0..pmdb_sql::MAX_STATEMENT_DEPTH)
            .map(|i| format!("a = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        let e = c
            .simple_query(&format!("SELECT a FROM dc WHERE {deep}"))
            .await
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("54001"), "{e:?}");
        let again = s.connect().await;
        let rows = again.query("SELECT a FROM dc", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
    });
}
