//! DOS date and time, the time stamps of FAT directory entries (and, as
//! date << 16 | time, of exFAT File entries).
//!
//! Sources: fatgen103 §6.1 "Date and Time Formats"; exFAT specification
//! §7.4.8 (Timestamp fields).

/// DOS date and time (local time is unknowable here: we record UTC) for a
/// Unix timestamp, clamped to the FAT range 1980-01-01..2107-12-31.
pub fn dos_date_time(unix_secs: i64) -> (u16, u16) {
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
}
