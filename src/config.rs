//! Configuration: defaults, overridden by a configuration file (see
//! [`config_file`] for where it is looked for), then by environment
//! variables, then by command-line flags.

use std::{
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
};

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directories with Syzygy `.rtbw`/`.rtbz` files.
    pub syzygy: Vec<PathBuf>,
    /// How Syzygy files are read: `mmap` (fast) or `read` (a system call per
    /// read). Either way a file truncated in place or a disk read error fails
    /// the probes of that file with `table_error`.
    pub syzygy_io: SyzygyIo,
    /// Read each memory-mapped table file (Syzygy under `syzygy_io =
    /// "mmap"`, chesstb, built-in) in whole when it is first opened, so that
    /// no probe waits on the disk and resident memory stops growing once
    /// every table has been used. Costs each file's size in memory; for
    /// table sets that fit in it.
    pub prefault_tables: bool,
    /// Directories with Gaviota `.gtb.cp4` files.
    pub gaviota: Vec<PathBuf>,
    /// Gaviota decompression cache, in MiB.
    pub gaviota_cache_mib: usize,
    /// Directories with chesstb tables: each holds `wdl/ dtz/ dtc/ dtm/
    /// dtm50/` as chesstb publishes them (or the files themselves).
    pub chesstb: Vec<PathBuf>,
    /// Memory for chesstb caches, shared by all its tables, in MiB: seven
    /// eighths for decoded blocks, one eighth for answers rebuilt by search.
    pub chesstb_cache_mib: u64,
    /// chesstb files kept open (memory-mapped) at once; the least recently
    /// used is closed past it. Files are opened on first use.
    pub chesstb_max_open_files: u64,
    pub builtin: BuiltinConfig,
    pub limits: Limits,
    pub search: SearchConfig,
    /// Cached full answers (popular positions are asked again and again);
    /// 0 turns the cache off.
    pub cache_entries: u64,
    /// `human` or `json`.
    pub log_format: LogFormat,
    /// A file holding the token that operator actions (generating tables)
    /// need, sent as `Authorization: Bearer TOKEN`. Without a token those
    /// actions are open only to clients on the server's own machine
    /// (loopback addresses).
    pub admin_token_file: Option<PathBuf>,
    /// The token itself, from `TBSERVER_ADMIN_TOKEN` (never from the file,
    /// which should not hold secrets).
    #[serde(skip)]
    pub admin_token: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuiltinConfig {
    /// `lazy`: generate a table on first use; `startup`: generate all tables
    /// in the background at start-up; `off`: no built-in tables;
    /// `readonly`: use the tables found in `dir` (made by `tbserver
    /// generate`, e.g. a Kubernetes Job), never generate: a missing one is
    /// reported as not generated and looked for again later.
    pub mode: BuiltinMode,
    /// Where generated tables are stored and memory-mapped from.
    pub dir: PathBuf,
    /// Tables made ahead, read-only (the container image ships the 3-4-piece
    /// set in one): a table missing from `dir` is mapped from here before
    /// it is generated.
    pub shipped_dir: Option<PathBuf>,
    /// Generate exact DTM50 as well (a large share of the disk space and of
    /// the generation time: docs/builtin-generation.md). Without it DTM50
    /// comes from search alone.
    pub dtm50: bool,
    /// How long a request that only built-in tables can answer waits for
    /// them to be generated before it answers 503 `generating` (with the
    /// progress and `Retry-After`). Requests that another source answers
    /// never wait: they are served at once, with the missing values listed
    /// as `pending`.
    pub wait_ms: u64,
    /// Largest tables (in pieces, kings included) generated because a probe
    /// needs them. 4 by default: a table of 5 pieces takes minutes and
    /// several GiB, so it is generated only when asked for by name
    /// (`POST /api/v1/tables/generate`, `tbserver generate KRBvKQ`); 5
    /// lets any probe start that work.
    pub lazy_max_pieces: usize,
    /// Most memory, in MiB, that generating tables may take at once; 0: as
    /// much as the system has (the cgroup's limit and `MemAvailable` are
    /// always respected). A table whose estimate is larger is refused before
    /// any work starts.
    pub max_memory_mib: u64,
    /// Most disk, in MiB, that the table files in `dir` may take together;
    /// 0: as much as the filesystem has free.
    pub max_disk_mib: u64,
    /// Most MiB of generated tables kept in memory because they could not
    /// be written to `dir` (a full disk); a table beyond it fails, and is
    /// generated again when next asked for.
    pub max_unwritten_mib: u64,
    /// Most tables asked for by name (`POST /api/v1/tables/generate`)
    /// pending at once; beyond it, 503 `queue_full` with `Retry-After`.
    pub max_queued_tables: usize,
    /// MiB of decoded table blocks kept in memory, shared by all built-in
    /// tables (hits, misses and evictions in `/prometheus`).
    pub cache_mib: u64,
    /// How hard tables generated here are compressed: `fast` (zstd level
    /// 7) or `small` (zstd's optimal parsing: somewhat smaller files for
    /// more generation CPU time; docs/performance.md). Tables found are
    /// read either way.
    pub compression: tbformat::format::Compression,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuiltinMode {
    Lazy,
    Startup,
    Off,
    ReadOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyzygyIo {
    Mmap,
    Read,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Most positions in one `POST /api/v1/probe`.
    pub max_batch: usize,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Probe requests answered at once; more wait their turn.
    pub max_concurrent_probes: usize,
    /// Probe requests waiting for a turn; more are refused with 503 and
    /// `Retry-After` rather than queueing without bound.
    pub max_queued_probes: usize,
    /// Longest query string (after `?`), in bytes; longer is 414.
    pub max_query_bytes: usize,
    /// Time to answer a request (headers), in milliseconds; then 503
    /// `timeout`. Searches stop earlier, at `search.max_movetime_ms`.
    pub request_timeout_ms: u64,
    /// Requests per second per client (token bucket, every request alike);
    /// 0 = no limit.
    pub rate_limit_per_second: f64,
    /// Requests a client may send at once before the rate applies.
    pub rate_limit_burst: u32,
    /// Cost units per second each client's budget refills at (a probe of a
    /// position costs 1; docs/operations.md lists the costs); beyond it,
    /// 429 with `Retry-After`. 0 turns the budget off.
    pub client_budget_per_second: f64,
    /// Units a client may spend at once before the rate applies.
    pub client_budget_burst: u32,
    /// Clients never charged (networks, as `127.0.0.0/8`): by default this
    /// machine's loopback addresses.
    pub budget_exempt: Vec<IpNet>,
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` headers name
    /// the client (networks, as `10.0.0.0/8`); from any other peer those
    /// headers are ignored. Empty: every client is its peer address.
    pub trusted_proxies: Vec<IpNet>,
    /// Time for a request's head (request line and headers) to arrive
    /// whole, in milliseconds, from the connection's accept or from the
    /// first byte of a later request; then the connection is closed.
    pub head_timeout_ms: u64,
    /// Time a connection may stay open with nothing to do after an answer,
    /// in milliseconds; then it is closed.
    pub idle_timeout_ms: u64,
    /// Connections open at once, held below the process's file descriptor
    /// limit (less a reserve for table files). At the limit, the connection
    /// waiting longest for a request head is closed to make room; one with
    /// a request in flight never is.
    pub max_connections: usize,
    /// Origins allowed by CORS; `"*"` allows any.
    pub cors_allowed_origins: Vec<String>,
}

/// Server-wide limits of `/api/v1/analyse`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Longest search a request may ask for, in milliseconds.
    pub max_movetime_ms: u64,
    /// Search time when the request names none, in milliseconds.
    pub default_movetime_ms: u64,
    /// Searches running at once; more are refused with 503 and `Retry-After`.
    pub max_concurrent_searches: usize,
    /// Transposition table per search, in MiB.
    pub hash_mb: usize,
    /// Threads per search (lazy SMP).
    pub threads_per_search: usize,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            max_movetime_ms: 10_000,
            default_movetime_ms: 2_000,
            max_concurrent_searches: 2,
            hash_mb: 64,
            threads_per_search: 1,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: "127.0.0.1:9000".parse().expect("valid default address"),
            syzygy: Vec::new(),
            syzygy_io: SyzygyIo::Mmap,
            prefault_tables: false,
            gaviota: Vec::new(),
            gaviota_cache_mib: 32,
            chesstb: Vec::new(),
            chesstb_cache_mib: 256,
            chesstb_max_open_files: chesstb_reader::DEFAULT_MAX_OPEN_FILES,
            builtin: BuiltinConfig::default(),
            limits: Limits::default(),
            search: SearchConfig::default(),
            cache_entries: 10_000,
            log_format: LogFormat::Human,
            admin_token_file: None,
            admin_token: None,
        }
    }
}

/// Where built-in tables go unless configured: the user's cache directory
/// (`$XDG_CACHE_HOME/tbserver`, else `~/.cache/tbserver` on Linux), so that
/// running tbserver from any directory neither litters it nor generates
/// the tables again; `tbcache` in the working directory only where the
/// platform names no cache directory (no home directory).
pub(crate) fn default_builtin_dir() -> PathBuf {
    dirs::cache_dir().map_or_else(|| PathBuf::from("tbcache"), |d| d.join("tbserver"))
}

impl Default for BuiltinConfig {
    fn default() -> BuiltinConfig {
        BuiltinConfig {
            mode: BuiltinMode::Lazy,
            dir: default_builtin_dir(),
            shipped_dir: None,
            dtm50: true,
            wait_ms: 2000,
            lazy_max_pieces: tbformat::material::DEFAULT_PIECES,
            max_memory_mib: 0,
            max_disk_mib: 0,
            max_unwritten_mib: crate::builtin::store::DEFAULT_MAX_UNWRITTEN_BYTES >> 20,
            max_queued_tables: 4,
            cache_mib: crate::builtin::cache::DEFAULT_CACHE_MIB,
            compression: tbformat::format::Compression::Fast,
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_batch: 256,
            max_body_bytes: 256 * 1024,
            max_concurrent_probes: 64,
            max_queued_probes: 1024,
            max_query_bytes: 2048,
            request_timeout_ms: 30_000,
            rate_limit_per_second: 0.0,
            rate_limit_burst: 50,
            client_budget_per_second: 100.0,
            client_budget_burst: 2000,
            budget_exempt: vec![IpNet::LOOPBACK_V4, IpNet::LOOPBACK_V6],
            trusted_proxies: Vec::new(),
            head_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            max_connections: 8192,
            cors_allowed_origins: vec!["*".to_owned()],
        }
    }
}

/// A network: an address and a prefix length (`10.0.0.0/8`, `::1/128`;
/// an address alone is the network of that address only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    pub const LOOPBACK_V4: IpNet = IpNet { addr: IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 0)), prefix: 8 };
    pub const LOOPBACK_V6: IpNet = IpNet { addr: IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), prefix: 128 };

    /// Whether `ip` is in this network; an IPv4 address mapped into IPv6
    /// (`::ffff:a.b.c.d`) counts as the IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for IpNet {
    type Err = String;

    fn from_str(text: &str) -> Result<IpNet, String> {
        let (addr, prefix) = text.split_once('/').map_or((text, None), |(a, p)| (a, Some(p)));
        let addr: IpAddr = addr.trim().parse().map_err(|e| format!("{text:?}: {e}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be a number from 0 to {max}"))?,
        };
        Ok(IpNet { addr, prefix })
    }
}

impl TryFrom<String> for IpNet {
    type Error = String;

    fn try_from(text: String) -> Result<IpNet, String> {
        text.parse()
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid configuration in {path}: {source}")]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error("invalid {name}={value}: {reason}")]
    Env { name: &'static str, value: String, reason: String },
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse { path: path.to_owned(), source })
    }

    /// Applies `TBSERVER_LISTEN`, `TBSERVER_SYZYGY`, `TBSERVER_GAVIOTA` and
    /// `TBSERVER_CHESSTB`
    /// (directory lists separated by `:`), `TBSERVER_BUILTIN_DIR`,
    /// `TBSERVER_BUILTIN_SHIPPED_DIR` and `TBSERVER_BUILTIN_MODE`.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(value) = get("TBSERVER_LISTEN") {
            self.listen = value.parse().map_err(|e: std::net::AddrParseError| ConfigError::Env {
                name: "TBSERVER_LISTEN",
                value: value.clone(),
                reason: e.to_string(),
            })?;
        }
        if let Some(value) = get("TBSERVER_SYZYGY") {
            self.syzygy = split_dirs(&value);
        }
        if let Some(value) = get("TBSERVER_GAVIOTA") {
            self.gaviota = split_dirs(&value);
        }
        if let Some(value) = get("TBSERVER_CHESSTB") {
            self.chesstb = split_dirs(&value);
        }
        if let Some(value) = get("TBSERVER_BUILTIN_DIR") {
            self.builtin.dir = PathBuf::from(value);
        }
        if let Some(value) = get("TBSERVER_BUILTIN_SHIPPED_DIR") {
            self.builtin.shipped_dir = (!value.is_empty()).then(|| PathBuf::from(value));
        }
        if let Some(value) = get("TBSERVER_ADMIN_TOKEN_FILE") {
            self.admin_token_file = Some(PathBuf::from(value));
        }
        if let Some(value) = get("TBSERVER_ADMIN_TOKEN") {
            self.admin_token = Some(value);
        }
        if let Some(value) = get("TBSERVER_BUILTIN_MODE") {
            use serde::de::{IntoDeserializer, value::Error};
            self.builtin.mode = BuiltinMode::deserialize(IntoDeserializer::<Error>::into_deserializer(value.as_str()))
                .map_err(|_| ConfigError::Env {
                    name: "TBSERVER_BUILTIN_MODE",
                    value: value.clone(),
                    reason: "expected lazy, startup, off or readonly".into(),
                })?;
        }
        Ok(())
    }

    /// The admin token: `TBSERVER_ADMIN_TOKEN`, else the first line of
    /// `admin_token_file`; `None` when neither is set. A file that cannot be
    /// read, or a token shorter than 16 characters, is an error: a server
    /// meant to be guarded must not start open.
    pub fn resolve_admin_token(&self) -> Result<Option<String>, ConfigError> {
        let (token, from) = match (&self.admin_token, &self.admin_token_file) {
            (Some(token), _) => (token.trim().to_owned(), "TBSERVER_ADMIN_TOKEN".to_owned()),
            (None, Some(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
                (text.lines().next().unwrap_or_default().trim().to_owned(), path.display().to_string())
            }
            (None, None) => return Ok(None),
        };
        if token.chars().count() < MIN_ADMIN_TOKEN_CHARS {
            return Err(ConfigError::Env {
                name: "admin token",
                value: from,
                reason: format!("shorter than {MIN_ADMIN_TOKEN_CHARS} characters"),
            });
        }
        Ok(Some(token))
    }
}

/// Where the configuration file is, in order: the file `named` (by
/// `--config` or `TBSERVER_CONFIG`; it must exist), else the first that
/// exists of `config/tbserver.toml` below the current directory,
/// `$XDG_CONFIG_HOME/tbserver/tbserver.toml` (`~/.config/...` when
/// `XDG_CONFIG_HOME` is unset) and `/etc/tbserver/tbserver.toml`. `None`:
/// the built-in defaults. `env` reads an environment variable, `exists`
/// tells whether a file is there.
pub fn config_file(
    named: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
    exists: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if let Some(path) = named {
        return Some(path.to_owned());
    }
    let xdg = env("XDG_CONFIG_HOME")
        .filter(|dir| Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| env("HOME").filter(|home| !home.is_empty()).map(|home| Path::new(&home).join(".config")));
    [Some(PathBuf::from("config/tbserver.toml")), xdg.map(|dir| dir.join("tbserver/tbserver.toml"))]
        .into_iter()
        .flatten()
        .chain([PathBuf::from("/etc/tbserver/tbserver.toml")])
        .find(|path| exists(path))
}

/// Shortest admin token accepted.
const MIN_ADMIN_TOKEN_CHARS: usize = 16;

fn split_dirs(list: &str) -> Vec<PathBuf> {
    list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_config_file_matches_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/tbserver.toml");
        let file = Config::from_file(&path).unwrap();
        let default = Config::default();
        assert_eq!(file.listen, default.listen);
        assert_eq!(file.syzygy, default.syzygy);
        assert_eq!(file.syzygy_io, default.syzygy_io);
        assert_eq!(file.prefault_tables, default.prefault_tables);
        assert_eq!(file.gaviota_cache_mib, default.gaviota_cache_mib);
        assert_eq!(file.chesstb, default.chesstb);
        assert_eq!(file.chesstb_cache_mib, default.chesstb_cache_mib);
        assert_eq!(file.chesstb_max_open_files, default.chesstb_max_open_files);
        assert_eq!(file.cache_entries, default.cache_entries);
        assert_eq!(file.builtin.mode, default.builtin.mode);
        assert_eq!(file.builtin.dir, default.builtin.dir);
        assert_eq!(file.builtin.shipped_dir, default.builtin.shipped_dir);
        assert_eq!(file.builtin.cache_mib, default.builtin.cache_mib);
        assert_eq!(file.builtin.max_queued_tables, default.builtin.max_queued_tables);
        assert_eq!(file.limits.max_batch, default.limits.max_batch);
        assert_eq!(file.limits.max_body_bytes, default.limits.max_body_bytes);
        assert_eq!(file.limits.max_concurrent_probes, default.limits.max_concurrent_probes);
        assert_eq!(file.limits.max_queued_probes, default.limits.max_queued_probes);
        assert_eq!(file.limits.max_query_bytes, default.limits.max_query_bytes);
        assert_eq!(file.limits.request_timeout_ms, default.limits.request_timeout_ms);
        assert_eq!(file.limits.rate_limit_per_second, default.limits.rate_limit_per_second);
        assert_eq!(file.limits.rate_limit_burst, default.limits.rate_limit_burst);
        assert_eq!(file.limits.client_budget_per_second, default.limits.client_budget_per_second);
        assert_eq!(file.limits.client_budget_burst, default.limits.client_budget_burst);
        assert_eq!(file.limits.budget_exempt, default.limits.budget_exempt);
        assert_eq!(file.limits.trusted_proxies, default.limits.trusted_proxies);
        assert_eq!(file.limits.head_timeout_ms, default.limits.head_timeout_ms);
        assert_eq!(file.limits.idle_timeout_ms, default.limits.idle_timeout_ms);
        assert_eq!(file.limits.max_connections, default.limits.max_connections);
        assert_eq!(file.limits.cors_allowed_origins, default.limits.cors_allowed_origins);
        assert_eq!(file.log_format, default.log_format);
        assert_eq!(file.search.max_movetime_ms, default.search.max_movetime_ms);
        assert_eq!(file.search.default_movetime_ms, default.search.default_movetime_ms);
        assert_eq!(file.search.max_concurrent_searches, default.search.max_concurrent_searches);
        assert_eq!(file.search.hash_mb, default.search.hash_mb);
        assert_eq!(file.search.threads_per_search, default.search.threads_per_search);
    }

    #[test]
    fn config_file_is_looked_for_where_installed_programs_look() {
        let env = |home: &'static str, xdg: Option<&'static str>| {
            move |name: &str| match name {
                "HOME" => Some(home.to_owned()),
                "XDG_CONFIG_HOME" => xdg.map(str::to_owned),
                _ => None,
            }
        };
        let only = |present: &'static [&'static str]| move |p: &Path| present.iter().any(|q| p == Path::new(q));
        static ALL: [&str; 4] = [
            "config/tbserver.toml",
            "/x/tbserver/tbserver.toml",
            "/h/.config/tbserver/tbserver.toml",
            "/etc/tbserver/tbserver.toml",
        ];
        let all = &ALL;
        // A file named on the command line or in TBSERVER_CONFIG wins, present or not.
        let named = Path::new("/n.toml");
        assert_eq!(config_file(Some(named), env("/h", None), only(&[])), Some(named.to_owned()));
        assert_eq!(config_file(None, env("/h", Some("/x")), only(all)), Some("config/tbserver.toml".into()));
        assert_eq!(config_file(None, env("/h", Some("/x")), only(&all[1..])), Some("/x/tbserver/tbserver.toml".into()));
        // XDG_CONFIG_HOME unset (or relative, which the specification ignores): ~/.config.
        let home = Some(PathBuf::from("/h/.config/tbserver/tbserver.toml"));
        assert_eq!(config_file(None, env("/h", None), only(&all[1..])), home);
        assert_eq!(config_file(None, env("/h", Some("rel")), only(&all[1..])), home);
        assert_eq!(config_file(None, env("/h", None), only(&all[3..])), Some("/etc/tbserver/tbserver.toml".into()));
        assert_eq!(config_file(None, env("/h", None), only(&[])), None);
    }

    #[test]
    fn networks_parse_and_match() {
        let net: IpNet = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(net.contains("::ffff:10.1.0.9".parse().unwrap()), "IPv4-mapped IPv6");
        let one: IpNet = "192.0.2.7".parse().unwrap();
        assert!(one.contains("192.0.2.7".parse().unwrap()) && !one.contains("192.0.2.8".parse().unwrap()));
        assert!("0.0.0.0/0".parse::<IpNet>().unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(IpNet::LOOPBACK_V6.contains("::1".parse().unwrap()));
        assert!(!IpNet::LOOPBACK_V6.contains("127.0.0.1".parse().unwrap()));
        let v6: IpNet = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains("2001:db8:cafe::17".parse().unwrap()) && !v6.contains("2001:db9::1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<IpNet>().unwrap_err().contains("0 to 32"));
        assert!("example.org/8".parse::<IpNet>().is_err());
        let err = toml::from_str::<Config>("[limits]\ntrusted_proxies = [\"10.0.0.0/99\"]").unwrap_err();
        assert!(err.to_string().contains("prefix length"), "{err}");
    }

    #[test]
    fn environment_overrides() {
        let mut config = Config::default();
        config
            .apply_env(|name| match name {
                "TBSERVER_SYZYGY" => Some("/a:/b".to_owned()),
                "TBSERVER_LISTEN" => Some("0.0.0.0:8080".to_owned()),
                _ => None,
            })
            .unwrap();
        assert_eq!(config.syzygy, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(config.listen.port(), 8080);
        assert!(config.apply_env(|n| (n == "TBSERVER_LISTEN").then(|| "nope".to_owned())).is_err());
        config.apply_env(|n| (n == "TBSERVER_BUILTIN_MODE").then(|| "readonly".to_owned())).unwrap();
        assert_eq!(config.builtin.mode, BuiltinMode::ReadOnly);
        let err = config.apply_env(|n| (n == "TBSERVER_BUILTIN_MODE").then(|| "read-only".to_owned())).unwrap_err();
        assert!(err.to_string().contains("lazy, startup, off or readonly"), "{err}");
    }
}
