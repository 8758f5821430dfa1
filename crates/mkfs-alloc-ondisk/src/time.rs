//! DOS date and time, the time stamps of FAT directory entries (and, as
//! date << 16 | time, of exFAT File entries).
//!
//! Sources: fatgen103 §6.1 "Date and Time Formats"; exFAT specification
//! §7.4.8 (Timestamp fields).

/// DOS date and time (local time is unknowable here: we record UTC) for a
/// Unix timestamp, clamped to the FAT range 1980-01-01..2107-12-31.
///
/// Worked in seconds since 1980-01-01, which the range keeps below 2^32:
/// 32-bit division, which a Cortex-M3 does in one instruction, where the
/// signed 64-bit division of [`civil_from_days`] costs firmware a library
/// routine.
pub fn dos_date_time(unix_secs: i64) -> (u16, u16) {
    /// 1980-01-01T00:00:00Z and 2108-01-01T00:00:00Z, in Unix seconds.
    const FIRST: i64 = 315_532_800;
    const END: i64 = 4_354_819_200;
    if unix_secs < FIRST {
        return ((1 << 5) | 1, 0);
    }
    if unix_secs >= END {
        return ((127 << 9) | (12 << 5) | 31, (23 << 11) | (59 << 5) | 29);
    }
    // In 0..END - FIRST, below 2^32.
    let since = (unix_secs - FIRST) as u32;
    let (days, secs) = (since / 86_400, since % 86_400);
    let (y, m, d) = civil_from_days_1980(days);
    let date = ((y - 1980) << 9) | (m << 5) | d;
    let time = ((secs / 3600) << 11) | (((secs / 60) % 60) << 5) | ((secs % 60) / 2);
    (date as u16, time as u16)
}

/// [`civil_from_days`] for days since 1980-01-01 (below 2^17 in the FAT
/// range), in unsigned 32-bit arithmetic: (year, month, day).
fn civil_from_days_1980(days: u32) -> (u32, u32, u32) {
    // Days since 0000-03-01: 1980-01-01 is day 3,652 since 1970-01-01.
    let z = days + 3_652 + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dos_dates() {
        // 2026-11-29 07:52:14 UTC
        let (date, time) = dos_date_time(1_795_938_734);
        assert_eq!(date >> 9, 2026 - 1980);
        assert_eq!((date >> 5) & 0xF, 11);
        assert_eq!(date & 0x1F, 29);
        assert_eq!(time >> 11, 7);
        assert_eq!((time >> 5) & 0x3F, 52);
        assert_eq!(time & 0x1F, 7);
        assert_eq!(dos_date_time(0), (33, 0));
    }

    /// The DOS fields from the signed 64-bit civil date, clamped as the
    /// FAT range is: what `dos_date_time` computes in 32 bits.
    fn dos_date_time_i64(unix_secs: i64) -> (u16, u16) {
        let days = unix_secs.div_euclid(86_400);
        let secs = unix_secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        if y < 1980 {
            return ((1 << 5) | 1, 0);
        }
        if y > 2107 {
            return ((127 << 9) | (12 << 5) | 31, (23 << 11) | (59 << 5) | 29);
        }
        let date = (((y - 1980) as u16) << 9) | ((m as u16) << 5) | d as u16;
        let time = (((secs / 3600) as u16) << 11)
            | ((((secs / 60) % 60) as u16) << 5)
            | ((secs % 60) / 2) as u16;
        (date, time)
    }

    #[test]
    fn dos_dates_in_32_bits_match_the_64_bit_civil_date() {
        // Each day of the range and its edges, and seconds across a day.
        let (first, end) = (315_532_800i64, 4_354_819_200i64);
        let mut cases = alloc::vec![i64::MIN, -1, 0, first - 1, first, end - 1, end, i64::MAX];
        cases.extend((first - 86_400..end + 86_400).step_by(86_400));
        cases.extend((first..first + 86_400).step_by(7));
        cases.extend((end - 86_400..end).step_by(7));
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(first - 86_400 + (x % (end - first + 2 * 86_400) as u64) as i64);
        }
        for t in cases {
            assert_eq!(dos_date_time(t), dos_date_time_i64(t), "{t}");
        }
    }
}
