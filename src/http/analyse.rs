//! `/api/v1/analyse` and `/api/v1/analyse/stream`: the bounded search over
//! HTTP. Searches run on their own thread pool (never on the threads that
//! answer probes), at most `max_concurrent_searches` at once (503 +
//! `Retry-After` beyond), each capped at `max_movetime_ms`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::{
    Json,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response, sse::{Event, KeepAlive, Sse}},
};
use serde::Deserialize;
use shakmaty::Chess;
use shakmaty_syzygy::{Dtz, MaybeRounded, Wdl};
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::AppState;
use crate::{
    error::ApiError,
    request::parse_fen,
    search::{self, Limits, Oracle, SearchOptions, SearchResult},
    tablebase::Tablebases,
};

/// Server-wide search limits. Set once at start-up with [`configure`].
#[derive(Debug, Clone)]
pub struct AnalyseConfig {
    pub max_movetime_ms: u64,
    pub default_movetime_ms: u64,
    pub max_concurrent_searches: usize,
    pub hash_mb: usize,
    pub threads_per_search: usize,
}

impl Default for AnalyseConfig {
    fn default() -> Self {
        AnalyseConfig {
            max_movetime_ms: 10_000,
            default_movetime_ms: 2_000,
            max_concurrent_searches: 2,
            hash_mb: 64,
            threads_per_search: 1,
        }
    }
}

static CONFIG: OnceLock<AnalyseConfig> = OnceLock::new();

/// Sets the search limits; only the first call counts (before serving).
pub fn configure(config: AnalyseConfig) {
    let _ = CONFIG.set(config);
}

fn config() -> &'static AnalyseConfig {
    CONFIG.get_or_init(AnalyseConfig::default)
}

fn slots() -> &'static Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    SLOTS.get_or_init(|| Arc::new(Semaphore::new(config().max_concurrent_searches.max(1))))
}

fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(config().max_concurrent_searches.max(1))
            .thread_name(|i| format!("search-{i}"))
            .build()
            .expect("search thread pool")
    })
}

/// The service's tables as the search sees them (probing policy of
/// [`Tablebases`]; a broken table reads as "no answer", so search goes on).
impl Oracle for Tablebases {
    fn max_pieces(&self) -> usize {
        Tablebases::max_pieces(self)
    }
    fn wdl(&self, pos: &Chess) -> Option<Wdl> {
        Tablebases::wdl(self, pos).ok().flatten().map(|s| s.value)
    }
    fn dtz(&self, pos: &Chess) -> Option<MaybeRounded<Dtz>> {
        Tablebases::dtz(self, pos).ok().flatten().map(|s| s.value)
    }
    fn dtm_plies(&self, pos: &Chess) -> Option<i32> {
        Tablebases::dtm_plies(self, pos).ok().flatten().map(|s| s.value)
    }
}

#[derive(Debug, Deserialize)]
pub struct AnalyseQuery {
    fen: Option<String>,
    movetime_ms: Option<u64>,
    nodes: Option<u64>,
    depth: Option<u32>,
}

fn parse(query: Result<Query<AnalyseQuery>, QueryRejection>) -> Result<(Chess, Limits), ApiError> {
    let Query(q) = query.map_err(|e| ApiError::InvalidParameter { name: "query", reason: e.body_text() })?;
    let pos = parse_fen(q.fen.as_deref().ok_or(ApiError::MissingParameter("fen"))?)?;
    let cfg = config();
    // Every search has a time budget, whatever the request asks.
    let movetime_ms = q.movetime_ms.unwrap_or(cfg.default_movetime_ms).clamp(1, cfg.max_movetime_ms);
    Ok((pos, Limits { movetime: Some(Duration::from_millis(movetime_ms)), nodes: q.nodes, depth: q.depth }))
}

fn busy() -> Response {
    let body = serde_json::json!({ "error": { "code": "busy", "message": "too many searches in progress; retry later" } });
    let mut r = (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn options() -> SearchOptions {
    SearchOptions { threads: config().threads_per_search.max(1), hash_mb: config().hash_mb }
}

/// `GET /api/v1/analyse`: the final result as JSON.
pub async fn analyse(State(state): State<AppState>, query: Result<Query<AnalyseQuery>, QueryRejection>) -> Response {
    let (pos, limits) = match parse(query) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let Ok(permit) = Arc::clone(slots()).try_acquire_owned() else { return busy() };
    let cancel = Arc::new(AtomicBool::new(false));
    // Cancels the search if this request future is dropped (client gone).
    let _guard = CancelOnDrop(Arc::clone(&cancel));
    let (tx, rx) = oneshot::channel();
    let tables = Arc::clone(&state.tablebases);
    let c = Arc::clone(&cancel);
    pool().spawn(move || {
        let r = search::analyse(&pos, tables.as_ref(), &limits, &options(), &c, &mut |_| {});
        drop(permit);
        let _ = tx.send(r);
    });
    match rx.await {
        Ok(r) => Json(r).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "search failed").into_response(),
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
pub async fn analyse_stream(
    State(state): State<AppState>,
    query: Result<Query<AnalyseQuery>, QueryRejection>,
) -> Response {
    let (pos, limits) = match parse(query) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let Ok(permit) = Arc::clone(slots()).try_acquire_owned() else { return busy() };
    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Event>(64);
    {
        // The receiver is dropped with the response stream when the client
        // disconnects: stop the search then.
        let tx = tx.clone();
        let cancel = Arc::clone(&cancel);
        tokio::spawn(async move {
            tx.closed().await;
            cancel.store(true, Ordering::Relaxed);
        });
    }
    let tables = Arc::clone(&state.tablebases);
    pool().spawn(move || {
        let event = |name: &str, r: &SearchResult| {
            Event::default().event(name).json_data(r).unwrap_or_else(|_| Event::default().event(name))
        };
        let mut on_depth = |r: &SearchResult| {
            if tx.try_send(event("depth", r)).is_err() && tx.is_closed() {
                cancel.store(true, Ordering::Relaxed);
            }
        };
        let r = search::analyse(&pos, tables.as_ref(), &limits, &options(), &cancel, &mut on_depth);
        drop(permit);
        let _ = tx.blocking_send(event("result", &r));
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
