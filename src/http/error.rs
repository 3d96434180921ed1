//! Errors a client can receive, each with a stable code and HTTP status;
//! the domain's [`NoAnswer`] maps onto them.

use serde::Serialize;

use crate::{
    builtin::{budget::Refusal, schedule::Progress},
    error::NoAnswer,
    sources::TableError,
};

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("missing query parameter `{0}`")]
    MissingParameter(&'static str),
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
    #[error("invalid FEN: {0}")]
    InvalidFen(String),
    #[error("illegal position: {0}")]
    IllegalPosition(String),
    #[error("the position has castling rights; endgame tables cover only positions without them")]
    CastlingRights,
    /// `generate`: the table name, when the built-in tables can make it on
    /// request (`POST /api/v1/tables/generate`).
    #[error("the position has {pieces} pieces; the configured tables cover at most {max}{}", generate_hint(.generate))]
    TooManyPieces { pieces: usize, max: usize, generate: Option<String> },
    #[error("no table covers {material}; missing: {missing}")]
    MissingTable { material: String, missing: String },
    /// The position's material has tables, but none with exact DTM50 (the
    /// clock chart needs it).
    #[error(
        "no DTM50 table covers {material}: exact DTM50 comes from built-in tables (up to 4 pieces, larger ones once an operator generates them) and chesstb tables"
    )]
    NoDtm50Table { material: String },
    #[error("{0}")]
    Table(TableError),
    /// Only built-in tables could answer, and they are being generated.
    #[error(
        "the built-in tables for {} are being generated ({} of {} ready, about {:.0} s left); retry shortly",
        .0.material, .0.tables_ready, .0.tables_needed, .0.estimated_remaining_s
    )]
    Generating(Box<Progress>),
    #[error("built-in tables are turned off (builtin.mode = \"off\"): nothing can be generated")]
    BuiltinOff,
    /// An operator action without the admin token, on a server that has one.
    #[error("this action needs the admin token: send `Authorization: Bearer TOKEN`")]
    Unauthorized,
    /// An operator action with a wrong token, or from another machine on a
    /// server that has no token.
    #[error("{0}")]
    Forbidden(&'static str),
    /// A generation that would not fit this server's memory, disk or queue,
    /// refused before any work started (or a table that could not be written).
    #[error("{0}")]
    Refused(Refusal),
    #[error("batch of {size} positions is larger than the limit of {max}")]
    BatchTooLarge { size: usize, max: usize },
    #[error("invalid request body: {0}")]
    InvalidBody(String),
    #[error("no such endpoint")]
    NotFound,
    #[error("too many searches in progress; retry later")]
    Busy,
    #[error("too many probe requests waiting; retry later")]
    ProbesBusy,
    #[error("query string of {bytes} bytes is longer than the limit of {max}")]
    QueryTooLong { bytes: usize, max: usize },
    /// A request line longer than the HTTP server reads (hyper's refusal).
    #[error("the request line is longer than the server reads (64 KiB); the query string is too long")]
    UriTooLong,
    /// A request head larger than the HTTP server's buffer, or with more
    /// than 100 headers (hyper's refusal).
    #[error("the request headers are larger than the server reads (about 400 KB, at most 100 headers)")]
    HeadersTooLarge,
    /// Not HTTP/1.1 that the server can parse (hyper's refusal).
    #[error("malformed HTTP request")]
    MalformedRequest,
    #[error("request body is larger than the limit of {max} bytes")]
    BodyTooLarge { max: usize },
    #[error("method not allowed on this endpoint")]
    MethodNotAllowed,
    #[error(
        "this client's request budget is spent (too many requests, or too costly ones); retry in {retry_after_s} s"
    )]
    RateLimited { retry_after_s: u64 },
    #[error("no answer within {ms} ms; retry later")]
    Timeout { ms: u64 },
    #[error("internal error")]
    Internal,
    /// A rejection by the HTTP framework that has no code of its own.
    #[error("{message}")]
    Rejected { status: u16, message: String },
}

fn generate_hint(material: &Option<String>) -> String {
    match material {
        Some(m) => format!(
            " until the built-in table {m} is generated: POST /api/v1/tables/generate?material={m} makes it (minutes of work)"
        ),
        None => String::new(),
    }
}

impl ApiError {
    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::MissingParameter(_) => "missing_parameter",
            ApiError::InvalidParameter { .. } => "invalid_parameter",
            ApiError::InvalidFen(_) => "invalid_fen",
            ApiError::IllegalPosition(_) => "illegal_position",
            ApiError::CastlingRights => "castling_rights",
            ApiError::TooManyPieces { .. } => "too_many_pieces",
            ApiError::MissingTable { .. } => "missing_table",
            ApiError::NoDtm50Table { .. } => "no_dtm50_table",
            ApiError::Table(_) => "table_error",
            ApiError::Generating(_) => "generating",
            ApiError::BuiltinOff => "builtin_off",
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::Refused(Refusal::Memory { .. }) => "insufficient_memory",
            ApiError::Refused(Refusal::Disk { .. } | Refusal::Unwritten { .. }) => "insufficient_storage",
            ApiError::Refused(Refusal::QueueFull { .. }) => "queue_full",
            ApiError::Refused(Refusal::ReadOnly) => "read_only",
            ApiError::BatchTooLarge { .. } => "batch_too_large",
            ApiError::InvalidBody(_) => "invalid_body",
            ApiError::NotFound => "not_found",
            ApiError::Busy | ApiError::ProbesBusy => "busy",
            ApiError::QueryTooLong { .. } | ApiError::UriTooLong => "query_too_long",
            ApiError::HeadersTooLarge => "headers_too_large",
            ApiError::MalformedRequest => "bad_request",
            ApiError::BodyTooLarge { .. } => "body_too_large",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Timeout { .. } => "timeout",
            ApiError::Internal => "internal_error",
            ApiError::Rejected { status, .. } if *status >= 500 => "internal_error",
            ApiError::Rejected { .. } => "bad_request",
        }
    }

    /// The HTTP status: 4xx for what the client can fix, 503 for a table
    /// that is broken on our side.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::MissingParameter(_)
            | ApiError::InvalidParameter { .. }
            | ApiError::InvalidFen(_)
            | ApiError::InvalidBody(_) => 400,
            ApiError::IllegalPosition(_) | ApiError::CastlingRights | ApiError::TooManyPieces { .. } => 422,
            ApiError::MissingTable { .. } | ApiError::NoDtm50Table { .. } | ApiError::NotFound => 404,
            ApiError::BatchTooLarge { .. } | ApiError::BodyTooLarge { .. } => 413,
            ApiError::QueryTooLong { .. } | ApiError::UriTooLong => 414,
            ApiError::HeadersTooLarge => 431,
            ApiError::MalformedRequest => 400,
            ApiError::MethodNotAllowed => 405,
            ApiError::BuiltinOff | ApiError::Refused(Refusal::ReadOnly) => 409,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden(_) => 403,
            ApiError::Refused(Refusal::Disk { .. } | Refusal::Unwritten { .. }) => 507,
            ApiError::Refused(Refusal::Memory { .. } | Refusal::QueueFull { .. }) => 503,
            ApiError::RateLimited { .. } => 429,
            ApiError::Table(_)
            | ApiError::Generating(_)
            | ApiError::Busy
            | ApiError::ProbesBusy
            | ApiError::Timeout { .. } => 503,
            ApiError::Internal => 500,
            ApiError::Rejected { status, .. } => *status,
        }
    }

    /// Seconds after which retrying may succeed, sent as `Retry-After`.
    pub(crate) fn retry_after_s(&self) -> Option<u64> {
        match self {
            ApiError::Busy | ApiError::ProbesBusy | ApiError::Timeout { .. } => Some(1),
            ApiError::RateLimited { retry_after_s } => Some(*retry_after_s),
            // A queued table of 5 pieces takes a minute or more.
            ApiError::Refused(Refusal::QueueFull { .. }) => Some(60),
            // Soon enough to show progress, never a busy loop.
            ApiError::Generating(p) => Some((p.estimated_remaining_s.ceil() as u64).clamp(1, 5)),
            _ => None,
        }
    }

    /// One error of each kind (for documentation: the list of codes).
    pub fn examples() -> [ApiError; 22] {
        let s = String::new;
        let room = || crate::builtin::budget::Room { bytes: 0, limited_by: s() };
        [
            ApiError::MissingParameter("fen"),
            ApiError::InvalidParameter { name: "query", reason: s() },
            ApiError::InvalidFen(s()),
            ApiError::IllegalPosition(s()),
            ApiError::CastlingRights,
            ApiError::TooManyPieces { pieces: 0, max: 0, generate: None },
            ApiError::MissingTable { material: s(), missing: s() },
            ApiError::NoDtm50Table { material: s() },
            ApiError::Table(TableError { table: s(), reason: s() }),
            ApiError::Generating(Box::new(Progress::ready(s()))),
            ApiError::BatchTooLarge { size: 0, max: 0 },
            ApiError::InvalidBody(s()),
            ApiError::NotFound,
            ApiError::Busy,
            ApiError::QueryTooLong { bytes: 0, max: 0 },
            ApiError::HeadersTooLarge,
            ApiError::Unauthorized,
            ApiError::Forbidden(""),
            ApiError::Refused(Refusal::Memory { table: s(), needed_bytes: 0, available: room() }),
            ApiError::Refused(Refusal::Disk { tables: s(), needed_bytes: 0, available: room() }),
            ApiError::Refused(Refusal::QueueFull { pending: 0 }),
            ApiError::Refused(Refusal::ReadOnly),
        ]
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code(),
                message: self.to_string(),
                table: match self {
                    ApiError::Table(e) => Some(e.table.clone()),
                    _ => None,
                },
                generating: match self {
                    ApiError::Generating(p) => Some(p.as_ref().clone()),
                    _ => None,
                },
            },
        }
    }
}

/// `{"error": {"code": "...", "message": "..."}}`
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    #[schema(schema_with = code_schema)]
    pub code: &'static str,
    pub message: String,
    /// The table at fault, for `table_error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// For `generating`: which built-in tables are being generated and how far.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<super::schema::Progress>)]
    pub generating: Option<Progress>,
}

/// The `code` field's schema: a string, with every code and its status
/// listed from [`ApiError::examples`].
fn code_schema() -> utoipa::openapi::schema::Object {
    let codes: Vec<String> = ApiError::examples().iter().map(|e| format!("`{}` ({})", e.code(), e.status())).collect();
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .description(Some(format!(
            "Stable machine-readable code: {}; pages (`/board.svg`, `/static/...`) also use `invalid_request`, `invalid_fen` and `not_found`.",
            codes.join(", ")
        )))
        .examples([serde_json::json!("invalid_fen")])
        .build()
}

impl From<TableError> for ApiError {
    fn from(err: TableError) -> ApiError {
        ApiError::Table(err)
    }
}

impl From<NoAnswer> for ApiError {
    fn from(err: NoAnswer) -> ApiError {
        match err {
            NoAnswer::InvalidFen(reason) => ApiError::InvalidFen(reason),
            NoAnswer::IllegalPosition(reason) => ApiError::IllegalPosition(reason),
            NoAnswer::CastlingRights => ApiError::CastlingRights,
            NoAnswer::TooManyPieces { pieces, max, generate } => ApiError::TooManyPieces { pieces, max, generate },
            NoAnswer::MissingTable { material, missing } => ApiError::MissingTable { material, missing },
            NoAnswer::NoDtm50Table { material } => ApiError::NoDtm50Table { material },
            NoAnswer::Table(err) => ApiError::Table(err),
            NoAnswer::Generating(progress) => ApiError::Generating(progress),
        }
    }
}
