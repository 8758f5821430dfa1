//! Damaged images end with a clear error (in the volume's `error`) or a
//! partial report, never a panic, a hang (10 s timeout) or unbounded memory:
//! truncated, boot checksum broken, FAT chain loop, directory cycle.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::*;
use mkfs_alloc_inspect::exfat::{parse_directory, ExfatItem};
use mkfs_alloc_inspect::Volume;
use mkfs_alloc_layout::units::MIB;
use mkfs_alloc_ondisk::exfat::set_checksum;

fn patch(img: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    f.write_all_at(bytes, offset).unwrap();
}

fn read(img: &Path, offset: u64, len: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(img).unwrap();
    let mut b = vec![0; len];
    f.read_exact_at(&mut b, offset).unwrap();
    b
}

fn only_volume(img: &Path, files: bool) -> Volume {
    let mut r = inspect_file(img, files);
    assert_eq!(r.volumes.len(), 1);
    r.volumes.remove(0)
}

fn error_of(v: &Volume) -> &str {
    v.error
        .as_deref()
        .unwrap_or_else(|| panic!("no error reported: {v:#?}"))
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn truncated_images() {
    let t = TempDir::new("trunc");
    // mkfs.exfat -c 4K IMG (64 MiB), then cut to 16 MiB.
    let e = t.join("e.img");
    sparse(&e, 64 * MIB);
    run("mkfs.exfat", &["-c", "4K", e.to_str().unwrap()]);
    // mkfs.fat -F 32 -s 1 IMG (100 MiB), then cut to 40 MiB.
    let f = t.join("f.img");
    sparse(&f, 100 * MIB);
    run("mkfs.fat", &["-F", "32", "-s", "1", f.to_str().unwrap()]);
    for (img, cut) in [(&e, 16 * MIB), (&f, 40 * MIB)] {
        std::fs::OpenOptions::new()
            .write(true)
            .open(img)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let v = only_volume(img, true);
        let err = error_of(&v);
        assert!(err.contains("truncated"), "{err}");
        // What the boot sector says is still reported.
        assert!(v.cluster_size.is_some() && v.serial.is_some(), "{v:#?}");
    }
    // Cut inside the boot region: an error, not a panic.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&e)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let v = only_volume(&e, true);
    assert!(error_of(&v).contains("truncated"), "{v:#?}");

    // A partitioned image cut in the middle of its partition.
    let g = t.join("g.img");
    sparse(&g, 64 * MIB);
    partition(&g, "gpt", "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", 62 * MIB);
    run(
        "mkfs.fat",
        &[
            "-F",
            "16",
            "--offset",
            "2048",
            "-h",
            "2048",
            g.to_str().unwrap(),
            "63488",
        ],
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&g)
        .unwrap()
        .set_len(20 * MIB)
        .unwrap();
    let r = inspect_file(&g, true);
    let v = &r.volumes[0];
    assert!(
        v.warnings.iter().any(|w| w.contains("beyond the end")),
        "{v:#?}"
    );
    assert!(error_of(v).contains("truncated"), "{v:#?}");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_boot_checksum() {
    let t = TempDir::new("csum");
    let img = t.join("e.img");
    sparse(&img, 32 * MIB);
    // mkfs.exfat -c 4K -L CSUM IMG
    run(
        "mkfs.exfat",
        &["-c", "4K", "-L", "CSUM", img.to_str().unwrap()],
    );
    // Main region broken: the backup is used, with a warning.
    patch(&img, 512 + 17, &[0x5A]);
    let v = only_volume(&img, false);
    assert!(v.error.is_none(), "{v:#?}");
    assert_eq!(v.label.as_deref(), Some("CSUM"));
    assert!(
        v.warnings
            .iter()
            .any(|w| w.contains("checksum") && w.contains("backup")),
        "{:?}",
        v.warnings
    );
    // Both broken: a clear error.
    patch(&img, 12 * 512 + 512 + 17, &[0x5A]);
    let v = only_volume(&img, false);
    let err = error_of(&v);
    assert!(err.contains("boot checksum mismatch"), "{err}");
}

/// An exFAT image filled through exfat-fuse with `/big.bin` (5 clusters)
/// and `/sub/inner.txt`; returns (cluster size, heap offset, FAT offset,
/// root cluster).
fn exfat_with_files(img: &Path, t: &TempDir) -> (u64, u64, u64, u32) {
    sparse(img, 32 * MIB);
    run("mkfs.exfat", &["-c", "4K", img.to_str().unwrap()]);
    let lo = loop_at(img, 0, None);
    let m = mount_exfat(&lo, &t.join("mnt"));
    std::fs::write(m.dir().join("big.bin"), body(5 * 4096, 1)).unwrap();
    std::fs::create_dir(m.dir().join("sub")).unwrap();
    std::fs::write(m.dir().join("sub/inner.txt"), b"hello").unwrap();
    // unmount() waits for exfat-fuse to exit (the old guard did not, and
    // the image was read while the driver still wrote: a flaky failure);
    // the flush makes the loop device's page cache reach the image file.
    m.unmount();
    lo.flush();
    drop(lo);
    let boot = read(img, 0, 512);
    let u32_at = |o: usize| u32::from_le_bytes(boot[o..o + 4].try_into().unwrap());
    let cs = 512u64 << boot[109];
    (
        cs,
        u64::from(u32_at(88)) * 512,
        u64::from(u32_at(80)) * 512,
        u32_at(96),
    )
}

/// Finds the entry set of `name` in the root directory: (byte offset of the
/// set, its bytes, first cluster).
fn find_set(img: &Path, root_off: u64, name: &str) -> (u64, Vec<u8>, u32) {
    let dir = read(img, root_off, 4096);
    let mut off = 0;
    while off < dir.len() {
        if dir[off] == 0x85 {
            let n = 32 * (1 + usize::from(dir[off + 1]));
            let set = dir[off..off + n].to_vec();
            if let Some(ExfatItem::File(f)) = parse_directory(&set).first() {
                if f.name == name {
                    return (root_off + off as u64, set, f.first_cluster);
                }
            }
            off += n;
        } else {
            off += 32;
        }
    }
    panic!("{name} not found");
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn exfat_fat_loop_and_directory_cycle() {
    let t = TempDir::new("exloop");
    let img = t.join("e.img");
    let (cs, heap, fat, root) = exfat_with_files(&img, &t);
    let root_off = heap + u64::from(root - 2) * cs;
    let clean = only_volume(&img, true);
    assert!(clean.error.is_none(), "{clean:#?}");
    assert_eq!(clean.files.as_ref().unwrap().count, 2);

    // FAT loop. exfat-fuse writes big.bin contiguous with NoFatChain: clear
    // the flag (fixing the set checksum) and give it a chain whose second
    // cluster points to itself.
    let (set_off, mut set, first) = find_set(&img, root_off, "big.bin");
    assert!(
        set[33] & 0x02 != 0,
        "exfat-fuse writes contiguous files with NoFatChain"
    );
    set[33] &= !0x02;
    let c = set_checksum(&set);
    set[2..4].copy_from_slice(&c.to_le_bytes());
    let loop_img = t.join("loop.img");
    std::fs::copy(&img, &loop_img).unwrap();
    patch(&loop_img, set_off, &set);
    patch(
        &loop_img,
        fat + 4 * u64::from(first),
        &(first + 1).to_le_bytes(),
    );
    patch(
        &loop_img,
        fat + 4 * u64::from(first + 1),
        &(first + 1).to_le_bytes(),
    );
    let v = only_volume(&loop_img, true);
    let err = error_of(&v);
    assert!(err.contains("/big.bin") && err.contains("loop"), "{err}");
    // The rest of the report is there.
    assert_eq!(v.files.as_ref().unwrap().count, 2);
    // Without --files the FAT of files is not walked: no error.
    assert!(only_volume(&loop_img, false).error.is_none());

    // Directory cycle: /sub's first cluster is the root's.
    let (set_off, mut set, _) = find_set(&img, root_off, "sub");
    set[52..56].copy_from_slice(&root.to_le_bytes());
    let c = set_checksum(&set);
    set[2..4].copy_from_slice(&c.to_le_bytes());
    let cyc = t.join("cycle.img");
    std::fs::copy(&img, &cyc).unwrap();
    patch(&cyc, set_off, &set);
    let v = only_volume(&cyc, true);
    let err = error_of(&v);
    assert!(
        err.contains("/sub") && err.contains("already allocated"),
        "{err}"
    );
    assert!(!v.files.as_ref().unwrap().complete);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn fat_loop_and_directory_cycle() {
    let t = TempDir::new("fatloop");
    let img = t.join("f.img");
    sparse(&img, 100 * MIB);
    // mkfs.fat -F 32 -s 1 IMG; mcopy a 5-cluster file (first cluster 3),
    // mmd ::/SUB.
    run("mkfs.fat", &["-F", "32", "-s", "1", img.to_str().unwrap()]);
    let src = t.join("src");
    std::fs::write(&src, body(5 * 512, 3)).unwrap();
    let imgs = img.to_str().unwrap();
    run("mcopy", &["-i", imgs, src.to_str().unwrap(), "::/BIG.BIN"]);
    run("mmd", &["-i", imgs, "::/SUB"]);
    let clean = only_volume(&img, true);
    assert!(clean.error.is_none(), "{clean:#?}");
    let fat = clean.fat_offset.unwrap();
    let fat_bytes = clean.fat_bytes.unwrap();
    let data = clean.data_offset.unwrap();

    // FAT loop in both FATs: cluster 5 (third of BIG.BIN) points to itself.
    let loop_img = t.join("loop.img");
    std::fs::copy(&img, &loop_img).unwrap();
    for f in [fat, fat + fat_bytes] {
        patch(&loop_img, f + 4 * 5, &5u32.to_le_bytes());
    }
    let v = only_volume(&loop_img, true);
    let err = error_of(&v);
    // A cluster pointing to itself is reached twice: the model's marks find
    // it as a cluster taken again before the chain's loop detection does.
    assert!(
        err.contains("/BIG.BIN") && (err.contains("loop") || err.contains("already allocated")),
        "{err}"
    );

    // Root directory chain loop: cluster 2 points to itself; the root's
    // entries are still read, the loop is reported.
    let rl = t.join("rootloop.img");
    std::fs::copy(&img, &rl).unwrap();
    for f in [fat, fat + fat_bytes] {
        patch(&rl, f + 4 * 2, &2u32.to_le_bytes());
    }
    let v = only_volume(&rl, true);
    assert!(error_of(&v).contains("loop"), "{v:#?}");

    // Directory cycle: /SUB's entry points at the root cluster (2), then
    // at cluster 0 (the root in `..` entries).
    let root = read(&img, data, 512);
    let pos = root
        .chunks(32)
        .position(|e| &e[..11] == b"SUB        ")
        .unwrap() as u64
        * 32;
    for cl in [2u16, 0] {
        let cyc = t.join("cycle.img");
        std::fs::copy(&img, &cyc).unwrap();
        patch(&cyc, data + pos + 26, &cl.to_le_bytes());
        let v = only_volume(&cyc, true);
        let err = error_of(&v);
        assert!(
            err.contains("/SUB")
                && err.contains(if cl == 2 {
                    "already allocated"
                } else {
                    "first cluster 0x0"
                }),
            "{cl}: {err}"
        );
    }
}
