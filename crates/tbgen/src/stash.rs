//! A generated table's compressed blocks between their encoding and the
//! table's file: held in memory up to a bound, the rest spilled to a
//! temporary file beside the tables. A table with pawns is encoded layer
//! by layer while later layers are still being solved; without spilling,
//! its blocks would add the whole file's size to the generation's peak
//! (for the largest 5-piece tables, close to a gigabyte of blocks on top
//! of the working memory).

use std::{
    fs,
    io::{self, Read, Seek, SeekFrom, Write},
    path::PathBuf,
};

use tbformat::{
    Material,
    format::{self, Encoded, IndexEntry},
};

/// Bytes of blocks held in memory before further ones are spilled: small
/// tables (every one of up to 4 pieces) never touch the disk before their
/// file is written.
pub const DEFAULT_MAX_HELD_BYTES: u64 = 64 << 20;

/// The blocks of one table, by block number, as they are encoded (in any
/// order).
pub struct BlockStash {
    slots: Vec<Slot>,
    held_bytes: u64,
    max_held_bytes: u64,
    /// The spill file to create; `None`: blocks are only held.
    spill_path: Option<PathBuf>,
    spill: Option<Spill>,
    /// Why spilling stopped (then every further block is held).
    spill_failed: Option<String>,
}

enum Slot {
    Missing,
    Held { block: Encoded, entry: IndexEntry },
    Spilled { offset: u64, entry: IndexEntry },
}

/// A temporary file of blocks, removed when dropped.
struct Spill {
    file: fs::File,
    path: PathBuf,
    len: u64,
}

impl Drop for Spill {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(file = %self.path.display(), "could not remove a spill file: {e}");
        }
    }
}

impl BlockStash {
    /// Room for the `count` blocks of a table, all held in memory.
    pub fn in_memory(count: usize) -> BlockStash {
        BlockStash {
            slots: (0..count).map(|_| Slot::Missing).collect(),
            held_bytes: 0,
            max_held_bytes: u64::MAX,
            spill_path: None,
            spill: None,
            spill_failed: None,
        }
    }

    /// Room for the `count` blocks of a table: beyond `max_held_bytes` of
    /// them in memory, the rest go to a new file at `path` (created on the
    /// first block spilled, which fails if it exists).
    pub fn spilling(count: usize, max_held_bytes: u64, path: PathBuf) -> BlockStash {
        BlockStash { max_held_bytes, spill_path: Some(path), ..BlockStash::in_memory(count) }
    }

    /// Stores block `b`. A block that cannot be spilled (a full disk) is
    /// held instead: the table's own write will then fail too, and the
    /// store decides whether to serve it from memory.
    pub(crate) fn put(&mut self, b: usize, block: Encoded) {
        debug_assert!(matches!(self.slots[b], Slot::Missing), "block {b} stored twice");
        let entry = block.index_entry();
        if self.held_bytes + entry.frames_bytes() > self.max_held_bytes && self.spill_failed.is_none() {
            match self.spill(&block) {
                Ok(offset) => {
                    self.slots[b] = Slot::Spilled { offset, entry };
                    return;
                }
                Err(e) => {
                    tracing::warn!(file = ?self.spill_path, "could not spill a table's blocks, holding them in memory: {e}");
                    self.spill_failed = Some(e.to_string());
                }
            }
        }
        self.held_bytes += entry.frames_bytes();
        self.slots[b] = Slot::Held { block, entry };
    }

    /// Appends `block`'s frames to the spill file; returns where they start.
    fn spill(&mut self, block: &Encoded) -> io::Result<u64> {
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => {
                let path = self.spill_path.clone().ok_or_else(|| io::Error::other("no directory to spill to"))?;
                let file = fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
                self.spill.insert(Spill { file, path, len: 0 })
            }
        };
        let offset = spill.len;
        spill.file.seek(SeekFrom::Start(offset))?;
        for frame in block.frames() {
            spill.file.write_all(frame)?;
            spill.len += frame.len() as u64;
        }
        Ok(offset)
    }

    /// Whether every block is stored.
    pub(crate) fn is_complete(&self) -> bool {
        self.slots.iter().all(|s| !matches!(s, Slot::Missing))
    }

    /// Bytes of blocks spilled to disk.
    #[cfg(test)]
    fn spilled_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.len)
    }

    /// The block index's entries, in block order.
    fn entries(&self) -> Vec<IndexEntry> {
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Missing => panic!("a table is written only once every block is stored"),
                Slot::Held { entry, .. } | Slot::Spilled { entry, .. } => *entry,
            })
            .collect()
    }

    /// Bytes of the table file of these blocks (a table of `positions`).
    pub fn file_bytes(&self, positions: usize) -> u64 {
        format::file_bytes(positions, &self.entries())
    }

    /// Writes the table file (format [`format::VERSION`]) to `w`, one block
    /// at a time; returns its header.
    pub fn write_to(
        &mut self,
        w: &mut impl Write,
        material: &Material,
        positions: usize,
        has_dtm50: bool,
        legal_positions: u64,
    ) -> io::Result<[u8; format::HEADER_LEN]> {
        let start = format::header_and_index(material, positions, has_dtm50, legal_positions, &self.entries());
        w.write_all(&start)?;
        let mut buf = Vec::new();
        for b in 0..self.slots.len() {
            match &self.slots[b] {
                Slot::Missing => unreachable!("checked by `entries`"),
                Slot::Held { block, .. } => block.frames().try_for_each(|f| w.write_all(f))?,
                &Slot::Spilled { offset, entry } => {
                    let spill = self.spill.as_mut().expect("a spilled block has its file");
                    buf.resize(entry.frames_bytes() as usize, 0);
                    spill.file.seek(SeekFrom::Start(offset))?;
                    spill.file.read_exact(&mut buf)?;
                    w.write_all(&buf)?;
                }
            }
        }
        Ok(start[..format::HEADER_LEN].try_into().expect("a header"))
    }

    /// The table file in memory (for a table that could not be written).
    pub fn assemble(
        &mut self,
        material: &Material,
        positions: usize,
        has_dtm50: bool,
        legal_positions: u64,
    ) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.file_bytes(positions) as usize);
        self.write_to(&mut out, material, positions, has_dtm50, legal_positions)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbformat::format::{BLOCK_POSITIONS, Compression};

    /// Blocks of some values: a few distinct columns, so that blocks differ.
    fn encoded(count: usize) -> Vec<Encoded> {
        (0..count)
            .map(|b| {
                let dtz: Vec<u16> = (0..BLOCK_POSITIONS).map(|i| ((i * (b + 3)) % 97) as u16).collect();
                let dtm: Vec<u16> = dtz.iter().map(|&v| v * 2 + 1).collect();
                format::encode_one::<tbformat::dtm50::Dtm50Data>(Compression::Fast, &dtz, &dtm, None)
            })
            .collect()
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tbserver-blocks-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Spilled or held, stored in any order: the same file as the blocks
    /// assembled in memory, and no spill file left behind.
    #[test]
    fn spilled_blocks_make_the_same_file() {
        let material = Material::parse("KQvK").unwrap();
        let count = 5;
        let positions = count * BLOCK_POSITIONS - 17;
        let expected = format::assemble(&material, positions, false, 1234, &encoded(count));
        let d = dir("spill");
        let sizes: Vec<u64> = encoded(count).iter().map(|e| e.index_entry().frames_bytes()).collect();
        // The last two blocks (stored first) held, the others spilled.
        let two_held = sizes[count - 2..].iter().sum::<u64>();
        for max_held in [0, two_held, u64::MAX] {
            let mut blocks = BlockStash::spilling(count, max_held, d.join("KQvK.blocks"));
            for (b, e) in encoded(count).into_iter().enumerate().rev() {
                assert!(!blocks.is_complete());
                blocks.put(b, e);
            }
            assert!(blocks.is_complete());
            let spilled: u64 = match max_held {
                0 => sizes.iter().sum(),
                u64::MAX => 0,
                _ => sizes[..count - 2].iter().sum(),
            };
            assert_eq!(blocks.spilled_bytes(), spilled, "max held {max_held}");
            assert_eq!(blocks.file_bytes(positions), expected.len() as u64);
            let mut file = Vec::new();
            blocks.write_to(&mut file, &material, positions, false, 1234).unwrap();
            assert!(file == expected, "max held {max_held}");
            assert!(blocks.assemble(&material, positions, false, 1234).unwrap() == expected);
            drop(blocks);
            assert_eq!(fs::read_dir(&d).unwrap().count(), 0, "the spill file is removed");
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// A directory that cannot take the spill: the blocks are held.
    #[test]
    fn blocks_that_cannot_be_spilled_are_held() {
        let material = Material::parse("KQvK").unwrap();
        let d = dir("unspillable");
        let mut blocks = BlockStash::spilling(3, 0, d.join("missing").join("KQvK.blocks"));
        for (b, e) in encoded(3).into_iter().enumerate() {
            blocks.put(b, e);
        }
        assert_eq!(blocks.spilled_bytes(), 0);
        assert!(blocks.spill_failed.is_some());
        let positions = 3 * BLOCK_POSITIONS;
        assert!(
            blocks.assemble(&material, positions, false, 7).unwrap()
                == format::assemble(&material, positions, false, 7, &encoded(3))
        );
        let _ = fs::remove_dir_all(&d);
    }
}
