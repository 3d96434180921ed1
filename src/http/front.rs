//! What every request passes through around its route, as two services of
//! our own beside tower-http's CORS and body limit. Each layer added with
//! `Router::layer` boxes the route again and each `middleware::from_fn`
//! clones and boxes what it wraps, per request: with the ten layers these
//! two services stand for, that would be most of a cached answer's own cost
//! (scripts/bench-vs-lichess.sh).
//!
//! From the outside in:
//! - [`Front`]: the request ID (the client's `x-request-id`, or a new one),
//!   sent back; the request's tracing span and its start, end and failure
//!   events; the request metrics; CBOR errors where CBOR was asked for; a
//!   panic answered 500 `internal_error`.
//! - CORS (tower-http).
//! - [`Guard`]: the client (its address, or the one a trusted proxy
//!   forwards), its rate limit and cost budget, the query length, the time
//!   limit, and the JSON error shape for the framework's own refusals.
//! - the request body limit (tower-http).

use std::{
    convert::Infallible,
    future::Future,
    panic::{AssertUnwindSafe, catch_unwind},
    pin::{Pin, pin},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::{
    extract::{ConnectInfo, MatchedPath, Request},
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use tower::{Layer, Service};
use tracing::Instrument as _;

use super::{AppState, Format, client, encoding, limits, serve::Peer};
use crate::http::error::ApiError;

type BoxFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone)]
pub(crate) struct FrontLayer {
    state: AppState,
    ids: RequestIds,
}

impl FrontLayer {
    pub fn new(state: AppState) -> FrontLayer {
        FrontLayer { state, ids: RequestIds::new() }
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front { inner, state: Arc::clone(&self.state), ids: self.ids.clone() }
    }
}

#[derive(Clone)]
pub(crate) struct Front<S> {
    inner: S,
    state: AppState,
    ids: RequestIds,
}

impl<S> Service<Request> for Front<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> BoxFuture {
        let id = match request.headers().get(X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = self.ids.next();
                request.headers_mut().insert(X_REQUEST_ID, id.clone());
                id
            }
        };
        let span = tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id.to_str().unwrap_or_default());
        // The route template: an `Arc<str>`, cloned without copying.
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = request.method().clone();
        let error_format = encoding::cbor_errors_on(request.uri().path())
            .then(|| Format::from_accept(request.headers().get(header::ACCEPT)));
        let started = Instant::now();
        let state = Arc::clone(&self.state);
        let called = span.in_scope(|| {
            tracing::debug!("started processing request");
            catch_unwind(AssertUnwindSafe(|| self.inner.call(request)))
        });
        Box::pin(
            async move {
                let mut response = match called {
                    Ok(future) => {
                        let mut future = pin!(future);
                        std::future::poll_fn(|cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                            Ok(Poll::Ready(Ok(response))) => Poll::Ready(response),
                            Ok(Poll::Pending) => Poll::Pending,
                            Err(panic) => Poll::Ready(limits::panic_response(panic)),
                        })
                        .await
                    }
                    Err(panic) => limits::panic_response(panic),
                };
                let latency = started.elapsed();
                let status = response.status();
                let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
                state.telemetry.record_request(route, method.as_str(), status.as_u16(), latency);
                if let Some(format) = error_format
                    && (status.is_client_error() || status.is_server_error())
                {
                    response = encoding::negotiate_error(response, format);
                }
                tracing::debug!(
                    latency_ms = latency.as_secs_f64() * 1e3,
                    status = status.as_u16(),
                    "finished processing request"
                );
                if status.is_server_error() {
                    log_failure(status, latency);
                }
                response.headers_mut().entry(X_REQUEST_ID).or_insert(id);
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// Server errors in the log: an intended 503 (busy, timeout, a broken table)
/// is routine under load and would drown real failures at ERROR level.
fn log_failure(status: StatusCode, latency: Duration) {
    if status == StatusCode::SERVICE_UNAVAILABLE {
        tracing::debug!(%status, ?latency, "refused or unavailable")
    } else {
        tracing::error!(failure = %format_args!("Status code: {status}"), ?latency, "request failed")
    }
}

#[derive(Clone)]
pub(crate) struct GuardLayer {
    state: AppState,
}

impl GuardLayer {
    pub fn new(state: AppState) -> GuardLayer {
        GuardLayer { state }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard { inner, state: Arc::clone(&self.state) }
    }
}

#[derive(Clone)]
pub(crate) struct Guard<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Error = Infallible> + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> BoxFuture {
        let state = &self.state;
        let limits = &state.config.limits;
        let peer = request.extensions().get::<ConnectInfo<Peer>>().map(|ConnectInfo(peer)| peer);
        // The connection's clock stops until the answer is ready.
        let in_flight = peer.and_then(Peer::request_started);
        let client = peer.map(|p| client::client_ip(request.headers(), p.addr.ip(), &limits.trusted_proxies));
        let limited = client.filter(|_| !limits::UNLIMITED_PATHS.contains(&request.uri().path()));
        let now = Instant::now();
        let mut refusal = None;
        if let (Some(limiter), Some(client)) = (&state.rate_limiter, limited)
            && let Err(retry_after_s) = limiter.check(client::budget_key(client), 1.0, now)
        {
            refusal = Some((ApiError::RateLimited { retry_after_s }, None));
        }
        // The cost budget: what this request costs, taken from its client's
        // bucket (clients in `budget_exempt` are never charged).
        let mut charge = None;
        if refusal.is_none()
            && let (Some(budget), Some(client)) = (&state.budget, limited)
            && !limits.budget_exempt.iter().any(|net| net.contains(client))
        {
            let key = client::budget_key(client);
            let (class, cost) =
                limits::CostClass::of(request.method(), request.uri(), request.headers(), limits, &state.config.search);
            match budget.check(key, cost, now) {
                Ok(left) => charge = Some((key, class, cost, left)),
                Err(retry_after_s) => {
                    state.telemetry.record_cost(class.as_str(), true, cost as u64);
                    let left = limits::Remaining { units: 0, full_in_s: retry_after_s };
                    refusal = Some((ApiError::RateLimited { retry_after_s }, Some(left)));
                }
            }
        }
        if refusal.is_none()
            && let Some(bytes) = request.uri().query().map(str::len)
            && bytes > limits.max_query_bytes
        {
            refusal = Some((ApiError::QueryTooLong { bytes, max: limits.max_query_bytes }, None));
        }
        if let Some((refusal, left)) = refusal {
            let over_limit = matches!(refusal, ApiError::RateLimited { .. });
            let mut response = refusal.into_response();
            if let (Some(budget), Some(left)) = (&state.budget, left) {
                limits::rate_limit_headers(budget, left, response.headers_mut());
            }
            if over_limit {
                // A client that asks again at once, ignoring Retry-After, is
                // slowed down rather than refused as fast as it can ask.
                return Box::pin(async move {
                    tokio::time::sleep(limits::REFUSAL_DELAY).await;
                    drop(in_flight);
                    Ok(response)
                });
            }
            return Box::pin(std::future::ready(Ok(response)));
        }
        let ms = limits.request_timeout_ms;
        let max_body_bytes = limits.max_body_bytes;
        let answer = self.inner.call(request);
        let state = Arc::clone(state);
        Box::pin(async move {
            let response = match tokio::time::timeout(Duration::from_millis(ms), answer).await {
                Ok(Ok(response)) => response.into_response(),
                Err(_) => ApiError::Timeout { ms }.into_response(),
            };
            let mut response = limits::json_errors(response, max_body_bytes).await;
            if let (Some(budget), Some((key, class, estimate, mut left))) = (&state.budget, charge) {
                let mut cost = estimate;
                // A batch's positions are known now: settle the estimate.
                if let Some(&limits::BatchCost(actual)) = response.extensions().get::<limits::BatchCost>() {
                    left = budget.settle(key, actual - estimate);
                    cost = actual;
                }
                state.telemetry.record_cost(class.as_str(), false, cost as u64);
                limits::rate_limit_headers(budget, left, response.headers_mut());
            }
            drop(in_flight);
            Ok(response)
        })
    }
}

/// `x-request-id` values for requests that bring none: UUID-shaped, a
/// random per-process prefix and a counter. Unique like a random UUID
/// within a process's life, without a `getrandom` system call per request.
#[derive(Clone)]
struct RequestIds {
    prefix: u64,
    next: Arc<AtomicU64>,
}

impl RequestIds {
    fn new() -> RequestIds {
        use std::hash::{BuildHasher, Hasher};
        // The standard library seeds `RandomState` from the OS.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
        );
        RequestIds { prefix: hasher.finish(), next: Arc::new(AtomicU64::new(0)) }
    }

    fn next(&self) -> HeaderValue {
        use std::io::Write as _;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let p = self.prefix;
        // Written in place: the header value is the only allocation.
        let mut id = [0u8; 36];
        write!(
            &mut id[..],
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            p >> 32,
            (p >> 16) & 0xffff,
            p & 0xfff,
            0x8000 | ((n >> 48) & 0x3fff),
            n & 0xffff_ffff_ffff
        )
        .expect("36 bytes hold a UUID");
        HeaderValue::from_bytes(&id).expect("hex digits and dashes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_uuid_shaped_and_distinct() {
        let ids = RequestIds::new();
        let (a, b) = (ids.next(), ids.next());
        assert_ne!(a, b);
        let a = a.to_str().unwrap();
        assert_eq!(a.len(), 36);
        assert_eq!(a.split('-').map(str::len).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert_eq!(&a[14..15], "4", "version 4");
    }
}
