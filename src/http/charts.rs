//! The DTM50 clock chart (`/api/v1/dtm50-by-clock`, `/dtm50-chart.svg`) and
//! table statistics (`/api/v1/tables/{material}/stats`, `/tables`,
//! `/tables/{material}`).

use axum::{
    extract::{Path, State},
    http::{HeaderValue, header},
    response::{Html, IntoResponse, Response},
};
use tbgen::stats::TableStats;

use super::stats_view::TableStatsBody;
use super::{
    Answer, AppState, Endpoint, FenQuery, FenRequest, Format, answer_fen, encoding, openapi, schema, stats_page,
};
use crate::{
    builtin::Material,
    clock_chart::{self, Dtm50ByClock},
    http::error::ApiError,
    probe::api_error,
};

impl Answer for Dtm50ByClock {
    /// Every value is there, or the request failed.
    fn is_complete(&self) -> bool {
        true
    }
}

/// DTM50 at every half-move clock 0–99, in one answer: the values
/// `/api/v1/probe` reports at each clock, and where they change (a longer
/// mate forced, a win or loss turning into a draw). Only for positions an
/// exact DTM50 table covers (built-in tables, chesstb); others get 404
/// `no_dtm50_table`.
#[utoipa::path(
    get, path = "/api/v1/dtm50-by-clock", tag = "probe", params(FenQuery),
    responses((status = 200, body = schema::Dtm50ByClock, content(
        (schema::Dtm50ByClock = "application/json"), (schema::Dtm50ByClock = "application/cbor"))), openapi::PositionErrors)
)]
pub async fn dtm50_by_clock(State(state): State<AppState>, request: FenRequest) -> Result<Response, ApiError> {
    answer_fen(&state, request, Endpoint::Dtm50ByClock, clock_chart::dtm50_by_clock).await
}

/// The clock chart as an SVG image, for sharing: a step line of DTM50
/// (mate in full moves) over clocks 0–99, the position's own clock marked,
/// each change circled. Errors as `/api/v1/dtm50-by-clock`, in JSON.
#[utoipa::path(
    get, path = "/dtm50-chart.svg", tag = "pages", params(FenQuery),
    responses((status = 200, content_type = "image/svg+xml", body = String), openapi::PositionErrors)
)]
pub async fn dtm50_chart_svg(State(state): State<AppState>, request: FenRequest) -> Result<Response, ApiError> {
    let pos = request.position()?;
    let chart = state
        .run_probe(Endpoint::Dtm50ByClock, false, move |shared| {
            Ok::<_, ApiError>(clock_chart::dtm50_by_clock(&shared.tablebases(), &pos)?)
        })
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("image/svg+xml")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        clock_chart::render_svg(&chart),
    )
        .into_response())
}

/// A table name from the path, as its canonical material (stronger side
/// first).
fn material_of(name: &str) -> Result<Material, ApiError> {
    Material::parse_table(name).map(|m| m.canonical()).ok_or_else(|| ApiError::InvalidParameter {
        name: "material",
        reason: format!("{name:?} is not a table name like KQvKR"),
    })
}

/// The statistics of the table of `name`, read (or, the first time for a
/// table on disk without them, computed) off the async threads.
async fn stats_of(state: &AppState, name: String) -> Result<std::sync::Arc<TableStats>, ApiError> {
    let material = material_of(&name)?;
    state
        .run_probe(Endpoint::Stats, false, move |shared| {
            let tb = shared.tablebases();
            match tb.table_stats(&material) {
                Ok(Some(stats)) => Ok(stats.value),
                Ok(None) => Err(ApiError::MissingTable {
                    material: material.name(),
                    missing: format!(
                        "{m} (built-in, not generated yet; its statistics come with it: `tbserver generate {m}` \
                         makes it, so does an operator's POST /api/v1/tables/generate?material={m}, and a table \
                         of up to 4 pieces is made when a position first needs it)",
                        m = material.name()
                    ),
                }),
                Err(err) => Err(api_error(&tb, err).into()),
            }
        })
        .await
}

/// Statistics of a built-in table: positions by category (win, cursed
/// win, draw, blessed loss, loss) for each side to move, the longest
/// DTZ50'', DTM and DTM50 (clock 0) with an example position each, and
/// histograms of the three. Computed when the table is generated and
/// stored with it.
#[utoipa::path(
    get, path = "/api/v1/tables/{material}/stats", tag = "tables",
    params(("material" = String, Path, description = "A table name, either colouring (e.g. `KQvKR`)", example = "KQvKR")),
    responses(
        (status = 200, body = TableStatsBody, content((TableStatsBody = "application/json"), (TableStatsBody = "application/cbor"))),
        (status = 400, description = "`invalid_parameter`: not a table name", body = crate::http::error::ErrorBody),
        (status = 404, description = "`missing_table`: no built-in table of this material has been generated", body = crate::http::error::ErrorBody),
        (status = 503, description = "`generating`: the table is being generated; `table_error`; `busy`, `timeout`", body = crate::http::error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
    )
)]
pub async fn table_stats(
    State(state): State<AppState>,
    format: Format,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let stats = stats_of(&state, name).await?;
    Ok(encoding::respond(&TableStatsBody::from(stats.as_ref()), format))
}

/// The built-in tables with statistics, as a page.
#[utoipa::path(get, path = "/tables", tag = "pages", responses((status = 200, content_type = "text/html", body = String)))]
pub async fn tables_page(State(state): State<AppState>) -> Response {
    let mut tables: Vec<(String, usize)> =
        state.tablebases().tables().into_iter().filter(|t| t.has_stats).map(|t| (t.material, t.pieces)).collect();
    tables.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    tables.dedup();
    no_cache(Html(stats_page::render_index(&tables)).into_response())
}

/// One built-in table's statistics, as a page. Errors are JSON, as those
/// of `/api/v1/tables/{material}/stats`.
#[utoipa::path(
    get, path = "/tables/{material}", tag = "pages",
    params(("material" = String, Path, description = "A table name (e.g. `KQvKR`)", example = "KQvKR")),
    responses(
        (status = 200, content_type = "text/html", body = String),
        (status = 400, description = "`invalid_parameter`: not a table name", body = crate::http::error::ErrorBody),
        (status = 404, description = "`missing_table`: no built-in table of this material has been generated", body = crate::http::error::ErrorBody),
        (status = 503, description = "`generating`: the table is being generated; `table_error`; `busy`, `timeout`", body = crate::http::error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
    )
)]
pub async fn table_page(State(state): State<AppState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let stats = stats_of(&state, name).await?;
    Ok(no_cache(Html(stats_page::render(&stats)).into_response()))
}

fn no_cache(mut res: Response) -> Response {
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}
