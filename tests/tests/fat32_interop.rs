//! FAT32 interoperability matrix: images made by `mkfs-alloc` are checked by
//! dosfstools (`fsck.fat -n`, `-v`), written and read by mtools, listed and
//! extracted by 7-Zip, read through fusefat on a loop device, and written
//! and read by the `fatfs` crate; `fsck.fat -n` must stay clean throughout.
//!
//! Clusters 512 B, 4K, 16K, 32K, 64K; sectors 512 and 4096; each at the
//! smallest size the planner accepts and at a medium size, plus a few
//! near-2-TiB sparse images (TotSec32 caps 512-byte-sector volumes at
//! 2 TiB - 512 B).

use mkfs_alloc_layout::FsKind;
use mkfs_alloc_tests::checks::{
    check_fat32_boot, fsck_fat_clean, fsck_fat_geometry, mtools, mtools_copy_in,
};
use mkfs_alloc_tests::fatfs_io::fatfs_round_trip;
use mkfs_alloc_tests::{
    format_planned, matrix_cases, require_tool, run, smallest_and_medium, FormatArgs, FuseMount,
    LoopDevice, Size, TempDir, GIB, KIB, MIB, TIB,
};

/// A medium size that is not a round number (tests the unused tail), valid
/// for every cluster size of the matrix.
const MEDIUM: u64 = 8 * GIB + 7 * MIB + 12 * KIB;

/// The label every image of the matrix gets (fsck.fat checks that the boot
/// sector and the root entry agree).
const LABEL: &str = "MKFSALLOC";

fn fat32_case(cluster: u64, sector: u32, size: Size) {
    let size = size.bytes(FsKind::Fat32, cluster, sector);
    let tmp = TempDir::new(&format!("fat32-{cluster}-{sector}"));
    let img = tmp.join("fat32.img");
    let args = FormatArgs {
        label: Some(LABEL),
        ..FormatArgs::new("fat32", cluster, sector, size)
    };
    let json = format_planned(&img, FsKind::Fat32, &args);

    let boot = check_fat32_boot(&img);
    assert_eq!(boot.cluster_size(), cluster);
    assert_eq!(u32::from(boot.bytes_per_sector), sector);
    assert_eq!(boot.cluster_count(), json.u64("cluster_count"));
    assert_eq!(&boot.volume_label, b"MKFSALLOC  ");
    assert_eq!(boot.volume_id, args.serial);

    fsck_fat_clean(&img);
    assert_eq!(
        fsck_fat_geometry(&img),
        (cluster, u64::from(sector)),
        "fsck.fat -v geometry"
    );

    // mtools: copy in, list, read back two ways.
    let (data, _) = mtools_copy_in(&img, tmp.path(), cluster, cluster ^ size, LABEL);
    let output = tmp.join("out.bin");
    mtools("mcopy", &img, &["::/DATA.BIN", &output.to_string_lossy()]).assert_success();
    assert!(
        std::fs::read(&output).expect("read mcopy output") == data,
        "mcopy round trip differs"
    );
    fsck_fat_clean(&img);

    // 7-Zip lists the image and extracts the file.
    let seven = require_tool("7z");
    let img_s = img.to_string_lossy().into_owned();
    let list = run(&seven, &["l", img_s.as_str()]);
    list.assert_success();
    assert!(
        list.stdout.contains("DATA.BIN"),
        "7z l does not list DATA.BIN:\n{list}"
    );
    let extracted = run(&seven, &["x", "-so", img_s.as_str(), "DATA.BIN"]);
    extracted.assert_success();
    assert!(extracted.stdout_bytes == data, "7z extracted other bytes");

    // fusefat, read-only, on a loop device with the image's sector size.
    // Not above 32 KiB clusters: fusefat 0.1a aborts (ECONNABORTED) reading
    // any file of a 64 KiB-cluster volume, mkfs.fat's too (checked with
    // `truncate -s 5G r.img && mkfs.fat -F 32 -s 128 -S 512 r.img`, mcopy a
    // file, read it through `fusefat -o ro`): fatgen103's "clusters over
    // 32K do not work properly with some software".
    if cluster <= 32 * KIB {
        let lo = LoopDevice::attach_sector(&img, sector);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::fusefat_ro(lo.path(), &mnt);
        let read = std::fs::read(mnt.join("DATA.BIN")).expect("read DATA.BIN through fusefat");
        assert!(
            read == data,
            "fusefat read other bytes ({} vs {} bytes)",
            read.len(),
            data.len()
        );
        m.unmount();
    }

    // The fatfs crate writes a file, reads it back; mtools and fsck agree.
    fatfs_round_trip(&img, cluster, &data);
}

/// The largest FAT32 volume with 512-byte sectors, rounded down to 1 MiB.
const NEAR_2TIB: u64 = 2 * TIB - MIB;

smallest_and_medium! { fat32_case, MEDIUM;
    c512_s512: 512, 512;
    c4k_s512: 4 * KIB, 512;
    c4k_s4096: 4 * KIB, 4096;
    c16k_s512: 16 * KIB, 512;
    c16k_s4096: 16 * KIB, 4096;
    c32k_s512: 32 * KIB, 512;
    c32k_s4096: 32 * KIB, 4096;
    c64k_s512: 64 * KIB, 512;
    c64k_s4096: 64 * KIB, 4096;
}

matrix_cases! { fat32_case;
    // Near the 2 TiB ceiling of 512-byte sectors, and 2 TiB with 4 KiB ones.
    c32k_s512_near_2tib: 32 * KIB, 512, Size::Bytes(NEAR_2TIB);
    c64k_s512_near_2tib: 64 * KIB, 512, Size::Bytes(NEAR_2TIB);
    c64k_s4096_2tib: 64 * KIB, 4096, Size::Bytes(2 * TIB);
}
