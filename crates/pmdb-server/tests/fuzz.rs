//! A bounded fuzz run of the server's message parsing: after a real start-up, random
//! frontend messages (known and unknown types, lengths that lie, payloads of random
//! bytes) go to the server, which must answer or close that connection, never hang or
//! fall over: a new client is served after every case.

use std::time::Duration;

use pmdb_engine::{Db, DbOptions};
use pmdb_server::{Auth, Server, ServerOptions};
use pmdb_sql::SqlEngine;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens a session the way libpq does (protocol 3.0, trusted) and reads up to the first
/// ReadyForQuery.
async fn started(port: u16) -> TcpStream {
    let mut sock = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut body = 196608u32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0fuzz\0database\0pmdb\0\0");
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    sock.write_all(&msg).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while !seen.windows(6).any(|w| w == [b'Z', 0, 0, 0, 5, b'I']) {
        let n = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf))
            .await
            .expect("start-up answered")
            .unwrap();
        assert!(n > 0, "closed during start-up");
        seen.extend_from_slice(&buf[..n]);
    }
    sock
}

fn message() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop_oneof![
        proptest::sample::select(b"QPBEDSCHXdcfF".to_vec()),
        any::<u8>()
    ];
    (
        kind,
        proptest::collection::vec(any::<u8>(), 0..64),
        -8i64..80,
        any::<bool>(),
    )
        .prop_map(|(kind, payload, skew, honest)| {
            let len = if honest {
                payload.len() as i64 + 4
            } else {
                payload.len() as i64 + 4 + skew
            };
            let mut m = vec![kind];
            m.extend_from_slice(&(len as i32).to_be_bytes());
            m.extend_from_slice(&payload);
            m
        })
}

#[test]
fn random_messages_never_take_the_server_down() {
    let dir = tempfile::tempdir().unwrap();
    let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = ServerOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        auth: Auth::Trust,
        shutdown_grace: Duration::from_millis(100),
        ..ServerOptions::default()
    };
    let server = rt
        .block_on(Server::new(engine.sessions(), options).start())
        .unwrap();
    let port = server.local_addr().port();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(96));
    runner
        .run(&proptest::collection::vec(message(), 1..6), |messages| {
            rt.block_on(async {
                let mut sock = started(port).await;
                for m in &messages {
                    if sock.write_all(m).await.is_err() {
                        break;
                    }
                }
                let _ = sock.shutdown().await;
                let mut rest = Vec::new();
                // Answered or closed in time; a connection kept waiting for the rest of
                // a message that lied about its length is dropped by the client.
                let _ =
                    tokio::time::timeout(Duration::from_secs(2), sock.read_to_end(&mut rest)).await;
                let (client, connection) = tokio_postgres::connect(
                    &format!("host=127.0.0.1 port={port} user=pmdb"),
                    tokio_postgres::NoTls,
                )
                .await
                .expect("the server still accepts clients");
                tokio::spawn(connection);
                client
                    .simple_query("SELECT 1")
                    .await
                    .expect("and serves them");
            });
            Ok(())
        })
        .unwrap();
    server.shutdown();
    rt.block_on(server.wait());
    drop(rt);
    drop(engine);
}
