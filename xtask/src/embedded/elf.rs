//! The section sizes of a 32-bit little-endian ELF file, summed the way
//! Berkeley `size` does: `text` (allocated, not writable: code, vector
//! table, read-only data), `data` (allocated, writable, with contents),
//! `bss` (allocated, writable, no contents).
//!
//! Sources: System V ABI, "ELF header" and "Sections" (e_shoff at 32,
//! e_shentsize at 46, e_shnum at 48; sh_type at 4, sh_flags at 8, sh_size
//! at 20 of each 40-byte header; SHF_WRITE 1, SHF_ALLOC 2, SHT_NOBITS 8).

/// Berkeley sizes of an ELF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Sizes {
    pub(super) text: u64,
    pub(super) data: u64,
    pub(super) bss: u64,
}

impl Sizes {
    /// What the firmware occupies in flash: its text (with read-only data)
    /// and the initial values of its data.
    pub(super) fn flash(&self) -> u64 {
        self.text + self.data
    }

    /// What it occupies in RAM before any stack: data and bss.
    pub(super) fn ram(&self) -> u64 {
        self.data + self.bss
    }
}

const SHF_WRITE: u32 = 1;
const SHF_ALLOC: u32 = 2;
const SHT_NOBITS: u32 = 8;

fn u16_at(b: &[u8], at: usize) -> Result<u16, String> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| format!("ELF file ends before byte {}", at + 2))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| format!("ELF file ends before byte {}", at + 4))
}

/// Reads the sizes from the bytes of an ELF32 little-endian file.
pub(super) fn sizes(elf: &[u8]) -> Result<Sizes, String> {
    if elf.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file".into());
    }
    if elf.get(4..6) != Some(&[1, 1]) {
        return Err("not a 32-bit little-endian ELF file".into());
    }
    let shoff = u32_at(elf, 32)? as usize;
    let shentsize = usize::from(u16_at(elf, 46)?);
    let shnum = usize::from(u16_at(elf, 48)?);
    if shentsize < 40 {
        return Err(format!("section headers of {shentsize} bytes"));
    }
    let mut s = Sizes::default();
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let kind = u32_at(elf, h + 4)?;
        let flags = u32_at(elf, h + 8)?;
        let size = u64::from(u32_at(elf, h + 20)?);
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        if flags & SHF_WRITE == 0 {
            s.text += size;
        } else if kind == SHT_NOBITS {
            s.bss += size;
        } else {
            s.data += size;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF header and three section headers: text, data, bss.
    fn elf(sections: &[(u32, u32, u32)]) -> Vec<u8> {
        let mut b = vec![0u8; 52];
        b[..6].copy_from_slice(b"\x7fELF\x01\x01");
        b[32..36].copy_from_slice(&52u32.to_le_bytes());
        b[46..48].copy_from_slice(&40u16.to_le_bytes());
        b[48..50].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        for &(kind, flags, size) in sections {
            let mut h = [0u8; 40];
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[8..12].copy_from_slice(&flags.to_le_bytes());
            h[20..24].copy_from_slice(&size.to_le_bytes());
            b.extend_from_slice(&h);
        }
        b
    }

    #[test]
    fn sums_like_berkeley_size() {
        let b = elf(&[
            (1, SHF_ALLOC | 4, 1000),                 // .text
            (1, SHF_ALLOC, 200),                      // .rodata
            (1, SHF_ALLOC | SHF_WRITE, 16),           // .data
            (SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 512), // .bss
            (1, 0, 139),                              // .comment: not loaded
        ]);
        let s = sizes(&b).expect("a valid ELF file");
        assert_eq!((s.text, s.data, s.bss), (1200, 16, 512));
        assert_eq!((s.flash(), s.ram()), (1216, 528));
    }

    #[test]
    fn refuses_what_is_not_elf32_le() {
        assert!(sizes(b"\x7fELF\x02\x01").is_err());
        assert!(sizes(b"MZ").is_err());
        let mut b = elf(&[(1, SHF_ALLOC, 1)]);
        b.truncate(70);
        assert!(sizes(&b).is_err());
    }
}
