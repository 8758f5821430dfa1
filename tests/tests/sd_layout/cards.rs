//! One card of every capacity class written and handed to the independent
//! checkers (fsck, dump.exfat, mtools, sfdisk, the `fatfs` crate through a
//! partition window), and `info` telling the SD layout from the standard one.

use super::*;

/// A FAT card of `total` sectors, written and checked by fsck.fat, sfdisk,
/// mtools (a file written and read back) and the `fatfs` crate.
fn fat_card(total: u64, extra: &[&str], fs: &str, heads: u64, spt: u64) {
    let tmp = TempDir::new(&format!("sd-{fs}-{total}"));
    let img = tmp.join("card.img");
    let size = (total * SECTOR).to_string();
    let mut args = vec!["--size", size.as_str(), "--label", "SDCARD"];
    args.extend_from_slice(extra);
    let out = sd_format(&img, &args);
    out.assert_success();
    let j = MkfsJson::parse(&out).value;
    assert_eq!(j["fs"], fs, "{j:#}");
    let want = reference::card(total, extra.contains(&"fat32")).expect("card");
    let (ty, start, sectors, first, _) = mbr_entry(&img);
    assert_eq!(
        (ty, start, sectors),
        (want.mbr_type, want.part_start, total - want.part_start)
    );
    assert_eq!(
        first,
        chs(start, heads, spt),
        "start CHS in the card's geometry"
    );
    let (s, n, t) = sfdisk_dump(&img);
    assert_eq!((s, n), (start, sectors));
    assert_eq!(u64::from_str_radix(&t, 16).ok(), Some(u64::from(ty)));

    // The boot sector: HiddSec, geometry, reserved sectors as the layout says.
    let bs = read_at(&img, start * SECTOR, 512);
    assert_eq!(le(&bs, 24, 2), spt, "SecPerTrk");
    assert_eq!(le(&bs, 26, 2), heads, "NumHeads");
    assert_eq!(le(&bs, 28, 4), start, "HiddSec");
    assert_eq!(le(&bs, 14, 2), want.rsvd, "RsvdSecCnt");
    let label = if fs == "fat32" { 71 } else { 43 };
    assert_eq!(&bs[label..label + 11], b"SDCARD     ");

    {
        let dev = partition(&img, start, sectors);
        fsck_fat_clean(dev.path());
    }
    // mtools: write a file into the partition and read it back.
    let part = format!("{}@@{}", img.display(), start * SECTOR);
    let src = tmp.join("hello.txt");
    std::fs::write(&src, b"written by mtools\n").expect("write source");
    mtools(
        "mcopy",
        Path::new(&part),
        &[&src.to_string_lossy(), "::HELLO.TXT"],
    )
    .assert_success();
    let back = mtools("mtype", Path::new(&part), &["::HELLO.TXT"]);
    back.assert_success();
    assert_eq!(back.stdout, "written by mtools\n");
    // The fatfs crate: read mtools' file, write one of its own.
    {
        let window = Window::open(&img, start * SECTOR);
        let fs = fatfs::FileSystem::new(window, fatfs::FsOptions::new()).expect("fatfs mounts");
        let mut text = String::new();
        fs.root_dir()
            .open_file("HELLO.TXT")
            .expect("fatfs open")
            .read_to_string(&mut text)
            .expect("fatfs read");
        assert_eq!(text, "written by mtools\n");
        let mut f = fs
            .root_dir()
            .create_file("fatfs.bin")
            .expect("fatfs create");
        f.write_all(&[0x5A; 100_000]).expect("fatfs write");
        drop(f);
        fs.unmount().expect("fatfs unmount");
    }
    let dev = partition(&img, start, sectors);
    fsck_fat_clean(dev.path());
    drop(dev);
    assert_eq!(info_layout(&img), "sd");
}

/// A standard MBR image of a card's size is not taken for the SD layout.
#[test]
fn info_tells_the_sd_layout_from_the_standard_one() {
    let tmp = TempDir::new("sd-info");
    let img = tmp.join("std.img");
    mkfs_alloc(&["--table", "mbr", "--size", "8G", &img.to_string_lossy()]).assert_success();
    assert_eq!(info_layout(&img), "other");
}

/// A `Read + Write + Seek` view of a file from `base` on: the partition,
/// for the `fatfs` crate.
struct Window {
    file: File,
    base: u64,
}

impl Window {
    fn open(path: &Path, base: u64) -> Window {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
        file.seek(SeekFrom::Start(base)).expect("seek");
        Window { file, base }
    }
}

impl Read for Window {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.file.read(buf)
    }
}

impl Write for Window {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Seek for Window {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let pos = match pos {
            SeekFrom::Start(p) => SeekFrom::Start(self.base + p),
            other => other,
        };
        Ok(self.file.seek(pos)? - self.base)
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdsc_fat12_8_mib() {
    fat_card(1 << 14, &[], "fat12", 2, 32);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdsc_fat12_at_64_mib_is_fat16_by_its_count() {
    fat_card(1 << 17, &[], "fat16", 8, 32);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdsc_fat16_256_mib() {
    fat_card(1 << 19, &[], "fat16", 16, 32);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdsc_fat16_2_gib() {
    fat_card(1 << 22, &["--fs", "fat16"], "fat16", 128, 63);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdhc_just_above_2_gib_is_fat16_by_its_count() {
    // FAT32 at 32 KiB clusters would have about 65,280 clusters: a FAT16 by
    // count, which firmware (edk2) refuses as FAT32.
    fat_card((1 << 22) + 1, &[], "fat16", 128, 63);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdhc_fat32_8_gb() {
    // 8 GB (decimal): below the CHS limit, FAT32 type 0x0B.
    fat_card(8_000_000_000 / SECTOR, &[], "fat32", 255, 63);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdhc_fat32_32_gib() {
    fat_card(1 << 26, &["--fs", "fat"], "fat32", 255, 63);
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdxc_fat32_64_gb_with_64k_clusters() {
    fat_card(125_073_408, &["--fs", "fat32"], "fat32", 255, 63);
}

/// exFAT at the top of the SDXC range (2 TiB, sparse) and in the middle
/// class: fsck.exfat clean, the Flash Parameters erase block BU/2.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn sdxc_exfat_classes() {
    for (total, bu) in [(1u64 << 30, 65_536u64), (1 << 32, 131_072)] {
        let tmp = TempDir::new("sd-exfat");
        let img = tmp.join("card.img");
        let out = sd_format(&img, &["--size", &(total * SECTOR).to_string()]);
        out.assert_success();
        let (ty, start, sectors, _, _) = mbr_entry(&img);
        assert_eq!((ty, start, sectors), (0x07, bu, total - bu));
        let oem = read_at(&img, start * SECTOR + 9 * SECTOR, 512);
        assert_eq!(le(&oem, 16, 4), bu / 2 * SECTOR, "EraseBlockSize");
        let dev = partition(&img, start, sectors);
        check_exfat_boot_region(dev.path());
        fsck_exfat_clean(dev.path());
    }
}
