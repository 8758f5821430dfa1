//! What the directory targets share: the two small volumes whose
//! directories they overwrite, and the inspection with the invariants every
//! report must keep, whatever the input.
// Each target uses part of it.
#![allow(dead_code)]

use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::{inspect, read_volumes, Finding, InspectOptions, Limits, ModelOptions};
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsKind, Medium,
};

/// An image and where to patch it: (bytes, FAT patch offset, heap patch offset).
pub struct Template {
    pub img: Vec<u8>,
    pub fat_patch: usize,
    pub heap_patch: usize,
}

pub fn exfat_template() -> Template {
    let opts = FormatOptions::new()
        .fs(FsChoice::Fixed(FsKind::Exfat))
        .cluster(ClusterChoice::Bytes(512))
        .label("FUZZ")
        .serial(1);
    let layout = plan(&opts, &Medium::whole(1 << 20, 512).expect("medium")).expect("plan");
    let mut disk = MemDisk::new(512, 2048).expect("disk");
    write_volume(&layout, &mut disk, &mut |_, _| {}).expect("write");
    let root = match layout.geometry() {
        mkfs_alloc_layout::plan::Geometry::Exfat(g) => g.root_cluster(),
        _ => unreachable!(),
    };
    let heap = layout.cluster_offset(root) as usize;
    // Keep the root's first 96 bytes (label, bitmap, up-case entries).
    Template {
        img: disk.into_inner(),
        fat_patch: layout.fat_offset() as usize + 4 * (u32::from(root) as usize + 1),
        heap_patch: heap + 96,
    }
}

pub fn fat32_template() -> Template {
    let (bps, rsvd, nfats, tot, fatsz) = (512usize, 32usize, 2usize, 4096u32, 32usize);
    let mut img = vec![0u8; tot as usize * bps];
    let s = &mut img[..512];
    s[..3].copy_from_slice(&[0xEB, 0x58, 0x90]);
    s[3..11].copy_from_slice(b"MSWIN4.1");
    s[11..13].copy_from_slice(&(bps as u16).to_le_bytes());
    s[13] = 1;
    s[14..16].copy_from_slice(&(rsvd as u16).to_le_bytes());
    s[16] = nfats as u8;
    s[21] = 0xF8;
    s[32..36].copy_from_slice(&tot.to_le_bytes());
    s[36..40].copy_from_slice(&(fatsz as u32).to_le_bytes());
    s[44..48].copy_from_slice(&2u32.to_le_bytes());
    s[48..50].copy_from_slice(&1u16.to_le_bytes());
    s[50..52].copy_from_slice(&6u16.to_le_bytes());
    s[66] = 0x29;
    s[67..71].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    s[71..82].copy_from_slice(b"FUZZ       ");
    s[82..90].copy_from_slice(b"FAT32   ");
    s[510] = 0x55;
    s[511] = 0xAA;
    for f in 0..nfats {
        let o = (rsvd + f * fatsz) * bps;
        img[o..o + 12].copy_from_slice(&[
            0xF8, 0xFF, 0xFF, 0x0F, 0xFF, 0xFF, 0xFF, 0x0F, 0xFF, 0xFF, 0xFF, 0x0F,
        ]);
    }
    Template {
        img,
        fat_patch: rsvd * bps + 12,
        heap_patch: (rsvd + nfats * fatsz) * bps,
    }
}

/// Inspects `img` with `--files` and checks what no input may break: a file
/// or directory never counts more than the cluster heap holds (a length the
/// volume cannot hold is damage), so no total exceeds the
/// heap times the number of entries.
pub fn inspect_checked(img: Vec<u8>) {
    let Ok(mut disk) = MemDisk::from_vec(512, img) else {
        return;
    };
    let opts = InspectOptions {
        files: true,
        list_files: true,
        limits: Limits {
            max_warnings: 10,
            ..Limits::default()
        },
    };
    let Ok(report) = inspect(&mut disk, &opts) else {
        return;
    };
    for v in &report.volumes {
        let (Some(f), Some(cs), Some(cc)) = (&v.files, v.cluster_size, v.cluster_count) else {
            continue;
        };
        let heap = cs.saturating_mul(cc);
        for e in f.entries.iter().flatten() {
            assert!(
                e.allocated_bytes <= heap,
                "{} takes {} bytes, the heap holds {heap}",
                e.path,
                e.allocated_bytes
            );
        }
        assert!(f.allocated_bytes <= f.count.saturating_mul(heap), "{f:?}");
        assert!(f.total_bytes <= f.allocated_bytes, "{f:?}");
        assert!(f.dir_bytes <= (f.dirs + 1).saturating_mul(heap), "{f:?}");
        if v.warnings.iter().any(|w| w.ends_with("; not read")) {
            assert!(!f.complete, "a directory was not read: {v:?}");
        }
    }
    model_checked(&mut disk);
}

/// The whole-volume model of the same image: no panic, the cluster bits and
/// findings within their bounds, the refusal predicate consistent.
fn model_checked(disk: &mut MemDisk) {
    let opts = ModelOptions {
        limits: Limits {
            max_warnings: 10,
            ..Limits::default()
        },
    };
    let mut sets = 0u64;
    let Ok(models) = read_volumes(disk, &opts, &mut |_| sets += 1) else {
        return;
    };
    for m in models.into_iter().flatten() {
        let cc = u64::from(m.geometry.cluster_count);
        assert!(m.used.count_set() <= cc, "{m:?}");
        assert!(m.findings.len() <= 10, "{m:?}");
        let refuses = m.findings.iter().any(Finding::refuses_change) || m.findings_dropped > 0;
        assert_eq!(m.refused(), refuses, "{m:?}");
        assert!(m.files + m.dirs <= sets, "{m:?}");
    }
}
