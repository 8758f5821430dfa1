//! Boot sector parsers (exFAT boot region, FAT BPB) and a whole inspection
//! of a small medium whose first sectors are the input.
//!
//! The first input byte picks a mode: raw bytes; an exFAT boot region with
//! its name, MustBeZero bytes and checksum made valid (so the fuzzer gets
//! past the checksum); or a FAT boot sector with a valid jump and signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::{exfat, fat, inspect, InspectOptions};
use mkfs_alloc_ondisk::exfat::boot_checksum;

fuzz_target!(|data: &[u8]| {
    let _ = exfat::parse_boot_region(data);
    let _ = fat::parse_boot_sector(data);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    // At least 24 sectors of 512 bytes (both exFAT boot regions), at most
    // 1 MiB, a whole number of sectors.
    let len = rest.len().clamp(24 * 512, 1 << 20).div_ceil(512) * 512;
    let mut img = vec![0u8; len];
    let n = rest.len().min(len);
    img[..n].copy_from_slice(&rest[..n]);
    match mode % 3 {
        1 => {
            img[..3].copy_from_slice(&[0xEB, 0x76, 0x90]);
            img[3..11].copy_from_slice(b"EXFAT   ");
            img[11..64].fill(0);
            let bps = 1usize << img[108].clamp(9, 12);
            img[108] = bps.trailing_zeros() as u8;
            if img.len() >= 12 * bps {
                let c = boot_checksum(&img[..11 * bps]);
                for w in img[11 * bps..12 * bps].chunks_exact_mut(4) {
                    w.copy_from_slice(&c.to_le_bytes());
                }
            }
        }
        2 => {
            img[..3].copy_from_slice(&[0xEB, 0x58, 0x90]);
            img[510] = 0x55;
            img[511] = 0xAA;
        }
        _ => {}
    }
    let Ok(mut disk) = MemDisk::from_vec(512, img) else {
        return;
    };
    let opts = InspectOptions {
        files: true,
        list_files: true,
        ..InspectOptions::default()
    };
    let _ = inspect(&mut disk, &opts);
});
