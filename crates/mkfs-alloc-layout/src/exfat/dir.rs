//! exFAT root directory entries written at format time.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Entry type of the Allocation Bitmap entry.
pub const TYPE_BITMAP: u8 = 0x81;
/// Entry type of the Up-case Table entry.
pub const TYPE_UPCASE: u8 = 0x82;
/// Entry type of the Volume Label entry.
pub const TYPE_LABEL: u8 = 0x83;
/// Entry type of the Volume GUID entry.
pub const TYPE_GUID: u8 = 0xA0;

/// Allocation Bitmap directory entry.
///
/// Sources: exFAT specification §7.1, Table 20.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct BitmapEntry {
    /// 0x81.
    pub entry_type: u8,
    /// Bit 0: which bitmap (0 = first).
    pub bitmap_flags: u8,
    /// Zero.
    pub reserved: [u8; 18],
    /// First cluster of the bitmap.
    pub first_cluster: U32,
    /// Bitmap length in bytes: ceil(ClusterCount / 8).
    pub data_length: U64,
}

/// Up-case Table directory entry.
///
/// Sources: exFAT specification §7.2, Table 23.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct UpcaseEntry {
    /// 0x82.
    pub entry_type: u8,
    /// Zero.
    pub reserved1: [u8; 3],
    /// Checksum of the table bytes.
    pub table_checksum: U32,
    /// Zero.
    pub reserved2: [u8; 12],
    /// First cluster of the table.
    pub first_cluster: U32,
    /// Table length in bytes.
    pub data_length: U64,
}

/// Volume Label directory entry.
///
/// Sources: exFAT specification §7.3, Table 26.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct LabelEntry {
    /// 0x83.
    pub entry_type: u8,
    /// Number of UTF-16 code units, 0..=11.
    pub character_count: u8,
    /// The label, zero padded.
    pub volume_label: [U16; 11],
    /// Zero.
    pub reserved: [u8; 8],
}

/// Volume GUID directory entry (a benign primary entry).
///
/// Sources: exFAT specification §7.5, Table 29; set checksum §6.3.3.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GuidEntry {
    /// 0xA0.
    pub entry_type: u8,
    /// 0.
    pub secondary_count: u8,
    /// Set checksum over the 32 bytes, skipping this field.
    pub set_checksum: U16,
    /// 0.
    pub general_primary_flags: U16,
    /// The GUID; must not be all zero.
    pub volume_guid: [u8; 16],
    /// Zero.
    pub reserved: [u8; 10],
}

const _: () = assert!(core::mem::size_of::<BitmapEntry>() == 32);
const _: () = assert!(core::mem::size_of::<UpcaseEntry>() == 32);
const _: () = assert!(core::mem::size_of::<LabelEntry>() == 32);
const _: () = assert!(core::mem::size_of::<GuidEntry>() == 32);

/// Entry-set checksum: 16-bit rotate-add over the entries, skipping bytes 2
/// and 3 of the first entry.
///
/// Sources: exFAT specification §6.3.3, Figure 2.
pub fn set_checksum(entries: &[u8]) -> u16 {
    entries.iter().enumerate().fold(0u16, |c, (i, &b)| {
        if i == 2 || i == 3 {
            c
        } else {
            c.rotate_right(1).wrapping_add(u16::from(b))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_checksum_skips_its_own_field() {
        let mut e = [0u8; 32];
        e[0] = TYPE_GUID;
        let c = set_checksum(&e);
        e[2] = 0x12;
        e[3] = 0x34;
        assert_eq!(set_checksum(&e), c);
        // Hand-computed: only byte 0 (0xA0) is non-zero, rotated right once per later byte (29: bytes 2 and 3 are skipped).
        assert_eq!(c, 0xA0u16.rotate_right(29));
    }
}
