//! `tbserver download`: fetches Syzygy or chesstb table files from HTTP(S)
//! mirrors and puts each in place only once it is proven intact.
//!
//! A run first makes a plan (which files, their sizes, which are already
//! there, whether the disk holds the rest) and stops there with `--dry-run`.
//! Then each file goes to `NAME.part`, resumed with a `Range` request after a
//! dropped connection or a restart ([`transfer`]), is checked against the
//! published size and hash of the Syzygy set ([`catalog`]) or the XXH64
//! trailer of a chesstb file ([`check`]), fsynced and renamed into place. A
//! file that fails its check is fetched once more from the start, then
//! reported as failed; it never appears under its final name.

pub mod catalog;
pub mod check;
pub mod mirror;
pub mod progress;
pub mod select;
pub mod transfer;

use std::{
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use chesstb_reader::Kind;

use self::{
    catalog::Catalog,
    check::Expected,
    mirror::Mirror,
    progress::{Progress, human_bytes},
    select::Pieces,
    transfer::TransferError,
};

/// Which set of tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    Syzygy,
    Chesstb,
}

/// What `tbserver download` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    pub set: Set,
    pub pieces: Option<Pieces>,
    /// Syzygy: `.rtbw` files only.
    pub wdl_only: bool,
    /// chesstb: which kinds of file.
    pub metrics: Vec<Kind>,
    /// Tables by name (with what their captures and promotions lead to).
    pub materials: Vec<String>,
    pub to: PathBuf,
    /// Base URLs (`URL/NAME`); none: the public mirrors.
    pub mirrors: Vec<String>,
    /// Files fetched at once.
    pub jobs: usize,
    pub dry_run: bool,
    /// Hash the files already in place, not only compare their size.
    pub check_present: bool,
}

/// Why a download did not start. Each has a stable code.
#[derive(Debug)]
pub enum DownloadError {
    BadSelection(String),
    UnknownTable(String),
    NoMirror(String),
    DiskTooSmall { needed_bytes: u64, free_bytes: u64, limited_by: String },
    Io(String),
}

impl DownloadError {
    pub fn code(&self) -> &'static str {
        match self {
            DownloadError::BadSelection(_) => "bad_selection",
            DownloadError::UnknownTable(_) => "unknown_table",
            DownloadError::NoMirror(_) => "no_mirror",
            DownloadError::DiskTooSmall { .. } => "disk_too_small",
            DownloadError::Io(_) => "io",
        }
    }
}

impl std::fmt::Display for DownloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.code())?;
        match self {
            DownloadError::BadSelection(why) | DownloadError::NoMirror(why) | DownloadError::Io(why) => {
                write!(f, "{why}")
            }
            DownloadError::UnknownTable(name) => write!(f, "unknown table {name}"),
            DownloadError::DiskTooSmall { needed_bytes, free_bytes, limited_by } => write!(
                f,
                "the plan needs {} ({needed_bytes} bytes) more on disk, {limited_by} is {} ({free_bytes} bytes); \
                 nothing was fetched",
                human_bytes(*needed_bytes),
                human_bytes(*free_bytes)
            ),
        }
    }
}

/// Where a planned file stands before the transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Missing,
    /// `NAME.part` holds this many bytes: the transfer resumes there.
    Partial(u64),
    /// In place with the expected size (and hash, with `check_present`).
    Present,
    /// In place but not as expected: fetched again, replaced once proven.
    Wrong(String),
    /// No mirror has it.
    Unavailable(String),
}

#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Its path within its set: `KQvK.rtbw`, `wdl/KQK.lzw`.
    pub name: String,
    pub expected: Expected,
    pub state: State,
}

impl PlannedFile {
    /// Bytes still to come (0 when unknown).
    fn missing_bytes(&self) -> u64 {
        let size = self.expected.size_bytes().unwrap_or(0);
        match self.state {
            State::Missing | State::Wrong(_) => size,
            State::Partial(have) => size.saturating_sub(have),
            State::Present | State::Unavailable(_) => 0,
        }
    }

    fn to_fetch(&self) -> bool {
        matches!(self.state, State::Missing | State::Partial(_) | State::Wrong(_))
    }
}

#[derive(Debug)]
pub struct Plan {
    pub files: Vec<PlannedFile>,
    pub mirrors: Vec<Mirror>,
    /// Bytes the transfers still need on disk.
    pub needed_bytes: u64,
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Summary {
    pub fetched: usize,
    pub present: usize,
    /// Files whose transfer continued with a `Range` request (after a
    /// dropped connection or from a part an earlier run left).
    pub resumed: usize,
    /// Name and reason of every file that is not in place.
    pub failed: Vec<(String, String)>,
    pub received_bytes: u64,
    pub seconds: f64,
}

fn part_path(final_path: &Path) -> PathBuf {
    let mut name = final_path.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

fn mirrors(options: &Options) -> Result<Vec<Mirror>, DownloadError> {
    if !options.mirrors.is_empty() {
        return options.mirrors.iter().map(|m| Mirror::parse_flat(m).map_err(DownloadError::NoMirror)).collect();
    }
    match options.set {
        Set::Syzygy => Ok(mirror::public_syzygy()),
        Set::Chesstb => Err(DownloadError::NoMirror(
            "chesstb is published over FTP, rsync and a Hugging Face bucket, not plain HTTP(S): mirror it to a \
             directory, serve that over HTTP and name it with --mirror URL (docs/tables.md)"
                .into(),
        )),
    }
}

/// Which files, their sizes and where each stands; sizes of chesstb files
/// come from the mirror (`HEAD`).
pub fn plan(options: &Options, client: &reqwest::blocking::Client) -> Result<Plan, DownloadError> {
    let mirrors = mirrors(options)?;
    let catalog = Catalog::syzygy();
    let names = match options.set {
        Set::Syzygy => select::syzygy(catalog, options.pieces, options.wdl_only, &options.materials)?,
        Set::Chesstb => select::chesstb(options.pieces, &options.metrics, &options.materials)?,
    };
    let expectations: Vec<Result<Expected, String>> = match options.set {
        Set::Syzygy => names
            .iter()
            .map(|n| Ok(Expected::Published(catalog.get(n).expect("selected from the list").clone())))
            .collect(),
        Set::Chesstb => in_parallel(&names, options.jobs, |name| {
            let mut why = Vec::new();
            for m in &mirrors {
                match transfer::remote_size(client, &m.url(name)) {
                    Ok(size_bytes) => return Ok(Expected::ChesstbTrailer { size_bytes }),
                    Err(e) => why.push(format!("{}: {e}", m.url(name))),
                }
            }
            Err(why.join("; "))
        }),
    };
    let files: Vec<PlannedFile> = names
        .into_iter()
        .zip(expectations)
        .map(|(name, expected)| {
            let (expected, state) = match expected {
                Err(why) => (Expected::ChesstbTrailer { size_bytes: None }, State::Unavailable(why)),
                Ok(expected) => {
                    let state = state_of(&options.to.join(&name), &expected, options.check_present);
                    (expected, state)
                }
            };
            PlannedFile { name, expected, state }
        })
        .collect();
    let needed_bytes = files.iter().map(PlannedFile::missing_bytes).sum();
    Ok(Plan { files, mirrors, needed_bytes })
}

fn state_of(final_path: &Path, expected: &Expected, check_present: bool) -> State {
    if let Ok(meta) = std::fs::metadata(final_path) {
        let size = meta.len();
        return match expected.size_bytes() {
            Some(want) if want != size => State::Wrong(format!("size {size} bytes, expected {want}")),
            _ if !check_present => State::Present,
            _ => match check::check_file(final_path, expected, &|_| {}) {
                Ok(Ok(())) => State::Present,
                Ok(Err(why)) => State::Wrong(why),
                Err(e) => State::Wrong(format!("cannot read: {e}")),
            },
        };
    }
    match std::fs::metadata(part_path(final_path)) {
        Ok(meta) if meta.len() > 0 => State::Partial(meta.len()),
        _ => State::Missing,
    }
}

/// `f` over `items` on `jobs` threads, results in order.
fn in_parallel<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    results.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Prints the plan, checks the disk, and (unless `--dry-run`) fetches.
pub fn run(options: &Options) -> Result<Summary, DownloadError> {
    let client = transfer::client().map_err(DownloadError::Io)?;
    std::fs::create_dir_all(&options.to).map_err(|e| DownloadError::Io(format!("{}: {e}", options.to.display())))?;
    let plan = plan(options, &client)?;
    let count = |f: &dyn Fn(&State) -> bool| plan.files.iter().filter(|p| f(&p.state)).count();
    let total_bytes: u64 = plan.files.iter().filter_map(|f| f.expected.size_bytes()).sum();
    println!(
        "plan: {} files, {} in all; from {}",
        plan.files.len(),
        human_bytes(total_bytes),
        plan.mirrors.iter().map(Mirror::label).collect::<Vec<_>>().join(", then ")
    );
    if options.set == Set::Syzygy {
        println!("checked against the published sizes and BLAKE3 sums of {}", catalog::SOURCE);
    } else {
        println!("checked against each file's XXH64 trailer; sizes as the mirror gives them");
    }
    let partial_bytes: u64 = plan.files.iter().map(|f| if let State::Partial(b) = f.state { b } else { 0 }).sum();
    println!(
        "already in place: {} ({}); partly fetched: {} ({} of it there); to fetch: {}, {}",
        count(&|s| *s == State::Present),
        if options.check_present { "sizes and hashes checked" } else { "sizes checked" },
        count(&|s| matches!(s, State::Partial(_))),
        human_bytes(partial_bytes),
        plan.files.iter().filter(|f| f.to_fetch()).count(),
        human_bytes(plan.needed_bytes),
    );
    for f in &plan.files {
        match &f.state {
            State::Unavailable(why) => println!("UNAVAILABLE {}: {why}", f.name),
            State::Wrong(why) => println!("REPLACE {}: in place but {why}", f.name),
            _ => {}
        }
    }
    if plan.files.iter().any(|f| f.to_fetch() && f.expected.size_bytes().is_none()) {
        println!("some sizes are unknown (the mirror named none): the disk check counts them as 0");
    }
    let room = crate::builtin::budget::available_disk(&options.to, None)
        .ok_or_else(|| DownloadError::Io(format!("{}: cannot read the free space", options.to.display())))?;
    println!("disk: {} needed, {} free ({})", human_bytes(plan.needed_bytes), human_bytes(room.bytes), room.limited_by);
    if options.dry_run {
        for f in plan.files.iter().filter(|f| f.to_fetch()) {
            let size = f.expected.size_bytes().map_or("size unknown".to_owned(), human_bytes);
            println!("would fetch {} ({size})", f.name);
        }
    }
    if plan.needed_bytes > room.bytes {
        return Err(DownloadError::DiskTooSmall {
            needed_bytes: plan.needed_bytes,
            free_bytes: room.bytes,
            limited_by: room.limited_by,
        });
    }
    let mut summary = Summary { present: count(&|s| *s == State::Present), ..Default::default() };
    for f in &plan.files {
        if let State::Unavailable(why) = &f.state {
            summary.failed.push((f.name.clone(), why.clone()));
        }
    }
    if options.dry_run {
        return Ok(summary);
    }
    let queue: Vec<&PlannedFile> = plan.files.iter().filter(|f| f.to_fetch()).collect();
    let progress = Progress::new(plan.needed_bytes + partial_bytes, "download");
    progress.add(partial_bytes as i64);
    let outcomes =
        in_parallel(&queue, options.jobs, |file| fetch_one(&client, &plan.mirrors, &options.to, file, &progress));
    progress.finish();
    for (file, outcome) in queue.iter().zip(outcomes) {
        match outcome {
            Ok(done) => {
                summary.fetched += 1;
                summary.received_bytes += done.received;
                summary.resumed += usize::from(done.resumed_from > 0 || done.resumes > 0);
            }
            Err(why) => summary.failed.push((file.name.clone(), why)),
        }
    }
    summary.seconds = progress.elapsed().as_secs_f64();
    print_summary(&summary);
    Ok(summary)
}

fn print_summary(s: &Summary) {
    let rate = s.received_bytes as f64 / s.seconds.max(1e-3);
    println!(
        "done: {} fetched ({} received in {:.1} s, {}/s; {} resumed), {} already in place, {} failed",
        s.fetched,
        human_bytes(s.received_bytes),
        s.seconds,
        human_bytes(rate as u64),
        s.resumed,
        s.present,
        s.failed.len()
    );
    for (name, why) in &s.failed {
        println!("FAILED {name}: {why}");
    }
}

/// Fetches one file, checks it and puts it in place; the reason if not.
fn fetch_one(
    client: &reqwest::blocking::Client,
    mirrors: &[Mirror],
    to: &Path,
    file: &PlannedFile,
    progress: &Progress,
) -> Result<transfer::Transferred, String> {
    let final_path = to.join(&file.name);
    let part = part_path(&final_path);
    if let Some(parent) = final_path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let size = file.expected.size_bytes();
    for round in 0..2 {
        let mut why = Vec::new();
        let mut transferred = None;
        for m in mirrors {
            let url = m.url(&file.name);
            match transfer::fetch(client, &url, &part, size, &|d| progress.add(d), &|l| progress.line(&l)) {
                Ok(t) => {
                    transferred = Some(t);
                    break;
                }
                Err(TransferError::Local(e)) => return Err(format!("{}: {e}", part.display())),
                Err(e) => why.push(format!("{url}: {e}")),
            }
        }
        let Some(t) = transferred else {
            if std::fs::metadata(&part).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(&part);
            }
            return Err(why.join("; "));
        };
        match check::check_file(&part, &file.expected, &|_| {}) {
            Ok(Ok(())) => {
                put_in_place(&part, &final_path).map_err(|e| format!("{}: {e}", final_path.display()))?;
                let resumed = match (t.resumed_from, t.resumes) {
                    (0, 0) => String::new(),
                    (0, n) => format!(", resumed {n} times"),
                    (from, _) => format!(", resumed from {}", human_bytes(from)),
                };
                progress.line(&format!(
                    "ok   {} ({}, {} matches{resumed})",
                    file.name,
                    human_bytes(size.unwrap_or(t.received)),
                    file.expected.check_name()
                ));
                return Ok(t);
            }
            Ok(Err(bad)) => {
                let had = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
                let _ = std::fs::remove_file(&part);
                progress.add(-(had as i64));
                if round == 0 {
                    progress.line(&format!("BAD  {}: {bad}; fetching it once more from the start", file.name));
                } else {
                    return Err(format!("{bad} (fetched twice; not put in place)"));
                }
            }
            Err(e) => return Err(format!("{}: {e}", part.display())),
        }
    }
    unreachable!("the second round returns")
}

/// fsync, rename, fsync the directory: after a crash the file is either
/// absent or whole under its final name.
fn put_in_place(part: &Path, final_path: &Path) -> std::io::Result<()> {
    std::fs::File::open(part)?.sync_all()?;
    std::fs::rename(part, final_path)?;
    if let Some(dir) = final_path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
