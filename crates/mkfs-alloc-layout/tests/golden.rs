//! The bytes the planner and writer put on a medium, pinned: each case is
//! planned, written over a disk pre-filled with 0xD1 (so a region the
//! writer should zero and does not shows) by the std driver and by the
//! firmware driver, and the CRC-64 of the whole disk is compared with the
//! value recorded here. A change of one byte of one case fails, naming it.
//! Independent readers (fsck, mtools, the kernel's drivers) judge these
//! bytes in the tool tier; this test pins them in the crate's own suite, so
//! that mutation testing (`cargo xtask mutants`) sees every change of the
//! medium. A deliberate change of the format: `MKFS_ALLOC_BLESS=1 cargo
//! test -p mkfs-alloc-layout --test golden -- --nocapture` prints the new
//! table.

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_layout::embedded::{self, SectorDevice, Table};
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium, Timestamp,
};

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_XZ);
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// One case: what is formatted and its recorded CRC-64.
struct Case {
    name: &'static str,
    fs: FsKind,
    cluster: u64,
    bytes: u64,
    sector: u32,
    label: &'static str,
    /// Byte offset of the volume (a partition's start; 0: the whole disk).
    offset: u64,
    extra: fn(FormatOptions) -> FormatOptions,
    crc: u64,
}

fn same(o: FormatOptions) -> FormatOptions {
    o
}

#[rustfmt::skip]
const CASES: &[Case] = &[
    Case { name: "exfat-4K-64M", fs: FsKind::Exfat, cluster: 4 * KIB, bytes: 64 * MIB, sector: 512, label: "GOLDEN", offset: 0, extra: same, crc: 0xa3e5efd0b8abbfa5 },
    Case { name: "exfat-32K-48M-4Kn", fs: FsKind::Exfat, cluster: 32 * KIB, bytes: 48 * MIB, sector: 4096, label: "Ünïcode", offset: 0, extra: same, crc: 0x2bf4cc885e50318a },
    Case { name: "exfat-512-8M-part", fs: FsKind::Exfat, cluster: 512, bytes: 8 * MIB, sector: 512, label: "", offset: MIB, extra: same, crc: 0x73ec97a765e9f237 },
    Case { name: "exfat-guid-align", fs: FsKind::Exfat, cluster: 128 * KIB, bytes: 96 * MIB, sector: 512, label: "G", offset: 0, extra: guid_align, crc: 0x6bedc0805982645e },
    Case { name: "fat32-512-64M", fs: FsKind::Fat32, cluster: 512, bytes: 64 * MIB, sector: 512, label: "GOLD32", offset: 0, extra: same, crc: 0xe6e9cbc1f514f01f },
    Case { name: "fat32-1K-80M-part", fs: FsKind::Fat32, cluster: KIB, bytes: 80 * MIB, sector: 512, label: "", offset: MIB, extra: same, crc: 0xb33dbda6dd3db108 },
    Case { name: "fat32-4K-260M-4Kn", fs: FsKind::Fat32, cluster: 4 * KIB, bytes: 260 * MIB, sector: 4096, label: "BIG", offset: 0, extra: same, crc: 0xe1787d34f280f07a },
    Case { name: "fat32-esp-1fat", fs: FsKind::Fat32, cluster: 512, bytes: 40 * MIB, sector: 512, label: "ESP", offset: MIB, extra: esp_one_fat, crc: 0xd0c880e3ae494e61 },
    Case { name: "fat16-4K-64M", fs: FsKind::Fat16, cluster: 4 * KIB, bytes: 64 * MIB, sector: 512, label: "GOLD16", offset: 0, extra: same, crc: 0xa3631ae5e028cbc1 },
    Case { name: "fat16-2K-16M-root1024", fs: FsKind::Fat16, cluster: 2 * KIB, bytes: 16 * MIB, sector: 512, label: "", offset: MIB, extra: root_1024, crc: 0x7158ef49e1544f17 },
    Case { name: "fat16-8K-60M-2Kn", fs: FsKind::Fat16, cluster: 8 * KIB, bytes: 60 * MIB, sector: 2048, label: "S2K", offset: 0, extra: same, crc: 0x6defb925fe46f8da },
    Case { name: "fat12-1K-4M", fs: FsKind::Fat12, cluster: KIB, bytes: 4 * MIB, sector: 512, label: "GOLD12", offset: 0, extra: same, crc: 0x77d7472115215e8b },
    Case { name: "fat12-4K-12M-1Kn", fs: FsKind::Fat12, cluster: 4 * KIB, bytes: 12 * MIB, sector: 1024, label: "", offset: 0, extra: same, crc: 0x35df0012dbc4a1dc },
    Case { name: "fat12-512-1440K", fs: FsKind::Fat12, cluster: 512, bytes: 1440 * KIB, sector: 512, label: "FLOPPY", offset: 0, extra: same, crc: 0x11d0c00fbb84bebe },
];

fn guid_align(o: FormatOptions) -> FormatOptions {
    o.volume_guid(true).align(4 * MIB)
}

fn esp_one_fat(o: FormatOptions) -> FormatOptions {
    o.esp(true).fats(1).expect("one FAT is valid")
}

fn root_1024(o: FormatOptions) -> FormatOptions {
    o.root_entries(1024).expect("1024 root entries are valid")
}

fn options(c: &Case) -> FormatOptions {
    let o = FormatOptions::new()
        .fs(FsChoice::Fixed(c.fs))
        .cluster(ClusterChoice::Bytes(c.cluster))
        .label(c.label)
        .pinned(
            0x1234_ABCD,
            Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
    (c.extra)(o)
}

/// The disk as the std driver leaves it: the case's volume at its offset,
/// everything else 0xD1; with `wiped`, the volume's first MiB and the
/// medium's last MiB zeroed first, as the firmware driver (and the facade's
/// wipe) does.
fn std_driver(c: &Case, wiped: bool) -> MemDisk {
    let medium = if c.offset == 0 {
        Medium::whole(c.bytes, c.sector).expect("medium")
    } else {
        Medium::partition(c.bytes, c.sector, c.offset).expect("medium")
    };
    let layout = plan(&options(c), &medium).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let bs = u64::from(c.sector);
    let mut disk =
        MemDisk::filled(c.sector, (c.offset + c.bytes) / bs, 0xD1).expect("a memory disk");
    if wiped {
        let end = (c.offset + c.bytes) / bs;
        let mib = MIB / bs;
        mkfs_alloc_blockio::BlockIo::write_zeroes(&mut disk, c.offset / bs, mib.min(c.bytes / bs))
            .expect("zero");
        mkfs_alloc_blockio::BlockIo::write_zeroes(&mut disk, end - mib.min(end), mib.min(end))
            .expect("zero");
    }
    let mut window = mkfs_alloc_blockio::Slice::new(&mut disk, c.offset / bs, c.bytes / bs)
        .expect("the volume's window");
    write_volume(&layout, &mut window, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    disk
}

/// A firmware card: sectors in memory, pre-filled with 0xD1.
struct Card {
    sector: u32,
    bytes: Vec<u8>,
}

impl SectorDevice for Card {
    type Error = ();
    fn sector_size(&self) -> u32 {
        self.sector
    }
    fn sector_count(&mut self) -> Result<u64, ()> {
        Ok(self.bytes.len() as u64 / u64::from(self.sector))
    }
    fn write_sector(&mut self, lba: u64, data: &[u8]) -> Result<(), ()> {
        let s = usize::try_from(lba * u64::from(self.sector)).map_err(|_| ())?;
        self.bytes
            .get_mut(s..s + data.len())
            .ok_or(())?
            .copy_from_slice(data);
        Ok(())
    }
}

#[test]
fn every_case_writes_the_recorded_bytes_through_both_drivers() {
    let bless = std::env::var_os("MKFS_ALLOC_BLESS").is_some();
    let mut differ = Vec::new();
    for c in CASES {
        let disk = std_driver(c, false);
        let got = CRC64.checksum(disk.as_bytes());
        if bless {
            println!("{} {got:#018x}", c.name);
        } else if got != c.crc {
            differ.push(format!("{}: {got:#018x}, recorded {:#018x}", c.name, c.crc));
        }

        // The firmware driver writes the same volume: on a whole card
        // without a table the disks are equal byte for byte.
        if c.offset == 0 {
            let disk = std_driver(c, true);
            let mut card = Card {
                sector: c.sector,
                bytes: vec![0xD1; usize::try_from(c.bytes).expect("fits")],
            };
            let mut buf = vec![0u8; 4096];
            embedded::format(&mut card, &mut buf, &options(c), Table::None)
                .unwrap_or_else(|e| panic!("{}: {e:?}", c.name));
            if card.bytes != disk.as_bytes() {
                let pairs = || card.bytes.iter().zip(disk.as_bytes());
                let first = pairs().position(|(a, b)| a != b);
                let last = pairs().rposition(|(a, b)| a != b);
                panic!(
                    "{}: the firmware driver's bytes differ from the std driver's in {first:?}..={last:?}",
                    c.name
                );
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} cases differ from the recorded bytes:\n{}",
        differ.len(),
        CASES.len(),
        differ.join("\n")
    );
}

/// A firmware format with an MBR: (name, file system, cluster size, card
/// bytes, SD layout, recorded CRC-64 of the whole card).
#[rustfmt::skip]
const CARDS: &[(&str, FsKind, u64, u64, bool, u64)] = &[
    ("card-fat32-mbr", FsKind::Fat32, 512, 64 * MIB, false, 0xebfc21dd219e3a4f),
    ("card-fat16-mbr", FsKind::Fat16, 2 * KIB, 32 * MIB, false, 0x5d4e5ee5d307f0f2),
    ("card-fat12-mbr", FsKind::Fat12, KIB, 3 * MIB, false, 0x379851aaa8a404e5),
    ("card-exfat-mbr", FsKind::Exfat, 4 * KIB, 40 * MIB, false, 0xdd6b56173f89fedb),
    // The SD layout chooses the file system and the cluster size itself.
    ("card-sd-32M", FsKind::Fat12, 0, 32 * MIB, true, 0x35ce85f74ba63595),
    ("card-sd-300M", FsKind::Fat16, 0, 300 * MIB, true, 0x7919b36ab1172ebb),
];

#[test]
fn every_card_gets_the_recorded_bytes_with_its_mbr() {
    let bless = std::env::var_os("MKFS_ALLOC_BLESS").is_some();
    let mut differ = Vec::new();
    for &(name, fs, cluster, bytes, sd, crc) in CARDS {
        let mut opts = FormatOptions::new().label("CARD").sd(sd);
        if !sd {
            opts = opts
                .fs(FsChoice::Fixed(fs))
                .cluster(ClusterChoice::Bytes(cluster));
        }
        let opts = opts.pinned(
            0x1234_ABCD,
            Timestamp {
                secs: 1_700_000_000,
                nanos: 0,
            },
        );
        let mut card = Card {
            sector: 512,
            bytes: vec![0xD1; usize::try_from(bytes).expect("fits")],
        };
        // A buffer of exactly one sector: the smallest the driver takes.
        let mut buf = [0u8; 512];
        let made = embedded::format(&mut card, &mut buf, &opts, Table::Mbr)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(made.fs, fs, "{name}");
        let got = CRC64.checksum(&card.bytes);
        if bless {
            println!("{name} {got:#018x}");
        } else if got != crc {
            differ.push(format!("{name}: {got:#018x}, recorded {crc:#018x}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} cards differ from the recorded bytes:\n{}",
        differ.len(),
        CARDS.len(),
        differ.join("\n")
    );
}
