//! The FAT32 side of `cargo xtask bench --resize`: the conversion's image
//! made by `mkfs.fat -F 32` and filled through mtools, and the peers'
//! copy off through mtools (this machine has no vfat module; mtools is
//! what reads and writes FAT images without one).

use crate::bench_recluster::{sh, Loop};
use std::path::Path;

/// mtools' own checks of the medium off: the images are mkfs.fat's.
const MTOOLS: &str = "MTOOLS_SKIP_CHECK=1 LC_ALL=C.UTF-8";

/// `mkfs.fat -F 32` on a sparse image of `bytes`, `tree` copied in with
/// `mcopy -s`.
pub(crate) fn make_image(bytes: u64, img: &Path, tree: &Path) -> Result<(), String> {
    crate::bench_resize::truncate(img, bytes)?;
    sh("mkfs.fat -F 32 \"$1\" >/dev/null", &[&img])?;
    sh(
        &format!("{MTOOLS} mcopy -s -i \"$1\" \"$2\"/* ::/ && sync"),
        &[&img, &tree],
    )
    .map(drop)
}

/// Every file of the FAT volume on `dev` copied to `off` with `mcopy -s
/// -n`, ended by `sync`.
pub(crate) fn copy_off(dev: &Loop, off: &Path) -> Result<(), String> {
    sh(
        &format!("{MTOOLS} mcopy -s -n -i \"$1\" ::/ \"$2\"/ && sync"),
        &[&dev.0, &off],
    )
    .map(drop)
}
