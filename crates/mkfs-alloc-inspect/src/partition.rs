//! MBR and GPT partition tables, read-only and bounded.
//!
//! ```text
//!  LBA 0  MBR: boot code | 4 × 16-byte entries at 0x1BE | 55 AA
//!         (one entry of type 0xEE from LBA 1: protective MBR → GPT)
//!  LBA 1  GPT header "EFI PART" (CRC32 over HeaderSize bytes)
//!  LBA 2… partition entries (NumberOfEntries × EntrySize, CRC32)
//!  …
//!  last   backup GPT header (used when the primary is damaged)
//! ```
//!
//! Sources: UEFI Specification 2.10 §5.2.1 (legacy MBR), §5.2.3 (protective
//! MBR), §5.3.2 (GPT header), §5.3.3 (partition entry array)
//! (<https://uefi.org/specifications>).

use core::mem::offset_of;
use mkfs_alloc_blockio::BlockIo;

use mkfs_alloc_ondisk::gpt::{GPT_CRC, GPT_SIGNATURE};
use mkfs_alloc_ondisk::mbr::MBR_TYPES_EXTENDED;
use mkfs_alloc_ondisk::probe::table::{self, TABLE_SECTOR_SIZES};
use mkfs_alloc_partition::Guid;
use zerocopy::FromBytes;

use crate::error::{InspectError, ParseError};
use crate::io::Reader;
use crate::probe::is_fs_boot_sector;
use crate::report::{Partition, PartitionTable, TableKind};

/// The on-disk structures, shared with the partition crate's probe.
pub use mkfs_alloc_ondisk::gpt::{GptEntry, GptHeader};
pub use mkfs_alloc_ondisk::mbr::{
    MbrEntry, MBR_ENTRIES_OFFSET, MBR_TYPE_PROTECTIVE as MBR_TYPE_GPT_PROTECTIVE,
};

/// Largest GPT entry array read, in bytes (the memory bound of every
/// table reader, from the one table prober).
pub use mkfs_alloc_ondisk::probe::table::MAX_GPT_ARRAY_BYTES;

/// A parsed MBR (no I/O): the non-empty entries with their 1-based slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mbr {
    /// Disk signature at 0x1B8.
    pub disk_signature: u32,
    /// `(slot, boot_indicator, type, first LBA, sectors)` of the used slots.
    pub entries: Vec<(u32, u8, u8, u32, u32)>,
}

impl Mbr {
    /// True if an entry has the protective type 0xEE.
    pub fn is_protective(&self) -> bool {
        self.entries.iter().any(|e| e.2 == MBR_TYPE_GPT_PROTECTIVE)
    }
}

/// Parses LBA 0 as an MBR. `None` when it is not one: no `55 AA`, a boot
/// indicator other than 0x00/0x80, no used entry, or a file system boot
/// sector (a whole-medium FAT/exFAT/NTFS volume).
pub fn parse_mbr(sector: &[u8]) -> Option<Mbr> {
    let raw = table::mbr(sector)?;
    let mut entries = Vec::new();
    for (slot, e) in (1u32..).zip(&raw.partitions) {
        if e.os_type != 0 && e.size_in_lba.get() != 0 {
            entries.push((
                slot,
                e.boot_indicator,
                e.os_type,
                e.starting_lba.get(),
                e.size_in_lba.get(),
            ));
        }
    }
    if entries.is_empty() {
        return None;
    }
    Some(Mbr {
        disk_signature: raw.disk_signature.get(),
        entries,
    })
}

/// A GPT header that passed its checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptInfo {
    /// Disk GUID (text).
    pub disk_guid: String,
    /// First LBA of the entry array.
    pub entries_lba: u64,
    /// Number of entries.
    pub entries: u32,
    /// Size of one entry.
    pub entry_size: u32,
    /// Expected CRC32 of the array.
    pub entries_crc: u32,
    /// LBA of the other header.
    pub alternate_lba: u64,
    /// Usable LBA range.
    pub usable: (u64, u64),
}

/// Checks a GPT header block read at `lba` (signature, size, CRC32, MyLBA,
/// entry geometry within [`MAX_GPT_ARRAY_BYTES`]).
///
/// # Errors
///
/// A [`ParseError`] naming the field: a short block, a wrong signature,
/// header size or CRC32, a MyLBA other than `lba`, an entry array beyond
/// [`MAX_GPT_ARRAY_BYTES`].
pub fn parse_gpt_header(block: &[u8], lba: u64) -> Result<GptInfo, ParseError> {
    let (h, _) = GptHeader::read_from_prefix(block).map_err(|_| ParseError::TooShort {
        structure: "GPT header",
        expected: 92,
        actual: block.len(),
    })?;
    if h.signature != GPT_SIGNATURE {
        return Err(ParseError::field(
            "Signature",
            offset_of!(GptHeader, signature),
            "\"EFI PART\"",
            format!("{:?}", String::from_utf8_lossy(&h.signature)),
        ));
    }
    let Some(crc) = h.computed_crc32(block) else {
        let hsize = h.header_size.get();
        return Err(ParseError::field(
            "HeaderSize",
            offset_of!(GptHeader, header_size),
            format!("92..={}", block.len()),
            hsize,
        ));
    };
    if crc != h.header_crc32.get() {
        return Err(ParseError::Checksum {
            what: "header CRC32",
            position: offset_of!(GptHeader, header_crc32),
            stored: h.header_crc32.get(),
            computed: crc,
        });
    }
    if h.my_lba.get() != lba {
        return Err(ParseError::field(
            "MyLBA",
            offset_of!(GptHeader, my_lba),
            format!("{lba} (where it was read)"),
            h.my_lba.get(),
        ));
    }
    let n = h.number_of_partition_entries.get();
    let esize = h.size_of_partition_entry.get();
    if !table::gpt_entry_size_ok(esize) {
        return Err(ParseError::field(
            "SizeOfPartitionEntry",
            offset_of!(GptHeader, size_of_partition_entry),
            "128 × 2^n",
            esize,
        ));
    }
    if u64::from(n) * u64::from(esize) > MAX_GPT_ARRAY_BYTES {
        return Err(ParseError::field(
            "NumberOfPartitionEntries",
            offset_of!(GptHeader, number_of_partition_entries),
            format!("at most {MAX_GPT_ARRAY_BYTES} bytes of {esize}-byte entries"),
            n,
        ));
    }
    Ok(GptInfo {
        disk_guid: guid_text(&h.disk_guid),
        entries_lba: h.partition_entry_lba.get(),
        entries: n,
        entry_size: esize,
        entries_crc: h.partition_entry_array_crc32.get(),
        alternate_lba: h.alternate_lba.get(),
        usable: (h.first_usable_lba.get(), h.last_usable_lba.get()),
    })
}

/// Parses a GPT entry array (no CRC check): used slots as partitions, with
/// byte offsets for `lba_size`-byte LBAs; problems go to `warnings`.
pub fn parse_gpt_entries(
    array: &[u8],
    entry_size: u32,
    lba_size: u32,
    warnings: &mut Vec<String>,
) -> Vec<Partition> {
    let mut out = Vec::new();
    for (index, e) in table::gpt_used_entries(array, u64::from(entry_size)) {
        let (first, last) = (e.starting_lba.get(), e.ending_lba.get());
        if last < first {
            warnings.push(format!(
                "GPT entry {index}: ending LBA {last} before starting LBA {first}; ignored"
            ));
            continue;
        }
        let ls = u64::from(lba_size);
        let (Some(start), Some(size)) = (
            first.checked_mul(ls),
            (last - first)
                .checked_add(1)
                .and_then(|n| n.checked_mul(ls)),
        ) else {
            warnings.push(format!("GPT entry {index}: LBAs out of range; ignored"));
            continue;
        };
        let name = e.name();
        let type_guid = guid_text(&e.partition_type_guid);
        out.push(Partition {
            index,
            start,
            size,
            type_name: gpt_type_name(&type_guid).map(str::to_string),
            type_id: type_guid,
            name: (!name.is_empty()).then_some(name),
            uuid: Some(guid_text(&e.unique_partition_guid)),
            bootable: false,
        });
    }
    out
}

/// Reads the partition table of a medium. Never fails on damage (that goes
/// into `warnings`, falling back to the backup GPT or to "no table"); fails
/// only when LBA 0 cannot be read.
///
/// # Errors
///
/// [`InspectError`] when LBA 0 cannot be read.
pub fn read_partition_table<D: BlockIo + ?Sized>(
    dev: &mut D,
) -> Result<PartitionTable, InspectError> {
    let mut r = Reader::new(dev);
    read_table(&mut r)
}

pub(crate) fn read_table<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
) -> Result<PartitionTable, InspectError> {
    let mut table = PartitionTable::none();
    let Some(lba0) = r.read_opt(0, 512)? else {
        table.warnings.push(format!(
            "the medium holds only {} bytes: no partition table, no file system",
            r.size()
        ));
        return Ok(table);
    };
    let mbr = parse_mbr(&lba0);
    let fs_at_0 = is_fs_boot_sector(&lba0);
    let gpt_wanted = match &mbr {
        Some(m) => m.is_protective(),
        None => !fs_at_0,
    };
    if gpt_wanted {
        if let Some(t) = read_gpt(r, mbr.is_some())? {
            return Ok(t);
        }
    }
    let Some(mbr) = mbr else {
        return Ok(table);
    };
    table.kind = TableKind::Mbr;
    // An MBR counts in logical sectors but does not say how large they are.
    // Take the device's block size first, then 512 and 4096, and keep the
    // first under which a partition starts with a file system's boot sector;
    // else the device's block size.
    let sizes = table_sector_sizes(r.block_size());
    let mut ls = sizes[0];
    'sizes: for &cand in &sizes {
        for &(_, _, ty, first, count) in &mbr.entries {
            if count == 0 || !table::type_holds_volume(ty) {
                continue;
            }
            let start = u64::from(first) * cand;
            if start + u64::from(count) * cand > r.size() {
                continue;
            }
            if let Some(sector) = r.read_opt(start, 512)? {
                if is_fs_boot_sector(&sector) {
                    ls = cand;
                    break 'sizes;
                }
            }
        }
    }
    table.sector_size = Some(ls as u32);
    table.disk_id = Some(format!("{:08x}", mbr.disk_signature));
    if mbr.is_protective() {
        table
            .warnings
            .push("protective MBR (type 0xEE) but no valid GPT header, primary or backup".into());
    }
    for &(slot, boot, ty, first, count) in &mbr.entries {
        if MBR_TYPES_EXTENDED.contains(&ty) {
            table.warnings.push(format!(
                "partition {slot} is an extended partition; logical partitions are not listed"
            ));
        }
        table.partitions.push(Partition {
            index: slot,
            start: u64::from(first) * ls,
            size: u64::from(count) * ls,
            type_id: format!("0x{ty:02x}"),
            type_name: mbr_type_name(ty).map(str::to_string),
            name: None,
            uuid: None,
            bootable: boot == 0x80,
        });
    }
    Ok(table)
}

/// Looks for a GPT at LBA 1 for 512- and 4096-byte LBAs (the device's block
/// size first), then for the backup header at the last LBA.
fn read_gpt<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    have_pmbr: bool,
) -> Result<Option<PartitionTable>, InspectError> {
    let sizes = table_sector_sizes(r.block_size());
    let mut problems = Vec::new();
    for &ls in &sizes {
        let Some(block) = r.read_opt(ls, ls as usize)? else {
            continue;
        };
        let ls32 = u32::try_from(ls).unwrap_or(512);
        // The primary header, even without its signature (a damaged header
        // must not hide an intact backup).
        let mut primary = Vec::new();
        match parse_gpt_header(&block, 1) {
            Ok(info) => match read_gpt_entries(r, &info, ls32)? {
                Ok(t) => return Ok(Some(finish_gpt(t, have_pmbr, problems))),
                Err(e) => primary.push(format!("primary GPT ({ls}-byte LBAs): {e}")),
            },
            Err(e) => primary.push(format!("primary GPT header ({ls}-byte LBAs): {e}")),
        }
        // Backup header at the last LBA.
        let last = r.size() / ls;
        if last >= 2 {
            if let Some(block) = r.read_opt((last - 1) * ls, ls as usize)? {
                match parse_gpt_header(&block, last - 1) {
                    Ok(info) => match read_gpt_entries(r, &info, ls32)? {
                        Ok(t) => {
                            problems.extend(primary);
                            problems.push(format!(
                                "the primary GPT is damaged; using the backup GPT header at LBA {}",
                                last - 1
                            ));
                            return Ok(Some(finish_gpt(t, have_pmbr, problems)));
                        }
                        Err(e) => primary.push(format!("backup GPT: {e}")),
                    },
                    Err(e) => primary.push(format!("backup GPT header: {e}")),
                }
            }
        }
        // Only a size where a GPT header was there at all says something.
        if table::gpt_header(&block).is_some() {
            problems.extend(primary);
        }
    }
    if problems.is_empty() || !have_pmbr {
        return Ok(None);
    }
    // A protective MBR with a broken GPT: report the GPT with no partitions.
    let mut t = PartitionTable::none();
    t.kind = TableKind::Gpt;
    t.warnings = problems;
    t.warnings
        .push("no valid GPT header: partitions unknown".into());
    Ok(Some(t))
}

fn finish_gpt(mut t: PartitionTable, have_pmbr: bool, mut problems: Vec<String>) -> PartitionTable {
    if !have_pmbr {
        problems.push("GPT without a protective MBR".into());
    }
    problems.append(&mut t.warnings);
    t.warnings = problems;
    t
}

/// Reads and checks the entry array of a valid header.
fn read_gpt_entries<D: BlockIo + ?Sized>(
    r: &mut Reader<'_, D>,
    info: &GptInfo,
    ls: u32,
) -> Result<Result<PartitionTable, String>, InspectError> {
    let len = u64::from(info.entries) * u64::from(info.entry_size);
    let Some(off) = info.entries_lba.checked_mul(u64::from(ls)) else {
        return Ok(Err("entry array LBA out of range".into()));
    };
    let len_usize = usize::try_from(len).unwrap_or(usize::MAX);
    let Some(array) = r.read_opt(off, len_usize)? else {
        return Ok(Err(format!(
            "entry array at byte {off} ({len} bytes) lies beyond the end of the medium"
        )));
    };
    let crc = GPT_CRC.checksum(&array);
    if crc != info.entries_crc {
        return Ok(Err(format!(
            "entry array CRC32 mismatch: stored {:#010x}, computed {crc:#010x}",
            info.entries_crc
        )));
    }
    let mut t = PartitionTable::none();
    t.kind = TableKind::Gpt;
    t.sector_size = Some(ls);
    t.disk_id = Some(info.disk_guid.clone());
    t.partitions = parse_gpt_entries(&array, info.entry_size, ls, &mut t.warnings);
    Ok(Ok(t))
}

/// The sector sizes to read a table's LBAs in: the device's block size
/// first, then the one prober's others.
fn table_sector_sizes(block_size: u64) -> Vec<u64> {
    let mut sizes = vec![block_size.clamp(512, 4096)];
    for s in TABLE_SECTOR_SIZES {
        if !sizes.contains(&s) {
            sizes.push(s);
        }
    }
    sizes
}

/// Mixed-endian GUID text, as Windows and `sfdisk` print them.
pub fn guid_text(g: &[u8; 16]) -> String {
    Guid::from_mixed_endian(*g).to_string()
}

fn mbr_type_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0x01 => "FAT12",
        0x04 => "FAT16 <32M",
        0x05 => "Extended",
        0x06 => "FAT16",
        0x07 => "HPFS/NTFS/exFAT",
        0x0B => "W95 FAT32",
        0x0C => "W95 FAT32 (LBA)",
        0x0E => "W95 FAT16 (LBA)",
        0x0F => "W95 Extended (LBA)",
        0x82 => "Linux swap",
        0x83 => "Linux",
        0x85 => "Linux extended",
        0x8E => "Linux LVM",
        0xEE => "GPT protective",
        0xEF => "EFI System",
        0xFD => "Linux RAID",
        _ => return None,
    })
}

fn gpt_type_name(g: &str) -> Option<&'static str> {
    Some(match g {
        "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7" => "Microsoft basic data",
        "C12A7328-F81F-11D2-BA4B-00A0C93EC93B" => "EFI System",
        "E3C9E316-0B5C-4DB8-817D-F92DF00215AE" => "Microsoft reserved",
        "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC" => "Windows recovery environment",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4" => "Linux filesystem",
        "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F" => "Linux swap",
        "E6D6D379-F507-44C2-A23C-238F2A3DF928" => "Linux LVM",
        "A19D880F-05FC-4D3B-A006-743F0F84911E" => "Linux RAID",
        "21686148-6449-6E6F-744E-656564454649" => "BIOS boot",
        "48465300-0000-11AA-AA11-00306543ECAC" => "Apple HFS/HFS+",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
