//! `FileCopier` on real host file systems, loop-mounted (tool tier, root):
//! on XFS made with `reflink=1` the clone really happens (`filefrag -v`
//! marks the image's extents `shared`, the file system's free space does
//! not shrink by the data) and the image holds the same bytes as one
//! written by hand; on ext4 a trial clone is refused with the reason and
//! `auto` copies in the kernel; across file systems and at unaligned
//! offsets nothing is cloned and the bytes are still right.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use mkfs_alloc_blockio::{BlockIo, CloneRefusal, CopyMode, ImageFile};
use mkfs_alloc_testsupport::{test_data, tool_ok, LoopFs, TempDir};
use std::fs::File;
use std::path::Path;

const MIB: u64 = 1 << 20;
/// 16 MiB and a 1000-byte tail: the tail cannot be cloned.
const SRC_LEN: u64 = 16 * MIB + 1000;

fn source(path: &Path) -> (File, Vec<u8>) {
    let data = test_data(SRC_LEN as usize, 77);
    std::fs::write(path, &data).unwrap();
    File::open(path).unwrap().sync_all().unwrap();
    (File::open(path).unwrap(), data)
}

fn image_bytes(path: &Path) -> Vec<u8> {
    let mut img = ImageFile::open(path, 512).unwrap();
    let mut buf = vec![0; img.size_bytes() as usize];
    img.read_blocks(0, &mut buf).unwrap();
    buf
}

/// Free bytes of the file system holding `p`, after a sync.
fn free_bytes(p: &Path) -> u64 {
    rustix::fs::sync();
    let st = rustix::fs::statvfs(p).unwrap();
    st.f_bfree * st.f_frsize
}

/// The image the same copy gives when written by hand, on any file system.
fn copied_by_hand(dir: &TempDir, src: &File, offset: u64) -> Vec<u8> {
    let path = dir.join("by-hand.img");
    let img = ImageFile::create(&path, 64 * MIB, 512).unwrap();
    let mut c = img.copier(CopyMode::Copy).unwrap();
    c.copy(src, 0, offset, SRC_LEN, true).unwrap();
    assert_eq!(c.counts().written, SRC_LEN);
    drop(img);
    let bytes = image_bytes(&path);
    std::fs::remove_file(&path).unwrap();
    bytes
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn xfs_with_reflink_shares_the_extents() {
    let tmp = TempDir::new("clone-xfs");
    let xfs = LoopFs::xfs_reflink(&tmp, "xfs", 512 * MIB);
    let (src, data) = source(&xfs.join("src"));
    let path = xfs.join("image.img");
    let mut img = ImageFile::create(&path, 64 * MIB, 512).unwrap();
    for mode in [CopyMode::Auto, CopyMode::Reflink] {
        let mut c = img.copier(mode).unwrap();
        c.probe(&src, "src").unwrap();
        assert!(c.check_alignment(MIB, 4096).is_ok());
    }
    let before = free_bytes(xfs.path());
    let mut c = img.copier(CopyMode::Reflink).unwrap();
    c.copy(&src, 0, MIB, SRC_LEN, true).unwrap();
    let n = c.counts();
    assert_eq!(
        (n.cloned, n.copied_in_kernel, n.written),
        (16 * MIB, 0, 1000),
        "{n:?}"
    );
    img.flush().unwrap();
    drop(img);
    let after = free_bytes(xfs.path());
    eprintln!(
        "xfs: {n:?}, free space used: {} bytes",
        before.saturating_sub(after)
    );
    assert!(
        before.saturating_sub(after) < MIB,
        "the clone used {} bytes of the file system",
        before - after
    );
    let frag = tool_ok("filefrag", &["-v", &path.to_string_lossy()]);
    assert!(frag.contains("shared"), "no shared extent:\n{frag}");
    let bytes = image_bytes(&path);
    assert_eq!(bytes[MIB as usize..(MIB + SRC_LEN) as usize], data[..]);
    assert_eq!(bytes, copied_by_hand(&tmp, &src, MIB));
    // `auto` clones too; at an offset off the host blocks it copies instead.
    for (offset, cloned) in [(2 * MIB, 16 * MIB), (2 * MIB + 512, 0)] {
        let path = xfs.join("auto.img");
        let img = ImageFile::create(&path, 64 * MIB, 512).unwrap();
        let mut c = img.copier(CopyMode::Auto).unwrap();
        c.copy(&src, 0, offset, SRC_LEN, true).unwrap();
        assert_eq!(c.counts().cloned, cloned, "{:?}", c.counts());
        let mut r = img.copier(CopyMode::Reflink).unwrap();
        if cloned == 0 {
            assert!(r.copy(&src, 0, offset, SRC_LEN, true).is_err());
        }
        drop(img);
        assert_eq!(image_bytes(&path), copied_by_hand(&tmp, &src, offset));
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn ext4_refuses_a_clone_and_auto_copies_in_the_kernel() {
    let tmp = TempDir::new("clone-ext4");
    let ext4 = LoopFs::ext4(&tmp, "ext4", 128 * MIB);
    let (src, _) = source(&ext4.join("src"));
    let path = ext4.join("image.img");
    let img = ImageFile::create(&path, 64 * MIB, 512).unwrap();
    let mut r = img.copier(CopyMode::Reflink).unwrap();
    let e = r.probe(&src, "src").unwrap_err();
    assert!(matches!(e, CloneRefusal::Refused { .. }), "{e:?}");
    assert!(e.to_string().contains("does not share extents"), "{e}");
    assert!(r.copy(&src, 0, MIB, SRC_LEN, true).is_err());
    let mut c = img.copier(CopyMode::Auto).unwrap();
    c.copy(&src, 0, MIB, SRC_LEN, false).unwrap();
    let n = c.counts();
    assert_eq!(
        (n.cloned, n.copied_in_kernel, n.written),
        (0, SRC_LEN, 0),
        "{n:?}"
    );
    drop(img);
    assert_eq!(image_bytes(&path), copied_by_hand(&tmp, &src, MIB));
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_source_on_another_file_system_is_not_cloned() {
    let tmp = TempDir::new("clone-xdev");
    let xfs = LoopFs::xfs_reflink(&tmp, "xfs", 512 * MIB);
    let ext4 = LoopFs::ext4(&tmp, "ext4", 128 * MIB);
    let (src, _) = source(&ext4.join("src"));
    let path = xfs.join("image.img");
    let img = ImageFile::create(&path, 64 * MIB, 512).unwrap();
    let mut r = img.copier(CopyMode::Reflink).unwrap();
    let e = r.probe(&src, "src").unwrap_err();
    assert!(e.to_string().contains("another file system"), "{e}");
    let mut c = img.copier(CopyMode::Auto).unwrap();
    c.copy(&src, 0, MIB, SRC_LEN, true).unwrap();
    c.copy(&src, 0, 32 * MIB, SRC_LEN, true).unwrap();
    let n = c.counts();
    eprintln!("another file system: {n:?}");
    assert_eq!(n.cloned, 0, "{n:?}");
    assert_eq!(n.copied_in_kernel + n.written, 2 * SRC_LEN, "{n:?}");
    drop(img);
    let bytes = image_bytes(&path);
    let by_hand = copied_by_hand(&tmp, &src, MIB);
    assert_eq!(bytes[..32 * MIB as usize], by_hand[..32 * MIB as usize]);
    assert_eq!(
        bytes[32 * MIB as usize..],
        by_hand[MIB as usize..(33 * MIB) as usize]
    );
}
