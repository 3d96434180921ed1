//! The listening socket and its connections. hyper refuses a request whose
//! head it cannot take (a request line over 64 KiB, a head over its ~400 KB
//! buffer, more than 100 headers, malformed HTTP) by itself, with a bodiless
//! 400, 414 or 431, before any of tbserver's layers see the request. Each
//! connection's socket is therefore wrapped so that such a refusal goes out
//! as tbserver's documented JSON error, with its stable code, instead.
//! hyper's buffer stays bounded as it is.
//!
//! The socket also keeps the connection's clock (axum's `serve` gives hyper
//! no timer, so hyper times nothing out itself): a head must arrive whole
//! within `limits.head_timeout_ms` of the accept or of the first byte of a
//! later request, and a connection with nothing to do after an answer is
//! closed after `limits.idle_timeout_ms`; a read then fails, and hyper drops
//! the connection. A client that takes no byte of an answer for that idle
//! time is cut the same way, through the write. [`Connections`] counts them all and, at
//! `limits.max_connections`, closes the one waiting longest for a head.

use std::{
    collections::HashMap,
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering},
    },
    task::{Context, Poll, Waker},
    time::Duration,
};

use axum::{extract::connect_info::Connected, serve::IncomingStream};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{Notify, watch},
    time::{Instant, Sleep},
};

use crate::{
    http::error::ApiError,
    telemetry::{ConnectionClosed, ConnectionMetrics},
};

/// The peer's address (`ConnectInfo<Peer>`), for the per-client limits, and
/// its connection's clock, which a request in flight stops.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub addr: SocketAddr,
    track: Option<Arc<Track>>,
}

impl Peer {
    /// Marks a request in flight on this connection until the guard is
    /// dropped (its answer is then written): its clock stops meanwhile.
    pub fn request_started(&self) -> Option<InFlight> {
        let track = self.track.clone()?;
        track.in_flight.fetch_add(1, Ordering::SeqCst);
        Some(InFlight(track))
    }
}

impl Connected<IncomingStream<'_, Listener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Listener>) -> Peer {
        Peer { addr: *stream.remote_addr(), track: Some(Arc::clone(&stream.io().track)) }
    }
}

/// A request in flight on a connection; see [`Peer::request_started`].
pub(crate) struct InFlight(Arc<Track>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.restart(Phase::Idle);
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a connection without a request in flight waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Phase {
    /// A request head (just accepted, or part of a later one came): the
    /// head time limit applies.
    Head = 0,
    /// The next request, after an answer: the idle time limit applies.
    Idle = 1,
}

/// One connection's clock, shared with [`Connections`] and its requests.
#[derive(Debug)]
struct Track {
    id: u64,
    /// Milliseconds since [`Connections::epoch`] when the current wait began.
    since_ms: AtomicU64,
    phase: AtomicU8,
    in_flight: AtomicU32,
    /// Chosen to make room: the next read fails.
    evicted: AtomicBool,
    /// Wakes the connection's task to be closed.
    waker: Mutex<Option<Waker>>,
    epoch: Instant,
}

impl Track {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn restart(&self, phase: Phase) {
        self.since_ms.store(self.now_ms(), Ordering::SeqCst);
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    fn phase(&self) -> Phase {
        if self.phase.load(Ordering::SeqCst) == Phase::Idle as u8 { Phase::Idle } else { Phase::Head }
    }
}

/// Every open connection, its limits and the listener's room for more.
pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Arc<Track>>>,
    next_id: AtomicU64,
    /// Connections chosen to make room that have not closed yet.
    evicting: AtomicU64,
    closed: Notify,
    epoch: Instant,
    head_timeout: Duration,
    idle_timeout: Duration,
    max: usize,
    metrics: ConnectionMetrics,
}

impl Connections {
    pub fn new(head_timeout: Duration, idle_timeout: Duration, max: usize, metrics: ConnectionMetrics) -> Connections {
        Connections {
            open: Mutex::default(),
            next_id: AtomicU64::new(0),
            evicting: AtomicU64::new(0),
            closed: Notify::new(),
            epoch: Instant::now(),
            head_timeout,
            idle_timeout,
            max: max.max(1),
            metrics,
        }
    }

    fn register(self: &Arc<Self>) -> Arc<Track> {
        let track = Arc::new(Track {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            since_ms: AtomicU64::new(0),
            phase: AtomicU8::new(Phase::Head as u8),
            in_flight: AtomicU32::new(0),
            evicted: AtomicBool::new(false),
            waker: Mutex::new(None),
            epoch: self.epoch,
        });
        track.restart(Phase::Head);
        self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(track.id, Arc::clone(&track));
        self.metrics.open.inc();
        track
    }

    fn unregister(&self, track: &Track) {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&track.id);
        if track.evicted.load(Ordering::SeqCst) {
            self.evicting.fetch_sub(1, Ordering::SeqCst);
        }
        self.metrics.open.dec();
        self.closed.notify_waiters();
    }

    /// Whether another connection may be accepted now: under the limit, or
    /// once one waiting for a head (or idle) was chosen to be closed,
    /// head-waiters first, longest waiting first.
    fn make_room(&self) -> bool {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let evicting = usize::try_from(self.evicting.load(Ordering::SeqCst)).unwrap_or(usize::MAX);
        if open.len().saturating_sub(evicting) < self.max {
            return true;
        }
        let victim = open
            .values()
            .filter(|t| t.in_flight.load(Ordering::SeqCst) == 0 && !t.evicted.load(Ordering::SeqCst))
            .min_by_key(|t| (t.phase() == Phase::Idle, t.since_ms.load(Ordering::SeqCst)));
        let Some(victim) = victim else { return false };
        victim.evicted.store(true, Ordering::SeqCst);
        self.evicting.fetch_add(1, Ordering::SeqCst);
        self.metrics.closed(ConnectionClosed::Evicted);
        if let Some(waker) = victim.waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            waker.wake();
        }
        true
    }

    /// Waits until [`Connections::make_room`] may succeed: a connection
    /// closed, or a request finished (checked again after a moment).
    async fn room(&self) {
        loop {
            let closed = self.closed.notified();
            if self.make_room() {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), closed).await;
        }
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
    connections: Arc<Connections>,
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
    pub fn new(listener: TcpListener, connections: Arc<Connections>) -> io::Result<(Listener, Drain)> {
        let (report, stage) = watch::channel(Stage::Serving);
        let local_addr = listener.local_addr()?;
        Ok((Listener { socket: Some(listener), connections, local_addr, stage, report: report.clone() }, Drain(report)))
    }

    fn connection(&self, stream: TcpStream) -> Conn {
        // Answers are written whole; no reason to hold them back.
        let _ = stream.set_nodelay(true);
        let track = self.connections.register();
        Conn {
            stream,
            replacing: None,
            line_ended: false,
            connections: Arc::clone(&self.connections),
            track,
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            timer_ms: None,
            send_timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            send_stalled: false,
        }
    }
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
                    Some(Ok((stream, addr))) => return (self.connection(stream), addr),
                    Some(Err(e)) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                    Some(Err(e)) => tracing::warn!(error = %e, "accept while closing failed; closing now"),
                    None => {}
                }
                self.socket = None;
                self.report.send_replace(Stage::Closed);
                continue;
            }
            // At the connection limit, wait for room (or make some) first:
            // what arrives meanwhile waits in the kernel's queue.
            let connections = Arc::clone(&self.connections);
            tokio::select! {
                biased;
                _ = self.stage.changed() => continue,
                _ = connections.room() => {}
            }
            let Some(socket) = &self.socket else { continue };
            tokio::select! {
                accepted = socket.accept() => match accepted {
                    Ok((stream, addr)) => return (self.connection(stream), addr),
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
    connections: Arc<Connections>,
    track: Arc<Track>,
    /// Fires at the end of the current wait; `timer_ms` is where it is set.
    timer: Pin<Box<Sleep>>,
    timer_ms: Option<u64>,
    /// Fires when the client has taken no byte of an answer for the idle
    /// time limit; armed when a write first finds its buffer full, disarmed
    /// by any byte going out.
    send_timer: Pin<Box<Sleep>>,
    send_stalled: bool,
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

impl Conn {
    /// With no request in flight: an error once the current wait is over
    /// (or the connection was chosen to make room), else `Pending`, with
    /// the task woken at the wait's end.
    fn poll_clock(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let track = &self.track;
        if track.evicted.load(Ordering::SeqCst) {
            return Poll::Ready(io::Error::new(io::ErrorKind::ConnectionAborted, "closed to make room"));
        }
        if track.in_flight.load(Ordering::SeqCst) > 0 {
            return Poll::Pending;
        }
        let phase = track.phase();
        let limit = if phase == Phase::Idle { self.connections.idle_timeout } else { self.connections.head_timeout };
        let end_ms =
            track.since_ms.load(Ordering::SeqCst).saturating_add(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX));
        if self.timer_ms != Some(end_ms) {
            self.timer.as_mut().reset(self.connections.epoch + Duration::from_millis(end_ms));
            self.timer_ms = Some(end_ms);
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            let (why, text) = match phase {
                Phase::Head => (ConnectionClosed::HeadTimeout, "request head not received in time"),
                Phase::Idle => (ConnectionClosed::IdleTimeout, "idle too long"),
            };
            self.connections.metrics.closed(why);
            return Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, text));
        }
        let mut waker = track.waker.lock().unwrap_or_else(|e| e.into_inner());
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
        drop(waker);
        // Chosen while the waker was being stored: not woken, so look again.
        if track.evicted.load(Ordering::SeqCst) {
            return Poll::Ready(io::Error::new(io::ErrorKind::ConnectionAborted, "closed to make room"));
        }
        Poll::Pending
    }
}

impl Conn {
    /// Part of an answer went out: a client reading it is not idle.
    fn wrote(&mut self, bytes: usize) {
        if bytes > 0 {
            self.track.restart(Phase::Idle);
            self.send_stalled = false;
        }
    }

    /// A write found the client's window full: an error once it has been
    /// full for the idle time limit (a client that stops reading answers
    /// would otherwise hold its connection, and the answer's memory, for
    /// ever), else `Pending`, with the task woken at that limit.
    fn poll_send_clock(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if !self.send_stalled {
            self.send_stalled = true;
            self.send_timer.as_mut().reset(Instant::now() + self.connections.idle_timeout);
        }
        if self.send_timer.as_mut().poll(cx).is_ready() {
            self.connections.metrics.closed(ConnectionClosed::SendStalled);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading the answer")));
        }
        Poll::Pending
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.connections.unregister(&self.track);
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return this.poll_clock(cx).map(Err),
        }
        let read = &buf.filled()[before..];
        // The first bytes of a request after an answer start its head's clock.
        if !read.is_empty() && this.track.in_flight.load(Ordering::SeqCst) == 0 && this.track.phase() == Phase::Idle {
            this.track.restart(Phase::Head);
        }
        if !this.line_ended && read.contains(&b'\n') {
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
        let written = match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(written) => written?,
            Poll::Pending => return this.poll_send_clock(cx),
        };
        this.wrote(written);
        Poll::Ready(Ok(written))
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
        let written = match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Ready(written) => written?,
            Poll::Pending => return this.poll_send_clock(cx),
        };
        this.wrote(written);
        Poll::Ready(Ok(written))
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
