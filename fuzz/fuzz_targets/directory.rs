//! Directory parsers (exFAT entry sets, FAT short and long names), and the
//! directory walk over a valid small volume whose FAT and directory
//! clusters are overwritten by the input.
//!
//! The first input byte picks exFAT (made by our own formatter, 1 MiB,
//! 512-byte clusters) or FAT32 (hand-built, 2 MiB, 512-byte clusters). The
//! next 256 bytes overwrite FAT entries after the system clusters; the rest
//! overwrites the cluster heap from the root directory on. The report must
//! keep `common::inspect_checked`'s invariants. (exFAT entry sets need a
//! valid checksum: the `tree` target builds whole trees of valid sets.)
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mkfs_alloc_inspect::{exfat, fat};

mod common;
use common::{exfat_template, fat32_template, inspect_checked, Template};

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
    inspect_checked(img);
});
