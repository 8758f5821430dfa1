//! `--size` on a block device formats only its first SIZE bytes (the real
//! capacity of a counterfeit stick). An old GPT's backup header at the end
//! of the device is the one exception: left there, `sgdisk -v` reports
//! "Main header: ERROR, Backup header: OK" and offers to restore the old
//! table over the new volume. It is zeroed (and said so in the notes);
//! nothing else beyond SIZE changes.
//!
//! Tool tier (root, loop devices, sgdisk, wipefs, fsck.fat). CI time: about 1 s.

use mkfs_alloc_tests::blk::{sgdisk_verify, wipefs_signatures};
use mkfs_alloc_tests::checks::fsck_fat_clean;
use mkfs_alloc_tests::{
    mkfs_alloc, read_at, require_root, sparse_file, LoopDevice, MkfsJson, TempDir, MIB,
};

/// FNV-1a of a byte slice: enough to see a change.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

const DEVICE: u64 = 256 * MIB;
const WINDOW: u64 = 32 * MIB;

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn size_on_a_device_zeroes_the_old_backup_gpt_beyond_it_and_nothing_else() {
    require_root();
    let tmp = TempDir::new("dev-size-window");
    let img = tmp.join("stick.img");
    sparse_file(&img, DEVICE);
    let lo = LoopDevice::attach(&img);
    let dev = lo.path().to_string_lossy().into_owned();
    mkfs_alloc(&[
        "--yes", "-q", "--table", "gpt", "--fs", "exfat", "-L", "OLD", &dev,
    ])
    .assert_success();
    let last = DEVICE - 512;
    assert_eq!(
        &read_at(&img, last, 8),
        b"EFI PART",
        "old backup GPT header"
    );
    let beyond_before = hash(&read_at(&img, WINDOW, (last - WINDOW) as usize));

    let out = mkfs_alloc(&[
        "--yes", "--json", "--size", "32M", "--table", "none", "--fs", "fat", &dev,
    ]);
    out.assert_success();
    let notes = MkfsJson::parse(&out).value["notes"].to_string();
    assert!(
        notes.contains(&format!("zeroed the old backup GPT header at byte {last}")),
        "no note on the backup GPT: {notes}"
    );
    assert!(notes.contains("the first 32 MiB"), "discard note: {notes}");

    drop(lo);
    assert!(
        read_at(&img, last, 512).iter().all(|&b| b == 0),
        "backup header zeroed"
    );
    assert_eq!(
        hash(&read_at(&img, WINDOW, (last - WINDOW) as usize)),
        beyond_before,
        "bytes between --size and the backup header changed"
    );
    let sigs = wipefs_signatures(&img);
    assert!(
        sigs.iter().all(|(_, kind)| kind != "gpt" && kind != "PMBR"),
        "wipefs still finds a GPT: {sigs:?}"
    );
    let verify = sgdisk_verify(&img);
    assert!(
        !verify.stdout.contains("Backup header: OK"),
        "sgdisk still sees the old backup GPT:\n{verify}"
    );
    let window = tmp.join("window.img");
    std::fs::write(&window, read_at(&img, 0, WINDOW as usize)).expect("copy the window");
    fsck_fat_clean(&window);
}
