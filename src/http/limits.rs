//! Limits on what one request or one client may take: query length, time,
//! rate per client address, CORS; and JSON errors for what the HTTP framework
//! itself rejects (body too large, wrong method), so that every refusal has
//! a stable code.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    http::{HeaderName, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

use crate::{
    config::{Limits, SearchConfig},
    http::error::ApiError,
};

/// Paths that orchestrators poll: never rate limited.
pub(super) const UNLIMITED_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Token buckets by client: `burst` units, refilled at `per_second`. A
/// request is let in while its client has the units it costs (or a full
/// bucket, for a cost above `burst`), and then takes them; a cost found out
/// only from the answer is settled then ([`RateLimiter::settle`]), which may
/// leave the client in debt.
pub(crate) struct RateLimiter {
    per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// How long a 429 for a spent limit waits before it is sent.
pub(crate) const REFUSAL_DELAY: Duration = Duration::from_millis(500);

/// Buckets kept; beyond it the fullest (the idlest clients: a full bucket
/// is the same as none) are forgotten, down to nine tenths.
const MAX_TRACKED_CLIENTS: usize = 100_000;

/// A client's bucket after a request was let in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Remaining {
    /// Whole units left.
    pub units: u64,
    /// Seconds until the bucket is full again.
    pub full_in_s: u64,
}

impl RateLimiter {
    /// The request-count limit; `None` when off.
    pub fn new(limits: &Limits) -> Option<RateLimiter> {
        RateLimiter::with(limits.rate_limit_per_second, limits.rate_limit_burst)
    }

    /// The cost budget; `None` when off.
    pub fn budget(limits: &Limits) -> Option<RateLimiter> {
        RateLimiter::with(limits.client_budget_per_second, limits.client_budget_burst)
    }

    fn with(per_second: f64, burst: u32) -> Option<RateLimiter> {
        (per_second > 0.0).then(|| RateLimiter {
            per_second,
            burst: f64::from(burst.max(1)),
            buckets: Mutex::default(),
        })
    }

    /// The bucket's size, in units.
    pub fn burst(&self) -> u64 {
        self.burst as u64
    }

    /// Seconds an empty bucket takes to fill.
    pub fn window_s(&self) -> u64 {
        (self.burst / self.per_second).ceil() as u64
    }

    fn remaining(&self, tokens: f64) -> Remaining {
        Remaining {
            units: tokens.max(0.0) as u64,
            full_in_s: ((self.burst - tokens) / self.per_second).ceil().max(0.0) as u64,
        }
    }

    /// Takes `cost` units from `client`'s bucket, or says in how many
    /// seconds the request would be let in.
    pub(crate) fn check(&self, client: IpAddr, cost: f64, now: Instant) -> Result<Remaining, u64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_TRACKED_CLIENTS && !buckets.contains_key(&client) {
            self.forget_idlest(&mut buckets, now);
        }
        let bucket = buckets.entry(client).or_insert(Bucket { tokens: self.burst, at: now });
        let refilled = bucket.tokens + now.saturating_duration_since(bucket.at).as_secs_f64() * self.per_second;
        bucket.tokens = refilled.min(self.burst);
        bucket.at = now;
        let needed = cost.min(self.burst);
        if bucket.tokens >= needed {
            bucket.tokens -= cost;
            Ok(self.remaining(bucket.tokens))
        } else {
            Err(((needed - bucket.tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }

    /// Charges `client` `extra` more units (less, when negative) for a
    /// request already let in.
    pub(crate) fn settle(&self, client: IpAddr, extra: f64) -> Remaining {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        match buckets.get_mut(&client) {
            Some(bucket) => {
                bucket.tokens = (bucket.tokens - extra).min(self.burst);
                self.remaining(bucket.tokens)
            }
            None => self.remaining(self.burst),
        }
    }

    fn forget_idlest(&self, buckets: &mut HashMap<IpAddr, Bucket>, now: Instant) {
        let level = |b: &Bucket| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * self.per_second;
        buckets.retain(|_, b| level(b) < self.burst);
        if buckets.len() >= MAX_TRACKED_CLIENTS {
            let mut levels: Vec<f64> = buckets.values().map(level).collect();
            let keep = MAX_TRACKED_CLIENTS * 9 / 10;
            let (_, &mut threshold, _) = levels.select_nth_unstable_by(keep, f64::total_cmp);
            buckets.retain(|_, b| level(b) < threshold);
        }
    }
}

/// What a request costs, by the kind of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CostClass {
    /// One position and its moves.
    Probe,
    /// A line to mate or a chart: a probe per move or per clock value.
    Line,
    /// `POST /api/v1/probe`: a probe per position.
    Batch,
    /// A search, by the time asked for.
    Analysis,
    /// Pages, table listings, metrics, operator actions.
    Other,
}

/// Units per position probed, by pieces: larger tables are read from disk
/// more and cached less.
fn piece_weight(pieces: usize) -> f64 {
    match pieces {
        0..=5 => 1.0,
        6 => 2.0,
        _ => 4.0,
    }
}

/// Units for a line (a probe per move to the end) or a chart, per piece
/// weight.
const LINE_UNITS: f64 = 10.0;
/// Units per second of search asked for: a client keeps at most one search
/// slot busy at the default budget.
const ANALYSIS_UNITS_PER_S: f64 = 100.0;
/// Bytes of a batch body per position, for the estimate charged before the
/// body is read (a FEN with its quotes and comma takes 30 to 90).
const BATCH_BYTES_PER_POSITION: u64 = 64;

impl CostClass {
    pub fn as_str(self) -> &'static str {
        match self {
            CostClass::Probe => "probe",
            CostClass::Line => "line",
            CostClass::Batch => "batch",
            CostClass::Analysis => "analysis",
            CostClass::Other => "other",
        }
    }

    /// The class and the cost charged before the request runs, from its
    /// head alone. A batch's is estimated from its length and settled by
    /// [`BatchCost`] once its positions are known.
    pub fn of(
        method: &Method,
        uri: &axum::http::Uri,
        headers: &axum::http::HeaderMap,
        limits: &Limits,
        search: &SearchConfig,
    ) -> (CostClass, f64) {
        let query = uri.query().unwrap_or("");
        let weight = || piece_weight(query_value(query, "fen").map_or(0, |fen| count_pieces(&fen)));
        match uri.path() {
            "/api/v1/probe" if method == Method::POST => {
                let bytes =
                    headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok()).unwrap_or(0);
                let positions = (bytes / BATCH_BYTES_PER_POSITION).clamp(1, limits.max_batch.max(1) as u64);
                (CostClass::Batch, positions as f64)
            }
            "/api/v1/probe" | "/standard" => (CostClass::Probe, weight()),
            "/api/v1/mainline" | "/standard/mainline" | "/api/v1/dtm50-by-clock" | "/dtm50-chart.svg" => {
                (CostClass::Line, LINE_UNITS * weight())
            }
            "/api/v1/analyse" | "/api/v1/analyse/stream" => {
                let ms = query_value(query, "movetime_ms")
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(search.default_movetime_ms)
                    .clamp(1, search.max_movetime_ms.max(1));
                (CostClass::Analysis, (ANALYSIS_UNITS_PER_S * ms as f64 / 1000.0).ceil())
            }
            _ => (CostClass::Other, 1.0),
        }
    }
}

/// The whole cost of a batch, known once its positions are: put in the
/// answer's extensions for the budget to settle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchCost(pub f64);

impl BatchCost {
    pub fn of<'a>(fens: impl IntoIterator<Item = &'a String>) -> BatchCost {
        BatchCost(fens.into_iter().map(|fen| piece_weight(count_pieces(fen))).sum::<f64>().max(1.0))
    }
}

/// Pieces on the board of a FEN (the letters of its first field).
fn count_pieces(fen: &str) -> usize {
    fen.trim_start().bytes().take_while(|&b| b != b' ' && b != b'_').filter(|b| b"pnbrqkPNBRQK".contains(b)).count()
}

/// The percent-decoded value of `name` in a query string (`+` is a space).
fn query_value(query: &str, name: &str) -> Option<String> {
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    let (bytes, mut out, mut i) = (raw.as_bytes(), Vec::with_capacity(raw.len()), 0);
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|&b| (b as char).to_digit(16));
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The `RateLimit-Policy` and `RateLimit` fields (the IETF httpapi draft's
/// syntax): the policy `cost`, its quota and the seconds an empty bucket
/// takes to fill; units left and seconds until full.
pub(crate) fn rate_limit_headers(budget: &RateLimiter, left: Remaining, headers: &mut axum::http::HeaderMap) {
    let policy = format!("\"cost\";q={};w={}", budget.burst(), budget.window_s());
    let state = format!("\"cost\";r={};t={}", left.units, left.full_in_s);
    for (name, value) in [(RATELIMIT_POLICY, policy), (RATELIMIT, state)] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
}

const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Gives the framework's own error responses (plain text or empty: 413 from
/// the body limit, 405, extractor rejections) the JSON error shape.
pub async fn json_errors(response: Response, max_body_bytes: usize) -> Response {
    let status = response.status();
    let is_json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge { max: max_body_bytes },
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed,
        StatusCode::NOT_FOUND => ApiError::NotFound,
        _ => {
            let text = axum::body::to_bytes(response.into_body(), 4096).await.unwrap_or_default();
            let message = String::from_utf8_lossy(&text).trim().to_owned();
            let message =
                if message.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { message };
            ApiError::Rejected { status: status.as_u16(), message }
        }
    };
    error.into_response()
}

/// A panic in a handler answers 500 `internal_error` (and is logged by the
/// panic hook) instead of dropping the connection.
pub(crate) fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    ApiError::Internal.into_response()
}

/// CORS for the configured origins; `*` allows any (as lichess does).
pub(crate) fn cors(limits: &Limits) -> CorsLayer {
    let origins = &limits.cors_allowed_origins;
    let allow_origin = if origins.iter().any(|o| o == "*") {
        AllowOrigin::from(Any)
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    CorsLayer::new()
        .allow_origin(allow_origin)
        .allow_methods([Method::GET, Method::POST, Method::HEAD, Method::OPTIONS])
        .allow_headers([header::CONTENT_TYPE])
        .max_age(Duration::from_secs(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_refills_at_its_rate() {
        let limits = Limits { rate_limit_per_second: 2.0, rate_limit_burst: 3, ..Limits::default() };
        let limiter = RateLimiter::new(&limits).unwrap();
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        assert!((0..3).all(|_| limiter.check(a, 1.0, t0).is_ok()));
        assert_eq!(limiter.check(a, 1.0, t0), Err(1));
        assert!(limiter.check(b, 1.0, t0).is_ok(), "other clients have their own bucket");
        // Half a second later, one token (2 per second) is back.
        assert!(limiter.check(a, 1.0, t0 + Duration::from_millis(500)).is_ok());
        assert_eq!(limiter.check(a, 1.0, t0 + Duration::from_millis(500)), Err(1));
        assert!(RateLimiter::new(&Limits::default()).is_none(), "off by default");
    }

    #[test]
    fn budget_charges_costs_and_debts() {
        let limits = Limits { client_budget_per_second: 10.0, client_budget_burst: 100, ..Limits::default() };
        let budget = RateLimiter::budget(&limits).unwrap();
        let (a, t0) = ("192.0.2.1".parse().unwrap(), Instant::now());
        assert_eq!(budget.check(a, 60.0, t0), Ok(Remaining { units: 40, full_in_s: 6 }));
        assert_eq!(budget.check(a, 60.0, t0), Err(2), "20 units short at 10 per second");
        // A batch found to cost more than estimated leaves a debt.
        assert_eq!(budget.settle(a, 50.0), Remaining { units: 0, full_in_s: 11 });
        assert_eq!(budget.check(a, 1.0, t0 + Duration::from_secs(1)), Err(1));
        assert!(budget.check(a, 1.0, t0 + Duration::from_millis(1100)).is_ok());
        // A cost above the burst is let in on a full bucket.
        let b = "192.0.2.2".parse().unwrap();
        assert!(budget.check(b, 500.0, t0).is_ok());
        assert_eq!(budget.check(b, 1.0, t0 + Duration::from_secs(40)), Err(1));
        assert_eq!((budget.burst(), budget.window_s()), (100, 10));
        assert!(RateLimiter::budget(&Limits { client_budget_per_second: 0.0, ..Limits::default() }).is_none());
    }

    #[test]
    fn costs_by_class_pieces_positions_and_search_time() {
        let (limits, search) = (Limits::default(), SearchConfig::default());
        let cost = |method: Method, uri: &str, length: Option<u64>| {
            let mut headers = axum::http::HeaderMap::new();
            if let Some(n) = length {
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
            }
            CostClass::of(&method, &uri.parse().unwrap(), &headers, &limits, &search)
        };
        assert_eq!(cost(Method::GET, "/api/v1/probe?fen=8/8/8/4k3/8/8/8/KR6_w_-_-_0_1", None), (CostClass::Probe, 1.0));
        // Six pieces, percent-encoded (K as %4B): twice the units.
        let six = "/standard?fen=8%2F8%2F8%2F4k3%2F8%2F8%2FPPPP4%2F4%4B3%20w%20-%20-%200%201";
        assert_eq!(cost(Method::GET, six, None), (CostClass::Probe, 2.0));
        assert_eq!(cost(Method::GET, "/api/v1/mainline?fen=4k3/8/8/8/8/8/1R6/4K3+w", None), (CostClass::Line, 10.0));
        assert_eq!(cost(Method::POST, "/api/v1/probe", Some(64 * 100)), (CostClass::Batch, 100.0));
        assert_eq!(cost(Method::POST, "/api/v1/probe", Some(10_000_000)), (CostClass::Batch, 256.0));
        assert_eq!(cost(Method::GET, "/api/v1/analyse?fen=x&movetime_ms=5000", None), (CostClass::Analysis, 500.0));
        assert_eq!(cost(Method::GET, "/api/v1/analyse?fen=x&movetime_ms=999999", None), (CostClass::Analysis, 1000.0));
        assert_eq!(cost(Method::GET, "/api/v1/analyse/stream?fen=x", None), (CostClass::Analysis, 200.0));
        assert_eq!(cost(Method::GET, "/tables", None), (CostClass::Other, 1.0));
        let fens = ["8/8/8/4k3/8/8/8/KR6 w - - 0 1".to_owned(), "4k3/pppppppp/8/8/8/8/8/4K3 w - - 0 1".to_owned()];
        assert_eq!(BatchCost::of(&fens).0, 5.0);
    }
}
