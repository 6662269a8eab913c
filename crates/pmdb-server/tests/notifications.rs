//! LISTEN, UNLISTEN and NOTIFY between connections, as PostgreSQL has them: a
//! notification reaches every connection listening to its channel (the sender's too)
//! with the sender's process id; one sent in a block goes when the block commits and
//! never if it rolls back; a listener inside a block gets it when its block ends;
//! LISTEN in a block takes effect when it commits; UNLISTEN (one channel or `*`) and
//! DISCARD ALL stop it; quoted names keep their case.

mod common;

use std::time::Duration;

use common::{TestServer, sqlstate};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification};

/// A connection whose notifications arrive on the receiver.
async fn listener(server: &TestServer) -> (Client, UnboundedReceiver<Notification>) {
    let config = format!(
        "host=127.0.0.1 port={} user=pmdb password=x dbname=pmdb",
        server.port()
    );
    let (client, mut connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(message)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message {
                let _ = tx.send(n);
            }
        }
    });
    (client, rx)
}

async fn pid(c: &Client) -> i32 {
    c.query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// The next notification, if one comes within a while.
async fn next(rx: &mut UnboundedReceiver<Notification>) -> Option<(i32, String, String)> {
    tokio::time::timeout(Duration::from_millis(300), rx.recv())
        .await
        .ok()
        .flatten()
        .map(|n| {
            (
                n.process_id(),
                n.channel().to_owned(),
                n.payload().to_owned(),
            )
        })
}

#[test]
fn notifications_reach_listeners_when_the_sender_commits() {
    let server = TestServer::trusting();
    server.rt.block_on(async {
        let (a, mut inbox) = listener(&server).await;
        let b = server.connect().await;
        let b_pid = pid(&b).await;
        // Through the extended protocol too (psycopg's `execute`).
        assert_eq!(a.execute("LISTEN jobs", &[]).await.unwrap(), 0);
        a.batch_execute("LISTEN \"Mixed Case\"").await.unwrap();
        b.execute("NOTIFY jobs, 'extended'", &[]).await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "jobs".into(), "extended".into()))
        );

        b.batch_execute("NOTIFY jobs, 'one'").await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "jobs".into(), "one".into()))
        );
        b.batch_execute("NOTIFY \"Mixed Case\"").await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "Mixed Case".into(), String::new()))
        );
        b.batch_execute("NOTIFY other, 'x'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None, "a channel nobody listens to");

        // In a block: sent at COMMIT, never after ROLLBACK.
        b.batch_execute("BEGIN; NOTIFY jobs, 'two'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None);
        b.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "jobs".into(), "two".into()))
        );
        b.batch_execute("BEGIN; NOTIFY jobs, 'lost'; ROLLBACK")
            .await
            .unwrap();
        assert_eq!(next(&mut inbox).await, None);

        // A listener in a block gets it when its block ends.
        a.batch_execute("BEGIN").await.unwrap();
        b.batch_execute("NOTIFY jobs, 'held'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None);
        a.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "jobs".into(), "held".into()))
        );

        // The sender hears itself.
        let a_pid = pid(&a).await;
        a.batch_execute("NOTIFY jobs, 'self'").await.unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((a_pid, "jobs".into(), "self".into()))
        );

        a.batch_execute("UNLISTEN jobs").await.unwrap();
        b.batch_execute("NOTIFY jobs, 'x'; NOTIFY \"Mixed Case\", 'y'")
            .await
            .unwrap();
        assert_eq!(
            next(&mut inbox).await,
            Some((b_pid, "Mixed Case".into(), "y".into()))
        );
        a.batch_execute("UNLISTEN *").await.unwrap();
        b.batch_execute("NOTIFY \"Mixed Case\", 'z'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None);
        // LISTEN in a block that rolls back listens to nothing.
        a.batch_execute("LISTEN jobs; SELECT 1/0")
            .await
            .unwrap_err();
        b.batch_execute("NOTIFY jobs, 'unheard'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None);
        a.batch_execute("LISTEN jobs").await.unwrap();
        a.batch_execute("DISCARD ALL").await.unwrap();
        b.batch_execute("NOTIFY jobs, 'gone'").await.unwrap();
        assert_eq!(next(&mut inbox).await, None);

        b.batch_execute("BEGIN").await.unwrap();
        b.batch_execute("SELECT 1/0").await.unwrap_err();
        let e = b.batch_execute("NOTIFY jobs").await.unwrap_err();
        assert_eq!(sqlstate(&e), "25P02");
        b.batch_execute("ROLLBACK").await.unwrap();
        let e = b
            .batch_execute(&format!("NOTIFY jobs, '{}'", "x".repeat(8000)))
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&e), "22023");
    });
}
