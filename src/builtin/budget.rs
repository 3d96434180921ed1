//! Whether this server may generate a table now: the operator's caps
//! ([`Caps`]), the disk the table directory has left, and why a generation
//! was refused ([`Refusal`]). Memory estimates and the machine's memory
//! room come from [`tbgen::budget`].

use std::path::Path;

use tbformat::format;
pub(crate) use tbgen::budget::Room;

const MIB: u64 = 1 << 20;

/// The operator's limits on generation (`builtin.max_memory_mib`,
/// `builtin.max_disk_mib`); `None`: no cap beyond what the system has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// Most memory generation may use at once, in bytes.
    pub memory_bytes: Option<u64>,
    /// Most the table directory may hold (its table files), in bytes.
    pub disk_bytes: Option<u64>,
}

impl Caps {
    /// Caps in MiB as the configuration gives them; 0: no cap.
    pub fn from_mib(memory_mib: u64, disk_mib: u64) -> Caps {
        let cap = |mib: u64| (mib > 0).then(|| mib.saturating_mul(MIB));
        Caps { memory_bytes: cap(memory_mib), disk_bytes: cap(disk_mib) }
    }
}

/// Why a generation was refused before it started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "generating {table} needs about {} MiB of memory; {} MiB are available ({})",
        .needed_bytes / MIB, .available.bytes / MIB, .available.limited_by
    )]
    Memory { table: String, needed_bytes: u64, available: Room },
    #[error(
        "generating {tables} needs about {} MiB of disk; {} MiB are available ({})",
        .needed_bytes / MIB, .available.bytes / MIB, .available.limited_by
    )]
    Disk { tables: String, needed_bytes: u64, available: Room },
    #[error(
        "this server's built-in tables are read-only (builtin.mode = \"readonly\"): they are made elsewhere, e.g. by `tbserver generate` into the shared directory"
    )]
    ReadOnly,
    #[error(
        "{pending} tables are already queued or being generated, the most this server takes (builtin.max_queued_tables); retry later"
    )]
    QueueFull { pending: usize },
    #[error("could not write {table}: {reason}; not kept in memory ({} MiB, over what builtin.max_unwritten_mib leaves)", .bytes / MIB)]
    Unwritten { table: String, reason: String, bytes: u64 },
}

/// `tables` needing `bytes` of disk against the `room` left: their
/// estimate before they start, and a table's file, its exact size once
/// its blocks are compressed, before it is written (the estimate does not
/// bound every table: values, not the index, decide how well one
/// compresses).
pub(crate) fn disk_verdict(tables: String, bytes: u64, room: Option<Room>) -> Result<(), Refusal> {
    match room {
        Some(room) if bytes > room.bytes => Err(Refusal::Disk { tables, needed_bytes: bytes, available: room }),
        _ => Ok(()),
    }
}

/// Disk the table directory may still take: the free space of its
/// filesystem (for an unprivileged user), and `cap` less the bytes of the
/// table files already there.
pub fn available_disk(dir: &Path, cap_bytes: Option<u64>) -> Option<Room> {
    let free = free_space(dir).map(|bytes| Room { bytes, limited_by: format!("free space of {}", dir.display()) });
    let cap = cap_bytes.map(|cap| Room {
        bytes: cap.saturating_sub(tables_bytes(dir)),
        limited_by: format!("builtin.max_disk_mib = {} (table files already there count)", cap / MIB),
    });
    Room::least([free, cap].into_iter().flatten())
}

/// Bytes of the table files in `dir` (finished ones and ones being written).
fn tables_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(&format!(".{}", format::EXTENSION)))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(unix)]
fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    // The directory may not exist yet: its nearest existing ancestor is on
    // the filesystem it will be created on.
    let existing = dir.ancestors().find(|d| d.as_os_str().is_empty() || d.exists())?;
    let existing = if existing.as_os_str().is_empty() { Path::new(".") } else { existing };
    let path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a valid C string; statvfs writes the struct on success.
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the struct.
    let stat = unsafe { stat.assume_init() };
    // The field types differ between platforms (u32 on some): the casts are
    // needed there, not where they are u64 already.
    #[allow(clippy::unnecessary_cast)]
    let (blocks, block_size) = (stat.f_bavail as u64, stat.f_frsize as u64);
    Some(blocks.saturating_mul(block_size))
}

#[cfg(not(unix))]
fn free_space(_dir: &Path) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file larger than the room left is refused before it is written,
    /// naming its size and what limits the room; one that fits, or a
    /// directory of unknown room, goes ahead.
    #[test]
    fn a_file_is_checked_against_the_disk_left_before_it_is_written() {
        let kbnnk = || "KBNNvK".to_string();
        let room = |bytes| Some(Room { bytes, limited_by: "builtin.max_disk_mib = 300".into() });
        assert_eq!(disk_verdict(kbnnk(), 391_055_379, room(391_055_379)), Ok(()));
        assert_eq!(disk_verdict(kbnnk(), 391_055_379, None), Ok(()));
        let refusal = disk_verdict(kbnnk(), 391_055_379, room(300 * MIB)).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "generating KBNNvK needs about 372 MiB of disk; 300 MiB are available (builtin.max_disk_mib = 300)"
        );
    }

    #[test]
    fn a_cap_limits_the_room() {
        let room = tbgen::budget::available_memory(Some(100 * MIB), 30 * MIB).unwrap();
        assert_eq!(room.bytes, 70 * MIB);
        assert!(room.limited_by.contains("max_memory_mib"), "{room:?}");
        let dir = std::env::temp_dir().join(format!("tbserver-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("KRvK.{}", format::EXTENSION)), vec![0u8; MIB as usize]).unwrap();
        let room = available_disk(&dir, Some(5 * MIB)).unwrap();
        assert_eq!(room.bytes, 4 * MIB, "the file already there counts");
        // Not there yet: measured on the filesystem it would be made on.
        assert!(available_disk(&dir.join("a/b"), None).unwrap().bytes > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
