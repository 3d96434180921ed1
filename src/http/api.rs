//! `/api/v1/*`: tbserver's own API.

use axum::{
    body::Bytes,
    extract::{Query, State, rejection::QueryRejection},
    response::Response,
};
use serde::{Deserialize, Serialize};

use super::{
    Answer, AppState, Endpoint, FenQuery, FenRequest, Format,
    admin::{Access, Admin, ClientAccess},
    answer_fen, encoding, limits, openapi, schema,
};
use crate::{
    builtin::schedule::{GenerationState, Progress},
    domain::Source,
    http::error::ApiError,
    probe::{self, MoveOrder},
    request::parse_fen,
    sources::{TableInfo, TableKind},
};

/// Everything the tables say about a position and each of its moves.
#[utoipa::path(
    get, path = "/api/v1/probe", tag = "probe", params(FenQuery),
    responses((status = 200, body = schema::ProbeAnswer, content(
        (schema::ProbeAnswer = "application/json"), (schema::ProbeAnswer = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn probe_get(State(state): State<AppState>, request: FenRequest) -> Result<Response, ApiError> {
    answer_fen(&state, request, Endpoint::Probe, |tb, pos| probe::probe(tb, pos, MoveOrder::Dtm50First)).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchRequest {
    /// Positions in FEN, at most `limits.max_batch`.
    fens: Vec<String>,
}

/// One entry of a batch answer: an answer, or an error object.
#[derive(Serialize)]
#[serde(untagged)]
enum BatchItem {
    Answer(Box<probe::ProbeAnswer>),
    Error(crate::http::error::ErrorBody),
}

/// `POST /api/v1/probe` answer: one entry per FEN, in order.
#[derive(Serialize, utoipa::ToSchema)]
struct BatchResponse {
    #[schema(value_type = Vec<schema::BatchItem>)]
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
    let request: BatchRequest = serde_json::from_slice(&body).map_err(|e| ApiError::InvalidBody(e.to_string()))?;
    let max = state.config.limits.max_batch;
    if request.fens.len() > max {
        return Err(ApiError::BatchTooLarge { size: request.fens.len(), max });
    }
    let cost = limits::BatchCost::of(&request.fens);
    let answer = state
        .compute(Endpoint::Batch, None, false, move |shared| {
            let results: Vec<BatchItem> = request
                .fens
                .iter()
                .map(|fen| {
                    parse_fen(fen)
                        .and_then(|pos| probe::probe(&shared.tablebases(), &pos, MoveOrder::Dtm50First))
                        .map_or_else(|e| BatchItem::Error(ApiError::from(e).body()), |a| BatchItem::Answer(Box::new(a)))
                })
                .collect();
            Ok(BatchResponse { results }.encode_only(format))
        })
        .await?;
    let mut response = answer.response(format);
    response.extensions_mut().insert(cost);
    Ok(response)
}

/// `?metric=dtm50|dtm|dtz`: the distance the mainline follows.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MetricQuery {
    /// `dtm50` (default), `dtm` or `dtz`.
    #[serde(default)]
    #[param(inline, value_type = schema::MoveOrder)]
    metric: MoveOrder,
}

/// The line of best play from a position to its end (mate or conversion).
#[utoipa::path(
    get, path = "/api/v1/mainline", tag = "probe", params(FenQuery, MetricQuery),
    responses((status = 200, body = schema::Mainline, content(
        (schema::Mainline = "application/json"), (schema::Mainline = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn mainline(
    State(state): State<AppState>,
    request: FenRequest,
    metric: Result<Query<MetricQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(MetricQuery { metric }) = metric
        .map_err(|_| ApiError::InvalidParameter { name: "metric", reason: "expected one of dtm50, dtm, dtz".into() })?;
    answer_fen(&state, request, Endpoint::Mainline(metric), move |tb, pos| probe::mainline(tb, pos, metric)).await
}

/// `GET /api/v1/tables` answer.
#[derive(Serialize, utoipa::ToSchema)]
struct TablesResponse<'a> {
    count: usize,
    /// Tables with at least one problem.
    with_problems: usize,
    max_pieces: usize,
    #[schema(value_type = Vec<schema::TableInfo>)]
    tables: Vec<Listed<'a>>,
}

/// A table as listed: what the source says (field by field, so that the
/// answer is one plain map in JSON and CBOR alike), and where its
/// statistics are served.
#[derive(Serialize)]
struct Listed<'a> {
    name: &'a str,
    material: &'a str,
    kind: TableKind,
    source: Source,
    pieces: usize,
    bytes: u64,
    path: Option<&'a str>,
    problems: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<StatsLinks>,
}

impl<'a> Listed<'a> {
    fn of(info: &'a TableInfo) -> Listed<'a> {
        Listed {
            name: &info.name,
            material: &info.material,
            kind: info.kind,
            source: info.source,
            pieces: info.pieces,
            bytes: info.bytes,
            path: info.path.as_deref(),
            problems: &info.problems,
            stats: info.has_stats.then(|| StatsLinks::of(&info.material)),
        }
    }
}

/// Where a table's statistics are served.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"api": "/api/v1/tables/KQvKR/stats", "page": "/tables/KQvKR"}))]
pub(crate) struct StatsLinks {
    /// As JSON.
    pub api: String,
    /// As a page for people.
    pub page: String,
}

impl StatsLinks {
    pub(crate) fn of(material: &str) -> StatsLinks {
        StatsLinks { api: format!("/api/v1/tables/{material}/stats"), page: format!("/tables/{material}") }
    }
}

/// Every table the server has indexed, with any problems found.
#[utoipa::path(get, path = "/api/v1/tables", tag = "probe", responses((status = 200, body = TablesResponse, content(
    (TablesResponse = "application/json"), (TablesResponse = "application/cbor")))))]
pub async fn tables(State(state): State<AppState>, format: Format) -> Response {
    let tablebases = state.tablebases();
    let tables = tablebases.tables();
    encoding::respond(
        &TablesResponse {
            count: tables.len(),
            with_problems: tables.iter().filter(|t| !t.problems.is_empty()).count(),
            max_pieces: tablebases.max_pieces(),
            tables: tables.iter().map(Listed::of).collect(),
        },
        format,
    )
}

/// `?material=KRBvKQ`
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct MaterialQuery {
    /// A table name: white's pieces, `v`, black's, kings included (e.g.
    /// `KRBvKQ`; either colouring): any of 3 to 5 pieces, or four identical
    /// pieces against a bare king (`KNNNNvK`). Required.
    #[param(required = true, example = "KRBvKQ")]
    material: Option<String>,
}

/// How far the built-in tables of one material are.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct GenerationStatus {
    /// The table's canonical name (stronger side first), e.g. `KRBvKQ`.
    material: String,
    /// `ready` when it and every table it converts into can be probed;
    /// `pending` while queued or being generated; `not_started` when it is
    /// not on disk and nobody asked for it.
    #[schema(value_type = schema::GenerationState)]
    state: GenerationState,
    /// The tables not ready yet, in generation order, with rough times.
    #[schema(value_type = schema::Progress)]
    progress: Progress,
    /// Whether the client asking may start the generation (`POST`): `open`
    /// as it is, `token` with the admin token, `closed` not from where it is.
    access: Access,
}

fn material_param(query: Result<Query<MaterialQuery>, QueryRejection>) -> Result<crate::builtin::Material, ApiError> {
    use crate::builtin::Material;
    let Query(query) = query.map_err(|e| ApiError::InvalidParameter { name: "query", reason: e.body_text() })?;
    let name = query.material.ok_or(ApiError::MissingParameter("material"))?;
    Material::parse_table(&name).ok_or_else(|| ApiError::InvalidParameter {
        name: "material",
        reason: format!(
            "{name:?} is not a built-in table: one of 3 to 5 pieces like KRBvKQ, or four identical pieces against a \
             bare king like KNNNNvK"
        ),
    })
}

fn generation_status(
    state: &AppState,
    query: Result<Query<MaterialQuery>, QueryRejection>,
    start: bool,
    access: Access,
) -> Result<Response, ApiError> {
    let material = material_param(query)?;
    let (state, progress) =
        state.tablebases().generation(&material, start).ok_or(ApiError::BuiltinOff)?.map_err(ApiError::Refused)?;
    let pending = state == GenerationState::Pending;
    let status = GenerationStatus { material: material.name(), state, progress, access };
    let mut response = encoding::respond(&status, Format::Json);
    if pending && start {
        *response.status_mut() = axum::http::StatusCode::ACCEPTED;
    }
    Ok(response)
}

/// Generates the built-in table of a material (see `material`) and every
/// table it converts into, in the background. Answers at once: 202 with
/// the tables still to come and a rough time, or 200 when all are ready.
/// Tables of 5 pieces take minutes each and several GiB while they are
/// generated, those of 6 pieces about 10 GiB; probes never start that work unasked. An operator action:
/// it needs the admin token where one is configured, and comes only from
/// the server's own machine where none is. Refused before any work starts
/// when the tables would not fit the memory or disk this server may use,
/// or when `builtin.max_queued_tables` requests are pending.
#[utoipa::path(
    post, path = "/api/v1/tables/generate", tag = "tables", params(MaterialQuery),
    security((), ("admin_token" = [])),
    responses(
        (status = 202, description = "queued or being generated", body = GenerationStatus),
        (status = 200, description = "ready to probe", body = GenerationStatus),
        (status = 400, description = "missing or invalid `material`", body = crate::http::error::ErrorBody),
        (status = 401, description = "`unauthorized`: the server has an admin token and the request has none",
            headers(("WWW-Authenticate" = String, description = "`Bearer realm=\"tbserver\"`")), body = crate::http::error::ErrorBody),
        (status = 403, description = "`forbidden`: a wrong token, or no token configured and the client is not on the server's machine", body = crate::http::error::ErrorBody),
        (status = 409, description = "`builtin_off`: built-in tables are turned off; `read_only`: this server only reads tables made elsewhere (`builtin.mode = \"readonly\"`)", body = crate::http::error::ErrorBody),
        (status = 503, description = "`insufficient_memory`: the largest table's estimated peak memory exceeds what is available; `queue_full`: too many requests pending",
            headers(("Retry-After" = u64, description = "Seconds to wait (queue_full)")), body = crate::http::error::ErrorBody),
        (status = 507, description = "`insufficient_storage`: the tables' estimated size exceeds the free disk or `builtin.max_disk_mib`", body = crate::http::error::ErrorBody),
    )
)]
pub async fn generate_post(
    State(state): State<AppState>,
    _admin: Admin,
    query: Result<Query<MaterialQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    generation_status(&state, query, true, Access::Open)
}

/// How far the built-in tables of a material are, without starting
/// anything (poll this after `POST`).
#[utoipa::path(
    get, path = "/api/v1/tables/generate", tag = "tables", params(MaterialQuery),
    responses(
        (status = 200, body = GenerationStatus),
        (status = 400, description = "missing or invalid `material`", body = crate::http::error::ErrorBody),
        (status = 409, description = "built-in tables are turned off", body = crate::http::error::ErrorBody),
    )
)]
pub async fn generate_get(
    State(state): State<AppState>,
    ClientAccess(access): ClientAccess,
    query: Result<Query<MaterialQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    generation_status(&state, query, false, access)
}
