//! The HTTP layer: routing, shared state, middleware. Handlers stay thin:
//! they parse, call [`crate::probe`], and shape the response.

mod admin;
pub mod analyse;
mod api;
#[cfg(feature = "bench-routes")]
mod bench;
mod charts;
mod client;
mod encoding;
pub mod error;
mod front;
mod hot;
mod lichess;
mod limits;
mod metrics_page;
pub(crate) mod openapi;
pub mod pages;
mod schema;
mod serve;
mod stats_page;
mod stats_view;

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{
    Json, Router,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use tokio::sync::Semaphore;
use tower_http::limit::RequestBodyLimitLayer;
use utoipa::OpenApi as _;
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::{Query, rejection::QueryRejection};
use shakmaty::Chess;

pub(crate) use encoding::{Encoded, Format};

use crate::{
    config::Config,
    error::NoAnswer,
    http::error::ApiError,
    request::{normalized_fen, parse_fen},
    tablebase::Tablebases,
    telemetry::Telemetry,
};

/// Everything the handlers share, loaded once.
pub struct Shared {
    /// Swapped whole by [`Shared::rescan`]; a request keeps the `Arc` it
    /// started with, so replaced tables stay mapped until it finishes.
    tablebases: crate::telemetry::CurrentTables,
    pub config: Config,
    /// Serialized answers by endpoint and normalized FEN.
    cache: Option<moka::sync::Cache<(u64, Endpoint, String), Encoded>>,
    /// Rescans so far; part of the cache key, so that an answer computed on
    /// an index a rescan replaced is never served from the cache.
    generation: AtomicU64,
    probe_slots: Semaphore,
    /// Probe requests waiting for a slot (bounded by `max_queued_probes`).
    probes_waiting: AtomicUsize,
    rate_limiter: Option<limits::RateLimiter>,
    /// Per-client cost budgets (`limits.client_budget_per_second`).
    budget: Option<limits::RateLimiter>,
    ready: AtomicBool,
    /// `/api/v1/analyse`: limits, slots and the search thread pool.
    searches: analyse::Searches,
    /// What `/prometheus` reports.
    pub telemetry: Telemetry,
    /// Cached answers by raw request, in front of `cache`.
    hot: Option<hot::HotAnswers>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Endpoint {
    Probe,
    /// `POST /api/v1/probe`: up to `max_batch` positions.
    Batch,
    Mainline(crate::probe::MoveOrder),
    Standard,
    StandardMainline,
    Dtm50ByClock,
    Stats,
}

impl Endpoint {
    /// The work is one position and its children: a bounded number of
    /// probes. Lines, batches, charts and statistics may take much longer.
    fn probes_one_position(self) -> bool {
        matches!(self, Endpoint::Probe | Endpoint::Standard)
    }
}

pub type AppState = Arc<Shared>;

impl Shared {
    pub fn new(tablebases: Arc<Tablebases>, config: Config) -> AppState {
        let tablebases = Arc::new(RwLock::new(tablebases));
        let cache = (config.cache_entries > 0).then(|| moka::sync::Cache::new(config.cache_entries));
        let config_cache_entries = config.cache_entries;
        Arc::new(Shared {
            telemetry: Telemetry::new(Arc::clone(&tablebases)),
            tablebases,
            probe_slots: Semaphore::new(config.limits.max_concurrent_probes.max(1)),
            probes_waiting: AtomicUsize::new(0),
            rate_limiter: limits::RateLimiter::new(&config.limits),
            budget: limits::RateLimiter::budget(&config.limits),
            searches: analyse::Searches::new(config.search.clone()),
            config,
            cache,
            generation: AtomicU64::new(0),
            ready: AtomicBool::new(true),
            hot: (config_cache_entries > 0).then(|| hot::HotAnswers::new(config_cache_entries)),
        })
    }

    /// The tables as of now.
    pub fn tablebases(&self) -> Arc<Tablebases> {
        Arc::clone(&self.tablebases.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Indexes the table directories again and serves from the new index;
    /// requests in flight finish on the old one. Sources whose files are
    /// unchanged are kept with their caches; when any changed, cached
    /// answers are dropped, as they may come from replaced tables. Returns
    /// the index now served.
    pub fn rescan(&self) -> Arc<Tablebases> {
        let current = self.tablebases();
        let Some(fresh) = crate::app::rescan_tablebases(&self.config, &current) else {
            tracing::info!(tables = current.tables().len(), "tables rescanned: no file changed");
            return current;
        };
        let fresh = Arc::new(fresh);
        *self.tablebases.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&fresh);
        // After the swap: whoever reads the new generation computes on `fresh`.
        self.drop_cached_answers();
        let tables = fresh.tables();
        let broken = tables.iter().filter(|t| !t.problems.is_empty()).count();
        tracing::info!(tables = tables.len(), broken, "tables rescanned");
        fresh
    }

    /// Cached answers are no longer served: the next request for each is
    /// computed again.
    fn drop_cached_answers(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(cache) = &self.cache {
            cache.invalidate_all();
        }
        if let Some(hot) = &self.hot {
            hot.clear();
        }
    }

    pub(crate) fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    /// Shutdown has begun: report not ready (load balancers stop sending),
    /// refuse new searches and stop the running ones, whose requests then
    /// complete with the best result found so far.
    pub(crate) fn begin_shutdown(&self) {
        self.set_ready(false);
        self.searches.stop_all();
        // Generation is abandoned (nothing half-written is ever used); a
        // request waiting for it answers 503 `generating` at once.
        self.tablebases().shutdown();
    }

    /// Runs CPU-bound table work off the async threads, at most
    /// `max_concurrent_probes` at once, through the response cache when a
    /// key is given. The work serializes its answer ([`Answer::encode`]), so
    /// that a cache hit only clones the stored bytes; work that is never
    /// cached may serialize only the format asked for
    /// ([`Answer::encode_only`]). Work that only built-in tables being
    /// generated could answer is tried again each time one is ready, for at
    /// most `builtin.wait_ms`; meanwhile the request holds no thread and no
    /// slot. Answers with values still pending are served but never cached.
    async fn compute(
        self: &Arc<Self>,
        endpoint: Endpoint,
        key: Option<String>,
        inline: bool,
        work: impl Fn(&Shared) -> Result<Encoded, ApiError> + Send + Sync + 'static,
    ) -> Result<Encoded, ApiError> {
        let generation = self.generation.load(Ordering::SeqCst);
        let key = key.filter(|_| self.cache.is_some()).map(|k| (generation, endpoint, k));
        if let (Some(cache), Some(key)) = (&self.cache, &key)
            && let Some(hit) = cache.get(key)
        {
            self.telemetry.record_cache(true);
            return Ok(hit);
        }
        if key.is_some() {
            self.telemetry.record_cache(false);
        }
        let work = Arc::new(work);
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.config.builtin.wait_ms);
        // Subscribed before the first try: a table ready during it is not missed.
        let mut generated = self.tablebases().generated();
        let computed = loop {
            let work = Arc::clone(&work);
            match (self.run_probe(endpoint, inline, move |shared| work(shared)).await, generated.as_mut()) {
                (Err(ApiError::Generating(progress)), Some(ready)) => {
                    match tokio::time::timeout_at(deadline, ready.changed()).await {
                        Ok(Ok(())) => continue,
                        _ => return Err(ApiError::Generating(progress)),
                    }
                }
                (result, _) => break result?,
            }
        };
        if let (Some(cache), Some(key), true) = (&self.cache, key, computed.complete) {
            cache.insert(key, computed.clone());
        }
        Ok(computed)
    }

    /// One try of `work`, holding a probe slot: on a blocking thread, or,
    /// for `inline` work (one position whose tables are all in memory:
    /// [`Tablebases::may_block`]), on this async thread when
    /// [`runs_inline`] allows it.
    async fn run_probe<T: Send + 'static>(
        self: &Arc<Self>,
        endpoint: Endpoint,
        inline: bool,
        work: impl FnOnce(&Shared) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = {
            let _waiting = self.telemetry.probe_waiting();
            self.probe_slot().await?
        };
        let span = tracing::debug_span!("probe", endpoint = ?endpoint);
        if inline && endpoint.probes_one_position() && runs_inline() {
            return span.in_scope(|| work(self));
        }
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || span.in_scope(|| work(&shared)))
            .await
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()))
    }
}

/// Whether one position's probes may run on the async thread that has the
/// request (even a full 5-piece answer from memory is short work): on a
/// multi-threaded runtime, yes. Handing them to a blocking thread and back
/// costs two thread wake-ups, a sizeable share of that work, more when the
/// threads are idle (docs/performance.md). The work is synchronous, bounded
/// and reads no file, so at most one runs per async thread at a time, and
/// I/O, timers and requests that need no probe wait behind it as they would
/// behind any handler's work. A thread kept back from it would hand every
/// probe it received to a blocking thread, at the cost of the wake-ups
/// above. On a single-threaded runtime the probes leave its only thread.
fn runs_inline() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// What the endpoints answer: serializable, and complete unless built-in
/// tables are still being generated for some of its values.
pub(crate) trait Answer: serde::Serialize {
    fn is_complete(&self) -> bool;

    /// Serialized in every format, marked complete or not.
    fn encode(&self) -> Encoded {
        let mut encoded = Encoded::new(self);
        encoded.complete = self.is_complete();
        encoded
    }

    /// Serialized in `format` only (see [`Encoded::only`]).
    fn encode_only(&self, format: Format) -> Encoded {
        let mut encoded = Encoded::only(self, format);
        encoded.complete = self.is_complete();
        encoded
    }
}

impl Answer for crate::probe::ProbeAnswer {
    fn is_complete(&self) -> bool {
        crate::probe::ProbeAnswer::is_complete(self)
    }
}

impl Answer for crate::probe::Mainline {
    fn is_complete(&self) -> bool {
        self.pending.is_empty()
    }
}

impl Shared {
    /// A probe slot, waiting in a bounded queue when all are taken.
    async fn probe_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ApiError> {
        if let Ok(permit) = self.probe_slots.try_acquire() {
            return Ok(permit);
        }
        if self.probes_waiting.fetch_add(1, Ordering::SeqCst) >= self.config.limits.max_queued_probes {
            self.probes_waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(ApiError::ProbesBusy);
        }
        // Decrements also when the request is dropped while waiting.
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _waiting = Waiting(&self.probes_waiting);
        Ok(self.probe_slots.acquire().await.expect("semaphore never closed"))
    }
}

/// Every route, each registered together with its OpenAPI description.
/// Add routes here only through `routes!` (tests/openapi.rs checks that).
pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(api::probe_get, api::probe_batch))
        .routes(routes!(api::mainline))
        .routes(routes!(api::tables))
        .routes(routes!(charts::dtm50_by_clock))
        .routes(routes!(charts::dtm50_chart_svg))
        .routes(routes!(charts::table_stats))
        .routes(routes!(charts::tables_page))
        .routes(routes!(charts::table_page))
        .routes(routes!(api::generate_post, api::generate_get))
        .routes(routes!(analyse::analyse))
        .routes(routes!(analyse::analyse_stream))
        .routes(routes!(lichess::standard))
        .routes(routes!(lichess::mainline))
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(prometheus))
        .routes(routes!(openapi::openapi_json))
        .merge(pages::routes())
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    let body_limit = state.config.limits.max_body_bytes;
    let (routes, _document) = routes().split_for_parts();
    #[cfg(feature = "bench-routes")]
    let routes = bench::add_routes(routes);
    routes
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        // One layer of services (outermost first; see front.rs), so that
        // each route is boxed once more, not once per service.
        .layer(
            tower::ServiceBuilder::new()
                .layer(front::FrontLayer::new(Arc::clone(&state)))
                .layer(limits::cors(&state.config.limits))
                .layer(front::GuardLayer::new(Arc::clone(&state)))
                .layer(RequestBodyLimitLayer::new(body_limit)),
        )
        .with_state(state)
}

/// `GET /prometheus`: operational metrics, OpenMetrics text.
#[utoipa::path(
    get, path = "/prometheus", tag = "operations",
    responses((status = 200, description = "Metrics in the OpenMetrics text format", body = String,
        content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"))
)]
async fn prometheus(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    let content_type = HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8");
    ([(header::CONTENT_TYPE, content_type)], state.telemetry.render()).into_response()
}

/// `GET /healthz`: the process answers (liveness).
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = openapi::Status)))]
async fn healthz() -> Json<openapi::Status> {
    Json(openapi::Status { status: "ok" })
}

/// `/readyz` answer.
#[derive(serde::Serialize, utoipa::ToSchema)]
struct Readiness {
    /// `ready`, or `not_ready` (shutting down).
    status: &'static str,
    /// Tables indexed, all sources together.
    tables: usize,
}

/// `GET /readyz`: whether to send traffic here. Tables are indexed before
/// the server listens, so a listening server is ready until it begins to
/// shut down.
#[utoipa::path(
    get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, description = "Shutting down", body = Readiness))
)]
async fn readyz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    let tables = state.tablebases().tables().len();
    if state.ready.load(Ordering::SeqCst) {
        Json(Readiness { status: "ready", tables }).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(Readiness { status: "not_ready", tables })).into_response()
    }
}

impl IntoResponse for ApiError {
    /// The JSON error; the error itself rides along in the response's
    /// extensions, for [`front::Front`] to send it in CBOR if asked.
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status()).unwrap_or(StatusCode::BAD_REQUEST);
        let mut response = (status, Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after_s() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if matches!(self, ApiError::Unauthorized) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"tbserver\""));
        }
        response.extensions_mut().insert(self);
        response
    }
}

/// `?fen=...`
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FenQuery {
    /// The position in Forsyth-Edwards Notation; underscores may stand for
    /// spaces. Required.
    #[param(required = true, example = "8/8/8/8/8/2k5/8/R3K3 w - - 0 1")]
    fen: Option<String>,
}

pub(crate) fn fen_param(query: Result<Query<FenQuery>, QueryRejection>) -> Result<String, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::InvalidParameter { name: "query", reason: e.body_text() })?;
    query.fen.ok_or(ApiError::MissingParameter("fen"))
}

/// A `?fen=` request as it came: its path and query, parsed only when the
/// answer is not already at hand, and the format it asks for.
pub(crate) struct FenRequest {
    uri: axum::http::Uri,
    format: Format,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for FenRequest {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<FenRequest, Self::Rejection> {
        Ok(FenRequest { uri: parts.uri.clone(), format: Format::from_accept(parts.headers.get(header::ACCEPT)) })
    }
}

impl FenRequest {
    fn path_and_query(&self) -> &str {
        self.uri.path_and_query().map_or("", |pq| pq.as_str())
    }

    fn position(&self) -> Result<Chess, ApiError> {
        Ok(parse_fen(&fen_param(Query::try_from_uri(&self.uri))?)?)
    }
}

/// Answers a `?fen=` request: the answer to the same request asked before
/// if there is one (nothing parsed); otherwise parses the FEN and computes
/// the answer for the position (or takes it from the cache, keyed by the
/// normalized FEN); in the format the request asked for.
async fn answer_fen<T: Answer, E>(
    state: &AppState,
    request: FenRequest,
    endpoint: Endpoint,
    work: impl Fn(&Tablebases, &Chess) -> Result<T, E> + Send + Sync + 'static,
) -> Result<Response, ApiError>
where
    ApiError: From<E>,
{
    answer_parsed(state, request, endpoint, parse_fen, work).await
}

/// [`answer_fen`] with the FEN read by `parse` (the lichess endpoints accept
/// castling rights).
async fn answer_parsed<T: Answer, E>(
    state: &AppState,
    request: FenRequest,
    endpoint: Endpoint,
    parse: fn(&str) -> Result<Chess, NoAnswer>,
    work: impl Fn(&Tablebases, &Chess) -> Result<T, E> + Send + Sync + 'static,
) -> Result<Response, ApiError>
where
    ApiError: From<E>,
{
    let generation = state.generation.load(Ordering::SeqCst);
    if let Some(hot) = &state.hot
        && let Some(hit) = hot.get(request.path_and_query(), generation, request.format)
    {
        state.telemetry.record_cache(true);
        return Ok(hit);
    }
    // Boxed: the handler's own future, which the router boxes and moves on
    // every request, stays small for the hits above.
    Box::pin(compute_parsed(state, request, endpoint, parse, work, generation)).await
}

/// [`answer_parsed`] for a request not answered before.
async fn compute_parsed<T: Answer, E>(
    state: &AppState,
    request: FenRequest,
    endpoint: Endpoint,
    parse: fn(&str) -> Result<Chess, NoAnswer>,
    work: impl Fn(&Tablebases, &Chess) -> Result<T, E> + Send + Sync + 'static,
    generation: u64,
) -> Result<Response, ApiError>
where
    ApiError: From<E>,
{
    let pos = parse(&fen_param(Query::try_from_uri(&request.uri))?)?;
    let key = normalized_fen(&pos);
    // Without a response cache the answer is sent once, in one format.
    let (cached, format) = (state.cache.is_some(), request.format);
    let inline = !state.tablebases().may_block(&pos);
    let encoded = state
        .compute(endpoint, Some(key), inline, move |shared| {
            let answer = work(&shared.tablebases(), &pos)?;
            Ok(if cached { answer.encode() } else { answer.encode_only(format) })
        })
        .await?;
    // Partial answers are not kept here either.
    if let Some(hot) = state.hot.as_ref().filter(|_| encoded.complete) {
        hot.insert(request.path_and_query(), generation, encoded.clone());
    }
    Ok(encoded.response(request.format))
}

/// Binds and serves until SIGINT/SIGTERM, letting in-flight requests finish.
pub async fn serve(state: AppState) -> std::io::Result<()> {
    let listener = bind(state.config.listen)?;
    tracing::info!(addr = %listener.local_addr()?, "listening");
    serve_on(listener, state).await
}

/// Connections the kernel may hold, handshake done, before the server
/// accepts them (capped by `net.core.somaxconn`). A burst of thousands of
/// new connections beyond it would wait for the client's retransmissions.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds a listening socket for [`serve_on`], with a backlog that absorbs
/// bursts of new connections.
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    // As std's bind does: a restarted server binds while old connections linger.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves on an already bound listener (tests bind port 0). SIGHUP rescans
/// the table directories.
pub async fn serve_on(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    tokio::spawn(rescan_on_sighup(Arc::clone(&state)));
    tokio::spawn(forget_answers_when_tables_are_ready(Arc::downgrade(&state)));
    // The peer address feeds the per-client limits.
    let app = router(Arc::clone(&state)).into_make_service_with_connect_info::<serve::Peer>();
    let limits = &state.config.limits;
    let max_connections = connection_limit(limits.max_connections, &state);
    tracing::info!(max_connections, "connection limit");
    let connections = Arc::new(serve::Connections::new(
        Duration::from_millis(limits.head_timeout_ms.max(1)),
        Duration::from_millis(limits.idle_timeout_ms.max(1)),
        max_connections,
        state.telemetry.connection_metrics(),
    ));
    let (listener, drain) = serve::Listener::new(listener, connections)?;
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal(state, drain)).await?;
    tracing::info!("every request in flight answered; exiting");
    Ok(())
}

/// `configured`, held below the process's file descriptor limit (raised to
/// its hard limit first) less a reserve for table files, the listening
/// socket, logs and the like.
fn connection_limit(configured: usize, state: &Shared) -> usize {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit/setrlimit with a valid pointer to our own struct.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
                // SAFETY: as above.
                if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                    limit = raised;
                }
            }
            let descriptors = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
            // Syzygy tables are two files each; chesstb keeps up to its own limit open.
            let tables = state.tablebases().tables().len();
            let chesstb = if state.config.chesstb.is_empty() {
                0
            } else {
                usize::try_from(state.config.chesstb_max_open_files).unwrap_or(usize::MAX)
            };
            let reserve = 256usize.saturating_add(tables.saturating_mul(2)).saturating_add(chesstb);
            return configured.min(descriptors.saturating_sub(reserve)).max(16);
        }
    }
    configured.max(1)
}

/// A built-in table that becomes ready can improve answers computed without
/// it and cached as complete: a 5-piece position answered by Syzygy, say,
/// gains exact DTM and DTM50 once its table is generated on request. So
/// every table ready drops the cached answers (cheap: while the 4-piece
/// tables are being made, answers that need them are not cached anyway).
async fn forget_answers_when_tables_are_ready(state: std::sync::Weak<Shared>) {
    loop {
        let Some(mut ready) = state.upgrade().and_then(|s| s.tablebases().generated()) else { return };
        match ready.changed().await {
            Ok(()) => match state.upgrade() {
                Some(s) => s.drop_cached_answers(),
                None => return,
            },
            // That store is gone (tables rescanned): watch the new one.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[cfg(unix)]
async fn rescan_on_sighup(state: AppState) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else { return };
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP: rescanning table directories");
        let state = Arc::clone(&state);
        let _ = tokio::task::spawn_blocking(move || state.rescan()).await;
    }
}

#[cfg(not(unix))]
async fn rescan_on_sighup(_state: AppState) {}

/// Resolves on SIGINT/SIGTERM, after stopping the searches; axum then stops
/// accepting connections and waits for the requests in flight.
async fn shutdown_signal(state: AppState, drain: serve::Drain) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: stopping searches and table generation, finishing requests in flight");
    // It waits a moment for generation jobs to stop: off the async threads.
    let stopping = Arc::clone(&state);
    let _ = tokio::task::spawn_blocking(move || stopping.begin_shutdown()).await;
    // Give load balancers a moment; requests already accepted still complete.
    tokio::time::sleep(Duration::from_millis(10)).await;
    // Accept what the kernel has queued, then stop listening.
    drain.close(Duration::from_secs(1)).await;
    // The server's own shutdown closes connections that have not started a
    // request: give those just accepted a moment to read theirs.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config::SyzygyIo, sources::syzygy::SyzygySource};

    #[test]
    fn probes_run_inline_only_on_a_multi_threaded_runtime() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(3).build().unwrap();
        assert!(runtime.block_on(async { runs_inline() }), "inside a multi-threaded runtime");
        assert!(runtime.block_on(runtime.spawn(async { runs_inline() })).unwrap(), "in a spawned task");
        let current_thread = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(!current_thread.block_on(async { runs_inline() }), "the only thread");
        assert!(!runs_inline(), "outside a runtime");
    }

    /// Which positions may block: a source reading files blocks positions
    /// within its reach (and one piece beyond, for their captures), never
    /// others; memory-mapped Syzygy files never.
    #[test]
    fn positions_within_reach_of_file_reads_may_block() {
        struct Files;
        impl crate::sources::TableSource for Files {
            fn source(&self) -> crate::domain::Source {
                crate::domain::Source::Gaviota
            }
            fn max_pieces(&self) -> usize {
                4
            }
            fn tables(&self) -> Vec<crate::sources::TableInfo> {
                Vec::new()
            }
        }
        let pos = |fen: &str| -> Chess {
            fen.parse::<shakmaty::fen::Fen>().unwrap().into_position(shakmaty::CastlingMode::Standard).unwrap()
        };
        let (three, five, six) = (
            pos("8/8/8/4k3/8/8/8/R3K3 w - - 0 1"),
            pos("8/8/8/4k3/8/2n5/3n4/R3K3 w - - 0 1"),
            pos("8/8/8/4k3/8/2n5/3n4/R3K1R1 w - - 0 1"),
        );
        let files = Tablebases::new(vec![Arc::new(Files)]);
        assert!(files.may_block(&three) && files.may_block(&five));
        assert!(!files.may_block(&six), "neither it nor a capture reaches a 4-piece table");
        let mapped = Tablebases::new(vec![Arc::new(SyzygySource::open(&[], SyzygyIo::Mmap))]);
        assert!(!mapped.may_block(&three));
        let read = Tablebases::new(vec![Arc::new(SyzygySource::open(&[], SyzygyIo::Read)), Arc::new(Files)]);
        assert!(read.may_block(&three), "one source that may block is enough");
    }
}
