//! Browser-facing routes: the probe page (`/`), the metrics explainer
//! (`/metrics`), server-rendered boards (`/board.svg`) and the bundled static
//! assets under `/static/`. Everything is embedded in the binary.
//!
//! Merge with `Router::merge(pages::routes())`; the handlers need no state.

use axum::{
    Json,
    extract::{FromRef, Path, RawQuery, State},
    http::{HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use shakmaty::{Board, CastlingMode, Chess, Color, Position, Square, fen::Fen, uci::UciMove};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::AppState;
use crate::board_svg::{self, SvgOptions};

/// All page routes. Generic over the router state so it merges into any app
/// whose state gives access to [`AppState`] (the metrics page probes its
/// reference positions live).
pub(crate) fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AppState: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(index))
        .routes(routes!(metrics))
        .routes(routes!(board_svg_handler))
        .routes(routes!(static_file))
}

/// `/board.svg` query (parsed by hand, see [`parse_board_request`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // describes the query; never constructed
struct BoardQuery {
    /// The position (FEN, or only its board part); underscores may stand for spaces.
    #[param(required = true, example = "8/8/8/8/8/2k5/8/R3K3 w - - 0 1")]
    fen: String,
    /// `white` or `black` at the bottom.
    orientation: Option<String>,
    /// A move to highlight, in UCI notation.
    lastmove: Option<String>,
    /// Square to mark as in check (by default the king in check, if any).
    check: Option<String>,
    /// Board size in pixels (clamped to a sensible range).
    size: Option<u32>,
    /// `0`, `false`, `no` or `off` hide the coordinates.
    coordinates: Option<String>,
}

/// One embedded asset: path under `/static/`, content type, bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../static/app.js"),
    },
    Asset { path: "app.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("../../static/app.css") },
    Asset { path: "site.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("../../static/site.css") },
    Asset { path: "favicon.svg", content_type: "image/svg+xml", bytes: include_bytes!("../../static/favicon.svg") },
    Asset {
        path: "LICENSES.md",
        content_type: "text/plain; charset=utf-8",
        bytes: include_bytes!("../../static/LICENSES.md"),
    },
];

const INDEX_HTML: &str = include_str!("../../static/index.html");

/// The probe page.
#[utoipa::path(get, path = "/", tag = "pages", responses((status = 200, content_type = "text/html", body = String)))]
async fn index() -> Response {
    let mut res = Html(INDEX_HTML).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// The page's bundled assets.
#[utoipa::path(
    get, path = "/static/{file}", tag = "pages",
    params(("file" = String, Path, description = "Asset name", example = "app.js")),
    responses(
        (status = 200, description = "The asset, with its content type", content(
            (String = "text/javascript"), (String = "text/css"), (String = "image/svg+xml"), (String = "text/plain"))),
        (status = 404, body = crate::http::error::ErrorBody),
    )
)]
async fn static_file(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.path == file) {
        Some(asset) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
                (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300")),
            ],
            asset.bytes,
        )
            .into_response(),
        None => error_response(StatusCode::NOT_FOUND, "not_found", &format!("no static file {file:?}")),
    }
}

/// `{"error":{"code":…,"message":…}}` with the given status.
fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(serde_json::json!({ "error": { "code": code, "message": message } }))).into_response()
}

/// Decode one `application/x-www-form-urlencoded` component (`+` is a space).
fn url_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Query parameters as (name, value) pairs, in order.
fn query_pairs(raw: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let k = url_decode(k).ok_or_else(|| format!("badly encoded query parameter {k:?}"))?;
        let v = url_decode(v).ok_or_else(|| format!("badly encoded value for {k:?}"))?;
        pairs.push((k, v));
    }
    Ok(pairs)
}

/// Parsed `/board.svg` request.
#[derive(Debug)]
pub struct BoardRequest {
    pub board: Board,
    pub options: SvgOptions,
}

/// Parse the query of `/board.svg`. Errors are (code, message).
pub fn parse_board_request(raw: Option<&str>) -> Result<BoardRequest, (&'static str, String)> {
    let pairs = query_pairs(raw).map_err(|m| ("invalid_request", m))?;
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim());

    let fen_text = get("fen").ok_or(("invalid_fen", "missing query parameter fen".to_owned()))?;
    // Underscores are accepted in place of spaces, as in many shared links.
    let fen_text = fen_text.replace('_', " ");
    let fen_text = fen_text.trim();
    if fen_text.is_empty() {
        return Err(("invalid_fen", "empty FEN".to_owned()));
    }
    let (board, position) = match Fen::from_ascii(fen_text.as_bytes()) {
        Ok(fen) => {
            let position: Option<Chess> = fen.clone().into_position(CastlingMode::Chess960).ok();
            (fen.into_setup().board, position)
        }
        Err(full_err) => match Board::from_ascii_board_fen(fen_text.as_bytes()) {
            Ok(board) => (board, None),
            Err(_) => return Err(("invalid_fen", format!("invalid FEN {fen_text:?}: {full_err}"))),
        },
    };

    let mut options = SvgOptions::default();
    if let Some(o) = get("orientation") {
        options.orientation = match o {
            "white" | "w" | "" => Color::White,
            "black" | "b" => Color::Black,
            other => {
                return Err(("invalid_request", format!("orientation must be white or black, not {other:?}")));
            }
        };
    }
    if let Some(size) = get("size").filter(|s| !s.is_empty()) {
        let size: u64 = size
            .parse()
            .map_err(|_| ("invalid_request", format!("size must be a whole number of pixels, not {size:?}")))?;
        options.size = board_svg::clamp_size(size.min(u64::from(u32::MAX)) as u32);
    }
    if let Some(coords) = get("coordinates") {
        options.coordinates = !matches!(coords, "0" | "false" | "no" | "off");
    }
    match get("check").filter(|s| !s.is_empty()) {
        Some(sq) => {
            let sq: Square =
                sq.parse().map_err(|_| ("invalid_request", format!("check must be a square like e1, not {sq:?}")))?;
            options.check = Some(sq);
        }
        None => {
            // A legal position in check gets its king highlighted automatically.
            if let Some(pos) = &position
                && pos.is_check()
            {
                options.check = pos.board().king_of(pos.turn());
            }
        }
    }
    if let Some(lm) = get("lastmove").filter(|s| !s.is_empty()) {
        let uci: UciMove = lm
            .parse()
            .map_err(|_| ("invalid_request", format!("lastmove must be a UCI move like e2e4, not {lm:?}")))?;
        options.lastmove = match uci {
            UciMove::Normal { from, to, .. } => Some((from, to)),
            UciMove::Put { to, .. } => Some((to, to)),
            UciMove::Null => None,
        };
    }
    Ok(BoardRequest { board, options })
}

/// A board diagram.
#[utoipa::path(
    get, path = "/board.svg", tag = "pages", params(BoardQuery),
    responses(
        (status = 200, content_type = "image/svg+xml", body = String),
        (status = 400, body = crate::http::error::ErrorBody),
    )
)]
async fn board_svg_handler(RawQuery(raw): RawQuery) -> Response {
    match parse_board_request(raw.as_deref()) {
        Ok(req) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("image/svg+xml")),
                (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400")),
            ],
            board_svg::render(&req.board, &req.options),
        )
            .into_response(),
        Err((code, message)) => error_response(StatusCode::BAD_REQUEST, code, &message),
    }
}

/// What the reported numbers mean, with live examples.
#[utoipa::path(get, path = "/metrics", tag = "pages", responses((status = 200, content_type = "text/html", body = String)))]
async fn metrics(State(state): State<AppState>) -> Response {
    let tb = state.tablebases();
    let live =
        tokio::task::spawn_blocking(move || super::metrics_page::live_answers(&tb)).await.unwrap_or([None, None, None]);
    let mut res = Html(super::metrics_page::render(&live)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_queries() {
        let pairs = query_pairs(Some("fen=8%2F8+w&size=300")).unwrap();
        assert_eq!(pairs[0], ("fen".to_owned(), "8/8 w".to_owned()));
        assert_eq!(pairs[1], ("size".to_owned(), "300".to_owned()));
    }

    #[test]
    fn parses_board_requests() {
        let req =
            parse_board_request(Some("fen=4k3/8/8/8/8/8/8/4K2R_w_K_-_0_1&orientation=black&size=5&lastmove=h2h1"))
                .unwrap();
        assert_eq!(req.options.orientation, Color::Black);
        assert_eq!(req.options.size, board_svg::MIN_SIZE);
        assert_eq!(req.options.lastmove, Some((Square::H2, Square::H1)));
        assert_eq!(req.board.piece_at(Square::H1).map(|p| p.char()), Some('R'));

        // Board-only FEN.
        assert!(parse_board_request(Some("fen=8/8/8/8/8/8/8/8")).is_ok());
        // Automatic check highlight.
        let req = parse_board_request(Some("fen=4k3/8/8/8/8/8/8/4R1K1%20b%20-%20-%200%201")).unwrap();
        assert_eq!(req.options.check, Some(Square::E8));

        assert_eq!(parse_board_request(Some("fen=xyz")).unwrap_err().0, "invalid_fen");
        assert_eq!(parse_board_request(None).unwrap_err().0, "invalid_fen");
        assert_eq!(parse_board_request(Some("fen=8/8/8/8/8/8/8/8&size=big")).unwrap_err().0, "invalid_request");
    }
}
