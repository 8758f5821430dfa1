//! Finding a wrap of any size, not only a power of two.
//!
//! A wraparound fake stores unit `u` at `u % m`. The cache search writes
//! the last `C` units of the device in one contiguous region; if the wrap
//! `m` is below the device's size minus `C`, those units land on the cells
//! of the `C` consecutive units `n - C - m .. n - m`. Reading one unit in
//! every `C` across the device (the **grid**: reads only, no writes) hits
//! that window, and the unit read there returns the block of an end unit
//! exactly `m` further on. A wrap above that is seen by round 1 itself: the
//! end region then overwrites unit 0. So, under the model, any wrap of at
//! least `C` units is seen on a device of up to [`MAX_GRID`] times `C`
//! (1 TiB with the default 64 MiB cache search); beyond that the grid's
//! spacing grows and a wrap is found only if it falls on it.
//!
//! The distances seen are multiples of `m`: their greatest common divisor
//! `d` is `m` or a multiple of it. [`Engine::refine_wrap`] settles which:
//! it writes the filler at the start, then reads every divisor `c` of `d`
//! from the filler's length on. If `m` divides `c`, unit `c` returns unit
//! 0's block; reading them all proves the smallest wrap the model allows,
//! so the real size reported is the one proven, not a power of two below it.

use super::*;

/// Most grid reads; beyond, the spacing grows with the device.
pub(super) const MAX_GRID: u64 = 16384;

impl<D: ProbeTarget + ?Sized> Engine<'_, D> {
    /// Reads one unit in every `spacing` below the end region (skipping
    /// the units of round 1, already read) and returns the aliases seen.
    pub(super) fn grid_read(
        &mut self,
        round1: &[u64],
        spacing: u64,
    ) -> Result<Vec<(u64, Seen)>, Stop> {
        let end = self.n.saturating_sub(spacing);
        let step = spacing.max(end.div_ceil(MAX_GRID)).max(1);
        let skip: HashSet<u64> = round1.iter().copied().collect();
        let points: Vec<u64> = (1..)
            .map(|k| k * step)
            .take_while(|&u| u < end)
            .filter(|u| !skip.contains(u))
            .collect();
        let res = self.read_units(&points)?;
        Ok(res
            .into_iter()
            .filter(|(_, s)| matches!(s, Seen::Alias(_)))
            .collect())
    }

    /// Narrows a wrap candidate `d` to the smallest wrap the reads allow
    /// (`Ok`), or finds no usable start (`Err(0)`: the filler did not read
    /// back).
    pub(super) fn refine_wrap(&mut self, d: u64, flush: u64) -> Result<Result<u64, u64>, Stop> {
        let divs: Vec<u64> = divisors(d)
            .into_iter()
            .filter(|&c| c >= flush && c < d)
            .collect();
        if divs.is_empty() {
            return Ok(Ok(d));
        }
        let filler: Vec<u64> = (0..flush).collect();
        self.write_units(&filler, false)?;
        self.reset()?;
        let mut to_read = divs;
        to_read.extend_from_slice(&filler);
        let res = self.read_units(&to_read)?;
        if res.iter().any(|&(u, s)| u < flush && s != Seen::Good) {
            return Ok(Err(0));
        }
        Ok(Ok(res
            .iter()
            .filter_map(|&(u, s)| match s {
                Seen::Alias(v) if v != u => Some(u.abs_diff(v)),
                _ => None,
            })
            .fold(d, gcd)))
    }
}

/// Every divisor of `d > 0`, ascending.
pub(super) fn divisors(d: u64) -> Vec<u64> {
    let mut low = Vec::new();
    let mut high = Vec::new();
    let mut i = 1u64;
    while i.saturating_mul(i) <= d {
        if d % i == 0 {
            low.push(i);
            if i != d / i {
                high.push(d / i);
            }
        }
        i += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_are_complete_and_sorted() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1), vec![1]);
        let d = divisors(3 << 20);
        assert_eq!(d.len(), 2 * 21);
        assert!(d.windows(2).all(|w| w[0] < w[1]));
    }
}
