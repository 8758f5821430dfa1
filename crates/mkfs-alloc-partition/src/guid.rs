//! [`Guid`] and the seeded generator the plan derives its identifiers from.

use std::fmt;

use mkfs_alloc_ondisk::rng::SplitMix64;

/// A GUID in RFC 4122 byte order (the order of its text form).
///
/// GPT stores GUIDs mixed-endian: see [`Guid::to_mixed_endian`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guid([u8; 16]);

impl Guid {
    /// Microsoft Basic Data partition type, EBD0A0A2-B9E5-4433-87C0-68B6B72699C7.
    pub const BASIC_DATA: Guid = Guid([
        0xEB, 0xD0, 0xA0, 0xA2, 0xB9, 0xE5, 0x44, 0x33, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26, 0x99,
        0xC7,
    ]);

    /// EFI System Partition type, C12A7328-F81F-11D2-BA4B-00A0C93EC93B.
    pub const EFI_SYSTEM: Guid = Guid([
        0xC1, 0x2A, 0x73, 0x28, 0xF8, 0x1F, 0x11, 0xD2, 0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9,
        0x3B,
    ]);

    /// The nil GUID (all zero), an unused GPT entry's type.
    pub const NIL: Guid = Guid([0; 16]);

    /// A GUID from its 16 bytes in text order.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Guid(bytes)
    }

    /// The 16 bytes in text order.
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// Reads the text form (either case): 32 hexadecimal digits, or 36
    /// characters with dashes after the 8th, 12th, 16th and 20th digit
    /// (RFC 4122's `8-4-4-4-12`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Guid> {
        const DASHES: [usize; 4] = [8, 13, 18, 23];
        let b = s.as_bytes();
        let hex: Vec<u8> = match b.len() {
            32 => b.to_vec(),
            36 if DASHES.iter().all(|&i| b[i] == b'-') => b
                .iter()
                .enumerate()
                .filter(|(i, _)| !DASHES.contains(i))
                .map(|(_, &c)| c)
                .collect(),
            _ => return None,
        };
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let mut out = [0u8; 16];
        for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *o = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(Guid(out))
    }

    /// The on-disk (GPT, UEFI) byte order: the first three fields little-endian.
    pub fn to_mixed_endian(self) -> [u8; 16] {
        let b = self.0;
        [
            b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13],
            b[14], b[15],
        ]
    }

    /// Reads a GUID stored in the on-disk (GPT, UEFI) byte order.
    pub fn from_mixed_endian(b: [u8; 16]) -> Self {
        // The swap is its own inverse.
        Guid(Guid(b).to_mixed_endian())
    }

    /// A version-4 GUID (variant 10xx) from 128 random bits: 122 of them
    /// are kept, the version and variant bits are set.
    pub fn v4(hi: u64, lo: u64) -> Self {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        b[6] = (b[6] & 0x0F) | 0x40;
        b[8] = (b[8] & 0x3F) | 0x80;
        Guid(b)
    }

    /// A random-looking GUID shaped like version 4 (variant 10xx), from two
    /// draws of `rng`.
    pub(crate) fn from_rng(rng: &mut SplitMix64) -> Self {
        let hi = rng.next_u64();
        Guid::v4(hi, rng.next_u64())
    }
}

impl fmt::Display for Guid {
    /// Upper-case text form, `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Guid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A non-zero 32-bit value from `rng` (an MBR disk signature of 0 means
/// "none" to Windows).
pub(crate) fn nonzero_u32(rng: &mut SplitMix64) -> u32 {
    rng.next_nonzero_u32()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_data_on_disk_bytes() {
        // UEFI Specification 2.10, Appendix A (GUID byte order) and
        // Microsoft's PARTITION_BASIC_DATA_GUID (winioctl.h).
        assert_eq!(
            Guid::BASIC_DATA.to_mixed_endian(),
            [
                0xA2, 0xA0, 0xD0, 0xEB, 0xE5, 0xB9, 0x33, 0x44, 0x87, 0xC0, 0x68, 0xB6, 0xB7, 0x26,
                0x99, 0xC7
            ]
        );
        assert_eq!(
            Guid::BASIC_DATA.to_string(),
            "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7"
        );
        let g = Guid::BASIC_DATA;
        assert_eq!(Guid::from_mixed_endian(g.to_mixed_endian()), g);
    }

    #[test]
    fn text_parses_back_with_or_without_dashes() {
        let s = "00112233-4455-6677-8899-AABBCCDDEEFF";
        let g = Guid::parse(s).expect("a GUID");
        assert_eq!(g.to_bytes()[0], 0x00);
        assert_eq!(g.to_bytes()[15], 0xFF);
        assert_eq!(g.to_string(), s);
        assert_eq!(Guid::parse(&s.to_lowercase()), Some(g));
        assert_eq!(Guid::parse(&s.replace('-', "")), Some(g));
        assert_eq!(
            Guid::parse(&Guid::BASIC_DATA.to_string()),
            Some(Guid::BASIC_DATA)
        );
        for bad in [
            "",
            "0x1",
            "00112233-4455-6677-8899-AABBCCDDEEF",
            "00112233-4455-6677-8899-AABBCCDDEEFFF",
            "0011223344-55-6677-8899-AABBCCDDEEFF",
            "00112233-4455-6677-8899-AABBCCDDEEFG",
            "+0112233-4455-6677-8899-AABBCCDDEEFF",
            "001122334455667788-99AABBCCDDEEFF",
            " 00112233-4455-6677-8899-AABBCCDDEEFF",
        ] {
            assert_eq!(Guid::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rng_guids_are_v4_shaped() {
        let mut r = SplitMix64::new(0);
        for _ in 0..100 {
            let g = Guid::from_rng(&mut r).to_bytes();
            assert_eq!(g[6] >> 4, 4);
            assert_eq!(g[8] >> 6, 0b10);
        }
    }
}
