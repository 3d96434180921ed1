//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use shakmaty::{Bitboard, Board, CastlingMode, Chess, Color, FromSetup, Piece, Position, Role, Setup, Square};

/// The shared data directory (`../shared` beside the repository, or
/// `$TBSERVER_SHARED_DIR`). Under `CI=true` missing data fails the test; on a
/// developer machine the test says loudly that it skipped and returns `None`.
pub fn shared_dir(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TBSERVER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let needed = dir.join(what);
    if needed.exists() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("test data missing under CI=true: {}", needed.display());
    }
    eprintln!("SKIPPED: test data not found at {} (set TBSERVER_SHARED_DIR)", needed.display());
    None
}

pub fn syzygy_dir() -> Option<PathBuf> {
    shared_dir("tables/syzygy").map(|d| d.join("tables/syzygy"))
}

pub fn gaviota_dir() -> Option<PathBuf> {
    shared_dir("tables/gaviota").map(|d| d.join("tables/gaviota"))
}

pub fn reference_file() -> Option<PathBuf> {
    shared_dir("reference/positions.jsonl").map(|d| d.join("reference/positions.jsonl"))
}

/// Syzygy and Gaviota from the shared data, no answer cache, no built-in tables.
pub fn shared_tables_config() -> Option<tbserver::config::Config> {
    let mut config = tbserver::config::Config {
        syzygy: vec![syzygy_dir()?],
        gaviota: vec![gaviota_dir()?],
        cache_entries: 0,
        ..Default::default()
    };
    config.builtin.mode = tbserver::config::BuiltinMode::Off;
    Some(config)
}

pub fn chesstb_dir() -> Option<PathBuf> {
    shared_dir("tables/chesstb").map(|d| d.join("tables/chesstb"))
}

/// Where the tests keep built-in tables: `TBSERVER_BUILTIN_TEST_DIR`, or a
/// directory under the target directory, shared by every test binary.
pub fn builtin_test_dir() -> PathBuf {
    std::env::var_os("TBSERVER_BUILTIN_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("builtin-tables"))
}

/// The format version in the header of the built-in table file at `path`,
/// if it can be read.
pub fn builtin_file_version(path: &std::path::Path) -> Option<u32> {
    let mut head = [0u8; 12];
    let mut f = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut f, &mut head).ok()?;
    Some(u32::from_le_bytes(head[8..12].try_into().unwrap()))
}

/// The built-in tables of up to 4 pieces, generated where the other tests
/// keep them (`$TBSERVER_BUILTIN_TEST_DIR`, else the target's tmp dir).
pub fn generated_builtin_dir() -> PathBuf {
    let dir = builtin_test_dir();
    // Tables an older build left in an older format version: the store
    // would regenerate them too, one by one with a warning.
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "tbsb")
            && builtin_file_version(&path).is_some_and(|v| v < tbformat::format::VERSION)
        {
            let _ = std::fs::remove_file(&path);
        }
    }
    let store = tbserver::builtin::Store::new(&dir, true);
    tbserver::builtin::generate_in(&store, &tbserver::builtin::all_materials(4), &|_| {})
        .expect("generate built-in tables");
    dir
}

/// Log lines of a server process, collected as they come.
pub type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Starts `command` (the tbserver binary, told to listen on port 0 with its
/// log on stderr), waits for its `listening addr=...` line, and from then on
/// collects its log so that it never blocks on a full pipe. Returns the
/// process, its base URL and the log.
pub fn spawn_listening(mut command: std::process::Command) -> (std::process::Child, String, Log) {
    use std::io::{BufRead, BufReader};
    let mut child = command.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(addr) = line.split("addr=").nth(1) {
            let base = format!("http://{}", addr.split_whitespace().next().unwrap());
            let log: Log = std::sync::Arc::new(std::sync::Mutex::new(vec![line.clone()]));
            let sink = std::sync::Arc::clone(&log);
            std::thread::spawn(move || {
                for line in stderr.lines().map_while(Result::ok) {
                    sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            });
            return (child, base, log);
        }
        line.clear();
    }
    panic!("tbserver exited before listening: {:?}", child.wait());
}

/// A tbserver running on an ephemeral loopback port for the duration of a test.
pub struct TestServer {
    pub base: String,
    /// The server's state: tests call `state.rescan()` as SIGHUP does.
    pub state: tbserver::http::AppState,
    _runtime: tokio::runtime::Runtime,
}

impl Drop for TestServer {
    /// Built-in tables still being generated for this server would go on
    /// taking the cores from the tests that follow.
    fn drop(&mut self) {
        self.state.tablebases().shutdown();
    }
}

impl TestServer {
    pub fn start(config: tbserver::config::Config) -> TestServer {
        let tablebases = std::sync::Arc::new(tbserver::app::open_for_server(&config));
        let state = tbserver::http::Shared::new(tablebases, config);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let listener = runtime.block_on(async { tbserver::http::bind("127.0.0.1:0".parse().unwrap()) }).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(tbserver::http::serve_on(listener, std::sync::Arc::clone(&state)));
        TestServer { base, state, _runtime: runtime }
    }

    /// Syzygy and Gaviota tables from the shared data; built-in tables off so
    /// that answers come from the files under test.
    pub fn with_shared_tables() -> Option<TestServer> {
        Some(TestServer::start(shared_tables_config()?))
    }

    /// As [`TestServer::with_shared_tables`], plus the built-in tables of up
    /// to 4 pieces, generated first (once per target directory) so that no
    /// answer is pending.
    pub fn with_shared_and_builtin_tables() -> Option<TestServer> {
        let mut config = shared_tables_config()?;
        config.builtin.mode = tbserver::config::BuiltinMode::Lazy;
        config.builtin.dir = generated_builtin_dir();
        Some(TestServer::start(config))
    }

    pub fn get(&self, path_and_query: &str) -> (u16, serde_json::Value) {
        let response = reqwest::blocking::get(format!("{}{}", self.base, path_and_query)).unwrap();
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(serde_json::Value::Null))
    }

    pub fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        let response = reqwest::blocking::Client::new()
            .post(format!("{}{}", self.base, path))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(serde_json::Value::Null))
    }
}

/// Deterministic xorshift so failures are reproducible.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random legal position of `material` (e.g. "KRPvKR"), side to move random.
pub fn random_position(rng: &mut Rng, material: &str, clock: u32) -> Chess {
    loop {
        let mut board = Board::empty();
        let (w, b) = material.split_once('v').unwrap();
        let mut ok = true;
        for (color, side) in [(Color::White, w), (Color::Black, b)] {
            for ch in side.chars() {
                let role = Role::from_char(ch.to_ascii_lowercase()).unwrap();
                let sq = loop {
                    let sq = Square::new(rng.below(64) as u32);
                    if board.piece_at(sq).is_none() {
                        break sq;
                    }
                };
                if role == Role::Pawn && (Bitboard::BACKRANKS.contains(sq)) {
                    ok = false;
                }
                board.set_piece_at(sq, Piece { color, role });
            }
        }
        if !ok {
            continue;
        }
        let mut setup = Setup::empty();
        setup.board = board;
        setup.turn = if rng.below(2) == 0 { Color::White } else { Color::Black };
        setup.halfmoves = clock;
        setup.castling_rights = Bitboard::EMPTY;
        if let Ok(p) = Chess::from_setup(setup, CastlingMode::Standard)
            && !p.legal_moves().is_empty()
        {
            return p;
        }
    }
}

/// Percent-encodes a FEN for a query string.
pub fn enc(fen: &str) -> String {
    fen.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prints a line that shows in `cargo test` output even when the test passes
/// (direct writes to stderr bypass the test harness's capture): the counts of
/// what a test compared.
#[macro_export]
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Which tier runs: the quick one (`cargo test --release`) checks random
/// samples of every population; `TBSERVER_EXHAUSTIVE=1` (what
/// `scripts/verify-all.sh` sets) checks every member of it. Same code,
/// same assertions, only the population differs.
pub fn exhaustive() -> bool {
    // Read once: checks ask per position, and getenv takes a global lock.
    static EXHAUSTIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *EXHAUSTIVE.get_or_init(|| std::env::var("TBSERVER_EXHAUSTIVE").is_ok_and(|v| v == "1"))
}

/// The part of the exhaustive tier this run checks:
/// `TBSERVER_EXHAUSTIVE_SHARE=k/n` takes the indexes ≡ k mod n of every
/// table (one table of a list of whole-table checks, see [`Share::pick`]);
/// unset or `all` takes everything. CI takes k = commit count mod 3, so any
/// three consecutive runs cover every position (`.ci/run`). Printed once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Share {
    pub k: u64,
    pub n: u64,
}

impl Share {
    /// Whether the index (or list position) `i` is in this run's share.
    pub fn takes(self, i: u64) -> bool {
        i % self.n == self.k
    }

    pub fn is_all(self) -> bool {
        self.n == 1
    }

    /// Of a list of checks each too costly to split, the ones of this run:
    /// those whose place in the list is in the share.
    pub fn pick<T>(self, list: Vec<T>) -> Vec<T> {
        list.into_iter().enumerate().filter(|(i, _)| self.takes(*i as u64)).map(|(_, t)| t).collect()
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_all() { write!(f, "all") } else { write!(f, "{}/{}", self.k, self.n) }
    }
}

/// This run's [`Share`]: everything in the quick tier, whose samples are
/// drawn from whole tables.
pub fn share() -> Share {
    static SHARE: std::sync::OnceLock<Share> = std::sync::OnceLock::new();
    *SHARE.get_or_init(|| {
        let all = Share { k: 0, n: 1 };
        let v = std::env::var("TBSERVER_EXHAUSTIVE_SHARE").unwrap_or_default();
        if !exhaustive() || v.is_empty() || v == "all" {
            return all;
        }
        let share = v
            .split_once('/')
            .and_then(|(k, n)| Some(Share { k: k.parse().ok()?, n: n.parse().ok()? }))
            .filter(|s| s.n > 0 && s.k < s.n)
            .unwrap_or_else(|| panic!("TBSERVER_EXHAUSTIVE_SHARE={v}: expected `all` or k/n with k < n"));
        report!(
            "exhaustive share {share} (TBSERVER_EXHAUSTIVE_SHARE): the indexes ≡ {} mod {} of every table",
            share.k,
            share.n
        );
        share
    })
}

/// Of `tables` (a fixed list in a fixed order), those named in
/// `TBSERVER_BUILTIN_TEST_ONLY` (comma-separated, e.g. `KQvKR,KPvKP`), or
/// all when it is unset.
pub fn only_named(tables: Vec<tbserver::builtin::Material>) -> Vec<tbserver::builtin::Material> {
    let only = std::env::var("TBSERVER_BUILTIN_TEST_ONLY").unwrap_or_default();
    tables.into_iter().filter(|m| only.is_empty() || only.split(',').any(|n| n == m.name())).collect()
}

/// The seed of this test binary's random samples: `TBSERVER_TEST_SEED`
/// (decimal or 0x-hex) to repeat a run, otherwise new each run. Printed once,
/// so that a failure can be reproduced.
pub fn sample_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        let given = std::env::var("TBSERVER_TEST_SEED").ok().map(|v| parse_seed(&v));
        let seed = given.unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
            t.as_nanos() as u64 ^ u64::from(std::process::id()) << 32
        });
        if exhaustive() {
            report!("exhaustive tier (TBSERVER_EXHAUSTIVE=1): whole populations, no samples");
        } else {
            report!("quick tier: samples, seed {seed:#x} (repeat with TBSERVER_TEST_SEED={seed:#x})");
        }
        seed
    })
}

/// The seed of a test whose sample is fixed (its figures are compared across
/// runs, or its assertions count kinds of positions): `fixed`, unless
/// `TBSERVER_TEST_SEED` gives another. Printed.
pub fn fixed_seed(test: &str, fixed: u64) -> u64 {
    let seed = std::env::var("TBSERVER_TEST_SEED").ok().map_or(fixed, |v| parse_seed(&v));
    report!("{test}: seed {seed:#x}");
    seed
}

fn parse_seed(v: &str) -> u64 {
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("TBSERVER_TEST_SEED={v}: not a number"))
}

/// A generator for one named part of a sample (a table, a material): the
/// run's seed mixed with the name, so that each part's sample does not
/// depend on the others or on their order. Never zero (xorshift's fixed point).
pub fn rng_for(seed: u64, part: &str) -> Rng {
    // FNV-1a of the name, then splitmix64's finaliser.
    let mut h = part.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    h ^= seed;
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    Rng(h.max(1))
}

/// The position a built-in table's index decodes to (`p` laid out by `l`),
/// as a shakmaty setup.
#[allow(dead_code)]
pub fn setup_of(l: &tbformat::index::Layout, p: &tbformat::index::Pos) -> Setup {
    let mut board = Board::empty();
    for i in 0..l.n {
        let (color, role) = l.men[i];
        board.set_piece_at(Square::new(p.sq[i] as u32), Piece { color, role });
    }
    let mut setup = Setup::empty();
    setup.board = board;
    setup.turn = p.turn;
    setup
}
