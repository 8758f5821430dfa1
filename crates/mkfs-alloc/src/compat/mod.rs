//! What dosfstools' `mkfs.fat` and exfatprogs' `mkfs.exfat` would make of
//! their options on a medium, in this crate's options: the translation a
//! drop-in front end (or an image builder that takes those tools' options)
//! plans with.
//!
//! ```text
//!  FatRequest + Medium ─► decide_fat:   mkfs.fat's width and cluster size (dosfs::choose),
//!                                       checked with MediumOptions::plan; if our cluster-count
//!                                       margins refuse it, the nearest size that plans
//!  cluster?   + Medium ─► decide_exfat: mkfs.exfat's default cluster size
//!                     ─► Decision { fs, cluster, root_entries, align, bios, notes }
//!                     ─► Decision::apply_to(MediumOptions) ─► MediumOptions::plan
//! ```
//!
//! [`cmdline`] reads those tools' command lines into a [`cmdline::Request`]
//! (GNU getopt's rules, each tool's options and refusals); their wording
//! (usage, version, notes) is the caller's: a [`Decision`] holds values and
//! [`Note`]s, not text.
//!
//! ```
//! use mkfs_alloc::compat::{decide_fat, FatRequest, Medium};
//! use mkfs_alloc::layout::{ClusterChoice, FsChoice, FsKind};
//!
//! // `mkfs.fat IMG` on a 10 MiB image: FAT16 at 4 sectors per cluster.
//! let medium = Medium { bytes: 10 << 20, block: 512, sector: 512, not_fixed: true, align: None };
//! let d = decide_fat(&FatRequest::default(), &medium);
//! assert_eq!(d.fs, FsChoice::Fixed(FsKind::Fat16));
//! assert_eq!(d.cluster, ClusterChoice::Bytes(2048));
//! assert!(d.notes.is_empty());
//! ```

pub mod cmdline;
pub mod dosfs;
mod exfat;
mod fat;

pub use exfat::{decide_exfat, exfat_default_cluster};
pub use fat::{decide_fat, scaled_align, FatRequest};

use crate::{FormatError, MediumOptions};
use mkfs_alloc_layout::{BiosParams, ClusterChoice, FormatOptions, FsChoice, FsKind};
use mkfs_alloc_partition::TableKind;

/// The medium a request lands on, as inspected (read-only) beforehand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Medium {
    /// Bytes the volume may use.
    pub bytes: u64,
    /// The target's logical block size.
    pub block: u32,
    /// The file system's sector size (mkfs.fat's `-S`, mkfs.exfat's `-s`,
    /// else the block size).
    pub sector: u32,
    /// An image file or a removable device (floppy sizes get a floppy's
    /// defaults).
    pub not_fixed: bool,
    /// The alignment a device asks for (its optimal I/O size), if any.
    pub align: Option<u64>,
}

/// What a foreign tool's options come to: the file system, the cluster
/// size and the placement to plan with, and where the result differs from
/// the original's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The file system ([`FsChoice::Fat`] where mkfs.fat gives up and this
    /// crate chooses the width).
    pub fs: FsChoice,
    /// The cluster size ([`ClusterChoice::Auto`] where this crate chooses).
    pub cluster: ClusterChoice,
    /// The root directory entries (FAT12/16): the original's count (a
    /// floppy's 224; whole clusters where it aligns).
    pub root_entries: Option<u32>,
    /// The alignment of the FAT and the data region, unless the request
    /// gave one.
    pub align: Option<u64>,
    /// A floppy's BIOS fields (media, geometry, drive), where the original
    /// writes them; `None`: a fixed disk's.
    pub bios: Option<BiosParams>,
    /// Where the volume differs from the original's.
    pub notes: Vec<Note>,
}

impl Decision {
    /// Sets what the decision fixes in `opts`: no partition table (the
    /// originals format what they are given), the file system, the cluster
    /// size, the root directory entries (FAT12/16), the alignment and a
    /// floppy's BIOS fields. The rest of the foreign options are the
    /// caller's to set (the label, the serial, the number of FATs, the
    /// sector size, and `keep_label_case`: mkfs.fat keeps a label's case).
    ///
    /// # Errors
    ///
    /// A root directory entry count the options refuse.
    pub fn apply_to(&self, opts: MediumOptions) -> Result<MediumOptions, FormatError> {
        let small = matches!(self.fs, FsChoice::Fixed(FsKind::Fat12 | FsKind::Fat16));
        let mut format = opts
            .format_options()
            .clone()
            .fs(self.fs)
            .cluster(self.cluster);
        if let Some(n) = self.root_entries.filter(|_| small) {
            format = format.root_entries(n)?;
        }
        if let Some(align) = self.align {
            format = format.align(align);
        }
        if let Some(bios) = self.bios {
            format = format.bios(bios);
        }
        Ok(opts.format(format).table(TableKind::None).whole_disk(false))
    }
}

/// A difference between the volume planned and the original tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// Root directory entries were asked for, and the volume is FAT32
    /// (which has none).
    RootEntriesOnFat32,
    /// mkfs.fat would make `fs` at `cluster` bytes with `clusters`
    /// clusters, a count outside this crate's margins for that width.
    OutsideMargins {
        /// The original's file system.
        fs: FsKind,
        /// The original's cluster size, in bytes.
        cluster: u64,
        /// The original's cluster count.
        clusters: u32,
        /// The nearest cluster size of the same width that plans, and its
        /// cluster count; `None`: the width and cluster size are this
        /// crate's choice instead.
        instead: Option<(u64, u32)>,
    },
}

/// Where the FAT structures go: the alignment and the root directory.
#[derive(Debug, Clone, Copy)]
struct Placing {
    /// The alignment, in bytes.
    align: u64,
    /// The root directory entries (FAT12/16).
    root_entries: Option<u32>,
}

impl Medium {
    /// The file system [`MediumOptions::plan`] makes of `fs` at `cluster`
    /// bytes placed as `p` (and its cluster count), or `None` if it refuses.
    fn accepts(
        &self,
        fs: FsChoice,
        cluster: ClusterChoice,
        p: Placing,
        fats: Option<u8>,
    ) -> Option<(FsKind, u32)> {
        let small = matches!(fs, FsChoice::Fixed(FsKind::Fat12 | FsKind::Fat16));
        let mut format = FormatOptions::new()
            .fs(fs)
            .cluster(cluster)
            .align(p.align)
            .serial(0);
        if let Some(n) = p.root_entries.filter(|_| small) {
            format = format.root_entries(n).ok()?;
        }
        if let Some(n) = fats {
            format = format.fats(n).ok()?;
        }
        let opts = MediumOptions::new()
            .format(format)
            .table(TableKind::None)
            .whole_disk(false)
            .sector_size(self.sector)
            .ok()?;
        let plan = opts.plan(self.bytes, self.block).ok()?;
        Some((plan.layout().fs(), plan.layout().cluster_count().get()))
    }
}
