//! The OpenAPI 3.1 description, generated from the handlers' `#[utoipa::path]`
//! annotations and the response types' `ToSchema` derives. Routes are
//! registered through `utoipa_axum::routes!`, which adds a handler to the
//! router and to the document at once, so the two cannot drift.

use std::sync::OnceLock;

use axum::{
    body::Bytes,
    response::{IntoResponse, Response},
};
use utoipa::{IntoResponses, OpenApi, ToSchema};

use crate::http::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "tbserver",
        description = "Chess endgame tablebases over HTTP/JSON: Syzygy, Gaviota and built-in tables.\n\nEvery answer documented with both `application/json` and `application/cbor` comes in CBOR (RFC 8949) when the `Accept` header prefers `application/cbor`, as lichess's tablebase server does: the same keys and values, integers as integers, null where JSON has null; such answers carry `Vary: Accept`. Errors of `/api/v1/*` come in CBOR as well when CBOR is asked for (the same `{\"error\": {...}}` shape); errors of the lichess endpoints (`/standard`, `/standard/mainline`) are always JSON, since lichess answers errors in plain text and its clients never decode them as CBOR.",
        license(name = "GPL-3.0-or-later", identifier = "GPL-3.0-or-later"),
    ),
    components(schemas(ErrorBody)),
    modifiers(&AdminToken),
    tags(
        (name = "probe", description = "tbserver's own API"),
        (name = "lichess", description = "The lichess tablebase API's fields and move order"),
        (name = "search", description = "The bounded DTM50-style search"),
        (name = "tables", description = "Generating built-in tables on request"),
        (name = "operations", description = "Health, readiness, metrics, this document"),
        (name = "pages", description = "Browser pages and their assets"),
    )
)]
pub(crate) struct ApiDoc;

/// The bearer token of operator actions (`admin_token_file`).
struct AdminToken;

impl utoipa::Modify for AdminToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator's token (config `admin_token_file`, env `TBSERVER_ADMIN_TOKEN`). Without one configured, operator actions are open to loopback clients only.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Errors of endpoints that take a position (`?fen=`). The body's `code`
/// tells which error it is.
#[derive(IntoResponses)]
#[allow(dead_code)] // describes responses; never constructed
pub(crate) enum PositionErrors {
    /// `missing_parameter`, `invalid_parameter` or `invalid_fen`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// `missing_table`: no configured table covers the material.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// `illegal_position`, `castling_rights` or `too_many_pieces`.
    #[response(status = 422)]
    Unprocessable(ErrorBody),
    /// `table_error`: a table file is broken on the server's side;
    /// `generating`: only built-in tables can answer, and they are being
    /// generated (`error.generating` says which and how far; `Retry-After`
    /// says when to ask again). `busy` and `timeout` as everywhere.
    #[response(status = 503, headers(("Retry-After" = u64, description = "Seconds to wait before asking again (generating, busy, timeout)")))]
    Unavailable(ErrorBody),
}

/// Errors of `POST /api/v1/probe` as a whole (each position's own error is
/// an entry of `results`).
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum BatchErrors {
    /// `invalid_body`: not `{"fens": [...]}`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// `batch_too_large`, or a body over `limits.max_body_bytes`.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// `table_error`.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// Errors of the search endpoints.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub(crate) enum SearchErrors {
    /// `missing_parameter`, `invalid_parameter` or `invalid_fen`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// `illegal_position` or `castling_rights`.
    #[response(status = 422)]
    Unprocessable(ErrorBody),
    /// `busy`: every search slot is taken, or the server is shutting down;
    /// retry after `Retry-After` seconds.
    #[response(status = 503, headers(("Retry-After" = u32, description = "Seconds to wait")))]
    Busy(ErrorBody),
}

/// `{"status": "ok"}` and the like.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct Status {
    pub status: &'static str,
}

/// The whole document: [`ApiDoc`] and every route of [`super::routes`].
pub(crate) fn document() -> utoipa::openapi::OpenApi {
    let mut document = super::routes().split_for_parts().1;
    document_query_too_long(&mut document);
    document
}

/// Every route answers 414 `query_too_long` for a query string over
/// `limits.max_query_bytes` (a layer in front of all of them, see
/// [`super::limits::query_length`]), so every operation lists it.
fn document_query_too_long(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let response = ResponseBuilder::new()
        .description("`query_too_long`: the query string is longer than `limits.max_query_bytes`")
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
        .build();
    for item in document.paths.paths.values_mut() {
        let operations =
            [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.head, &mut item.patch];
        for operation in operations.into_iter().flatten() {
            operation.responses.responses.entry("414".to_owned()).or_insert_with(|| response.clone().into());
        }
    }
}

/// `GET /api/openapi.json`: this document.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json"))
)]
pub async fn openapi_json() -> Response {
    static JSON: OnceLock<Bytes> = OnceLock::new();
    let bytes = JSON.get_or_init(|| Bytes::from(document().to_json().expect("the document serializes"))).clone();
    ([(axum::http::header::CONTENT_TYPE, "application/json")], bytes).into_response()
}
