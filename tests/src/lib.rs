//! Test harness of mkfs-alloc's interoperability tests.
//!
//! The tests in `tests/tests/` format images with the `mkfs-alloc` binary (or
//! the layout library) and hand them to independent implementations: the
//! Linux tools (exfatprogs, dosfstools, mtools, 7-Zip), FUSE drivers
//! (exfat-fuse, fusefat) on loop devices, and the `fatfs` crate.
//!
//! ```text
//!  cmd, tools, tempdir, loopdev, fuse: the guards of the test-support crate
//!            (mkfs-alloc-testsupport), re-exported
//!  fakestick a counterfeit stick (FUSE file that lies + direct-I/O loop device)
//!  powercut  a disk whose power can be cut (FUSE file with a volatile write
//!            cache + direct-I/O loop device)
//!  racetree  a --rootdir source whose entry becomes a link between walk and copy
//!  device_cuts the in-place jobs' power-cut sweep on the FUSE device, its readers
//!  recluster the re-cluster tests' images, tree through exfat-fuse, fsck of cut states
//!  fat_cuts  fsck.fat and mcopy on every state a cut FAT re-cluster leaves
//!  fatfs_io  the fatfs crate as an independent FAT reader/writer
//!  readers   volumes by mkfs.exfat/mkfs.fat filled by exfat-fuse/mtools, and
//!            the independent readers of them after an in-place change
//!  boot      independent decoders of exFAT and FAT32 boot fields
//!  image     sentinel files, hashes, reads at an offset
//!  cli       locating and running the mkfs-alloc binary
//!  sizes     smallest valid volume sizes, found through the planner
//! ```
//!
//! Policy: nothing here skips. A missing tool, binary, loop device or FUSE
//! module panics with a message that says how to fix the machine.

pub mod blk;
pub mod boot;
pub mod check;
pub mod checks;
pub mod cli;
pub mod device_cuts;
pub mod fakestick;
pub mod fat_cuts;
pub mod fatfs_io;
pub mod geometry;
pub mod image;
pub mod powercut;
pub mod racetree;
pub mod readers;
pub mod recluster;
pub mod sizes;

pub use mkfs_alloc_testsupport::{cmd, fuse, loopdev, tempdir, tools};

pub use boot::{exfat_checksum, exfat_upcase_table, ExfatBoot, ExfatRootInfo, Fat32Boot, FsInfo};
pub use cli::{
    format_image, format_planned, json_str, json_u64, mkfs_alloc, mkfs_alloc_bin, mkfs_alloc_env,
    FormatArgs, MkfsJson, FRONT_ENDS, SOURCE_DATE_EPOCH,
};
pub use cmd::{run, run_env, CmdOutput};
pub use fuse::FuseMount;
pub use image::{file_hash, fill_file, fill_range, read_at, sparse_file, test_data, SENTINEL};
pub use loopdev::{LoopDevice, LoopOptions};
pub use mkfs_alloc_testsupport::{
    fsck_findings, fsck_judge, tool, tool_ok, BindMount, FsckKind, TmpfsMount,
};
pub use sizes::{
    largest_valid, plan_for, smallest_valid, spec_count_bounds, spec_count_range, Size,
};
pub use tempdir::TempDir;
pub use tools::{require_root, require_tool, TOOLS};

/// One kibibyte.
pub const KIB: u64 = 1 << 10;
/// One mebibyte.
pub const MIB: u64 = 1 << 20;
/// One gibibyte.
pub const GIB: u64 = 1 << 30;
/// One tebibyte.
pub const TIB: u64 = 1 << 40;

/// Formats a byte count the way the CLI accepts it (`512`, `4K`, `32M`,
/// `3G`, `2T`): the largest binary unit that divides it exactly.
pub fn size_arg(bytes: u64) -> String {
    for (unit, suffix) in [(TIB, "T"), (GIB, "G"), (MIB, "M"), (KIB, "K")] {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}
