//! The probe itself: see the crate docs for the model.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use mkfs_alloc_blockio::IoError;

use crate::backup::{restore, Backup, RestoreReport, RunInfo};
use crate::pattern::{classify, fill, Seen};
use crate::rng::fresh_seed;
use crate::{Mode, Phase, ProbeError, ProbeOptions, ProbeReport, ProbeTarget, Speeds, Verdict};
use mkfs_alloc_ondisk::rng::{mix, SplitMix64};

mod analysis;
mod full;
mod wrap;
use analysis::*;
pub use full::probe_full;

/// Units per write request of a contiguous run (1 MiB at 4 KiB units).
const WRITE_RUN: u64 = 256;
/// Units per read request: reads go in random order, in chunks this long.
const READ_RUN: u64 = 16;
/// Fewest units a device must have.
const MIN_UNITS: u64 = 64;
/// Most sampling rounds before giving up (never reached by a model fake).
const MAX_ROUNDS: u32 = 64;

/// Why the probe stopped early.
enum Stop {
    Io(IoError),
    Backup(std::io::Error),
}

impl From<IoError> for Stop {
    fn from(e: IoError) -> Self {
        Stop::Io(e)
    }
}

/// Probes `dev` for counterfeit capacity. Destructive unless `backup` is
/// given, in which case every unit is saved before its first write and
/// everything is written back at the end (see [`Backup`]).
///
/// `progress` is called when the probe enters a new [`Phase`].
///
/// # Errors
///
/// [`ProbeError::TooSmall`] / [`ProbeError::BlockSize`] before anything is
/// written; [`ProbeError::Backup`] if saving the original data failed (the
/// probe then restores what it saved and stops); [`ProbeError::Io`] if
/// restoring failed. I/O errors while probing give [`Verdict::Damaged`].
pub fn probe<D: ProbeTarget + ?Sized>(
    dev: &mut D,
    opts: &ProbeOptions,
    mut backup: Option<&mut dyn Backup>,
    progress: &mut dyn FnMut(Phase),
) -> Result<ProbeReport, ProbeError> {
    let start = Instant::now();
    let bs = dev.block_size();
    if !bs.is_power_of_two() || bs < 512 {
        return Err(ProbeError::BlockSize(bs));
    }
    let unit = opts.unit_bytes.max(bs);
    if !unit.is_power_of_two() {
        return Err(ProbeError::BlockSize(unit));
    }
    let announced = dev.num_blocks() * u64::from(bs);
    let n = announced / u64::from(unit);
    if n < MIN_UNITS {
        return Err(ProbeError::TooSmall(announced));
    }
    let seed = opts.seed.unwrap_or_else(fresh_seed);
    let salt = salt_of(seed);
    if let Some(b) = backup.as_mut() {
        let run = RunInfo {
            salt,
            unit_bytes: unit,
            announced_bytes: announced,
            block_size: bs,
        };
        b.start(&run).map_err(|source| ProbeError::Backup {
            source,
            restored: RestoreReport::default(),
        })?;
    }
    let mut e = Engine {
        dev,
        bpu: u64::from(unit / bs),
        unit: unit as usize,
        n,
        salt,
        rng: SplitMix64::new(seed),
        backup: match backup.as_mut() {
            Some(b) => Some(&mut **b),
            None => None,
        },
        saved: HashSet::new(),
        written: 0,
        read: 0,
        resets: 0,
        rounds: 0,
        progress,
    };
    let cache_max = (opts.max_cache_bytes / u64::from(unit)).clamp(1, n / 4);
    let outcome = e.run(opts, cache_max);
    let (verdict, real_units, wrap, cache, first_error) = match outcome {
        Ok(o) => o,
        Err(Stop::Io(err)) => (Verdict::Damaged, 0, None, None, Some(describe(&err))),
        Err(Stop::Backup(err)) => return Err(e.backup_failed(err)),
    };
    let real_bytes = if verdict == Verdict::Genuine {
        announced
    } else {
        real_units * u64::from(unit)
    };
    let mut speeds = None;
    if opts.measure && verdict != Verdict::Damaged {
        (e.progress)(Phase::Speed);
        match e.measure(opts, real_bytes / u64::from(unit)) {
            Ok(s) => speeds = s,
            Err(Stop::Io(_)) => {}
            Err(Stop::Backup(err)) => return Err(e.backup_failed(err)),
        }
    }
    let bytes_restored = match e.restore_all()? {
        Some(r) if !r.complete() => return Err(ProbeError::Incomplete(r)),
        r => r.map(|r| r.bytes_written),
    };
    Ok(ProbeReport {
        verdict,
        mode: Mode::Sampling,
        announced_bytes: announced,
        real_bytes,
        wrap_bytes: wrap.map(|w| w * u64::from(unit)),
        cache_bytes: cache.map(|c| c * u64::from(unit)),
        cache_search_limit_bytes: cache_max * u64::from(unit),
        unit_bytes: unit,
        bytes_written: e.written,
        bytes_read: e.read,
        bytes_restored,
        bad_bytes: None,
        resets: e.resets,
        rounds: e.rounds,
        first_error,
        speeds,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn describe(err: &IoError) -> String {
    format!("{err}: {}", err.source)
}

/// The salt of the test blocks of the run with `seed`.
fn salt_of(seed: u64) -> u64 {
    mix(seed ^ 0x5341_4C54)
}

/// Verdict, real units, wrap units, cache units, first error.
type Outcome = (Verdict, u64, Option<u64>, Option<u64>, Option<String>);

struct Engine<'a, D: ProbeTarget + ?Sized> {
    dev: &'a mut D,
    /// Device blocks per unit.
    bpu: u64,
    /// Unit size in bytes.
    unit: usize,
    /// Units on the device.
    n: u64,
    salt: u64,
    rng: SplitMix64,
    backup: Option<&'a mut dyn Backup>,
    saved: HashSet<u64>,
    written: u64,
    read: u64,
    resets: u64,
    rounds: u32,
    progress: &'a mut dyn FnMut(Phase),
}

impl<D: ProbeTarget + ?Sized> Engine<'_, D> {
    fn run(&mut self, opts: &ProbeOptions, cache_max: u64) -> Result<Outcome, Stop> {
        let n = self.n;
        let end_start = n - cache_max;
        let samples = opts.samples.max(1) as u64;
        let round1 = self.sample_round(end_start, samples)?;
        let CacheSearch {
            end_results,
            cache,
            flush,
        } = self.cache_search(cache_max)?;

        // 3. Read round 1 (flushed by the cache-search writes), then the
        // grid that finds a wrap of any size, and confirm the wrap.
        let r1 = self.read_units(&round1)?;
        let all: Vec<(u64, Seen)> = r1.iter().chain(end_results.iter()).copied().collect();
        let grid = self.grid_read(&round1, flush)?;
        let wrap = match wrap_of(all.iter().chain(grid.iter()), n) {
            None => None,
            Some(d) => match self.refine_wrap(d, flush)? {
                Ok(m) => Some(m),
                Err(at) => return Ok((Verdict::Damaged, at, Some(d), cache, None)),
            },
        };
        let (lo, hi) = match bounds(&r1, &all, n, wrap, end_start) {
            Bounds::Genuine => return Ok((Verdict::Genuine, n, None, cache, None)),
            Bounds::Damaged(at) => return Ok((Verdict::Damaged, at, wrap, cache, None)),
            Bounds::Between(lo, hi) => (lo, hi),
        };

        // 4. Bisect by random sampling; filler written after the samples
        // pushes them out of the device cache.
        let Some(filler) = Filler::for_bisect(hi, flush, wrap, n) else {
            // Too little real storage to hold the filler: no usable start.
            return Ok((Verdict::Damaged, lo.min(hi), wrap, cache, None));
        };
        let real = match self.bisect(lo.max(filler.storage), hi, &filler, samples)? {
            Ok(real) => real,
            Err(at) => return Ok((Verdict::Damaged, at, wrap, cache, None)),
        };
        let verdict = match wrap {
            Some(m) if real == m => Verdict::Wraparound,
            Some(_) => Verdict::Chain,
            None => Verdict::Limbo,
        };
        Ok((verdict, real, wrap, cache, None))
    }

    /// Step 1, the wrap and sample round: unit 0, every power of two below the
    /// end region, and `samples` random units, written (with backup).
    fn sample_round(&mut self, end_start: u64, samples: u64) -> Result<Vec<u64>, Stop> {
        (self.progress)(Phase::Sampling);
        let mut round1: Vec<u64> = vec![0];
        let mut p = 1u64;
        while p < end_start {
            round1.push(p);
            p = p.saturating_mul(2);
        }
        let mut chosen: HashSet<u64> = round1.iter().copied().collect();
        let target = round1.len() + samples.min(end_start / 2) as usize;
        let mut tries = 0;
        while round1.len() < target && tries < 100_000 {
            tries += 1;
            let u = 1 + self.rng.below(end_start - 1);
            if chosen.insert(u) {
                round1.push(u);
            }
        }
        self.write_units(&round1, true)?;
        Ok(round1)
    }

    /// Step 2, the cache search at the end of the device: doubling batches of
    /// units written, the device reset, all read back, until fewer read
    /// back than were written (the cache size) or `cache_max` is reached.
    fn cache_search(&mut self, cache_max: u64) -> Result<CacheSearch, Stop> {
        let n = self.n;
        (self.progress)(Phase::CacheSearch);
        let mut end_written = 0u64;
        let mut batch = 1u64;
        let mut end_results: Vec<(u64, Seen)>;
        let mut cache: Option<u64> = None;
        loop {
            let new = batch.min(cache_max - end_written);
            let first = n - end_written - new;
            let fresh: Vec<u64> = (first..first + new).collect();
            self.write_units(&fresh, false)?;
            end_written += new;
            self.reset()?;
            let end: Vec<u64> = (n - end_written..n).collect();
            end_results = self.read_units(&end)?;
            let good = end_results.iter().filter(|(_, s)| *s == Seen::Good).count() as u64;
            if good < end_written {
                cache = Some(good);
                break;
            }
            if end_written == cache_max {
                break;
            }
            batch = end_written;
        }
        // Units a round must write after its samples to push them out of the
        // device's cache: more than the cache holds.
        let flush = if cache.is_some() {
            end_written
        } else {
            cache_max
        };
        Ok(CacheSearch {
            end_results,
            cache,
            flush,
        })
    }

    /// Step 4: bisects `[lo, hi)` by rounds of random samples (and the units
    /// just below `hi`), each followed by the `filler`: the first unit
    /// that does not hold data (`Ok`), or where to report a damaged device
    /// (`Err`).
    fn bisect(
        &mut self,
        mut lo: u64,
        mut hi: u64,
        filler: &Filler,
        samples: u64,
    ) -> Result<Result<u64, u64>, Stop> {
        let per_round = samples.max(filler.units.len() as u64 / 4).min(4096);
        let mut first_round = true;
        while lo < hi {
            if self.rounds >= MAX_ROUNDS {
                return Ok(Err(lo));
            }
            self.rounds += 1;
            (self.progress)(Phase::Bisect);
            let edge = (per_round / 4).max(1);
            let cand: Vec<u64> = if hi - lo <= per_round + edge {
                (lo..hi).collect()
            } else {
                // The units just below `hi` too: when the boundary is `hi`
                // itself (every wraparound fake: the wrap is its real
                // size), this round proves it instead of creeping up on it.
                let mut v: Vec<u64> = (hi - edge..hi).collect();
                let mut set: HashSet<u64> = v.iter().copied().collect();
                while (v.len() as u64) < per_round + edge {
                    let u = lo + self.rng.below(hi - lo);
                    if set.insert(u) {
                        v.push(u);
                    }
                }
                v
            };
            self.write_units(&cand, true)?;
            self.write_units(&filler.units, false)?;
            self.reset()?;
            let mut to_read = cand.clone();
            if first_round {
                to_read.extend_from_slice(&filler.check);
            }
            let all = self.read_units(&to_read)?;
            let picked: HashSet<u64> = cand.iter().copied().collect();
            let (res, back): (Vec<_>, Vec<_>) =
                all.into_iter().partition(|(u, _)| picked.contains(u));
            if back.iter().any(|&(_, s)| s != Seen::Good) {
                return Ok(Err(0));
            }
            first_round = false;
            let bad = res
                .iter()
                .filter(|&&(_, s)| s != Seen::Good)
                .map(|&(u, _)| u)
                .min();
            if let Some(b) = bad {
                if res.iter().any(|&(u, s)| s == Seen::Good && u > b) {
                    return Ok(Err(lo));
                }
                hi = b;
            }
            if let Some(g) = res
                .iter()
                .filter(|&&(u, s)| s == Seen::Good && u < hi)
                .map(|&(u, _)| u + 1)
                .max()
            {
                lo = lo.max(g);
            }
        }
        Ok(Ok(hi))
    }

    fn reset(&mut self) -> Result<(), Stop> {
        self.dev.flush()?;
        self.dev.reset()?;
        self.resets += 1;
        Ok(())
    }

    fn read_raw(&mut self, first: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let lba = first * self.bpu;
        let r = match self.dev.read_blocks(lba, buf) {
            Ok(()) => Ok(()),
            // One retry, as flash readers sometimes fail once.
            Err(_) => self.dev.read_blocks(lba, buf),
        };
        self.read += buf.len() as u64;
        r
    }

    fn write_raw(&mut self, first: u64, buf: &[u8]) -> Result<(), IoError> {
        let lba = first * self.bpu;
        let r = match self.dev.write_blocks(lba, buf) {
            Ok(()) => Ok(()),
            Err(_) => self.dev.write_blocks(lba, buf),
        };
        self.written += buf.len() as u64;
        r
    }

    /// Saves the original content of the units not saved yet, and commits.
    fn save_originals(&mut self, units: &[u64]) -> Result<(), Stop> {
        if self.backup.is_none() {
            return Ok(());
        }
        let mut todo: Vec<u64> = units
            .iter()
            .copied()
            .filter(|u| !self.saved.contains(u))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let mut buf = vec![0u8; self.unit * WRITE_RUN as usize];
        for (first, count) in runs(&todo, WRITE_RUN) {
            let b = &mut buf[..self.unit * count as usize];
            self.read_raw(first, b)?;
            if let Some(backup) = self.backup.as_deref_mut() {
                for (i, data) in b.chunks(self.unit).enumerate() {
                    backup.save(first + i as u64, data).map_err(Stop::Backup)?;
                }
            }
        }
        self.saved.extend(todo);
        if let Some(backup) = self.backup.as_deref_mut() {
            backup.commit().map_err(Stop::Backup)?;
        }
        Ok(())
    }

    /// Writes the probe blocks of `units`, contiguous runs in one request,
    /// the runs in random order if `shuffle`.
    fn write_units(&mut self, units: &[u64], shuffle: bool) -> Result<(), Stop> {
        self.save_originals(units)?;
        let mut sorted = units.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut rs = runs(&sorted, WRITE_RUN);
        if shuffle {
            self.rng.shuffle(&mut rs);
        }
        let mut buf = vec![0u8; self.unit * WRITE_RUN as usize];
        for (first, count) in rs {
            let b = &mut buf[..self.unit * count as usize];
            for (i, chunk) in b.chunks_mut(self.unit).enumerate() {
                fill(chunk, self.salt, first + i as u64);
            }
            self.write_raw(first, b)?;
        }
        Ok(())
    }

    /// Reads `units` back in random order (runs of up to [`READ_RUN`] units)
    /// and classifies each.
    fn read_units(&mut self, units: &[u64]) -> Result<Vec<(u64, Seen)>, Stop> {
        let mut sorted = units.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut rs = runs(&sorted, READ_RUN);
        self.rng.shuffle(&mut rs);
        let mut buf = vec![0u8; self.unit * READ_RUN as usize];
        let mut scratch = vec![0u8; self.unit];
        let mut out = BTreeMap::new();
        for (first, count) in rs {
            let b = &mut buf[..self.unit * count as usize];
            self.read_raw(first, b)?;
            for (i, chunk) in b.chunks(self.unit).enumerate() {
                let u = first + i as u64;
                out.insert(u, classify(chunk, self.salt, u, &mut scratch));
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Sequential write/read speed and random write IOPS inside the first
    /// `real` units.
    fn measure(&mut self, opts: &ProbeOptions, real: u64) -> Result<Option<Speeds>, Stop> {
        let seq = (opts.speed_bytes / self.unit as u64).min(real / 2);
        if seq < WRITE_RUN || opts.random_writes == 0 {
            return Ok(None);
        }
        let seq_units: Vec<u64> = (0..seq).collect();
        self.save_originals(&seq_units)?;
        let t = Instant::now();
        self.write_units(&seq_units, false)?;
        self.dev.flush()?;
        let write_secs = t.elapsed().as_secs_f64();
        self.reset()?;
        let mut buf = vec![0u8; self.unit * WRITE_RUN as usize];
        let t = Instant::now();
        let mut first = 0;
        while first < seq {
            let count = WRITE_RUN.min(seq - first);
            self.read_raw(first, &mut buf[..self.unit * count as usize])?;
            first += count;
        }
        let read_secs = t.elapsed().as_secs_f64();
        let mut set = HashSet::new();
        let mut picks = Vec::new();
        while picks.len() < opts.random_writes as usize && (set.len() as u64) < real {
            let u = self.rng.below(real);
            if set.insert(u) {
                picks.push(u);
            }
        }
        self.save_originals(&picks)?;
        let mut one = vec![0u8; self.unit];
        let t = Instant::now();
        for &u in &picks {
            fill(&mut one, self.salt, u);
            self.write_raw(u, &one)?;
        }
        self.dev.flush()?;
        let rand_secs = t.elapsed().as_secs_f64();
        let bytes = seq * self.unit as u64;
        let rate = |b: f64, s: f64| if s > 0.0 { b / s } else { f64::INFINITY };
        Ok(Some(Speeds {
            seq_write_bytes_per_sec: rate(bytes as f64, write_secs),
            seq_read_bytes_per_sec: rate(bytes as f64, read_secs),
            seq_bytes: bytes,
            random_write_iops: Some(rate(picks.len() as f64, rand_secs)),
            random_write_bytes: self.unit as u32,
        }))
    }

    /// Writes every saved unit back (newest first) and flushes.
    fn restore_all(&mut self) -> Result<Option<RestoreReport>, ProbeError> {
        let unit = self.unit as u32;
        match self.backup.as_deref_mut() {
            None => Ok(None),
            Some(b) => {
                (self.progress)(Phase::Restore);
                Ok(Some(restore(&mut *self.dev, b, unit)?))
            }
        }
    }

    /// Saving originals failed: writes back what was saved, and says so.
    fn backup_failed(&mut self, source: std::io::Error) -> ProbeError {
        match self.restore_all() {
            Ok(r) => ProbeError::Backup {
                source,
                restored: r.unwrap_or_default(),
            },
            Err(e) => e,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn runs_group_consecutive_units() {
        assert_eq!(
            runs(&[1, 2, 3, 7, 8, 20], 2),
            vec![(1, 2), (3, 1), (7, 2), (20, 1)]
        );
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(3 << 20, 1 << 40), 1 << 20);
    }
}
