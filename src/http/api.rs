//! `/api/v1/*`: tbserver's own API.

use axum::{
    body::Bytes,
    extract::{Query, State, rejection::QueryRejection},
    response::Response,
};
use serde::{Deserialize, Serialize};

use super::{AppState, Endpoint, FenQuery, answer_fen, json_bytes, to_json};
use crate::{
    error::ApiError,
    probe::{self, MoveOrder},
    request::parse_fen,
};

pub async fn probe_get(
    State(state): State<AppState>,
    query: Result<Query<FenQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    answer_fen(&state, query, Endpoint::Probe, |tb, pos| probe::probe(tb, pos, MoveOrder::Dtm50First)).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    fens: Vec<String>,
}

/// One entry of a batch answer: an answer, or an error object.
#[derive(Serialize)]
#[serde(untagged)]
enum BatchItem {
    Answer(Box<probe::ProbeAnswer>),
    Error(crate::error::ErrorBody),
}

pub async fn probe_batch(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let request: BatchRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::InvalidBody(e.to_string()))?;
    let max = state.config.limits.max_batch;
    if request.fens.len() > max {
        return Err(ApiError::BatchTooLarge { size: request.fens.len(), max });
    }
    let bytes = state
        .compute(Endpoint::Probe, None, move |shared| {
            let results: Vec<BatchItem> = request
                .fens
                .iter()
                .map(|fen| {
                    parse_fen(fen)
                        .and_then(|pos| probe::probe(&shared.tablebases(), &pos, MoveOrder::Dtm50First))
                        .map_or_else(|e| BatchItem::Error(e.body()), |a| BatchItem::Answer(Box::new(a)))
                })
                .collect();
            Ok(to_json(&serde_json::json!({ "results": results })))
        })
        .await;
    bytes.map(json_bytes)
}

/// `?metric=dtm50|dtm|dtz`: the distance the mainline follows.
#[derive(Debug, Deserialize)]
pub struct MetricQuery {
    #[serde(default)]
    metric: MoveOrder,
}

pub async fn mainline(
    State(state): State<AppState>,
    query: Result<Query<FenQuery>, QueryRejection>,
    metric: Result<Query<MetricQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(MetricQuery { metric }) = metric.map_err(|_| ApiError::InvalidParameter {
        name: "metric",
        reason: "expected one of dtm50, dtm, dtz".into(),
    })?;
    answer_fen(&state, query, Endpoint::Mainline(metric), move |tb, pos| probe::mainline(tb, pos, metric)).await
}

pub async fn tables(State(state): State<AppState>) -> Response {
    let tablebases = state.tablebases();
    let tables = tablebases.tables();
    let problems = tables.iter().filter(|t| !t.problems.is_empty()).count();
    json_bytes(to_json(&serde_json::json!({
        "count": tables.len(),
        "with_problems": problems,
        "max_pieces": tablebases.max_pieces(),
        "tables": tables,
    })))
}
