//! Block-level views of images and devices by independent tools: partition
//! tables (`sfdisk --json`, `fdisk -l`, `sgdisk -v`), signatures (`blkid -p`,
//! `wipefs -n -J`), device geometry (`blockdev`) and the allocation of a
//! backing file (discard checks).
//!
//! The parsers panic with the tool's whole output when it is not what they
//! expect, so a changed tool fails loudly instead of "passing" on nothing.

use crate::cmd::{run, CmdOutput};
use crate::tools::require_tool;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn os(p: &Path) -> &OsStr {
    p.as_os_str()
}

/// One partition as `sfdisk --json` shows it (sectors of the table's size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SfdiskPart {
    /// First sector.
    pub start: u64,
    /// Length in sectors.
    pub size: u64,
    /// MBR type in hex without `0x` (`"c"`, `"7"`) or the GPT type GUID.
    pub type_: String,
    /// GPT partition GUID.
    pub uuid: Option<String>,
    /// GPT partition name.
    pub name: Option<String>,
}

/// A partition table as `sfdisk --json` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SfdiskTable {
    /// `"dos"` or `"gpt"`.
    pub label: String,
    /// Disk identifier: `0x%08x` (dos) or the disk GUID (gpt).
    pub id: String,
    /// Sector size the table was read with.
    pub sector_size: u64,
    /// GPT first usable LBA.
    pub first_lba: Option<u64>,
    /// GPT last usable LBA.
    pub last_lba: Option<u64>,
    /// The partitions, in table order.
    pub partitions: Vec<SfdiskPart>,
}

/// `sfdisk --json TARGET`, parsed. Panics unless it succeeds.
#[track_caller]
pub fn sfdisk_json(target: &Path) -> SfdiskTable {
    let out = run(require_tool("sfdisk"), &[OsStr::new("--json"), os(target)]);
    out.assert_success();
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("sfdisk --json printed no JSON ({e}):\n{out}"));
    let t = &v["partitiontable"];
    let s = |k: &str| {
        t[k].as_str()
            .unwrap_or_else(|| panic!("sfdisk --json: no string {k:?}:\n{out}"))
            .to_string()
    };
    let partitions = t["partitions"]
        .as_array()
        .unwrap_or_else(|| panic!("sfdisk --json: no partitions array:\n{out}"))
        .iter()
        .map(|p| SfdiskPart {
            start: p["start"]
                .as_u64()
                .unwrap_or_else(|| panic!("sfdisk --json: no start:\n{out}")),
            size: p["size"]
                .as_u64()
                .unwrap_or_else(|| panic!("sfdisk --json: no size:\n{out}")),
            type_: p["type"]
                .as_str()
                .unwrap_or_else(|| panic!("sfdisk --json: no type:\n{out}"))
                .to_string(),
            uuid: p["uuid"].as_str().map(str::to_string),
            name: p["name"].as_str().map(str::to_string),
        })
        .collect();
    SfdiskTable {
        label: s("label"),
        id: s("id"),
        sector_size: t["sectorsize"].as_u64().unwrap_or(512),
        first_lba: t["firstlba"].as_u64(),
        last_lba: t["lastlba"].as_u64(),
        partitions,
    }
}

/// One partition row of `fdisk -l`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdiskRow {
    /// Device column (`a.img1`, `/dev/loop3p1`).
    pub device: String,
    /// True when the boot flag (`*`) is set.
    pub boot: bool,
    /// First sector.
    pub start: u64,
    /// Last sector (inclusive).
    pub end: u64,
    /// Length in sectors.
    pub sectors: u64,
    /// The rest of the row: size, (MBR) id and type name.
    pub rest: String,
}

/// What `fdisk -l TARGET` says.
#[derive(Debug, Clone)]
pub struct FdiskList {
    /// `Disklabel type:` (`dos`, `gpt`).
    pub label: String,
    /// Sector unit in bytes (`Units: sectors of 1 * N = N bytes`).
    pub unit: u64,
    /// `Disk identifier:`.
    pub id: String,
    /// Partition rows.
    pub rows: Vec<FdiskRow>,
    /// The whole output.
    pub out: CmdOutput,
}

/// `fdisk -l TARGET`, parsed. Panics unless it succeeds.
#[track_caller]
pub fn fdisk_list(target: &Path) -> FdiskList {
    let out = run(require_tool("fdisk"), &[OsStr::new("-l"), os(target)]);
    out.assert_success();
    let after = |key: &str| {
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix(key).map(|r| r.trim().to_string()))
            .unwrap_or_else(|| panic!("fdisk -l: no `{key}` line:\n{out}"))
    };
    let label = after("Disklabel type:");
    let id = after("Disk identifier:");
    let units = after("Units:");
    let unit = units
        .rsplit_once('=')
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("fdisk -l: cannot read the unit from {units:?}:\n{out}"));
    let name = target.to_string_lossy().into_owned();
    let rows = out
        .stdout
        .lines()
        .filter(|l| l.starts_with(name.as_str()) && !l.starts_with(&format!("{name}:")))
        .map(|l| {
            let mut w = l.split_whitespace().peekable();
            let device = w.next().unwrap_or_default().to_string();
            let boot = w.peek() == Some(&"*");
            if boot {
                w.next();
            }
            let mut num = |what: &str| -> u64 {
                w.next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("fdisk -l: no {what} in row {l:?}:\n{out}"))
            };
            let (start, end, sectors) = (num("start"), num("end"), num("sectors"));
            FdiskRow {
                device,
                boot,
                start,
                end,
                sectors,
                rest: w.collect::<Vec<_>>().join(" "),
            }
        })
        .collect();
    FdiskList {
        label,
        unit,
        id,
        rows,
        out,
    }
}

/// `sgdisk -v TARGET` (verify; reads only).
#[track_caller]
pub fn sgdisk_verify(target: &Path) -> CmdOutput {
    run(
        crate::tools::require_tool("sgdisk"),
        &[OsStr::new("-v"), os(target)],
    )
}

/// `blkid -p -o export [-O OFFSET] TARGET`: the `KEY=value` pairs (empty
/// when blkid finds nothing, its exit code 2). Panics on other failures.
#[track_caller]
pub fn blkid_probe(target: &Path, offset: Option<u64>) -> Vec<(String, String)> {
    let mut args: Vec<String> = vec!["-p".into(), "-o".into(), "export".into()];
    if let Some(o) = offset {
        args.extend(["-O".into(), o.to_string()]);
    }
    args.push(target.to_string_lossy().into_owned());
    let out = run(require_tool("blkid"), &args);
    match out.code {
        Some(0) => out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(k, _)| *k != "DEVNAME")
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        Some(2) => Vec::new(),
        _ => panic!("blkid failed:\n{out}"),
    }
}

/// The value of `key` in [`blkid_probe`]'s pairs.
pub fn blkid_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `wipefs -n -J TARGET`: every signature wipefs would erase, as
/// `(byte offset, type)`. Reads only.
#[track_caller]
pub fn wipefs_signatures(target: &Path) -> Vec<(u64, String)> {
    let out = run(
        require_tool("wipefs"),
        &[OsStr::new("-n"), OsStr::new("-J"), os(target)],
    );
    out.assert_success();
    if out.stdout.trim().is_empty() {
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("wipefs -J printed no JSON ({e}):\n{out}"));
    v["signatures"]
        .as_array()
        .unwrap_or_else(|| panic!("wipefs -J: no signatures array:\n{out}"))
        .iter()
        .map(|s| {
            let off = s["offset"].as_str().unwrap_or_default();
            let off = u64::from_str_radix(off.trim_start_matches("0x"), 16)
                .unwrap_or_else(|_| panic!("wipefs -J: bad offset {off:?}:\n{out}"));
            (off, s["type"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// What `blockdev --getss --getpbsz --getsize64 DEV` reports:
/// (logical block size, physical block size, size in bytes).
#[track_caller]
pub fn blockdev_sizes(dev: &Path) -> (u64, u64, u64) {
    let out = run(
        require_tool("blockdev"),
        &[
            OsStr::new("--getss"),
            OsStr::new("--getpbsz"),
            OsStr::new("--getsize64"),
            os(dev),
        ],
    );
    out.assert_success();
    let n: Vec<u64> = out
        .stdout
        .split_whitespace()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("blockdev printed {w:?}:\n{out}"))
        })
        .collect();
    assert_eq!(n.len(), 3, "blockdev printed {} numbers:\n{out}", n.len());
    (n[0], n[1], n[2])
}

/// Bytes the file system has allocated to `path` (`st_blocks * 512`).
#[track_caller]
pub fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let m =
        std::fs::metadata(path).unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()));
    m.blocks() * 512
}

/// Writes `len` bytes of non-repeating pseudo-random data over `path` from
/// byte 0 (allocating every block; the file is created or overwritten in
/// place, never truncated).
#[track_caller]
pub fn fill_random(path: &Path, len: u64, seed: u64) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let block = crate::image::test_data(1 << 20, seed);
    let mut chunk = block.clone();
    let mut done = 0u64;
    let mut i = 0u64;
    while done < len {
        // Vary every MiB so no two blocks are equal.
        for (j, b) in chunk.iter_mut().enumerate().step_by(4096) {
            *b = block[j] ^ (i as u8) ^ ((i >> 8) as u8);
        }
        let n = (len - done).min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        done += n as u64;
        i += 1;
    }
    f.sync_all()
        .unwrap_or_else(|e| panic!("cannot sync {}: {e}", path.display()));
}

/// The byte offsets in `data` (which starts at byte `base` of a medium)
/// whose value is not 0: at most `limit` of them, for messages.
pub fn nonzero_offsets(data: &[u8], base: u64, limit: usize) -> Vec<u64> {
    data.iter()
        .enumerate()
        .filter(|(_, &b)| b != 0)
        .take(limit)
        .map(|(i, _)| base + i as u64)
        .collect()
}

/// A file system window of a medium: `len` bytes at byte `offset` of the
/// backing file `image`, seen with `sector`-byte logical sectors.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    /// The backing file.
    pub image: &'a Path,
    /// `"exfat"` or `"fat32"`.
    pub fs: &'a str,
    /// Logical sector size of the loop device to open.
    pub sector: u32,
    /// Byte offset of the volume in `image`.
    pub offset: u64,
    /// Bytes of the volume.
    pub len: u64,
}

impl Window<'_> {
    /// Attaches a loop device on the window (`-o`, `--sizelimit`, and
    /// `--sector-size` when not 512).
    #[track_caller]
    pub fn attach(&self) -> crate::loopdev::LoopDevice {
        crate::loopdev::LoopDevice::attach_with(
            self.image,
            crate::loopdev::LoopOptions {
                sector_size: (self.sector != 512).then_some(self.sector),
                window: Some((self.offset, self.len)),
                read_only: false,
                ..Default::default()
            },
        )
    }

    /// `fsck.exfat -n` / `fsck.fat -n` of the window through a loop device.
    #[track_caller]
    pub fn fsck_clean(&self) {
        let lo = self.attach();
        self.fsck_dev(lo.path());
    }

    /// `fsck.exfat -n` / `fsck.fat -n` of `dev`, which holds this window.
    #[track_caller]
    pub fn fsck_dev(&self, dev: &Path) {
        match self.fs {
            "exfat" => {
                crate::checks::fsck_exfat_clean(dev);
            }
            "fat32" => {
                crate::checks::fsck_fat_clean(dev);
            }
            other => panic!("unknown file system {other:?}"),
        }
    }

    /// Writes a file of `data` into the volume and reads it back, with
    /// fsck before and after:
    ///
    /// - exFAT: fsck, mount (exfat-fuse) the loop window, write, unmount,
    ///   fsck, mount again and read it back;
    /// - FAT32: fsck the loop window, detach, `mcopy -i IMAGE@@OFFSET`,
    ///   `mtype` it back, fsck the window again and read the file through a
    ///   read-only fusefat mount.
    ///
    /// `scratch` is a directory for mount points and the source file.
    #[track_caller]
    pub fn round_trip(&self, scratch: &Path, data: &[u8]) {
        let name = "DATA.BIN";
        let mnt = scratch.join("mnt");
        std::fs::create_dir_all(&mnt)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", mnt.display()));
        let read_back = |dir: &Path, what: &str| {
            let got = std::fs::read(dir.join(name))
                .unwrap_or_else(|e| panic!("{what}: cannot read {name} back: {e}"));
            assert!(
                got == data,
                "{what}: {name} reads back {} bytes that differ from the {} written",
                got.len(),
                data.len()
            );
        };
        match self.fs {
            "exfat" => {
                {
                    let lo = self.attach();
                    self.fsck_dev(lo.path());
                    let m = crate::fuse::FuseMount::exfat(lo.path(), &mnt);
                    std::fs::write(mnt.join(name), data)
                        .unwrap_or_else(|e| panic!("cannot write through exfat-fuse: {e}"));
                    m.unmount();
                    self.fsck_dev(lo.path());
                }
                let lo = self.attach();
                let m = crate::fuse::FuseMount::exfat(lo.path(), &mnt);
                read_back(&mnt, "exfat-fuse after remount");
                m.unmount();
                self.fsck_dev(lo.path());
            }
            "fat32" => {
                self.fsck_clean();
                let src = scratch.join("source.bin");
                std::fs::write(&src, data)
                    .unwrap_or_else(|e| panic!("cannot write {}: {e}", src.display()));
                let at = PathBuf::from(format!("{}@@{}", self.image.display(), self.offset));
                crate::checks::mtools("mcopy", &at, &[&src.to_string_lossy(), "::/DATA.BIN"])
                    .assert_success();
                let typed = crate::checks::mtools("mtype", &at, &["::/DATA.BIN"]);
                typed.assert_success();
                assert!(
                    typed.stdout_bytes == data,
                    "mtype reads back {} bytes that differ from the {} written",
                    typed.stdout_bytes.len(),
                    data.len()
                );
                let lo = self.attach();
                self.fsck_dev(lo.path());
                let m = crate::fuse::FuseMount::fusefat_ro(lo.path(), &mnt);
                read_back(&mnt, "fusefat");
                m.unmount();
            }
            other => panic!("unknown file system {other:?}"),
        }
    }
}
