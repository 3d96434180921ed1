//! Judging a table file by its bytes: the published size and hash of a
//! Syzygy file (BLAKE3 where published, else SHA-256), or the XXH64 trailer
//! every chesstb file ends in. Files are read in pieces with system calls
//! (never mapped: a file truncated meanwhile is an error, not SIGBUS).

use std::{io::Read, path::Path};

use sha2::Digest as _;

use super::catalog::Published;

/// What a file is expected to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A Syzygy file from the published list.
    Published(Published),
    /// A chesstb file: its trailer, and a size if the mirror gave one.
    ChesstbTrailer { size_bytes: Option<u64> },
}

impl Expected {
    pub fn size_bytes(&self) -> Option<u64> {
        match self {
            Expected::Published(p) => Some(p.size_bytes),
            Expected::ChesstbTrailer { size_bytes } => *size_bytes,
        }
    }

    /// The name of the check, as reports print it.
    pub fn check_name(&self) -> &'static str {
        match self {
            Expected::Published(p) if p.blake3.is_some() => "BLAKE3",
            Expected::Published(_) => "SHA-256",
            Expected::ChesstbTrailer { .. } => "XXH64 trailer",
        }
    }
}

/// Bytes read per system call while hashing.
const READ_BYTES: usize = 1 << 20;

enum Hasher {
    Blake3(Box<blake3::Hasher>),
    Sha256(sha2::Sha256),
    Trailer(chesstb_reader::TrailerChecksum),
}

/// Reads the file at `path` and compares it with `expected`: `Ok(Ok(()))`
/// when it matches, `Ok(Err(reason))` when it does not, `Err` when it cannot
/// be read. `on_bytes` is told how many bytes each read brought.
pub fn check_file(path: &Path, expected: &Expected, on_bytes: &dyn Fn(u64)) -> std::io::Result<Result<(), String>> {
    let mut file = std::fs::File::open(path)?;
    let size_bytes = file.metadata()?.len();
    if let Some(want) = expected.size_bytes()
        && want != size_bytes
    {
        return Ok(Err(format!("size {size_bytes} bytes, expected {want}")));
    }
    if let Expected::ChesstbTrailer { .. } = expected
        && size_bytes % 64 != 8
    {
        return Ok(Err(format!("size {size_bytes} is not 64·n + 8 bytes (truncated or not a chesstb file)")));
    }
    let mut hasher = match expected {
        Expected::Published(p) if p.blake3.is_some() => Hasher::Blake3(Box::default()),
        Expected::Published(_) => Hasher::Sha256(sha2::Sha256::new()),
        Expected::ChesstbTrailer { .. } => Hasher::Trailer(chesstb_reader::TrailerChecksum::new()),
    };
    let mut buf = vec![0u8; READ_BYTES];
    let mut read_bytes = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        match &mut hasher {
            Hasher::Blake3(h) => {
                h.update(&buf[..n]);
            }
            Hasher::Sha256(h) => h.update(&buf[..n]),
            Hasher::Trailer(h) => h.update(&buf[..n]),
        }
        read_bytes += n as u64;
        on_bytes(n as u64);
    }
    if read_bytes != size_bytes {
        return Ok(Err(format!("read {read_bytes} bytes of {size_bytes}: the file changed while it was read")));
    }
    let (got, want) = match (hasher, expected) {
        (Hasher::Blake3(h), Expected::Published(p)) => (h.finalize().to_hex().to_string(), p.blake3.clone()),
        (Hasher::Sha256(h), Expected::Published(p)) => (hex(&h.finalize()), p.sha256.clone()),
        (Hasher::Trailer(h), _) => {
            return Ok(if h.matches() { Ok(()) } else { Err("XXH64 trailer mismatch".to_owned()) });
        }
        _ => unreachable!("the hasher follows the expectation"),
    };
    let want = want.expect("the hasher follows what is published");
    if got == want {
        Ok(Ok(()))
    } else {
        Ok(Err(format!("{} {got} differs from the published {want}", expected.check_name())))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vectors of the algorithms' specifications, through the file path.
    #[test]
    fn hashes_of_a_known_input() {
        let dir = std::env::temp_dir().join(format!("tbserver-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("abc");
        std::fs::write(&path, b"abc").unwrap();
        let sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let blake3 = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85";
        let published = |blake3: Option<&str>, sha256: Option<&str>, size_bytes| {
            Expected::Published(Published {
                size_bytes,
                blake3: blake3.map(str::to_owned),
                sha256: sha256.map(str::to_owned),
            })
        };
        let counted = std::sync::atomic::AtomicU64::new(0);
        let count = |n| {
            counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        };
        assert_eq!(check_file(&path, &published(Some(blake3), Some(sha256), 3), &count).unwrap(), Ok(()));
        assert_eq!(counted.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(check_file(&path, &published(None, Some(sha256), 3), &|_| {}).unwrap(), Ok(()));
        let wrong = check_file(&path, &published(Some(&"0".repeat(64)), Some(sha256), 3), &|_| {}).unwrap();
        assert!(wrong.unwrap_err().starts_with("BLAKE3 6437b3"));
        assert!(check_file(&path, &published(None, Some(&"0".repeat(64)), 3), &|_| {}).unwrap().is_err());
        assert_eq!(
            check_file(&path, &published(Some(blake3), None, 4), &|_| {}).unwrap(),
            Err("size 3 bytes, expected 4".to_owned())
        );
        assert!(check_file(&path, &Expected::ChesstbTrailer { size_bytes: None }, &|_| {}).unwrap().is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
