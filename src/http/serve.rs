//! The listening socket and its connections. hyper refuses a request whose
//! head it cannot take (a request line over 64 KiB, a head over its ~400 KB
//! buffer, more than 100 headers, malformed HTTP) by itself, with a bodiless
//! 400, 414 or 431, before any of tbserver's layers see the request. Each
//! connection's socket is therefore wrapped so that such a refusal goes out
//! as tbserver's documented JSON error, with its stable code, instead.
//! hyper's buffer stays bounded as it is.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use axum::{extract::connect_info::Connected, serve::IncomingStream};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::watch,
};

use crate::http::error::ApiError;

/// The peer's address (`ConnectInfo<Peer>`), for the per-client rate limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub SocketAddr);

impl Connected<IncomingStream<'_, Listener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Listener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// A TCP listener whose connections are [`Conn`]s.
///
/// At shutdown it must not simply be dropped: the kernel completes
/// handshakes on its own, and closing a listening socket resets every
/// connection still queued on it, requests already sent. So [`Drain`] first
/// has it accept, without waiting, whatever is queued, then close (later
/// connections are refused, which clients can tell from a broken request).
pub(crate) struct Listener {
    socket: Option<TcpListener>,
    local_addr: SocketAddr,
    stage: watch::Receiver<Stage>,
    report: watch::Sender<Stage>,
}

/// Where the listening socket is in its shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Serving,
    /// Asked to accept what is queued and close.
    Draining,
    /// Closed; everything queued was accepted.
    Closed,
}

/// Asks a [`Listener`] to drain and close, and waits for it.
pub(crate) struct Drain(watch::Sender<Stage>);

impl Drain {
    /// Returns once the listener is closed, or after `limit` (a listener
    /// nobody polls any more must not hold up the shutdown).
    pub async fn close(&self, limit: Duration) {
        self.0.send_replace(Stage::Draining);
        let mut stage = self.0.subscribe();
        let _ = tokio::time::timeout(limit, stage.wait_for(|s| *s == Stage::Closed)).await;
    }
}

impl Listener {
    pub fn new(listener: TcpListener) -> io::Result<(Listener, Drain)> {
        let (report, stage) = watch::channel(Stage::Serving);
        let local_addr = listener.local_addr()?;
        Ok((Listener { socket: Some(listener), local_addr, stage, report: report.clone() }, Drain(report)))
    }
}

fn connection(stream: TcpStream) -> Conn {
    // Answers are written whole; no reason to hold them back.
    let _ = stream.set_nodelay(true);
    Conn { stream, replacing: None, line_ended: false }
}

impl axum::serve::Listener for Listener {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        loop {
            let Some(socket) = &self.socket else {
                // Closed: the server stops asking once its shutdown begins.
                return std::future::pending().await;
            };
            if *self.stage.borrow_and_update() == Stage::Draining {
                match accept_queued(socket) {
                    Some(Ok((stream, addr))) => return (connection(stream), addr),
                    Some(Err(e)) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                    Some(Err(e)) => tracing::warn!(error = %e, "accept while closing failed; closing now"),
                    None => {}
                }
                self.socket = None;
                self.report.send_replace(Stage::Closed);
                continue;
            }
            tokio::select! {
                accepted = socket.accept() => match accepted {
                    Ok((stream, addr)) => return (connection(stream), addr),
                    // The client gave up before we accepted: nothing to do.
                    Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionRefused) => {}
                    Err(e) => {
                        // Out of file descriptors, most likely: wait for some to close.
                        tracing::error!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                },
                _ = self.stage.changed() => {}
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local_addr)
    }
}

/// A connection already queued on `socket`, without waiting: `None` when
/// there is none. Asks the kernel directly: the runtime's readiness flag may
/// not have seen the newest handshake yet.
#[cfg(target_os = "linux")]
fn accept_queued(socket: &TcpListener) -> Option<io::Result<(TcpStream, SocketAddr)>> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: accept4 on our own listening socket; null address pointers
    // are allowed. A returned descriptor is new and owned by us alone.
    let fd = unsafe {
        libc::accept4(
            socket.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return (e.kind() != io::ErrorKind::WouldBlock).then_some(Err(e));
    }
    // SAFETY: see above.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    Some(stream.peer_addr().and_then(|addr| Ok((TcpStream::from_std(stream)?, addr))))
}

#[cfg(not(target_os = "linux"))]
fn accept_queued(socket: &TcpListener) -> Option<io::Result<(TcpStream, SocketAddr)>> {
    use std::task::Waker;
    match socket.poll_accept(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

/// A connection's socket; see the module documentation.
pub(crate) struct Conn {
    stream: TcpStream,
    /// A replacement for hyper's refusal being written, and how far.
    replacing: Option<(Vec<u8>, usize)>,
    /// Whether a line feed came in since the last response went out: if not,
    /// a request head that overflowed hyper's buffer is all request line.
    line_ended: bool,
}

/// hyper's own refusal: a status line, `content-length: 0` and no body.
/// tbserver's errors always have a body, so this is never one of them.
fn replacement(head: &[u8], line_ended: bool) -> Option<Vec<u8>> {
    let status = head.strip_prefix(b"HTTP/1.1 ")?.get(..4)?;
    let error = match status {
        b"400 " => ApiError::MalformedRequest,
        b"414 " => ApiError::UriTooLong,
        // The buffer filled before the request line ended: that line is
        // what is too long, however hyper names it.
        b"431 " if !line_ended => ApiError::UriTooLong,
        b"431 " => ApiError::HeadersTooLarge,
        _ => return None,
    };
    let bodiless =
        head.ends_with(b"\r\n\r\n") && head.windows(19).any(|w| w.eq_ignore_ascii_case(b"content-length: 0\r\n"));
    if !bodiless {
        return None;
    }
    let body = serde_json::to_vec(&error.body()).expect("errors serialize");
    let status = axum::http::StatusCode::from_u16(error.status()).expect("a valid status");
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error"),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

impl Conn {
    /// Writes the replacement of hyper's refusal `head`, if it is one;
    /// `None` when `head` is an ordinary write. The whole of `head` counts as
    /// written once the replacement is.
    fn poll_replace(&mut self, cx: &mut Context<'_>, head: &[u8]) -> Option<Poll<io::Result<usize>>> {
        if self.replacing.is_none() {
            self.replacing = Some((replacement(head, self.line_ended)?, 0));
        }
        let (out, written) = self.replacing.as_mut().expect("set above");
        while *written < out.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &out[*written..]) {
                Poll::Ready(Ok(0)) => return Some(Poll::Ready(Err(io::ErrorKind::WriteZero.into()))),
                Poll::Ready(Ok(n)) => *written += n,
                other => return Some(other),
            }
        }
        self.replacing = None;
        Some(Poll::Ready(Ok(head.len())))
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.stream).poll_read(cx, buf))?;
        if !this.line_ended && buf.filled()[before..].contains(&b'\n') {
            this.line_ended = true;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if (this.replacing.is_some() || buf.starts_with(b"HTTP/1.1 4"))
            && let Some(poll) = this.poll_replace(cx, buf)
        {
            return poll;
        }
        this.line_ended = false;
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // hyper's refusal is a head alone, in one slice.
        let mut nonempty = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(first), None) = (nonempty.next(), nonempty.next())
            && (this.replacing.is_some() || first.starts_with(b"HTTP/1.1 4"))
            && let Some(poll) = this.poll_replace(cx, first)
        {
            return poll;
        }
        this.line_ended = false;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_refusals_are_replaced() {
        let head = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 18:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(replacement(head, true).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"), "{out}");
        assert!(out.ends_with(r#"}}"#) && out.contains(r#""code":"query_too_long""#), "{out}");
        let big_head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n";
        assert!(String::from_utf8(replacement(big_head, true).unwrap()).unwrap().contains("headers_too_large"));
        assert!(String::from_utf8(replacement(big_head, false).unwrap()).unwrap().contains("query_too_long"));
        // tbserver's own errors carry a body: left alone.
        assert!(
            replacement(
                b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\ncontent-length: 90\r\n\r\n",
                true
            )
            .is_none()
        );
        assert!(replacement(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", true).is_none());
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", true).is_none());
    }
}
