//! exFAT interoperability matrix: images made by `mkfs-alloc` are checked by
//! exfatprogs (`fsck.exfat -n`, `dump.exfat`) and written through exfat-fuse
//! on a loop device with the image's sector size, then checked again.
//!
//! Clusters 512 B, 4K, 32K, 128K, 1M, 32M; sectors 512 and 4096; each at
//! the smallest size the planner accepts and at a medium size, plus a few
//! 2 TiB sparse images.

use mkfs_alloc_layout::FsType;
use mkfs_alloc_tests::checks::{
    check_exfat_boot_region, dump_exfat_cluster_size, fsck_exfat_clean,
};
use mkfs_alloc_tests::{
    format_image, plan_for, smallest_valid, test_data, ExfatRootInfo, FormatArgs, FuseMount,
    LoopDevice, TempDir, GIB, KIB, MIB, TIB,
};
use std::path::Path;

/// A volume size of the matrix.
#[derive(Debug, Clone, Copy)]
enum Size {
    /// The smallest size the planner accepts for this cluster and sector size.
    Smallest,
    /// A fixed size in bytes.
    Bytes(u64),
}

/// A medium size that is not a round number (tests the unused tail).
const MEDIUM: u64 = 3 * GIB + 7 * MIB + 12 * KIB;

fn exfat_case(cluster: u64, sector: u32, size: Size) {
    let size = match size {
        Size::Smallest => smallest_valid(FsType::Exfat, cluster, sector),
        Size::Bytes(b) => b,
    };
    let tmp = TempDir::new(&format!("exfat-{cluster}-{sector}"));
    let img = tmp.join("exfat.img");
    let json = format_image(&img, &FormatArgs::new("exfat", cluster, sector, size));
    let planned = plan_for(FsType::Exfat, cluster, sector, size).expect("the planner accepts it");
    assert_eq!(json.u64("cluster_count"), u64::from(planned.cluster_count));

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

macro_rules! cases {
    ($($name:ident: $cluster:expr, $sector:expr, $size:expr;)*) => {
        $(
            #[test]
            fn $name() {
                exfat_case($cluster, $sector, $size);
            }
        )*
    };
}

cases! {
    c512_s512_smallest: 512, 512, Size::Smallest;
    c512_s512_medium: 512, 512, Size::Bytes(MEDIUM);
    c4k_s512_smallest: 4 * KIB, 512, Size::Smallest;
    c4k_s512_medium: 4 * KIB, 512, Size::Bytes(MEDIUM);
    c4k_s4096_smallest: 4 * KIB, 4096, Size::Smallest;
    c4k_s4096_medium: 4 * KIB, 4096, Size::Bytes(MEDIUM);
    c32k_s512_smallest: 32 * KIB, 512, Size::Smallest;
    c32k_s512_medium: 32 * KIB, 512, Size::Bytes(MEDIUM);
    c32k_s4096_smallest: 32 * KIB, 4096, Size::Smallest;
    c32k_s4096_medium: 32 * KIB, 4096, Size::Bytes(MEDIUM);
    c128k_s512_smallest: 128 * KIB, 512, Size::Smallest;
    c128k_s512_medium: 128 * KIB, 512, Size::Bytes(MEDIUM);
    c128k_s4096_smallest: 128 * KIB, 4096, Size::Smallest;
    c128k_s4096_medium: 128 * KIB, 4096, Size::Bytes(MEDIUM);
    c1m_s512_smallest: MIB, 512, Size::Smallest;
    c1m_s512_medium: MIB, 512, Size::Bytes(MEDIUM);
    c1m_s4096_smallest: MIB, 4096, Size::Smallest;
    c1m_s4096_medium: MIB, 4096, Size::Bytes(MEDIUM);
    c32m_s512_smallest: 32 * MIB, 512, Size::Smallest;
    c32m_s512_medium: 32 * MIB, 512, Size::Bytes(MEDIUM);
    c32m_s4096_smallest: 32 * MIB, 4096, Size::Smallest;
    c32m_s4096_medium: 32 * MIB, 4096, Size::Bytes(MEDIUM);
    // 2 TiB sparse: the large-count end of several cluster sizes.
    c4k_s4096_2tib: 4 * KIB, 4096, Size::Bytes(2 * TIB);
    c32k_s512_2tib: 32 * KIB, 512, Size::Bytes(2 * TIB);
    c128k_s512_2tib: 128 * KIB, 512, Size::Bytes(2 * TIB);
    c1m_s4096_2tib: MIB, 4096, Size::Bytes(2 * TIB);
    c32m_s512_2tib: 32 * MIB, 512, Size::Bytes(2 * TIB);
}

/// 512-byte clusters at 2 TiB would need more than 2^32 clusters: the
/// largest 512 B volume is just below; check the planner's edge there.
#[test]
fn c512_s512_largest() {
    let max_clusters = 0xFFFF_FFF5u64;
    // Heap offset for this size is a few GiB of FAT: stay clearly inside.
    let size = (max_clusters * 512) / MIB * MIB - 64 * GIB;
    exfat_case(512, 512, Size::Bytes(size));
}
