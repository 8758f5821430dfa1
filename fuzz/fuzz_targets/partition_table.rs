//! MBR and GPT parsers, and the partition table reader over a medium whose
//! first sectors are the input.
//!
//! The first input byte picks a mode: raw bytes, or a GPT whose signature,
//! MyLBA and CRCs are made valid (so the fuzzer reaches the entries).
#![no_main]

use crc::{Crc, CRC_32_ISO_HDLC};
use libfuzzer_sys::fuzz_target;
use mkfs_alloc_blockio::MemDisk;
use mkfs_alloc_inspect::{inspect, partition, read_partition_table, InspectOptions};

const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

fuzz_target!(|data: &[u8]| {
    let _ = partition::parse_mbr(data);
    let _ = partition::parse_gpt_header(data, 1);
    let mut warnings = Vec::new();
    let _ = partition::parse_gpt_entries(data, 128, 512, &mut warnings);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let len = rest.len().clamp(64 * 512, 1 << 20).div_ceil(512) * 512;
    let mut img = vec![0u8; len];
    let n = rest.len().min(len);
    img[..n].copy_from_slice(&rest[..n]);
    if mode % 2 == 1 {
        // Protective MBR, GPT header at LBA 1, entries from LBA 2 (the
        // entry count comes from the input, capped so the array fits).
        img[446 + 4] = 0xEE;
        img[510] = 0x55;
        img[511] = 0xAA;
        let h = &mut img[512..1024];
        h[..8].copy_from_slice(b"EFI PART");
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&1u64.to_le_bytes());
        h[72..80].copy_from_slice(&2u64.to_le_bytes());
        let count = u32::from_le_bytes([h[80], h[81], h[82], h[83]]) % 64;
        h[80..84].copy_from_slice(&count.to_le_bytes());
        h[84..88].copy_from_slice(&128u32.to_le_bytes());
        let array_len = count as usize * 128;
        let crc = CRC32.checksum(&img[1024..1024 + array_len]);
        img[512 + 88..512 + 92].copy_from_slice(&crc.to_le_bytes());
        img[512 + 16..512 + 20].fill(0);
        let hcrc = CRC32.checksum(&img[512..512 + 92]);
        img[512 + 16..512 + 20].copy_from_slice(&hcrc.to_le_bytes());
    }
    let Ok(mut disk) = MemDisk::from_vec(512, img) else {
        return;
    };
    let _ = read_partition_table(&mut disk);
    let _ = inspect(&mut disk, &InspectOptions::default());
});
