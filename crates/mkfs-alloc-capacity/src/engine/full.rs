//! The full pass: every unit of the device written with its test block,
//! then every unit read back (as H2testw and f3write/f3read do, on the raw
//! device instead of files). Only this proves that every block stores
//! data: it also catches what sampling cannot (a wrap below the cache
//! search, an FTL that recycles the oldest blocks).
//!
//! Memory is bounded: both passes stream through [`BUFFERS`] buffers of
//! [`CHUNK_BYTES`], a worker thread generating (or checking) one chunk
//! while the caller's thread writes (or reads) another. Writes go in
//! device order; the reads follow a reset,
//! so they come from the medium (and whatever cache it has, which the
//! verdict tolerates at the end of the device up to
//! [`ProbeOptions::max_cache_bytes`]).
//!
//! What the reads say. With a wrap `m` (unit `u` stored at `u % m`), the
//! last writer of each cell reads back and every earlier unit returns the
//! block of a unit a multiple of `m` further on: the distances give `m`.
//! Units that return anything else (zeros, garbage, another run's block,
//! a read error) have no storage. So: no bad unit is genuine; aliases only
//! are a wraparound of real size `m`; aliases and units without storage a
//! chain (real size: the lowest cell without storage); no aliases, and
//! every unit from the first bad one on bad (but a cache's worth at the
//! end) is limbo; anything else, or I/O errors, is damaged.

use super::*;
use std::sync::mpsc::sync_channel;

/// Bytes per read or write request of the full pass.
pub(super) const CHUNK_BYTES: usize = 4 << 20;
/// Chunk buffers in flight between the I/O thread and its worker: memory
/// stays at this many times [`CHUNK_BYTES`].
const BUFFERS: usize = 3;
/// Failed write requests in a row after which the write pass stops.
const MAX_FAILED_WRITES: u32 = 16;
/// Ranges of units without storage kept for the verdict; a device with
/// more is damaged.
const MAX_RANGES: usize = 1 << 16;

/// What the read pass saw.
#[derive(Debug, Default)]
struct Tally {
    good: u64,
    bad: u64,
    io_errors: u64,
    /// Greatest common divisor of the alias distances.
    wrap: Option<u64>,
    /// Merged ranges `[first, end)` of units without storage.
    holes: Vec<(u64, u64)>,
    overflow: bool,
}

impl Tally {
    fn add(&mut self, u: u64, s: Seen) {
        match s {
            Seen::Good => self.good += 1,
            Seen::Alias(v) => {
                self.bad += 1;
                self.wrap = Some(gcd(self.wrap.unwrap_or(0), u.abs_diff(v)));
            }
            Seen::Stale | Seen::Other => self.hole(u),
        }
    }

    fn hole(&mut self, u: u64) {
        self.bad += 1;
        let full = self.holes.len() >= MAX_RANGES;
        match self.holes.last_mut() {
            Some((_, end)) if *end == u => *end += 1,
            _ if full => self.overflow = true,
            _ => self.holes.push((u, u + 1)),
        }
    }

    /// Verdict, real units and wrap for a device of `n` units whose cache
    /// may answer for up to `cache` units at its end.
    fn verdict(&self, n: u64, cache: u64) -> (Verdict, u64, Option<u64>) {
        let first_hole = self.holes.first().map_or(n, |h| h.0);
        if self.bad == 0 {
            return (Verdict::Genuine, n, None);
        }
        if self.io_errors > 0 || self.overflow {
            return (Verdict::Damaged, first_hole.min(self.first_alias(n)), None);
        }
        match self.wrap {
            Some(m) => {
                // The lowest cell without storage.
                let r = self
                    .holes
                    .iter()
                    .map(|&(a, b)| {
                        if b - a >= m || a % m + (b - a) > m {
                            0
                        } else {
                            a % m
                        }
                    })
                    .min()
                    .unwrap_or(m)
                    .min(m);
                match r {
                    0 => (Verdict::Damaged, 0, Some(m)),
                    r if r == m => (Verdict::Wraparound, m, Some(m)),
                    r => (Verdict::Chain, r, Some(m)),
                }
            }
            None => {
                // Every unit below the first hole read back; the good ones
                // above it must be few enough for a cache.
                let good_above = self.good - first_hole;
                if first_hole > 0 && good_above <= cache {
                    (Verdict::Limbo, first_hole, None)
                } else {
                    (Verdict::Damaged, first_hole, None)
                }
            }
        }
    }

    fn first_alias(&self, n: u64) -> u64 {
        // Without the positions of aliases, be conservative: a wrap means
        // nothing beyond it is usable.
        self.wrap.unwrap_or(n)
    }
}

/// Probes `dev` by writing every unit and reading every unit back:
/// destructive, as long as the device takes to write and read in full.
/// `progress` gets the phase, the bytes done and the bytes in all.
///
/// The unit is the largest power of two up to [`ProbeOptions::unit_bytes`]
/// that divides the device, so that every block is tested. With
/// [`ProbeOptions::measure`], random writes inside the real size give the
/// IOPS figure; the sequential speeds are the passes themselves.
///
/// # Errors
///
/// [`ProbeError::TooSmall`] / [`ProbeError::BlockSize`] before anything is
/// written. I/O errors are a [`Verdict::Damaged`].
pub fn probe_full<D: ProbeTarget + ?Sized>(
    dev: &mut D,
    opts: &ProbeOptions,
    progress: &mut dyn FnMut(Phase, u64, u64),
) -> Result<ProbeReport, ProbeError> {
    let start = Instant::now();
    let bs = dev.block_size();
    if !bs.is_power_of_two() || bs < 512 {
        return Err(ProbeError::BlockSize(bs));
    }
    let announced = dev.num_blocks() * u64::from(bs);
    let mut unit = opts.unit_bytes.max(bs);
    if !unit.is_power_of_two() {
        return Err(ProbeError::BlockSize(unit));
    }
    while announced % u64::from(unit) != 0 {
        unit /= 2;
    }
    let n = announced / u64::from(unit);
    if n < MIN_UNITS {
        return Err(ProbeError::TooSmall(announced));
    }
    let seed = opts.seed.unwrap_or_else(fresh_seed);
    let mut noop = |_: Phase| {};
    let mut e = Engine {
        dev,
        bpu: u64::from(unit / bs),
        unit: unit as usize,
        n,
        salt: salt_of(seed),
        rng: SplitMix64::new(seed),
        backup: None,
        saved: HashSet::new(),
        written: 0,
        read: 0,
        resets: 0,
        rounds: 0,
        progress: &mut noop,
    };
    let mut first_error = None;
    let t = Instant::now();
    let wrote_all = e.write_pass(&mut first_error, progress);
    let write_secs = t.elapsed().as_secs_f64();
    if let Err(Stop::Io(err)) = e.reset() {
        first_error.get_or_insert(describe(&err));
    }
    let t = Instant::now();
    let tally = e.read_pass(&mut first_error, progress);
    let read_secs = t.elapsed().as_secs_f64();
    let cache = opts.max_cache_bytes / u64::from(unit);
    let (verdict, real, wrap) = tally.verdict(n, cache);
    let real_bytes = real * u64::from(unit);
    let mut speeds = None;
    if wrote_all && first_error.is_none() {
        let iops = if opts.measure && real > 0 {
            e.random_iops(opts, real)
        } else {
            None
        };
        let rate = |s: f64| {
            if s > 0.0 {
                announced as f64 / s
            } else {
                f64::INFINITY
            }
        };
        speeds = Some(Speeds {
            seq_write_bytes_per_sec: rate(write_secs),
            seq_read_bytes_per_sec: rate(read_secs),
            seq_bytes: announced,
            random_write_iops: iops,
            random_write_bytes: unit,
        });
    }
    Ok(ProbeReport {
        verdict,
        mode: Mode::Full,
        announced_bytes: announced,
        real_bytes,
        wrap_bytes: wrap.map(|w| w * u64::from(unit)),
        cache_bytes: None,
        cache_search_limit_bytes: 0,
        unit_bytes: unit,
        bytes_written: e.written,
        bytes_read: e.read,
        bytes_restored: None,
        bad_bytes: Some(tally.bad * u64::from(unit)),
        resets: e.resets,
        rounds: 0,
        first_error,
        speeds,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// A chunk on its way between the I/O thread and the worker: its first
/// unit, its units, the buffer, and (reading) the units that could not be
/// read.
type Chunk = (u64, u64, Vec<u8>, Vec<u64>);

impl<D: ProbeTarget + ?Sized> Engine<'_, D> {
    /// Writes every unit's test block in device order, and flushes. False
    /// if a write failed. A worker thread generates the next chunks while
    /// this one writes ([`BUFFERS`] buffers in all), so the pass runs at the
    /// device's speed, not at the sum of its time and the generator's.
    fn write_pass(
        &mut self,
        first_error: &mut Option<String>,
        progress: &mut dyn FnMut(Phase, u64, u64),
    ) -> bool {
        let (unit, n, salt) = (self.unit, self.n, self.salt);
        let per = (CHUNK_BYTES / unit).max(1) as u64;
        let total = n * unit as u64;
        let mut failed_in_a_row = 0;
        let mut all = true;
        progress(Phase::Write, 0, total);
        std::thread::scope(|s| {
            let (free_tx, free_rx) = sync_channel::<Vec<u8>>(BUFFERS);
            let (full_tx, full_rx) = sync_channel::<Chunk>(BUFFERS);
            s.spawn(move || {
                let mut first = 0;
                while first < n {
                    let Ok(mut buf) = free_rx.recv() else { return };
                    let count = per.min(n - first);
                    buf.resize(unit * count as usize, 0);
                    for (i, chunk) in buf.chunks_mut(unit).enumerate() {
                        fill(chunk, salt, first + i as u64);
                    }
                    if full_tx.send((first, count, buf, Vec::new())).is_err() {
                        return;
                    }
                    first += count;
                }
            });
            for _ in 0..BUFFERS {
                let _ = free_tx.send(Vec::with_capacity(unit * per as usize));
            }
            for (first, count, buf, _) in full_rx.iter() {
                match self.write_raw(first, &buf) {
                    Ok(()) => failed_in_a_row = 0,
                    Err(err) => {
                        all = false;
                        first_error.get_or_insert_with(|| describe(&err));
                        failed_in_a_row += 1;
                        if failed_in_a_row >= MAX_FAILED_WRITES {
                            break;
                        }
                    }
                }
                progress(Phase::Write, (first + count) * unit as u64, total);
                let _ = free_tx.send(buf);
            }
            // Dropping the receivers ends the worker if the loop broke.
            drop(full_rx);
            drop(free_tx);
        });
        if let Err(err) = self.dev.flush() {
            first_error.get_or_insert_with(|| describe(&err));
            all = false;
        }
        all
    }

    /// Reads every unit back in device order and tallies what it holds; a
    /// worker thread checks each chunk while this one reads the next.
    fn read_pass(
        &mut self,
        first_error: &mut Option<String>,
        progress: &mut dyn FnMut(Phase, u64, u64),
    ) -> Tally {
        let (unit, n, salt) = (self.unit, self.n, self.salt);
        let per = (CHUNK_BYTES / unit).max(1) as u64;
        let total = n * unit as u64;
        progress(Phase::Verify, 0, total);
        std::thread::scope(|s| {
            let (free_tx, free_rx) = sync_channel::<Vec<u8>>(BUFFERS);
            let (full_tx, full_rx) = sync_channel::<Chunk>(BUFFERS);
            let checker = s.spawn(move || {
                let mut tally = Tally::default();
                let mut scratch = vec![0u8; unit];
                for (first, _, buf, unreadable) in full_rx.iter() {
                    for (i, chunk) in buf.chunks(unit).enumerate() {
                        let u = first + i as u64;
                        if unreadable.contains(&u) {
                            tally.io_errors += 1;
                            tally.hole(u);
                        } else {
                            tally.add(u, classify(chunk, salt, u, &mut scratch));
                        }
                    }
                    let _ = free_tx.send(buf);
                }
                tally
            });
            let mut spare = (0..BUFFERS).map(|_| vec![0u8; unit * per as usize]);
            let mut first = 0;
            while first < n {
                let Some(mut buf) = spare.next().or_else(|| free_rx.recv().ok()) else {
                    break;
                };
                let count = per.min(n - first);
                buf.resize(unit * count as usize, 0);
                let unreadable = self.read_chunk(first, &mut buf, first_error);
                if full_tx.send((first, count, buf, unreadable)).is_err() {
                    break;
                }
                first += count;
                progress(Phase::Verify, first * unit as u64, total);
            }
            drop(full_tx);
            checker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Reads `buf` from unit `first`; if that fails, unit by unit. Returns
    /// the units that could not be read.
    fn read_chunk(
        &mut self,
        first: u64,
        buf: &mut [u8],
        first_error: &mut Option<String>,
    ) -> Vec<u64> {
        if self.read_raw(first, buf).is_ok() {
            return Vec::new();
        }
        let mut unreadable = Vec::new();
        for (i, one) in buf.chunks_mut(self.unit).enumerate() {
            let u = first + i as u64;
            if let Err(err) = self.read_raw(u, one) {
                first_error.get_or_insert_with(|| describe(&err));
                unreadable.push(u);
            }
        }
        unreadable
    }

    /// Random single-unit writes per second inside the first `real` units.
    fn random_iops(&mut self, opts: &ProbeOptions, real: u64) -> Option<f64> {
        let count = u64::from(opts.random_writes).min(real);
        if count == 0 {
            return None;
        }
        let mut one = vec![0u8; self.unit];
        let t = Instant::now();
        for _ in 0..count {
            let u = self.rng.below(real);
            fill(&mut one, self.salt, u);
            self.write_raw(u, &one).ok()?;
        }
        self.dev.flush().ok()?;
        let secs = t.elapsed().as_secs_f64();
        Some(if secs > 0.0 {
            count as f64 / secs
        } else {
            f64::INFINITY
        })
    }
}
