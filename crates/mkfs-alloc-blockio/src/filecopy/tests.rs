//! Whatever way the host takes (these run on any file system), the image
//! receives the source's bytes; shrunken sources and ranges beyond the
//! image are errors. The clone itself is tested on a loop-mounted XFS in
//! `tests/clone.rs` (tool tier).

use super::*;
use crate::BlockIo;
use mkfs_alloc_testsupport::{test_data, TempDir};

const MIB: u64 = 1 << 20;

/// A source of `len` bytes: pseudo-random data with a 256 KiB zero run.
fn source(dir: &TempDir, name: &str, len: usize) -> (File, Vec<u8>) {
    let mut data = test_data(len, len as u64);
    if len > 600 << 10 {
        data[300 << 10..556 << 10].fill(0);
    }
    let path = dir.join(name);
    std::fs::write(&path, &data).unwrap();
    (File::open(&path).unwrap(), data)
}

fn image_bytes(img: &mut ImageFile) -> Vec<u8> {
    let mut buf = vec![0; img.size_bytes() as usize];
    img.read_blocks(0, &mut buf).unwrap();
    buf
}

#[test]
fn every_mode_places_the_same_bytes() {
    let dir = TempDir::new("filecopy");
    let (src, data) = source(&dir, "src", (MIB + 3000) as usize);
    for (i, mode) in [CopyMode::Auto, CopyMode::Copy].into_iter().enumerate() {
        for (j, offset) in [MIB, MIB + 512].into_iter().enumerate() {
            for zeroed in [false, true] {
                let path = dir.join(&format!("img-{i}-{j}-{zeroed}"));
                let mut img = ImageFile::create(&path, 4 * MIB, 512).unwrap();
                let mut c = img.copier(mode).unwrap();
                c.copy(&src, 0, offset, data.len() as u64, zeroed).unwrap();
                let n = c.counts();
                let placed = n.cloned + n.copied_in_kernel + n.written;
                if zeroed {
                    assert!(placed <= data.len() as u64, "{mode:?}: {n:?}");
                } else {
                    assert_eq!(placed, data.len() as u64, "{mode:?}: {n:?}");
                }
                if mode == CopyMode::Copy {
                    assert_eq!((n.cloned, n.copied_in_kernel), (0, 0));
                }
                let bytes = image_bytes(&mut img);
                let at = offset as usize;
                assert_eq!(bytes[at..at + data.len()], data[..], "{mode:?} at {offset}");
                assert!(bytes[..at]
                    .iter()
                    .chain(&bytes[at + data.len()..])
                    .all(|&b| b == 0));
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
}

#[test]
fn a_part_of_the_source_into_the_image() {
    let dir = TempDir::new("filecopy-part");
    let (src, data) = source(&dir, "src", (2 * MIB) as usize);
    let mut img = ImageFile::create(dir.join("img"), 4 * MIB, 512).unwrap();
    let mut c = img.copier(CopyMode::Auto).unwrap();
    c.copy(&src, 8192, 2 * MIB, MIB + 100, false).unwrap();
    let bytes = image_bytes(&mut img);
    let at = 2 * MIB as usize;
    assert_eq!(
        bytes[at..at + MIB as usize + 100],
        data[8192..8192 + MIB as usize + 100]
    );
}

#[test]
fn a_short_source_and_a_range_beyond_the_image_fail() {
    let dir = TempDir::new("filecopy-short");
    let (src, _) = source(&dir, "src", 10_000);
    let mut img = ImageFile::create(dir.join("img"), MIB, 512).unwrap();
    for mode in [CopyMode::Auto, CopyMode::Copy] {
        let mut c = img.copier(mode).unwrap();
        let e = c.copy(&src, 0, 0, 20_000, false).unwrap_err();
        assert!(
            matches!(e, CopyError::SourceEnded { .. }),
            "{mode:?}: {e:?}"
        );
        let e = c.copy(&src, 0, MIB - 4096, 10_000, false).unwrap_err();
        assert!(matches!(e, CopyError::Target(_)), "{mode:?}: {e:?}");
    }
    // Nothing reached the image's last MiB - 4096.. from the refused copy.
    let bytes = image_bytes(&mut img);
    assert!(bytes[(MIB - 4096) as usize..].iter().all(|&b| b == 0));
}

#[test]
fn alignment_is_judged_against_the_host_block() {
    let dir = TempDir::new("filecopy-align");
    let img = ImageFile::create(dir.join("img"), MIB, 512).unwrap();
    let c = img.copier(CopyMode::Reflink).unwrap();
    let hb = c.host_block_size();
    assert!(hb.is_power_of_two());
    assert!(c.check_alignment(MIB, hb).is_ok());
    assert!(c.check_alignment(MIB, 4 * hb).is_ok());
    let e = c.check_alignment(MIB + 512, hb).unwrap_err();
    assert!(e.to_string().contains("data region starts at byte"), "{e}");
    if hb >= 1024 {
        let e = c.check_alignment(MIB, hb / 2).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("clusters of {} bytes", hb / 2)),
            "{e}"
        );
    }
}
