//! Pure tier: a given exFAT volume GUID, through `mkfs.exfat -U` (exfatprogs'
//! form: the bytes in text order) and `mkfs-alloc --volume-guid=GUID` (ours:
//! the GUID structure's mixed-endian text, as the summary shows it), read
//! back from the root directory's entry with its set checksum.

use super::{s, Links};
use mkfs_alloc_ondisk::exfat::{GuidEntry, TYPE_GUID};
use mkfs_alloc_tests::{
    file_hash, fill_file, mkfs_alloc, read_at, ExfatBoot, TempDir, MIB, SENTINEL,
};
use std::path::Path;
use zerocopy::FromBytes;

/// The volume GUID entry's bytes, after checking its set checksum.
fn guid_entry(image: &Path) -> [u8; 16] {
    let boot = ExfatBoot::read(image, 0);
    let bps = 1u64 << boot.bytes_per_sector_shift;
    let cluster = bps << boot.sectors_per_cluster_shift;
    let root =
        u64::from(boot.cluster_heap_offset) * bps + u64::from(boot.root_cluster - 2) * cluster;
    let dir = read_at(image, root, 32 * 16);
    let raw = dir
        .chunks_exact(32)
        .find(|e| e[0] == TYPE_GUID)
        .unwrap_or_else(|| panic!("{}: no volume GUID entry", image.display()));
    let e = GuidEntry::read_from_bytes(raw).expect("32 bytes");
    assert_eq!(
        u16::from_le_bytes([raw[2], raw[3]]),
        entry_set_checksum(raw),
        "the entry's set checksum"
    );
    e.volume_guid
}

/// The EntrySetChecksum of exFAT specification §6.3.3, written apart from
/// the on-disk crate's: a 16-bit rotate-add over every byte of the set but
/// bytes 2 and 3 of its first entry (the checksum field itself).
fn entry_set_checksum(set: &[u8]) -> u16 {
    set.iter().enumerate().fold(0u16, |c, (i, &b)| {
        if i == 2 || i == 3 {
            c
        } else {
            c.rotate_right(1).wrapping_add(u16::from(b))
        }
    })
}

#[test]
fn a_given_volume_guid_is_written_as_each_front_end_reads_it() {
    let links = Links::new();
    let tmp = TempDir::new("compat-guid");
    let want_text_order = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE,
        0xFF,
    ];
    for form in [
        "00112233-4455-6677-8899-aabbccddeeff",
        "00112233445566778899AABBCCDDEEFF",
    ] {
        let img = tmp.join("u.img");
        fill_file(&img, 64 * MIB, SENTINEL);
        links
            .run("mkfs.exfat", &["-U", form, &s(&img)])
            .assert_success();
        assert_eq!(guid_entry(&img), want_text_order, "mkfs.exfat -U {form}");
    }

    let img = tmp.join("native.img");
    let text = "00112233-4455-6677-8899-AABBCCDDEEFF";
    let out = mkfs_alloc(&[
        "--fs",
        "exfat",
        "--size",
        "64M",
        "--json",
        &format!("--volume-guid={text}"),
        &s(&img),
    ]);
    out.assert_success();
    assert_eq!(
        guid_entry(&img),
        [
            0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD,
            0xEE, 0xFF
        ],
        "--volume-guid={text}"
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(
        v["volume_guid"], text,
        "the summary shows the GUID as given"
    );

    // `--volume-guid` alone still draws one (and takes no value after a space).
    let img = tmp.join("fresh.img");
    mkfs_alloc(&["--fs", "exfat", "--size", "64M", "--volume-guid", &s(&img)]).assert_success();
    assert_ne!(guid_entry(&img), [0; 16]);
}

#[test]
fn malformed_or_null_guids_are_refused_before_writing() {
    let links = Links::new();
    let tmp = TempDir::new("compat-guid-bad");
    let img = tmp.join("none.img");
    let old = tmp.join("old.img");
    fill_file(&old, 64 * MIB, SENTINEL);
    let before = file_hash(&old);
    for bad in [
        "0x1",
        "00000000-0000-0000-0000-000000000000",
        "00112233-4455-6677-8899-AABBCCDDEEF",
        "g0112233-4455-6677-8899-AABBCCDDEEFF",
    ] {
        let out = links.run("mkfs.exfat", &["-U", bad, &s(&old)]);
        out.assert_code(2);
        assert!(out.stderr.contains("-U"), "mkfs.exfat -U {bad}: {out}");
        assert_eq!(
            file_hash(&old),
            before,
            "mkfs.exfat -U {bad}: the target unchanged"
        );
        let out = mkfs_alloc(&[
            "--fs",
            "exfat",
            "--size",
            "64M",
            &format!("--volume-guid={bad}"),
            &s(&img),
        ]);
        out.assert_code(2);
        assert!(
            out.stderr.contains("--volume-guid") && out.stderr.contains("valid"),
            "--volume-guid={bad}: {out}"
        );
        assert!(!img.exists(), "{bad}: nothing created");
    }
}
