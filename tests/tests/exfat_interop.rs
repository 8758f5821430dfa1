//! exFAT interoperability matrix: images made by `mkfs-alloc` are checked by
//! exfatprogs (`fsck.exfat -n`, `dump.exfat`) and written through exfat-fuse
//! on a loop device with the image's sector size, then checked again.
//!
//! Clusters 512 B, 4K, 32K, 128K, 1M, 32M; sectors 512 and 4096; each at
//! the smallest size the planner accepts and at a medium size, plus a few
//! 2 TiB sparse images.

use mkfs_alloc_layout::FsKind;
use mkfs_alloc_tests::checks::{
    check_exfat_boot_region, dump_exfat_cluster_size, fsck_exfat_clean,
};
use mkfs_alloc_tests::{
    format_planned, largest_valid, matrix_cases, mkfs_alloc, smallest_and_medium, test_data,
    ExfatBoot, ExfatRootInfo, FormatArgs, FuseMount, LoopDevice, Size, TempDir, GIB, KIB, MIB, TIB,
};
use std::path::Path;

/// A medium size that is not a round number (tests the unused tail).
const MEDIUM: u64 = 3 * GIB + 7 * MIB + 12 * KIB;

fn exfat_case(cluster: u64, sector: u32, size: Size) -> ExfatBoot {
    let size = size.bytes(FsKind::Exfat, cluster, sector);
    let tmp = TempDir::new(&format!("exfat-{cluster}-{sector}"));
    let img = tmp.join("exfat.img");
    let args = FormatArgs::new("exfat", cluster, sector, size);
    let json = format_planned(&img, FsKind::Exfat, &args);

    let boot = check_exfat_boot_region(&img);
    assert_eq!(boot.cluster_size(), cluster);
    assert_eq!(boot.bytes_per_sector(), u64::from(sector));
    assert_eq!(
        boot.volume_length * u64::from(sector),
        size / u64::from(sector) * u64::from(sector)
    );
    let root = ExfatRootInfo::read(&img, 0, &boot);
    assert!(
        root.clean_end,
        "entries after the end of the root directory: {root:?}"
    );
    assert!(root.bitmap.is_some() && root.upcase.is_some(), "{root:?}");

    fsck_exfat_clean(&img);
    assert_eq!(
        dump_exfat_cluster_size(&img),
        cluster,
        "dump.exfat cluster size"
    );

    // Write through the FUSE driver, on a loop device of the same sector
    // size: a file over two clusters, a directory and a small file when
    // there is room (the smallest volumes have a single free cluster).
    let free = json.u64("cluster_count") - json.u64("used_clusters");
    let full = free >= 4;
    let data_len = if full {
        cluster.min(MIB) + 4321
    } else {
        (free * cluster).min(MIB) - 100
    };
    let data = test_data(usize::try_from(data_len).expect("fits"), cluster ^ size);
    let small = b"hello exFAT\n".to_vec();
    {
        let lo = LoopDevice::attach_sector(&img, sector);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        write_file(&mnt.join("data.bin"), &data);
        if full {
            std::fs::create_dir(mnt.join("Sub Dir")).expect("mkdir on exfat-fuse");
            write_file(&mnt.join("Sub Dir").join("small.txt"), &small);
        }
        assert!(
            std::fs::read(mnt.join("data.bin")).expect("read back") == data,
            "data.bin read back differs"
        );
        m.unmount();
    }
    fsck_exfat_clean(&img);
    // Mount again: the files are still there.
    {
        let lo = LoopDevice::attach_sector(&img, sector);
        let mnt = tmp.subdir("mnt");
        let m = FuseMount::exfat(lo.path(), &mnt);
        assert!(
            std::fs::read(mnt.join("data.bin")).expect("read after remount") == data,
            "data.bin changed"
        );
        if full {
            assert_eq!(
                std::fs::read(mnt.join("Sub Dir").join("small.txt")).expect("read"),
                small
            );
        }
        m.unmount();
    }
    fsck_exfat_clean(&img);
    boot
}

fn write_file(path: &Path, data: &[u8]) {
    use std::io::Write;
    let mut f =
        std::fs::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    f.write_all(data)
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    f.sync_all()
        .unwrap_or_else(|e| panic!("fsync {}: {e}", path.display()));
}

smallest_and_medium! { exfat_case, MEDIUM;
    c512_s512: 512, 512;
    c4k_s512: 4 * KIB, 512;
    c4k_s4096: 4 * KIB, 4096;
    c32k_s512: 32 * KIB, 512;
    c32k_s4096: 32 * KIB, 4096;
    c128k_s512: 128 * KIB, 512;
    c128k_s4096: 128 * KIB, 4096;
    c1m_s512: MIB, 512;
    c1m_s4096: MIB, 4096;
    c32m_s512: 32 * MIB, 512;
    c32m_s4096: 32 * MIB, 4096;
}

matrix_cases! { exfat_case;
    // 2 TiB sparse: the large-count end of several cluster sizes.
    c4k_s4096_2tib: 4 * KIB, 4096, Size::Bytes(2 * TIB);
    c32k_s512_2tib: 32 * KIB, 512, Size::Bytes(2 * TIB);
    c128k_s512_2tib: 128 * KIB, 512, Size::Bytes(2 * TIB);
    c1m_s4096_2tib: MIB, 4096, Size::Bytes(2 * TIB);
    c32m_s512_2tib: 32 * MIB, 512, Size::Bytes(2 * TIB);
}

/// 512-byte clusters at 2 TiB would need more than 2^32 clusters: the
/// largest volume the planner accepts at 512 B clusters and sectors is the
/// edge. It is formatted and checked like every row; the boot sector
/// (decoded apart from the planner) must hold the spec's largest cluster
/// count, 2^32 - 11 (exFAT spec §3.1.9), and one sector more is refused.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn c512_s512_largest() {
    const MAX_CLUSTERS: u32 = 0xFFFF_FFF5;
    let edge = largest_valid(
        FsKind::Exfat,
        512,
        512,
        2 * TIB - 64 * GIB,
        2 * TIB + 64 * GIB,
    );
    let boot = exfat_case(512, 512, Size::Bytes(edge));
    assert_eq!(boot.cluster_count, MAX_CLUSTERS, "{boot:?}");
    assert!(
        u64::from(boot.cluster_heap_offset) + u64::from(boot.cluster_count) <= boot.volume_length,
        "{boot:?}"
    );

    let tmp = TempDir::new("exfat-past-edge");
    let img = tmp.join("past.img");
    let mut args = FormatArgs::new("exfat", 512, 512, edge + 512).args();
    args.push(img.to_string_lossy().into_owned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = mkfs_alloc(&refs);
    out.assert_code(2);
    assert!(out.stderr.contains("4,294,967,285"), "{out}");
    assert!(!img.exists(), "a refused format created {}", img.display());
}
