//! Reading a format back: [`Recording`] remembers what was written to a
//! target (a CRC-64 per MiB, not the bytes), [`WriteDigest::verify`] reads
//! the target back and compares.
//!
//! ```text
//!  Recording<D> ──► (the format writes through it) ──► WriteDigest ──► verify(&mut D, map)
//!   writes:  whole MiB pieces ─► CRC-64 (8 bytes per MiB written)
//!            parts of a piece ─► their bytes, until the piece is whole
//!            zeros             ─► a range (no bytes kept)
//! ```
//!
//! Memory stays bounded by what was written divided by a MiB (plus the
//! bytes of pieces written only in part: the edges of the regions written),
//! whatever the medium's size. A later write over part of a piece already
//! folded into its CRC (a small volume, whose boot sector, written last,
//! shares its MiB with the metadata and files written before it) reads the
//! piece back from the target first: when it matches its CRC those are the
//! bytes written, the write is applied to them and the piece folded again;
//! when it does not, the piece is a mismatch already. A CRC is never
//! patched with bytes read back (a target that reads one byte wrong both
//! before and after the rewrite would cancel out). The piece read back
//! costs one MiB read per such write.
//! [`VerifyReport::unverifiable_bytes`] counts the pieces rewritten in part
//! after they were folded without that read (a [`WriteDigest`] fed by
//! anything but [`Recording`]); a [`Recording`] leaves none.
//!
//! The verification reads every piece written, and every byte of the
//! medium's [`ExtentMap`](crate::ExtentMap) (what the format relies on
//! being zero), in offset order, in reads of up to [`VERIFY_READ`] bytes.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, Instant};

use mkfs_alloc_blockio::{BlockIo, IoError};

/// Bytes in one verified piece (aligned on the medium).
pub const PIECE: u64 = 1 << 20;
/// A piece written whole with at least this many bytes of data (not
/// zeros) keeps only its CRC.
pub const FOLD: u64 = 128 << 10;
/// The largest read of the verification.
pub const VERIFY_READ: u64 = 8 << 20;

const CRC: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_XZ);

/// What one piece holds, as written.
#[derive(Debug, Clone)]
enum Piece {
    /// Written whole: its CRC-64.
    Whole(u64),
    /// Written in part: the parts (offset in the piece, bytes; `None` for
    /// zeros), sorted, not overlapping.
    Parts(Vec<(u32, Part)>),
    /// Rewritten in part after it was whole, without its bytes read back
    /// first: these bytes cannot be checked.
    Lost,
    /// Read back before a partial rewrite and found to differ from its CRC:
    /// a mismatch.
    Bad,
}

#[derive(Debug, Clone)]
enum Part {
    Zeros(u32),
    Bytes(Vec<u8>),
}

impl Part {
    fn len(&self) -> u32 {
        match self {
            Part::Zeros(n) => *n,
            Part::Bytes(b) => b.len() as u32,
        }
    }

    /// The part from `from` to `to` (offsets inside it).
    fn slice(&self, from: u32, to: u32) -> Part {
        match self {
            Part::Zeros(_) => Part::Zeros(to - from),
            Part::Bytes(b) => Part::Bytes(b[from as usize..to as usize].to_vec()),
        }
    }
}

/// What was written to a target: made by [`Recording`], checked against
/// the target by [`WriteDigest::verify`].
#[derive(Debug, Clone, Default)]
pub struct WriteDigest {
    pieces: BTreeMap<u64, Piece>,
    /// Byte ranges written with zeros in pieces that hold nothing else
    /// (start → end), not touching one another.
    zeros: BTreeMap<u64, u64>,
    bytes_written: u64,
}

/// A [`BlockIo`] that records what is written through it
/// ([`Recording::digest`]) and passes everything on.
///
/// ```
/// use mkfs_alloc::blockio::{BlockIo, MemDisk};
/// use mkfs_alloc::verify::Recording;
///
/// let mut rec = Recording::new(MemDisk::new(512, 8192)?);
/// rec.write_blocks(2048, &vec![0xA5; 4096])?;
/// rec.write_zeroes(0, 16)?;
/// let (mut disk, digest) = rec.into_parts();
/// let report = digest.verify(&mut disk, &[], &mut |_, _| {})?;
/// assert_eq!(report.mismatches, 0);
/// assert_eq!(report.bytes_read, 2 << 20); // two pieces read back
/// disk.write_blocks(2049, &[0; 512])?; // the medium loses a block
/// assert_eq!(digest.verify(&mut disk, &[], &mut |_, _| {})?.mismatches, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Recording<D> {
    inner: D,
    digest: WriteDigest,
    /// False: only [`WriteDigest::bytes_written`] is kept (no CRC, nothing
    /// to verify).
    keep: bool,
}

impl<D: BlockIo> Recording<D> {
    /// Records what is written to `inner` from now on.
    pub fn new(inner: D) -> Self {
        Recording {
            inner,
            digest: WriteDigest::default(),
            keep: true,
        }
    }

    /// Counts the bytes written to `inner` from now on, and nothing else:
    /// no CRC is computed (a run without read-back) and the digest holds no
    /// piece to verify.
    pub fn counting(inner: D) -> Self {
        Recording {
            keep: false,
            ..Recording::new(inner)
        }
    }

    /// What was written so far.
    pub fn digest(&self) -> &WriteDigest {
        &self.digest
    }

    /// The target, for reading it back.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// The target and what was written to it.
    pub fn into_parts(self) -> (D, WriteDigest) {
        (self.inner, self.digest)
    }

    /// Before a write of `len` bytes at byte `at`: the pieces it covers in
    /// part that are folded into their CRC are read back from the target
    /// and, if they match it, unfolded into their bytes (the write then
    /// changes them and they fold again); else they are [`Piece::Bad`].
    fn unfold_for(&mut self, at: u64, len: u64) -> Result<(), IoError> {
        if !self.keep {
            return Ok(());
        }
        let bs = u64::from(self.inner.block_size());
        for index in self.digest.folded_in_part(at, len) {
            let Some(&Piece::Whole(crc)) = self.digest.pieces.get(&index) else {
                continue;
            };
            let mut buf = vec![0u8; PIECE as usize];
            self.inner.read_blocks(index * PIECE / bs, &mut buf)?;
            let piece = if CRC.checksum(&buf) == crc {
                Piece::Parts(vec![(0, Part::Bytes(buf))])
            } else {
                Piece::Bad
            };
            self.digest.pieces.insert(index, piece);
        }
        Ok(())
    }
}

impl<D: BlockIo> BlockIo for Recording<D> {
    fn block_size(&self) -> u32 {
        self.inner.block_size()
    }
    fn num_blocks(&self) -> u64 {
        self.inner.num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_blocks(lba, dst)
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = u64::from(self.inner.block_size());
        self.unfold_for(lba * bs, src.len() as u64)?;
        self.inner.write_blocks(lba, src)?;
        if self.keep {
            self.digest
                .record(lba * u64::from(self.inner.block_size()), src);
        } else {
            self.digest.bytes_written += src.len() as u64;
        }
        Ok(())
    }
    fn write_zeroes(&mut self, lba: u64, count: u64) -> Result<(), IoError> {
        let bs = u64::from(self.inner.block_size());
        self.unfold_for(lba * bs, count * bs)?;
        self.inner.write_zeroes(lba, count)?;
        if self.keep {
            self.digest.record_zeros(lba * bs, count * bs);
        } else {
            self.digest.bytes_written += count * bs;
        }
        Ok(())
    }
    fn reads_as_zero(&self) -> bool {
        self.inner.reads_as_zero()
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.inner.flush()
    }
}

/// What [`WriteDigest::verify`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Bytes compared.
    pub bytes_verified: u64,
    /// Bytes read from the target (whole pieces: at least the bytes compared).
    pub bytes_read: u64,
    /// Pieces that differ from what was written.
    pub mismatches: u64,
    /// Byte offset of the first piece that differs.
    pub first_mismatch: Option<u64>,
    /// Bytes that could not be checked (pieces rewritten in part after they
    /// were folded into their CRC, without being read back first; none for
    /// a digest made by [`Recording`]).
    pub unverifiable_bytes: u64,
    /// Time spent reading and comparing.
    pub elapsed: Duration,
}

impl VerifyReport {
    /// Bytes read per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.bytes_read as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl WriteDigest {
    /// Bytes written (zeros included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Pieces and zero ranges held: what the digest costs in memory, in
    /// entries.
    pub fn entries(&self) -> usize {
        self.pieces.len() + self.zeros.len()
    }

    /// Pieces folded into their CRC that a write of `len` bytes at `at`
    /// covers in part (at most two: its first and its last piece).
    fn folded_in_part(&self, at: u64, len: u64) -> Vec<u64> {
        let mut out = Vec::new();
        if len == 0 {
            return out;
        }
        let end = at + len;
        for index in [at / PIECE, (end - 1) / PIECE] {
            let whole = at <= index * PIECE && end >= (index + 1) * PIECE;
            let folded = matches!(self.pieces.get(&index), Some(Piece::Whole(_)));
            if !whole && folded && !out.contains(&index) {
                out.push(index);
            }
        }
        out
    }

    fn record(&mut self, offset: u64, src: &[u8]) {
        self.bytes_written += src.len() as u64;
        let mut at = 0usize;
        while at < src.len() {
            let pos = offset + at as u64;
            let index = pos / PIECE;
            let within = (pos % PIECE) as u32;
            let n = ((PIECE - u64::from(within)) as usize).min(src.len() - at);
            let bytes = &src[at..at + n];
            if bytes.iter().all(|&b| b == 0) {
                self.zero_part(index, within, n as u32);
            } else {
                self.data_part(index, within, bytes);
            }
            at += n;
        }
    }

    fn record_zeros(&mut self, offset: u64, len: u64) {
        self.bytes_written += len;
        let end = offset + len;
        // Pieces that hold data take the zeros as a part; the rest is a range.
        let first = offset / PIECE;
        let last = (end - 1) / PIECE;
        let held: Vec<u64> = self.pieces.range(first..=last).map(|(&i, _)| i).collect();
        let mut at = offset;
        for index in held {
            let p_start = index * PIECE;
            if at < p_start {
                self.add_zero_range(at, p_start);
            }
            let from = at.max(p_start);
            let to = end.min(p_start + PIECE);
            self.zero_part(index, (from - p_start) as u32, (to - from) as u32);
            at = to;
        }
        if at < end {
            self.add_zero_range(at, end);
        }
    }

    fn zero_part(&mut self, index: u64, within: u32, n: u32) {
        match self.pieces.get_mut(&index) {
            None => {
                let s = index * PIECE + u64::from(within);
                self.add_zero_range(s, s + u64::from(n));
            }
            Some(piece) => put_part(piece, within, Part::Zeros(n)),
        }
    }

    fn data_part(&mut self, index: u64, within: u32, bytes: &[u8]) {
        if within == 0 && bytes.len() as u64 == PIECE {
            self.take_zero_ranges(index);
            self.pieces.insert(index, Piece::Whole(CRC.checksum(bytes)));
            return;
        }
        if !self.pieces.contains_key(&index) {
            // Zeros written before into this piece become its parts.
            let mut parts = Vec::new();
            for r in self.take_zero_ranges(index) {
                let s = (r.start - index * PIECE) as u32;
                parts.push((s, Part::Zeros((r.end - r.start) as u32)));
            }
            self.pieces.insert(index, Piece::Parts(parts));
        }
        if let Some(piece) = self.pieces.get_mut(&index) {
            put_part(piece, within, Part::Bytes(bytes.to_vec()));
        }
    }

    fn add_zero_range(&mut self, mut start: u64, mut end: u64) {
        // Merge with ranges that touch [start, end).
        if let Some((&s, &e)) = self.zeros.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.zeros.remove(&s);
            }
        }
        let touching: Vec<u64> = self.zeros.range(start..=end).map(|(&s, _)| s).collect();
        for s in touching {
            if let Some(e) = self.zeros.remove(&s) {
                end = end.max(e);
            }
        }
        self.zeros.insert(start, end);
    }

    /// Removes the zero ranges' share of piece `index`, returning it.
    fn take_zero_ranges(&mut self, index: u64) -> Vec<Range<u64>> {
        let (ps, pe) = (index * PIECE, (index + 1) * PIECE);
        let mut out = Vec::new();
        let hit: Vec<(u64, u64)> = self
            .zeros
            .range(..pe)
            .rev()
            .take_while(|(_, &e)| e > ps)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in hit {
            self.zeros.remove(&s);
            if s < ps {
                self.zeros.insert(s, ps);
            }
            if e > pe {
                self.zeros.insert(pe, e);
            }
            out.push(s.max(ps)..e.min(pe));
        }
        out.sort_by_key(|r| r.start);
        out
    }

    /// Reads the target back and compares it with what was written, and
    /// checks that `zero_ranges` (byte ranges of the medium the format
    /// relies on being zero: its [`ExtentMap`](crate::ExtentMap)) read as
    /// zero wherever nothing else was written. `progress` gets `(bytes
    /// done, bytes total)`.
    ///
    /// # Errors
    ///
    /// The target's read error.
    pub fn verify<D: BlockIo + ?Sized>(
        &self,
        dev: &mut D,
        zero_ranges: &[Range<u64>],
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<VerifyReport, IoError> {
        let started = Instant::now();
        let device_end = dev.num_blocks() * u64::from(dev.block_size());
        let plan = ReadPlan::new(self, zero_ranges, device_end);
        let total = plan.total();
        let mut report = VerifyReport::default();
        let mut buf = Vec::new();
        for run in plan.runs() {
            buf.resize((run.end - run.start) as usize, 0);
            dev.read_blocks(run.start / u64::from(dev.block_size()), &mut buf)?;
            report.bytes_read += run.end - run.start;
            for (i, chunk) in buf.chunks(PIECE as usize).enumerate() {
                let at = run.start + i as u64 * PIECE;
                self.check_piece(at, chunk, zero_ranges, &mut report);
            }
            progress(report.bytes_read, total);
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Compares the piece at byte `at` (read into `got`) with what was
    /// written there.
    fn check_piece(&self, at: u64, got: &[u8], zeros: &[Range<u64>], r: &mut VerifyReport) {
        let index = at / PIECE;
        let mut bad = false;
        let mut written: Vec<Range<u32>> = Vec::new();
        match self.pieces.get(&index) {
            Some(Piece::Whole(crc)) => {
                r.bytes_verified += got.len() as u64;
                bad = CRC.checksum(got) != *crc;
                written.push(0..got.len() as u32);
            }
            Some(Piece::Parts(parts)) => {
                for (off, part) in parts {
                    let range = *off as usize..(*off + part.len()) as usize;
                    let seen = &got[range.clone()];
                    bad |= match part {
                        Part::Zeros(_) => seen.iter().any(|&b| b != 0),
                        Part::Bytes(b) => seen != &b[..],
                    };
                    r.bytes_verified += part.len() as u64;
                    written.push(range.start as u32..range.end as u32);
                }
            }
            Some(Piece::Lost) => {
                r.unverifiable_bytes += got.len() as u64;
                return;
            }
            Some(Piece::Bad) => {
                r.bytes_verified += got.len() as u64;
                r.mismatches += 1;
                r.first_mismatch.get_or_insert(at);
                return;
            }
            None => {}
        }
        // Zeros written as ranges, and the map's ranges nothing wrote: zero.
        let end = at + got.len() as u64;
        let zero_here = self
            .zeros
            .range(..end)
            .rev()
            .take_while(|(_, &e)| e > at)
            .map(|(&s, &e)| s..e)
            .chain(
                zeros
                    .iter()
                    .filter(|z| z.start < end && z.end > at)
                    .cloned(),
            );
        for z in zero_here {
            let (s, e) = ((z.start.max(at) - at) as u32, (z.end.min(end) - at) as u32);
            for free in subtract(s..e, &written) {
                let seen = &got[free.start as usize..free.end as usize];
                bad |= seen.iter().any(|&b| b != 0);
                r.bytes_verified += u64::from(free.end - free.start);
                written.push(free);
            }
        }
        if bad {
            r.mismatches += 1;
            r.first_mismatch.get_or_insert(at);
        }
    }
}

/// `range` less the ranges of `taken` (unsorted, maybe overlapping).
fn subtract(range: Range<u32>, taken: &[Range<u32>]) -> Vec<Range<u32>> {
    let mut out = vec![range];
    for t in taken {
        out = out
            .into_iter()
            .flat_map(|r| {
                if t.end <= r.start || t.start >= r.end {
                    vec![r]
                } else {
                    [r.start..t.start, t.end..r.end]
                        .into_iter()
                        .filter(|x| x.start < x.end)
                        .collect()
                }
            })
            .collect();
    }
    out
}

/// Puts `part` at `within` into `piece`, replacing what it overlaps; a
/// piece whose parts cover it whole becomes [`Piece::Whole`].
fn put_part(piece: &mut Piece, within: u32, part: Part) {
    let (s, e) = (within, within + part.len());
    match piece {
        Piece::Lost | Piece::Bad => {}
        Piece::Whole(_) => {
            if s == 0 && u64::from(e) == PIECE {
                *piece = Piece::Parts(vec![(0, part)]);
                finish_piece(piece);
            } else {
                *piece = Piece::Lost;
            }
        }
        Piece::Parts(parts) => {
            let mut kept = Vec::with_capacity(parts.len() + 2);
            for (o, p) in parts.drain(..) {
                let pe = o + p.len();
                if pe <= s || o >= e {
                    kept.push((o, p));
                    continue;
                }
                if o < s {
                    kept.push((o, p.slice(0, s - o)));
                }
                if pe > e {
                    kept.push((e, p.slice(e - o, pe - o)));
                }
            }
            kept.push((s, part));
            kept.sort_by_key(|(o, _)| *o);
            *parts = kept;
            finish_piece(piece);
        }
    }
}

/// A piece whose parts cover it whole, [`FOLD`] bytes of them or more
/// data: its CRC, its bytes dropped. A piece with less data keeps it (the
/// edges of metadata regions, written around zeros: a later write there
/// stays checkable).
fn finish_piece(piece: &mut Piece) {
    let Piece::Parts(parts) = piece else { return };
    let covered: u64 = parts.iter().map(|(_, p)| u64::from(p.len())).sum();
    let data: u64 = parts
        .iter()
        .filter(|(_, p)| matches!(p, Part::Bytes(_)))
        .map(|(_, p)| u64::from(p.len()))
        .sum();
    if covered != PIECE || data < FOLD {
        return;
    }
    let mut digest = CRC.digest();
    let zeros = [0u8; 4096];
    for (_, p) in parts.iter() {
        match p {
            Part::Bytes(b) => digest.update(b),
            Part::Zeros(n) => {
                let mut left = *n as usize;
                while left > 0 {
                    let k = left.min(zeros.len());
                    digest.update(&zeros[..k]);
                    left -= k;
                }
            }
        }
    }
    *piece = Piece::Whole(digest.finalize());
}

mod plan;
use plan::ReadPlan;

#[cfg(test)]
mod tests;
