//! A bounded fuzz run of the server's message parsing: after a real start-up, random
//! frontend messages (known and unknown types, lengths that lie, payloads of random
//! bytes) go to the server, which must answer or close that connection, never hang or
//! fall over: a new client is served after every case. The same for random password
//! messages during SCRAM authentication.

use std::time::Duration;

use pmdb_server::{Auth, Users};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;

use common::{TestServer, starting};

/// Opens a session the way libpq does (protocol 3.0, trusted) and reads up to the first
/// ReadyForQuery.
async fn started(port: u16) -> TcpStream {
    let mut sock = starting(port, "fuzz").await;
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

/// Sends each list of messages from `strategy` on a new connection that `open` starts,
/// then checks that a client with `user` and `password` is served. `refused`: each list
/// must get an error message back (no connection may just end, as a panic ends it).
fn survives(
    s: &TestServer,
    strategy: impl Strategy<Value = Vec<Vec<u8>>>,
    open: impl AsyncFn(u16) -> TcpStream,
    (user, password): (&str, &str),
    refused: bool,
) {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(96));
    runner
        .run(&strategy, |messages| {
            s.rt.block_on(async {
                let mut sock = open(s.port()).await;
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
                if refused {
                    let text = String::from_utf8_lossy(&rest);
                    assert!(
                        text.contains("SFATAL"),
                        "no error for {messages:?}: {text:?}"
                    );
                }
                let client = s
                    .try_connect(user, password)
                    .await
                    .expect("the server still accepts clients");
                client
                    .simple_query("SELECT 1")
                    .await
                    .expect("and serves them");
            });
            Ok(())
        })
        .unwrap();
}

#[test]
fn random_messages_never_take_the_server_down() {
    let s = TestServer::trusting();
    survives(
        &s,
        proptest::collection::vec(message(), 1..6),
        started,
        ("pmdb", "x"),
        false,
    );
}

/// A password message (type `p`) of random bytes, some shaped as a SASLInitialResponse
/// whose length may lie.
fn password_message() -> impl Strategy<Value = Vec<u8>> {
    let initial =
        (any::<i32>(), proptest::collection::vec(any::<u8>(), 0..24)).prop_map(|(len, data)| {
            let mut body = b"SCRAM-SHA-256\0".to_vec();
            body.extend_from_slice(&len.to_be_bytes());
            body.extend_from_slice(&data);
            body
        });
    let body = prop_oneof![initial, proptest::collection::vec(any::<u8>(), 0..40)];
    body.prop_map(|body| common::message(b'p', &body))
}

#[test]
fn random_authentication_messages_never_take_the_server_down() {
    let mut users = Users::default();
    users.add("ada:lovelace").unwrap();
    let s = TestServer::start(Auth::Scram(users), 16);
    survives(
        &s,
        proptest::collection::vec(password_message(), 1..4),
        |port| starting(port, "ada"),
        ("ada", "lovelace"),
        true,
    );
}
