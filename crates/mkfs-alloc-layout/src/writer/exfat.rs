//! The bytes of a fresh exFAT volume's metadata: the boot region, the root
//! directory's system entries and the FAT's entries, for the geometry
//! `geometry::exfat` computed (the structures are in `mkfs-alloc-ondisk`).

use mkfs_alloc_ondisk::exfat::{self as ondisk, upcase};

use super::{u64_of, usize_of};
use crate::geometry::ExfatGeometry;

/// The bytes of one boot region (12 sectors): boot sector, extended boot
/// sectors, OEM and reserved sectors, checksum sector. Written twice: at
/// sector 0 and, as the backup, at sector 12.
#[cfg(feature = "alloc")]
pub fn boot_region(layout: &crate::Layout, g: &ExfatGeometry) -> alloc::vec::Vec<u8> {
    let bps = usize_of(g.bps);
    let sectors = usize::try_from(ondisk::BOOT_REGION_SECTORS).unwrap_or(0);
    let mut r = alloc::vec![0u8; sectors * bps];
    let used = u64::from(g.used_clusters());
    for (i, sector) in (0..).zip(r.chunks_exact_mut(bps)) {
        boot_region_sector(layout, g, used, i, sector);
    }
    r
}

/// The base-2 logarithm of a power of two (a BootSector shift field).
fn shift(power_of_two: u64) -> u8 {
    u8::try_from(power_of_two.trailing_zeros()).unwrap_or(u8::MAX)
}

/// Sector `index` (0..12) of the boot region of a volume with `used`
/// clusters in use (PercentInUse), into `sector` (one sector, zeroed by the
/// caller). The checksum sector (11) is computed with `sector` itself as
/// the scratch space for sectors 0..=10, so one sector of memory is enough.
pub fn boot_region_sector(
    layout: &crate::Layout,
    g: &ExfatGeometry,
    used: u64,
    index: u64,
    sector: &mut [u8],
) {
    use zerocopy::{FromZeros, IntoBytes};
    let bps = usize_of(g.bps);
    debug_assert_eq!(sector.len(), bps);
    match index {
        0 => {
            let mut bs = ondisk::BootSector::new_zeroed();
            bs.jump_boot = [0xEB, 0x76, 0x90];
            bs.file_system_name = *b"EXFAT   ";
            bs.partition_offset = (layout.partition_offset / u64::from(g.bps)).into();
            bs.volume_length = g.volume_sectors.into();
            bs.fat_offset = g.fat_offset.into();
            bs.fat_length = g.fat_length.into();
            bs.cluster_heap_offset = g.heap_offset.into();
            bs.cluster_count = g.cluster_count.into();
            bs.first_cluster_of_root_directory = g.root_cluster().get().into();
            bs.volume_serial_number = layout.serial.into();
            bs.file_system_revision = 0x0100.into();
            // Shifts of at most 63: a u8.
            bs.bytes_per_sector_shift = shift(u64::from(g.bps));
            bs.sectors_per_cluster_shift = shift(g.cluster / u64::from(g.bps));
            bs.number_of_fats = 1;
            bs.drive_select = 0x80;
            bs.percent_in_use =
                u8::try_from((used * 100 / u64::from(g.cluster_count)).min(100)).unwrap_or(100);
            bs.boot_code = [0xF4; 390];
            bs.boot_signature = 0xAA55.into();
            sector[..core::mem::size_of_val(&bs)].copy_from_slice(bs.as_bytes());
        }
        1..=8 => {
            ondisk::sign_extended_boot_sector(sector);
        }
        i if i == ondisk::OEM_PARAMETERS_SECTOR => {
            if let Some(sd) = layout.sd() {
                // The SD layout's Flash Parameters record, first in the OEM
                // Parameters sector (before the checksum, which covers it).
                let mut f = ondisk::FlashParameters::new_zeroed();
                f.parameters_guid = ondisk::FLASH_PARAMETERS_GUID;
                // At most the SD layout's largest unit, 16 MiB.
                f.erase_block_size = u32::try_from(sd.erase_block_bytes)
                    .unwrap_or(u32::MAX)
                    .into();
                sector[..core::mem::size_of_val(&f)].copy_from_slice(f.as_bytes());
            }
        }
        11 => {
            let mut sum = 0;
            let mut at = 0;
            for i in 0..11 {
                sector.fill(0);
                boot_region_sector(layout, g, used, i, sector);
                sum = ondisk::boot_checksum_continue(sum, at, sector);
                at += bps;
            }
            ondisk::fill_checksum_sector(sector, sum);
        }
        _ => {}
    }
}

/// Fills `buf` with the boot region's bytes from byte `at` of the region
/// (whole sectors), for a volume with `used` clusters in use.
pub fn boot_region_fill(
    layout: &crate::Layout,
    g: &ExfatGeometry,
    used: u64,
    at: u64,
    buf: &mut [u8],
) {
    let bps = u64::from(g.bps);
    for (i, sector) in (at / bps..).zip(buf.chunks_exact_mut(usize_of(g.bps))) {
        boot_region_sector(layout, g, used, i, sector);
    }
}

/// The root directory's system entries (at most four of 32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootEntries {
    bytes: [u8; 4 * ondisk::ENTRY_SIZE],
    len: usize,
}

impl RootEntries {
    fn push(&mut self, entry: &[u8]) {
        self.bytes[self.len..self.len + entry.len()].copy_from_slice(entry);
        self.len += entry.len();
    }

    /// The entries' bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The root directory's entries: volume label (always present, possibly
/// empty, as Windows writes it), allocation bitmap, up-case table and the
/// optional volume GUID. The rest of the root cluster is zero.
pub fn root_entries(layout: &crate::Layout, g: &ExfatGeometry) -> RootEntries {
    use zerocopy::{FromZeros, IntoBytes};
    let mut out = RootEntries {
        bytes: [0; 4 * ondisk::ENTRY_SIZE],
        len: 0,
    };
    let mut label = ondisk::LabelEntry::new_zeroed();
    label.entry_type = ondisk::TYPE_LABEL;
    if let Some(crate::label::EncodedLabel::Exfat(units)) = &layout.label_encoded {
        let units = units.units();
        // At most 11: the label's rule.
        label.character_count = u8::try_from(units.len()).unwrap_or(u8::MAX);
        for (dst, &u) in label.volume_label.iter_mut().zip(units) {
            *dst = u.into();
        }
    }
    out.push(label.as_bytes());
    let mut bitmap = ondisk::BitmapEntry::new_zeroed();
    bitmap.entry_type = ondisk::TYPE_BITMAP;
    bitmap.first_cluster = g.bitmap_cluster().get().into();
    bitmap.data_length = g.bitmap_bytes.into();
    out.push(bitmap.as_bytes());
    // The writer streams `upcase::COMPRESSED_TABLE` (fill_compressed_table), whose length and
    // checksum are these constants (pinned by the ondisk crate's tests).
    let mut up = ondisk::UpcaseEntry::new_zeroed();
    up.entry_type = ondisk::TYPE_UPCASE;
    up.table_checksum = upcase::UPCASE_TABLE_CHECKSUM.into();
    up.first_cluster = g.upcase_cluster().get().into();
    up.data_length = u64_of(upcase::UPCASE_TABLE_LEN).into();
    out.push(up.as_bytes());
    if let Some(guid) = layout.volume_guid {
        let mut e = ondisk::GuidEntry::new_zeroed();
        e.entry_type = ondisk::TYPE_GUID;
        e.volume_guid = guid;
        let sum = ondisk::set_checksum(e.as_bytes());
        e.set_checksum = sum.into();
        out.push(e.as_bytes());
    }
    out
}

/// FAT entry `index` of a freshly formatted volume: the media entries, then
/// one contiguous chain each for the bitmap, the up-case table and the root.
pub fn fat_entry(g: &ExfatGeometry, index: u64) -> u32 {
    const EOC: u32 = 0xFFFF_FFFF;
    let chain_ends = [
        g.upcase_cluster().get() - 1,
        g.root_cluster().get() - 1,
        g.root_cluster().get() + g.root_clusters - 1,
    ];
    // An index beyond 32 bits is past every chain: free.
    let Ok(index) = u32::try_from(index) else {
        return 0;
    };
    match index {
        0 => 0xFFFF_FFF8,
        1 => EOC,
        i if i > chain_ends[2] => 0,
        i if chain_ends.contains(&i) => EOC,
        i => i + 1,
    }
}
