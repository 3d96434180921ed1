//! The `tbserver` command: `serve` (default), `probe`, `analyse`, `generate`.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use clap::{Args, Parser, Subcommand};
use tbserver::{
    app,
    config::{Config, LogFormat, config_file},
    http, probe,
    request::parse_fen,
};

/// jemalloc: a full uncached answer costs less CPU than with the system
/// allocator (scripts/bench-vs-lichess.sh, docs/performance.md), and
/// generating tables takes no more time or memory.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's totals, for `/prometheus`: its statistics are refreshed by
/// advancing the epoch first.
fn jemalloc_stats() -> Option<tbserver::telemetry::HeapStats> {
    use tikv_jemalloc_ctl::{epoch, stats};
    epoch::advance().ok()?;
    Some(tbserver::telemetry::HeapStats {
        allocated_bytes: stats::allocated::read().ok()? as u64,
        resident_bytes: stats::resident::read().ok()? as u64,
    })
}

#[derive(Parser)]
#[command(name = "tbserver", version, about = "The truth about chess endgames, over HTTP/JSON")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (the default).
    Serve(ServeArgs),
    /// Print the full answer for one FEN as JSON, as `/api/v1/probe` does.
    Probe {
        #[command(flatten)]
        tables: TableArgs,
        /// The position (underscores may stand for spaces).
        fen: String,
    },
    /// Generate the built-in tables (retrograde analysis) into a directory,
    /// where `serve` memory-maps them (`builtin.dir`).
    ///
    /// To spread the work over processes (a Kubernetes Indexed Job, see
    /// docs/cluster-generation.md): --waves prints the selection's
    /// dependency waves; --wave and --shard make one process generate only
    /// its part, using what earlier waves and other shards left in the
    /// directory, which must be there.
    Generate {
        #[command(flatten)]
        config: ConfigArgs,
        /// Tables to generate, e.g. `KRBvKQ` (with every table they convert
        /// into); without any (and no --list), every table of up to --pieces
        /// pieces. Of 6 pieces, four identical pieces against a bare king
        /// (`KNNNNvK`, `KQQQQvK`, `KRRRRvK`, `KBBBBvK`): each takes about
        /// 10 GiB of memory while it is generated. The estimate of memory and
        /// disk is printed and checked against what the machine has before
        /// any work starts.
        #[arg(value_name = "TABLE")]
        tables: Vec<String>,
        /// Also the tables named in FILE, one per line (blank lines and `#`
        /// comments skipped).
        #[arg(long, value_name = "FILE")]
        list: Option<PathBuf>,
        /// Print the selection's dependency waves and exit. Wave 0 holds the
        /// tables that need no other table of the selection; each later wave
        /// needs only earlier ones (pawn tables come after the tables their
        /// promotions reach). Tables outside the selection that it needs are
        /// listed last: they must be made first.
        #[arg(long, conflicts_with_all = ["wave", "shard"])]
        waves: bool,
        /// Generate only wave W of the selection (as named: the tables it
        /// converts into are not added, and must be in the directory).
        #[arg(long, value_name = "W")]
        wave: Option<usize>,
        /// Generate only every Nth table of the selection (of wave W with
        /// --wave), starting at the Ith (0 <= I < N), e.g. a Kubernetes
        /// Indexed Job's $(JOB_COMPLETION_INDEX)/completions. Fails if a
        /// table it needs from another shard or an earlier wave is missing.
        #[arg(long, value_name = "I/N")]
        shard: Option<tbserver::builtin::Shard>,
        /// Largest number of pieces, kings included (3 to 5; all 110 tables
        /// of 5 pieces take hours and, by the generation budget's upper
        /// bound, at most 62 GB on disk with DTM50, 29 GB without: 1.5 and
        /// 0.75 bytes per index position, 3.5 with DTM50 for three men
        /// without a pawn against a bare king; most take far less).
        #[arg(long, default_value_t = 4)]
        pieces: usize,
        /// Output directory [default: the configured builtin.dir, by default `$XDG_CACHE_HOME/tbserver` or `~/.cache/tbserver`].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Leave out DTM50 (WDL50, DTZ50'' and DTM only) [default: the
        /// configured builtin.dtm50].
        #[arg(long)]
        without_dtm50: bool,
        /// How hard to compress the tables: `fast` or `small` (somewhat
        /// smaller, for more CPU time) [default: the configured
        /// builtin.compression].
        #[arg(long, value_name = "HOW", value_parser = tbformat::format::Compression::NAMES)]
        compression: Option<String>,
    },
    /// Check the table files in directories (Syzygy, Gaviota, built-in) and
    /// report each bad one; exits non-zero if any is bad.
    Verify {
        /// Hash every Syzygy file against the published BLAKE3 sums shipped
        /// with tbserver, and every chesstb file against its XXH64 trailer
        /// (all cores); names each mismatch and each Syzygy file the list
        /// does not know. Listed files a directory does not hold are counted,
        /// not errors.
        #[arg(long, conflicts_with_all = ["deep", "samples"])]
        checksums: bool,
        /// Probe many sample positions per Syzygy table (decodes data blocks),
        /// not only one (opens the table).
        #[arg(long)]
        deep: bool,
        /// Sample positions per table with --deep.
        #[arg(long, default_value_t = 1000)]
        samples: usize,
        /// Print only bad files.
        #[arg(long, short)]
        quiet: bool,
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
    },
    /// Fetch table files from HTTP(S) mirrors: each is resumed after a
    /// dropped connection or a restart, checked (published size and hash, or
    /// chesstb's trailer), then put in place; see docs/tables.md.
    Download {
        #[command(subcommand)]
        set: DownloadSet,
    },
    /// Search for the fastest mate the 50-move rule allows (DTM50-style);
    /// prints UCI-style `info` lines and `bestmove`.
    Analyse {
        #[command(flatten)]
        tables: TableArgs,
        /// Search time in milliseconds [default: the configured default_movetime_ms].
        #[arg(long, value_name = "MS")]
        movetime: Option<u64>,
        /// Stop after this depth (plies).
        #[arg(long)]
        depth: Option<u32>,
        /// The position (underscores may stand for spaces).
        fen: String,
    },
    /// Exit 0 when the server answers `GET /healthz` with 200 (a container
    /// health check that needs no curl in the image).
    Healthcheck {
        #[command(flatten)]
        config: ConfigArgs,
        /// The server's address [env: TBSERVER_LISTEN; default 127.0.0.1:9000]
        #[arg(long, value_name = "ADDR")]
        addr: Option<std::net::SocketAddr>,
    },
}

#[derive(Subcommand)]
enum DownloadSet {
    /// Syzygy WDL and DTZ files (`.rtbw`, `.rtbz`), checked against the
    /// published sizes and BLAKE3 sums shipped with tbserver.
    Syzygy {
        /// Piece counts, kings included: 3-4, 3-5, 6 or 7 (any range of 3 to 7).
        #[arg(long, value_name = "N|A-B")]
        pieces: Option<tbserver::download::select::Pieces>,
        /// WDL files only (`.rtbw`): enough for win/draw/loss, half the bytes.
        #[arg(long)]
        wdl_only: bool,
        /// Only these tables (e.g. KRvK,KRPvKR) and the tables their captures
        /// and promotions lead to (within --pieces, if given).
        #[arg(long, value_name = "TABLE,...", value_delimiter = ',')]
        material: Vec<String>,
        #[command(flatten)]
        common: DownloadArgs,
    },
    /// chesstb files (`wdl/KQK.lzw`, `dtm50/KQK.lzdtm50`, ...), checked against
    /// their XXH64 trailer; needs --mirror (chesstb publishes no HTTP mirror).
    Chesstb {
        /// Piece counts, kings included: 3-4, 3-5 or 6.
        #[arg(long, value_name = "N|A-B")]
        pieces: Option<tbserver::download::select::Pieces>,
        /// Which files: wdl, dtz, dtc (materials with pawns), dtm, dtm50.
        #[arg(long, value_name = "M,...", value_delimiter = ',', default_value = "wdl,dtz")]
        metrics: Vec<String>,
        /// Only these tables (KRvKB or chesstb's KRKB) and the tables their
        /// captures and promotions lead to (within --pieces, if given).
        #[arg(long, value_name = "TABLE,...", value_delimiter = ',')]
        material: Vec<String>,
        #[command(flatten)]
        common: DownloadArgs,
    },
}

#[derive(Args)]
struct DownloadArgs {
    /// Directory the files go to (made if missing).
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
    /// A base URL under which each file is fetched as URL/NAME (NAME: its
    /// path within the set, e.g. KQvK.rtbw or wdl/KQK.lzw); repeatable,
    /// tried in order. Without one: the public Syzygy mirrors.
    #[arg(long, value_name = "URL")]
    mirror: Vec<String>,
    /// Files fetched at once.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// Print the plan (files, bytes, what is in place, the disk) and stop.
    #[arg(long)]
    dry_run: bool,
    /// Hash the files already in place too (default: their size is compared;
    /// `verify --checksums` hashes them).
    #[arg(long)]
    check_present: bool,
}

#[derive(Args, Clone, Default)]
struct ConfigArgs {
    /// Configuration file [env: TBSERVER_CONFIG; default: the first of
    /// ./config/tbserver.toml, $XDG_CONFIG_HOME/tbserver/tbserver.toml
    /// (~/.config/...), /etc/tbserver/tbserver.toml that exists]
    #[arg(long, env = "TBSERVER_CONFIG")]
    config: Option<PathBuf>,
}

#[derive(Args, Clone, Default)]
struct TableArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Directory with Syzygy tables (repeatable) [env: TBSERVER_SYZYGY, `:`-separated]
    #[arg(long = "syzygy", value_name = "DIR")]
    syzygy: Vec<PathBuf>,
    /// Directory with Gaviota tables (repeatable) [env: TBSERVER_GAVIOTA, `:`-separated]
    #[arg(long = "gaviota", value_name = "DIR")]
    gaviota: Vec<PathBuf>,
    /// Directory with chesstb tables, holding wdl/ dtz/ dtc/ dtm/ dtm50/ (repeatable) [env: TBSERVER_CHESSTB, `:`-separated]
    #[arg(long = "chesstb", value_name = "DIR")]
    chesstb: Vec<PathBuf>,
    /// Directory for the built-in tables tbserver generates [env: TBSERVER_BUILTIN_DIR; default: the config's builtin.dir]
    #[arg(long = "builtin-dir", value_name = "DIR")]
    builtin_dir: Option<PathBuf>,
}

#[derive(Args, Clone, Default)]
struct ServeArgs {
    #[command(flatten)]
    tables: TableArgs,
    /// Address to listen on [env: TBSERVER_LISTEN; default 127.0.0.1:9000]
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// Log format: human or json.
    #[arg(long, value_name = "FORMAT")]
    log_format: Option<String>,
}

/// Which configuration file was read, for a line at start-up.
fn describe(file: &Option<PathBuf>) -> String {
    match file {
        Some(path) => format!("configuration file {}", path.display()),
        None => "no configuration file found: built-in defaults".to_owned(),
    }
}

/// The configuration: the file [`config_file`] finds, the environment,
/// then `args`; and which file that was.
fn load_config(args: &TableArgs) -> Result<(Config, Option<PathBuf>), String> {
    let file = config_file(args.config.config.as_deref(), |name| std::env::var(name).ok(), |p| p.is_file());
    let mut config = match &file {
        Some(path) => Config::from_file(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    config.apply_env(|name| std::env::var(name).ok()).map_err(|e| e.to_string())?;
    if !args.syzygy.is_empty() {
        config.syzygy = args.syzygy.clone();
    }
    if !args.gaviota.is_empty() {
        config.gaviota = args.gaviota.clone();
    }
    if !args.chesstb.is_empty() {
        config.chesstb = args.chesstb.clone();
    }
    if let Some(dir) = &args.builtin_dir {
        config.builtin.dir = dir.clone();
    }
    Ok((config, file))
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tower_http=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Human => builder.init(),
    }
}

fn main() -> ExitCode {
    // Before any thread reads a memory-mapped table: a page lost under a
    // mapping (a file truncated in place, a disk read error) then fails
    // the probes of that table instead of killing the process. Mapping a
    // table installs it too, so a failure here shows there.
    let _ = mapguard::install();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Serve(args)) => serve(args),
        None => serve(cli.serve),
        Some(Command::Probe { tables, fen }) => probe_once(&tables, &fen),
        Some(Command::Generate {
            config,
            tables,
            list,
            pieces,
            waves,
            wave,
            shard,
            out,
            without_dtm50,
            compression,
        }) => {
            let args = TableArgs { config, ..TableArgs::default() };
            generate(&args, tables, list, pieces, Split { waves, wave, shard }, out, without_dtm50, compression)
        }
        Some(Command::Analyse { tables, movetime, depth, fen }) => analyse_once(&tables, movetime, depth, &fen),
        Some(Command::Verify { checksums: true, quiet, dirs, .. }) => verify_checksums(&dirs, quiet),
        Some(Command::Verify { deep, samples, quiet, dirs, .. }) => {
            verify(&dirs, if deep { samples } else { 1 }, quiet)
        }
        Some(Command::Download { set }) => download(set),
        Some(Command::Healthcheck { config, addr }) => healthcheck(&TableArgs { config, ..TableArgs::default() }, addr),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tbserver: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> Result<(), String> {
    let (mut config, file) = load_config(&args.tables)?;
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(format) = &args.log_format {
        config.log_format = match format.as_str() {
            "json" => LogFormat::Json,
            "human" => LogFormat::Human,
            other => return Err(format!("unknown log format {other:?} (human or json)")),
        };
    }
    init_logging(config.log_format);
    tracing::info!("{}", describe(&file));
    config.admin_token = config.resolve_admin_token().map_err(|e| e.to_string())?;
    match &config.admin_token {
        Some(_) => tracing::info!("operator actions (generating tables) need the admin token"),
        None => {
            tracing::info!("no admin token: operator actions (generating tables) are open to loopback clients only")
        }
    }
    if config.prefault_tables {
        mapguard::set_prefault(true);
        tracing::info!("table files are read in whole when first opened (prefault_tables)");
    }
    let tablebases = Arc::new(app::open_for_server(&config));
    let state = http::Shared::new(tablebases, config);
    tbserver::telemetry::set_heap_reader(jemalloc_stats);
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(http::serve(state)).map_err(|e| e.to_string())
}

fn probe_once(args: &TableArgs, fen: &str) -> Result<(), String> {
    let (config, _) = load_config(args)?;
    init_logging(LogFormat::Human);
    let tablebases = app::open_tablebases(&config);
    let answer =
        parse_fen(fen).and_then(|pos| probe::probe(&tablebases, &pos, probe::MoveOrder::Dtm50First)).map_err(|e| {
            // The same error object as the API's.
            let e = http::error::ApiError::from(e);
            serde_json::to_string(&e.body()).unwrap_or_else(|_| e.to_string())
        })?;
    println!("{}", serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())?);
    Ok(())
}

fn analyse_once(args: &TableArgs, movetime_ms: Option<u64>, depth: Option<u32>, fen: &str) -> Result<(), String> {
    let (config, _) = load_config(args)?;
    init_logging(LogFormat::Human);
    let tablebases = app::open_tablebases(&config);
    let movetime_ms = movetime_ms.or((depth.is_none()).then_some(config.search.default_movetime_ms));
    let fen = fen.replace('_', " ");
    tbserver::search::run_analyse_cli(&fen, &tablebases, movetime_ms, depth, &mut std::io::stdout())?;
    Ok(())
}

/// How `tbserver generate` spreads its work: print the waves, or make one part.
struct Split {
    waves: bool,
    wave: Option<usize>,
    shard: Option<tbserver::builtin::Shard>,
}

#[allow(clippy::too_many_arguments)] // the subcommand's flags
fn generate(
    args: &TableArgs,
    mut tables: Vec<String>,
    list: Option<PathBuf>,
    pieces: usize,
    split: Split,
    out: Option<PathBuf>,
    without_dtm50: bool,
    compression: Option<String>,
) -> Result<(), String> {
    use tbformat::material;
    use tbserver::builtin::{self, Material};
    if !(3..=material::MAX_PIECES_ALL).contains(&pieces) {
        return Err(format!(
            "--pieces {pieces}: 3 to {} (tables of {} pieces are generated by name, e.g. KNNNNvK)",
            material::MAX_PIECES_ALL,
            material::MAX_PIECES
        ));
    }
    let not_a_table = |name: &str| {
        format!(
            "{name}: not a built-in table (a name like KRBvKQ with 3 to {} pieces, or four identical pieces against a \
             bare king such as KNNNNvK)",
            material::MAX_PIECES_ALL
        )
    };
    let mut targets = Vec::new();
    if let Some(list) = &list {
        let text = std::fs::read_to_string(list).map_err(|e| format!("--list {}: {e}", list.display()))?;
        let names: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, line)| (i + 1, line.split('#').next().unwrap_or("").trim()))
            .filter(|(_, name)| !name.is_empty())
            .collect();
        if names.is_empty() {
            return Err(format!("--list {}: no table names in it", list.display()));
        }
        for (line, name) in names {
            let m = Material::parse_table(name)
                .ok_or_else(|| format!("--list {} line {line}: {}", list.display(), not_a_table(name)))?;
            targets.push(m);
        }
    }
    for name in tables.drain(..) {
        targets.push(Material::parse_table(&name).ok_or_else(|| not_a_table(&name))?);
    }
    if targets.is_empty() {
        targets = material::all_materials(pieces);
    }
    if split.waves {
        return builtin::print_waves(&targets, &mut std::io::stdout().lock()).map_err(|e| e.to_string());
    }
    let (config, file) = load_config(args)?;
    init_logging(LogFormat::Human);
    eprintln!("{}", describe(&file));
    let caps = builtin::Caps::from_mib(config.builtin.max_memory_mib, config.builtin.max_disk_mib);
    let out = out.unwrap_or(config.builtin.dir);
    let with_dtm50 = config.builtin.dtm50 && !without_dtm50;
    let compression = compression
        .as_deref()
        .map_or(Some(config.builtin.compression), tbformat::format::Compression::parse)
        .expect("clap checks the name");
    let summary = if split.wave.is_some() || split.shard.is_some() {
        let part = builtin::part_of(&targets, split.wave, split.shard).map_err(|e| e.to_string())?;
        if part.is_empty() {
            println!("nothing to generate: this shard's part of the selection is empty");
            return Ok(());
        }
        builtin::run_generate_part(&part, &out, with_dtm50, compression, caps)
    } else {
        builtin::run_generate(&targets, &out, with_dtm50, compression, caps)
    };
    summary.map(drop).map_err(|e| e.to_string())
}

fn verify(dirs: &[PathBuf], samples: usize, quiet: bool) -> Result<(), String> {
    let (mut files, mut bad) = (0, 0);
    for dir in dirs {
        let reports = tbserver::verify::verify_dir(dir, samples).map_err(|e| format!("{}: {e}", dir.display()))?;
        for report in reports {
            files += 1;
            let path = dir.join(&report.name);
            if report.problems.is_empty() {
                if !quiet {
                    println!("ok   {} ({}, {})", path.display(), report.source.as_str(), report.checked);
                }
            } else {
                bad += 1;
                println!("BAD  {} ({}): {}", path.display(), report.source.as_str(), report.problems.join("; "));
            }
        }
    }
    println!("{files} table files checked, {bad} bad");
    if bad > 0 { Err(format!("{bad} bad table files")) } else { Ok(()) }
}

fn verify_checksums(dirs: &[PathBuf], quiet: bool) -> Result<(), String> {
    use tbserver::verify::checksums::{Verdict, verify_checksums};
    let summary = verify_checksums(dirs).map_err(|e| e.to_string())?;
    let (mut matched, mut unknown) = (0, 0);
    for file in &summary.files {
        match &file.verdict {
            Verdict::Match(check) => {
                matched += 1;
                if !quiet {
                    println!("ok   {} ({check} matches)", file.path.display());
                }
            }
            Verdict::Mismatch(why) => println!("BAD  {}: {why}", file.path.display()),
            Verdict::Unknown => {
                unknown += 1;
                println!("UNKNOWN {}: not in the published list, not trusted", file.path.display());
            }
        }
    }
    let bad = summary.bad();
    println!(
        "{} files hashed: {matched} match, {bad} bad, {unknown} unknown; {} listed Syzygy files are not here",
        summary.files.len(),
        summary.listed_not_here
    );
    println!(
        "hashed {:.3} GB in {:.2} s: {:.2} GB/s on {} threads",
        summary.hashed_bytes as f64 / 1e9,
        summary.seconds,
        summary.hashed_bytes as f64 / 1e9 / summary.seconds.max(1e-6),
        summary.threads
    );
    if bad > 0 { Err(format!("{bad} bad table files")) } else { Ok(()) }
}

fn download(set: DownloadSet) -> Result<(), String> {
    use tbserver::download::{Options, Set, select};
    let (set, pieces, wdl_only, metrics, materials, common) = match set {
        DownloadSet::Syzygy { pieces, wdl_only, material, common } => {
            (Set::Syzygy, pieces, wdl_only, Vec::new(), material, common)
        }
        DownloadSet::Chesstb { pieces, metrics, material, common } => {
            if pieces.is_some_and(|p| p.max > 6) {
                return Err("bad_selection: chesstb publishes up to 6 pieces".to_owned());
            }
            let kinds = metrics
                .iter()
                .map(|m| select::chesstb_kind(m))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            (Set::Chesstb, pieces, false, kinds, material, common)
        }
    };
    let options = Options {
        set,
        pieces,
        wdl_only,
        metrics,
        materials,
        to: common.to,
        mirrors: common.mirror,
        jobs: common.jobs.max(1),
        dry_run: common.dry_run,
        check_present: common.check_present,
    };
    let summary = tbserver::download::run(&options).map_err(|e| e.to_string())?;
    if summary.failed.is_empty() { Ok(()) } else { Err(format!("{} files failed", summary.failed.len())) }
}

fn healthcheck(args: &TableArgs, addr: Option<std::net::SocketAddr>) -> Result<(), String> {
    use std::io::{Read, Write};
    let addr = match addr {
        Some(addr) => addr,
        None => load_config(args)?.0.listen,
    };
    // A server listening on all interfaces is reached on loopback.
    let addr = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => std::net::SocketAddr::from(([127, 0, 0, 1], addr.port())),
        ip if ip.is_unspecified() => std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        _ => addr,
    };
    let timeout = std::time::Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    write!(stream, "GET /healthz HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(|e| e.to_string())?;
    let status_line = response.lines().next().unwrap_or_default();
    if status_line.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(format!("{addr}/healthz answered {status_line:?}"))
    }
}
