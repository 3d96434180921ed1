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
    for (code_name, status) in tbserver::http::error::ApiError::examples().iter().map(|e| (e.code(), e.status())) {
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

/// Checks `value` against `schema` (an OpenAPI 3.1 schema of `doc`, as
/// utoipa writes them): types, enums, required keys, and no key an object's
/// schema does not name. Counts the keys checked.
fn conforms(doc: &Value, schema: &Value, value: &Value, at: &str, keys: &mut usize) -> Result<(), String> {
    if let Some(target) = schema["$ref"].as_str() {
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        return conforms(doc, &doc["components"]["schemas"][name], value, at, keys);
    }
    for alternatives in ["oneOf", "anyOf"] {
        if let Some(list) = schema[alternatives].as_array() {
            let mut errors = Vec::new();
            for alternative in list {
                let mut counted = 0;
                match conforms(doc, alternative, value, at, &mut counted) {
                    Ok(()) => {
                        *keys += counted;
                        return Ok(());
                    }
                    Err(e) => errors.push(e),
                }
            }
            return Err(format!("{at}: no alternative of {alternatives} fits: {}", errors.join(" | ")));
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            other => return Err(format!("{at}: type {other}")),
        };
        let fits = types.iter().any(|t| match *t {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            other => panic!("{at}: unknown type {other}"),
        });
        if !fits {
            return Err(format!("{at}: {value} is not of type {types:?}"));
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, item) in list.iter().enumerate() {
            conforms(doc, items, item, &format!("{at}[{i}]"), keys)?;
        }
    }
    if let Some(object) = value.as_object() {
        // Properties and required keys, merged over `allOf` (utoipa's form of
        // `#[serde(flatten)]`).
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        let mut open = false;
        collect_properties(doc, schema, &mut properties, &mut required, &mut open);
        if properties.is_empty() && required.is_empty() {
            return Ok(());
        }
        for name in &required {
            if !object.contains_key(name) {
                return Err(format!("{at}: required key `{name}` missing"));
            }
        }
        for (name, field) in object {
            match properties.get(name) {
                Some(property) => {
                    *keys += 1;
                    conforms(doc, property, field, &format!("{at}.{name}"), keys)?;
                }
                None if open => {}
                None => return Err(format!("{at}: key `{name}` is not in the schema")),
            }
        }
    }
    Ok(())
}

fn collect_properties(
    doc: &Value,
    schema: &Value,
    properties: &mut serde_json::Map<String, Value>,
    required: &mut Vec<String>,
    open: &mut bool,
) {
    if let Some(target) = schema["$ref"].as_str() {
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        return collect_properties(doc, &doc["components"]["schemas"][name], properties, required, open);
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        collect_properties(doc, part, properties, required, open);
    }
    if let Some(own) = schema["properties"].as_object() {
        properties.extend(own.clone());
    }
    required.extend(schema["required"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(str::to_owned)));
    *open |= matches!(schema.get("additionalProperties"), Some(v) if v != &Value::Bool(false));
}

/// Live answers of every JSON endpoint, successes and errors, fit the
/// schemas the document gives for their status, key by key: the schemas are
/// written apart from the types that serialize the answers, and this keeps
/// the two the same.
#[test]
fn answers_fit_their_documented_schemas() {
    let Some(server) = TestServer::with_shared_and_builtin_tables() else { return };
    let (_, doc) = server.get("/api/openapi.json");
    let fens = [
        "8/8/8/8/8/2k5/8/KR6_w_-_-_0_1",    // KRvK at clock 0
        "8/8/8/8/8/2k5/8/KR6_w_-_-_90_60",  // its DTM50 beyond the clock
        "4k3/8/8/8/8/8/4P3/4K3_w_-_-_0_1",  // a pawn ending
        "8/8/8/8/8/1k6/8/KQ6_b_-_-_0_1",    // the losing side to move
        "8/8/8/3k4/8/8/8/KBN5_w_-_-_0_1",   // KBNvK
        "8/8/8/3k4/8/8/1q6/KRB5_w_-_-_0_1", // 5 pieces: Syzygy only
        "k7/8/1QK5/8/8/8/8/8_b_-_-_0_1",    // stalemate
        "8/8/8/8/8/8/8/8_w_-_-_0_1",        // an error
    ];
    let mut requests: Vec<(String, String)> = Vec::new();
    for fen in fens {
        for path in ["/api/v1/probe", "/api/v1/mainline", "/standard", "/standard/mainline", "/api/v1/dtm50-by-clock"] {
            requests.push((path.to_owned(), format!("{path}?fen={fen}")));
        }
        requests.push(("/api/v1/analyse".to_owned(), format!("/api/v1/analyse?fen={fen}&movetime_ms=50")));
    }
    for path in ["/api/v1/tables", "/api/v1/tables/KRvK/stats", "/api/v1/tables/KQvKR/stats", "/healthz", "/readyz"] {
        requests.push((path.to_owned(), path.to_owned()));
    }
    requests.push(("/api/v1/tables/generate".to_owned(), "/api/v1/tables/generate?material=KRvK".to_owned()));
    let (mut answers, mut keys) = (0, 0);
    for (template, request) in &requests {
        let template = if template.contains("/stats") { "/api/v1/tables/{material}/stats" } else { template };
        let Some(operation) = doc["paths"][template]["get"].as_object() else { panic!("{template} not documented") };
        let (status, body) = server.get(request);
        let schema = &operation["responses"][status.to_string()]["content"]["application/json"]["schema"];
        assert!(schema.is_object(), "{request}: status {status} has no JSON schema");
        if let Err(e) = conforms(&doc, schema, &body, "answer", &mut keys) {
            panic!("{request} ({status}): {e}\n{body:#}");
        }
        answers += 1;
    }
    let batch = format!(r#"{{"fens": ["{}", "not a fen"]}}"#, fens[0].replace('_', " "));
    let (status, body) = server.post("/api/v1/probe", &batch);
    let schema = &doc["paths"]["/api/v1/probe"]["post"]["responses"][status.to_string()]["content"]["application/json"]
        ["schema"];
    conforms(&doc, schema, &body, "batch", &mut keys).unwrap_or_else(|e| panic!("batch ({status}): {e}\n{body:#}"));
    answers += 1;
    report!("openapi: {answers} answers fit their documented schemas, {keys} keys checked");
    assert!(keys > 2000, "{keys} keys");
}
