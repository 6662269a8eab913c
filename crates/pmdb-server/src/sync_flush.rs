//! Responses leave at Sync, as PostgreSQL sends them: pgwire writes and flushes each
//! reply of the extended protocol (ParseComplete, BindComplete, the rows and
//! CommandComplete, ReadyForQuery) on its own, which costs a system call and a wake-up
//! of the client per message — three per statement of `pgbench -M prepared`.
//! [`SyncFlushed`] holds the replies the client cannot be waiting for until the
//! message it waits for (ReadyForQuery, an error, a COPY or any other) is written, or
//! the client asks with Flush ([`FlushRequest`]); beyond [`MAX_HELD`] bytes it writes
//! anyway. Each ReadyForQuery leaves with the SQL session's own transaction status
//! ([`SessionStatus`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Context, Poll};

use pmdb_sql::TxnStatus;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Replies a client of the extended protocol reads only after its Sync or Flush:
/// ParseComplete, BindComplete, CloseComplete, ParameterDescription, NoData,
/// RowDescription, DataRow, CommandComplete, EmptyQueryResponse.
const HELD: &[u8] = b"123tnTDCI";

/// Bytes held at most before they are written regardless.
pub const MAX_HELD: usize = 64 * 1024;

/// Set when the client sent Flush: the next flush writes what is held.
#[derive(Clone, Default)]
pub struct FlushRequest(Arc<AtomicBool>);

impl FlushRequest {
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// The transaction status ReadyForQuery reports: the SQL session's, which the connection
/// sets after each message it handles. pgwire derives a status of its own from the
/// responses it sends, which cannot tell that ROLLBACK TO SAVEPOINT revives a failed
/// block, that a COMMIT that failed ended its block, or that a statement that did not
/// parse failed one.
#[derive(Clone)]
pub struct SessionStatus(Arc<AtomicU8>);

impl Default for SessionStatus {
    fn default() -> SessionStatus {
        SessionStatus(Arc::new(AtomicU8::new(b'I')))
    }
}

impl SessionStatus {
    pub fn set(&self, status: TxnStatus) {
        let byte = match status {
            TxnStatus::Idle => b'I',
            TxnStatus::InBlock => b'T',
            TxnStatus::Failed => b'E',
        };
        self.0.store(byte, Ordering::Release);
    }

    pub fn get(&self) -> TxnStatus {
        match self.byte() {
            b'T' => TxnStatus::InBlock,
            b'E' => TxnStatus::Failed,
            _ => TxnStatus::Idle,
        }
    }

    fn byte(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
}

/// Where the outgoing byte stream is within the message being written.
#[derive(Debug, PartialEq)]
enum Position {
    /// Between messages; the type of the last one (0 before the first).
    Boundary(u8),
    /// In the 5-byte header of a message of this type, `seen` bytes of it so far.
    Header { kind: u8, seen: usize, len: [u8; 4] },
    /// In a body, this many bytes left.
    Body { kind: u8, left: usize },
    /// The stream did not parse as messages: nothing is held any more.
    Lost,
}

/// A connection's stream whose writes are held until a reply the client waits for.
pub struct SyncFlushed<S> {
    inner: S,
    held: Vec<u8>,
    /// How much of `held` is written already.
    written: usize,
    position: Position,
    flush: FlushRequest,
    status: SessionStatus,
}

impl<S> SyncFlushed<S> {
    pub fn new(inner: S, flush: FlushRequest, status: SessionStatus) -> SyncFlushed<S> {
        SyncFlushed {
            inner,
            held: Vec::new(),
            written: 0,
            position: Position::Boundary(0),
            flush,
            status,
        }
    }

    /// Follows the message framing over the held bytes from `from`: a type byte, a
    /// 4-byte big-endian length that counts itself, the body. A ReadyForQuery's status
    /// byte becomes the session's.
    fn scan(&mut self, from: usize) {
        let mut at = from;
        while at < self.held.len() {
            let bytes = &self.held[at..];
            self.position = match std::mem::replace(&mut self.position, Position::Lost) {
                Position::Lost => return,
                Position::Boundary(_) => {
                    let kind = bytes[0];
                    at += 1;
                    Position::Header {
                        kind,
                        seen: 0,
                        len: [0; 4],
                    }
                }
                Position::Header {
                    kind,
                    mut seen,
                    mut len,
                } => {
                    len[seen] = bytes[0];
                    at += 1;
                    seen += 1;
                    if seen < 4 {
                        Position::Header { kind, seen, len }
                    } else {
                        match (u32::from_be_bytes(len) as usize).checked_sub(4) {
                            None => Position::Lost,
                            Some(0) => Position::Boundary(kind),
                            Some(left) => Position::Body { kind, left },
                        }
                    }
                }
                Position::Body { kind, left } => {
                    let n = left.min(bytes.len());
                    if kind == b'Z' && left == 1 {
                        self.held[at] = self.status.byte();
                    }
                    at += n;
                    if n == left {
                        Position::Boundary(kind)
                    } else {
                        Position::Body {
                            kind,
                            left: left - n,
                        }
                    }
                }
            };
        }
    }

    /// Whether what is held may wait for more.
    fn may_hold(&self) -> bool {
        matches!(self.position, Position::Boundary(kind) if HELD.contains(&kind))
            && self.held.len() < MAX_HELD
    }
}

impl<S: AsyncWrite + Unpin> SyncFlushed<S> {
    /// Writes what is held.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.held.len() {
            let n = match Pin::new(&mut self.inner).poll_write(cx, &self.held[self.written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            self.written += n;
        }
        self.held.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for SyncFlushed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for SyncFlushed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let from = this.held.len();
        this.held.extend_from_slice(buf);
        this.scan(from);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.written == 0 && this.may_hold() && !this.flush.take() {
            return Poll::Ready(Ok(()));
        }
        match this.poll_write_held(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.poll_write_held(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[tokio::test]
    async fn replies_wait_for_ready_for_query_or_a_flush_request() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let flush = FlushRequest::default();
        let mut s = SyncFlushed::new(server, flush.clone(), SessionStatus::default());
        // BindComplete, then a row and CommandComplete, written in pieces: all held.
        s.write_all(&message(b'2', b"")).await.unwrap();
        s.flush().await.unwrap();
        let row = message(b'D', b"\0\x01\0\0\0\x011");
        s.write_all(&row[..3]).await.unwrap();
        s.write_all(&row[3..]).await.unwrap();
        s.write_all(&message(b'C', b"SELECT 1\0")).await.unwrap();
        s.flush().await.unwrap();
        let mut buf = vec![0; 4096];
        let nothing =
            tokio::time::timeout(std::time::Duration::from_millis(50), client.read(&mut buf)).await;
        assert!(nothing.is_err(), "held replies were written");
        // ReadyForQuery: everything goes, in order.
        s.write_all(&message(b'Z', b"I")).await.unwrap();
        s.flush().await.unwrap();
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(n, 5 + row.len() + 14 + 6);
        assert_eq!(buf[0], b'2');
        assert_eq!(buf[n - 6], b'Z');
        // A Flush from the client writes what is held at once.
        s.write_all(&message(b'1', b"")).await.unwrap();
        flush.request();
        s.flush().await.unwrap();
        assert_eq!(client.read(&mut buf).await.unwrap(), 5);
    }

    #[tokio::test]
    async fn a_stream_that_does_not_frame_is_never_held() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let mut s = SyncFlushed::new(server, FlushRequest::default(), SessionStatus::default());
        // A length below 4 cannot be a message.
        s.write_all(&[b'C', 0, 0, 0, 1]).await.unwrap();
        s.flush().await.unwrap();
        let mut buf = [0; 16];
        assert_eq!(client.read(&mut buf).await.unwrap(), 5);
        s.write_all(&message(b'C', b"x")).await.unwrap();
        s.flush().await.unwrap();
        assert_eq!(client.read(&mut buf).await.unwrap(), 6);
    }
}
