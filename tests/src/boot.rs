//! Independent decoders of the boot fields of exFAT and FAT32 images.
//!
//! Written from the specifications (exFAT spec §3.1, §7; fatgen103 BPB and
//! FSInfo tables), not from the layout crate, so a
//! field misplaced by the formatter is not "confirmed" by the same mistake.

use crate::image::read_at;
use std::path::Path;

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// The fields of an exFAT main boot sector (spec §3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExfatBoot {
    /// JumpBoot (EB 76 90).
    pub jump_boot: [u8; 3],
    /// FileSystemName ("EXFAT   ").
    pub file_system_name: [u8; 8],
    /// True when the 53 MustBeZero bytes are zero.
    pub must_be_zero_ok: bool,
    /// PartitionOffset (sectors).
    pub partition_offset: u64,
    /// VolumeLength (sectors).
    pub volume_length: u64,
    /// FatOffset (sectors).
    pub fat_offset: u32,
    /// FatLength (sectors).
    pub fat_length: u32,
    /// ClusterHeapOffset (sectors).
    pub cluster_heap_offset: u32,
    /// ClusterCount.
    pub cluster_count: u32,
    /// FirstClusterOfRootDirectory.
    pub root_cluster: u32,
    /// VolumeSerialNumber.
    pub serial: u32,
    /// FileSystemRevision (0x0100).
    pub revision: u16,
    /// VolumeFlags.
    pub volume_flags: u16,
    /// BytesPerSectorShift.
    pub bytes_per_sector_shift: u8,
    /// SectorsPerClusterShift.
    pub sectors_per_cluster_shift: u8,
    /// NumberOfFats.
    pub number_of_fats: u8,
    /// DriveSelect.
    pub drive_select: u8,
    /// PercentInUse.
    pub percent_in_use: u8,
    /// BootSignature (0xAA55).
    pub boot_signature: u16,
}

impl ExfatBoot {
    /// Decodes the first 512 bytes of `sector0`.
    pub fn from_bytes(b: &[u8]) -> ExfatBoot {
        let mut jump_boot = [0u8; 3];
        jump_boot.copy_from_slice(&b[0..3]);
        let mut file_system_name = [0u8; 8];
        file_system_name.copy_from_slice(&b[3..11]);
        ExfatBoot {
            jump_boot,
            file_system_name,
            must_be_zero_ok: b[11..64].iter().all(|&x| x == 0),
            partition_offset: u64_at(b, 64),
            volume_length: u64_at(b, 72),
            fat_offset: u32_at(b, 80),
            fat_length: u32_at(b, 84),
            cluster_heap_offset: u32_at(b, 88),
            cluster_count: u32_at(b, 92),
            root_cluster: u32_at(b, 96),
            serial: u32_at(b, 100),
            revision: u16_at(b, 104),
            volume_flags: u16_at(b, 106),
            bytes_per_sector_shift: b[108],
            sectors_per_cluster_shift: b[109],
            number_of_fats: b[110],
            drive_select: b[111],
            percent_in_use: b[112],
            boot_signature: u16_at(b, 510),
        }
    }

    /// Reads the boot sector of the volume starting at byte `offset` of `image`.
    #[track_caller]
    pub fn read(image: &Path, offset: u64) -> ExfatBoot {
        Self::from_bytes(&read_at(image, offset, 512))
    }

    /// Bytes per sector.
    pub fn bytes_per_sector(&self) -> u64 {
        1u64 << self.bytes_per_sector_shift
    }

    /// Bytes per cluster.
    pub fn cluster_size(&self) -> u64 {
        self.bytes_per_sector() << self.sectors_per_cluster_shift
    }

    /// Byte offset of cluster `n` from the volume start.
    pub fn cluster_offset(&self, n: u32) -> u64 {
        u64::from(self.cluster_heap_offset) * self.bytes_per_sector()
            + u64::from(n - 2) * self.cluster_size()
    }
}

/// What the root directory of an exFAT volume declares (spec §7.1-7.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExfatRootInfo {
    /// The volume label (0x83), if the entry exists.
    pub label: Option<String>,
    /// Allocation bitmap (0x81): first cluster and length in bytes.
    pub bitmap: Option<(u32, u64)>,
    /// Up-case table (0x82): first cluster, length in bytes and TableChecksum.
    pub upcase: Option<(u32, u64, u32)>,
    /// True if a volume GUID entry (0xA0) exists.
    pub has_guid: bool,
    /// Entry types in order, up to the first end-of-directory entry.
    pub entry_types: Vec<u8>,
    /// True when every entry after the first 0x00 entry of the first root
    /// cluster is 0x00 too.
    pub clean_end: bool,
}

impl ExfatRootInfo {
    /// Reads the first cluster of the root directory of the volume at `offset`.
    #[track_caller]
    pub fn read(image: &Path, offset: u64, boot: &ExfatBoot) -> ExfatRootInfo {
        let len = usize::try_from(boot.cluster_size().min(1 << 20)).unwrap_or(1 << 20);
        let dir = read_at(image, offset + boot.cluster_offset(boot.root_cluster), len);
        let mut info = ExfatRootInfo {
            clean_end: true,
            ..ExfatRootInfo::default()
        };
        let mut ended = false;
        for e in dir.chunks_exact(32) {
            if ended {
                if e[0] != 0 {
                    info.clean_end = false;
                }
                continue;
            }
            match e[0] {
                0x00 => ended = true,
                0x83 => {
                    let n = usize::from(e[1].min(11));
                    let units: Vec<u16> = (0..n).map(|i| u16_at(e, 2 + 2 * i)).collect();
                    info.label = Some(String::from_utf16_lossy(&units));
                }
                0x81 => info.bitmap = Some((u32_at(e, 20), u64_at(e, 24))),
                0x82 => info.upcase = Some((u32_at(e, 20), u64_at(e, 24), u32_at(e, 4))),
                0xA0 => info.has_guid = true,
                _ => {}
            }
            if !ended {
                info.entry_types.push(e[0]);
            }
        }
        info
    }
}

/// Reads the up-case table of the exFAT volume at byte `offset` of `image`
/// (contiguous from its first cluster, as every formatter writes it).
#[track_caller]
pub fn exfat_upcase_table(image: &Path, offset: u64) -> (Vec<u8>, u32) {
    let boot = ExfatBoot::read(image, offset);
    let root = ExfatRootInfo::read(image, offset, &boot);
    let (cluster, len, checksum) = root
        .upcase
        .unwrap_or_else(|| panic!("no up-case entry in {}", image.display()));
    let len = usize::try_from(len).expect("up-case table length fits in usize");
    (
        read_at(image, offset + boot.cluster_offset(cluster), len),
        checksum,
    )
}

/// The exFAT rotate-add checksum (spec §3.4 and §7.2.2), over all bytes.
pub fn exfat_checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |c, &b| {
        (if c & 1 != 0 { 0x8000_0000u32 } else { 0 })
            .wrapping_add(c >> 1)
            .wrapping_add(u32::from(b))
    })
}

/// The exFAT boot checksum (spec §3.4) over sectors 0..=10, skipping
/// VolumeFlags (bytes 106, 107) and PercentInUse (byte 112).
pub fn exfat_boot_checksum(sectors: &[u8]) -> u32 {
    sectors
        .iter()
        .enumerate()
        .filter(|(i, _)| ![106, 107, 112].contains(i))
        .fold(0u32, |c, (_, &b)| {
            (if c & 1 != 0 { 0x8000_0000u32 } else { 0 })
                .wrapping_add(c >> 1)
                .wrapping_add(u32::from(b))
        })
}

/// The fields of a FAT32 boot sector (fatgen103 BPB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fat32Boot {
    /// jmpBoot.
    pub jmp_boot: [u8; 3],
    /// OEMName.
    pub oem_name: [u8; 8],
    /// BytsPerSec.
    pub bytes_per_sector: u16,
    /// SecPerClus.
    pub sectors_per_cluster: u8,
    /// RsvdSecCnt.
    pub reserved_sectors: u16,
    /// NumFATs.
    pub num_fats: u8,
    /// RootEntCnt (0).
    pub root_ent_cnt: u16,
    /// TotSec16 (0).
    pub tot_sec16: u16,
    /// Media.
    pub media: u8,
    /// FATSz16 (0).
    pub fat_sz16: u16,
    /// HiddSec.
    pub hidden_sectors: u32,
    /// TotSec32.
    pub tot_sec32: u32,
    /// FATSz32.
    pub fat_sz32: u32,
    /// ExtFlags.
    pub ext_flags: u16,
    /// FSVer.
    pub fs_ver: u16,
    /// RootClus.
    pub root_cluster: u32,
    /// FSInfo sector.
    pub fs_info: u16,
    /// BkBootSec.
    pub backup_boot: u16,
    /// DrvNum.
    pub drive_number: u8,
    /// BootSig (0x29).
    pub boot_sig: u8,
    /// VolID.
    pub volume_id: u32,
    /// VolLab.
    pub volume_label: [u8; 11],
    /// FilSysType.
    pub fs_type: [u8; 8],
    /// Signature at 510 (0xAA55).
    pub signature: u16,
}

impl Fat32Boot {
    /// Decodes the first 512 bytes of `b`.
    pub fn from_bytes(b: &[u8]) -> Fat32Boot {
        let arr = |r: std::ops::Range<usize>| b[r].to_vec();
        let mut jmp_boot = [0u8; 3];
        jmp_boot.copy_from_slice(&arr(0..3));
        let mut oem_name = [0u8; 8];
        oem_name.copy_from_slice(&arr(3..11));
        let mut volume_label = [0u8; 11];
        volume_label.copy_from_slice(&arr(71..82));
        let mut fs_type = [0u8; 8];
        fs_type.copy_from_slice(&arr(82..90));
        Fat32Boot {
            jmp_boot,
            oem_name,
            bytes_per_sector: u16_at(b, 11),
            sectors_per_cluster: b[13],
            reserved_sectors: u16_at(b, 14),
            num_fats: b[16],
            root_ent_cnt: u16_at(b, 17),
            tot_sec16: u16_at(b, 19),
            media: b[21],
            fat_sz16: u16_at(b, 22),
            hidden_sectors: u32_at(b, 28),
            tot_sec32: u32_at(b, 32),
            fat_sz32: u32_at(b, 36),
            ext_flags: u16_at(b, 40),
            fs_ver: u16_at(b, 42),
            root_cluster: u32_at(b, 44),
            fs_info: u16_at(b, 48),
            backup_boot: u16_at(b, 50),
            drive_number: b[64],
            boot_sig: b[66],
            volume_id: u32_at(b, 67),
            volume_label,
            fs_type,
            signature: u16_at(b, 510),
        }
    }

    /// Reads the boot sector of the volume at byte `offset` of `image`.
    #[track_caller]
    pub fn read(image: &Path, offset: u64) -> Fat32Boot {
        Self::from_bytes(&read_at(image, offset, 512))
    }

    /// Bytes per cluster.
    pub fn cluster_size(&self) -> u64 {
        u64::from(self.bytes_per_sector) * u64::from(self.sectors_per_cluster)
    }

    /// True for FAT12/16 (FATSz16 set): the extended BPB sits at 36, not 64.
    pub fn is_small_fat(&self) -> bool {
        self.fat_sz16 != 0
    }

    /// The volume serial: VolID at 67 (FAT32) or 39 (FAT12/16).
    pub fn serial(&self) -> u32 {
        if self.is_small_fat() {
            // FATSz32 (36) is the extended BPB here: DrvNum, Reserved, BootSig,
            // then VolID at 39 = bytes 3.. of FATSz32 and the ExtFlags/FSVer words.
            let b36 = self.fat_sz32.to_le_bytes();
            let b40 = self.ext_flags.to_le_bytes();
            let b42 = self.fs_ver.to_le_bytes();
            u32::from_le_bytes([b36[3], b40[0], b40[1], b42[0]])
        } else {
            self.volume_id
        }
    }

    /// Byte offset of the first FAT.
    pub fn fat_offset(&self) -> u64 {
        u64::from(self.reserved_sectors) * u64::from(self.bytes_per_sector)
    }

    /// Sectors of one FAT (FATSz16, or FATSz32 when that is 0).
    pub fn fat_sectors(&self) -> u64 {
        if self.is_small_fat() {
            u64::from(self.fat_sz16)
        } else {
            u64::from(self.fat_sz32)
        }
    }

    /// Bytes of one FAT.
    pub fn fat_bytes(&self) -> u64 {
        self.fat_sectors() * u64::from(self.bytes_per_sector)
    }

    /// Byte offset of the FAT12/16 fixed root directory (the data region on FAT32).
    pub fn root_offset(&self) -> u64 {
        self.fat_offset() + u64::from(self.num_fats) * self.fat_bytes()
    }

    /// Bytes of the FAT12/16 fixed root directory (0 on FAT32).
    pub fn root_bytes(&self) -> u64 {
        (u64::from(self.root_ent_cnt) * 32).next_multiple_of(u64::from(self.bytes_per_sector))
    }

    /// Total sectors (TotSec16, or TotSec32 when that is 0).
    pub fn total_sectors(&self) -> u64 {
        if self.tot_sec16 != 0 {
            u64::from(self.tot_sec16)
        } else {
            u64::from(self.tot_sec32)
        }
    }

    /// Byte offset of the data region (cluster 2).
    pub fn data_offset(&self) -> u64 {
        self.root_offset() + self.root_bytes()
    }

    /// Number of data clusters (fatgen103's formula).
    pub fn cluster_count(&self) -> u64 {
        let bps = u64::from(self.bytes_per_sector);
        let data_sectors = self.total_sectors() - self.data_offset() / bps;
        data_sectors / u64::from(self.sectors_per_cluster)
    }

    /// The first `n` entries of FAT number `which` (0 or 1), masked to 28 bits.
    #[track_caller]
    pub fn fat_entries(&self, image: &Path, offset: u64, which: u32, n: usize) -> Vec<u32> {
        let at = offset + self.fat_offset() + u64::from(which) * self.fat_bytes();
        read_at(image, at, 4 * n)
            .chunks_exact(4)
            .map(|c| u32_at(c, 0) & 0x0FFF_FFFF)
            .collect()
    }
}

/// The FSInfo sector (fatgen103 "FAT32 FSInfo Sector Structure").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsInfo {
    /// FSI_LeadSig (0x41615252).
    pub lead_sig: u32,
    /// FSI_StrucSig (0x61417272).
    pub struc_sig: u32,
    /// FSI_Free_Count.
    pub free_count: u32,
    /// FSI_Nxt_Free.
    pub next_free: u32,
    /// FSI_TrailSig (0xAA550000).
    pub trail_sig: u32,
}

impl FsInfo {
    /// Reads FSInfo from sector `sector` of the volume at `offset`.
    #[track_caller]
    pub fn read(image: &Path, offset: u64, boot: &Fat32Boot, sector: u16) -> FsInfo {
        let b = read_at(
            image,
            offset + u64::from(sector) * u64::from(boot.bytes_per_sector),
            512,
        );
        FsInfo {
            lead_sig: u32_at(&b, 0),
            struc_sig: u32_at(&b, 484),
            free_count: u32_at(&b, 488),
            next_free: u32_at(&b, 492),
            trail_sig: u32_at(&b, 508),
        }
    }

    /// True when all three signatures are right.
    pub fn signatures_ok(&self) -> bool {
        self.lead_sig == 0x4161_5252
            && self.struc_sig == 0x6141_7272
            && self.trail_sig == 0xAA55_0000
    }
}
