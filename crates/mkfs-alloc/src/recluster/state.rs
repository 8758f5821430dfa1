//! The state of a re-cluster as the medium holds it: the two boot regions
//! and the intent record. No journal elsewhere: another machine can finish
//! the job from the medium alone.
//!
//! The intent record is one sector at the heap's offset less one sector
//! (inside the free gap before the heap: unused by the old volume, and
//! after the new FAT, unused by the new one); when the heap's start moves
//! (the new FAT covers that sector) it is sector 24 instead, after the
//! backup boot region and before the FAT, unused by every volume of the
//! job. It is written and flushed before a phase's first other write and
//! zeroed after the job's last:
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 24 | magic `"mkfs-alloc recluster v1\0"` |
//! | 24 | 4 | volume serial number (boot sector) |
//! | 28 | 1 | old SectorsPerClusterShift |
//! | 29 | 1 | new SectorsPerClusterShift |
//! | 30 | 1 | phase: 0 the re-cluster, 1 the evacuation of the heap's start, 2 a resize, 3 a conversion (`convert/`) |
//! | 31 | 1 | the evacuation: the SectorsPerClusterShift the job goes to (0 otherwise) |
//! | 32 | 4 | old FatOffset (sectors) |
//! | 36 | 4 | old FatLength (sectors) |
//! | 40 | 4 | old ClusterCount |
//! | 44 | 4 | old FirstClusterOfRootDirectory |
//! | 48 | 4 | new FatOffset (sectors) |
//! | 52 | 4 | new FatLength (sectors) |
//! | 56 | 4 | new ClusterCount |
//! | 60 | 4 | new FirstClusterOfRootDirectory |
//! | 64 | 4 | CRC-32 (ISO-HDLC) of bytes 0..64 |
//!
//! The rest of the sector is zero. For the evacuation, "new" is the
//! intermediate volume: the old geometry with another root directory.

use mkfs_alloc_ondisk::exfat::{
    boot_checksum, fill_checksum_sector, stored_checksum, volume_flags, BootSector,
    BOOT_CHECKSUM_SECTOR, FILE_SYSTEM_NAME,
};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::plan::{ExfatGeometry, Plan};

/// The intent record's first bytes.
pub(super) const MAGIC: [u8; 24] = *b"mkfs-alloc recluster v1\0";

/// The intent record (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct Intent {
    body: IntentBody,
    crc: U32,
}

/// What the intent record's CRC covers.
#[derive(Debug, Clone, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct IntentBody {
    magic: [u8; 24],
    serial: U32,
    old_shift: u8,
    new_shift: u8,
    phase: u8,
    target_shift: u8,
    old_fat_offset: U32,
    old_fat_length: U32,
    old_cluster_count: U32,
    old_root: U32,
    new_fat_offset: U32,
    new_fat_length: U32,
    new_cluster_count: U32,
    new_root: U32,
}

const _: () = assert!(core::mem::size_of::<Intent>() == 68);

const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

fn shift_of(cluster: u64, sector: u32) -> u8 {
    u8::try_from((cluster / u64::from(sector)).trailing_zeros()).unwrap_or(0)
}

fn sectors(bytes: u64, sector: u32) -> U32 {
    U32::new(u32::try_from(bytes / u64::from(sector)).unwrap_or(u32::MAX))
}

impl Intent {
    /// The record of `plan` on a volume of serial `serial`.
    pub(super) fn of(plan: &Plan, serial: u32) -> Self {
        Self::between(plan.sector_size, serial, &plan.old, &plan.new, None)
    }

    /// The record of a job from `old` to `new` (sectors of `s` bytes);
    /// `evacuating` names the cluster size of the re-cluster the
    /// evacuation prepares.
    pub(super) fn between(
        s: u32,
        serial: u32,
        old: &ExfatGeometry,
        new: &ExfatGeometry,
        evacuating: Option<u64>,
    ) -> Self {
        let body = IntentBody {
            magic: MAGIC,
            serial: U32::new(serial),
            old_shift: shift_of(old.cluster_size, s),
            new_shift: shift_of(new.cluster_size, s),
            phase: u8::from(evacuating.is_some()),
            target_shift: evacuating.map_or(0, |c| shift_of(c, s)),
            old_fat_offset: sectors(old.fat_offset, s),
            old_fat_length: sectors(old.fat_bytes, s),
            old_cluster_count: U32::new(old.cluster_count),
            old_root: U32::new(old.root_cluster),
            new_fat_offset: sectors(new.fat_offset, s),
            new_fat_length: sectors(new.fat_bytes, s),
            new_cluster_count: U32::new(new.cluster_count),
            new_root: U32::new(new.root_cluster),
        };
        let crc = U32::new(CRC32.checksum(body.as_bytes()));
        Intent { body, crc }
    }

    /// The record of a resize from `old` to `new` (phase 2).
    pub(super) fn resize(s: u32, serial: u32, old: &ExfatGeometry, new: &ExfatGeometry) -> Self {
        Self::between(s, serial, old, new, None).in_phase(2)
    }

    /// The record of a conversion from the FAT32 volume `old` to the exFAT
    /// volume `new` (phase 3).
    pub(super) fn converting(
        s: u32,
        serial: u32,
        old: &ExfatGeometry,
        new: &ExfatGeometry,
    ) -> Self {
        Self::between(s, serial, old, new, None).in_phase(3)
    }

    /// This record with another phase (and its CRC).
    fn in_phase(mut self, phase: u8) -> Self {
        self.body.phase = phase;
        self.crc = U32::new(CRC32.checksum(self.body.as_bytes()));
        self
    }

    /// True for the record of a conversion.
    pub(super) fn conversion(&self) -> bool {
        self.body.phase == 3
    }

    /// True for the record of a re-cluster (either of its phases).
    pub(super) fn reclustering(&self) -> bool {
        self.body.phase <= 1
    }

    /// True for the record of an evacuation.
    pub(super) fn evacuating(&self) -> bool {
        self.body.phase == 1
    }

    /// True for the record of a resize.
    pub(super) fn resizing(&self) -> bool {
        self.body.phase == 2
    }

    /// The cluster size's shift the whole job goes to.
    pub(super) fn target_shift(&self) -> u8 {
        if self.evacuating() {
            self.body.target_shift
        } else {
            self.body.new_shift
        }
    }

    /// The record in `sector`, if one is there and its CRC holds.
    pub(super) fn read(sector: &[u8]) -> Option<Self> {
        let (i, _) = Intent::read_from_prefix(sector).ok()?;
        (i.body.magic == MAGIC && i.crc.get() == CRC32.checksum(i.body.as_bytes())).then_some(i)
    }

    /// The sector holding it (`size` bytes, zero after the record).
    pub(super) fn sector(&self, size: u32) -> Vec<u8> {
        let mut s = vec![0u8; usize::try_from(size).unwrap_or(512)];
        let _ = self.write_to_prefix(&mut s);
        s
    }

    /// True when the record's old half (`new` false) or its new half names
    /// `g` on a volume of serial `serial` (sectors of `s` bytes): how a FAT
    /// volume, whose boot sector is not exFAT's, is matched.
    pub(super) fn names(&self, s: u32, serial: u32, g: &ExfatGeometry, new: bool) -> bool {
        let (b, o) = (&self.body, Intent::between(s, serial, g, g, None).body);
        let half = if new {
            (b.new_shift, b.new_fat_offset, b.new_fat_length)
        } else {
            (b.old_shift, b.old_fat_offset, b.old_fat_length)
        };
        let rest = if new {
            (b.new_cluster_count, b.new_root)
        } else {
            (b.old_cluster_count, b.old_root)
        };
        b.serial == o.serial
            && half == (o.old_shift, o.old_fat_offset, o.old_fat_length)
            && rest == (o.old_cluster_count, o.old_root)
    }

    /// True when `boot` is the old volume this record's job started from.
    pub(super) fn is_old(&self, boot: &BootSector) -> bool {
        let b = &self.body;
        boot.volume_serial_number == b.serial
            && boot.sectors_per_cluster_shift == b.old_shift
            && boot.fat_offset == b.old_fat_offset
            && boot.fat_length == b.old_fat_length
            && boot.cluster_count == b.old_cluster_count
            && boot.first_cluster_of_root_directory == b.old_root
    }

    /// True when `boot` is the boot sector this record's job writes.
    pub(super) fn is_new(&self, boot: &BootSector) -> bool {
        let b = &self.body;
        boot.volume_serial_number == b.serial
            && boot.sectors_per_cluster_shift == b.new_shift
            && boot.fat_offset == b.new_fat_offset
            && boot.fat_length == b.new_fat_length
            && boot.cluster_count == b.new_cluster_count
            && boot.first_cluster_of_root_directory == b.new_root
    }
}

/// A boot region as read: 12 sectors, valid or not.
pub(super) struct Region {
    pub(super) bytes: Vec<u8>,
    pub(super) valid: bool,
}

impl Region {
    /// Checks name, sector size and checksum of the 12 sectors `bytes` at
    /// `sector` bytes each.
    pub(super) fn new(bytes: Vec<u8>, sector: u32) -> Self {
        let s = usize::try_from(sector).unwrap_or(512);
        let valid = BootSector::ref_from_prefix(&bytes).is_ok_and(|(b, _)| {
            b.file_system_name == FILE_SYSTEM_NAME
                && (1usize << b.bytes_per_sector_shift) == s
                && b.boot_signature.get() == 0xAA55
        }) && bytes.len() == 12 * s
            && stored_checksum(&bytes[11 * s..]) == Some(boot_checksum(&bytes[..11 * s]));
        Region { bytes, valid }
    }

    /// Its boot sector.
    pub(super) fn boot(&self) -> Option<&BootSector> {
        BootSector::ref_from_prefix(&self.bytes)
            .ok()
            .map(|(b, _)| b)
    }
}

/// `old` (the 12 sectors of the old boot region) with the new geometry of
/// `plan`, VolumeDirty as `dirty`, PercentInUse `percent`, and its checksum
/// sector recomputed. Sectors 1..=10 stay as they were.
pub(super) fn new_region(old: &[u8], plan: &Plan, dirty: bool, percent: u8) -> Vec<u8> {
    region_with(old, plan.sector_size, &plan.new, None, dirty, percent)
}

/// `old` (12 sectors of `sector` bytes) with the geometry `n`, the
/// VolumeLength `volume_sectors` (`None`: kept), VolumeDirty as `dirty`,
/// PercentInUse `percent`, its checksum sector recomputed: the switch of
/// every job of the engine (re-cluster and resize). Sectors 1..=10 stay.
pub(super) fn region_with(
    old: &[u8],
    sector: u32,
    n: &ExfatGeometry,
    volume_sectors: Option<u64>,
    dirty: bool,
    percent: u8,
) -> Vec<u8> {
    let s = usize::try_from(sector).unwrap_or(512);
    let mut r = old.to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut r) {
        b.fat_offset = sectors(n.fat_offset, sector);
        b.fat_length = sectors(n.fat_bytes, sector);
        b.cluster_heap_offset = sectors(n.heap_offset, sector);
        b.cluster_count = U32::new(n.cluster_count);
        b.first_cluster_of_root_directory = U32::new(n.root_cluster);
        b.sectors_per_cluster_shift = shift_of(n.cluster_size, sector);
        if let Some(v) = volume_sectors {
            b.volume_length = U64::new(v);
        }
        b.percent_in_use = percent;
        set_dirty(b, dirty);
    }
    let sum = boot_checksum(&r[..11 * s]);
    let at = usize::try_from(BOOT_CHECKSUM_SECTOR).unwrap_or(11) * s;
    fill_checksum_sector(&mut r[at..at + s], sum);
    r
}

/// `old` (12 sectors) with another root directory's first cluster,
/// VolumeDirty as `dirty`, PercentInUse `percent`, its checksum sector
/// recomputed: the evacuation's switch.
pub(super) fn root_region(old: &[u8], sector: u32, root: u32, dirty: bool, percent: u8) -> Vec<u8> {
    let s = usize::try_from(sector).unwrap_or(512);
    let mut r = old.to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut r) {
        b.first_cluster_of_root_directory = U32::new(root);
        b.percent_in_use = percent;
        set_dirty(b, dirty);
    }
    let sum = boot_checksum(&r[..11 * s]);
    let at = usize::try_from(BOOT_CHECKSUM_SECTOR).unwrap_or(11) * s;
    fill_checksum_sector(&mut r[at..at + s], sum);
    r
}

/// Sets or clears VolumeDirty (outside the boot checksum).
pub(super) fn set_dirty(b: &mut BootSector, dirty: bool) {
    let f = b.volume_flags.get();
    b.volume_flags = U16::new(if dirty {
        f | volume_flags::VOLUME_DIRTY
    } else {
        f & !volume_flags::VOLUME_DIRTY
    });
}
