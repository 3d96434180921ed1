//! A read-only FUSE file system served from memory by a thread of the test,
//! whose reads of chosen byte ranges fail with EIO once switched on: a disk
//! read error on demand, for files that are already open and mapped. It
//! speaks the kernel's `/dev/fuse` protocol itself (one directory of
//! regular files; no library). Needs root and `/dev/fuse`.

use std::{
    ffi::CString,
    ops::Range,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

/// A file of the file system: its name, content and the bytes whose reads
/// fail once [`FaultyFs::fail`] is called.
pub struct FaultyFile {
    pub name: String,
    pub bytes: Vec<u8>,
    pub bad: Range<u64>,
}

/// The mounted file system; unmounted (lazily) when dropped.
pub struct FaultyFs {
    pub dir: PathBuf,
    /// The device, for notifications to the kernel.
    device: std::fs::File,
    /// Inode and bad range of each file that has one.
    bad: Vec<(u64, Range<u64>)>,
    failing: Arc<AtomicBool>,
    /// Reads answered with EIO so far.
    pub failed_reads: Arc<AtomicU64>,
}

const ROOT: u64 = 1;
const IN_HEADER: usize = 40;

// Operation codes (include/uapi/linux/fuse.h).
const LOOKUP: u32 = 1;
const FORGET: u32 = 2;
const GETATTR: u32 = 3;
const OPEN: u32 = 14;
const READ: u32 = 15;
const RELEASE: u32 = 18;
const FLUSH: u32 = 25;
const INIT: u32 = 26;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const INTERRUPT: u32 = 36;
const DESTROY: u32 = 38;
const BATCH_FORGET: u32 = 42;
const NOTIFY_INVAL_INODE: i32 = 2;

impl FaultyFs {
    /// Mounts `files` at `dir` (created). `Err` when this machine cannot
    /// (no `/dev/fuse`, not allowed to mount).
    pub fn mount(dir: &Path, files: Vec<FaultyFile>) -> std::io::Result<FaultyFs> {
        std::fs::create_dir_all(dir)?;
        let device = std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse")?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&device);
        let target = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let options = CString::new(format!("fd={fd},rootmode=40000,user_id=0,group_id=0")).unwrap();
        // SAFETY: valid NUL-terminated strings; the kernel keeps its own
        // reference to the open device.
        let mounted = unsafe {
            libc::mount(
                c"tbserver-faulty".as_ptr(),
                target.as_ptr(),
                c"fuse".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_RDONLY,
                options.as_ptr().cast(),
            )
        };
        if mounted != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let failing = Arc::new(AtomicBool::new(false));
        let failed_reads = Arc::new(AtomicU64::new(0));
        let bad = files
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.bad.is_empty())
            .map(|(i, f)| (i as u64 + 2, f.bad.clone()))
            .collect();
        let notifier = device.try_clone()?;
        let server = Server { files, failing: Arc::clone(&failing), failed_reads: Arc::clone(&failed_reads) };
        // Ends when the file system is unmounted (the device then answers
        // ENODEV), or with the process.
        std::thread::Builder::new().name("faulty-fs".into()).spawn(move || server.serve(device)).unwrap();
        Ok(FaultyFs { dir: dir.to_owned(), device: notifier, bad, failing, failed_reads })
    }

    /// From now on, reads of the files' bad ranges fail with EIO; their
    /// pages are dropped from the page cache (and from every mapping), as
    /// the kernel may drop clean pages at any time, so that the next access
    /// reads them again.
    pub fn fail(&self) {
        use std::io::Write;
        self.failing.store(true, Ordering::SeqCst);
        for (ino, range) in &self.bad {
            // FUSE_NOTIFY_INVAL_INODE: header (error = the code), then
            // inode, offset, length.
            let mut payload = Vec::with_capacity(24);
            payload.extend(ino.to_le_bytes());
            payload.extend((range.start as i64).to_le_bytes());
            payload.extend(((range.end - range.start) as i64).to_le_bytes());
            let message = out_header(0, NOTIFY_INVAL_INODE, &payload);
            (&self.device).write_all(&message).expect("invalidate the cached pages");
        }
    }
}

impl Drop for FaultyFs {
    fn drop(&mut self) {
        let target = CString::new(self.dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path; a lazy unmount leaves open files working.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

struct Server {
    files: Vec<FaultyFile>,
    failing: Arc<AtomicBool>,
    failed_reads: Arc<AtomicU64>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl Server {
    fn serve(self, device: std::fs::File) {
        use std::io::{Read, Write};
        let mut device = device;
        let mut buf = vec![0u8; (1 << 20) + 4096];
        loop {
            let n = match device.read(&mut buf) {
                Ok(n) => n,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::ENOENT)) => continue,
                Err(_) => return,
            };
            if n < IN_HEADER {
                continue;
            }
            let (opcode, unique, node) = (u32_at(&buf, 4), u64_at(&buf, 8), u64_at(&buf, 16));
            let body = &buf[IN_HEADER..n];
            let reply: Result<Vec<u8>, i32> = match opcode {
                FORGET | BATCH_FORGET | INTERRUPT => continue,
                INIT => Ok(init_out(u32_at(body, 4))),
                LOOKUP => {
                    let name = body.split(|&b| b == 0).next().unwrap_or_default();
                    match self.files.iter().position(|f| f.name.as_bytes() == name) {
                        Some(i) if node == ROOT => Ok(entry_out(i as u64 + 2, self.files[i].bytes.len() as u64)),
                        _ => Err(libc::ENOENT),
                    }
                }
                GETATTR => self.attr(node).map(|(ino, size, mode)| {
                    let mut out = vec![0u8; 16];
                    out[0..8].copy_from_slice(&3600u64.to_le_bytes());
                    out.extend(attr(ino, size, mode));
                    out
                }),
                OPEN | OPENDIR => Ok(vec![0u8; 16]),
                RELEASE | RELEASEDIR | FLUSH => Ok(Vec::new()),
                READ => self.read(node, u64_at(body, 8), u32_at(body, 16)),
                READDIR => Ok(self.readdir(u64_at(body, 8), u32_at(body, 16))),
                DESTROY => {
                    let _ = device.write_all(&out_header(unique, 0, &[]));
                    return;
                }
                _ => Err(libc::ENOSYS),
            };
            let message = match reply {
                Ok(payload) => out_header(unique, 0, &payload),
                Err(errno) => out_header(unique, -errno, &[]),
            };
            // ENOENT: the request was interrupted meanwhile; ENODEV: unmounted.
            if let Err(e) = device.write_all(&message)
                && e.raw_os_error() == Some(libc::ENODEV)
            {
                return;
            }
        }
    }

    /// Inode, size and mode of `node`.
    fn attr(&self, node: u64) -> Result<(u64, u64, u32), i32> {
        if node == ROOT {
            return Ok((ROOT, 0, libc::S_IFDIR | 0o555));
        }
        let file = self.files.get((node as usize).wrapping_sub(2)).ok_or(libc::ENOENT)?;
        Ok((node, file.bytes.len() as u64, libc::S_IFREG | 0o444))
    }

    fn read(&self, node: u64, offset: u64, size: u32) -> Result<Vec<u8>, i32> {
        let file = self.files.get((node as usize).wrapping_sub(2)).ok_or(libc::EBADF)?;
        let len = file.bytes.len() as u64;
        let end = (offset + u64::from(size)).min(len);
        if offset >= end {
            return Ok(Vec::new());
        }
        if self.failing.load(Ordering::SeqCst) && offset < file.bad.end && file.bad.start < end {
            self.failed_reads.fetch_add(1, Ordering::Relaxed);
            return Err(libc::EIO);
        }
        Ok(file.bytes[offset as usize..end as usize].to_vec())
    }

    /// Entries after `offset` (an entry's offset is its index + 1).
    fn readdir(&self, offset: u64, size: u32) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, f) in self.files.iter().enumerate().skip(offset as usize) {
            let name = f.name.as_bytes();
            let entry_len = (24 + name.len()).div_ceil(8) * 8;
            if out.len() + entry_len > size as usize {
                break;
            }
            out.extend((i as u64 + 2).to_le_bytes());
            out.extend((i as u64 + 1).to_le_bytes());
            out.extend((name.len() as u32).to_le_bytes());
            out.extend(u32::from(libc::DT_REG).to_le_bytes());
            out.extend(name);
            out.resize(out.len().div_ceil(8) * 8, 0);
        }
        out
    }
}

fn out_header(unique: u64, error: i32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + payload.len());
    out.extend(((16 + payload.len()) as u32).to_le_bytes());
    out.extend(error.to_le_bytes());
    out.extend(unique.to_le_bytes());
    out.extend(payload);
    out
}

/// Protocol 7.31, no read-ahead (pages are read one at a time, as faults
/// ask for them), no optional features.
fn init_out(kernel_minor: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend(7u32.to_le_bytes());
    out.extend(kernel_minor.min(31).to_le_bytes());
    out.extend(0u32.to_le_bytes()); // max_readahead
    out.extend(0u32.to_le_bytes()); // flags
    out.extend(1u16.to_le_bytes()); // max_background
    out.extend(1u16.to_le_bytes()); // congestion_threshold
    out.extend((128u32 << 10).to_le_bytes()); // max_write
    out.extend(1u32.to_le_bytes()); // time_gran
    out.resize(64, 0);
    out
}

fn attr(ino: u64, size: u64, mode: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(88);
    out.extend(ino.to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend(size.div_ceil(512).to_le_bytes());
    out.extend([0u8; 24]); // atime, mtime, ctime
    out.extend([0u8; 12]); // their nanoseconds
    out.extend(mode.to_le_bytes());
    out.extend(1u32.to_le_bytes()); // nlink
    out.extend([0u8; 12]); // uid, gid, rdev
    out.extend(4096u32.to_le_bytes()); // blksize
    out.extend([0u8; 4]);
    out
}

fn entry_out(ino: u64, size: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend(ino.to_le_bytes());
    out.extend(0u64.to_le_bytes()); // generation
    out.extend(3600u64.to_le_bytes()); // entry_valid
    out.extend(3600u64.to_le_bytes()); // attr_valid
    out.extend([0u8; 8]);
    out.extend(attr(ino, size, libc::S_IFREG | 0o444));
    out
}
