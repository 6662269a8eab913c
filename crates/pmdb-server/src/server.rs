//! [`Server`]: the accept loop. Each connection gets its own SQL session; beyond the
//! connection limit a client is refused with SQLSTATE 53300. A shutdown stops accepting,
//! gives connected clients a grace period to finish, then closes their connections:
//! open transaction blocks are discarded, and everything committed was durable when it
//! was acknowledged.

use std::net::SocketAddr;
use std::sync::Arc;

use pgwire::api::ConnectionManager;
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::tokio::TlsAcceptor;
use pmdb_sql::Sessions;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::auth::{Authenticator, Gate};
use crate::error::ServerError;
use crate::handler::Connection;
use crate::options::{Auth, ServerOptions};

pub struct Server {
    sessions: Sessions,
    options: ServerOptions,
}

/// A server that is accepting connections.
pub struct RunningServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// The address it listens on (the port chosen, when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts the shutdown (it goes on in the background; see [`RunningServer::wait`]).
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }

    /// Waits until the server has stopped and every connection is closed.
    pub async fn wait(self) {
        if let Err(e) = self.task.await {
            log::error!("the server's accept loop failed: {e}");
        }
    }
}

/// What every connection shares.
struct Shared {
    sessions: Sessions,
    authenticator: Arc<Authenticator>,
    cancel: Arc<DefaultCancelHandler>,
    tls: Option<TlsAcceptor>,
    slots: Arc<Semaphore>,
}

impl Server {
    /// A server of the sessions `sessions` opens (see `SqlEngine::sessions`).
    pub fn new(sessions: Sessions, options: ServerOptions) -> Server {
        Server { sessions, options }
    }

    /// Binds the listening socket and serves in the background on the current tokio
    /// runtime.
    pub async fn start(self) -> Result<RunningServer, ServerError> {
        let options = self.options;
        if options.max_connections == 0 {
            return Err(ServerError::Options(
                "max_connections must be at least 1".into(),
            ));
        }
        let (tls, certificate) = match &options.tls {
            Some(files) => {
                let (acceptor, cert) = crate::tls::acceptor(files)?;
                (Some(acceptor), Some(cert))
            }
            None => (None, None),
        };
        let users = match &options.auth {
            Auth::Scram(users) => users.names().map(str::to_owned).collect(),
            Auth::Trust => Vec::new(),
        };
        crate::pg_catalog::install(&self.sessions, users)
            .map_err(|e| ServerError::Catalog(e.to_string()))?;
        let manager = Arc::new(ConnectionManager::new());
        let authenticator =
            Authenticator::new(&options.auth, Arc::clone(&manager), certificate.as_deref())?;
        let listener =
            TcpListener::bind(options.listen)
                .await
                .map_err(|source| ServerError::Io {
                    what: format!("cannot listen on {}", options.listen),
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Io {
            what: "the listening socket has no address".into(),
            source,
        })?;
        let shared = Arc::new(Shared {
            sessions: self.sessions,
            authenticator: Arc::new(authenticator),
            cancel: Arc::new(DefaultCancelHandler::new(manager)),
            tls,
            slots: Arc::new(Semaphore::new(options.max_connections)),
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, shared, stopped, options.shutdown_grace));
        Ok(RunningServer { addr, stop, task })
    }
}

async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
    grace: std::time::Duration,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => if *stopped.borrow() { break },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let socket = match accepted {
                    Ok((socket, _)) => socket,
                    Err(e) => {
                        // Out of file descriptors, or a connection reset before it was
                        // accepted: keep serving the others.
                        log::warn!("accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let slot = Arc::clone(&shared.slots).try_acquire_owned().ok();
                let connection = Connection::new(
                    shared.sessions.open(),
                    Gate {
                        authenticator: Arc::clone(&shared.authenticator),
                        full: slot.is_none(),
                    },
                    Arc::clone(&shared.cancel),
                );
                let tls = shared.tls.clone();
                connections.spawn(async move {
                    let _slot = slot;
                    if let Err(e) = crate::socket::serve(socket, tls, connection).await {
                        log::debug!("connection closed: {e}");
                    }
                });
            }
        }
    }
    drop(listener);
    let deadline = tokio::time::sleep(grace);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = connections.join_next() => if next.is_none() { break },
            _ = &mut deadline => {
                log::info!("closing {} connections still open", connections.len());
                connections.abort_all();
                while connections.join_next().await.is_some() {}
                break;
            }
        }
    }
}
