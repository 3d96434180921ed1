//! Benchmark-only routes, compiled with the `bench-routes` cargo feature
//! (off by default, so that a deployed build has none of them). They are not
//! part of the API and not in the OpenAPI document.

use std::sync::{Arc, OnceLock, atomic::Ordering};

use axum::{Router, extract::State, response::Response};

use super::{AppState, Encoded, Endpoint, FenRequest};
use crate::{http::error::ApiError, request::normalized_fen};

/// Adds `GET /_bench/stored?fen=...`: the floor that
/// `scripts/bench-cache-hit.sh` compares cache hits with. The first request
/// takes the cached `/standard` answer for its FEN; every later one gets
/// those same stored bytes, whatever its query, through the same layers as
/// every route, without parsing or looking anything up.
pub(super) fn add_routes(routes: Router<AppState>) -> Router<AppState> {
    let stored: Arc<OnceLock<Encoded>> = Arc::default();
    routes.route(
        "/_bench/stored",
        axum::routing::get(move |State(state): State<AppState>, request: FenRequest| {
            let stored = Arc::clone(&stored);
            async move { bench_stored(&state, &stored, request) }
        }),
    )
}

fn bench_stored(state: &AppState, stored: &OnceLock<Encoded>, request: FenRequest) -> Result<Response, ApiError> {
    if let Some(stored) = stored.get() {
        return Ok(stored.response(request.format));
    }
    let key = (state.generation.load(Ordering::SeqCst), Endpoint::Standard, normalized_fen(&request.position()?));
    let answer = state.cache.as_ref().and_then(|cache| cache.get(&key)).ok_or(ApiError::NotFound)?;
    Ok(stored.get_or_init(|| answer).response(request.format))
}
