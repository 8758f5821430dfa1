//! Loop devices: `losetup -f --show`, detached on drop.

use crate::cmd::run;
use crate::tools::require_tool;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Serialises `losetup -f` inside one test process: two threads asking for
/// the first free device at once can race.
static ATTACH: Mutex<()> = Mutex::new(());

/// A loop device bound to an image file; detached (`losetup -d`) on drop.
#[derive(Debug)]
pub struct LoopDevice {
    dev: PathBuf,
}

/// How to attach an image.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopOptions {
    /// Logical sector size of the device (`--sector-size`); `None`: 512.
    pub sector_size: Option<u32>,
    /// Byte offset into the image (`-o`) and size limit (`--sizelimit`).
    pub window: Option<(u64, u64)>,
    /// Attach read-only (`-r`).
    pub read_only: bool,
    /// Scan the partition table (`-P`).
    pub partscan: bool,
}

impl LoopDevice {
    /// Attaches `image` with 512-byte sectors.
    #[track_caller]
    pub fn attach(image: &Path) -> LoopDevice {
        Self::attach_with(image, LoopOptions::default())
    }

    /// Attaches `image` with the given logical sector size.
    #[track_caller]
    pub fn attach_sector(image: &Path, sector_size: u32) -> LoopDevice {
        let sector_size = (sector_size != 512).then_some(sector_size);
        Self::attach_with(
            image,
            LoopOptions {
                sector_size,
                ..LoopOptions::default()
            },
        )
    }

    /// Attaches `image` with direct I/O (`--direct-io=on`): the loop device
    /// reads and writes the backing file with `O_DIRECT`, bypassing the page
    /// cache (so a FUSE file behind it sees every I/O).
    #[track_caller]
    pub fn attach_direct(image: &Path) -> LoopDevice {
        Self::attach_args(image, LoopOptions::default(), &["--direct-io=on"])
    }

    /// Attaches `image` with options. Panics (with losetup's output) on failure.
    #[track_caller]
    pub fn attach_with(image: &Path, opts: LoopOptions) -> LoopDevice {
        Self::attach_args(image, opts, &[])
    }

    #[track_caller]
    fn attach_args(image: &Path, opts: LoopOptions, extra: &[&str]) -> LoopDevice {
        crate::tools::require_root();
        let losetup = require_tool("losetup");
        let mut args: Vec<String> = vec!["-f".into(), "--show".into()];
        args.extend(extra.iter().map(|a| a.to_string()));
        if let Some(s) = opts.sector_size {
            args.extend(["--sector-size".into(), s.to_string()]);
        }
        if let Some((offset, len)) = opts.window {
            args.extend([
                "-o".into(),
                offset.to_string(),
                "--sizelimit".into(),
                len.to_string(),
            ]);
        }
        if opts.read_only {
            args.push("-r".into());
        }
        if opts.partscan {
            args.push("-P".into());
        }
        args.push(image.to_string_lossy().into_owned());
        let mut last = None;
        for attempt in 0..5 {
            let out = {
                let _guard = ATTACH.lock().unwrap_or_else(|e| e.into_inner());
                run(&losetup, &args)
            };
            if out.success() && out.stdout.trim().starts_with("/dev/loop") {
                return LoopDevice {
                    dev: PathBuf::from(out.stdout.trim()),
                };
            }
            last = Some(out);
            std::thread::sleep(Duration::from_millis(100 * (attempt + 1)));
        }
        let out = last.map(|o| o.to_string()).unwrap_or_default();
        panic!(
            "cannot attach a loop device (is the loop module available? running as root?):\n{out}"
        )
    }

    /// The device path, e.g. `/dev/loop3`.
    pub fn path(&self) -> &Path {
        &self.dev
    }

    /// Writes the device's dirty page cache through to the backing file
    /// (`fsync` of the block device), so that reading the image file sees
    /// what a driver wrote to the device, and a later writeback cannot change
    /// the image behind a comparison.
    #[track_caller]
    pub fn flush(&self) {
        std::fs::File::open(&self.dev)
            .and_then(|f| f.sync_all())
            .unwrap_or_else(|e| panic!("cannot flush {}: {e}", self.dev.display()));
    }

    /// The device path as a string, for tool arguments.
    pub fn path_str(&self) -> &str {
        self.dev.to_str().unwrap_or_default()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let Some(losetup) = crate::tools::find_tool("losetup") else {
            return;
        };
        for attempt in 0..10 {
            let out = run(
                &losetup,
                &[std::ffi::OsStr::new("-d"), self.dev.as_os_str()],
            );
            if out.success() {
                return;
            }
            if attempt == 9 {
                eprintln!("warning: could not detach {}:\n{out}", self.dev.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
