//! One node of the tree (32 bytes) and where its bytes come from.

use mkfs_alloc_layout::Timestamp;

/// Where a file's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// A directory created by a destination path (no source).
    None,
    /// A host file or directory: `host_path(hd).join(name)`, or for a
    /// directory read from the host, `host_path(hd)` itself.
    HostDir(u32),
    /// A host file given by path: `paths[i]`.
    HostPath(u32),
    /// A reader given to [`Tree::add_file`]: `readers[i]`.
    Memory(u32),
}

/// log2 of the name arena's chunk size.
pub(super) const NAME_CHUNK_BITS: u32 = 20;
/// Bytes per chunk of the name arena (1 MiB; 4096 chunks at most).
pub(super) const NAME_CHUNK: usize = 1 << NAME_CHUNK_BITS;

/// One file or directory of the tree: 32 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub(crate) parent: u32,
    pub(crate) name_off: u32,
    /// Set by the planner: first cluster (0 for empty files).
    pub(crate) first_cluster: u32,
    /// Seconds since 1980-01-01 (the mtime clamped to what FAT and exFAT store).
    mtime_secs: u32,
    src_idx: u32,
    /// Files: length in bytes. Directories: index into `Tree::children` (low
    /// 32 bits) and, once planned, clusters (high 32 bits).
    pub(crate) size: u64,
    pub(crate) name_len: u16,
    /// Bit 0: directory; bits 1-2: source kind.
    flags: u8,
    /// Hundredths of a second of the mtime.
    centis: u8,
}

const _: () = assert!(std::mem::size_of::<Node>() == 32);

impl Node {
    pub(super) fn new(
        parent: u32,
        name_off: u32,
        name_len: u16,
        is_dir: bool,
        src: Src,
        size: u64,
        mtime: Timestamp,
    ) -> Node {
        let secs = mtime
            .secs
            .clamp(crate::time::MIN_SECS, crate::time::MAX_SECS)
            - crate::time::MIN_SECS;
        let centis = if mtime.secs < crate::time::MIN_SECS || mtime.secs > crate::time::MAX_SECS {
            0
        } else {
            (mtime.nanos.min(999_999_999) / 10_000_000) as u8
        };
        let mut n = Node {
            parent,
            name_off,
            first_cluster: 0,
            mtime_secs: secs as u32,
            src_idx: 0,
            size,
            name_len,
            flags: u8::from(is_dir),
            centis,
        };
        n.set_src(src);
        n
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.flags & 1 != 0
    }

    pub(crate) fn src(&self) -> Src {
        match (self.flags >> 1) & 3 {
            1 => Src::HostDir(self.src_idx),
            2 => Src::HostPath(self.src_idx),
            3 => Src::Memory(self.src_idx),
            _ => Src::None,
        }
    }

    pub(crate) fn set_src(&mut self, src: Src) {
        let (kind, idx) = match src {
            Src::None => (0, 0),
            Src::HostDir(i) => (1, i),
            Src::HostPath(i) => (2, i),
            Src::Memory(i) => (3, i),
        };
        self.flags = (self.flags & 1) | (kind << 1);
        self.src_idx = idx;
    }

    /// The stored mtime (already within FAT's and exFAT's range).
    pub(crate) fn mtime(&self) -> Timestamp {
        Timestamp {
            secs: i64::from(self.mtime_secs) + crate::time::MIN_SECS,
            nanos: u32::from(self.centis) * 10_000_000,
        }
    }

    /// True when `t` is stored as this node's mtime (at the precision
    /// kept: the walk's mtime of a file that has not changed since).
    pub(crate) fn has_mtime(&self, t: Timestamp) -> bool {
        let n = Node::new(0, 0, 0, false, Src::None, 0, t);
        (n.mtime_secs, n.centis) == (self.mtime_secs, self.centis)
    }

    pub(crate) fn set_mtime(&mut self, t: Timestamp) {
        let n = Node::new(0, 0, 0, false, Src::None, 0, t);
        self.mtime_secs = n.mtime_secs;
        self.centis = n.centis;
    }

    pub(super) fn children_index(&self) -> usize {
        (self.size & 0xFFFF_FFFF) as usize
    }

    /// Clusters of a planned directory.
    pub(crate) fn dir_clusters(&self) -> u32 {
        (self.size >> 32) as u32
    }

    pub(crate) fn set_dir_clusters(&mut self, n: u32) {
        self.size = (self.size & 0xFFFF_FFFF) | (u64::from(n) << 32);
    }
}
