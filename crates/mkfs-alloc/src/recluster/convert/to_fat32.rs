//! exFAT to FAT32 in place (`convert --fs fat32`): the checks and the
//! plan, read-only. The write path is not built yet: [`run_fat32`]
//! refuses with that reason before writing anything, so a volume is
//! never left half done by an untested path.
//!
//! What is checked, in the reader's walk order, the first offender named
//! by its path (Microsoft's FAT specification, "FAT32 File System
//! Specification" 1.03, sections 3.5, 6 and 7):
//! - the volume is exFAT, undamaged, without an unfinished job;
//! - no file of 4 GiB or more (FAT's FileSize is 32 bits);
//! - every name makes a long name: 1..=255 UTF-16 units, none of
//!   `" * / : < > ? \ |` or below 20h (exFAT forbids those too), not
//!   ending in a space or a period (FAT drivers strip those);
//! - at most 65,535 32-byte entries per directory (its dot entries, and
//!   per child one short entry and `ceil(len / 13)` long-name entries);
//! - the FAT32 cluster count, 65,525..=268,435,445.
//!
//! The layout planned keeps file data in place: FAT32's data region
//! starts `k` clusters after exFAT's ClusterHeapOffset, so exFAT cluster
//! `n` is FAT32 cluster `n - k` at the same bytes. `k` is the smallest count for which 32 reserved
//! sectors (boot sector, FSInfo at 1, backup boot at 6, the intent record
//! at 24) and two FATs of `4 × (N - k + 2)` bytes fit before the data
//! region; the reserved sectors take what is left over. The clusters of
//! the first `k` in use are counted: exFAT's bitmap, up-case table and root
//! directory go away in FAT32; any other would be evacuated first
//! (`evac.rs`). The new directories (long and short entries) need free
//! clusters past the first `k`: refused with how much to free otherwise.
//!
//! The write path (the design, on the engine's promise): 1 the intent
//! record at reserved sector 24 (in exFAT's region before its FAT, or
//! before the heap), flush; 2 the evacuation of the first `k` clusters'
//! data, as the re-cluster's (`evac.rs`, its own switch at the exFAT
//! cluster size); 3 the two FATs (every chain, NoFatChain files' runs
//! written as chains, renumbered by `-k`) and every directory rewritten as
//! FAT entries (short names generated as Windows does: the basis name, a
//! `~n` tail unique in the directory; long names as LFN entries; times:
//! exFAT's UTC offset applied, then the local 2-second fields, the 10 ms
//! fields kept in CrtTimeTenth; attributes; the label as the root's volume
//! label entry) into clusters free in exFAT and outside its metadata, the
//! FSInfo and backup boot sector, flush; 4 sector 0: the FAT32 boot sector
//! (the serial as BS_VolID), flush ◄─ the switch; 5 the MBR type byte
//! 07h → 0Ch, the record zeroed. Until 4 the exFAT volume reads nothing
//! the job writes (its boot region but sector 0 is kept, the FATs go over
//! exFAT's FAT and the first `k` clusters, emptied first).

use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, Finding, RootDir};
use mkfs_alloc_inspect::FsKind;

use std::collections::BTreeMap;

use super::super::refusal::{refuse_findings, Refusal};
use super::super::{read_one_with, ReclusterError};

/// FAT32's fewest clusters (fatgen103 §3.5: 65,525 and more is FAT32).
const MIN_CLUSTERS: u64 = 65_525;
/// FAT32's most clusters (entries up to 0FFFFFF6h are cluster numbers).
const MAX_CLUSTERS: u64 = 0x0FFF_FFF5;
/// The reserved sectors of the FAT32 volume, at least.
const RESERVED: u64 = 32;
/// The most 32-byte entries a FAT directory holds (as asked of it).
const MAX_ENTRIES: u64 = 65_535;

/// What a conversion to FAT32 would do, in figures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fat32Plan {
    /// The cluster size (kept).
    pub cluster_size: u64,
    /// FAT32's clusters.
    pub cluster_count: u64,
    /// Reserved sectors.
    pub reserved_sectors: u64,
    /// Bytes of each of the two FATs.
    pub fat_bytes: u64,
    /// The data region's offset from the volume's start.
    pub data_offset: u64,
    /// exFAT heap clusters the FATs take (`k`: cluster `n` becomes `n - k`).
    pub shift: u64,
    /// Of those, in use by exFAT's bitmap, up-case table or root (they go
    /// away).
    pub metadata_covered: u64,
    /// Of those, in use by files or directories (to be evacuated first).
    pub evacuate: u64,
    /// Directories, the root included.
    pub directories: u64,
    /// Files.
    pub files: u64,
    /// Bytes the new directories take.
    pub directory_bytes: u64,
}

/// Reads the medium's one volume and plans its conversion to FAT32,
/// refusing (naming the first offending file) what FAT32 cannot hold.
/// Reads only.
///
/// # Errors
///
/// [`ReclusterError::Refused`] with the reason, [`ReclusterError::NoVolume`]
/// or the read error.
pub fn plan_fat32<D: BlockIo + ?Sized>(dev: &mut D) -> Result<Fat32Plan, ReclusterError> {
    let mut sets = Vec::new();
    let (model, _, _) = read_one_with(dev, &mut |s| sets.push(s.clone()))?;
    let g = &model.geometry;
    if g.kind != FsKind::Exfat {
        return Err(ReclusterError::unsupported(format!(
            "converting a {:?} volume to FAT32 (exFAT only)",
            g.kind
        )));
    }
    refuse_findings(&model, |_: &Finding| false).map_err(ReclusterError::Refused)?;
    // In the reader's walk order: the first offender is named.
    let mut per_dir: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &sets {
        check_entry(s)?;
        let (parent, name) = split(&s.path);
        let n = per_dir.entry(parent).or_insert(0);
        *n += entries_for(name);
        if *n + u64::from(!parent.is_empty()) * 2 > MAX_ENTRIES {
            return Err(does_not_fit(
                &s.path,
                &format!(
                    "its directory needs more than {MAX_ENTRIES} FAT entries with it (FAT's limit)"
                ),
            ));
        }
    }
    let c = g.cluster_size;
    let files = sets.iter().filter(|s| !s.is_dir).count() as u64;
    let directories = 1 + sets.len() as u64 - files;
    let clusters = |entries: u64| (entries * 32).div_ceil(c).max(1) * c;
    let mut dir_bytes = clusters(per_dir.get("").copied().unwrap_or(0));
    for s in sets.iter().filter(|s| s.is_dir) {
        dir_bytes += clusters(per_dir.get(s.path.as_str()).copied().unwrap_or(0) + 2);
    }
    layout(&model, directories, files, dir_bytes)
}

/// The FAT32 layout (module docs) and the space check.
fn layout(
    model: &mkfs_alloc_inspect::model::VolumeModel,
    directories: u64,
    files: u64,
    directory_bytes: u64,
) -> Result<Fat32Plan, ReclusterError> {
    let g = &model.geometry;
    let (s, c) = (u64::from(g.sector_size), g.cluster_size);
    let n = u64::from(g.cluster_count);
    let heap = g.data_offset - g.start;
    let fat = |k: u64| (4 * (n - k + 2)).div_ceil(s) * s;
    let mut k = 0u64;
    while RESERVED * s + 2 * fat(k) > heap + k * c {
        k += 1;
        if k >= n {
            return Err(ReclusterError::unsupported(
                "a volume whose FATs would take every cluster".into(),
            ));
        }
    }
    let count = n - k;
    if !(MIN_CLUSTERS..=MAX_CLUSTERS).contains(&count) {
        return Err(ReclusterError::unsupported(format!(
            "{count} clusters of {c} bytes: FAT32 takes {MIN_CLUSTERS}..={MAX_CLUSTERS} (another cluster size first: `mkfs-alloc recluster`)"
        )));
    }
    let data_offset = heap + k * c;
    let reserved_sectors = (data_offset - 2 * fat(k)) / s;
    if reserved_sectors > u64::from(u16::MAX) {
        return Err(ReclusterError::unsupported(format!(
            "{reserved_sectors} reserved sectors (FAT32 takes at most 65,535)"
        )));
    }
    let span = |r: Option<(u32, u64)>| {
        r.map(|(first, bytes)| u64::from(first)..u64::from(first) + bytes.div_ceil(c).max(1))
    };
    let meta = [span(model.bitmap), span(model.upcase)];
    let root = match g.root {
        RootDir::Cluster(r) => u64::from(r),
        _ => 0,
    };
    let (mut metadata_covered, mut evacuate) = (0, 0);
    for cl in 2..2 + k {
        let Ok(cl32) = u32::try_from(cl) else { break };
        if !model.used.get(cl32) {
            continue;
        }
        if cl == root || meta.iter().flatten().any(|r| r.contains(&cl)) {
            metadata_covered += 1;
        } else {
            evacuate += 1;
        }
    }
    let free = (2 + k..2 + n)
        .filter(|&cl| u32::try_from(cl).is_ok_and(|x| !model.used.get(x)))
        .count() as u64
        * c;
    let need = directory_bytes + evacuate * c;
    if need > free {
        return Err(ReclusterError::Refused(Refusal::TooLittleSpace {
            need,
            free,
        }));
    }
    Ok(Fat32Plan {
        cluster_size: c,
        cluster_count: count,
        reserved_sectors,
        fat_bytes: fat(k),
        data_offset,
        shift: k,
        metadata_covered,
        evacuate,
        directories,
        files,
        directory_bytes,
    })
}

/// `/dir/name` as (`/dir` or `""` for the root, `name`).
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// The 32-byte entries a child named `name` takes in a FAT directory: one
/// short entry, and the long name's entries unless the name is its own
/// short name (upper case 8.3).
fn entries_for(name: &str) -> u64 {
    let units = name.encode_utf16().count() as u64;
    if is_short(name) {
        1
    } else {
        1 + units.div_ceil(13)
    }
}

/// Whether `name` is a valid upper-case 8.3 short name as it is.
fn is_short(name: &str) -> bool {
    let (base, ext) = name.split_once('.').unwrap_or((name, ""));
    let ok = |p: &str, max: usize| {
        p.len() <= max
            && p.bytes().all(|b| {
                b.is_ascii_uppercase() || b.is_ascii_digit() || b"!#$%&'()-@^_`{}~".contains(&b)
            })
    };
    !base.is_empty() && ok(base, 8) && ok(ext, 3) && !ext.contains('.')
}

/// The refusal naming `path`.
fn does_not_fit(path: &str, why: &str) -> ReclusterError {
    ReclusterError::Refused(Refusal::DoesNotFit {
        path: path.into(),
        why: format!("FAT32 cannot hold it: {why}"),
    })
}

/// The refusals of one file or directory (module docs).
fn check_entry(s: &EntrySet) -> Result<(), ReclusterError> {
    let bad = |why: &str| Err(does_not_fit(&s.path, why));
    if !s.is_dir && s.size > u64::from(u32::MAX) {
        return bad("a file of 4 GiB or more (FAT's file size is 32 bits)");
    }
    let (_, name) = split(&s.path);
    let units = name.encode_utf16().count();
    if units == 0 || units > 255 {
        return bad("a name FAT's long names cannot hold (1 to 255 characters)");
    }
    if name
        .chars()
        .any(|ch| (ch as u32) < 0x20 || "\"*/:<>?\\|".contains(ch))
    {
        return bad("a name with a character FAT's long names do not take");
    }
    if name.ends_with(' ') || name.ends_with('.') {
        return bad("a name ending in a space or a period (FAT drivers drop those)");
    }
    Ok(())
}

/// Runs the conversion to FAT32 on `dev`: not supported yet, so it
/// refuses (after [`plan_fat32`]'s own refusals), writing nothing.
///
/// # Errors
///
/// Always: [`plan_fat32`]'s refusal, or
/// [`Refusal::Unsupported`] for the write path.
pub fn run_fat32<D: BlockIo + ?Sized>(dev: &mut D) -> Result<Fat32Plan, ReclusterError> {
    plan_fat32(dev)?;
    Err(ReclusterError::unsupported(
        "writing the FAT32 volume (the checks and the plan are done; the plan is printed by a dry run)".into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mkfs_alloc_inspect::model::EntryPos;

    fn set(path: &str, size: u64, is_dir: bool) -> EntrySet {
        EntrySet {
            path: path.into(),
            is_dir,
            size,
            first_cluster: 0,
            contiguous: false,
            clusters: 0,
            fragments: 0,
            at: EntryPos {
                cluster: None,
                offset: 0,
                entries: 3,
            },
        }
    }

    #[test]
    fn names_and_sizes_fat32_cannot_hold_are_refused_by_path() {
        assert!(check_entry(&set("/a/b.txt", u64::from(u32::MAX), false)).is_ok());
        assert!(check_entry(&set("/dir", 8 << 30, true)).is_ok());
        for (path, size, said) in [
            ("/a/big.bin", 1 << 32, "4 GiB"),
            ("/a/trailing.", 1, "period"),
            ("/a/trailing ", 1, "space"),
            ("/a/ta\u{1}b", 1, "character"),
        ] {
            let e = check_entry(&set(path, size, false)).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(path) && text.contains(said), "{text}");
        }
    }

    #[test]
    fn a_child_takes_its_short_entry_and_its_long_name_entries() {
        assert_eq!(entries_for("README.TXT"), 1);
        assert_eq!(entries_for("readme.txt"), 2);
        assert_eq!(entries_for("A long photo name 0001.jpeg"), 1 + 3);
        assert_eq!(entries_for(&"x".repeat(255)), 1 + 20);
        assert_eq!(split("/a/b c"), ("/a", "b c"));
        assert_eq!(split("/top"), ("", "top"));
    }
}
