//! Counterfeit-capacity probe: is this stick as big as it says?
//!
//! Fake flash drives announce more blocks than they store. Beyond the real
//! size they either map addresses back onto the real storage (**wraparound**:
//! the high address bits are not connected), drop the writes (**limbo**), or
//! both (**chain**: the addresses wrap and part of what they wrap onto is not
//! storage). Many hide this behind a write cache that answers reads of the
//! last blocks written, and survives resets.
//!
//! [`probe`] finds the real size by writing a small number of blocks, in the
//! style of f3probe's model:
//!
//! 1. **Wrap and sample round.** It writes a probe block at unit 0, at every
//!    power-of-two unit, and at random units across the device. Every block
//!    carries its own position and a per-run salt ([`pattern`](self)), so a
//!    block read back at another address proves the two addresses share
//!    storage, and a block of an earlier run is recognised as stale.
//! 2. **Cache search.** It then writes the last units of the device in
//!    doubling batches (1, 1, 2, 4, ... up to
//!    [`ProbeOptions::max_cache_bytes`]), re-reading them after each batch
//!    through a reset ([`ProbeTarget::reset`]). The first batch that reads
//!    back wrong bounds the device's cache: it holds fewer units than were
//!    written. These writes also push the round-1 blocks out of any cache.
//! 3. **Read round 1** in random order (some fakes serve the last
//!    sequential writes from a cache), then a **grid** of reads, one unit in
//!    every cache-search length across the device: the end region written
//!    by the cache search lands, on a wraparound fake, on cells the grid
//!    hits, so a wrap of any size (a power of two or not) is seen. Two
//!    addresses sharing storage lie a multiple of the wrap apart; the
//!    greatest common divisor of the distances seen, narrowed by reading
//!    its divisors after a write at the start, is the wrap. The real size
//!    reported is the one this proves, not a power of two below it.
//! 4. **Bisect by random sampling** between the highest unit known good and
//!    the lowest known bad (or the wrap modulus): each round writes random
//!    units in between, then enough filler units at the start to flush the
//!    cache, resets, and reads them back in random order. A wrap whose real
//!    storage is at most twice the flush length (the whole cache search
//!    when the device's end reads back, as a wraparound fake's does) has no
//!    room for that: its filler is as many addresses a multiple of the wrap
//!    apart, sharing a few cells at the start (a cache holds blocks by the
//!    address written, so each pushes one out). Evenly spaced
//!    probes would fold onto the real size of a wraparound fake; random ones
//!    do not. When the interval holds no more units than a round samples,
//!    all of them are tested, which pins the boundary to the unit.
//! 5. **Speeds** (optional): sequential write and read of up to 32 MiB and
//!    4 KiB random writes, inside the real storage.
//!
//! The verdict is [`Verdict::Genuine`], [`Verdict::Wraparound`],
//! [`Verdict::Limbo`], [`Verdict::Chain`] or [`Verdict::Damaged`] (I/O
//! errors, no usable start, or bad units that are not one tail).
//!
//! Limits of sampling: a cache larger than [`ProbeOptions::max_cache_bytes`]
//! hides a limbo fake (shared with f3probe), and so does a controller that
//! keeps only the blocks written last (recycling the oldest); a wrap is
//! certain to be seen only from the cache-search length on and on devices
//! of up to 16384 times it. [`probe_full`] writes and reads back every
//! block (as H2testw and f3write/f3read do) and proves what sampling
//! cannot, in the time it takes to write and read the whole device.
//!
//! `--keep-data` saves every unit before its first write in a [`Backup`]
//! (a [`Journal`] file, synced first, each record with its own checksums)
//! and writes them back at the end; after a crash, [`restore_journal`]
//! replays a journal, refusing before any write a device it did not come
//! from ([`Refusal`]).
//!
//! The crate has no OS code: the caller supplies a [`ProbeTarget`] (a
//! [`BlockIo`] that can drop the caches between it and the medium; a raw
//! device through [`Reopening`] and the caller's opener), for
//! `--keep-data` a [`Backup`], and for a restore the [`DeviceIdentity`] the
//! operating system reports.
//!
//! ```
//! use mkfs_alloc_capacity::{probe, FakeKind, FakeStick, ProbeOptions, Verdict};
//!
//! // 64 MiB announced, 8 MiB real, addresses wrap.
//! let mut stick = FakeStick::new(FakeKind::Wraparound, 512, 131072, 16384, 64);
//! let opts = ProbeOptions { max_cache_bytes: 1 << 20, measure: false, ..ProbeOptions::default() };
//! let report = probe(&mut stick, &opts, None, &mut |_| {})?;
//! assert_eq!(report.verdict, Verdict::Wraparound);
//! assert_eq!(report.real_bytes, 8 << 20);
//! # Ok::<(), mkfs_alloc_capacity::ProbeError>(())
//! ```

#![warn(clippy::missing_errors_doc)]
mod backup;
mod engine;
pub mod fake;
mod journal;
mod journal_path;
mod pattern;
mod reopen;
mod restore;
mod rng;
pub mod target;

use mkfs_alloc_blockio::{BlockIo, ImageFile, IoError, MemDisk};

pub use backup::{restore, Backup, Loaded, LostRecord, MemBackup, RestoreReport, RunInfo};
pub use engine::{probe, probe_full};
pub use fake::{FakeKind, FakeStick};
pub use journal::{
    DeviceIdentity, Journal, JournalError, JournalHeader, JournalStatus, Record, JOURNAL_VERSION,
};
pub use journal_path::{check_journal_path, default_journal_path, JournalPathError};
pub use reopen::{Opener, Reopening};
pub use restore::{restore_journal, Refusal};

/// A [`BlockIo`] whose caches between the program and the medium can be
/// dropped, so that the next reads come from the medium.
pub trait ProbeTarget: BlockIo {
    /// Flushes and drops every cache between this handle and the medium
    /// (a raw device is reopened; an image file only flushes). The medium's
    /// own cache, if any, is what the probe has to defeat by itself.
    ///
    /// # Errors
    ///
    /// The [`IoError`] of flushing or reopening.
    fn reset(&mut self) -> Result<(), IoError>;
}

impl<T: ProbeTarget + ?Sized> ProbeTarget for &mut T {
    fn reset(&mut self) -> Result<(), IoError> {
        (**self).reset()
    }
}

impl ProbeTarget for MemDisk {
    fn reset(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

impl ProbeTarget for ImageFile {
    fn reset(&mut self) -> Result<(), IoError> {
        self.flush()
    }
}

/// The probe's conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every announced unit stores its own data.
    Genuine,
    /// Addresses wrap (modulo a power of two) onto real storage.
    Wraparound,
    /// Storage up to the real size, then writes are lost.
    Limbo,
    /// Addresses wrap, and part of what they wrap onto is not storage.
    Chain,
    /// I/O errors, no usable start, or bad units that are not one tail.
    Damaged,
}

impl Verdict {
    /// The lower-case name (`genuine`, `wraparound`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Genuine => "genuine",
            Verdict::Wraparound => "wraparound",
            Verdict::Limbo => "limbo",
            Verdict::Chain => "chain",
            Verdict::Damaged => "damaged",
        }
    }

    /// True for every verdict but [`Verdict::Genuine`].
    pub fn is_fake(self) -> bool {
        self != Verdict::Genuine
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a report was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// [`probe`]: test blocks at sampled places; fast, but it cannot prove
    /// every block stores data (see the crate docs).
    Sampling,
    /// [`probe_full`]: every block written and read back.
    Full,
}

/// Knobs of [`probe`] and [`probe_full`].
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Seed of the salt and of the random positions; `None` picks a fresh one.
    pub seed: Option<u64>,
    /// Largest device cache searched for, in bytes (default 64 MiB). Also the
    /// most the cache search writes.
    pub max_cache_bytes: u64,
    /// Random units per sampling round (default 64).
    pub samples: usize,
    /// Probe unit in bytes (default 4096; raised to the device block size).
    pub unit_bytes: u32,
    /// Measure sequential and random write speed (default true).
    pub measure: bool,
    /// Bytes written and read back sequentially for the speed figures
    /// (default 32 MiB; at most half the real size).
    pub speed_bytes: u64,
    /// Random single-unit writes for the IOPS figure (default 256).
    pub random_writes: u32,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            seed: None,
            max_cache_bytes: 64 << 20,
            samples: 64,
            unit_bytes: 4096,
            measure: true,
            speed_bytes: 32 << 20,
            random_writes: 256,
        }
    }
}

/// The phase a probe is in, for progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Writing the wrap and sample blocks.
    Sampling,
    /// Searching for the device cache at the end of the device.
    CacheSearch,
    /// Narrowing the real size down.
    Bisect,
    /// Measuring speeds.
    Speed,
    /// Putting the saved data back (`--keep-data`).
    Restore,
    /// [`probe_full`]: writing every block.
    Write,
    /// [`probe_full`]: reading every block back.
    Verify,
}

/// Speeds measured on the way (uncached if the target is).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Speeds {
    /// Sequential write speed, bytes per second (1 MiB writes, flush included).
    pub seq_write_bytes_per_sec: f64,
    /// Sequential read speed, bytes per second (1 MiB reads).
    pub seq_read_bytes_per_sec: f64,
    /// Bytes written and read for the sequential figures.
    pub seq_bytes: u64,
    /// Random single-unit writes per second (flush included); `None` if
    /// not measured (a full pass with `measure` off).
    pub random_write_iops: Option<f64>,
    /// Size of each random write in bytes (the probe unit).
    pub random_write_bytes: u32,
}

/// What [`probe`] found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProbeReport {
    /// The verdict.
    pub verdict: Verdict,
    /// Sampling or a full pass.
    pub mode: Mode,
    /// Size the device announces, in bytes.
    pub announced_bytes: u64,
    /// Usable size from the start, in bytes (the announced size when genuine).
    pub real_bytes: u64,
    /// Address wrap found, in bytes (wraparound and chain fakes).
    pub wrap_bytes: Option<u64>,
    /// Approximate device cache size in bytes, if the cache search found
    /// the end of the device bad (`Some(0)`: no cache).
    pub cache_bytes: Option<u64>,
    /// The largest cache searched for, in bytes.
    pub cache_search_limit_bytes: u64,
    /// Probe unit in bytes.
    pub unit_bytes: u32,
    /// Bytes the probe wrote (speed measurement included, restore excluded).
    pub bytes_written: u64,
    /// Bytes the probe read (backup reads included).
    pub bytes_read: u64,
    /// Bytes written back by `--keep-data` (`None` without it).
    pub bytes_restored: Option<u64>,
    /// Bytes that did not read back as written (a full pass only).
    pub bad_bytes: Option<u64>,
    /// Resets (reopens) between write and read phases.
    pub resets: u64,
    /// Write/read rounds after the first.
    pub rounds: u32,
    /// The first I/O error, for a damaged device.
    pub first_error: Option<String>,
    /// Speeds, if measured.
    pub speeds: Option<Speeds>,
    /// Wall time of the probe in seconds.
    pub seconds: f64,
}

/// Errors that stop a probe or a restore (a misbehaving device is a
/// verdict, not an error).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The device is too small to probe (fewer than 64 units).
    #[error("the device is too small to probe ({0} bytes)")]
    TooSmall(u64),
    /// The device's block size is not usable.
    #[error("unsupported block size {0}")]
    BlockSize(u32),
    /// Saving the original data failed; the probe stopped before
    /// overwriting anything it had not saved, and wrote back what it had
    /// saved (`restored`; see [`RestoreReport::complete`]).
    #[error("saving the original data failed")]
    Backup {
        /// The failure.
        #[source]
        source: std::io::Error,
        /// What was written back.
        restored: RestoreReport,
    },
    /// A device read or write failed while restoring the original data.
    #[error("restoring the original data failed")]
    Io(#[from] IoError),
    /// Records could not be written back: the journal must be kept.
    #[error("{} of {} saved blocks could not be written back", .0.lost.len(), .0.records)]
    Incomplete(RestoreReport),
    /// The journal cannot be used.
    #[error("the journal cannot be used")]
    Journal(#[from] JournalError),
    /// A restore refused to start; nothing was written.
    #[error("refusing to restore")]
    Refused(#[from] Refusal),
}
