//! Read-only memory maps of table files that survive losing their pages.
//!
//! Reading a page of a mapped file that is no longer there — the file was
//! truncated in place, or the disk failed to read it — raises `SIGBUS`,
//! whose default action kills the process. [`GuardedMap`] registers each
//! mapping in a fixed table that a process-wide `SIGBUS` handler
//! ([`install`]) consults: a fault inside a registered mapping replaces the
//! whole mapping with zero-filled anonymous memory (so the faulting read,
//! and every later one, reads zeros instead of faulting again) and sets the
//! mapping's fault flag. The owner checks [`GuardedMap::faulted`] after
//! reading and before trusting what it read: once the flag is set, nothing
//! read from the mapping may be served. A fault anywhere else goes to the
//! handler that was installed before (the standard library's, which
//! restores the default action: the process dies as it would have).
//!
//! Everything the handler touches is lock-free and allocation-free: atomics
//! in a static table, `mmap` and `sigaction` (system calls).

#![warn(missing_docs)]

use std::{
    fs::File,
    io,
    ops::Deref,
    sync::{
        Arc, Once,
        atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, compiler_fence},
    },
};

use memmap2::Mmap;

/// Why a mapping that lost pages is refused: what the table sources say
/// (each adding how to recover).
pub const LOST_PAGES: &str = "file lost pages while mapped (truncated in place or a disk read error)";

/// Mappings registered at once, at most. A slot costs 24 bytes of the
/// process's zero-initialised data, touched only when used.
pub const MAX_MAPPINGS: usize = 1 << 16;

/// One registered mapping. Free when `start` is 0 and `claimed` false.
struct Slot {
    claimed: AtomicBool,
    /// Address of the mapping's first byte; 0 while not published.
    start: AtomicUsize,
    len: AtomicUsize,
    /// The owner's fault flag, alive as long as the slot is published (the
    /// [`GuardedMap`] holds a reference to it).
    flag: AtomicPtr<AtomicBool>,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    claimed: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    flag: AtomicPtr::new(std::ptr::null_mut()),
};

static SLOTS: [Slot; MAX_MAPPINGS] = [FREE; MAX_MAPPINGS];
/// Slots below this index may be in use: the handler scans no further.
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);
/// Faults contained since the start (every one, not per mapping).
static FAULTS: AtomicU64 = AtomicU64::new(0);
static PAGE_BYTES: AtomicUsize = AtomicUsize::new(4096);
/// The `SIGBUS` action in place before [`install`]: where other faults go.
static mut PREVIOUS: Option<libc::sigaction> = None;
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether mappings are read in whole when made ([`set_prefault`]).
static PREFAULT: AtomicBool = AtomicBool::new(false);

/// Installs the `SIGBUS` handler, once per process (later calls do
/// nothing). [`GuardedMap::map`] calls it too; a server calls it at start
/// so that the handler is in place before any thread reads a mapping.
pub fn install() -> io::Result<()> {
    let mut result = Ok(());
    INSTALL.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE_BYTES.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: zeroed is a valid `sigaction` (no handler, empty mask);
        // PREVIOUS is written here only, before the handler that reads it is
        // installed, under `Once`.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                result = Err(io::Error::last_os_error());
                return;
            }
            *std::ptr::addr_of_mut!(PREVIOUS) = Some(previous);
            if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
                result = Err(io::Error::last_os_error());
                return;
            }
        }
        INSTALLED.store(true, Ordering::SeqCst);
    });
    if result.is_ok() && !INSTALLED.load(Ordering::SeqCst) {
        return Err(io::Error::other("the SIGBUS handler could not be installed"));
    }
    result
}

/// Whether the handler is installed.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

/// Makes every mapping made from now on read its whole file in when it is
/// made ([`GuardedMap::populate`]), or stops doing so. Process-wide: a
/// server sets it once at start from its configuration.
///
/// A prefaulted table answers its first probes without waiting on the disk,
/// and the process's resident memory holds the whole file from then on
/// instead of growing as probes reach new pages; it costs the file's size
/// in memory (page cache the kernel can still reclaim under pressure), so
/// it suits table sets that fit in memory.
pub fn set_prefault(on: bool) {
    PREFAULT.store(on, Ordering::Relaxed);
}

/// Whether mappings are prefaulted when made ([`set_prefault`]).
pub fn prefault() -> bool {
    PREFAULT.load(Ordering::Relaxed)
}

/// Faults contained since the process started.
pub fn faults() -> u64 {
    FAULTS.load(Ordering::Relaxed)
}

/// Mappings registered now.
pub fn registered() -> usize {
    let high = HIGH_WATER.load(Ordering::Acquire).min(MAX_MAPPINGS);
    SLOTS[..high].iter().filter(|s| s.start.load(Ordering::Acquire) != 0).count()
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if contain(addr) {
        return;
    }
    // SAFETY: PREVIOUS was written before this handler was installed.
    let previous = unsafe { *std::ptr::addr_of!(PREVIOUS) };
    match previous {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed with this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(signal, info, context);
            } else {
                // SAFETY: as above, the one-argument form.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(signal);
            }
        }
        _ => {
            // The default action: returning re-runs the faulting access,
            // which now kills the process with SIGBUS as before.
            // SAFETY: sigaction is async-signal-safe.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Whether `addr` lies in a registered mapping; if so, that mapping is
/// replaced by zeros and flagged. Async-signal-safe.
fn contain(addr: usize) -> bool {
    let saved_errno = errno();
    let high = HIGH_WATER.load(Ordering::Acquire).min(MAX_MAPPINGS);
    let page = PAGE_BYTES.load(Ordering::Relaxed);
    let mut contained = false;
    for slot in &SLOTS[..high] {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || addr < start {
            continue;
        }
        let len = slot.len.load(Ordering::Acquire);
        if addr - start >= len || slot.start.load(Ordering::Acquire) != start {
            continue;
        }
        let flag = slot.flag.load(Ordering::Acquire);
        if !flag.is_null() {
            // SAFETY: the flag outlives the slot's registration.
            unsafe { (*flag).store(true, Ordering::SeqCst) };
        }
        FAULTS.fetch_add(1, Ordering::Relaxed);
        let first = start & !(page - 1);
        let end = (start + len).div_ceil(page) * page;
        // SAFETY: replaces pages of a mapping this process owns and that is
        // alive (a thread is reading it) with private zeros of the same
        // size; the owner unmaps the range as before.
        let mapped = unsafe {
            libc::mmap(
                first as *mut libc::c_void,
                end - first,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        contained = mapped != libc::MAP_FAILED;
        break;
    }
    set_errno(saved_errno);
    contained
}

fn errno() -> libc::c_int {
    // SAFETY: the thread's errno location is always valid.
    unsafe { *libc::__errno_location() }
}

fn set_errno(value: libc::c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = value }
}

/// A read-only memory map of a whole file whose lost pages read as zeros
/// and set [`GuardedMap::faulted`], once [`install`] has run (it runs on
/// the first mapping).
pub struct GuardedMap {
    map: Mmap,
    flag: Arc<AtomicBool>,
    /// Index in `SLOTS`; `None` for an empty file (nothing mapped).
    slot: Option<usize>,
}

impl GuardedMap {
    /// Maps `file` and registers the mapping, with a fault flag of its own.
    ///
    /// # Safety
    /// As [`memmap2::Mmap::map`]: the file must not be modified while mapped.
    /// Losing pages (truncation, read errors) is what this type contains;
    /// changed bytes are not.
    pub unsafe fn map(file: &File) -> io::Result<GuardedMap> {
        // SAFETY: forwarded.
        unsafe { Self::map_flagged(file, Arc::default()) }
    }

    /// As [`GuardedMap::map`], setting `flag` on a fault: an owner can keep
    /// the flag after the mapping is gone (to refuse the file from then on).
    ///
    /// # Safety
    /// As [`GuardedMap::map`].
    pub unsafe fn map_flagged(file: &File, flag: Arc<AtomicBool>) -> io::Result<GuardedMap> {
        install()?;
        // SAFETY: forwarded to the caller.
        let map = unsafe { Mmap::map(file)? };
        let slot = if map.is_empty() { None } else { Some(register(map.as_ptr() as usize, map.len(), &flag)?) };
        let map = GuardedMap { map, flag, slot };
        if prefault() {
            map.populate()?;
        }
        Ok(map)
    }

    /// Reads the whole file in and maps every page of it into the process
    /// (`MADV_POPULATE_READ`; on kernels before 5.14, one read per page),
    /// so that later reads neither wait on the disk nor fault. A page that
    /// cannot be read (the file is shorter than the mapping, a disk error)
    /// is an error here, never a `SIGBUS`.
    pub fn populate(&self) -> io::Result<()> {
        if self.map.is_empty() {
            return Ok(());
        }
        let lost = || io::Error::other(LOST_PAGES);
        // SAFETY: the range is this mapping's own; MADV_POPULATE_READ only
        // faults its pages in and reports a page that cannot be read as
        // EFAULT instead of raising SIGBUS.
        let done =
            unsafe { libc::madvise(self.map.as_ptr() as *mut libc::c_void, self.map.len(), libc::MADV_POPULATE_READ) };
        if done != 0 {
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                // The kernel does not know the advice: touch each page. The
                // mapping is registered, so a lost page is contained and
                // flagged like any other read's.
                Some(libc::EINVAL) => {
                    let page = PAGE_BYTES.load(Ordering::Relaxed);
                    let mut seen = 0u8;
                    for offset in (0..self.map.len()).step_by(page) {
                        // SAFETY: within the mapping.
                        seen ^= unsafe { self.map.as_ptr().add(offset).read_volatile() };
                    }
                    std::hint::black_box(seen);
                }
                Some(libc::EFAULT) | Some(libc::EIO) => return Err(lost()),
                _ => return Err(io::Error::new(err.kind(), format!("cannot read the mapped file in: {err}"))),
            }
        }
        if self.faulted() { Err(lost()) } else { Ok(()) }
    }

    /// Whether a page of this mapping was lost since it was made (or the
    /// flag it was given was set): nothing read from it may then be trusted.
    /// Call after reading: a fault while reading sets it before the read
    /// returns.
    #[inline]
    pub fn faulted(&self) -> bool {
        // The reads before this call must not be moved after the check (a
        // fault is handled on the reading thread itself).
        compiler_fence(Ordering::SeqCst);
        self.flag.load(Ordering::Acquire)
    }

    /// The underlying map (for `madvise`).
    pub fn mmap(&self) -> &Mmap {
        &self.map
    }

    /// The flag [`GuardedMap::faulted`] reads.
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }
}

impl Deref for GuardedMap {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for GuardedMap {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            // Unpublished before the mapping goes (the field is dropped after this).
            let slot = &SLOTS[i];
            slot.start.store(0, Ordering::Release);
            slot.len.store(0, Ordering::Release);
            slot.flag.store(std::ptr::null_mut(), Ordering::Release);
            slot.claimed.store(false, Ordering::Release);
        }
    }
}

fn register(start: usize, len: usize, flag: &Arc<AtomicBool>) -> io::Result<usize> {
    for (i, slot) in SLOTS.iter().enumerate() {
        if slot.claimed.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            continue;
        }
        HIGH_WATER.fetch_max(i + 1, Ordering::AcqRel);
        slot.flag.store(Arc::as_ptr(flag).cast_mut(), Ordering::Release);
        slot.len.store(len, Ordering::Release);
        slot.start.store(start, Ordering::Release);
        return Ok(i);
    }
    Err(io::Error::other(format!("more than {MAX_MAPPINGS} files mapped at once")))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("mapguard-{name}-{}", std::process::id()));
        let mut f = File::create(&path).unwrap();
        f.write_all(bytes).unwrap();
        f.sync_all().unwrap();
        (path.clone(), File::open(&path).unwrap())
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 1) as u8 | 1).collect()
    }

    #[test]
    fn a_truncated_mapping_reads_zeros_and_is_flagged_others_are_not() {
        let page = PAGE_BYTES.load(Ordering::Relaxed).max(4096);
        let bytes = pattern(4 * page);
        let (path, file) = temp_file("truncated", &bytes);
        let (other_path, other_file) = temp_file("other", &bytes);
        // SAFETY: test files, truncated on purpose.
        let (map, other) = unsafe { (GuardedMap::map(&file).unwrap(), GuardedMap::map(&other_file).unwrap()) };
        assert_eq!(&map[..], &bytes[..]);
        assert!(!map.faulted());
        let before = faults();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(page as u64).unwrap();
        // The lost pages read as zeros (once the first read faulted, the
        // whole mapping does), and the mapping says so.
        let tail = map[3 * page..].to_vec();
        assert!(map.faulted());
        assert!(tail.iter().all(|&b| b == 0));
        assert!(faults() > before);
        assert!(!other.faulted());
        assert_eq!(&other[..], &bytes[..]);
        drop(map);
        // Its slot is free again.
        assert!(registered() >= 1);
        drop(other);
        std::fs::remove_file(path).ok();
        std::fs::remove_file(other_path).ok();
    }

    #[test]
    fn a_shared_flag_outlives_its_mapping() {
        let page = PAGE_BYTES.load(Ordering::Relaxed).max(4096);
        let (path, file) = temp_file("shared", &pattern(2 * page));
        let flag = Arc::new(AtomicBool::new(false));
        // SAFETY: a test file, truncated on purpose.
        let map = unsafe { GuardedMap::map_flagged(&file, Arc::clone(&flag)).unwrap() };
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        assert_eq!(map[page], 0);
        drop(map);
        assert!(flag.load(Ordering::SeqCst));
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn an_empty_file_maps_to_nothing() {
        let (path, file) = temp_file("empty", b"");
        // SAFETY: a test file.
        let map = unsafe { GuardedMap::map(&file).unwrap() };
        assert!(map.is_empty() && !map.faulted());
        std::fs::remove_file(path).ok();
    }

    /// A fault outside every registered mapping still kills the process
    /// (checked in a child process running the ignored test below).
    #[test]
    fn other_faults_keep_their_default_action() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::unregistered_fault_child", "--ignored", "--nocapture", "--test-threads=1"])
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("child: mapped"), "{stderr}");
        assert_eq!(output.status.signal(), Some(libc::SIGBUS), "{:?}: {stderr}", output.status);
    }

    #[test]
    #[ignore = "run by other_faults_keep_their_default_action in a child process"]
    fn unregistered_fault_child() {
        install().unwrap();
        let page = PAGE_BYTES.load(Ordering::Relaxed).max(4096);
        let (path, file) = temp_file("unregistered", &pattern(2 * page));
        // SAFETY: a plain (unregistered) mapping, truncated on purpose.
        let map = unsafe { Mmap::map(&file).unwrap() };
        eprintln!("child: mapped");
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        std::fs::remove_file(&path).ok();
        let byte = unsafe { std::ptr::read_volatile(&map[page]) };
        eprintln!("child: survived with {byte}");
    }

    /// Resident kB of the mapping starting at `start`, from /proc/self/smaps.
    fn resident_kib(start: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{start:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        lines.next().expect("the mapping is listed");
        let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
        rss.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn populate_makes_every_page_resident() {
        let page = PAGE_BYTES.load(Ordering::Relaxed).max(4096);
        let bytes = pattern(64 * page);
        let (path, file) = temp_file("populate", &bytes);
        // SAFETY: a test file, never modified.
        let map = unsafe { GuardedMap::map(&file).unwrap() };
        let before = resident_kib(map.as_ptr() as usize);
        map.populate().unwrap();
        let after = resident_kib(map.as_ptr() as usize);
        assert_eq!(after, (64 * page / 1024) as u64, "resident before: {before} kB");
        assert_eq!(&map[..], &bytes[..]);
        assert!(!map.faulted());
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn populating_a_truncated_mapping_is_an_error_not_a_signal() {
        let page = PAGE_BYTES.load(Ordering::Relaxed).max(4096);
        let (path, file) = temp_file("populate-truncated", &pattern(8 * page));
        // SAFETY: a test file, truncated on purpose.
        let map = unsafe { GuardedMap::map(&file).unwrap() };
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(2 * page as u64).unwrap();
        let err = map.populate().unwrap_err();
        assert!(err.to_string().contains(LOST_PAGES), "{err}");
        std::fs::remove_file(path).ok();
    }
}
