//! The OpenAPI document served at `/api/openapi.json` describes exactly the
//! routes the server answers.

#[macro_use]
mod common;

use common::{TestServer, enc};
use serde_json::Value;

/// A request for `path` with its parameters filled from the document's examples.
fn example_request(path: &str, operation: &Value) -> String {
    let mut path = path.to_owned();
    let mut query = Vec::new();
    for param in operation["parameters"].as_array().into_iter().flatten() {
        let name = param["name"].as_str().unwrap();
        let Some(example) = param["example"].as_str().or(param["schema"]["examples"][0].as_str()) else { continue };
        match param["in"].as_str() {
            Some("path") => path = path.replace(&format!("{{{name}}}"), example),
            Some("query") => query.push(format!("{name}={}", enc(example))),
            other => panic!("parameter {name} in {other:?}"),
        }
    }
    if path.contains('{') {
        panic!("path parameter of {path} has no example");
    }
    if query.is_empty() { path } else { format!("{path}?{}", query.join("&")) }
}

#[test]
fn every_route_is_in_the_openapi_document() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let (status, doc) = server.get("/api/openapi.json");
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();

    // Each documented operation is routed to the handler of that very path
    // template (the request counter is labelled with the matched template).
    let client = reqwest::blocking::Client::new();
    let mut operations = Vec::new();
    for (path, item) in paths {
        for (method, operation) in item.as_object().unwrap() {
            let url = format!("{}{}", server.base, example_request(path, operation));
            let response = match method.as_str() {
                "get" => client.get(&url).send().unwrap(),
                "post" => {
                    client.post(&url).header("content-type", "application/json").body(r#"{"fens":[]}"#).send().unwrap()
                }
                other => panic!("unexpected method {other} for {path}"),
            };
            let status = response.status().as_u16();
            let _ = response.bytes();
            let documented = operation["responses"].as_object().unwrap();
            assert!(documented.contains_key(&status.to_string()), "{method} {path}: status {status} is not documented");
            operations.push((method.to_uppercase(), path.clone()));
        }
    }
    let metrics = reqwest::blocking::get(format!("{}/prometheus", server.base)).unwrap().text().unwrap();
    for (method, path) in &operations {
        let series = format!(r#"route="{path}",method="{method}""#);
        assert!(metrics.contains(&series), "{method} {path} documented but the router matched no such route");
    }
    assert!(!metrics.contains(r#"route="unmatched""#), "a documented request fell through to the fallback");

    // The other direction: routes are only ever added through utoipa-axum's
    // `routes!`, which puts them in the document; a plain axum `.route(` or
    // `.nest(` would bypass it.
    let http = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    for entry in std::fs::read_dir(&http).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        // The benchmark floor (cargo feature `bench-routes`, off by default)
        // is not part of the API and deliberately undocumented.
        let source = source.replace(r#".route("/_bench/stored""#, "");
        for bypass in [".route(\"", ".nest(\"", ".route_service(", ".nest_service("] {
            assert!(
                !source.contains(bypass),
                "{} adds a route with {bypass} outside the OpenAPI document",
                path.display()
            );
        }
    }
    report!(
        "openapi: {} operations on {} paths, each routed and its example status documented",
        operations.len(),
        paths.len()
    );
    assert_eq!(operations.len(), 23);
}

#[test]
fn errors_are_documented_with_their_codes_and_statuses() {
    let Some(server) = TestServer::with_shared_tables() else { return };
    let (_, doc) = server.get("/api/openapi.json");
    let code = doc["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["description"].as_str().unwrap();
    for (code_name, status) in tbserver::error::ApiError::examples().iter().map(|e| (e.code(), e.status())) {
        assert!(code.contains(&format!("`{code_name}` ({status})")), "{code_name} missing from {code}");
    }
    // Every operation that takes a position documents the client's errors.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let takes_fen = operation["parameters"].as_array().into_iter().flatten().any(|p| p["name"] == "fen");
            if takes_fen && path != "/board.svg" {
                // The lichess-compatible endpoints answer as lichess: 400 for
                // illegal positions too, never 422.
                let lichess = path.starts_with("/standard");
                let statuses: &[&str] = if lichess { &["400"] } else { &["400", "422"] };
                assert_eq!(operation["responses"]["422"].is_object(), !lichess, "{method} {path}: 422");
                for &status in statuses {
                    let response = &operation["responses"][status];
                    assert!(response.is_object(), "{method} {path} lacks {status}");
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                        "{method} {path} {status}: {response}"
                    );
                }
            }
        }
    }
    // Each documented error status is what the server really answers.
    let (status, body) = server.get("/api/v1/probe?fen=8/8/8/8/8/8/8/8_w_-_-_0_1");
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("illegal_position")));
    let (status, body) = server.get("/standard?fen=8/8/8/8/8/8/8/8_w_-_-_0_1");
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("illegal_position")));
}
