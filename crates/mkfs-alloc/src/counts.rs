//! Planning with counts given as plain numbers (the FAT12/16 root
//! directory's entries, the number of FATs), whose refusals come in the
//! order planning checks them, and whether a planning error is the
//! alignment's doing.

use mkfs_alloc_layout::{FormatOptions, PlanError};
use mkfs_alloc_partition::PartitionError;

use crate::{FormatError, MediumOptions};

/// The counts a caller takes as numbers and sets through
/// [`FormatOptions::root_entries`] and [`FormatOptions::fats`] at planning
/// ([`MediumOptions::plan_counted`]); any value is valid here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// The FAT12/16 root directory's entries (`None`: the default).
    pub root_entries: Option<u32>,
    /// The number of FATs (`None`: the default).
    pub fats: Option<u8>,
}

impl Counts {
    /// `o` with the counts, through their setters.
    ///
    /// # Errors
    ///
    /// The first setter's refusal (the root entries', as planning checks
    /// them first).
    pub fn apply(&self, mut o: FormatOptions) -> Result<FormatOptions, PlanError> {
        if let Some(n) = self.root_entries {
            o = o.root_entries(n)?;
        }
        if let Some(n) = self.fats {
            o = o.fats(n)?;
        }
        Ok(o)
    }

    /// `o` with the counts [`Counts::apply`] accepts, and valid stand-ins
    /// for those it refuses: no root entries, one FAT (which the SD layout
    /// refuses, as it refuses any count but two).
    pub fn stand_in(&self, mut o: FormatOptions) -> FormatOptions {
        if let Some(Ok(with)) = self.root_entries.map(|n| o.clone().root_entries(n)) {
            o = with;
        }
        if let Some(n) = self.fats {
            let n = if o.clone().fats(n).is_ok() { n } else { 1 };
            if let Ok(with) = o.clone().fats(n) {
                o = with;
            }
        }
        o
    }
}

/// Why [`MediumOptions::plan_counted`] failed.
#[derive(Debug)]
pub enum CountedError {
    /// Planning with the counts failed; the options it planned with.
    Planned(FormatError, Box<MediumOptions>),
    /// A count was refused, and planning with stand-ins found an error it
    /// checks before the counts, which comes first.
    Before(FormatError),
    /// A count its setter refuses.
    Count(FormatError),
}

/// The errors planning finds before it checks the root entries and the
/// number of FATs.
fn checked_before_counts(e: &FormatError) -> bool {
    use FormatError as F;
    use PlanError as P;
    matches!(
        e,
        F::Partition(_)
            | F::Write(_)
            | F::Plan(P::SectorSize(_) | P::PartitionOffset { .. } | P::Align { .. } | P::Sd(_))
    )
}

/// Whether an alignment asked for is to blame for a planning error
/// ([`AlignBlame::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlignBlame {
    /// A value no planner accepts (not a power of two, out of range).
    Invalid,
    /// The options plan without it: it leaves too little room.
    TooLittleRoom,
    /// Something else is wrong.
    No,
}

impl MediumOptions {
    /// `run` on these options with `counts` set through their setters. A
    /// count its setter refuses is reported where planning checks it:
    /// after the block and sector sizes, the table, the partition offset,
    /// the alignment and the SD layout's conflicts, so that an error among
    /// those (found by `run` with [`Counts::stand_in`]) comes first.
    ///
    /// # Errors
    ///
    /// [`CountedError`]: `run`'s error with the options it had, or a
    /// count's refusal, or an error found before it.
    pub fn plan_counted<T>(
        &self,
        counts: Counts,
        run: impl Fn(&MediumOptions) -> Result<T, FormatError>,
    ) -> Result<T, CountedError> {
        let format = self.format_options().clone();
        match counts.apply(format.clone()) {
            Ok(counted) => {
                let o = self.clone().format(counted);
                run(&o).map_err(|e| CountedError::Planned(e, Box::new(o)))
            }
            Err(refused) => {
                let o = self.clone().format(counts.stand_in(format));
                match run(&o) {
                    Err(e) if checked_before_counts(&e) => Err(CountedError::Before(e)),
                    _ => Err(CountedError::Count(refused.into())),
                }
            }
        }
    }
}

impl AlignBlame {
    /// Whether the alignment of `planned`, the options whose planning on a
    /// medium of `medium_bytes` in `block_size`-byte blocks failed with
    /// `e`, is to blame (`None`: options no other alignment mends, such as
    /// a refused count). For [`AlignBlame::TooLittleRoom`] it plans once
    /// more, without the alignment.
    pub fn of(
        e: &FormatError,
        planned: Option<&MediumOptions>,
        medium_bytes: u64,
        block_size: u32,
    ) -> AlignBlame {
        if !e.is_invalid_input() {
            return AlignBlame::No;
        }
        if matches!(
            e,
            FormatError::Plan(PlanError::Align { .. })
                | FormatError::Partition(PartitionError::InvalidAlignment { .. })
        ) {
            return AlignBlame::Invalid;
        }
        let Some(o) = planned else {
            return AlignBlame::No;
        };
        let without = o.clone().format(o.format_options().clone().default_align());
        if without.plan(medium_bytes, block_size).is_ok() {
            AlignBlame::TooLittleRoom
        } else {
            AlignBlame::No
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mkfs_alloc_layout::FsKind;

    fn counts(root_entries: Option<u32>, fats: Option<u8>) -> Counts {
        Counts { root_entries, fats }
    }

    #[test]
    fn counts_are_set_through_their_setters() {
        let o = MediumOptions::new().fs(FsKind::Fat16);
        let plan = o
            .plan_counted(counts(Some(1024), Some(1)), |o| o.plan(64 << 20, 512))
            .expect("valid counts plan");
        assert_eq!(plan.layout().fat_count(), 1);
        let refused = o.plan_counted(counts(None, Some(3)), |o| o.plan(64 << 20, 512));
        assert!(matches!(
            refused,
            Err(CountedError::Count(FormatError::Plan(PlanError::FatCount(
                3
            ))))
        ));
        let refused = o.plan_counted(counts(Some(0), Some(3)), |o| o.plan(64 << 20, 512));
        assert!(matches!(
            refused,
            Err(CountedError::Count(FormatError::Plan(
                PlanError::RootEntries(0)
            )))
        ));
    }

    #[test]
    fn an_error_planning_checks_first_comes_before_a_count() {
        let o = MediumOptions::new().align(3 << 10);
        let r = o.plan_counted(counts(None, Some(3)), |o| o.plan(64 << 20, 512));
        assert!(matches!(
            r,
            Err(CountedError::Before(FormatError::Plan(
                PlanError::Align { .. }
            )))
        ));
        // A planning error after the counts keeps the options planned.
        let small = MediumOptions::new().fs(FsKind::Fat32);
        let r = small.plan_counted(counts(None, Some(2)), |o| o.plan(8 << 20, 512));
        assert!(matches!(r, Err(CountedError::Planned(_, _))));
    }

    #[test]
    fn the_alignment_is_blamed_only_where_it_is_the_cause() {
        let (size, block) = (8 << 20, 512);
        let invalid = MediumOptions::new().align(3 << 10);
        let e = invalid.plan(size, block).expect_err("3 KiB is refused");
        assert_eq!(AlignBlame::of(&e, None, size, block), AlignBlame::Invalid);
        let wide = MediumOptions::new().fs(FsKind::Fat16).align(4 << 20);
        let e = wide.plan(size, block).expect_err("4 MiB leaves no room");
        assert_eq!(
            AlignBlame::of(&e, Some(&wide), size, block),
            AlignBlame::TooLittleRoom
        );
        assert_eq!(AlignBlame::of(&e, None, size, block), AlignBlame::No);
        let fat32 = MediumOptions::new().fs(FsKind::Fat32).align(4 << 20);
        let e = fat32.plan(size, block).expect_err("too small for FAT32");
        assert_eq!(
            AlignBlame::of(&e, Some(&fat32), size, block),
            AlignBlame::No
        );
    }
}
