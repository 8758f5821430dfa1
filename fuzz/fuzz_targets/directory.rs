//! Directory parsers (exFAT entry sets, FAT short and long names), and the
//! directory walk over a valid small volume whose FAT and directory
//! clusters are overwritten by the input.
//!
//! The first input byte picks exFAT (made by our own formatter, 1 MiB,
//! 512-byte clusters) or FAT32 (hand-built, 2 MiB, 512-byte clusters). The
//! next 256 bytes overwrite FAT entries after the system clusters; the rest
//! overwrites the cluster heap from the root directory on.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::{exfat, fat, inspect, InspectOptions, Limits};
use mkfs_alloc_layout::{
    plan, write_volume, ClusterChoice, FormatOptions, FsChoice, FsType, Medium,
};

/// An image and where to patch it: (bytes, FAT patch offset, heap patch offset).
struct Template {
    img: Vec<u8>,
    fat_patch: usize,
    heap_patch: usize,
}

fn exfat_template() -> Template {
    let opts = FormatOptions::new().fs(FsChoice::Fixed(FsType::Exfat)).cluster(ClusterChoice::Bytes(512)).label("FUZZ").serial(1);
    let layout = plan(&opts, &Medium::whole(1 << 20, 512)).expect("plan");
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
        fat_patch: layout.fat_offset() as usize + 4 * (root as usize + 1),
        heap_patch: heap + 96,
    }
}

fn fat32_template() -> Template {
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

static TEMPLATES: OnceLock<[Template; 2]> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let _ = exfat::parse_directory(data);
    let _ = fat::parse_directory(data, true);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let t = &TEMPLATES.get_or_init(|| [exfat_template(), fat32_template()])[usize::from(mode % 2)];
    let mut img = t.img.clone();
    let (fat_part, heap_part) = rest.split_at(rest.len().min(256));
    img[t.fat_patch..t.fat_patch + fat_part.len()].copy_from_slice(fat_part);
    let n = heap_part.len().min(img.len() - t.heap_patch);
    img[t.heap_patch..t.heap_patch + n].copy_from_slice(&heap_part[..n]);
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
    let _ = inspect(&mut disk, &opts);
});
