//! Answer bodies in JSON (the default) or CBOR (`Accept: application/cbor`,
//! as lichess's tablebase server offers and syzygy-tables.info asks for).
//! Both encode the same serde value: the same field names, integers as
//! integers, `None` as null.

use std::convert::Infallible;

use axum::{
    body::{Body, Bytes},
    extract::FromRequestParts,
    http::{HeaderValue, header, request::Parts},
    response::Response,
};
use serde::Serialize;

use crate::http::error::ApiError;

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const CBOR: HeaderValue = HeaderValue::from_static("application/cbor");
/// Every negotiated body says that it depends on `Accept`, so that shared
/// caches keep the two encodings apart.
const VARY_ACCEPT: HeaderValue = HeaderValue::from_static("accept");

/// The body encoding a request asked for. As an extractor it never fails:
/// anything but an explicit preference for CBOR gets JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Cbor,
}

impl Format {
    /// The encoding chosen by an `Accept` header: the explicitly named type
    /// (`application/json` or `application/cbor`) with the highest `q`,
    /// the first named on a tie; JSON when neither is named (`*/*`, none).
    pub(crate) fn from_accept(accept: Option<&HeaderValue>) -> Format {
        let Some(accept) = accept else { return Format::Json };
        let bytes = accept.as_bytes();
        // What syzygy-tables.info sends: skip the general parse.
        if bytes.eq_ignore_ascii_case(b"application/cbor") {
            return Format::Cbor;
        }
        let Ok(accept) = accept.to_str() else { return Format::Json };
        let mut best = (0.0f32, Format::Json);
        for range in accept.split(',') {
            let mut params = range.split(';');
            let media = params.next().unwrap_or_default().trim();
            let format = if media.eq_ignore_ascii_case("application/cbor") {
                Format::Cbor
            } else if media.eq_ignore_ascii_case("application/json") {
                Format::Json
            } else {
                continue;
            };
            let q = params
                .find_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .map_or(1.0, |q| q.trim().parse::<f32>().unwrap_or(0.0));
            if q > best.0 {
                best = (q, format);
            }
        }
        best.1
    }

    pub(crate) fn content_type(self) -> HeaderValue {
        match self {
            Format::Json => JSON,
            Format::Cbor => CBOR,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Format {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Format, Infallible> {
        Ok(Format::from_accept(parts.headers.get(header::ACCEPT)))
    }
}

/// An answer serialized once, at the time it is computed, in every format
/// it may be sent in: a cached answer is sent without any serializing.
#[derive(Clone, Debug)]
pub(crate) struct Encoded {
    json: Bytes,
    cbor: Bytes,
    /// No value is pending (built-in tables still being generated): only
    /// complete answers are cached.
    pub complete: bool,
}

impl Encoded {
    pub fn new<T: Serialize + ?Sized>(value: &T) -> Encoded {
        Encoded { json: encode(value, Format::Json), cbor: encode(value, Format::Cbor), complete: true }
    }

    /// Serialized in `format` only, for an answer sent once and never
    /// cached (the response cache is off, or a batch): the other format's
    /// body is left empty.
    pub(crate) fn only<T: Serialize + ?Sized>(value: &T, format: Format) -> Encoded {
        let (json, cbor) = match format {
            Format::Json => (encode(value, format), Bytes::new()),
            Format::Cbor => (Bytes::new(), encode(value, format)),
        };
        Encoded { json, cbor, complete: true }
    }

    pub fn body(&self, format: Format) -> &Bytes {
        match format {
            Format::Json => &self.json,
            Format::Cbor => &self.cbor,
        }
    }

    /// A 200 response with the body in `format`.
    pub(crate) fn response(&self, format: Format) -> Response {
        body_response(self.body(format).clone(), format)
    }
}

/// `value` in one format (for answers that are never cached).
pub(crate) fn encode<T: Serialize + ?Sized>(value: &T, format: Format) -> Bytes {
    match format {
        Format::Json => Bytes::from(serde_json::to_vec(value).expect("answers always serialize")),
        Format::Cbor => {
            let mut out = Vec::with_capacity(1024);
            ciborium::into_writer(value, &mut out).expect("answers always serialize");
            Bytes::from(out)
        }
    }
}

/// A 200 response with `value` encoded in `format`.
pub(crate) fn respond<T: Serialize + ?Sized>(value: &T, format: Format) -> Response {
    body_response(encode(value, format), format)
}

fn body_response(body: Bytes, format: Format) -> Response {
    let mut response = Response::new(Body::from(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, format.content_type());
    headers.insert(header::VARY, VARY_ACCEPT);
    response
}

/// Whether an error for this path is sent in CBOR when CBOR is asked for.
/// lichess's server answers its errors in plain text whatever the `Accept`
/// header, and its clients never decode an error body as CBOR
/// (syzygy-tables.info shows a failed answer's body to the user as it
/// came); so errors on the lichess endpoints stay JSON, readable there.
pub(crate) fn cbor_errors_on(path: &str) -> bool {
    !(path == "/standard" || path.starts_with("/standard/"))
}

/// An error response (one made by [`ApiError`]'s `IntoResponse`, which
/// leaves the error in the response's extensions) in `format`, keeping its
/// status and other headers; any other response is returned as it is.
pub(crate) fn negotiate_error(mut response: Response, format: Format) -> Response {
    let Some(error) = response.extensions().get::<ApiError>() else { return response };
    if format == Format::Json {
        response.headers_mut().append(header::VARY, VARY_ACCEPT);
        return response;
    }
    let body = encode(&error.body(), Format::Cbor);
    let (mut parts, _) = response.into_parts();
    parts.headers.insert(header::CONTENT_TYPE, CBOR);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.append(header::VARY, VARY_ACCEPT);
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(accept: &str) -> Format {
        Format::from_accept(Some(&HeaderValue::from_str(accept).unwrap()))
    }

    #[test]
    fn accept_header_chooses_the_format() {
        assert_eq!(Format::from_accept(None), Format::Json);
        assert_eq!(format("application/cbor"), Format::Cbor);
        assert_eq!(format("Application/CBOR"), Format::Cbor);
        assert_eq!(format("*/*"), Format::Json);
        assert_eq!(format("text/html, application/cbor;q=0.9, */*;q=0.1"), Format::Cbor);
        assert_eq!(format("application/json, application/cbor"), Format::Json, "first named wins a tie");
        assert_eq!(format("application/cbor, application/json"), Format::Cbor);
        assert_eq!(format("application/cbor;q=0.5, application/json"), Format::Json);
        assert_eq!(format("application/cbor;q=0"), Format::Json, "q=0: not acceptable");
        assert_eq!(format("application/cbor; q=0.2"), Format::Cbor);
    }

    #[test]
    fn both_encodings_carry_the_same_value() {
        #[derive(Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Answer {
            dtz: Option<i32>,
            dtm: Option<i32>,
            san: String,
            winner: Option<char>,
        }
        let answer = Answer { dtz: Some(-3), dtm: None, san: "Kb1".into(), winner: Some('w') };
        let encoded = Encoded::new(&answer);
        let from_cbor: Answer = ciborium::from_reader(&encoded.body(Format::Cbor)[..]).unwrap();
        assert_eq!(from_cbor, answer);
        // Integers are CBOR integers (major type 1 for -3), null is null.
        let value: ciborium::Value = ciborium::from_reader(&encoded.body(Format::Cbor)[..]).unwrap();
        let map = value.as_map().unwrap();
        assert!(map.iter().any(|(k, v)| k.as_text() == Some("dtz") && v.as_integer() == Some((-3).into())));
        assert!(map.iter().any(|(k, v)| k.as_text() == Some("dtm") && v.is_null()));
        assert!(map.iter().any(|(k, v)| k.as_text() == Some("winner") && v.as_text() == Some("w")));
    }
}
