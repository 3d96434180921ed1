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
    http::{HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

use crate::{config::Limits, http::error::ApiError};

/// Paths that orchestrators poll: never rate limited.
pub(super) const UNLIMITED_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Token buckets by client address: `burst` tokens, refilled at
/// `per_second`; a request takes one.
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

/// Buckets kept before full ones (idle clients) are forgotten.
const MAX_TRACKED_CLIENTS: usize = 100_000;

impl RateLimiter {
    /// `None` when the limit is off.
    pub fn new(limits: &Limits) -> Option<RateLimiter> {
        (limits.rate_limit_per_second > 0.0).then(|| RateLimiter {
            per_second: limits.rate_limit_per_second,
            burst: f64::from(limits.rate_limit_burst.max(1)),
            buckets: Mutex::default(),
        })
    }

    /// Takes a token for `client`, or says in how many seconds one is due.
    pub(crate) fn check(&self, client: IpAddr, now: Instant) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_TRACKED_CLIENTS {
            buckets.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * self.per_second < self.burst);
        }
        let bucket = buckets.entry(client).or_insert(Bucket { tokens: self.burst, at: now });
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.per_second;
        bucket.tokens = refilled.min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - bucket.tokens) / self.per_second).ceil().max(1.0) as u64)
        }
    }
}

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
        assert_eq!((0..3).map(|_| limiter.check(a, t0)).collect::<Vec<_>>(), vec![Ok(()); 3]);
        assert_eq!(limiter.check(a, t0), Err(1));
        assert_eq!(limiter.check(b, t0), Ok(()), "other clients have their own bucket");
        // Half a second later, one token (2 per second) is back.
        assert_eq!(limiter.check(a, t0 + Duration::from_millis(500)), Ok(()));
        assert_eq!(limiter.check(a, t0 + Duration::from_millis(500)), Err(1));
        assert!(RateLimiter::new(&Limits::default()).is_none(), "off by default");
    }
}
