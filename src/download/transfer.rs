//! One file over HTTP(S) into `NAME.part`: resumed with a `Range` request
//! from what the part already holds (a mirror that ignores `Range` is read
//! from the start), retried with backoff when an attempt brings nothing.
//! Whether the bytes are right is not decided here: the published hash is.

use std::{
    io::{Read, Seek, Write},
    path::Path,
    time::Duration,
};

use reqwest::{
    StatusCode,
    blocking::Client,
    header::{CONTENT_LENGTH, CONTENT_RANGE, ETAG, HeaderValue, IF_RANGE, LAST_MODIFIED, RANGE},
};

/// Attempts in a row that bring no byte before a mirror is given up.
const ATTEMPTS_WITHOUT_PROGRESS: u32 = 5;
/// The first wait after an attempt that brought nothing; it doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// A read that brings nothing for this long is a dropped connection.
const STALL: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub enum TransferError {
    /// The mirror does not have the file (404, 410).
    NotFound,
    /// The mirror refused or kept failing.
    Failed(String),
    /// The local file could not be written.
    Local(std::io::Error),
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::NotFound => write!(f, "not found"),
            TransferError::Failed(why) => write!(f, "{why}"),
            TransferError::Local(e) => write!(f, "writing the file: {e}"),
        }
    }
}

/// What one transfer did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Transferred {
    /// Bytes the part held before the first request.
    pub resumed_from: u64,
    /// Bytes received.
    pub received: u64,
    /// Requests sent.
    pub requests: u32,
    /// Requests answered with the rest of the file (206).
    pub resumes: u32,
    /// Whether the mirror answered a `Range` request with the whole file.
    pub range_ignored: bool,
}

pub fn client() -> Result<Client, String> {
    Client::builder()
        .user_agent(concat!("tbserver/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        // Blocking reqwest applies this to each read of the body too: a
        // stalled connection, not a long transfer.
        .timeout(STALL)
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

/// The size a mirror gives for `url` (`HEAD`), `Ok(None)` if it names none.
pub fn remote_size(client: &Client, url: &str) -> Result<Option<u64>, TransferError> {
    let mut last = String::new();
    for attempt in 0..ATTEMPTS_WITHOUT_PROGRESS {
        if attempt > 0 {
            std::thread::sleep(FIRST_BACKOFF * (1 << (attempt - 1)));
        }
        match client.head(url).send() {
            Ok(r) if matches!(r.status(), StatusCode::NOT_FOUND | StatusCode::GONE) => {
                return Err(TransferError::NotFound);
            }
            Ok(r) if r.status().is_success() => {
                let size = r.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
                return Ok(size);
            }
            Ok(r) if r.status().is_client_error() => {
                return Err(TransferError::Failed(format!("HEAD: {}", r.status())));
            }
            Ok(r) => last = format!("HEAD: {}", r.status()),
            Err(e) => last = format!("HEAD: {e}"),
        }
    }
    Err(TransferError::Failed(last))
}

/// Fetches `url` into `part`, continuing what it holds, until it holds
/// `size_bytes` (or, without a size, until a transfer ends cleanly).
/// `on_bytes` is told of received bytes, negative when bytes are dropped
/// (a restart from the start).
pub fn fetch(
    client: &Client,
    url: &str,
    part: &Path,
    size_bytes: Option<u64>,
    on_bytes: &dyn Fn(i64),
    log: &dyn Fn(String),
) -> Result<Transferred, TransferError> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(part)
        .map_err(TransferError::Local)?;
    let mut have = file.metadata().map_err(TransferError::Local)?.len();
    if size_bytes.is_some_and(|s| have > s) {
        file.set_len(0).map_err(TransferError::Local)?;
        on_bytes(-(have as i64));
        have = 0;
    }
    let mut done = Transferred { resumed_from: have, ..Default::default() };
    // A validator the mirror sent for this file (strong ETag or Last-Modified).
    let mut validator: Option<HeaderValue> = None;
    let mut barren = 0u32;
    let mut last_error = String::new();
    loop {
        if size_bytes == Some(have) {
            return Ok(done);
        }
        if barren >= ATTEMPTS_WITHOUT_PROGRESS {
            return Err(TransferError::Failed(format!("{barren} attempts brought nothing; last: {last_error}")));
        }
        if barren > 0 {
            std::thread::sleep(FIRST_BACKOFF * (1 << (barren - 1)).min(32));
        }
        let mut request = client.get(url);
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
            if let Some(v) = &validator {
                request = request.header(IF_RANGE, v.clone());
            }
        }
        done.requests += 1;
        let response = match request.send() {
            Ok(r) => r,
            Err(e) => {
                last_error = e.to_string();
                barren += 1;
                continue;
            }
        };
        let status = response.status();
        let from = match status {
            StatusCode::PARTIAL_CONTENT => {
                match content_range_start(response.headers().get(CONTENT_RANGE)) {
                    Some(start) if start == have => {
                        done.resumes += 1;
                        have
                    }
                    other => {
                        // Not the bytes asked for: start over rather than guess.
                        last_error = format!("206 for bytes {other:?}, asked from {have}");
                        file.set_len(0).map_err(TransferError::Local)?;
                        on_bytes(-(have as i64));
                        have = 0;
                        barren += 1;
                        continue;
                    }
                }
            }
            StatusCode::OK => {
                if have > 0 {
                    done.range_ignored = true;
                    log(format!(
                        "{url}: the mirror sent the whole file, not the range from byte {have}: reading from the start"
                    ));
                    on_bytes(-(have as i64));
                }
                0
            }
            StatusCode::RANGE_NOT_SATISFIABLE => {
                // The part is as long as the mirror's file or longer: only the
                // check can tell, without a size; with one, start over.
                if size_bytes.is_none() && have > 0 {
                    return Ok(done);
                }
                last_error = format!("{status} for bytes from {have}");
                file.set_len(0).map_err(TransferError::Local)?;
                on_bytes(-(have as i64));
                have = 0;
                barren += 1;
                continue;
            }
            StatusCode::NOT_FOUND | StatusCode::GONE => return Err(TransferError::NotFound),
            s if s.is_client_error() => return Err(TransferError::Failed(format!("{s}"))),
            s => {
                last_error = format!("{s}");
                barren += 1;
                continue;
            }
        };
        if let Some(v) = response.headers().get(ETAG).filter(|v| !v.as_bytes().starts_with(b"W/")) {
            validator = Some(v.clone());
        } else if let Some(v) = response.headers().get(LAST_MODIFIED) {
            validator = Some(v.clone());
        }
        file.set_len(from).map_err(TransferError::Local)?;
        file.seek(std::io::SeekFrom::Start(from)).map_err(TransferError::Local)?;
        have = from;
        let (got, ended) = copy_body(response, &mut file, on_bytes);
        done.received += got;
        have += got;
        match ended {
            Ok(()) if size_bytes.is_none() => {
                file.flush().map_err(TransferError::Local)?;
                return Ok(done);
            }
            Ok(()) => {
                if size_bytes.is_some_and(|s| have > s) {
                    // Longer than published: the check will say so.
                    return Ok(done);
                }
                if size_bytes != Some(have) {
                    last_error = format!("the transfer ended at byte {have}");
                }
            }
            Err(Copy::Local(e)) => return Err(TransferError::Local(e)),
            Err(Copy::Remote(e)) => last_error = e,
        }
        if got > 0 {
            barren = 0;
        } else {
            barren += 1;
        }
    }
}

enum Copy {
    Remote(String),
    Local(std::io::Error),
}

/// Copies a response body to `file`; the bytes copied, and how it ended.
fn copy_body(
    mut response: reqwest::blocking::Response,
    file: &mut std::fs::File,
    on_bytes: &dyn Fn(i64),
) -> (u64, Result<(), Copy>) {
    let mut buf = vec![0u8; 256 << 10];
    let mut got = 0u64;
    loop {
        let n = match response.read(&mut buf) {
            Ok(0) => return (got, Ok(())),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return (got, Err(Copy::Remote(format!("connection dropped after {got} bytes: {e}")))),
        };
        if let Err(e) = file.write_all(&buf[..n]) {
            return (got, Err(Copy::Local(e)));
        }
        got += n as u64;
        on_bytes(n as i64);
    }
}

/// The first byte of a `Content-Range: bytes START-END/TOTAL`.
fn content_range_start(value: Option<&HeaderValue>) -> Option<u64> {
    let text = value?.to_str().ok()?.trim();
    let range = text.strip_prefix("bytes")?.trim_start();
    range.split('-').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(content_range_start(Some(&v("bytes 100-199/200"))), Some(100));
        assert_eq!(content_range_start(Some(&v("bytes 0-0/1"))), Some(0));
        assert_eq!(content_range_start(Some(&v("bytes */200"))), None);
        assert_eq!(content_range_start(None), None);
    }
}
