//! What generating a table costs, and how much room the machine has for
//! it, known before any work starts.
//!
//! A table's peak memory and file size are estimated from its index
//! ([`estimate`]); the memory room is the least of the cgroup's memory
//! limit, the kernel's `MemAvailable` and an operator's cap
//! ([`available_memory`]).

use std::path::Path;

use crate::{GENERATION_CACHE_MIB, GenerateError, generate, stash};
use tbformat::{format, index::Layout, material::Material};

const MIB: u64 = 1 << 20;

/// What one table is expected to cost while generated and once written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Peak resident memory of the generating process, in bytes, with the
    /// tables it converts into already on disk.
    pub peak_memory_bytes: u64,
    /// Size of the table file, in bytes.
    pub disk_bytes: u64,
    /// Disk taken besides the file for the moment it is written: the
    /// compressed blocks spilled while the table was generated (those
    /// beyond [`stash::DEFAULT_MAX_HELD_BYTES`]), in bytes.
    pub spill_bytes: u64,
}

/// Resident memory the process holds besides the generator's arrays (code,
/// the runtime, mapped pages of the tables converted into), in bytes.
const BASE_MEMORY_BYTES: u64 = 64 * MIB;

/// Decoded blocks of the tables a generation looks up, counted for tables
/// of 5 pieces with pawns: their promotions lead into tables of 5 pieces,
/// whose blocks fill the generation's cache ([`GENERATION_CACHE_MIB`]).
/// The other tables read smaller ones, and less often; their peaks are
/// within the estimate without it. For a table whose layers are small, such
/// as KPPPvK, the cache is most of the peak, so leaving it out would put
/// the estimate well below.
fn lookup_cache_bytes(material: &Material) -> u64 {
    if material.pieces() == 5 && material.has_pawns() { GENERATION_CACHE_MIB * MIB } else { 0 }
}

/// Bytes of memory per index position of the layer being solved, per index
/// position of each solved layer kept meanwhile (for the pawn pushes of
/// layers still to solve: [`generate::most_kept_layers`], 0 without pawns,
/// 2 with one pawn), and per index position of the table (its compressed
/// blocks: a pawnless table's all at once as its one layer is encoded; a
/// table with pawns holds up to 64 MiB of them, the rest spilled to disk
/// until the file is written, [`super::stash`]).
///
/// With DTM50 a layer takes 10 bytes per index position in arrays while
/// both analyses run (DTZ50'' 2, the best exits by DTZ50'' and DTM50 1 + 2,
/// move counters 1 until both have set up, DTM50's state 4), plus the
/// analyses' work lists and DTM50's segment log, which depend on how the
/// values fall (the log is largest in KBBNvK and KBNNvK, which have
/// [`MEMORY_PER_LAYER_POSITION_BISHOP_KNIGHT_MATES`]). The constants are
/// fitted above the peak of every table measured (docs/builtin-generation.md):
/// the index cannot tell how the values fall. A kept layer holds DTZ50'',
/// DTM and DTM50 at clock 0 (6 bytes; 11 in the estimate, fitted on the pawn
/// tables, which peak above what their arrays and blocks account for).
/// Without DTM50, the constants count what the arrays take (DTZ50'' and
/// DTM 2 + 2, move counters 1, best exits 1 + 2, work lists), not fitted on
/// measured peaks.
const MEMORY_PER_LAYER_POSITION: f64 = 15.0;
/// The same for bishop, knight and one more minor piece against a bare
/// king (KBBNvK, KBNNvK): their long mates change with the clock most
/// often, so DTM50's segment log takes close to twice as many bytes per
/// index position as in the other tables. Fitted above KBNNvK's peak.
/// Giving every table this rate would overestimate the other tables of the
/// same index size by far, and refuse them on machines where they fit.
const MEMORY_PER_LAYER_POSITION_BISHOP_KNIGHT_MATES: f64 = 21.0;
/// The same for four identical pieces against a bare king (the 6-piece
/// tables, KNNNNvK): one layer of 587 million index positions, whose
/// DTM50 segment log and compressed blocks (held until the file is
/// written, 1.7 bytes per index position) take more than in the 5-piece
/// tables without pawns. Fitted above KNNNNvK's peak (17.7 bytes per index
/// position besides the base and the per-table share).
const MEMORY_PER_LAYER_POSITION_FOUR_OF_A_KIND: f64 = 18.5;
const MEMORY_PER_KEPT_POSITION: f64 = 11.0;
const MEMORY_PER_POSITION: f64 = 0.5;
const MEMORY_PER_LAYER_POSITION_WITHOUT_DTM50: f64 = 11.0;
const MEMORY_PER_KEPT_POSITION_WITHOUT_DTM50: f64 = 4.0;
const MEMORY_PER_POSITION_WITHOUT_DTM50: f64 = 0.25;

/// File bytes per index position (values compressed in blocks). How well
/// a table compresses depends on its values, not on its index: KNNvKN,
/// mostly drawn, and KRBvKQ share their index, and one file is many times
/// the other, so no formula of the index fits both. The estimate is an
/// upper bound instead, above every table measured, with DTM50 and without
/// it (counting DTZ50'' and DTM): too high for most tables, never low. The
/// index leaves little room for illegal positions, which compress to
/// almost nothing, so the densest tables set the bound. Figures in
/// docs/builtin-format.md.
const FILE_BYTES_PER_POSITION: f64 = 1.5;
const FILE_BYTES_PER_POSITION_WITHOUT_DTM50: f64 = 0.75;
/// The same, with DTM50, for three men without a pawn against a bare king:
/// the long mates of the minor pieces change with the clock most often, so
/// these tables compress worst (KBNNvK and KBBNvK most, more than twice
/// [`FILE_BYTES_PER_POSITION`]; those with a queen far better).
const FILE_BYTES_PER_POSITION_AGAINST_BARE_KING: f64 = 3.5;
/// The same for four identical pieces against a bare king (6 pieces):
/// KNNNNvK's file takes 1.74 bytes per index position.
const FILE_BYTES_PER_POSITION_FOUR_OF_A_KIND: f64 = 1.8;

/// Cost of generating `material`'s table alone.
pub fn estimate(material: &Material, with_dtm50: bool) -> Estimate {
    let layout = Layout::new(material);
    let positions = layout.size as f64;
    let span = layout.layer_span() as f64;
    let kept = generate::most_kept_layers(&layout) as f64;
    let (memory, file_per_position) = if with_dtm50 {
        let per_layer = if bishop_knight_mates(material) {
            MEMORY_PER_LAYER_POSITION_BISHOP_KNIGHT_MATES
        } else if four_of_a_kind(material) {
            MEMORY_PER_LAYER_POSITION_FOUR_OF_A_KIND
        } else {
            MEMORY_PER_LAYER_POSITION
        };
        (
            memory_bytes(positions, span, kept, [MEMORY_PER_POSITION, per_layer, MEMORY_PER_KEPT_POSITION]),
            if three_pieces_against_bare_king(material) {
                FILE_BYTES_PER_POSITION_AGAINST_BARE_KING
            } else if four_of_a_kind(material) {
                FILE_BYTES_PER_POSITION_FOUR_OF_A_KIND
            } else {
                FILE_BYTES_PER_POSITION
            },
        )
    } else {
        (
            memory_bytes(
                positions,
                span,
                kept,
                [
                    MEMORY_PER_POSITION_WITHOUT_DTM50,
                    MEMORY_PER_LAYER_POSITION_WITHOUT_DTM50,
                    MEMORY_PER_KEPT_POSITION_WITHOUT_DTM50,
                ],
            ),
            FILE_BYTES_PER_POSITION_WITHOUT_DTM50,
        )
    };
    let blocks_bytes = (file_per_position * positions) as u64;
    Estimate {
        peak_memory_bytes: memory + lookup_cache_bytes(material),
        disk_bytes: format::index_bytes(layout.size) + blocks_bytes,
        spill_bytes: blocks_bytes.saturating_sub(stash::DEFAULT_MAX_HELD_BYTES),
    }
}

/// Three pieces, none a pawn, against a bare king.
fn three_pieces_against_bare_king(material: &Material) -> bool {
    material.pieces() == 5 && !material.has_pawns() && material.black.is_empty()
}

/// Four identical pieces against a bare king: the 6-piece built-in tables.
fn four_of_a_kind(material: &Material) -> bool {
    material.pieces() == 6 && material.is_builtin()
}

/// Of those, three minor pieces with a bishop and a knight among them.
fn bishop_knight_mates(material: &Material) -> bool {
    use shakmaty::Role::{Bishop, Knight};
    let w = &material.white;
    three_pieces_against_bare_king(material)
        && w.iter().all(|r| matches!(r, Bishop | Knight))
        && w.contains(&Bishop)
        && w.contains(&Knight)
}

/// Peak memory of a generation of `positions` index positions whose
/// layers have `span` positions, `kept` of them kept while one is solved,
/// at the given costs per position of the table, of the layer solved and
/// of a kept layer.
fn memory_bytes(positions: f64, span: f64, kept: f64, per: [f64; 3]) -> u64 {
    let [per_position, per_layer, per_kept] = per;
    BASE_MEMORY_BYTES + (per_position * positions + per_layer * span + per_kept * kept * span) as u64
}

/// An amount of room and what limits it (for the refusal's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// Bytes available.
    pub bytes: u64,
    /// E.g. `cgroup memory.max`, `MemAvailable`, `builtin.max_disk_mib`,
    /// `free space of /var/tables`.
    pub limited_by: String,
}

impl Room {
    /// The smallest of `rooms`, `None` if there is none.
    pub fn least(rooms: impl IntoIterator<Item = Room>) -> Option<Room> {
        rooms.into_iter().min_by_key(|r| r.bytes)
    }
}

/// Memory this process may still take: the least of its cgroup's limit
/// less what the cgroup uses (page cache it could drop not counted), the
/// kernel's `MemAvailable`, and `cap` less `reserved_bytes` (what running
/// generations are expected to take). `None` where nothing is known.
pub fn available_memory(cap_bytes: Option<u64>, reserved_bytes: u64) -> Option<Room> {
    let cap = cap_bytes.map(|cap| Room {
        bytes: cap.saturating_sub(reserved_bytes),
        limited_by: format!("builtin.max_memory_mib = {}", cap / MIB),
    });
    let system = [cgroup_memory_room(), mem_available()].into_iter().flatten().map(|mut r| {
        r.bytes = r.bytes.saturating_sub(reserved_bytes);
        r
    });
    Room::least(system.chain(cap))
}

/// Memory the system has free now (the least of the memory cgroup's room
/// and `MemAvailable`), for the check a generation makes as it goes: its
/// estimate is checked before it starts, but DTM50's change points are
/// not in the estimate (see [`dtm50_memory_check`]).
pub(crate) fn system_memory_room() -> Option<Room> {
    Room::least([cgroup_memory_room(), mem_available()].into_iter().flatten())
}

/// Memory a generation keeps free while DTM50's analysis grows.
pub(crate) const GENERATION_MEMORY_MARGIN_BYTES: u64 = 256 * MIB;

/// The check a generation makes after each distance of DTM50's analysis,
/// whose segments take `log_bytes` so far: an error, naming the room, once
/// the system has less than [`GENERATION_MEMORY_MARGIN_BYTES`] free. The
/// segments depend on the values, not on the index: the estimate checked
/// before the start bounds the tables measured, but another table, or
/// other processes taking memory meanwhile, would get a store with little
/// memory free killed for lack of memory without this check, instead of
/// failing.
pub fn dtm50_memory_check(log_bytes: usize) -> Result<(), GenerateError> {
    dtm50_memory_verdict(log_bytes, system_memory_room())
}

fn dtm50_memory_verdict(log_bytes: usize, room: Option<Room>) -> Result<(), GenerateError> {
    match room {
        Some(room) if room.bytes < GENERATION_MEMORY_MARGIN_BYTES => Err(GenerateError::OutOfMemory {
            log_mib: log_bytes as u64 / MIB,
            limited_by: room.limited_by,
            left_mib: room.bytes / MIB,
            margin_mib: GENERATION_MEMORY_MARGIN_BYTES / MIB,
        }),
        _ => Ok(()),
    }
}

fn mem_available() -> Option<Room> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(Room { bytes: kib * 1024, limited_by: "MemAvailable".into() })
}

/// The memory cgroup's limit less its usage, cgroup v2 or v1. Usage counts
/// the page cache; its inactive file pages, which the kernel drops first,
/// are left out (as container runtimes count a working set).
fn cgroup_memory_room() -> Option<Room> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |path: &Path| std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned());
    let stat_value = |stat: &str, key: &str| -> u64 {
        stat.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok()).unwrap_or(0)
    };
    // cgroup v2: one line "0::/path".
    if let Some(rel) = own.lines().find_map(|l| l.strip_prefix("0::")) {
        let dir = Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
        if let (Some(max), Some(current)) = (read(&dir.join("memory.max")), read(&dir.join("memory.current")))
            && let (Ok(max), Ok(current)) = (max.parse::<u64>(), current.parse::<u64>())
        {
            let inactive = read(&dir.join("memory.stat")).map_or(0, |s| stat_value(&s, "inactive_file"));
            let used = current.saturating_sub(inactive);
            return Some(Room { bytes: max.saturating_sub(used), limited_by: "cgroup memory.max".into() });
        }
    }
    // cgroup v1: "N:memory:/path"; inside a container the hierarchy is
    // often mounted at its own root.
    let rel = own.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p))?;
    let base = Path::new("/sys/fs/cgroup/memory");
    for dir in [base.join(rel.trim_start_matches('/')), base.to_path_buf()] {
        if let (Some(limit), Some(usage)) =
            (read(&dir.join("memory.limit_in_bytes")), read(&dir.join("memory.usage_in_bytes")))
            && let (Ok(limit), Ok(usage)) = (limit.parse::<u64>(), usage.parse::<u64>())
        {
            // "No limit" is a huge number, rounded to pages.
            if limit >= 1 << 60 {
                return None;
            }
            let inactive = read(&dir.join("memory.stat")).map_or(0, |s| stat_value(&s, "total_inactive_file"));
            let used = usage.saturating_sub(inactive);
            return Some(Room { bytes: limit.saturating_sub(used), limited_by: "cgroup memory.limit_in_bytes".into() });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_index_and_dtm50() {
        let m = |n| Material::parse(n).unwrap();
        let krk = estimate(&m("KRvK"), true);
        let kqkr = estimate(&m("KQvKR"), true);
        assert!(krk.peak_memory_bytes < kqkr.peak_memory_bytes);
        let without = estimate(&m("KQvKR"), false);
        assert!(without.peak_memory_bytes < kqkr.peak_memory_bytes);
        // KQvKR's file with DTM50, and its DTZ50'' and DTM with the header
        // and index (the file without DTM50), as measured: the estimates
        // bound both.
        let n = Layout::new(&m("KQvKR")).size as u64;
        assert_eq!(kqkr.disk_bytes, 64 + 16 * n.div_ceil(8192) + n * 3 / 2);
        assert_eq!(without.disk_bytes, 64 + 16 * n.div_ceil(8192) + n * 3 / 4);
        assert!(kqkr.disk_bytes >= 3_118_878 && without.disk_bytes >= 2_020_227);
        // A 4-piece table's blocks stay in memory; a 5-piece table's beyond
        // 64 MiB are spilled: at least what KBNvKP's measured file spills.
        assert_eq!(kqkr.spill_bytes, 0);
        let kbnkp = estimate(&m("KBNvKP"), true);
        assert_eq!(
            kbnkp.spill_bytes,
            kbnkp.disk_bytes - format::index_bytes(Layout::new(&m("KBNvKP")).size) - (64 << 20)
        );
        assert!(kbnkp.spill_bytes >= 989_071_136 - (64 << 20));
    }

    /// Measured peak anonymous memory (MiB) of generations by layers
    /// (`generate_blocks`) with DTM50, segments in the compact log
    /// (docs/builtin-generation.md).
    const MEASURED_MEMORY_MIB: [(&str, u64); 23] = [
        ("KNNNNvK", 10_262),
        ("KNNNvK", 520),
        ("KNNvKN", 1_178),
        ("KRRvKR", 1_416),
        ("KRBvKQ", 2_925),
        ("KQRvKR", 2_925),
        ("KRBvKR", 2_614),
        ("KRNvKR", 2_620),
        ("KRBNvK", 3_610),
        ("KBNNvK", 2_381),
        ("KRPvKR", 3_265),
        ("KQQPvK", 2_023),
        ("KQRPvK", 3_867),
        ("KQBPvK", 3_970),
        ("KQNPvK", 3_966),
        ("KQPPvK", 1_260),
        ("KRNPvK", 3_901),
        ("KBNPvK", 3_937),
        ("KRBPvK", 3_926),
        ("KNNPvK", 2_146),
        ("KBBPvK", 2_156),
        ("KRRPvK", 2_196),
        ("KPPPvK", 476),
    ];

    /// Measured sizes of table files (bytes), with DTM50.
    const MEASURED_FILE: [(&str, u64); 13] = [
        ("KNNNNvK", 1_023_546_497),
        ("KRBvKQ", 125_854_627),
        ("KNNvKN", 606_209),
        ("KQRvKR", 188_080_628),
        ("KRPvKR", 301_484_669),
        ("KBNNvK", 391_055_379),
        ("KBBNvK", 379_446_207),
        ("KRBNvK", 441_706_930),
        ("KQNNvK", 89_803_203),
        ("KQBBvK", 89_300_461),
        ("KQRBvK", 131_425_199),
        ("KQBPvK", 369_942_912),
        ("KQQPvK", 118_228_048),
    ];

    /// The memory estimate bounds every measured peak and stays within 60%
    /// above each (how the values fall moves a table's work lists and
    /// segments, which the index cannot tell: a mostly drawn table such as
    /// KNNvKN lies furthest below).
    #[test]
    fn memory_estimates_bound_the_measurements() {
        for (name, anon_mib) in MEASURED_MEMORY_MIB {
            let estimate = estimate(&Material::parse(name).unwrap(), true).peak_memory_bytes as f64;
            let measured = (anon_mib * MIB) as f64;
            let over = estimate / measured - 1.0;
            assert!((0.0..=0.6).contains(&over), "{name}: estimate {over:+.3} of the measured peak");
        }
    }

    #[test]
    fn the_bishop_and_knight_mates_are_known_by_their_men() {
        let m = |n| Material::parse(n).unwrap();
        for name in ["KBBNvK", "KBNNvK"] {
            assert!(bishop_knight_mates(&m(name)), "{name}");
        }
        for name in ["KNNNvK", "KBBBvK", "KRBNvK", "KBNvK", "KBNvKN", "KBNvKP", "KBNPvK"] {
            assert!(!bishop_knight_mates(&m(name)), "{name}");
        }
        // Tables of the same index size, one of them with the larger rate.
        let (kbnnk, krnnk) = (estimate(&m("KBNNvK"), true), estimate(&m("KRNNvK"), true));
        assert_eq!(Layout::new(&m("KBNNvK")).size, Layout::new(&m("KRNNvK")).size);
        assert!(kbnnk.peak_memory_bytes > krnnk.peak_memory_bytes);
    }

    /// The 6-piece tables' estimate is within 15% above KNNNNvK's measured
    /// peak (RssAnon, 10,508,108 kB) and file: close enough not to refuse
    /// it on a machine where it fits.
    #[test]
    fn the_six_piece_estimate_is_close_to_the_measurement() {
        let e = estimate(&Material::parse("KNNNNvK").unwrap(), true);
        let over = e.peak_memory_bytes as f64 / (10_508_108.0 * 1024.0) - 1.0;
        assert!((0.0..=0.15).contains(&over), "memory estimate {over:+.3} of the measured peak");
        let file = 1_023_546_497.0;
        let over = e.disk_bytes as f64 / file - 1.0;
        assert!((0.0..=0.15).contains(&over), "file estimate {over:+.3} of the measured file");
        for name in ["KQQQQvK", "KRRRRvK", "KBBBBvK"] {
            assert_eq!(estimate(&Material::parse(name).unwrap(), true), e, "{name}");
        }
    }

    /// Tables with one pawn keep two solved layers beside the one solved;
    /// tables without pawns are one layer.
    #[test]
    fn kept_layers() {
        let kept = |name: &str| generate::most_kept_layers(&Layout::new(&Material::parse(name).unwrap()));
        assert_eq!(kept("KRBvKQ"), 0);
        assert_eq!(kept("KRPvKR"), 2);
        assert_eq!(kept("KPvK"), 2);
    }

    /// File sizes depend on the values (KNNvKN and KRBvKQ share their index,
    /// and one file is many times the other), so the estimate bounds them
    /// from above; for the table that compresses least it stays within 2x.
    #[test]
    fn file_estimates_bound_the_measurements() {
        let mut tightest = f64::INFINITY;
        for (name, file_bytes) in MEASURED_FILE {
            let e = estimate(&Material::parse(name).unwrap(), true);
            assert!(
                e.disk_bytes >= file_bytes,
                "{name}: estimate {} below the file's {file_bytes} bytes",
                e.disk_bytes
            );
            tightest = tightest.min(e.disk_bytes as f64 / file_bytes as f64);
        }
        assert!(tightest <= 2.0, "the estimate is more than twice every file measured: {tightest:.2}x");
    }

    /// The store's memory check lets a generation go on on any machine
    /// that runs the tests, and stops it once less than the margin is free.
    #[test]
    fn the_dtm50_memory_check_stops_when_the_margin_is_gone() {
        assert_eq!(dtm50_memory_check(1000), Ok(()));
        let room = |bytes| Some(Room { bytes, limited_by: "MemAvailable".into() });
        assert_eq!(dtm50_memory_verdict(5 * MIB as usize, room(GENERATION_MEMORY_MARGIN_BYTES)), Ok(()));
        assert_eq!(dtm50_memory_verdict(5 * MIB as usize, None), Ok(()));
        let e = dtm50_memory_verdict(5 * MIB as usize, room(GENERATION_MEMORY_MARGIN_BYTES - 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "out of memory: DTM50's segments take 5 MiB so far, and MemAvailable has 255 MiB left, less than the 256 MiB kept free"
        );
    }
}
