//! The FAT32 case of `cargo xtask bench --recluster`: the image made by
//! `mkfs.fat` and filled through mtools, the peers' way through mtools
//! (copy every file off with `mcopy -s`, `mkfs.fat` at the new size, copy
//! every file back), the files read back through mtools for the check.
//! mtools rather than a FUSE driver: this machine has no vfat module, and
//! mtools is what fills and reads FAT images without one.

use crate::bench_recluster::{sh, sums, timed, Case, Figures, Loop};
use std::path::Path;

/// mtools' own checks of the medium off: the images are mkfs.fat's.
const MTOOLS: &str = "MTOOLS_SKIP_CHECK=1 LC_ALL=C.UTF-8";

/// `mkfs.fat OPTS -s (from / 512)` on a sparse image of `c.size`, `tree`
/// copied in with `mcopy -s`.
pub(crate) fn make_image(c: &Case, img: &Path, tree: &Path) -> Result<(), String> {
    sh("truncate -s \"$1\" \"$2\"", &[&c.size.to_string(), &img])?;
    let opts = c.mkfs.join(" ");
    let per = (c.from / 512).to_string();
    sh(
        "mkfs.fat $1 -s \"$2\" \"$3\" >/dev/null",
        &[&opts, &per, &img],
    )?;
    sh(
        &format!("{MTOOLS} mcopy -s -i \"$1\" \"$2\"/* ::/ && sync"),
        &[&img, &tree],
    )
    .map(drop)
}

/// The peers' way on `img` (a direct-I/O loop device over it): every file
/// off to `off` with `mcopy -s`, `mkfs.fat` at `c.to`, every file back;
/// each leg ended by `sync`.
pub(crate) fn peers(c: &Case, img: &Path, off: &Path) -> Result<(f64, f64, f64), String> {
    let dev = Loop::new(img, true)?;
    std::fs::create_dir_all(off).map_err(|e| e.to_string())?;
    let t_off = timed(|| {
        sh(
            &format!("{MTOOLS} mcopy -s -n -i \"$1\" ::/ \"$2\"/ && sync"),
            &[&dev.0, &off],
        )
        .map(drop)
    })?;
    let opts = c.mkfs.join(" ");
    let per = (c.to / 512).to_string();
    let t_mkfs = timed(|| {
        sh(
            "mkfs.fat $1 -s \"$2\" \"$3\" >/dev/null && sync",
            &[&opts, &per, &dev.0],
        )
        .map(drop)
    })?;
    let t_back = timed(|| {
        sh(
            &format!("{MTOOLS} mcopy -s -i \"$1\" \"$2\"/* ::/ && sync"),
            &[&dev.0, &off],
        )
        .map(drop)
    })?;
    Ok((t_off, t_mkfs, t_back))
}

/// Every file of `img` copied out by `mcopy -s` into a scratch directory
/// beside `near`, and their SHA-256 sums ([`sums`]).
pub(crate) fn sums_through_mtools(img: &Path, near: &Path) -> Result<String, String> {
    let out = near.with_extension("mtools-out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let r = sh(
        &format!("{MTOOLS} mcopy -s -n -i \"$1\" ::/ \"$2\"/"),
        &[&img, &out],
    )
    .and_then(|_| sums(&out));
    let _ = std::fs::remove_dir_all(&out);
    r
}

/// A case whose dry run refused the volume (`why`): the real run must
/// refuse it too and leave `img` byte-identical (SHA-256 before and
/// after); the peers' way is still timed (`peers`) and its result checked
/// (`checked`), since it is then the only way.
pub(crate) fn refused(
    bin: &Path,
    to: &str,
    img: &Path,
    why: String,
    peers: impl FnOnce() -> Result<(f64, f64, f64), String>,
    checked: impl FnOnce() -> Result<(), String>,
) -> Result<Figures, String> {
    let digest = || sh("sha256sum <\"$1\"", &[&img]);
    let before = digest()?;
    if sh(
        "\"$1\" recluster --cluster \"$2\" --yes -q \"$3\" 2>&1",
        &[&bin, &to, &img],
    )
    .is_ok()
    {
        return Err(format!("the dry run refused ({why}), the run did not"));
    }
    if digest()? != before {
        return Err(format!("{}: changed by a refused run", img.display()));
    }
    let (off, mkfs, back) = peers()?;
    checked().map_err(|e| format!("peer result: {e}"))?;
    let why = why
        .rsplit("mkfs-alloc: error: ")
        .next()
        .unwrap_or(&why)
        .trim();
    Ok(Figures {
        files: 0,
        tree_bytes: 0,
        used_pct: 0.0,
        dirs: 0,
        recluster: 0.0,
        written: 0,
        planned_written: 0,
        planned_read: 0,
        rss_kib: 0,
        off,
        mkfs,
        back,
        floor: 0.0,
        floor_rw: 0.0,
        stages: None,
        floor_staged: None,
        refused: Some(why.to_string()),
    })
}
