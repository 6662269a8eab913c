//! [`Server`]: the accept loop. Each connection gets its own SQL session, served on a
//! thread of its own with a runtime of its own, as PostgreSQL gives each connection a
//! process: a client's statements run where its socket wakes up, and its commits are
//! led there (`pmdb_engine::lead_commits_here`), with no hand-over between threads on
//! the way (only a query DataFusion plans is executed on the SQL engine's runtime).
//! Beyond the connection limit a client is refused with SQLSTATE 53300. A shutdown stops
//! accepting, gives connected clients a grace period to finish, then closes their
//! connections: open transaction blocks are discarded, and everything committed was
//! durable when it was acknowledged.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use pgwire::api::ConnectionManager;
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::tokio::TlsAcceptor;
use pmdb_sql::Sessions;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
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
    let (close, closing) = watch::channel(false);
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
                    Gate::new(Arc::clone(&shared.authenticator), slot.is_none()),
                    Arc::clone(&shared.cancel),
                );
                let tls = shared.tls.clone();
                connections.spawn(on_own_thread(socket, tls, connection, slot, closing.clone()));
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
                let _ = close.send(true);
                while connections.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// Serves one connection on a thread of its own, with a current-thread runtime, until the
/// client leaves or `closing` turns true; returns when that thread is done.
async fn on_own_thread(
    socket: tokio::net::TcpStream,
    tls: Option<TlsAcceptor>,
    connection: Connection,
    slot: Option<OwnedSemaphorePermit>,
    mut closing: watch::Receiver<bool>,
) {
    let socket = match socket.into_std() {
        Ok(s) => s,
        Err(e) => {
            log::warn!("cannot take over the connection's socket: {e}");
            return;
        }
    };
    let (done, finished) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("pmdb-connection".into())
        .spawn(move || {
            let _slot = slot;
            let _done = done;
            pmdb_engine::lead_commits_here();
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    log::warn!("cannot start a connection's runtime: {e}");
                    return;
                }
            };
            runtime.block_on(async move {
                let socket = match tokio::net::TcpStream::from_std(socket) {
                    Ok(s) => s,
                    Err(e) => {
                        log::warn!("cannot register the connection's socket: {e}");
                        return;
                    }
                };
                // A panic ends this connection only, and is logged as its end.
                let served =
                    AssertUnwindSafe(crate::socket::serve(socket, tls, connection)).catch_unwind();
                tokio::select! {
                    served = served => match served {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => log::debug!("connection closed: {e}"),
                        Err(_) => log::error!("a connection ended in a panic"),
                    },
                    _ = closing.wait_for(|close| *close) => {}
                }
            });
        });
    match thread {
        // The sender is dropped when the thread ends, however it ends.
        Ok(_) => {
            let _ = finished.await;
        }
        Err(e) => log::warn!("cannot start a connection's thread: {e}"),
    }
}
