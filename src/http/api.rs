//! `/api/v1/*`: tbserver's own API.

use axum::{
    body::Bytes,
    extract::{Query, State, rejection::QueryRejection},
    response::Response,
};
use serde::{Deserialize, Serialize};

use super::{Answer, AppState, Endpoint, FenQuery, FenRequest, Format, answer_fen, encoding, openapi};
use crate::{
    error::ApiError,
    sources::TableInfo,
    probe::{self, MoveOrder},
    request::parse_fen,
};

/// Everything the tables say about a position and each of its moves.
#[utoipa::path(
    get, path = "/api/v1/probe", tag = "probe", params(FenQuery),
    responses((status = 200, body = probe::ProbeAnswer, content(
        (probe::ProbeAnswer = "application/json"), (probe::ProbeAnswer = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn probe_get(
    State(state): State<AppState>,
    request: FenRequest,
) -> Result<Response, ApiError> {
    answer_fen(&state, request, Endpoint::Probe, |tb, pos| probe::probe(tb, pos, MoveOrder::Dtm50First)).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// Positions in FEN, at most `limits.max_batch`.
    fens: Vec<String>,
}

/// One entry of a batch answer: an answer, or an error object.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
enum BatchItem {
    Answer(Box<probe::ProbeAnswer>),
    Error(crate::error::ErrorBody),
}

/// `POST /api/v1/probe` answer: one entry per FEN, in order.
#[derive(Serialize, utoipa::ToSchema)]
struct BatchResponse {
    results: Vec<BatchItem>,
}

impl Answer for BatchResponse {
    /// Never cached; a position whose tables are being generated is an
    /// error entry (`generating`), not a wait.
    fn is_complete(&self) -> bool {
        self.results.iter().all(|r| matches!(r, BatchItem::Answer(a) if a.is_complete()))
    }
}

/// The answers for many positions at once.
#[utoipa::path(
    post, path = "/api/v1/probe", tag = "probe", request_body = BatchRequest,
    responses((status = 200, body = BatchResponse, content(
        (BatchResponse = "application/json"), (BatchResponse = "application/cbor"))), openapi::BatchErrors)
)]
pub async fn probe_batch(State(state): State<AppState>, format: Format, body: Bytes) -> Result<Response, ApiError> {
    let request: BatchRequest =
        serde_json::from_slice(&body).map_err(|e| ApiError::InvalidBody(e.to_string()))?;
    let max = state.config.limits.max_batch;
    if request.fens.len() > max {
        return Err(ApiError::BatchTooLarge { size: request.fens.len(), max });
    }
    let answer = state
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
            Ok(BatchResponse { results }.encode())
        })
        .await?;
    Ok(answer.response(format))
}

/// `?metric=dtm50|dtm|dtz`: the distance the mainline follows.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MetricQuery {
    /// `dtm50` (default), `dtm` or `dtz`.
    #[serde(default)]
    #[param(inline)]
    metric: MoveOrder,
}

/// The line of best play from a position to its end (mate or conversion).
#[utoipa::path(
    get, path = "/api/v1/mainline", tag = "probe", params(FenQuery, MetricQuery),
    responses((status = 200, body = probe::Mainline, content(
        (probe::Mainline = "application/json"), (probe::Mainline = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn mainline(
    State(state): State<AppState>,
    request: FenRequest,
    metric: Result<Query<MetricQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(MetricQuery { metric }) = metric.map_err(|_| ApiError::InvalidParameter {
        name: "metric",
        reason: "expected one of dtm50, dtm, dtz".into(),
    })?;
    answer_fen(&state, request, Endpoint::Mainline(metric), move |tb, pos| probe::mainline(tb, pos, metric)).await
}

/// `GET /api/v1/tables` answer.
#[derive(Serialize, utoipa::ToSchema)]
struct TablesResponse {
    count: usize,
    /// Tables with at least one problem.
    with_problems: usize,
    max_pieces: usize,
    tables: Vec<TableInfo>,
}

/// Every table the server has indexed, with any problems found.
#[utoipa::path(get, path = "/api/v1/tables", tag = "probe", responses((status = 200, body = TablesResponse, content(
    (TablesResponse = "application/json"), (TablesResponse = "application/cbor")))))]
pub async fn tables(State(state): State<AppState>, format: Format) -> Response {
    let tablebases = state.tablebases();
    let tables = tablebases.tables();
    encoding::respond(&TablesResponse {
        count: tables.len(),
        with_problems: tables.iter().filter(|t| !t.problems.is_empty()).count(),
        max_pieces: tablebases.max_pieces(),
        tables,
    }, format)
}
