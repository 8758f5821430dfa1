//! The GPT header and partition entry, and the CRC-32 that guards them.
//!
//! Sources: UEFI Specification 2.10, 5.3 "GUID Partition Table (GPT) Disk
//! Layout", tables 5.5 and 5.6.

use core::mem::size_of;

#[cfg(feature = "alloc")]
use alloc::{string::String, vec::Vec};
use crc::{Crc, CRC_32_ISO_HDLC};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// GPT header and partition-array checksum: CRC-32 (ISO-HDLC, as zlib).
pub const GPT_CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// "EFI PART".
pub const GPT_SIGNATURE: [u8; 8] = *b"EFI PART";

/// CRC-32 of `bytes` as GPT computes it (ISO-HDLC, the zlib CRC).
pub fn crc32(bytes: &[u8]) -> u32 {
    GPT_CRC.checksum(bytes)
}

// Sources: UEFI Specification 2.10, 5.3.2 "GPT Header", table 5.5.
/// A GPT header (the first 92 bytes of its LBA; the rest is reserved, zero).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GptHeader {
    /// [`GPT_SIGNATURE`].
    pub signature: [u8; 8],
    /// 0x00010000.
    pub revision: U32,
    /// 92 ..= block size.
    pub header_size: U32,
    /// CRC32 of the header with this field zero.
    pub header_crc32: U32,
    /// Zero.
    pub reserved: U32,
    /// LBA of this header.
    pub my_lba: U64,
    /// LBA of the other header.
    pub alternate_lba: U64,
    /// First usable LBA.
    pub first_usable_lba: U64,
    /// Last usable LBA.
    pub last_usable_lba: U64,
    /// Mixed-endian GUID.
    pub disk_guid: [u8; 16],
    /// First LBA of the entry array.
    pub partition_entry_lba: U64,
    /// Number of entries.
    pub number_of_partition_entries: U32,
    /// Size of one entry: 128 × 2^n.
    pub size_of_partition_entry: U32,
    /// CRC32 of the entry array.
    pub partition_entry_array_crc32: U32,
}
const _: () = assert!(size_of::<GptHeader>() == 92);

impl GptHeader {
    /// The CRC32 of the first `header_size` bytes of `sector` (the sector
    /// this header was read from) with the CRC field taken as zero; `None`
    /// when `header_size` is below 92 or beyond the sector.
    pub fn computed_crc32(&self, sector: &[u8]) -> Option<u32> {
        let size = usize::try_from(self.header_size.get()).ok()?;
        if size < size_of::<GptHeader>() || size > sector.len() {
            return None;
        }
        let mut digest = GPT_CRC.digest();
        digest.update(&sector[..16]);
        digest.update(&[0; 4]);
        digest.update(&sector[20..size]);
        Some(digest.finalize())
    }

    /// True when the header CRC matches the first `header_size` bytes of
    /// `sector` (the sector this header was read from).
    pub fn crc_ok(&self, sector: &[u8]) -> bool {
        self.computed_crc32(sector) == Some(self.header_crc32.get())
    }
}

// Sources: UEFI Specification 2.10, 5.3.3 "GPT Partition Entry Array", table 5.6.
/// One GPT partition entry (the first 128 bytes of each slot).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GptEntry {
    /// Mixed-endian type GUID; all zero for an unused entry.
    pub partition_type_guid: [u8; 16],
    /// Mixed-endian unique GUID.
    pub unique_partition_guid: [u8; 16],
    /// First LBA.
    pub starting_lba: U64,
    /// Last LBA (inclusive).
    pub ending_lba: U64,
    /// Attribute bits.
    pub attributes: U64,
    /// UTF-16LE, NUL-padded.
    pub partition_name: [U16; 36],
}
const _: () = assert!(size_of::<GptEntry>() == 128);

impl GptEntry {
    /// The name up to the first NUL, lossily decoded.
    #[cfg(feature = "alloc")]
    pub fn name(&self) -> String {
        let units: Vec<u16> = self
            .partition_name
            .iter()
            .map(|u| u.get())
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_value() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn header_crc_skips_its_own_field() {
        use zerocopy::FromZeros;
        let mut h = GptHeader::new_zeroed();
        h.signature = GPT_SIGNATURE;
        h.revision = 0x0001_0000.into();
        h.header_size = 92.into();
        let mut sector = [0u8; 512];
        sector[..92].copy_from_slice(h.as_bytes());
        let sum = h.computed_crc32(&sector).expect("header_size is 92");
        assert_eq!(sum, crc32(&sector[..92]));
        h.header_crc32 = sum.into();
        sector[..92].copy_from_slice(h.as_bytes());
        assert!(h.crc_ok(&sector));
        h.header_size = 91.into();
        assert_eq!(h.computed_crc32(&sector), None);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn entry_name_stops_at_the_first_nul() {
        use zerocopy::FromZeros;
        let mut e = GptEntry::new_zeroed();
        for (slot, unit) in e
            .partition_name
            .iter_mut()
            .zip("EFI system é".encode_utf16())
        {
            *slot = unit.into();
        }
        assert_eq!(e.name(), "EFI system é");
        e.partition_name[3] = 0.into();
        assert_eq!(e.name(), "EFI");
        assert_eq!(GptEntry::new_zeroed().name(), "");
    }
}
