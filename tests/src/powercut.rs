//! A block device whose power can be cut, without hardware: `powercut.py`
//! (fusepy) serves an image file through a volatile write cache that an
//! fsync writes through, and at a chosen mutating operation loses a seeded
//! subset of the unflushed 512-byte blocks and fails every later I/O; a
//! loop device with direct I/O over the file passes the block layer's
//! flushes to it as fsync.

use crate::fakestick::python_with_fusepy;
use crate::fuse::FuseMount;
use crate::loopdev::LoopDevice;
use std::path::Path;

/// The counters of a power-cut disk (its `stats` file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CutStats {
    /// Mutating operations seen (writes and fsyncs), refused ones included.
    pub ops: u64,
    /// Writes acknowledged.
    pub writes: u64,
    /// Fsyncs acknowledged.
    pub fsyncs: u64,
    /// The power is gone.
    pub cut: bool,
    /// Unflushed blocks that reached the image at the cut.
    pub kept: u64,
    /// Unflushed blocks lost at the cut.
    pub dropped: u64,
    /// The operation numbers of the fsyncs.
    pub fsync_ops: Vec<u64>,
}

impl CutStats {
    /// Parses the `stats` line (`ops=N writes=N ... at=I,J`).
    pub fn parse(line: &str) -> CutStats {
        let mut s = CutStats::default();
        for field in line.split_whitespace() {
            let (key, value) = field.split_once('=').unwrap_or((field, ""));
            let n = || {
                value
                    .parse::<u64>()
                    .unwrap_or_else(|e| panic!("{field}: {e}"))
            };
            match key {
                "ops" => s.ops = n(),
                "writes" => s.writes = n(),
                "fsyncs" => s.fsyncs = n(),
                "cut" => s.cut = n() == 1,
                "kept" => s.kept = n(),
                "dropped" => s.dropped = n(),
                "at" => {
                    s.fsync_ops = value
                        .split(',')
                        .filter(|v| !v.is_empty())
                        .map(|v| v.parse().unwrap_or_else(|e| panic!("{field}: {e}")))
                        .collect()
                }
                _ => panic!("unknown field {field:?} in {line:?}"),
            }
        }
        s
    }
}

/// A served image with its loop device; detached and unmounted on drop.
#[derive(Debug)]
pub struct PowerCutDisk {
    // Field order: the loop device goes before the FUSE mount under it.
    dev: Option<LoopDevice>,
    mount: Option<FuseMount>,
}

impl PowerCutDisk {
    /// Serves `image` under `mnt` (an empty directory) with the power cut at
    /// mutating operation `cut_at` (`None`: never; the cache is written
    /// through at unmount), the surviving blocks drawn from `seed`, and
    /// attaches a direct-I/O loop device to it.
    #[track_caller]
    pub fn serve(mnt: &Path, image: &Path, cut_at: Option<u64>, seed: u64) -> PowerCutDisk {
        let python = python_with_fusepy();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/powercut.py");
        let cut = cut_at.map_or_else(|| "-1".to_string(), |k| k.to_string());
        let args = vec![
            script.to_string_lossy().into_owned(),
            mnt.to_string_lossy().into_owned(),
            image.to_string_lossy().into_owned(),
            cut,
            seed.to_string(),
        ];
        let mount = FuseMount::spawn(&python, &args, mnt);
        let dev = LoopDevice::attach_direct(&mnt.join("disk"));
        PowerCutDisk {
            dev: Some(dev),
            mount: Some(mount),
        }
    }

    /// The loop device.
    pub fn path(&self) -> &Path {
        self.dev.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// The counters so far.
    #[track_caller]
    pub fn stats(&self) -> CutStats {
        let dir = self.mount.as_ref().map_or(Path::new(""), |m| m.dir());
        let line = std::fs::read_to_string(dir.join("stats"))
            .unwrap_or_else(|e| panic!("cannot read {}/stats: {e}", dir.display()));
        CutStats::parse(&line)
    }

    /// Sets the cut point to mutating operation `k` (counted from the start
    /// of the service, as [`CutStats::ops`]) and the seed.
    #[track_caller]
    pub fn cut_at(&self, k: u64, seed: u64) {
        let dir = self.mount.as_ref().map_or(Path::new(""), |m| m.dir());
        std::fs::write(dir.join("cut"), format!("{k} {seed}"))
            .unwrap_or_else(|e| panic!("cannot write {}/cut: {e}", dir.display()));
    }

    /// Detaches the loop device, reads the counters, and unmounts (which
    /// writes the cache through, or cuts the power if it was to be cut and
    /// is not yet): the image then holds what the medium kept.
    #[track_caller]
    pub fn remove(mut self) -> CutStats {
        drop(self.dev.take());
        let stats = self.stats();
        if let Some(m) = self.mount.take() {
            m.unmount();
        }
        stats
    }
}

impl Drop for PowerCutDisk {
    fn drop(&mut self) {
        drop(self.dev.take());
        drop(self.mount.take());
    }
}

#[cfg(test)]
mod tests {
    use super::CutStats;

    #[test]
    fn the_stats_line_parses() {
        let s = CutStats::parse("ops=6 writes=3 fsyncs=2 cut=1 kept=9 dropped=7 at=0,2\n");
        assert_eq!(
            s,
            CutStats {
                ops: 6,
                writes: 3,
                fsyncs: 2,
                cut: true,
                kept: 9,
                dropped: 7,
                fsync_ops: vec![0, 2],
            }
        );
        assert_eq!(CutStats::parse("ops=0 at=").fsync_ops, Vec::<u64>::new());
    }
}
