//! The writes of a conversion: the exFAT FAT over FAT32's second FAT, the
//! bitmap, the up-case table, the directory copies, the boot regions, the
//! partition type, in the order of the module docs.

use mkfs_alloc_blockio::{BlockIo, IoError};
use mkfs_alloc_inspect::model::Geometry;
use mkfs_alloc_ondisk::exfat::{
    boot_checksum, fill_checksum_sector, upcase::COMPRESSED_TABLE, volume_flags, BitmapEntry,
    BootSector, UpcaseEntry, UpcaseTable, FILE_SYSTEM_NAME, JUMP_BOOT, TYPE_BITMAP, TYPE_UPCASE,
};
use mkfs_alloc_ondisk::exfat::{sign_extended_boot_sector, upcase::UPCASE_TABLE_CHECKSUM};
use mkfs_alloc_ondisk::mbr::MBR_TYPE_EXFAT;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::super::{disk, state, ReclusterError};
use super::{tree, Conversion, Work};

/// Bytes of a FAT window.
const WINDOW: u64 = 64 << 10;

/// FAT32 entry bits (the high four are reserved).
const MASK: u32 = 0x0FFF_FFFF;

/// The exFAT entry of FAT32 entry `n` holding `v` (exFAT specification
/// §4.1: FFFFFFF7h bad, FFFFFFFFh end of chain; fatgen103 §4: the upper
/// four bits reserved, 0FFFFFF8h..=0FFFFFFFh end of chain).
fn translate(w: &Work, n: u32, v: u32) -> u32 {
    match n {
        0 => return 0xFFFF_FFF8,
        1 => return 0xFFFF_FFFF,
        _ if n > w.g.cluster_count + 1 => return 0,
        _ => {}
    }
    if let Ok(i) = w.links.binary_search_by_key(&n, |&(c, _)| c) {
        return w.links[i].1;
    }
    if w.old_dirs.binary_search(&n).is_ok() {
        return 0;
    }
    match v & MASK {
        0x0FFF_FFF8..=0x0FFF_FFFF => 0xFFFF_FFFF,
        0x0FFF_FFF7 => 0xFFFF_FFF7,
        x => x,
    }
}

/// Writes the exFAT FAT over the second FAT, from the first, a window at a
/// time.
fn write_fat<D: BlockIo + ?Sized>(dev: &mut D, w: &Work) -> Result<(), IoError> {
    let g = &w.g;
    let (src, dst, len) = (g.fat_offset, g.fat_offset + g.fat_bytes, g.fat_bytes);
    let mut pos = 0u64;
    while pos < len {
        let n = WINDOW.min(len - pos);
        let mut buf = vec![0u8; usize::try_from(n).unwrap_or(0)];
        disk::read_at(dev, src + pos, &mut buf)?;
        if let Ok(entries) = <[U32]>::mut_from_bytes(&mut buf) {
            for (i, e) in entries.iter_mut().enumerate() {
                let idx = u32::try_from(pos / 4 + i as u64).unwrap_or(u32::MAX);
                *e = U32::new(translate(w, idx, e.get()));
            }
        }
        disk::write_at(dev, dst + pos, &buf)?;
        pos += n;
    }
    Ok(())
}

/// `data` written over the clusters from `first` on, padded with zeros to
/// whole clusters.
fn write_run<D: BlockIo + ?Sized>(
    dev: &mut D,
    g: &Geometry,
    first: u32,
    data: &[u8],
) -> Result<(), IoError> {
    let c = usize::try_from(g.cluster_size).unwrap_or(1);
    let mut buf = data.to_vec();
    buf.resize(data.len().div_ceil(c).max(1) * c, 0);
    disk::write_at(dev, tree::cluster_offset(g, first), &buf)
}

/// The root's allocation bitmap and up-case table entries.
fn root_entries(w: &Work) -> Vec<u8> {
    let mut b = BitmapEntry::new_zeroed();
    b.entry_type = TYPE_BITMAP;
    b.first_cluster = w.bitmap.into();
    b.data_length = (w.bitmap_bytes.len() as u64).into();
    let mut u = UpcaseEntry::new_zeroed();
    u.entry_type = TYPE_UPCASE;
    u.table_checksum = UPCASE_TABLE_CHECKSUM.into();
    u.first_cluster = w.upcase.into();
    u.data_length = (COMPRESSED_TABLE.len() as u64).into();
    let mut out = b.as_bytes().to_vec();
    out.extend_from_slice(u.as_bytes());
    out
}

/// The exFAT boot region (12 sectors): sector 0 the exFAT boot sector
/// (VolumeDirty as `dirty`), sectors 1..=8 FAT32's reserved sectors as
/// they are (FSInfo; the backup boot sector as step 2 wrote it) signed as
/// extended boot sectors, 9 and 10 zero, 11 the checksum.
pub(super) fn region(w: &Work, dirty: bool) -> Vec<u8> {
    let s = usize::try_from(w.g.sector_size).unwrap_or(512);
    let mut r = vec![0u8; 12 * s];
    r[s..9 * s].copy_from_slice(&w.reserved[s..9 * s]);
    for k in 1..9 {
        sign_extended_boot_sector(&mut r[k * s..(k + 1) * s]);
    }
    // The backup boot sector stays FAT32's sector 0 as step 2 wrote it.
    if let Some(bk) = w
        .backup_boot
        .and_then(|b| usize::try_from(b).ok())
        .filter(|&b| b < 9)
    {
        r[bk * s..(bk + 1) * s].copy_from_slice(&w.fat32_sector0);
    }
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut r) {
        fill_boot(b, w, dirty);
    }
    let sum = boot_checksum(&r[..11 * s]);
    fill_checksum_sector(&mut r[11 * s..], sum);
    r
}

/// The exFAT boot sector's fields (exFAT specification §3.1).
fn fill_boot(b: &mut BootSector, w: &Work, dirty: bool) {
    let (g, n) = (&w.g, &w.exfat);
    let s = u64::from(g.sector_size);
    let sectors = |bytes: u64| U32::new(u32::try_from(bytes / s).unwrap_or(u32::MAX));
    b.jump_boot = JUMP_BOOT;
    b.file_system_name = FILE_SYSTEM_NAME;
    b.partition_offset = U64::new(g.start / s);
    b.volume_length = U64::new(g.fs_bytes / s);
    b.fat_offset = sectors(n.fat_offset);
    b.fat_length = sectors(n.fat_bytes);
    b.cluster_heap_offset = sectors(n.heap_offset);
    b.cluster_count = U32::new(n.cluster_count);
    b.first_cluster_of_root_directory = U32::new(n.root_cluster);
    b.volume_serial_number = U32::new(w.serial);
    b.file_system_revision = U16::new(0x0100);
    b.volume_flags = U16::new(if dirty { volume_flags::VOLUME_DIRTY } else { 0 });
    b.bytes_per_sector_shift = u8::try_from(s.trailing_zeros()).unwrap_or(9);
    b.sectors_per_cluster_shift = u8::try_from((g.cluster_size / s).trailing_zeros()).unwrap_or(0);
    b.number_of_fats = 1;
    b.drive_select = 0x80;
    b.percent_in_use = w.percent;
    b.boot_code = [0xF4; 390];
    b.boot_signature = U16::new(0xAA55);
}

/// Steps 1..=5 of the module docs, then [`finish`].
pub(super) fn run<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Conversion,
    w: &Work,
) -> Result<(), ReclusterError> {
    let g = &w.g;
    let s = u64::from(g.sector_size);
    // 1: the intent record.
    disk::write_at(dev, job.intent_offset, &w.intent.sector(g.sector_size))?;
    dev.flush()?;
    // 2: FAT #2 no longer mirrored (ExtFlags: active FAT 0 only), in the
    // boot sector and its backup.
    disk::write_at(dev, g.start, &w.fat32_sector0)?;
    if let Some(bk) = w.backup_boot {
        disk::write_at(dev, g.start + bk * s, &w.fat32_sector0)?;
    }
    dev.flush()?;
    // 3: the exFAT FAT, bitmap, up-case table and directories, in space
    // the FAT32 volume does not read.
    write_fat(dev, w)?;
    write_run(dev, g, w.bitmap, &w.bitmap_bytes)?;
    write_run(dev, g, w.upcase, COMPRESSED_TABLE)?;
    let table = UpcaseTable::recommended();
    let entries = root_entries(w);
    let cs = usize::try_from(g.cluster_size).unwrap_or(1);
    for i in 0..w.tree.dirs.len() {
        let bytes = tree::build_dir(dev, g, &w.tree, i, &entries, &table)?;
        for (c, part) in w.tree.dirs[i].new.iter().zip(bytes.chunks(cs)) {
            disk::write_at(dev, tree::cluster_offset(g, *c), part)?;
        }
    }
    dev.flush()?;
    // 4: the backup boot region, then the main one's sectors 1..=11.
    let r = region(w, false);
    disk::write_at(dev, g.start + 12 * s, &r)?;
    let main = region(w, true);
    disk::write_at(dev, g.start + s, &main[usize::try_from(s).unwrap_or(512)..])?;
    dev.flush()?;
    // 5: the switch.
    disk::write_at(dev, g.start, &main[..usize::try_from(s).unwrap_or(512)])?;
    dev.flush()?;
    finish(dev, job, &main[..usize::try_from(s).unwrap_or(512)])
}

/// After the switch: the partition type, VolumeDirty cleared, the intent
/// record zeroed (`main` the exFAT boot sector).
pub(super) fn finish<D: BlockIo + ?Sized>(
    dev: &mut D,
    job: &Conversion,
    main: &[u8],
) -> Result<(), ReclusterError> {
    let s = usize::try_from(job.sector).unwrap_or(512);
    if let Some((lba, at)) = job.mbr {
        let bs = usize::try_from(dev.block_size()).unwrap_or(512);
        let mut b = vec![0u8; bs];
        dev.read_blocks(lba, &mut b)?;
        if b.get(at) != Some(&MBR_TYPE_EXFAT) {
            b[at] = MBR_TYPE_EXFAT;
            dev.write_blocks(lba, &b)?;
            dev.flush()?;
        }
    }
    let mut sector0 = main[..s.min(main.len())].to_vec();
    if let Ok((b, _)) = BootSector::mut_from_prefix(&mut sector0) {
        state::set_dirty(b, false);
    }
    disk::write_at(dev, job.volume_start, &sector0)?;
    dev.flush()?;
    disk::write_at(dev, job.intent_offset, &vec![0u8; s])?;
    dev.flush()?;
    Ok(())
}
