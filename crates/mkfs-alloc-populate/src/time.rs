//! Timestamps: source mtimes in UTC, clamped to what FAT and exFAT store and
//! to `SOURCE_DATE_EPOCH`.
//!
//! Rules (reproducible builds, systemd #43545): an mtime newer than the
//! clamp is replaced by the clamp, older ones are kept; an mtime before
//! 1980-01-01 (the first date FAT and exFAT can store) becomes 1980-01-01
//! 00:00:00, one after 2107-12-31 23:59:59 becomes that. Times are stored in
//! UTC: FAT has no time zone field (readers take it as local time), exFAT
//! records the UTC offset (0, marked valid). The DOS time field counts
//! 2-second units; the 10-millisecond increment beside it (0..=199) carries
//! the odd second and the hundredths, in exFAT's timestamps and FAT's
//! creation time (FAT's write time has no increment: it keeps the even
//! second below).

use mkfs_alloc_layout::Timestamp;

/// 1980-01-01T00:00:00Z: the first instant FAT and exFAT can store.
pub const MIN_SECS: i64 = 315_532_800;
/// 2107-12-31T23:59:59Z: the last second exFAT (and FAT's creation time)
/// can store: the time field's 23:59:58 plus 100 in the 10-millisecond
/// increment (exFAT specification §7.4.8 and §7.4.9), so that exFAT keeps the
/// odd second of the last day.
pub const MAX_SECS: i64 = 4_354_819_199;

/// How mtimes are clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimePolicy {
    /// `SOURCE_DATE_EPOCH`: mtimes newer than this are set to it.
    pub clamp: Option<i64>,
}

impl TimePolicy {
    /// The clamp the environment asks for: `SOURCE_DATE_EPOCH`, when it
    /// holds a whole number of seconds (the reproducible-builds convention,
    /// <https://reproducible-builds.org/specs/source-date-epoch/>); none
    /// otherwise.
    pub fn from_env() -> TimePolicy {
        TimePolicy {
            clamp: std::env::var("SOURCE_DATE_EPOCH")
                .ok()
                .and_then(|v| v.trim().parse().ok()),
        }
    }

    /// The timestamp stored for a source mtime.
    pub fn apply(&self, t: Timestamp) -> Timestamp {
        let mut t = t;
        if let Some(c) = self.clamp {
            if t.secs >= c {
                t = Timestamp { secs: c, nanos: 0 };
            }
        }
        if t.secs < MIN_SECS {
            t = Timestamp {
                secs: MIN_SECS,
                nanos: 0,
            };
        }
        if t.secs > MAX_SECS {
            t = Timestamp {
                secs: MAX_SECS,
                nanos: 0,
            };
        }
        t
    }
}

/// A stored timestamp in DOS format: date, time (2-second units) and the
/// 10-millisecond increment (0..=199) that FAT's creation time and exFAT's
/// timestamps add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DosTime {
    /// Bits 15-9 year - 1980, 8-5 month, 4-0 day.
    pub date: u16,
    /// Bits 15-11 hours, 10-5 minutes, 4-0 seconds / 2.
    pub time: u16,
    /// 10 ms units within the 2-second interval, 0..=199.
    pub centis: u8,
}

impl DosTime {
    /// The DOS form of an (already clamped) UTC timestamp.
    pub fn from_utc(t: Timestamp) -> DosTime {
        let (date, time) = mkfs_alloc_ondisk::time::dos_date_time(t.secs);
        let centis = if (MIN_SECS..=MAX_SECS).contains(&t.secs) {
            (t.secs.rem_euclid(2) * 100) as u8 + (t.nanos.min(999_999_999) / 10_000_000) as u8
        } else {
            0
        };
        DosTime { date, time, centis }
    }

    /// exFAT's 32-bit timestamp: time in the low half, date in the high.
    pub fn exfat(self) -> u32 {
        (u32::from(self.date) << 16) | u32::from(self.time)
    }
}

/// exFAT UTC offset field meaning "UTC, offset valid" (bit 7 set, offset 0).
pub const EXFAT_UTC: u8 = 0x80;

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(secs: i64) -> Timestamp {
        Timestamp { secs, nanos: 0 }
    }

    #[test]
    fn clamps() {
        let p = TimePolicy {
            clamp: Some(1_700_000_000),
        };
        assert_eq!(p.apply(ts(1_800_000_000)), ts(1_700_000_000));
        assert_eq!(p.apply(ts(1_600_000_000)), ts(1_600_000_000));
        let with_nanos = Timestamp {
            secs: 1_700_000_000,
            nanos: 5,
        };
        assert_eq!(p.apply(with_nanos), ts(1_700_000_000));
        assert_eq!(p.apply(ts(0)), ts(MIN_SECS));
        assert_eq!(p.apply(ts(-5)), ts(MIN_SECS));
        assert_eq!(TimePolicy::default().apply(ts(i64::MAX)), ts(MAX_SECS));
    }

    #[test]
    fn dos_forms() {
        // 1980-01-01 00:00:00 = date 0x0021, time 0.
        let d = DosTime::from_utc(ts(MIN_SECS));
        assert_eq!((d.date, d.time, d.centis), (0x21, 0, 0));
        // 2107-12-31 23:59:59: the time field's 23:59:58 and the odd
        // second in the increment; with 990 ms, 199 (its largest value).
        let d = DosTime::from_utc(ts(MAX_SECS));
        assert_eq!(d.date, (127 << 9) | (12 << 5) | 31);
        assert_eq!((d.time, d.centis), ((23 << 11) | (59 << 5) | 29, 100));
        let last = Timestamp {
            secs: MAX_SECS,
            nanos: 999_999_999,
        };
        assert_eq!(
            DosTime::from_utc(TimePolicy::default().apply(last)).centis,
            199
        );
        // Later times become 23:59:59.00.
        let d = DosTime::from_utc(TimePolicy::default().apply(ts(MAX_SECS + 7)));
        assert_eq!((d.time & 0x1F, d.centis), (29, 100));
        // Every day's 23:59:59 keeps its odd second.
        let d = DosTime::from_utc(ts(1_715_039_999)); // 2024-05-06 23:59:59
        assert_eq!((d.time, d.centis), ((23 << 11) | (59 << 5) | 29, 100));
        // An odd second with 250 ms: 1 s + 25 centiseconds in the increment.
        let d = DosTime::from_utc(Timestamp {
            secs: MIN_SECS + 3,
            nanos: 250_000_000,
        });
        assert_eq!((d.time & 0x1F, d.centis), (1, 125));
        assert_eq!(d.exfat(), (0x21 << 16) | 1);
    }
}
