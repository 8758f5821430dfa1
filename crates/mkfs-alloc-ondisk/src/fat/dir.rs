//! FAT directory entries: the 32-byte short (8.3) entry, the long-name (LFN)
//! entry, and the 8.3 name checksum that links them.

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// A 32-byte FAT short directory entry.
///
/// Sources: fatgen103 §6 "FAT Directory Structure", Table "FAT 32 Byte
/// Directory Entry Structure"; NT case bits: [`nt_case`].
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct DirEntry {
    /// 8.3 name, space padded (for a label: the 11 label bytes).
    pub name: [u8; 11],
    /// [`attr`] bits.
    pub attr: u8,
    /// Reserved for Windows NT: the [`nt_case`] bits.
    pub nt_res: u8,
    /// Creation time, tenths of a second (0..=199).
    pub crt_time_tenth: u8,
    /// Creation time (DOS format).
    pub crt_time: U16,
    /// Creation date (DOS format).
    pub crt_date: U16,
    /// Last access date.
    pub lst_acc_date: U16,
    /// High word of the first cluster (0 on FAT12/16).
    pub fst_clus_hi: U16,
    /// Last write time.
    pub wrt_time: U16,
    /// Last write date.
    pub wrt_date: U16,
    /// Low word of the first cluster.
    pub fst_clus_lo: U16,
    /// File size in bytes (0 for a directory).
    pub file_size: U32,
}

impl DirEntry {
    /// The first cluster (`fst_clus_hi:fst_clus_lo`).
    pub fn first_cluster(&self) -> u32 {
        (u32::from(self.fst_clus_hi.get()) << 16) | u32::from(self.fst_clus_lo.get())
    }

    /// Sets `fst_clus_hi` and `fst_clus_lo`.
    pub fn set_first_cluster(&mut self, cluster: u32) {
        self.fst_clus_hi = ((cluster >> 16) as u16).into();
        self.fst_clus_lo = (cluster as u16).into();
    }

    /// True when this is a long-name entry (attributes exactly
    /// [`attr::LONG_NAME`]) rather than a short one.
    pub fn is_long_name(&self) -> bool {
        self.attr & attr::LONG_NAME_MASK == attr::LONG_NAME
    }
}

/// Bits of [`DirEntry::attr`].
///
/// Sources: fatgen103 §6, `DIR_Attr`.
pub mod attr {
    /// Read-only.
    pub const READ_ONLY: u8 = 0x01;
    /// Hidden.
    pub const HIDDEN: u8 = 0x02;
    /// System.
    pub const SYSTEM: u8 = 0x04;
    /// The volume label (in the root directory only).
    pub const VOLUME_ID: u8 = 0x08;
    /// A directory.
    pub const DIRECTORY: u8 = 0x10;
    /// Archive.
    pub const ARCHIVE: u8 = 0x20;
    /// A long-name entry: READ_ONLY | HIDDEN | SYSTEM | VOLUME_ID.
    pub const LONG_NAME: u8 = 0x0F;
    /// The bits compared with [`LONG_NAME`] to recognise a long-name entry.
    pub const LONG_NAME_MASK: u8 = 0x3F;
}

/// Bits of [`DirEntry::nt_res`]: which halves of an 8.3 name display in
/// lower case (a name such as `readme.txt` then needs no long name).
///
/// Sources: not in fatgen103 (which reserves `DIR_NTRes`); Windows NT and
/// mtools write them, and Linux reads them as `CASE_LOWER_BASE` and
/// `CASE_LOWER_EXT` (`include/uapi/linux/msdos_fs.h`, fs/fat/namei_vfat.c).
pub mod nt_case {
    /// The base name (first 8 bytes) is lower case.
    pub const LOWER_BASE: u8 = 0x08;
    /// The extension (last 3 bytes) is lower case.
    pub const LOWER_EXT: u8 = 0x10;
}

/// First name byte of a free entry.
pub const DIR_ENTRY_FREE: u8 = 0xE5;
/// First name byte of the end-of-directory entry (this and all after are free).
pub const DIR_ENTRY_END: u8 = 0x00;
/// Stored as the first name byte when the name really starts with 0xE5.
pub const DIR_ENTRY_KANJI_E5: u8 = 0x05;

/// A long-name (LFN) directory entry: 13 UTF-16 code units of the name.
/// The entries of a name precede its short entry in reverse order (the one
/// with [`LAST_LONG_ENTRY`] set first).
///
/// Sources: fatgen103 §7 "FAT Long Directory Entries", Table "FAT Long
/// Directory Entry Structure".
#[derive(Debug, Clone, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct LfnEntry {
    /// Order of this entry, 1..=20, with [`LAST_LONG_ENTRY`] on the last.
    pub ord: u8,
    /// Code units 1..=5 of this part.
    pub name1: [U16; 5],
    /// [`attr::LONG_NAME`].
    pub attr: u8,
    /// Zero (a long-name entry).
    pub r#type: u8,
    /// [`short_name_checksum`] of the short entry's name.
    pub chksum: u8,
    /// Code units 6..=11 of this part.
    pub name2: [U16; 6],
    /// Zero.
    pub fst_clus_lo: U16,
    /// Code units 12..=13 of this part.
    pub name3: [U16; 2],
}

impl LfnEntry {
    /// The 13 code units of this entry, in order.
    pub fn units(&self) -> [u16; LFN_UNITS_PER_ENTRY] {
        let mut out = [0u16; LFN_UNITS_PER_ENTRY];
        let all = self.name1.iter().chain(&self.name2).chain(&self.name3);
        for (dst, src) in out.iter_mut().zip(all) {
            *dst = src.get();
        }
        out
    }

    /// Stores 13 code units (the caller pads with 0x0000 then 0xFFFF).
    pub fn set_units(&mut self, units: &[u16; LFN_UNITS_PER_ENTRY]) {
        let all = self
            .name1
            .iter_mut()
            .chain(self.name2.iter_mut())
            .chain(self.name3.iter_mut());
        for (dst, &src) in all.zip(units) {
            *dst = src.into();
        }
    }
}

/// Bit of [`LfnEntry::ord`] that marks the last (first stored) entry.
pub const LAST_LONG_ENTRY: u8 = 0x40;
/// Code units of the name in one [`LfnEntry`].
pub const LFN_UNITS_PER_ENTRY: usize = 13;

const _: () = assert!(core::mem::size_of::<DirEntry>() == 32);

/// Bytes of the base name in an 8.3 name (the rest is the extension).
pub const SHORT_BASE_LEN: usize = 8;

/// An 8.3 name's base and extension (space padded, as stored).
pub fn split_short_name(name: &[u8; 11]) -> (&[u8], &[u8]) {
    name.split_at(SHORT_BASE_LEN)
}

/// An 8.3 name from its base and extension (each cut to its length,
/// space padded, upper-cased).
pub fn pack_short_name(base: &[u8], ext: &[u8]) -> [u8; 11] {
    let mut n = [b' '; 11];
    let (b, e) = n.split_at_mut(SHORT_BASE_LEN);
    for (d, s) in b.iter_mut().zip(base) {
        *d = s.to_ascii_uppercase();
    }
    for (d, s) in e.iter_mut().zip(ext) {
        *d = s.to_ascii_uppercase();
    }
    n
}
const _: () = assert!(core::mem::size_of::<LfnEntry>() == 32);

/// Checksum of an 11-byte 8.3 name (as stored in [`DirEntry::name`]), kept
/// in every long-name entry of that name.
///
/// Sources: fatgen103 §7, `ChkSum()`.
pub fn short_name_checksum(name: &[u8; 11]) -> u8 {
    name.iter()
        .fold(0u8, |sum, &b| sum.rotate_right(1).wrapping_add(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn short_name_checksum_matches_fatgen103() {
        fn reference(name: &[u8; 11]) -> u8 {
            let mut sum: u8 = 0;
            for &b in name {
                sum = (if sum & 1 != 0 { 0x80u8 } else { 0 })
                    .wrapping_add(sum >> 1)
                    .wrapping_add(b);
            }
            sum
        }
        for name in [
            b"README  TXT",
            b"LONGFI~1TXT",
            b"           ",
            b"\xE5BC     D  ",
        ] {
            assert_eq!(short_name_checksum(name), reference(name));
        }
    }

    /// Known values: the short names and checksums mtools 4 (`mcopy`) wrote
    /// for long names on a FAT32 volume.
    #[test]
    fn short_name_checksum_known_values() {
        for (name, sum) in KNOWN_SHORT_NAME_SUMS {
            assert_eq!(
                short_name_checksum(name),
                *sum,
                "{:?}",
                core::str::from_utf8(*name)
            );
        }
    }

    #[test]
    fn lfn_units_round_trip() {
        let mut e = LfnEntry::new_zeroed();
        let units: [u16; 13] = core::array::from_fn(|i| 0x41 + i as u16);
        e.set_units(&units);
        assert_eq!(e.units(), units);
        let bytes = e.as_bytes();
        assert_eq!(&bytes[1..3], &[0x41, 0]);
        assert_eq!(&bytes[14..16], &[0x46, 0]);
        assert_eq!(&bytes[28..30], &[0x4C, 0]);
    }

    #[test]
    fn first_cluster_halves() {
        let mut e = DirEntry::new_zeroed();
        e.set_first_cluster(0x0012_3456);
        assert_eq!(e.fst_clus_hi.get(), 0x0012);
        assert_eq!(e.fst_clus_lo.get(), 0x3456);
        assert_eq!(e.first_cluster(), 0x0012_3456);
        e.attr = attr::LONG_NAME;
        assert!(e.is_long_name());
        e.attr = attr::VOLUME_ID | attr::ARCHIVE;
        assert!(!e.is_long_name());
    }

    #[test]
    fn short_names_pack_and_split_as_stored() {
        // fatgen103 §6.1: 8 bytes of base and 3 of extension, space padded,
        // upper case.
        let n = pack_short_name(b"readme", b"md");
        assert_eq!(&n, b"README  MD ");
        assert_eq!(split_short_name(&n), (&b"README  "[..], &b"MD "[..]));
        assert_eq!(&pack_short_name(b"Kernel8_longer", b"imgx"), b"KERNEL8_IMG");
        assert_eq!(&pack_short_name(b"A", b""), b"A          ");
        let whole = *b"12345678ABC";
        assert_eq!(split_short_name(&whole), (&b"12345678"[..], &b"ABC"[..]));
    }

    use zerocopy::IntoBytes;

    const KNOWN_SHORT_NAME_SUMS: &[(&[u8; 11], u8)] = &[
        (b"LONGFI~1TXT", 0xD4),
        (b"README  MD ", 0xF3),
        (b"PHOTO_~1JPE", 0x33),
        (b"AB~1    C  ", 0xD8),
    ];
}
