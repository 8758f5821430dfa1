//! A populated peer's image filled through exfat-fuse (a driver that is
//! neither ours nor the kernel's): the source tree copied in, and two files
//! written in alternating pieces so that both get fragmented chains (the
//! tree a re-cluster has to carry over, `.reclustered()` cases); a FAT
//! peer's image filled through mtools, around holes so that a file's chain
//! is split too.

use super::*;
use mkfs_alloc_testsupport::{FuseMount, LoopDevice};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The fragmented files (path below the tree, size): `frag/` is written
/// interleaved, the rest of the tree file by file.
const FRAGMENTED: [(&str, usize); 2] = [
    ("frag/interleaved-a.bin", 3 << 20),
    ("frag/interleaved-b.bin", (2 << 20) + 5),
];

/// The filler a fill with a `past` size writes first and deletes last.
const FILLER: &str = "FILLER.BIN";

/// The pieces the fragmented files are written in (twice 128 KiB, the
/// peer's cluster size in these cases).
const PIECE: usize = 256 << 10;

/// Adds the fragmented files to the source tree `src` (so that its listing
/// covers them), then mounts `image` through exfat-fuse on a loop device
/// and copies the tree in; `info --files` must then count both files as
/// fragmented. With `past` > 0 a filler of that many bytes is allocated
/// first (a truncate through exfat-fuse) and deleted last, so that the
/// tree lies past it. The guards of the test-support crate panic with the
/// tool or the driver's output; that becomes the case's error.
pub(super) fn fill_through_fuse(
    name: &str,
    bin: &Path,
    image: &Path,
    src: &Path,
    work: &Path,
    past: u64,
) -> Result<(), String> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut data = Vec::new();
    for (rel, size) in FRAGMENTED {
        let bytes = super::image::xorshift_bytes(&mut state, size);
        let path = src.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        data.push((rel, bytes));
    }
    let mnt = work.join(format!("{name}.mnt"));
    std::fs::create_dir_all(&mnt).map_err(|e| format!("{}: {e}", mnt.display()))?;
    let filled = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let lo = LoopDevice::attach(image);
        let m = FuseMount::exfat(lo.path(), &mnt);
        let filler = mnt.join(FILLER);
        if past > 0 {
            File::create(&filler)
                .and_then(|f| f.set_len(past).and_then(|()| f.sync_all()))
                .map_err(|e| format!("{}: {e}", filler.display()))?;
        }
        copy_tree(src, &mnt, Path::new("frag"))?;
        write_interleaved(&mnt, &data)?;
        if past > 0 {
            std::fs::remove_file(&filler).map_err(|e| format!("{}: {e}", filler.display()))?;
        }
        m.unmount();
        Ok(())
    }));
    match filled {
        Ok(r) => r.map_err(|e| format!("{name}: filling through exfat-fuse: {e}"))?,
        Err(_) => {
            return Err(format!(
                "{name}: filling through exfat-fuse failed (the panic above says why)"
            ))
        }
    }
    // The case's premise: exfat-fuse gave both files split chains.
    let vol = read_files(name, bin, image)?;
    let fragmented = vol
        .get("files")
        .map_or(Ok(0), |f| json_u64(f, "fragmented"))?;
    if fragmented < FRAGMENTED.len() as u64 {
        return Err(format!(
            "{name}: info --files says {fragmented} fragmented files after the fill through exfat-fuse, not {}",
            FRAGMENTED.len()
        ));
    }
    Ok(())
}

/// The one volume `info --files --json` finds on `image`.
fn read_files(name: &str, bin: &Path, image: &Path) -> Result<Value, String> {
    let out = Command::new(bin)
        .args(["info", "--files", "--json"])
        .arg(image)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let info: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{name}: info --files --json: {e}"))?;
    info.get("volumes")
        .and_then(|v| v.get(0))
        .cloned()
        .ok_or_else(|| format!("{name}: info --files --json has no volume"))
}

/// Copies the tree `from` into `to`, directories (empty ones too) and
/// files, leaving out `skip` (relative to `from`).
fn copy_tree(from: &Path, to: &Path, skip: &Path) -> Result<(), String> {
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let dir = from.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let rel = rel.join(entry.file_name());
            if rel == skip {
                continue;
            }
            let (src, dst) = (from.join(&rel), to.join(&rel));
            let is_dir = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", src.display()))?
                .is_dir();
            if is_dir {
                std::fs::create_dir(&dst).map_err(|e| format!("{}: {e}", dst.display()))?;
                todo.push(rel);
            } else {
                std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", dst.display()))?;
            }
        }
    }
    Ok(())
}

/// Writes the files in alternating pieces of [`PIECE`] bytes, each synced,
/// so that the driver allocates their clusters in turn.
fn write_interleaved(mnt: &Path, files: &[(&str, Vec<u8>)]) -> Result<(), String> {
    let mut open = Vec::new();
    for (rel, _) in files {
        let path = mnt.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        open.push((
            File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?,
            path,
        ));
    }
    let longest = files.iter().map(|(_, d)| d.len()).max().unwrap_or(0);
    for at in (0..longest).step_by(PIECE) {
        for ((f, path), (_, data)) in open.iter_mut().zip(files) {
            if let Some(piece) = data.get(at..data.len().min(at + PIECE)) {
                f.write_all(piece)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Files of the pad written before the tree and deleted around it (two
/// 32 KiB clusters each): every second one is gone before the tree goes
/// in, so that its files take the holes.
const PADS: usize = 64;

/// Copies the source tree `src` into the FAT `image` with mtools (`mcopy
/// -s`): first a pad directory whose every second file is then deleted
/// (`mdel`), the FSInfo next-free hint set to "unknown" so that mtools
/// allocates from the volume's start (into the holes), the tree, then the
/// rest of the pad (`mdeltree`). `info --files` must then count a
/// fragmented file. mtools writes no name outside Unicode's basic plane
/// (it drops the emoji), so such names leave the source tree first: the
/// tree's listing is what the volume must hold. With `past` > 0 the
/// tree's directories are made first (`mmd`), then a filler of `past`
/// bytes is copied in before the pad (`mcopy -s` then fills the existing
/// directories), and the filler is deleted last: the files lie past the
/// filler, every directory's first cluster before it.
pub(crate) fn fill_mtools(
    name: &str,
    bin: &Path,
    image: &Path,
    src: &Path,
    work: &Path,
    past: u64,
) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{name}: {e}");
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(src).map_err(err)? {
        let path = entry.map_err(err)?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.chars().any(|c| u32::from(c) > 0xFFFF))
        {
            std::fs::remove_file(&path).map_err(err)?;
        } else {
            entries.push(path);
        }
    }
    let pad = work.join(format!("{name}.pad"));
    let _ = std::fs::remove_dir_all(&pad);
    std::fs::create_dir_all(&pad).map_err(err)?;
    if past > 0 {
        let made: Vec<std::ffi::OsString> = directories(src)
            .map_err(err)?
            .iter()
            .map(|d| format!("::/{}", d.display()).into())
            .collect();
        mtools(name, "mmd", image, &made, &[])?;
        let filler = pad.with_extension("filler");
        File::create(&filler)
            .and_then(|f| f.set_len(past))
            .map_err(err)?;
        let to = format!("::/{FILLER}").into();
        mtools(name, "mcopy", image, &[filler.into_os_string(), to], &[])?;
    }
    let mut state = 0x1234_5678_9ABC_DEF1u64;
    for i in 0..PADS {
        let bytes = super::image::xorshift_bytes(&mut state, 64 << 10);
        std::fs::write(pad.join(format!("p{i:02}")), bytes).map_err(err)?;
    }
    let pad_arg = pad.as_os_str().to_owned();
    mtools(name, "mcopy", image, &[pad_arg, "::/pad".into()], &["-s"])?;
    let odd: Vec<std::ffi::OsString> = (1..PADS)
        .step_by(2)
        .map(|i| format!("::/pad/p{i:02}").into())
        .collect();
    mtools(name, "mdel", image, &odd, &[])?;
    forget_next_free(image).map_err(err)?;
    // Into the directories made before the filler, where they exist.
    let mut args: Vec<std::ffi::OsString> = entries.into_iter().map(Into::into).collect();
    args.push("::/".into());
    mtools(name, "mcopy", image, &args, &["-s"])?;
    mtools(name, "mdeltree", image, &["::/pad".into()], &[])?;
    if past > 0 {
        mtools(name, "mdel", image, &[format!("::/{FILLER}").into()], &[])?;
    }
    let vol = read_files(name, bin, image)?;
    let fragmented = vol
        .get("files")
        .map_or(Ok(0), |f| json_u64(f, "fragmented"))?;
    if fragmented == 0 {
        return Err(format!(
            "{name}: info --files says no file is fragmented after the fill through mtools"
        ));
    }
    Ok(())
}

/// The directories below `root` (relative), each after its parent.
fn directories(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let mut subs = Vec::new();
        for entry in std::fs::read_dir(root.join(&rel))? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                subs.push(rel.join(entry.file_name()));
            }
        }
        dirs.extend(subs.iter().cloned());
        todo.extend(subs);
    }
    Ok(dirs)
}

/// `TOOL [FLAGS] -i IMAGE ARGS...` of mtools, its checks of the medium off.
fn mtools(
    name: &str,
    tool: &str,
    image: &Path,
    args: &[std::ffi::OsString],
    flags: &[&str],
) -> Result<(), String> {
    let out = Command::new(tool)
        .args(flags)
        .arg("-i")
        .arg(image)
        .args(args)
        .env("MTOOLS_SKIP_CHECK", "1")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{name}: {tool} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Sets the FSInfo next-free hint of the FAT32 volume at the start of
/// `image` to 0xFFFFFFFF ("unknown", Microsoft's FAT specification,
/// FSI_Nxt_Free): the next allocation searches from cluster 2.
fn forget_next_free(image: &Path) -> std::io::Result<()> {
    let mut f = File::options().read(true).write(true).open(image)?;
    let mut bpb = [0u8; 64];
    f.read_exact(&mut bpb)?;
    let sector = u64::from(u16::from_le_bytes([bpb[11], bpb[12]]));
    let fsinfo = u64::from(u16::from_le_bytes([bpb[48], bpb[49]]));
    f.seek(SeekFrom::Start(fsinfo * sector + 492))?;
    f.write_all(&[0xFF; 4])
}
