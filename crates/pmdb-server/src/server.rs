//! [`Server`]: the accept loop. Each connection gets its own SQL session, served on a
//! thread of its own with a runtime of its own, as PostgreSQL gives each connection a
//! process: a client's statements run where its socket wakes up, and its commits are
//! led there (`pmdb_engine::lead_commits_here`), with no hand-over between threads on
//! the way (only a query DataFusion plans is executed on the SQL engine's runtime).
//! Beyond the connection limit a client is refused with SQLSTATE 53300. A shutdown stops
//! accepting, gives connected clients a grace period to finish, then closes their
//! connections: open transaction blocks are discarded, and everything committed was
//! durable when it was acknowledged.

use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use pgwire::api::ConnectionManager;
use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::tokio::TlsAcceptor;
use pmdb_sql::Sessions;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::task::JoinSet;

use crate::activity::Activity;
use crate::auth::{Authenticator, Gate};
use crate::databases::Databases;
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
    socket: Option<PathBuf>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// The address it listens on (the port chosen, when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The Unix-domain socket it listens on too, if it was given a directory for one.
    pub fn local_socket(&self) -> Option<&Path> {
        self.socket.as_deref()
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
    databases: Arc<Databases>,
    authenticator: Arc<Authenticator>,
    cancel: Arc<DefaultCancelHandler>,
    /// What each connection is doing (`pg_stat_activity`).
    activity: Arc<Activity>,
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
        let activity = Arc::new(Activity::default());
        let databases = Arc::new(Databases::open(
            self.sessions,
            options.databases.clone(),
            users,
            Arc::clone(&activity),
        )?);
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
        let local = match &options.socket_dir {
            Some(dir) => Some(LocalSocket::bind(dir, addr.port())?),
            None => None,
        };
        let socket = local.as_ref().map(|l| l.path.clone());
        let shared = Arc::new(Shared {
            databases,
            authenticator: Arc::new(authenticator),
            cancel: Arc::new(DefaultCancelHandler::new(manager)),
            activity,
            tls,
            slots: Arc::new(Semaphore::new(options.max_connections)),
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(
            listener,
            local,
            shared,
            stopped,
            options.shutdown_grace,
        ));
        Ok(RunningServer {
            addr,
            socket,
            stop,
            task,
        })
    }
}

/// The Unix-domain socket a server listens on besides TCP, its file removed when the
/// server stops.
struct LocalSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl LocalSocket {
    /// Listens on `dir/.s.PGSQL.<port>`, as PostgreSQL names its socket. A socket file
    /// left by a server that is gone is replaced; one a server still answers on is an
    /// error.
    fn bind(dir: &Path, port: u16) -> Result<LocalSocket, ServerError> {
        let path = dir.join(format!(".s.PGSQL.{port}"));
        let error = |what: &str, source| ServerError::Io {
            what: format!("{what} {}", path.display()),
            source,
        };
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            return Err(error(
                "another server listens on",
                io::Error::from(io::ErrorKind::AddrInUse),
            ));
        }
        if path.exists() {
            std::fs::remove_file(&path).map_err(|e| error("cannot remove the stale socket", e))?;
        }
        let listener = UnixListener::bind(&path).map_err(|e| error("cannot listen on", e))?;
        // Who may connect is for authentication to say, as over TCP.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| error("cannot open up", e))?;
        Ok(LocalSocket { listener, path })
    }

    async fn accept(local: &Option<LocalSocket>) -> io::Result<UnixStream> {
        match local {
            Some(l) => l.listener.accept().await.map(|(s, _)| s),
            None => std::future::pending().await,
        }
    }
}

impl Drop for LocalSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A client's socket as accepted.
enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

async fn serve(
    listener: TcpListener,
    local: Option<LocalSocket>,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
    grace: std::time::Duration,
) {
    let mut connections = JoinSet::new();
    let (close, closing) = watch::channel(false);
    loop {
        let accepted = tokio::select! {
            // Stopped, or no handle is left that could stop it.
            changed = stopped.changed() => if changed.is_err() || *stopped.borrow() {
                break
            } else {
                continue
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            tcp = listener.accept() => tcp.map(|(socket, _)| {
                let _ = socket.set_nodelay(true);
                Accepted::Tcp(socket)
            }),
            unix = LocalSocket::accept(&local) => unix.map(Accepted::Unix),
        };
        let socket = match accepted {
            Ok(socket) => socket,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was
                // accepted: keep serving the others.
                log::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let slot = Arc::clone(&shared.slots).try_acquire_owned().ok();
        let connection = Connection::new(
            Arc::clone(&shared.databases),
            Gate::new(Arc::clone(&shared.authenticator), slot.is_none()),
            Arc::clone(&shared.cancel),
            Arc::clone(&shared.activity),
        );
        let tls = shared.tls.clone();
        connections.spawn(on_own_thread(
            socket,
            tls,
            connection,
            slot,
            closing.clone(),
        ));
    }
    drop(listener);
    drop(local);
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

/// A client's socket between the accepting runtime and the connection's own.
enum StdSocket {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

/// Serves one connection on a thread of its own, with a current-thread runtime, until the
/// client leaves or `closing` turns true; returns when that thread is done.
async fn on_own_thread(
    socket: Accepted,
    tls: Option<TlsAcceptor>,
    connection: Connection,
    slot: Option<OwnedSemaphorePermit>,
    mut closing: watch::Receiver<bool>,
) {
    // A tokio socket belongs to the runtime it was made on: the thread's own takes it.
    let socket = match socket {
        Accepted::Tcp(s) => s.into_std().map(StdSocket::Tcp),
        Accepted::Unix(s) => s.into_std().map(StdSocket::Unix),
    };
    let socket = match socket {
        Ok(s) => s,
        Err(e) => {
            log::warn!("cannot take over the connection's socket: {e}");
            return;
        }
    };
    let (done, finished) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("pmdb-connection".into())
        .stack_size(pmdb_sql::STATEMENT_STACK)
        .spawn(move || {
            let _slot = slot;
            let _done = done;
            pmdb_engine::lead_commits_here();
            // Its blocking threads run DDL, whose expressions may nest as deep.
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_stack_size(pmdb_sql::STATEMENT_STACK)
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    log::warn!("cannot start a connection's runtime: {e}");
                    return;
                }
            };
            runtime.block_on(async move {
                let served = match socket {
                    StdSocket::Tcp(s) => TcpStream::from_std(s)
                        .map(|s| crate::socket::serve_tcp(s, tls, connection).boxed_local()),
                    StdSocket::Unix(s) => UnixStream::from_std(s)
                        .map(|s| crate::socket::serve_unix(s, connection).boxed_local()),
                };
                let served = match served {
                    Ok(served) => served,
                    Err(e) => {
                        log::warn!("cannot register the connection's socket: {e}");
                        return;
                    }
                };
                // A panic ends this connection only, and is logged as its end.
                let served = AssertUnwindSafe(served).catch_unwind();
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
