//! mkfs.fat (dosfstools 4.2): its width and cluster size, checked against
//! this crate's planner, and the alignment and root directory to plan with.

use super::dosfs::{self, DosfsInput};
use super::{Decision, Medium, Note, Placing};
use mkfs_alloc_layout::{BiosParams, ClusterChoice, FsChoice, FsKind};

/// What mkfs.fat's options ask for (each `None`/`false` when not given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FatRequest {
    /// `-F`: 12, 16 or 32.
    pub fat_bits: Option<u8>,
    /// `-s`: sectors per cluster.
    pub spc: Option<u32>,
    /// `-a`: no alignment beyond the sector.
    pub no_align: bool,
    /// `-r`: root directory entries.
    pub root_entries: Option<u32>,
    /// An alignment in bytes the caller fixes (no other is chosen then).
    pub align: Option<u64>,
    /// `-f`: the number of FATs.
    pub fats: Option<u8>,
}

/// The width and cluster size: mkfs.fat's, unless this crate's
/// cluster-count margins refuse it; then the nearest cluster size of the
/// same width, and last the width the size gives (each a [`Note`]). The
/// root directory is mkfs.fat's (rounded to whole clusters where it
/// aligns), and the alignment [`scaled_align`]'s.
pub fn decide_fat(req: &FatRequest, m: &Medium) -> Decision {
    let ss = u64::from(m.sector);
    let choice = dosfs::choose(&DosfsInput {
        bytes: m.bytes,
        sector: m.sector,
        fat_bits: req.fat_bits,
        spc: req.spc,
        root_entries: req.root_entries,
        align: !req.no_align,
        not_fixed: m.not_fixed,
    });
    // A classic floppy's boot sector fields, as mkfs.fat writes them.
    let bios = choice
        .and_then(|c| c.floppy)
        .map(|(media, sectors_per_track)| BiosParams {
            media,
            sectors_per_track,
            heads: 2,
            drive: 0x00,
        });
    let aligned = choice.map_or(!req.no_align && m.bytes / ss > 8192, |c| c.aligned);
    let root_given = req.root_entries.unwrap_or(512);
    // What is planned at `bytes` clusters of width `fs`: the alignment, and
    // mkfs.fat's root directory entries at that cluster size.
    let at = |fs: FsKind, bytes: u64| Placing {
        align: req.align.unwrap_or_else(|| scaled_align(m, aligned, bytes)),
        root_entries: (fs != FsKind::Fat32).then(|| {
            let root = choice.map_or(root_given, |c| c.root_entries);
            dosfs::root_entries_written(root, m.sector, (bytes / ss).max(1), aligned)
        }),
    };
    let mut notes = Vec::new();
    if let (Some(32), Some(_)) = (choice.map(|c| c.fat_bits), req.root_entries) {
        notes.push(Note::RootEntriesOnFat32);
    }
    let decision = |fs: FsChoice, cluster: ClusterChoice, p: Placing, notes: Vec<Note>| Decision {
        fs,
        cluster,
        root_entries: p.root_entries,
        align: Some(p.align),
        bios,
        notes,
    };
    let Some(c) = choice else {
        // mkfs.fat gives up here; the planner decides (and may refuse).
        let fs = req
            .fat_bits
            .map_or(FsChoice::Fat, |b| FsChoice::Fixed(width(b)));
        let (cluster, bytes) = match req.spc {
            Some(s) => (ClusterChoice::Bytes(u64::from(s) * ss), u64::from(s) * ss),
            None => (ClusterChoice::Auto, ss),
        };
        let p = Placing {
            root_entries: req.root_entries,
            ..at(FsKind::Fat32, bytes)
        };
        return decision(fs, cluster, p, notes);
    };
    let (fs, cluster) = (width(c.fat_bits), u64::from(c.spc) * ss);
    let accepts = |bytes: u64| {
        m.accepts(
            FsChoice::Fixed(fs),
            ClusterChoice::Bytes(bytes),
            at(fs, bytes),
            req.fats,
        )
    };
    if req.spc.is_some() || accepts(cluster).is_some() {
        let p = at(fs, cluster);
        return decision(fs.into(), ClusterChoice::Bytes(cluster), p, notes);
    }
    let outside = |instead| Note::OutsideMargins {
        fs,
        cluster,
        clusters: c.clusters,
        instead,
    };
    for k in [1u32, 2] {
        for bytes in [cluster >> k, cluster << k] {
            if bytes < ss || bytes > 64 << 10 {
                continue;
            }
            if let Some((_, n)) = accepts(bytes) {
                notes.push(outside(Some((bytes, n))));
                let p = at(fs, bytes);
                return decision(fs.into(), ClusterChoice::Bytes(bytes), p, notes);
            }
        }
    }
    notes.push(outside(None));
    let p = Placing {
        root_entries: req.root_entries,
        ..at(FsKind::Fat32, ss)
    };
    decision(FsChoice::Fat, ClusterChoice::Auto, p, notes)
}

/// The file system of a FAT width of 12, 16 or 32 bits.
fn width(bits: u8) -> FsKind {
    match bits {
        12 => FsKind::Fat12,
        16 => FsKind::Fat16,
        _ => FsKind::Fat32,
    }
}

/// The alignment of the FAT and the data region (from the medium's start)
/// to plan with: none beyond the sector where mkfs.fat aligns nothing
/// (8,192 sectors or fewer, or `-a`); else the largest power of two that is
/// at most 1/256 of the volume, capped at 1 MiB (or the device's optimal
/// I/O size, if larger) and at least `cluster` (mkfs.fat aligns to the
/// cluster size). The padding costs at most twice the alignment, under 1 %
/// of the volume beyond what mkfs.fat's own alignment costs.
pub fn scaled_align(m: &Medium, aligned: bool, cluster: u64) -> u64 {
    let ss = u64::from(m.sector);
    if !aligned {
        return ss;
    }
    let cap = m.align.unwrap_or(1 << 20);
    let share = m.bytes / 256;
    let share = if share == 0 {
        0
    } else {
        1u64 << (63 - share.leading_zeros())
    };
    share.min(cap).max(cluster).max(ss)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(bytes: u64) -> Medium {
        Medium {
            bytes,
            block: 512,
            sector: 512,
            not_fixed: true,
            align: None,
        }
    }

    /// The alignment scales with the volume: none where mkfs.fat aligns
    /// nothing, 1/256 of the volume up to 1 MiB, at least a cluster.
    #[test]
    fn alignment_scales_with_the_volume() {
        const K: u64 = 1024;
        assert_eq!(scaled_align(&image(128 * K), false, 2048), 512);
        assert_eq!(scaled_align(&image(4096 * K), true, 2048), 16 * K);
        assert_eq!(scaled_align(&image(8192 * K), true, 2048), 32 * K);
        assert_eq!(scaled_align(&image(32768 * K), true, 2048), 128 * K);
        assert_eq!(scaled_align(&image(300 * K * K), true, 8192), K * K);
        assert_eq!(scaled_align(&image(300 * K * K), true, 64 * K), K * K);
        assert_eq!(scaled_align(&image(16384 * K), true, 64 * K), 64 * K);
        let device = Medium {
            align: Some(4 * K * K),
            ..image(8 * K * K * K)
        };
        assert_eq!(scaled_align(&device, true, 4096), 4 * K * K);
    }

    /// The 1.44 MB floppy: FAT12 at one sector per cluster, 224 root
    /// entries and the floppy's BIOS fields, as mkfs.fat writes it.
    #[test]
    fn a_floppy_image_gets_the_floppys_volume() {
        let d = decide_fat(&FatRequest::default(), &image(1440 << 10));
        assert_eq!(d.fs, FsChoice::Fixed(FsKind::Fat12));
        assert_eq!(d.cluster, ClusterChoice::Bytes(512));
        assert_eq!(d.root_entries, Some(224));
        let bios = d.bios.expect("a floppy's BIOS fields");
        assert_eq!(
            (bios.media, bios.sectors_per_track, bios.heads),
            (0xF0, 18, 2)
        );
        assert!(d.notes.is_empty());
    }

    /// FAT32 has no root directory entries to set: said in a note.
    #[test]
    fn root_entries_on_fat32_are_noted() {
        let req = FatRequest {
            fat_bits: Some(32),
            root_entries: Some(112),
            ..FatRequest::default()
        };
        let d = decide_fat(&req, &image(300 << 20));
        assert_eq!(d.fs, FsChoice::Fixed(FsKind::Fat32));
        assert_eq!(d.root_entries, None);
        assert_eq!(d.notes, [Note::RootEntriesOnFat32]);
    }

    /// Where mkfs.fat's own choice falls outside the planner's margins, the
    /// decision moves to a cluster size that plans, and says so.
    #[test]
    fn a_choice_outside_the_margins_moves_and_is_noted() {
        let mut moved = 0;
        for kib in (2048..=65536u64).step_by(64) {
            let m = image(kib << 10);
            let d = decide_fat(&FatRequest::default(), &m);
            if let Some(Note::OutsideMargins {
                cluster, instead, ..
            }) = d.notes.first()
            {
                moved += 1;
                if let Some((bytes, _)) = instead {
                    assert_ne!(bytes, cluster, "{kib} KiB");
                    assert_eq!(d.cluster, ClusterChoice::Bytes(*bytes), "{kib} KiB");
                } else {
                    assert_eq!(d.cluster, ClusterChoice::Auto, "{kib} KiB");
                }
            } else {
                let ClusterChoice::Bytes(b) = d.cluster else {
                    panic!("{kib} KiB: mkfs.fat's cluster size is kept");
                };
                let fs = match d.fs {
                    FsChoice::Fixed(fs) => fs,
                    other => panic!("{kib} KiB: {other:?}"),
                };
                let p = Placing {
                    align: d.align.unwrap_or(512),
                    root_entries: d.root_entries,
                };
                assert!(
                    m.accepts(d.fs, ClusterChoice::Bytes(b), p, None)
                        .is_some_and(|(k, _)| k == fs),
                    "{kib} KiB: the decision plans"
                );
            }
        }
        assert!(
            moved > 0,
            "some size in 2..64 MiB falls outside the margins"
        );
    }

    /// The decision planned through the facade's options: the 720 KiB
    /// floppy mkfs.fat makes (FAT12, two sectors per cluster, 112 root
    /// entries, the floppy's BIOS fields).
    #[test]
    fn a_decision_plans_through_the_facades_options() {
        let m = image(720 << 10);
        let d = decide_fat(&FatRequest::default(), &m);
        let opts = d
            .apply_to(crate::MediumOptions::default())
            .expect("applies");
        let serial = opts.format_options().clone().serial(0);
        let opts = opts.format(serial);
        let plan = opts.plan(m.bytes, m.block).expect("plans");
        let l = plan.layout();
        assert_eq!((l.fs(), l.cluster_size().bytes()), (FsKind::Fat12, 1024));
        assert_eq!(plan.table().partition_start(), 0, "no partition table");
        assert_eq!(opts.format_options().given_root_entries(), Some(112));
        assert_eq!(
            opts.format_options().given_bios().map(|b| b.media),
            Some(0xF9)
        );
    }
}
