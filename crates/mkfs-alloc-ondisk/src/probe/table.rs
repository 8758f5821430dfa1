//! The one partition-table prober: whether a sector is an MBR, a GPT
//! header, and the limits within which a table is read. Pure: callers do the
//! reads. `info` (which reports tables) and the wipe's signature search
//! (which erases them) both ask it, so that a table one of them sees, the
//! other sees too.
//!
//! Sources: UEFI Specification 2.10 §5.2.1 (legacy MBR: boot indicator
//! 0x00 or 0x80, signature `55 AA`), §5.2.3 (protective MBR), §5.3.2 (GPT
//! header: `SizeOfPartitionEntry` is 128 × 2^n), §5.3.3 (entry array).

use zerocopy::FromBytes;

use crate::gpt::{GptEntry, GptHeader, GPT_SIGNATURE};
use crate::mbr::{Mbr, MbrEntry, MBR_TYPES_EXTENDED, MBR_TYPE_PROTECTIVE};
use crate::BOOT_SIGNATURE;

/// Logical sector sizes a table may have been written with, whatever the
/// device says: its LBAs are tried as 512- and as 4096-byte sectors.
pub const TABLE_SECTOR_SIZES: [u64; 2] = [512, 4096];

/// Largest GPT entry array read, in bytes (the memory bound of every reader).
pub const MAX_GPT_ARRAY_BYTES: u64 = 1 << 20;

/// LBA 0 as an MBR or protective MBR: `55 AA` at 510, every boot indicator
/// 0x00 or 0x80, and not the boot sector of a file system that starts at
/// byte 0 (exFAT, NTFS, FAT: they end in `55 AA` too). `None` otherwise.
pub fn mbr(sector: &[u8]) -> Option<&Mbr> {
    let (m, _) = Mbr::ref_from_prefix(sector).ok()?;
    let indicators_ok = m
        .partitions
        .iter()
        .all(|p| matches!(p.boot_indicator, 0x00 | 0x80));
    (m.signature == BOOT_SIGNATURE && indicators_ok && super::boot_sector_kind(sector).is_none())
        .then_some(m)
}

/// True for an MBR that protects a GPT (an entry of type 0xEE).
pub fn is_protective(m: &Mbr) -> bool {
    m.partitions
        .iter()
        .any(|p| p.os_type == MBR_TYPE_PROTECTIVE)
}

/// True for an MBR entry that may hold a volume: used (a type), not an
/// extended partition (EBRs, not volumes) and not the protective entry.
pub fn holds_volume(e: &MbrEntry) -> bool {
    type_holds_volume(e.os_type)
}

/// True for an MBR partition type that may hold a volume: not 0 (unused),
/// not extended, not protective.
pub fn type_holds_volume(os_type: u8) -> bool {
    os_type != 0 && os_type != MBR_TYPE_PROTECTIVE && !MBR_TYPES_EXTENDED.contains(&os_type)
}

/// A GPT header (its signature; the CRC is [`GptHeader::crc_ok`]) at the
/// start of `sector`.
pub fn gpt_header(sector: &[u8]) -> Option<&GptHeader> {
    let (h, _) = GptHeader::ref_from_prefix(sector).ok()?;
    (h.signature == GPT_SIGNATURE).then_some(h)
}

/// Whether a GPT entry size is valid: 128 × 2^n bytes.
pub fn gpt_entry_size_ok(size: u32) -> bool {
    size >= 128 && size.is_power_of_two()
}

/// The entry array of `h` as `(entry size, entry count)` in bytes and
/// entries, when the entry size is valid and the array within
/// [`MAX_GPT_ARRAY_BYTES`].
pub fn gpt_array(h: &GptHeader) -> Option<(u64, u64)> {
    let (size, count) = (
        h.size_of_partition_entry.get(),
        u64::from(h.number_of_partition_entries.get()),
    );
    (gpt_entry_size_ok(size) && count * u64::from(size) <= MAX_GPT_ARRAY_BYTES)
        .then_some((u64::from(size), count))
}

/// The used entries (a type GUID) of a GPT entry array of `entry_size`-byte
/// slots, with their 1-based slot number.
pub fn gpt_used_entries(
    array: &[u8],
    entry_size: u64,
) -> impl Iterator<Item = (u32, &GptEntry)> + '_ {
    let step = usize::try_from(entry_size).unwrap_or(usize::MAX).max(128);
    (1u32..)
        .zip(array.chunks(step))
        .map_while(|(slot, chunk)| Some((slot, GptEntry::ref_from_prefix(chunk).ok()?.0)))
        .filter(|(_, e)| e.partition_type_guid != [0; 16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn mbr_rules() {
        let mut s = vec![0u8; 512];
        assert!(mbr(&s).is_none(), "no 55 AA");
        s[510..].copy_from_slice(&BOOT_SIGNATURE);
        s[446 + 4] = 0x0C;
        let m = mbr(&s).expect("an MBR");
        assert!(!is_protective(m) && holds_volume(&m.partitions[0]));
        s[446] = 0x01;
        assert!(mbr(&s).is_none(), "boot indicator 0x01");
        s[446] = 0;
        s[446 + 4] = 0x0F;
        assert!(!holds_volume(&mbr(&s).expect("an MBR").partitions[0]));
    }

    #[test]
    fn gpt_header_array_and_used_entries() {
        use crate::gpt::GptHeader;
        use zerocopy::{FromZeros, IntoBytes};
        let mut h = GptHeader::new_zeroed();
        h.size_of_partition_entry = 128.into();
        h.number_of_partition_entries = 128.into();
        let mut sector = vec![0u8; 512];
        sector[..92].copy_from_slice(h.as_bytes());
        assert!(gpt_header(&sector).is_none(), "no signature");
        sector[..8].copy_from_slice(b"EFI PART");
        let got = gpt_header(&sector).expect("a GPT header");
        assert_eq!(got.number_of_partition_entries.get(), 128);
        assert!(gpt_header(&sector[..91]).is_none(), "shorter than a header");
        // UEFI §5.3.2: 128 entries of 128 bytes, the usual 16 KiB array.
        assert_eq!(gpt_array(&h), Some((128, 128)));
        h.size_of_partition_entry = 256.into();
        h.number_of_partition_entries = 4096.into();
        assert_eq!(gpt_array(&h), Some((256, 4096)), "exactly 1 MiB");
        h.number_of_partition_entries = 4097.into();
        assert_eq!(gpt_array(&h), None, "beyond the memory bound");
        h.size_of_partition_entry = 192.into();
        h.number_of_partition_entries = 1.into();
        assert_eq!(gpt_array(&h), None, "not 128 x 2^n");
        // Slots 2 and 4 of 256-byte slots used: 1-based slot numbers.
        let mut array = vec![0u8; 4 * 256];
        array[256] = 0x28;
        array[256 + 32] = 7;
        array[3 * 256 + 15] = 0xC1;
        let used: alloc::vec::Vec<(u32, u64)> = gpt_used_entries(&array, 256)
            .map(|(slot, e)| (slot, e.starting_lba.get()))
            .collect();
        assert_eq!(used, [(2, 7), (4, 0)]);
        assert_eq!(gpt_used_entries(&array[..256], 256).count(), 0);
    }

    #[test]
    fn gpt_entry_sizes() {
        assert!(gpt_entry_size_ok(128) && gpt_entry_size_ok(512));
        assert!(!gpt_entry_size_ok(0) && !gpt_entry_size_ok(192));
    }
}
