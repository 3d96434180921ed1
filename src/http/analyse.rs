//! `/api/v1/analyse` and `/api/v1/analyse/stream`: the bounded search over
//! HTTP. Searches run on their own thread pool (never on the threads that
//! answer probes), at most `max_concurrent_searches` at once (503 +
//! `Retry-After` beyond), each capped at `max_movetime_ms`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::{
    extract::{Query, State, rejection::QueryRejection},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use serde::Deserialize;
use shakmaty::Chess;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::{AppState, openapi, schema};
use crate::{
    config::SearchConfig,
    http::error::ApiError,
    request::parse_fen,
    search::{self, Limits, SearchOptions, SearchResult},
};

/// The search side of the server: its limits, its concurrency slots and its
/// own thread pool (so searches never take the threads that answer probes).
pub(crate) struct Searches {
    config: SearchConfig,
    slots: Arc<Semaphore>,
    pool: rayon::ThreadPool,
    /// Stop flags of the searches started so far (dead ones are pruned when
    /// a search starts), so that shutdown can stop them all.
    running: Mutex<Vec<Weak<AtomicBool>>>,
    stopping: AtomicBool,
}

/// Gives the calling thread a lower CPU priority (nice 10) than the
/// threads answering probes. On Linux the nice value is per thread.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on the calling thread's own ID; no pointers.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

impl Searches {
    pub fn new(config: SearchConfig) -> Searches {
        let n = config.max_concurrent_searches.max(1);
        Searches {
            slots: Arc::new(Semaphore::new(n)),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("search-{i}"))
                // Searches run for seconds; probes answer in microseconds
                // and must not queue behind them for a core.
                .start_handler(|_| lower_this_threads_priority())
                // Without a handler rayon aborts the process on a job's panic
                // (`run_search` catches the search's own; this is the rest).
                .panic_handler(|_| tracing::error!("a search job panicked"))
                .build()
                .expect("search thread pool"),
            config,
            running: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        }
    }

    /// A search slot and the new search's stop flag, or `None` when all slots
    /// are busy or the server is shutting down.
    fn start(&self) -> Option<(tokio::sync::OwnedSemaphorePermit, Arc<AtomicBool>)> {
        let permit = Arc::clone(&self.slots).try_acquire_owned().ok()?;
        let cancel = Arc::new(AtomicBool::new(false));
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopping.load(Ordering::SeqCst) {
            return None;
        }
        running.retain(|w| w.strong_count() > 0);
        running.push(Arc::downgrade(&cancel));
        Some((permit, cancel))
    }

    /// Shutdown: refuse new searches and stop the running ones (each returns
    /// its best result so far, so its request still completes).
    pub(crate) fn stop_all(&self) {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        self.stopping.store(true, Ordering::SeqCst);
        for cancel in running.iter().filter_map(Weak::upgrade) {
            cancel.store(true, Ordering::Relaxed);
        }
    }

    fn options(&self) -> SearchOptions {
        SearchOptions { threads: self.config.threads_per_search.max(1), hash_mb: self.config.hash_mb }
    }
}

/// One event of `/api/v1/analyse/stream` (the schema of each event).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // describes the stream; events are built by axum's `Event`
struct AnalyseEvent {
    event: AnalyseEventName,
    /// A `SearchResult` as JSON text (an error body for `error`).
    #[schema(content_media_type = "application/json")]
    data: String,
}

#[derive(utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum AnalyseEventName {
    /// After each completed iteration (`stop` is null).
    Depth,
    /// The final result, once.
    Result,
    /// Instead of `result` when the search failed (an internal error).
    Error,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AnalyseQuery {
    /// The position in FEN; underscores may stand for spaces. Required.
    #[param(required = true, example = "3k4/8/3K4/8/8/8/N7/1B6 w - - 0 1")]
    fen: Option<String>,
    /// Search time; clamped to 1..=`search.max_movetime_ms`
    /// [default: `search.default_movetime_ms`].
    movetime_ms: Option<u64>,
    /// Stop after this many nodes.
    nodes: Option<u64>,
    /// Stop after this depth, in plies.
    depth: Option<u32>,
}

fn parse(cfg: &SearchConfig, query: Result<Query<AnalyseQuery>, QueryRejection>) -> Result<(Chess, Limits), ApiError> {
    let Query(q) = query.map_err(|e| ApiError::InvalidParameter { name: "query", reason: e.body_text() })?;
    let pos = parse_fen(q.fen.as_deref().ok_or(ApiError::MissingParameter("fen"))?)?;
    // Every search has a time budget, whatever the request asks.
    let movetime_ms = q.movetime_ms.unwrap_or(cfg.default_movetime_ms).clamp(1, cfg.max_movetime_ms);
    Ok((pos, Limits { movetime: Some(Duration::from_millis(movetime_ms)), nodes: q.nodes, depth: q.depth }))
}

fn busy(state: &AppState) -> Response {
    state.telemetry.search_refused();
    ApiError::Busy.into_response()
}

/// One line per search, inside its span (with the FEN and the request ID).
fn log_finished(r: &SearchResult) {
    tracing::info!(depth = r.depth, nodes = r.nodes, elapsed_ms = r.elapsed_ms, stop = ?r.stop, "search finished");
}

/// Runs one search, turning a panic into an error: the search pool aborts
/// the process on a panic that escapes a job, and one bad search must not
/// take the server down.
fn run_search(
    shared: &AppState,
    pos: &Chess,
    limits: &Limits,
    cancel: &Arc<AtomicBool>,
    on_depth: &mut dyn FnMut(&SearchResult),
) -> Result<SearchResult, ApiError> {
    let options = shared.searches.options();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        search::analyse(pos, shared.tablebases().as_ref(), limits, &options, cancel, on_depth)
    }));
    match outcome {
        Ok(r) => {
            log_finished(&r);
            Ok(r)
        }
        Err(panic) => {
            tracing::error!("search panicked: {}", crate::panics::message(&*panic).unwrap_or("unknown"));
            Err(ApiError::Internal)
        }
    }
}

/// One event of the stream: `name`, with `data` as JSON.
fn sse_event(name: &str, data: &impl serde::Serialize) -> Event {
    Event::default().event(name).json_data(data).unwrap_or_else(|_| Event::default().event(name))
}

fn search_span(pos: &Chess, limits: &Limits) -> tracing::Span {
    let fen = shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::Legal);
    tracing::info_span!("search", fen = %fen, movetime_ms = limits.movetime.map(|d| d.as_millis() as u64))
}

/// `GET /api/v1/analyse`: the final result as JSON.
#[utoipa::path(
    get, path = "/api/v1/analyse", tag = "search", params(AnalyseQuery),
    responses((status = 200, body = schema::SearchResult, content(
        (schema::SearchResult = "application/json"), (schema::SearchResult = "application/cbor"))), openapi::SearchErrors)
)]
pub async fn analyse(
    State(state): State<AppState>,
    format: super::Format,
    query: Result<Query<AnalyseQuery>, QueryRejection>,
) -> Response {
    let (pos, limits) = match parse(&state.searches.config, query) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let Some((permit, cancel)) = state.searches.start() else { return busy(&state) };
    // Cancels the search if this request future is dropped (client gone).
    let _guard = CancelOnDrop(Arc::clone(&cancel));
    let (tx, rx) = oneshot::channel();
    let c = Arc::clone(&cancel);
    let shared = Arc::clone(&state);
    let span = search_span(&pos, &limits);
    state.searches.pool.spawn(move || {
        let _span = span.enter();
        let _running = shared.telemetry.search_started();
        let r = run_search(&shared, &pos, &limits, &c, &mut |_| {});
        drop(permit);
        let _ = tx.send(r);
    });
    match rx.await {
        Ok(Ok(r)) => super::encoding::respond(&r, format),
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::Internal.into_response(),
    }
}

struct CancelOnDrop(Arc<AtomicBool>);
impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `GET /api/v1/analyse/stream`: Server-Sent Events, one `depth` event per
/// completed iteration and a final `result` event; stops when the client goes.
#[utoipa::path(
    get, path = "/api/v1/analyse/stream", tag = "search", params(AnalyseQuery),
    responses(
        (status = 200, content_type = "text/event-stream", body = AnalyseEvent,
         description = "Server-Sent Events: `depth` events, then one `result` event"),
        openapi::SearchErrors,
    )
)]
pub async fn analyse_stream(
    State(state): State<AppState>,
    query: Result<Query<AnalyseQuery>, QueryRejection>,
) -> Response {
    let (pos, limits) = match parse(&state.searches.config, query) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let Some((permit, cancel)) = state.searches.start() else { return busy(&state) };
    let (tx, rx) = mpsc::channel::<Event>(64);
    let (done_tx, done_rx) = oneshot::channel::<()>();
    {
        // The receiver is dropped with the response stream when the client
        // disconnects: stop the search then. Once the search is done this
        // watcher lets go of its sender, so the stream can end.
        let tx = tx.clone();
        let cancel = Arc::clone(&cancel);
        tokio::spawn(async move {
            tokio::select! {
                _ = tx.closed() => cancel.store(true, Ordering::Relaxed),
                _ = done_rx => {}
            }
        });
    }
    let shared = Arc::clone(&state);
    let span = search_span(&pos, &limits);
    state.searches.pool.spawn(move || {
        let _span = span.enter();
        let _running = shared.telemetry.search_started();
        let mut on_depth = |r: &SearchResult| {
            if tx.try_send(sse_event("depth", r)).is_err() && tx.is_closed() {
                cancel.store(true, Ordering::Relaxed);
            }
        };
        let r = run_search(&shared, &pos, &limits, &cancel, &mut on_depth);
        drop(permit);
        let last = match r {
            Ok(r) => sse_event("result", &r),
            Err(e) => sse_event("error", &e.body()),
        };
        let _ = tx.blocking_send(last);
        let _ = done_tx.send(());
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx)) });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
