//! One client's socket, TCP or Unix-domain, from accept to close: TLS negotiation
//! (pgwire's, over TCP), replies held
//! until Sync with the session's status in ReadyForQuery ([`crate::sync_flush`]), and
//! the message loop that hands each message to pgwire's dispatcher (telling the handler
//! whether a Sync follows each Execute); a client that has not finished its start-up in
//! [`STARTUP_TIMEOUT`] is dropped, one idle in a block longer than its
//! `idle_in_transaction_session_timeout` is disconnected, and one another session ends
//! (`pg_terminate_backend`) is told so and closed; the notifications of the channels it
//! listens to are sent while it waits outside a block.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Sink, SinkExt, StreamExt};
use pgwire::api::DefaultClient;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::ErrorInfo;
use pgwire::messages::response::NotificationResponse;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::server::{
    PgWireMessageServerCodec, negotiate_tls, process_error, process_message,
};
use pmdb_sql::Prepared;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Sleep;
use tokio_util::codec::{Framed, FramedParts};

use crate::handler::{Connection, Handler};
use crate::sync_flush::SyncFlushed;

pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves `connection` on `tcp` until the client leaves or a fatal error.
pub async fn serve_tcp(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    connection: Connection,
) -> io::Result<()> {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    let negotiated = tokio::select! {
        _ = &mut startup => return Ok(()),
        framed = negotiate_tls::<Arc<Prepared>>(tcp, tls) => framed?,
    };
    // A client that asked for TLS directly from a server without it.
    let Some(framed) = negotiated else {
        return Ok(());
    };
    let old = framed.into_parts();
    let mut parts = FramedParts::new(
        SyncFlushed::new(
            old.io,
            connection.flush_request(),
            connection.session_status(),
        ),
        old.codec,
    );
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    serve(Framed::from_parts(parts), connection, startup).await
}

/// Serves `connection` on `unix`, a local client's Unix-domain socket (no TLS there, as
/// in PostgreSQL), until the client leaves or a fatal error.
pub async fn serve_unix(unix: UnixStream, connection: Connection) -> io::Result<()> {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    // PostgreSQL's clients see no address for a local connection either.
    let client = DefaultClient::new(SocketAddr::from(([127, 0, 0, 1], 0)), false);
    let io = SyncFlushed::new(
        unix,
        connection.flush_request(),
        connection.session_status(),
    );
    let mut socket = Framed::new(io, PgWireMessageServerCodec::new(client));
    // No TLS negotiation comes first: the start-up message does.
    socket.set_state(PgWireConnectionState::AwaitingStartup);
    serve(socket, connection, startup).await
}

/// The message loop of a connection whose start-up must end before `startup` does.
async fn serve<S>(
    mut socket: Framed<SyncFlushed<S>, PgWireMessageServerCodec<Arc<Prepared>>>,
    connection: Connection,
    startup: Pin<&mut Sleep>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    let Connection {
        handler,
        gate,
        cancel,
    } = connection;
    let served = serve_messages(&mut socket, &handler, &gate, &cancel, startup).await;
    handler.close().await;
    served
}

/// The messages of a connection, until the client leaves or a fatal error.
async fn serve_messages<S>(
    socket: &mut Framed<SyncFlushed<S>, PgWireMessageServerCodec<Arc<Prepared>>>,
    handler: &Arc<Handler>,
    gate: &Arc<crate::auth::Gate>,
    cancel: &Arc<pgwire::api::cancel::DefaultCancelHandler>,
    mut startup: Pin<&mut Sleep>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = if starting {
            tokio::select! {
                _ = startup.as_mut() => None,
                msg = socket.next() => msg,
            }
        } else {
            let limit = handler.idle_limit().unwrap_or(Duration::MAX);
            // Biased: an end asked for before the client's next message arrived is
            // seen first, not raced against that message.
            tokio::select! {
                biased;
                _ = handler.terminated() => {
                    return fatal(socket, handler, "57P01",
                        "terminating connection due to administrator command").await;
                }
                Some(n) = handler.notification(), if handler.between_blocks() => {
                    handler.flush_now();
                    let sent = NotificationResponse::new(n.pid, n.channel, n.payload);
                    let message = PgWireBackendMessage::NotificationResponse(sent);
                    if socket.send(message).await.is_err() {
                        return Ok(());
                    }
                    continue;
                }
                msg = tokio::time::timeout(limit, socket.next()) => match msg {
                    Ok(msg) => msg,
                    Err(_) => {
                        return fatal(socket, handler, "25P03",
                            "terminating connection due to idle-in-transaction timeout").await;
                    }
                },
            }
        };
        let Some(Ok(msg)) = next else {
            return Ok(());
        };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        let cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        if matches!(msg, PgWireFrontendMessage::Execute(_)) {
            handler.sync_follows(socket.read_buffer().first() == Some(&b'S'));
        }
        if let Err(e) = process_message(
            msg,
            socket,
            Arc::clone(gate),
            Arc::clone(handler),
            Arc::clone(handler),
            Arc::clone(handler),
            Arc::clone(cancel),
        )
        .await
        {
            // A statement stopped because `pg_terminate_backend` ended its connection:
            // the client hears why the connection goes, not that a statement was cancelled.
            if handler.terminated().now_or_never().is_some() {
                return fatal(
                    socket,
                    handler,
                    "57P01",
                    "terminating connection due to administrator command",
                )
                .await;
            }
            if extended_query {
                handler.fail_block().await;
            }
            let fatal = e.is_fatal();
            process_error(socket, e, extended_query).await?;
            if fatal {
                return Ok(());
            }
        }
        if cancel_request {
            return Ok(());
        }
        if starting && matches!(socket.state(), PgWireConnectionState::ReadyForQuery) {
            handler.identify(socket).await;
        }
    }
}

/// Ends a connection as PostgreSQL does when it must (its client idle in a block past
/// its `idle_in_transaction_session_timeout`, 25P03; `pg_terminate_backend`, 57P01):
/// FATAL, then close (the block rolls back as the session goes).
async fn fatal<T>(socket: &mut T, handler: &Handler, code: &str, message: &str) -> io::Result<()>
where
    T: Sink<PgWireBackendMessage> + Unpin,
{
    let error = ErrorInfo::new("FATAL".into(), code.into(), message.into());
    handler.flush_now();
    // The client may be gone already: the connection ends either way.
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(error.into()))
        .await;
    let _ = socket.close().await;
    Ok(())
}
