//! What the protocol means beyond single statements, as PostgreSQL has it: the
//! statements of one Query message, or of the extended protocol's messages up to a Sync,
//! commit together or not at all; `statement_timeout`, `lock_timeout` and
//! `idle_in_transaction_session_timeout` are enforced with PostgreSQL's SQLSTATEs;
//! settings changed in a block are kept or undone with it (`SET LOCAL` until its end); a
//! malformed SASL message is refused, never fed to a decoder that would panic.

use std::time::Duration;

use pmdb_server::{Auth, Users};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::Client;

mod common;

use common::{RawClient, TestServer, message, sqlstate, starting};

async fn keys(c: &Client) -> Vec<i32> {
    c.query("SELECT k FROM t ORDER BY k", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn statements_up_to_a_sync_or_in_one_query_commit_together() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE t (k INT PRIMARY KEY)")
            .await
            .unwrap();
        let mut raw = RawClient::connect(s.port()).await;

        // A failure before the Sync undoes what the statements before it did.
        let status = raw
            .extended_then_sync(&[
                "INSERT INTO t VALUES (1)",
                "INSERT INTO t VALUES (2)",
                "INSERT INTO t VALUES (1)",
                "INSERT INTO t VALUES (3)",
            ])
            .await;
        assert_eq!((status, raw.error.as_deref()), ('I', Some("23505")));
        assert_eq!(keys(&c).await, Vec::<i32>::new());

        // Without one, they all commit at the Sync; a statement alone, too.
        raw.extended_then_sync(&["INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)"])
            .await;
        raw.extended_then_sync(&["INSERT INTO t VALUES (3)"]).await;
        assert_eq!(raw.error, None);
        assert_eq!(keys(&c).await, vec![1, 2, 3]);

        // A COMMIT among them commits what came before; a BEGIN makes them a block that
        // stays open after the Sync.
        raw.extended_then_sync(&[
            "INSERT INTO t VALUES (4)",
            "COMMIT",
            "INSERT INTO t VALUES (5)",
            "INSERT INTO t VALUES (5)",
        ])
        .await;
        assert_eq!(raw.error.as_deref(), Some("23505"));
        assert_eq!(keys(&c).await, vec![1, 2, 3, 4]);
        let status = raw
            .extended_then_sync(&[
                "INSERT INTO t VALUES (6)",
                "BEGIN",
                "INSERT INTO t VALUES (7)",
            ])
            .await;
        assert_eq!(status, 'T');
        assert_eq!(keys(&c).await, vec![1, 2, 3, 4]);
        assert_eq!(raw.status_after("ROLLBACK").await, 'I');
        assert_eq!(keys(&c).await, vec![1, 2, 3, 4]);

        // SAVEPOINT needs a block BEGIN opened.
        raw.extended_then_sync(&["INSERT INTO t VALUES (8)", "SAVEPOINT s"])
            .await;
        assert_eq!(raw.error.as_deref(), Some("25P01"));

        // The statements of one Query message, the same.
        let e = c
            .batch_execute("INSERT INTO t VALUES (10); INSERT INTO t VALUES (1)")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "23505");
        c.batch_execute("INSERT INTO t VALUES (11); INSERT INTO t VALUES (12)")
            .await
            .unwrap();
        assert_eq!(keys(&c).await, vec![1, 2, 3, 4, 11, 12]);
    });
}

#[test]
fn statement_and_lock_timeouts_fail_the_statement_and_keep_the_connection() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE t (k INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 1)")
            .await
            .unwrap();
        c.batch_execute("SET statement_timeout = '100ms'")
            .await
            .unwrap();
        let row = c.query_one("SHOW statement_timeout", &[]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), "100ms");
        let slow =
            "SELECT count(*) FROM generate_series(1, 300000) a, generate_series(1, 300000) b";
        let e = tokio::time::timeout(Duration::from_secs(20), c.simple_query(slow))
            .await
            .expect("stopped in time")
            .unwrap_err();
        assert_eq!(sqlstate(&e), "57014", "{e}");
        // Also in a block, which the timeout fails.
        c.batch_execute("BEGIN").await.unwrap();
        let e = c.simple_query(slow).await.unwrap_err();
        assert_eq!(sqlstate(&e), "57014");
        let e = c.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(sqlstate(&e), "25P02");
        c.batch_execute("ROLLBACK; SET statement_timeout = 0")
            .await
            .unwrap();
        let e = c
            .batch_execute("SET lock_timeout = 'soon'")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "22023");

        // A row lock waited for longer than lock_timeout.
        let holder = s.connect().await;
        holder
            .batch_execute("BEGIN; UPDATE t SET v = 2 WHERE k = 1")
            .await
            .unwrap();
        c.batch_execute("SET lock_timeout = 150").await.unwrap();
        for sql in [
            "UPDATE t SET v = 3 WHERE k = 1",
            "SELECT * FROM t WHERE k = 1 FOR UPDATE",
            "DELETE FROM t WHERE v > 0",
        ] {
            let e = c.simple_query(sql).await.unwrap_err();
            assert_eq!(sqlstate(&e), "55P03", "{sql}: {e}");
        }
        holder.batch_execute("COMMIT").await.unwrap();
        c.batch_execute("UPDATE t SET v = 3 WHERE k = 1")
            .await
            .unwrap();
        let row = c.query_one("SELECT v FROM t", &[]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 3);
    });
}

#[test]
fn a_client_idle_in_a_block_too_long_is_disconnected_and_its_block_rolled_back() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        c.batch_execute("CREATE TABLE t (k INT PRIMARY KEY)")
            .await
            .unwrap();
        let idle = s.connect().await;
        // Idle outside a block is no matter.
        idle.batch_execute("SET idle_in_transaction_session_timeout = 200")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        idle.batch_execute("BEGIN; INSERT INTO t VALUES (1)")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        let e = idle.batch_execute("COMMIT").await.unwrap_err();
        assert!(
            idle.is_closed() || sqlstate(&e) == "25P03",
            "the connection goes: {e}"
        );
        assert_eq!(keys(&c).await, Vec::<i32>::new());
    });
}

#[test]
fn a_malformed_sasl_message_is_refused_with_08p01() {
    let mut users = Users::default();
    users.add("ada:lovelace").unwrap();
    let s = TestServer::start(Auth::Scram(users), 16);
    s.rt.block_on(async {
        // Lengths that lie, and a message with no mechanism's name.
        let bodies: [&[u8]; 3] = [
            b"SCRAM-SHA-256\0\0\0\x03\xe8n,,",
            b"SCRAM-SHA-256\0\x7f\xff\xff\xff",
            b"SCRAM-SHA-256",
        ];
        for body in bodies {
            let mut sock = starting(s.port(), "ada").await;
            sock.write_all(&message(b'p', body)).await.unwrap();
            let mut reply = Vec::new();
            tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut reply))
                .await
                .expect("the server answers and closes")
                .unwrap();
            let text = String::from_utf8_lossy(&reply);
            assert!(text.contains("C08P01"), "{text:?}");
        }
        let c = s.try_connect("ada", "lovelace").await.unwrap();
        c.batch_execute("SELECT 1").await.unwrap();
    });
}

#[test]
fn settings_changed_in_a_block_follow_its_end_and_set_local_lasts_until_then() {
    let s = TestServer::trusting();
    s.rt.block_on(async {
        let c = s.connect().await;
        let shown = || async {
            let row = c.query_one("SHOW statement_timeout", &[]).await.unwrap();
            row.get::<_, String>(0)
        };
        // Each Query message, and statement_timeout as SHOW gives it after it.
        let steps = [
            // Outside a block SET LOCAL does nothing.
            ("SET LOCAL statement_timeout = 5000", "0"),
            ("BEGIN; SET LOCAL statement_timeout = 5000", "5s"),
            ("COMMIT", "0"),
            ("BEGIN; SET statement_timeout = 7000; ROLLBACK", "0"),
            (
                "BEGIN; SET statement_timeout = 7000; SET LOCAL statement_timeout = 9000",
                "9s",
            ),
            ("COMMIT", "7s"),
        ];
        for (sql, after) in steps {
            c.batch_execute(sql).await.unwrap();
            assert_eq!(shown().await, after, "after {sql}");
        }
        // A failed block refuses settings too.
        c.batch_execute("BEGIN").await.unwrap();
        assert!(c.batch_execute("SELECT 1 / 0").await.is_err());
        let e = c
            .batch_execute("SET statement_timeout = 1")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "25P02");
        c.batch_execute("ROLLBACK").await.unwrap();
        assert_eq!(shown().await, "7s");
    });
}
