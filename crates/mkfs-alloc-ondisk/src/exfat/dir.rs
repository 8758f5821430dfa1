//! exFAT directory entries (32 bytes each), the entry-set checksum and the
//! name hash.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

#[cfg(feature = "alloc")]
use super::upcase::UpcaseTable;

/// Size of every directory entry.
pub const ENTRY_SIZE: usize = 32;

/// Entry type of the end-of-directory marker (and of every entry after it).
pub const TYPE_END_OF_DIRECTORY: u8 = 0x00;
/// Entry type of the Allocation Bitmap entry.
pub const TYPE_BITMAP: u8 = 0x81;
/// Entry type of the Up-case Table entry.
pub const TYPE_UPCASE: u8 = 0x82;
/// Entry type of the Volume Label entry.
pub const TYPE_LABEL: u8 = 0x83;
/// Entry type of the File entry.
pub const TYPE_FILE: u8 = 0x85;
/// Entry type of the Volume GUID entry.
pub const TYPE_GUID: u8 = 0xA0;
/// Entry type of the Stream Extension entry.
pub const TYPE_STREAM_EXTENSION: u8 = 0xC0;
/// Entry type of the File Name entry.
pub const TYPE_FILE_NAME: u8 = 0xC1;
/// The InUse bit of an entry type: clear in a deleted (unused) entry.
pub const TYPE_IN_USE: u8 = 0x80;

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
    /// Checksum of the table bytes ([`crate::checksum32`]).
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

impl LabelEntry {
    /// The label's code units: the first `character_count` (at most 11).
    pub fn units(&self) -> impl Iterator<Item = u16> + '_ {
        self.volume_label
            .iter()
            .take(usize::from(self.character_count).min(11))
            .map(|u| u.get())
    }

    /// The label, lossily decoded (unpaired surrogates become U+FFFD).
    #[cfg(feature = "alloc")]
    pub fn label(&self) -> alloc::string::String {
        char::decode_utf16(self.units())
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    }
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

/// File directory entry: the primary entry of a file's or directory's entry
/// set, followed by one [`StreamExtensionEntry`] and 1..=17
/// [`FileNameEntry`]s.
///
/// Timestamps are DOS date (high 16 bits) and time (low 16 bits), see
/// [`crate::time`]; the 10 ms increments add 0..=199 hundredths; the UTC
/// offsets are in 15-minute units in bits 0..=6 with bit 7 "valid".
///
/// Sources: exFAT specification §7.4, Table 27; timestamps §7.4.8..§7.4.11.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FileEntry {
    /// 0x85.
    pub entry_type: u8,
    /// Number of secondary entries (2..=18).
    pub secondary_count: u8,
    /// Checksum of the whole entry set ([`set_checksum`]).
    pub set_checksum: U16,
    /// [`file_attributes`] bits.
    pub file_attributes: U16,
    /// Zero.
    pub reserved1: U16,
    /// Creation time stamp.
    pub create_timestamp: U32,
    /// Last modification time stamp.
    pub last_modified_timestamp: U32,
    /// Last access time stamp.
    pub last_accessed_timestamp: U32,
    /// Creation time, additional 10 ms units (0..=199).
    pub create_10ms_increment: u8,
    /// Modification time, additional 10 ms units (0..=199).
    pub last_modified_10ms_increment: u8,
    /// Creation time UTC offset.
    pub create_utc_offset: u8,
    /// Modification time UTC offset.
    pub last_modified_utc_offset: u8,
    /// Access time UTC offset.
    pub last_accessed_utc_offset: u8,
    /// Zero.
    pub reserved2: [u8; 7],
}

/// Bits of [`FileEntry::file_attributes`].
///
/// Sources: exFAT specification §7.4.4, Table 28.
pub mod file_attributes {
    /// Read-only.
    pub const READ_ONLY: u16 = 0x0001;
    /// Hidden.
    pub const HIDDEN: u16 = 0x0002;
    /// System.
    pub const SYSTEM: u16 = 0x0004;
    /// A directory (its stream holds entries).
    pub const DIRECTORY: u16 = 0x0010;
    /// Archive.
    pub const ARCHIVE: u16 = 0x0020;
}

/// Stream Extension directory entry: the first secondary entry of a file's
/// set, with the name's length and hash and the data's location and size.
///
/// Sources: exFAT specification §7.6, Table 30; GeneralSecondaryFlags §6.4.2
/// (Table 19).
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct StreamExtensionEntry {
    /// 0xC0.
    pub entry_type: u8,
    /// [`secondary_flags`] bits (AllocationPossible, NoFatChain).
    pub general_secondary_flags: u8,
    /// Zero.
    pub reserved1: u8,
    /// Length of the name in UTF-16 code units (1..=255).
    pub name_length: u8,
    /// [`name_hash`] of the up-cased name.
    pub name_hash: U16,
    /// Zero.
    pub reserved2: U16,
    /// Bytes of the data written so far (equal to `data_length` for a
    /// directory).
    pub valid_data_length: U64,
    /// Zero.
    pub reserved3: U32,
    /// First cluster of the data; 0 when there is none.
    pub first_cluster: U32,
    /// Size of the data in bytes (a cluster multiple for a directory).
    pub data_length: U64,
}

/// Bits of the GeneralSecondaryFlags of a secondary entry (and of the
/// Allocation-possible / NoFatChain pair of GeneralPrimaryFlags).
///
/// Sources: exFAT specification §6.4.2, Table 19.
pub mod secondary_flags {
    /// The entry describes an allocation (`first_cluster`/`data_length` valid).
    pub const ALLOCATION_POSSIBLE: u8 = 0x01;
    /// The allocation is contiguous and its FAT entries are not used.
    pub const NO_FAT_CHAIN: u8 = 0x02;
}

/// File Name directory entry: 15 UTF-16 code units of the name.
///
/// Sources: exFAT specification §7.7, Table 31.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FileNameEntry {
    /// 0xC1.
    pub entry_type: u8,
    /// Zero (no allocation).
    pub general_secondary_flags: u8,
    /// Part of the name; the unused tail of the last entry is zero.
    pub file_name: [U16; 15],
}

/// Code units of the name in one [`FileNameEntry`].
pub const NAME_UNITS_PER_ENTRY: usize = 15;

/// The generic layout of any primary or secondary entry with an allocation:
/// what a reader needs of an entry type it does not know.
///
/// Sources: exFAT specification §6.3, Table 15 (primary) and §6.4, Table 18
/// (secondary): the same offsets for type, first cluster and length.
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct GenericEntry {
    /// Entry type.
    pub entry_type: u8,
    /// Defined by the type (SecondaryCount of a primary entry).
    pub custom_defined1: [u8; 19],
    /// First cluster of the allocation.
    pub first_cluster: U32,
    /// Length of the allocation in bytes.
    pub data_length: U64,
}

const _: () = assert!(core::mem::size_of::<BitmapEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<UpcaseEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<LabelEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<GuidEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<FileEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<StreamExtensionEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<FileNameEntry>() == ENTRY_SIZE);
const _: () = assert!(core::mem::size_of::<GenericEntry>() == ENTRY_SIZE);

/// The volume label from root-directory entries `dir` (32-byte entries from
/// the start of the root directory): the first Volume Label entry before the
/// end-of-directory entry, decoded lossily; `None` when there is none or it
/// is empty. The one exFAT label decoder.
#[cfg(feature = "alloc")]
pub fn volume_label(dir: &[u8]) -> Option<alloc::string::String> {
    for entry in dir.chunks_exact(ENTRY_SIZE) {
        match entry[0] {
            TYPE_END_OF_DIRECTORY => return None,
            TYPE_LABEL => {
                let label = LabelEntry::read_from_bytes(entry).ok()?.label();
                return (!label.is_empty()).then_some(label);
            }
            _ => {}
        }
    }
    None
}

/// Entry-set checksum: 16-bit rotate-add over the entries, skipping bytes 2
/// and 3 of the first entry (its own SetChecksum field).
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

/// NameHash of a file name: 16-bit rotate-add over the little-endian bytes
/// of the name's code units, which the caller has up-cased first (through
/// the volume's up-case table, [`UpcaseTable::upcase`]).
///
/// Sources: exFAT specification §7.6.4, Figure 4.
pub fn name_hash(upcased: &[u16]) -> u16 {
    name_hash_units(upcased.iter().copied())
}

/// [`name_hash`] of `name` after up-casing it through `table`.
#[cfg(feature = "alloc")]
pub fn name_hash_with(name: &[u16], table: &UpcaseTable) -> u16 {
    name_hash_units(name.iter().map(|&unit| table.upcase(unit)))
}

/// [`name_hash`] of up-cased code units as they come, without a buffer.
pub fn name_hash_units(upcased: impl IntoIterator<Item = u16>) -> u16 {
    upcased
        .into_iter()
        .flat_map(u16::to_le_bytes)
        .fold(0u16, |hash, byte| {
            hash.rotate_right(1).wrapping_add(u16::from(byte))
        })
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn set_checksum_skips_its_own_field() {
        let mut e = [0u8; 32];
        e[0] = TYPE_GUID;
        let c = set_checksum(&e);
        e[2] = 0x12;
        e[3] = 0x34;
        assert_eq!(set_checksum(&e), c);
        // Only byte 0 (0xA0) is non-zero, rotated right once per later byte
        // (29: bytes 2 and 3 are skipped).
        assert_eq!(c, 0xA0u16.rotate_right(29));
    }

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    /// Known values: read from the entry sets an independent implementation
    /// (exfat-fuse 1.3) wrote when it created these files.
    #[test]
    fn name_hash_known_values() {
        let table = UpcaseTable::recommended();
        for (name, hash) in KNOWN_NAME_HASHES {
            assert_eq!(name_hash_with(&units(name), &table), *hash, "{name}");
        }
    }

    #[test]
    fn set_checksum_known_value() {
        let hex = HELLO_TXT_SET.as_bytes();
        let bytes: Vec<u8> = hex
            .chunks_exact(2)
            .map(|pair| {
                let text = core::str::from_utf8(pair).expect("ascii");
                u8::from_str_radix(text, 16).expect("hex")
            })
            .collect();
        assert_eq!(bytes.len(), 96);
        let file = FileEntry::read_from_bytes(&bytes[..32]).expect("32 bytes");
        assert_eq!(file.set_checksum.get(), 0x6075);
        assert_eq!(set_checksum(&bytes), 0x6075);
        let stream = StreamExtensionEntry::read_from_bytes(&bytes[32..64]).expect("32 bytes");
        assert_eq!(stream.name_length, 9);
        assert_eq!(stream.name_hash.get(), 0x3046);
        assert_eq!(
            stream.general_secondary_flags,
            secondary_flags::ALLOCATION_POSSIBLE | secondary_flags::NO_FAT_CHAIN
        );
        assert_eq!(stream.first_cluster.get(), 6);
        assert_eq!(stream.data_length.get(), 2);
        let name = FileNameEntry::read_from_bytes(&bytes[64..]).expect("32 bytes");
        let stored: Vec<u16> = name.file_name.iter().map(|u| u.get()).take(9).collect();
        assert_eq!(stored, units("hello.txt"));
    }

    #[test]
    fn name_hash_ignores_case() {
        let table = UpcaseTable::recommended();
        assert_eq!(
            name_hash_with(&units("hello.txt"), &table),
            name_hash_with(&units("HELLO.TXT"), &table)
        );
        assert_eq!(
            name_hash_with(&units("äöü"), &table),
            name_hash_with(&units("ÄÖÜ"), &table)
        );
    }

    #[test]
    fn name_hash_matches_the_spec_formula() {
        fn reference(name: &[u16]) -> u16 {
            let mut hash: u16 = 0;
            for unit in name {
                for b in unit.to_le_bytes() {
                    hash = (if hash & 1 != 0 { 0x8000u16 } else { 0 })
                        .wrapping_add(hash >> 1)
                        .wrapping_add(u16::from(b));
                }
            }
            hash
        }
        let name = units("SOME LONG NAME WITH ÜMLAUTS.TXT");
        assert_eq!(name_hash(&name), reference(&name));
    }

    #[test]
    fn volume_label_stops_at_the_end_of_directory() {
        let mut dir = [0u8; 128];
        dir[0] = TYPE_BITMAP;
        dir[32] = TYPE_LABEL;
        dir[33] = 2;
        dir[34] = b'O';
        dir[36] = b'K';
        assert_eq!(volume_label(&dir).as_deref(), Some("OK"));
        dir[33] = 0;
        assert_eq!(volume_label(&dir), None);
        dir[32] = TYPE_END_OF_DIRECTORY;
        dir[64] = TYPE_LABEL;
        dir[65] = 2;
        assert_eq!(volume_label(&dir), None);
    }

    #[test]
    fn label_decodes_only_character_count_units() {
        use zerocopy::FromZeros;
        let mut e = LabelEntry::new_zeroed();
        e.entry_type = TYPE_LABEL;
        for (dst, u) in e.volume_label.iter_mut().zip(units("Repro üXYZ")) {
            *dst = u.into();
        }
        e.character_count = 7;
        assert_eq!(e.label(), "Repro ü");
        e.character_count = 200;
        assert_eq!(e.label(), "Repro üXYZ\u{0}", "at most 11 units");
    }

    /// (name, hash) pairs for [`name_hash`]'s test.
    const KNOWN_NAME_HASHES: &[(&str, u16)] = &[
        ("hello.txt", 0x3046),
        ("A", 0x8020),
        ("Ä long name.TXT", 0x4938),
        ("photo_0001.JPG", 0x18CD),
        ("ÄÖÜ", 0xE08E),
    ];

    /// The entry set (File, Stream Extension, File Name) exfat-fuse 1.3 wrote
    /// for `hello.txt`, with its SetChecksum 0x6075 in bytes 2..4.
    const HELLO_TXT_SET: &str = "85027560200000002a00815d2a00815d2a00815d646480808000000000000000\
    c003000946300000020000000000000000000000060000000200000000000000\
    c100680065006c006c006f002e00740078007400000000000000000000000000";
}
