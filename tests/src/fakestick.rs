//! A counterfeit stick without hardware: `fakestick.py` (fusepy) serves a
//! file that announces more bytes than its sparse backing file stores and
//! wraps around or drops writes beyond that; a loop device with direct I/O
//! over the file is a block device that lies about its capacity.

use crate::fuse::FuseMount;
use crate::loopdev::LoopDevice;
use crate::tempdir::TempDir;
use std::path::Path;

/// How the fake behaves beyond its real size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Offset `o` is stored at `o % real`.
    Wraparound,
    /// Writes beyond the real size are dropped, reads there return zeros.
    Limbo,
    /// A stick dying while written: writes reaching the "real" size or
    /// beyond fail with EIO; reads work.
    Eio,
    /// No lie about the size, but the byte at offset "real" reads back
    /// with one bit flipped (see [`FakeStick::bitflip`]).
    Bitflip,
}

/// A mounted fake with its loop device; detached and unmounted on drop.
#[derive(Debug)]
pub struct FakeStick {
    // Field order: the loop device goes before the FUSE mount under it.
    dev: Option<LoopDevice>,
    mount: Option<FuseMount>,
}

impl FakeStick {
    /// A fake of `announced` bytes storing `real` bytes, with a write cache
    /// of `cache` bytes, under `dir`.
    #[track_caller]
    pub fn new(dir: &TempDir, mode: Mode, announced: u64, real: u64, cache: u64) -> FakeStick {
        let mnt = dir.subdir("fake-mnt");
        let backing = dir.join("fake-backing");
        let name = match mode {
            Mode::Wraparound => "wraparound",
            Mode::Limbo => "limbo",
            Mode::Eio => "eio",
            Mode::Bitflip => "bitflip",
        };
        let mount = fakestick_mount(&mnt, &backing, name, announced, real, cache);
        let dev = LoopDevice::attach_direct(&mnt.join("stick"));
        FakeStick {
            dev: Some(dev),
            mount: Some(mount),
        }
    }

    /// A stick of `size` bytes that stores them all but reads the byte at
    /// offset `at` back with its bit 0x40 flipped, whatever was written
    /// there: a medium that does not keep what it was given.
    #[track_caller]
    pub fn bitflip(dir: &TempDir, size: u64, at: u64) -> FakeStick {
        assert!(
            at < size,
            "the flipped byte {at} is beyond the stick's {size} bytes"
        );
        FakeStick::new(dir, Mode::Bitflip, size, at, 0)
    }

    /// The lying block device.
    pub fn path(&self) -> &Path {
        self.dev.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Detaches the loop device and unmounts (panics if unmounting fails).
    pub fn remove(mut self) {
        drop(self.dev.take());
        if let Some(m) = self.mount.take() {
            m.unmount();
        }
    }
}

impl Drop for FakeStick {
    fn drop(&mut self) {
        drop(self.dev.take());
        drop(self.mount.take());
    }
}

/// `python3`, checked to have the fusepy module (the FUSE servers of the
/// tests are written with it).
#[track_caller]
pub fn python_with_fusepy() -> std::path::PathBuf {
    let python = crate::tools::require_tool("python3");
    let check = crate::cmd::run(&python, &["-c", "import fuse"]);
    assert!(
        check.success(),
        "the Python module fusepy is missing: `python3 -m pip install fusepy` \
         (or run `cargo xtask install-tools`):\n{check}"
    );
    python
}

/// `fakestick.py DIR BACKING MODE ANNOUNCED REAL CACHE` (fusepy): the fake
/// as the file `DIR/stick`.
#[track_caller]
fn fakestick_mount(
    dir: &Path,
    backing: &Path,
    mode: &str,
    announced: u64,
    real: u64,
    cache: u64,
) -> FuseMount {
    let python = python_with_fusepy();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fakestick.py");
    let args = vec![
        script.to_string_lossy().into_owned(),
        dir.to_string_lossy().into_owned(),
        backing.to_string_lossy().into_owned(),
        mode.to_string(),
        announced.to_string(),
        real.to_string(),
        cache.to_string(),
    ];
    FuseMount::spawn(&python, &args, dir)
}
