//! The cases: which images go through U-Boot, on which bus and CPU, and
//! what must come of them.

use crate::kernel::{Change, Make};

/// How U-Boot sees the disk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Bus {
    /// `virtio-blk-device` (virtio-mmio): U-Boot's `virtio` interface.
    /// U-Boot 2023.01 always uses 512-byte blocks on it.
    Virtio,
    /// A QEMU NVMe namespace: U-Boot's `nvme` interface, which takes the
    /// namespace's block size (the way to 4096-byte sectors).
    Nvme,
}

impl Bus {
    /// U-Boot's name of the interface (`fatls virtio 0:1`).
    pub(super) fn interface(self) -> &'static str {
        match self {
            Bus::Virtio => "virtio",
            Bus::Nvme => "nvme",
        }
    }
}

/// Which U-Boot build (and QEMU) runs the case.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Arch {
    /// `qemu_arm` (32-bit) in `qemu-system-arm -M virt`.
    Arm,
    /// `qemu_arm64` in `qemu-system-aarch64 -M virt -cpu cortex-a57`.
    Arm64,
}

impl Arch {
    pub(super) fn name(self) -> &'static str {
        match self {
            Arch::Arm => "arm",
            Arch::Arm64 => "arm64",
        }
    }

    /// The firmware file of Debian's `u-boot-qemu`.
    pub(super) fn firmware(self) -> &'static str {
        match self {
            Arch::Arm => "/usr/lib/u-boot/qemu_arm/u-boot.bin",
            Arch::Arm64 => "/usr/lib/u-boot/qemu_arm64/u-boot.bin",
        }
    }

    /// The QEMU program and the arguments of its machine.
    pub(super) fn qemu(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Arch::Arm => ("qemu-system-arm", &["-M", "virt"]),
            Arch::Arm64 => ("qemu-system-aarch64", &["-M", "virt", "-cpu", "cortex-a57"]),
        }
    }
}

/// A fault put into a negative control's image or source after formatting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Fault {
    /// Populated: one byte of a source file changed after the format, its
    /// size kept (only the data on the volume differs from the source).
    SourceByteChanged,
    /// The FAT entry of the last cluster set to end-of-chain in every FAT
    /// copy: a lost cluster, real damage fsck.fat finds.
    LostCluster,
    /// FAT32: the FSInfo free count lowered by 1000 (stale in a way
    /// U-Boot did not cause).
    FsinfoLow,
}

/// What must come of a case.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Expect {
    /// Every check passes.
    Pass,
    /// A documented limit of U-Boot 2023.01 (TESTING.md): the case must
    /// fail, and U-Boot must have printed this text. Reported as a limit,
    /// never as a pass; if U-Boot ever reads the image, the run fails and
    /// says so (the limit is gone: make it a real case).
    Limit(&'static str),
    /// A negative control: the fault, and text one finding must hold.
    Fails(Fault, &'static str),
}

/// One image through U-Boot.
#[derive(Clone, Copy)]
pub(super) struct Case {
    /// Name in the report (also the image's file name).
    pub(super) name: &'static str,
    pub(super) make: Make,
    /// The volume's sector size: the disk's logical block size.
    pub(super) sector: u32,
    pub(super) bus: Bus,
    pub(super) arch: Arch,
    /// Populated with `--rootdir` (the kernel suite's source tree).
    pub(super) populated: bool,
    /// In the CI subset (the default run); `--all` runs every case.
    pub(super) ci: bool,
    pub(super) expect: Expect,
    /// Changed in place by mkfs-alloc (re-clustered, grown, shrunk) after
    /// it is made and populated; a populated peer's case is filled through
    /// mtools first (the kernel suite's `fill.rs`).
    pub(super) change: Option<Change>,
    /// The peer's fill puts the tree's files past a filler of this many
    /// bytes, deleted after (0: none): a shrink has to move them.
    pub(super) past: u64,
}

/// A case formatted by mkfs-alloc with `args` (split at spaces), on the
/// bus its sector size needs: virtio for 512, NVMe for 4096.
const fn ours(name: &'static str, sector: u32, args: &'static str) -> Case {
    Case {
        name,
        make: Make::Ours(args),
        sector,
        bus: if sector == 512 {
            Bus::Virtio
        } else {
            Bus::Nvme
        },
        arch: Arch::Arm,
        populated: false,
        ci: false,
        expect: Expect::Pass,
        change: None,
        past: 0,
    }
}

/// A control formatted by a peer's tool on an image of `size` bytes:
/// `PROGRAM ARGS IMAGE`.
const fn peer(
    name: &'static str,
    sector: u32,
    size: u64,
    program: &'static str,
    args: &'static str,
) -> Case {
    Case {
        make: Make::Peer {
            size,
            program,
            args,
        },
        ..ours(name, sector, "")
    }
}

impl Case {
    /// Part of the CI subset.
    const fn ci(self) -> Case {
        Case { ci: true, ..self }
    }

    /// Populated from the source tree (`--rootdir` is added to the args).
    const fn populated(self) -> Case {
        Case {
            populated: true,
            ..self
        }
    }

    /// Re-clustered to `size` bytes after it is made (and populated).
    const fn reclustered(self, size: u64) -> Case {
        self.changed(Change::Recluster(size))
    }

    /// Changed in place by `change` after it is made (and populated).
    const fn changed(self, change: Change) -> Case {
        Case {
            change: Some(change),
            ..self
        }
    }

    /// The peer's fill puts the tree past a filler of `bytes` (deleted).
    const fn past(self, bytes: u64) -> Case {
        Case {
            past: bytes,
            ..self
        }
    }

    /// On another bus than the sector size picks.
    const fn on(self, bus: Bus) -> Case {
        Case { bus, ..self }
    }

    /// Run by the 64-bit U-Boot.
    const fn arm64(self) -> Case {
        Case {
            arch: Arch::Arm64,
            ..self
        }
    }

    /// A documented U-Boot limit, recognised by `text`.
    const fn limit(self, text: &'static str) -> Case {
        Case {
            expect: Expect::Limit(text),
            ..self
        }
    }

    /// A negative control.
    const fn broken(self, fault: Fault, text: &'static str) -> Case {
        Case {
            expect: Expect::Fails(fault, text),
            ..self
        }
    }
}

/// The matrix. One line per case: mkfs-alloc's arguments and the sector
/// size (`.populated()` adds `--rootdir`, `.ci()` puts it in CI). The CI
/// subset, by the rule of TESTING.md: every file system x table x sector
/// size that U-Boot reads at least once (FAT12, FAT16, FAT32 x none, MBR,
/// GPT x 512, 4096 where a case exists; FAT32 with MBR on 4096-byte
/// sectors as the limit it is), populated and empty volumes, the SD layout
/// on the 64-bit U-Boot, a peer's control, and every verdict: a limit of
/// each kind (no exFAT driver, 4096-byte blocks on virtio, MBR on a
/// 4096-byte NVMe disk, and one on a peer's image) and the three negative
/// controls.
#[rustfmt::skip]
pub(super) const CASES: &[Case] = &[
    // FAT32.
    ours("f32-512-mbr-4k-rootdir", 512, "--fs fat32 --table mbr --cluster 4K --size 1G").populated().ci(),
    ours("f32-512-none-512-rootdir", 512, "--fs fat32 --cluster 512 --size 256M --label PHOTOS").populated().ci(),
    ours("f32-512-gpt-32k", 512, "--fs fat32 --table gpt --cluster 32K --size 4G --label BOOT").ci(),
    ours("f32-512-gpt-4k-rootdir", 512, "--fs fat32 --table gpt --cluster 4K --size 1G").populated(),
    ours("f32-512-none-auto-rootdir", 512, "--fs fat32 --size auto").populated(),
    ours("f32-512-gpt-64k-64g", 512, "--fs fat32 --table gpt --cluster 64K --size 64G"),
    ours("f32-512-mbr-32k-rootdir-arm64", 512, "--fs fat32 --table mbr --cluster 32K --size 4G").populated().arm64(),
    ours("f32-4k-gpt-4k-rootdir", 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 4K --size 1G").populated().ci(),
    ours("f32-4k-none-64k", 4096, "--fs fat32 --sector-size 4096 --cluster 64K --size 8G --label BIG").ci(),
    // FAT16.
    ours("f16-512-mbr-2k-rootdir", 512, "--fs fat16 --table mbr --cluster 2K --size 100M --label SMALL").populated().ci(),
    ours("f16-512-none-64k", 512, "--fs fat16 --cluster 64K --size 4000M").ci(),
    ours("f16-512-gpt-64k-esp", 512, "--esp --fs fat16 --table gpt --cluster 64K --size 2G").ci(),
    ours("f16-4k-gpt-4k-rootdir", 4096, "--fs fat16 --sector-size 4096 --table gpt --cluster 4K --size 200M").populated().ci(),
    ours("f16-4k-none-4k", 4096, "--fs fat16 --sector-size 4096 --cluster 4K --size 200M").ci(),
    // FAT12.
    ours("f12-512-none-4k-rootdir", 512, "--fs fat12 --cluster 4K --size 15M").populated().ci(),
    ours("f12-512-mbr-4k", 512, "--fs fat12 --table mbr --cluster 4K --size 15M --label TINY").ci(),
    ours("f12-512-none-floppy", 512, "--fs fat12 --size 1440K"),
    ours("f12-512-gpt-4k-rootdir", 512, "--fs fat12 --table gpt --cluster 4K --size 15M").populated().ci(),
    ours("f12-4k-gpt-4k-rootdir", 4096, "--fs fat12 --sector-size 4096 --table gpt --cluster 4K --size 12M").populated().ci(),
    ours("f12-4k-none-4k", 4096, "--fs fat12 --sector-size 4096 --cluster 4K --size 12M").ci(),
    // The SD Association layout (`--layout sd`: MBR, the card's cluster
    // size and boundary unit): FAT16 on SDSC cards, FAT32 on SDHC, and
    // FAT32 asked for on the 64 GB card of exfatprogs PR #149.
    ours("sd-512-fat16-1g-rootdir", 512, "--layout sd --size 1G --label CARD").populated(),
    ours("sd-512-fat16-2g", 512, "--layout sd --size 2G"),
    ours("sd-512-fat32-8g-rootdir-arm64", 512, "--layout sd --size 8G --label CARD").populated().arm64().ci(),
    ours("sd-512-fat32-64gb", 512, "--layout sd --fs fat32 --size 64037584896"),
    // Peers' images as controls: what the suite says about mkfs.fat's
    // (and below, that U-Boot's limits hit the peers' images alike).
    peer("ctl-mkfs.fat", 512, 1 << 30, "mkfs.fat", "-F 32 -n CTRL").ci(),
    peer("ctl-mkfs.fat-4kn", 4096, 8 << 30, "mkfs.fat", "-F 32 -S 4096"),
    // Re-clustered in place: mkfs.fat's FAT32 at 32 KiB filled through
    // mtools around holes (a fragmented file), to 4 KiB; ours at 32 KiB
    // with the tree in an MBR partition, to 4 KiB.
    peer("rc-mkfs.fat-32k-mtools-4k", 512, 4 << 30, "mkfs.fat", "-F 32 -s 64 -S 512")
        .populated().reclustered(4096).ci(),
    ours("rc-f32-512-mbr-32k-rootdir-4k", 512, "--fs fat32 --table mbr --cluster 32K --size 4G")
        .populated().reclustered(4096),
    // Resized in place: mkfs.fat's FAT32 filled through mtools, grown
    // within its FATs' slack (the image extended to 400 MiB) and shrunk
    // from 160 MiB to 80 MiB with the files past a 96 MiB filler (the
    // kernel suite's `rs-mkfs.fat-*` cases).
    peer("rs-mkfs.fat-4k-mtools-grow", 512, 300 << 20, "mkfs.fat", "-F 32 -s 8 -S 512")
        .populated().changed(Change::Grow { medium: 400 << 20, slack: true }),
    peer("rs-mkfs.fat-shrink-80m", 512, 160 << 20, "mkfs.fat", "-F 32 -s 2 -S 512")
        .populated().past(96 << 20).changed(Change::Shrink(80 << 20)),
    // U-Boot 2023.01's limits (TESTING.md): must fail with this text.
    // exFAT: `fstypes` names no exFAT driver (if a U-Boot lists one and
    // fails on our image, that is no longer the limit).
    ours("lim-exfat-mbr", 512, "--fs exfat --table mbr --cluster 32K --size 1G")
        .limit("Supported filesystems: fat, ext4").ci(),
    ours("lim-sd-exfat-64gb", 512, "--layout sd --size 64037584896")
        .limit("Supported filesystems: fat, ext4"),
    ours("lim-4k-gpt-virtio", 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 4K --size 1G")
        .on(Bus::Virtio).limit("fs_devread read error").ci(),
    ours("lim-4k-mbr-nvme", 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 4K --size 1G")
        .limit("FAT sector size mismatch (fs=4096, dev=512)").ci(),
    peer("lim-ctl-mkfs.exfat", 512, 1 << 30, "mkfs.exfat", "-L CTRL")
        .limit("Supported filesystems: fat, ext4"),
    peer("lim-ctl-mkfs.fat-4kn-virtio", 4096, 8 << 30, "mkfs.fat", "-F 32 -S 4096")
        .on(Bus::Virtio).limit("fs_devread read error").ci(),
    // Negative controls: must fail, with this finding.
    ours("neg-source-changed", 512, "--fs fat32 --table mbr --cluster 4K --size 512M").populated()
        .broken(Fault::SourceByteChanged, "crc32").ci(),
    ours("neg-lost-cluster", 512, "--fs fat16 --table mbr --cluster 2K --size 100M")
        .broken(Fault::LostCluster, "fsck.fat").ci(),
    ours("neg-fsinfo-low", 512, "--fs fat32 --cluster 4K --size 1G")
        .broken(Fault::FsinfoLow, "Free cluster summary wrong").ci(),
];
