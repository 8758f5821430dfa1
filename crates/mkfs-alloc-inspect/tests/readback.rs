//! `info` reads back what mkfs.exfat (exfatprogs 1.2.0), mkfs.fat
//! (dosfstools 4.2) and our own formatter wrote, with and without partition
//! tables; dump.exfat and fsck.fat -v are the oracles for what the tools
//! chose. Needs root (loop devices) and the tools: a missing tool fails.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use mkfs_alloc_blockio::{ImageFile, Slice};
use mkfs_alloc_inspect::{FsKind, TableKind, Volume};
use mkfs_alloc_layout::units::{KIB, MIB};
use mkfs_alloc_layout::{plan, write_volume, ClusterChoice, FormatOptions, FsChoice, Medium};

const BASIC_DATA: &str = "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7";

#[derive(Clone, Copy, Debug)]
enum Table {
    None,
    Mbr,
    Gpt,
}

/// Makes an image of `size` bytes; with a table, one partition from 1 MiB
/// to 1 MiB before the end. Returns (partition offset, partition size).
fn image(img: &std::path::Path, size: u64, table: Table, mbr_type: &str) -> (u64, u64) {
    sparse(img, size);
    let psize = size - 2 * MIB;
    match table {
        Table::None => (0, size),
        Table::Mbr => {
            partition(img, "dos", mbr_type, psize);
            (MIB, psize)
        }
        Table::Gpt => {
            partition(img, "gpt", BASIC_DATA, psize);
            (MIB, psize)
        }
    }
}

fn check_table(r: &mkfs_alloc_inspect::Report, table: Table, start: u64, size: u64) {
    let kind = match table {
        Table::None => TableKind::None,
        Table::Mbr => TableKind::Mbr,
        Table::Gpt => TableKind::Gpt,
    };
    assert_eq!(r.partition_table.kind, kind, "{:?}", r.partition_table);
    assert_eq!(r.volumes.len(), 1, "{r:#?}");
    let v = &r.volumes[0];
    assert_eq!((v.start, v.size), (start, size));
    if let Table::Gpt = table {
        let p = &r.partition_table.partitions[0];
        assert_eq!(p.type_id, BASIC_DATA);
        assert_eq!(p.type_name.as_deref(), Some("Microsoft basic data"));
    }
    assert!(
        r.partition_table.warnings.is_empty(),
        "{:?}",
        r.partition_table.warnings
    );
}

fn check_clean(v: &Volume) {
    assert!(v.error.is_none(), "{:?}", v.error);
    assert!(v.warnings.is_empty(), "{:?}", v.warnings);
    assert!(v.misaligned.is_empty(), "{:?}", v.misaligned);
    assert!(
        v.alignment.fat.unwrap() >= MIB && v.alignment.data.unwrap() >= MIB,
        "{v:#?}"
    );
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mkfs_exfat_matrix() {
    let t = TempDir::new("mkexfat");
    // (image size, cluster, table)
    let cases = [
        (64 * MIB, "4K", Table::None),
        (64 * MIB, "512", Table::None),
        (256 * MIB, "32K", Table::None),
        (300 * MIB, "128K", Table::Mbr),
        (200 * MIB, "64K", Table::Gpt),
        (130 * MIB, "1M", Table::Gpt),
    ];
    for (i, &(size, cluster, table)) in cases.iter().enumerate() {
        let img = t.join(&format!("e{i}.img"));
        let (start, psize) = image(&img, size, table, "7");
        let label = format!("EX{i}");
        // mkfs.exfat -c CLUSTER -L LABEL (IMG | loop device over the partition)
        let dump = if start == 0 {
            run(
                "mkfs.exfat",
                &["-c", cluster, "-L", &label, img.to_str().unwrap()],
            );
            run("dump.exfat", &[img.to_str().unwrap()])
        } else {
            let lo = loop_at(&img, start, Some(psize));
            run("mkfs.exfat", &["-c", cluster, "-L", &label, lo.path_str()]);
            run("dump.exfat", &[lo.path_str()])
        };
        let r = inspect_file(&img, false);
        check_table(&r, table, start, psize);
        let v = &r.volumes[0];
        let what = format!("case {i} {cluster} {table:?}");
        assert_eq!(v.ours(), Some(FsKind::Exfat), "{what}");
        check_clean(v);
        let cs = field(&dump, "Cluster size");
        assert_eq!(v.cluster_size, Some(cs), "{what}");
        assert_eq!(v.sector_size, Some(512), "{what}");
        assert_eq!(
            v.cluster_count,
            Some(field(&dump, "Cluster Count")),
            "{what}"
        );
        assert_eq!(
            v.free_bytes,
            Some(field(&dump, "Free Clusters") * cs),
            "{what}"
        );
        assert_eq!(
            v.used_bytes.unwrap() + v.free_bytes.unwrap(),
            v.cluster_count.unwrap() * cs
        );
        assert_eq!(
            v.serial.as_deref(),
            Some(format!("{:08X}", field(&dump, "Volume Serial")).as_str()),
            "{what}"
        );
        assert_eq!(v.label.as_deref(), Some(label.as_str()), "{what}");
        assert_eq!(v.fat_offset, Some(start + field(&dump, "FAT Offset") * 512));
        assert_eq!(
            v.data_offset,
            Some(start + field(&dump, "Cluster Heap Offset") * 512)
        );
        assert_eq!(v.fs_bytes, Some(field(&dump, "Volume Length") * 512));
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn mkfs_fat_matrix() {
    let t = TempDir::new("mkfat");
    // (image size, FAT bits, sectors per cluster, sector size, table, extra)
    type Case<'a> = (u64, &'a str, &'a str, &'a str, Table, &'a [&'a str]);
    let cases: [Case; 7] = [
        (300 * MIB, "32", "8", "512", Table::None, &[]),
        (600 * MIB, "32", "1", "4096", Table::None, &[]),
        (1024 * MIB, "32", "16", "512", Table::Mbr, &[]),
        (300 * MIB, "32", "1", "512", Table::Gpt, &[]),
        (64 * MIB, "16", "4", "512", Table::Mbr, &[]),
        (8 * MIB, "12", "4", "512", Table::None, &[]),
        (100 * MIB, "32", "2", "512", Table::None, &["--mbr=y"]),
    ];
    for (i, &(size, bits, spc, sector, table, extra)) in cases.iter().enumerate() {
        let img = t.join(&format!("f{i}.img"));
        let mbr_type = if bits == "32" { "c" } else { "6" };
        let (start, psize) = image(&img, size, table, mbr_type);
        let label = format!("FAT{i}");
        let serial = format!("{:08X}", 0x1234_0000 + i);
        let imgs = img.to_str().unwrap();
        // mkfs.fat -F BITS -s SPC -S SECTOR -n LABEL -i SERIAL [--offset 2048 -h 2048] IMG BLOCKS
        let mut args = vec![
            "-F", bits, "-s", spc, "-S", sector, "-n", &label, "-i", &serial,
        ];
        args.extend_from_slice(extra);
        let blocks = (psize / 1024).to_string();
        let offset = (start / 512).to_string();
        if start != 0 {
            args.extend_from_slice(&["--offset", &offset, "-h", &offset]);
        }
        args.push(imgs);
        if start != 0 {
            args.push(&blocks);
        }
        run("mkfs.fat", &args);
        let fsck = if start == 0 {
            run("fsck.fat", &["-v", "-n", imgs])
        } else {
            let lo = loop_at(&img, start, Some(psize));
            run("fsck.fat", &["-v", "-n", lo.path_str()])
        };
        let r = inspect_file(&img, false);
        let what = format!("case {i}: -F {bits} -s {spc} -S {sector} {table:?} {extra:?}");
        check_table(&r, table, start, psize);
        let v = &r.volumes[0];
        let kind = match bits {
            "12" => FsKind::Fat12,
            "16" => FsKind::Fat16,
            _ => FsKind::Fat32,
        };
        assert_eq!(v.ours(), Some(kind), "{what}");
        assert!(v.error.is_none() && v.warnings.is_empty(), "{what}: {v:#?}");
        let bps: u64 = sector.parse().unwrap();
        let cs = bps * spc.parse::<u64>().unwrap();
        assert_eq!(v.sector_size, Some(bps as u32), "{what}");
        assert_eq!(v.cluster_size, Some(cs), "{what}");
        assert_eq!(
            v.cluster_count,
            Some(field(&fsck, "data clusters")),
            "{what}"
        );
        assert_eq!(
            v.fat_offset,
            Some(start + field(&fsck, "First FAT starts at byte")),
            "{what}\n{fsck}"
        );
        let data = fsck
            .lines()
            .find(|l| l.contains("Data area starts at byte"))
            .unwrap();
        let data: u64 = data.split_whitespace().nth(5).unwrap().parse().unwrap();
        assert_eq!(v.data_offset, Some(start + data), "{what}\n{fsck}");
        assert_eq!(v.label.as_deref(), Some(label.as_str()), "{what}");
        assert_eq!(v.serial.as_deref(), Some(serial.as_str()), "{what}");
        // fsck.fat's last line: "IMG: 1 files, USED/TOTAL clusters".
        let last = fsck
            .lines()
            .rev()
            .find(|l| l.contains(" clusters"))
            .unwrap();
        let used: u64 = last
            .rsplit(", ")
            .next()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(v.used_bytes, Some(used * cs), "{what}\n{last}");
        // mkfs.fat aligns the data region to the cluster size only: report it.
        assert_eq!(
            v.misaligned.contains(&"data".to_string()),
            v.data_offset.unwrap() % MIB != 0,
            "{what}"
        );
    }
}

/// Our own formatter, whole medium and inside a partition made by sfdisk.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn our_formatter() {
    let t = TempDir::new("ours");
    let cases = [
        (FsKind::Exfat, 32 * KIB, 512u32, 256 * MIB, Table::None),
        (FsKind::Exfat, 4 * KIB, 4096, 128 * MIB, Table::None),
        (FsKind::Exfat, 128 * KIB, 512, 512 * MIB, Table::Gpt),
        (FsKind::Fat32, 4 * KIB, 512, 300 * MIB, Table::None),
        (FsKind::Fat32, 16 * KIB, 512, 2048 * MIB, Table::Mbr),
        (FsKind::Fat32, 4 * KIB, 4096, 400 * MIB, Table::Gpt),
        (FsKind::Fat16, 4 * KIB, 512, 100 * MIB, Table::Mbr),
        (FsKind::Fat16, 32 * KIB, 4096, 1024 * MIB, Table::None),
        (FsKind::Fat12, 8 * KIB, 512, 24 * MIB, Table::None),
        (FsKind::Fat12, 4 * KIB, 512, 18 * MIB, Table::Gpt),
    ];
    for (i, &(fs, cluster, bps, size, table)) in cases.iter().enumerate() {
        let img = t.join(&format!("o{i}.img"));
        let ty = match fs {
            FsKind::Exfat => "7",
            FsKind::Fat32 => "c",
            FsKind::Fat16 => "6",
            FsKind::Fat12 => "1",
        };
        let (start, psize) = image(&img, size, table, ty);
        let opts = FormatOptions::new()
            .fs(FsChoice::Fixed(fs))
            .cluster(ClusterChoice::Bytes(cluster))
            .label(format!("OURS{i}"))
            .serial(0xC0FF_EE00 + i as u32);
        let medium = Medium::partition(psize, bps, start).expect("medium");
        let layout = plan(&opts, &medium).unwrap();
        {
            let dev = ImageFile::open(&img, bps).unwrap();
            let mut part = Slice::new(dev, start / u64::from(bps), psize / u64::from(bps)).unwrap();
            write_volume(&layout, &mut part, &mut |_, _| {}).unwrap();
        }
        let r = inspect_file(&img, true);
        let what = format!("case {i}: {fs} {cluster} {bps} {table:?}");
        check_table(&r, table, start, psize);
        let v = &r.volumes[0];
        check_clean(v);
        assert_eq!(v.ours(), Some(fs));
        assert_eq!(
            v.cluster_size,
            Some(layout.cluster_size().bytes()),
            "{what}"
        );
        assert_eq!(v.sector_size, Some(bps), "{what}");
        assert_eq!(
            v.cluster_count,
            Some(u64::from(layout.cluster_count())),
            "{what}"
        );
        assert_eq!(v.fat_offset, Some(layout.fat_offset_on_medium()), "{what}");
        assert_eq!(
            v.data_offset,
            Some(layout.data_offset_on_medium()),
            "{what}"
        );
        assert_eq!(v.fs_bytes, Some(layout.volume_bytes()), "{what}");
        assert_eq!(v.label.as_deref(), layout.label(), "{what}");
        assert_eq!(v.serial, Some(format!("{:08X}", layout.serial())), "{what}");
        assert_eq!(
            v.used_bytes,
            Some(u64::from(layout.used_clusters()) * layout.cluster_size().bytes()),
            "{what}"
        );
        assert_eq!(v.free_bytes, Some(layout.usable_bytes()), "{what}");
        if fs == FsKind::Fat32 {
            assert_eq!(v.free_bytes_fsinfo, v.free_bytes, "{what}");
        }
        let files = v.files.as_ref().unwrap();
        assert_eq!((files.count, files.dirs, files.total_bytes), (0, 0, 0));
        assert!(files.complete);
        assert!(files
            .at_cluster_sizes
            .iter()
            .any(|a| a.cluster_size == cluster));
    }
}
