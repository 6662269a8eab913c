//! What the server's tests share: a server on a temporary database, a client that speaks
//! the protocol by hand, and the SQLSTATE of a driver's error.

#![allow(dead_code)]

use std::time::Duration;

use pmdb_engine::{Db, DbOptions};
use pmdb_server::{Auth, DatabaseStore, RunningServer, Server, ServerOptions};
use pmdb_sql::SqlEngine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::{Client, NoTls};

pub struct TestServer {
    pub rt: tokio::runtime::Runtime,
    pub server: Option<RunningServer>,
    pub engine: Option<SqlEngine>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub fn start(auth: Auth, max_connections: usize) -> TestServer {
        TestServer::with_options(ServerOptions {
            auth,
            max_connections,
            ..ServerOptions::default()
        })
    }

    /// A server started with `options`, on any free port of the loopback address.
    pub fn with_options(options: ServerOptions) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let databases = options.databases.clone().or_else(|| {
            Some(DatabaseStore {
                dir: dir.path().join("databases"),
                options: DbOptions::small(),
            })
        });
        let options = ServerOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            shutdown_grace: Duration::from_millis(200),
            databases,
            ..options
        };
        let server = rt
            .block_on(Server::new(engine.sessions(), options).start())
            .unwrap();
        TestServer {
            rt,
            server: Some(server),
            engine: Some(engine),
            _dir: dir,
        }
    }

    pub fn trusting() -> TestServer {
        TestServer::start(Auth::Trust, 16)
    }

    pub fn port(&self) -> u16 {
        self.server.as_ref().unwrap().local_addr().port()
    }

    pub async fn try_connect(
        &self,
        user: &str,
        password: &str,
    ) -> Result<Client, tokio_postgres::Error> {
        let config = format!(
            "host=127.0.0.1 port={} user={user} password={password} dbname=pmdb",
            self.port()
        );
        let (client, connection) = tokio_postgres::connect(&config, NoTls).await?;
        tokio::spawn(connection);
        Ok(client)
    }

    pub async fn connect(&self) -> Client {
        self.try_connect("pmdb", "x").await.unwrap()
    }

    /// A trusted connection to database `name`.
    pub async fn connect_to(&self, name: &str) -> Client {
        let config = format!(
            "host=127.0.0.1 port={} user=pmdb dbname='{name}'",
            self.port()
        );
        let (client, connection) = tokio_postgres::connect(&config, NoTls).await.unwrap();
        tokio::spawn(connection);
        client
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
            self.rt.block_on(server.wait());
        }
        drop(self.engine.take());
    }
}

pub fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_owned())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

/// A client speaking the protocol by hand, for what drivers do not show: the status
/// byte of each ReadyForQuery.
pub struct RawClient {
    sock: tokio::net::TcpStream,
    /// The SQLSTATE of the last error before the last ReadyForQuery.
    pub error: Option<String>,
    /// The command tags before the last ReadyForQuery.
    pub tags: Vec<String>,
    /// The rows before the last ReadyForQuery, each value as its text (NULL: `None`).
    pub rows: Vec<Vec<Option<String>>>,
    /// The type byte of each message before the last ReadyForQuery.
    pub kinds: Vec<u8>,
    /// The notices before the last ReadyForQuery, as `SEVERITY SQLSTATE: message`.
    pub notices: Vec<String>,
}

/// A connection to the server on `port` that has sent its start-up message (protocol
/// 3.0, as `user`, database pmdb) and read nothing yet.
pub async fn starting(port: u16, user: &str) -> tokio::net::TcpStream {
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut body = 196608u32.to_be_bytes().to_vec();
    body.extend_from_slice(format!("user\0{user}\0database\0pmdb\0\0").as_bytes());
    let mut startup = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    sock.write_all(&startup).await.unwrap();
    sock
}

/// A message of type `kind` with `body`.
pub fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

impl RawClient {
    pub async fn connect(port: u16) -> RawClient {
        let sock = starting(port, "pmdb").await;
        let mut c = RawClient {
            sock,
            error: None,
            tags: Vec::new(),
            rows: Vec::new(),
            kinds: Vec::new(),
            notices: Vec::new(),
        };
        assert_eq!(c.ready().await, b'I');
        c
    }

    /// Reads messages up to ReadyForQuery; its status.
    pub async fn ready(&mut self) -> u8 {
        self.error = None;
        self.tags.clear();
        self.rows.clear();
        self.kinds.clear();
        self.notices.clear();
        loop {
            let kind = self.sock.read_u8().await.unwrap();
            self.kinds.push(kind);
            let len = self.sock.read_u32().await.unwrap() as usize;
            let mut body = vec![0; len - 4];
            self.sock.read_exact(&mut body).await.unwrap();
            match kind {
                b'Z' => return body[0],
                // Fields: a type byte, then a NUL-terminated string; 'C' is the code.
                b'E' => {
                    self.error = body
                        .split(|b| *b == 0)
                        .find_map(|f| f.strip_prefix(b"C"))
                        .map(|c| String::from_utf8_lossy(c).into_owned())
                }
                b'N' => {
                    let field = |t: u8| {
                        body.split(|b| *b == 0)
                            .find_map(|f| f.strip_prefix(&[t]))
                            .map(|c| String::from_utf8_lossy(c).into_owned())
                            .unwrap_or_default()
                    };
                    let notice = format!("{} {}: {}", field(b'V'), field(b'C'), field(b'M'));
                    self.notices.push(notice);
                }
                b'C' => self
                    .tags
                    .push(String::from_utf8_lossy(&body[..body.len() - 1]).into_owned()),
                b'D' => {
                    let mut at = 2;
                    let mut row = Vec::new();
                    for _ in 0..u16::from_be_bytes([body[0], body[1]]) {
                        let len = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                        at += 4;
                        row.push(usize::try_from(len).ok().map(|len| {
                            at += len;
                            String::from_utf8_lossy(&body[at - len..at]).into_owned()
                        }));
                    }
                    self.rows.push(row);
                }
                _ => {}
            }
        }
    }

    /// Sends `sql` as a simple Query; the status after it.
    pub async fn status_after(&mut self, sql: &str) -> char {
        let mut m = vec![b'Q'];
        m.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        m.extend_from_slice(sql.as_bytes());
        m.push(0);
        self.sock.write_all(&m).await.unwrap();
        char::from(self.ready().await)
    }
}

impl RawClient {
    /// Sends `bytes` as they are.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).await.unwrap();
    }

    /// Sends each of `statements` as Parse, Bind and Execute, then one Sync; the status
    /// of the ReadyForQuery after it.
    pub async fn extended_then_sync(&mut self, statements: &[&str]) -> char {
        let mut m = Vec::new();
        for sql in statements {
            let mut parse = b"\0".to_vec();
            parse.extend_from_slice(sql.as_bytes());
            parse.extend_from_slice(&[0, 0, 0]);
            m.extend(message(b'P', &parse));
            // Unnamed portal and statement, no formats, no parameters, no result formats.
            m.extend(message(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]));
            m.extend(message(b'E', &[0, 0, 0, 0, 0]));
        }
        m.extend(message(b'S', &[]));
        self.sock.write_all(&m).await.unwrap();
        char::from(self.ready().await)
    }
}
