//! The cases: which images go through the kernel, made how, damaged how.

/// The kernel driver a case mounts with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Driver {
    Exfat,
    Vfat,
}

impl Driver {
    pub(super) fn name(self) -> &'static str {
        match self {
            Driver::Exfat => "exfat",
            Driver::Vfat => "vfat",
        }
    }
}

/// How a case's image is made (shared with `test-uboot`).
#[derive(Clone, Copy)]
pub(crate) enum Make {
    /// `mkfs-alloc ARGS --json IMAGE` (ARGS split at spaces).
    Ours(&'static str),
    /// The firmware example (`cargo xtask embedded`): its image of this
    /// name, formatted on a Cortex-M3 in QEMU.
    Firmware(&'static str),
    /// A peer's formatter on an image of `size` bytes: `PROGRAM ARGS IMAGE`.
    Peer {
        size: u64,
        program: &'static str,
        args: &'static str,
    },
}

/// A fault injected into a negative control after formatting.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fault {
    /// exFAT VolumeFlags (boot sector byte 106): VolumeDirty set.
    ExfatDirty,
    /// exFAT: a boot-code byte changed, the boot checksum sector left alone.
    ExfatBootChecksum,
    /// FAT32: the FSInfo free cluster count lowered by 1000.
    FatFsinfoFree,
    /// Populated: a byte appended to a source file after the format (the
    /// image is intact; the volume no longer lists the source tree).
    SourceChanged,
}

/// One image through the kernel.
#[derive(Clone, Copy)]
pub(super) struct Case {
    /// Name in the report (also the image's file name).
    pub(super) name: &'static str,
    pub(super) make: Make,
    pub(super) driver: Driver,
    /// Logical sector size of the volume = the guest disk's block size.
    pub(super) sector: u32,
    /// In the CI subset (the default run); `--all` runs every case.
    pub(super) ci: bool,
    /// Negative control: the fault, and text one of the findings must hold.
    pub(super) fault: Option<(Fault, &'static str)>,
    /// Populated with `--rootdir` (the tree of [`write_source_tree`](super::image::write_source_tree)): the
    /// fresh volume must list exactly that tree.
    pub(super) populated: bool,
    /// Fill the volume with one file instead of writing the file set: every
    /// cluster we reported free must take data.
    pub(super) fill: bool,
    /// Changed in place by mkfs-alloc after it is made and populated
    /// (re-clustered, resized or converted); the kernel then reads and
    /// writes the changed volume. A populated peer's case is filled
    /// through exfat-fuse or mtools first (see `fill.rs`).
    pub(super) change: Option<Change>,
    /// The peer's fill writes a filler of this many bytes first and
    /// deletes it last (0: none), so that the tree's data lies past it
    /// (a shrink below it has to move the data).
    pub(super) past: u64,
}

/// An in-place change of a case's volume by mkfs-alloc.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Change {
    /// `recluster --cluster BYTES`.
    Recluster(u64),
    /// The image extended to `medium` bytes, then `resize --size max`:
    /// the volume (and its partition) grows into the new space. `slack`:
    /// FAT32, whose grow stops at its FATs' slack: `max` is refused naming
    /// the largest size, and the grow goes to that size.
    Grow { medium: u64, slack: bool },
    /// `resize --size BYTES` to a smaller size: the data past the new end
    /// must move (the resize must report moved clusters).
    Shrink(u64),
    /// `convert --fs exfat` from FAT32, with `--cluster BYTES` if given.
    ToExfat(Option<u64>),
}

/// A case formatted by mkfs-alloc with `args`.
const fn ours(name: &'static str, driver: Driver, sector: u32, args: &'static str) -> Case {
    Case {
        name,
        make: Make::Ours(args),
        driver,
        sector,
        ci: false,
        fault: None,
        populated: false,
        fill: false,
        change: None,
        past: 0,
    }
}

/// A case formatted by the firmware example: its image `job`.
const fn firmware(name: &'static str, driver: Driver, job: &'static str) -> Case {
    Case {
        name,
        make: Make::Firmware(job),
        driver,
        sector: 512,
        ci: false,
        fault: None,
        populated: false,
        fill: false,
        change: None,
        past: 0,
    }
}

/// A control case formatted by a peer tool.
pub(super) const fn peer(
    name: &'static str,
    driver: Driver,
    sector: u32,
    size: u64,
    program: &'static str,
    args: &'static str,
) -> Case {
    Case {
        name,
        make: Make::Peer {
            size,
            program,
            args,
        },
        driver,
        sector,
        ci: false,
        fault: None,
        populated: false,
        fill: false,
        change: None,
        past: 0,
    }
}

impl Case {
    /// Part of the CI subset.
    pub(super) const fn ci(self) -> Case {
        Case { ci: true, ..self }
    }

    /// Populated from the source tree (`--rootdir` is added to the args).
    pub(super) const fn populated(self) -> Case {
        Case {
            populated: true,
            ..self
        }
    }

    /// Re-clustered to `size` bytes after it is made (and populated).
    pub(super) const fn reclustered(self, size: u64) -> Case {
        self.changed(Change::Recluster(size))
    }

    /// Changed in place by `change` after it is made (and populated).
    pub(super) const fn changed(self, change: Change) -> Case {
        Case {
            change: Some(change),
            ..self
        }
    }

    /// The peer's fill puts the tree past a filler of `bytes` (deleted).
    pub(super) const fn past(self, bytes: u64) -> Case {
        Case {
            past: bytes,
            ..self
        }
    }

    /// The driver of the volume as it was made (a conversion changes it).
    pub(super) fn made_as(&self) -> Driver {
        match self.change {
            Some(Change::ToExfat(_)) => Driver::Vfat,
            _ => self.driver,
        }
    }

    /// Fills the volume instead of writing the file set.
    pub(super) const fn fill(self) -> Case {
        Case { fill: true, ..self }
    }

    /// A negative control: `fault` injected; must fail with `expect`.
    const fn broken(self, fault: Fault, expect: &'static str) -> Case {
        Case {
            fault: Some((fault, expect)),
            ..self
        }
    }
}

const GIB: u64 = 1 << 30;
use Driver::{Exfat, Vfat};

/// The matrix. One line per case: mkfs-alloc's arguments, the driver, the
/// sector size (`.populated()` adds `--rootdir`, `.ci()` puts it in CI).
/// The CI subset (`.ci()`), by the rule of TESTING.md: every file system
/// (exFAT, FAT32, FAT16, FAT12) x table (none, MBR, GPT) x sector size
/// (512, 4096) once, small and large clusters, populated and filled
/// volumes, the SD layout, the firmware's images, both peers' controls
/// (one on 4096-byte sectors), one volume of each in-place job (a
/// re-cluster, a shrink that moves data, a conversion) and every negative
/// control.
#[rustfmt::skip]
pub(super) const CASES: &[Case] = &[
    // exFAT, the CI subset.
    ours("ex-512-none-512", Exfat, 512, "--fs exfat --cluster 512 --size 1G --label Fotos-ÄÖ").ci(),
    ours("ex-512-mbr-1m", Exfat, 512, "--fs exfat --table mbr --cluster 1M --size 2G --label 日本語").ci(),
    ours("ex-512-gpt-4k", Exfat, 512, "--fs exfat --table gpt --cluster 4K --size 1G --label Urlaub😀").ci(),
    ours("ex-4k-none-1m", Exfat, 4096, "--fs exfat --sector-size 4096 --cluster 1M --size 2G").ci(),
    ours("ex-4k-mbr-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --table mbr --cluster 4K --size 1G --label STICK").ci(),
    ours("ex-4k-gpt-256k", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 256K --size 4G --label Fotos").ci(),
    // exFAT, the rest of the product.
    ours("ex-512-none-1m", Exfat, 512, "--fs exfat --cluster 1M --size 2G"),
    ours("ex-512-mbr-4k", Exfat, 512, "--fs exfat --table mbr --cluster 4K --size 1G"),
    ours("ex-512-gpt-1m", Exfat, 512, "--fs exfat --table gpt --cluster 1M --size 2G"),
    ours("ex-4k-none-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --cluster 4K --size 1G"),
    ours("ex-4k-mbr-1m", Exfat, 4096, "--fs exfat --sector-size 4096 --table mbr --cluster 1M --size 2G"),
    ours("ex-4k-gpt-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 4K --size 1G"),
    // exFAT, extremes.
    ours("ex-512-none-32m", Exfat, 512, "--fs exfat --cluster 32M --size 128G --label BIG"),
    ours("ex-512-gpt-auto-64g", Exfat, 512, "--fs exfat --table gpt --size 64G"),
    ours("ex-512-none-4k-64m", Exfat, 512, "--fs exfat --cluster 4K --size 64M"),
    // An EFI System Partition: FAT16 with 64 KiB clusters.
    ours("f16-512-none-64k-esp", Vfat, 512, "--esp --fs fat16 --cluster 64K --size 2G"),
    // FAT32, the CI subset.
    ours("f32-512-none-512", Vfat, 512, "--fs fat32 --cluster 512 --size 256M --label PHOTOS").ci(),
    ours("f32-512-mbr-32k", Vfat, 512, "--fs fat32 --table mbr --cluster 32K --size 4G --label PHOTOS").ci(),
    ours("f32-512-gpt-4k", Vfat, 512, "--fs fat32 --table gpt --cluster 4K --size 1G").ci(),
    ours("f32-4k-none-64k", Vfat, 4096, "--fs fat32 --sector-size 4096 --cluster 64K --size 8G --label BIG").ci(),
    ours("f32-4k-mbr-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 4K --size 1G").ci(),
    ours("f32-4k-gpt-32k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 32K --size 4G").ci(),
    // FAT32, the rest of the product.
    ours("f32-512-none-32k", Vfat, 512, "--fs fat32 --cluster 32K --size 4G"),
    ours("f32-512-mbr-512", Vfat, 512, "--fs fat32 --table mbr --cluster 512 --size 256M"),
    ours("f32-512-gpt-32k", Vfat, 512, "--fs fat32 --table gpt --cluster 32K --size 4G"),
    ours("f32-4k-none-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --cluster 4K --size 1G"),
    ours("f32-4k-mbr-64k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 64K --size 8G"),
    ours("f32-4k-gpt-4k", Vfat, 4096, "--fs fat32 --sector-size 4096 --table gpt --cluster 4K --size 1G"),
    // FAT32, extremes.
    ours("f32-512-none-auto-16g", Vfat, 512, "--fs fat32 --size 16G"),
    ours("f32-512-gpt-64k-64g", Vfat, 512, "--fs fat32 --table gpt --cluster 64K --size 64G"),
    // FAT16 and FAT12 (fixed root directory; no FSInfo).
    ours("f16-512-mbr-2k", Vfat, 512, "--fs fat16 --table mbr --cluster 2K --size 64M --label SMALL").ci(),
    ours("f12-512-none-4k", Vfat, 512, "--fs fat12 --cluster 4K --size 15M").ci(),
    ours("f16-4k-gpt-4k", Vfat, 4096, "--fs fat16 --sector-size 4096 --table gpt --cluster 4K --size 200M").ci(),
    ours("f16-512-none-64k", Vfat, 512, "--fs fat16 --cluster 64K --size 4000M"),
    ours("f12-512-none-floppy", Vfat, 512, "--fs fat12 --size 1440K"),
    ours("f12-4k-mbr-4k", Vfat, 4096, "--fs fat12 --sector-size 4096 --table mbr --cluster 4K --size 12M").ci(),
    // The rest of FAT16 and FAT12 x table x sector size, once each in CI.
    ours("f16-512-gpt-2k", Vfat, 512, "--fs fat16 --table gpt --cluster 2K --size 64M").ci(),
    ours("f16-4k-none-4k", Vfat, 4096, "--fs fat16 --sector-size 4096 --cluster 4K --size 100M").ci(),
    ours("f16-4k-mbr-4k", Vfat, 4096, "--fs fat16 --sector-size 4096 --table mbr --cluster 4K --size 100M").ci(),
    ours("f16-512-none-2k", Vfat, 512, "--fs fat16 --cluster 2K --size 64M").ci(),
    ours("f12-512-gpt-4k", Vfat, 512, "--fs fat12 --table gpt --cluster 4K --size 15M").ci(),
    ours("f12-4k-none-4k", Vfat, 4096, "--fs fat12 --sector-size 4096 --cluster 4K --size 12M").ci(),
    ours("f12-4k-gpt-4k", Vfat, 4096, "--fs fat12 --sector-size 4096 --table gpt --cluster 4K --size 12M").ci(),
    // The SD Association layout (`--layout sd`): the factory 64 GB card of
    // exfatprogs PR #149, an SDSC card (partition moved off any power of
    // two so the data region lands on a boundary unit) and FAT32 on SDXC.
    ours("sd-512-exfat-64gb", Exfat, 512, "--layout sd --size 64037584896 --label CARD").ci(),
    ours("sd-512-fat16-1g", Vfat, 512, "--layout sd --size 1G --label CARD"),
    ours("sd-512-fat32-64gb", Vfat, 512, "--layout sd --fs fat32 --size 64037584896"),
    // Populated (`--rootdir`): the fresh volume lists exactly the source tree.
    ours("ex-512-none-4k-rootdir", Exfat, 512, "--fs exfat --cluster 4K --size 512M").populated().ci(),
    ours("f32-512-mbr-4k-rootdir", Vfat, 512, "--fs fat32 --table mbr --cluster 4K --size 1G").populated().ci(),
    ours("ex-4k-gpt-auto-rootdir", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --size auto").populated(),
    ours("f32-512-none-auto-rootdir", Vfat, 512, "--fs fat32 --size auto").populated(),
    ours("f16-512-none-2k-rootdir", Vfat, 512, "--fs fat16 --cluster 2K --size 100M").populated().ci(),
    ours("f12-512-mbr-4k-rootdir", Vfat, 512, "--fs fat12 --table mbr --cluster 4K --size 15M").populated().ci(),
    // Filled to the last cluster (512 B clusters: below a page).
    ours("ex-512-none-4k-fill", Exfat, 512, "--fs exfat --cluster 4K --size 64M").fill().ci(),
    ours("f32-512-none-512-fill", Vfat, 512, "--fs fat32 --cluster 512 --size 64M").fill().ci(),
    ours("ex-512-none-512-fill", Exfat, 512, "--fs exfat --cluster 512 --size 64M").fill(),
    ours("ex-4k-gpt-32k-fill", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 32K --size 128M").fill(),
    ours("f32-4k-mbr-4k-fill", Vfat, 4096, "--fs fat32 --sector-size 4096 --table mbr --cluster 4K --size 300M").fill(),
    ours("f16-512-none-512-fill", Vfat, 512, "--fs fat16 --cluster 512 --size 16M").fill(),
    ours("f12-512-none-512-fill", Vfat, 512, "--fs fat12 --cluster 512 --size 2M").fill(),
    // Formatted by the firmware example on a Cortex-M3 (QEMU, semihosting):
    // the same bytes as the CLI's, through the kernel's drivers too.
    firmware("fw-exfat-mbr", Exfat, "exfat-mbr.img").ci(),
    firmware("fw-fat32-mbr", Vfat, "fat32-mbr.img").ci(),
    firmware("fw-fat16-sfd", Vfat, "fat16-sfd.img").ci(),
    // Controls: the peers' images, judged against `mkfs-alloc info`.
    peer("ctl-mkfs.exfat", Exfat, 512, GIB, "mkfs.exfat", "-L CTRL").ci(),
    peer("ctl-mkfs.fat", Vfat, 512, GIB, "mkfs.fat", "-F 32 -n CTRL").ci(),
    peer("ctl-mkfs.exfat-128k", Exfat, 512, 8 * GIB, "mkfs.exfat", "-c 128K"),
    peer("ctl-mkfs.fat-4kn", Vfat, 4096, 8 * GIB, "mkfs.fat", "-F 32 -S 4096").ci(),
    // Re-clustered in place (`mkfs-alloc recluster`) to 4 KiB: mkfs.exfat's
    // at 128 KiB (FAT at 4 MiB, heap at 8 MiB) filled through exfat-fuse
    // with the tree and two fragmented files, and ours at 128 KiB with the
    // tree (also in a GPT partition on 4096-byte sectors). The fresh volume
    // must list the tree, and takes writes.
    peer("rc-mkfs.exfat-128k-fuse-4k", Exfat, 512, 512 << 20, "mkfs.exfat", "-c 128K -b 4M")
        .populated().reclustered(4096).ci(),
    // The other directions and FAT32: mkfs.exfat's at 4 KiB filled through
    // exfat-fuse, to 128 KiB (larger: every file moves to new clusters);
    // mkfs.fat's FAT32 at 32 KiB filled through mtools around holes (a
    // fragmented file), to 4 KiB (the larger FATs displace the first
    // clusters).
    peer("rc-mkfs.exfat-4k-fuse-128k", Exfat, 512, 512 << 20, "mkfs.exfat", "-c 4K")
        .populated().reclustered(128 << 10),
    peer("rc-mkfs.fat-32k-mtools-4k", Vfat, 512, 4 * GIB, "mkfs.fat", "-F 32 -s 64 -S 512")
        .populated().reclustered(4096),
    ours("rc-ex-512-128k-rootdir-4k", Exfat, 512, "--fs exfat --cluster 128K --size 512M")
        .populated().reclustered(4096),
    ours("rc-ex-4k-gpt-128k-rootdir-4k", Exfat, 4096, "--fs exfat --sector-size 4096 --table gpt --cluster 128K --size 512M")
        .populated().reclustered(4096),
    // Resized in place (`mkfs-alloc resize`): mkfs.exfat's filled through
    // exfat-fuse, grown from 256 MiB to the 1 GiB its image was extended
    // to, and shrunk from 256 MiB to 96 MiB with the tree written past a
    // 128 MiB filler (deleted): its data moves below the new end.
    // mkfs.fat's FAT32 filled through mtools, grown within its FATs'
    // slack (the image extended to 400 MiB), and shrunk from 160 MiB to 80
    // MiB at 1 KiB clusters with the tree's files past a 96 MiB filler (its
    // directories made before it: a FAT32 shrink moves no directory's
    // first cluster; at 512-byte clusters mtools cannot add a 255-character
    // name to a directory whose last cluster is nearly full, "No directory
    // slots").
    peer("rs-mkfs.exfat-fuse-grow-1g", Exfat, 512, 256 << 20, "mkfs.exfat", "-L GROW")
        .populated().changed(Change::Grow { medium: GIB, slack: false }),
    peer("rs-mkfs.exfat-shrink-96m", Exfat, 512, 256 << 20, "mkfs.exfat", "-c 4K")
        .populated().past(128 << 20).changed(Change::Shrink(96 << 20)).ci(),
    peer("rs-mkfs.fat-4k-mtools-grow", Vfat, 512, 300 << 20, "mkfs.fat", "-F 32 -s 8 -S 512")
        .populated().changed(Change::Grow { medium: 400 << 20, slack: true }),
    peer("rs-mkfs.fat-shrink-80m", Vfat, 512, 160 << 20, "mkfs.fat", "-F 32 -s 2 -S 512")
        .populated().past(96 << 20).changed(Change::Shrink(80 << 20)),
    // Converted in place (`mkfs-alloc convert --fs exfat`): mkfs.fat's
    // FAT32 filled through mtools (the cluster size kept), and ours, FAT32
    // in an MBR partition with the tree by `--rootdir`, to exFAT at 32 KiB
    // in the same run.
    peer("cv-mkfs.fat-mtools-exfat", Exfat, 512, 512 << 20, "mkfs.fat", "-F 32 -s 8 -S 512 -n HOLIDAYS")
        .populated().changed(Change::ToExfat(None)).ci(),
    ours("cv-f32-mbr-rootdir-ex-32k", Exfat, 512, "--fs fat32 --table mbr --cluster 4K --size 1G")
        .populated().changed(Change::ToExfat(Some(32 << 10))),
    // Negative controls: must fail, with this finding.
    ours("neg-exfat-dirty", Exfat, 512, "--fs exfat --cluster 32K --size 256M")
        .broken(Fault::ExfatDirty, "not properly unmounted").ci(),
    ours("neg-exfat-checksum", Exfat, 512, "--fs exfat --cluster 32K --size 256M")
        .broken(Fault::ExfatBootChecksum, "Invalid boot checksum").ci(),
    ours("neg-fat32-fsinfo", Vfat, 512, "--fs fat32 --cluster 4K --size 1G")
        .broken(Fault::FatFsinfoFree, "FSInfo free count").ci(),
    ours("neg-rootdir-changed", Vfat, 512, "--fs fat32 --cluster 4K --size 512M").populated()
        .broken(Fault::SourceChanged, "--rootdir source").ci(),
];

/// Kernel log lines that are not about the volume: ignored in every step.
/// The guest's own cache drop, and what a slow (emulated, loaded) CPU makes
/// the timer code say.
pub(super) const UNRELATED_KERNEL_LINES: &[&str] = &[
    "drop_caches: 3",
    "hrtimer: interrupt took",
    "clocksource",
    "tsc: Marking TSC unstable",
    "TSC found unstable after boot",
    "sched_clock: Marking unstable",
];
