//! Who may start operator actions: work that costs minutes of CPU or GiB of
//! memory and disk (generating tables).
//!
//! With an admin token configured, such a request must carry it as
//! `Authorization: Bearer TOKEN` from wherever it comes. Without one, only
//! clients on the server's own machine (loopback addresses) may: a server
//! reachable from elsewhere must be given a token to be operated remotely.

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{header, request::Parts},
};
use serde::Serialize;

use super::{AppState, client, serve::Peer};
use crate::http::error::ApiError;

/// Proof, as a handler argument, that the request may start an operator
/// action; extracting it refuses the request otherwise (401 or 403).
pub(crate) struct Admin;

/// Whether the client asking may start an operator action, as
/// `GET /api/v1/tables/generate` tells it (the probe page shows its offer
/// accordingly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Access {
    /// It may, as it is: a loopback client of a server without a token,
    /// or a request that carries the right token.
    Open,
    /// It needs the admin token (`Authorization: Bearer TOKEN`).
    Token,
    /// Not from where it is: no token is configured and the client is not
    /// on the server's machine.
    Closed,
}

/// The asking client's [`Access`], as a handler argument (never refuses).
pub(crate) struct ClientAccess(pub Access);

impl FromRequestParts<AppState> for ClientAccess {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<ClientAccess, Self::Rejection> {
        Ok(ClientAccess(access(state, parts)))
    }
}

/// What `parts` may do.
pub(crate) fn access(state: &AppState, parts: &Parts) -> Access {
    match &state.config.admin_token {
        Some(token) => match bearer(parts) {
            Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => Access::Open,
            _ => Access::Token,
        },
        None if is_loopback(state, parts) => Access::Open,
        None => Access::Closed,
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Admin, ApiError> {
        match access(state, parts) {
            Access::Open => Ok(Admin),
            Access::Token if bearer(parts).is_none() => Err(ApiError::Unauthorized),
            Access::Token => Err(ApiError::Forbidden("the admin token does not match")),
            Access::Closed => Err(ApiError::Forbidden(
                "no admin token is configured (admin_token_file), so operator actions are open only to clients on the server's machine",
            )),
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether the client (as the budgets see it: behind a trusted proxy, the
/// address the proxy forwards) is on this machine. A request without a peer
/// address (served in-process, not from a socket) is not taken to be local.
fn is_loopback(state: &AppState, parts: &Parts) -> bool {
    parts.extensions.get::<ConnectInfo<Peer>>().is_some_and(|ConnectInfo(peer)| {
        client::is_local(client::client_ip(&parts.headers, peer.addr.ip(), &state.config.limits.trusted_proxies))
    })
}

/// Compares in time that depends on the lengths only, not on where the
/// bytes first differ, so that the token cannot be guessed byte by byte.
fn constant_time_eq(given: &[u8], token: &[u8]) -> bool {
    let mut differ = (given.len() != token.len()) as u8;
    for (i, &t) in token.iter().enumerate() {
        differ |= given.get(i).copied().unwrap_or(!t) ^ t;
    }
    differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_whole() {
        assert!(constant_time_eq(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"0123456789abcdeF", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"0123456789abcdef0", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"", b"0123456789abcdef"));
    }
}
