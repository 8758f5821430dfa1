//! The cluster size the advice recommends for the files already on a
//! volume: what `recluster --cluster auto` goes to.
//!
//! The volume's one reading (the model's walk, [`super::plan`]'s own) also
//! hands every entry set to a [`Tally`], which makes of them the
//! [`ScanResult`] a scan of the same tree on the host would give: each
//! file's size, and per directory its names' entries. The recommendation
//! is then [`advise_with`]'s for the volume's file system on a volume of
//! its size and sector size, with the default policy: for exFAT the one
//! `mkfs-alloc advise --size BYTES --fs exfat PATH` prints for those files.

use std::collections::HashMap;
use std::ffi::OsStr;

use mkfs_alloc_advise::{
    advise_with, AdviseError, DirRecord, FsSelection, Policy, RecommendationRule, ScanResult,
};
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::{EntrySet, VolumeModel};
use mkfs_alloc_inspect::FsKind;

use super::{plan_read, read_one_with, Job, ReclusterError};

/// What `auto` chose, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    /// The cluster size recommended.
    pub cluster: u64,
    /// The volume's cluster size now.
    pub current: u64,
    /// The rule that chose it.
    pub rule: RecommendationRule,
    /// The recommendation's reason, a sentence for people.
    pub reason: String,
}

/// The files of one reading, as a scan of the same tree would count them.
#[derive(Default)]
pub(super) struct Tally {
    data: ScanResult,
    /// Each directory's names, by its path (`""` the root).
    dirs: HashMap<String, DirRecord>,
}

impl Tally {
    /// Counts one entry set.
    pub(super) fn add(&mut self, s: &EntrySet) {
        let (parent, name) = s.path.rsplit_once('/').unwrap_or(("", &s.path));
        self.dirs
            .entry(parent.to_string())
            .or_default()
            .add(OsStr::new(name));
        if s.is_dir {
            self.dirs.entry(s.path.clone()).or_default();
        } else {
            self.data.file_sizes.push(s.size);
            self.data.apparent_bytes += s.size;
        }
    }

    /// The scan's result: the root's record apart, every other directory's.
    pub(super) fn finish(mut self) -> ScanResult {
        self.data.root = self.dirs.remove("").unwrap_or_default();
        self.data.dirs = self.dirs.into_values().collect();
        self.data
    }
}

/// The advice's recommendation for `data` on the volume `model` describes,
/// for its file system (pure).
///
/// # Errors
///
/// [`ReclusterError::NoRecommendation`] with the advice's reason when it
/// recommends no size.
pub fn recommend(model: &VolumeModel, data: &ScanResult) -> Result<AutoChoice, ReclusterError> {
    let g = &model.geometry;
    let no = |why: String| ReclusterError::NoRecommendation { why };
    let fs = match g.kind {
        FsKind::Exfat => FsSelection::Exfat,
        FsKind::Fat32 => FsSelection::Fat32,
        FsKind::Fat16 => FsSelection::Fat16,
        FsKind::Fat12 => FsSelection::Fat12,
    };
    let advice = advise_with(
        g.fs_bytes,
        g.sector_size,
        fs,
        Some(data),
        &Policy::default(),
    )
    .map_err(|e: AdviseError| no(e.to_string()))?;
    let Some(fs) = advice.per_fs.first() else {
        return Err(no(format!("no {:?} advice for this volume", g.kind)));
    };
    match &fs.recommendation {
        Some(r) => Ok(AutoChoice {
            cluster: r.cluster_size,
            current: g.cluster_size,
            rule: r.rule,
            reason: r.reason.clone(),
        }),
        None => Err(no(fs.notes.first().map_or_else(
            || "no cluster size is valid".into(),
            |n| n.describe(fs.fs),
        ))),
    }
}

/// Reads the one FAT/exFAT volume of `dev`, chooses the cluster size the
/// advice recommends for its files ([`recommend`]) and plans the
/// re-cluster to it, as [`super::plan`] does for a size given (the same
/// size: [`super::Step::Nothing`]). Reads only.
///
/// # Errors
///
/// As [`super::plan`]; a refusal of the chosen size is
/// [`ReclusterError::AutoRefused`] (with the choice and its reason),
/// [`ReclusterError::NoRecommendation`] when the advice has none.
pub fn plan_auto<D: BlockIo + ?Sized>(dev: &mut D) -> Result<(AutoChoice, Job), ReclusterError> {
    let mut tally = Tally::default();
    let read = read_one_with(dev, &mut |s| tally.add(s))?;
    let choice = recommend(&read.0, &tally.finish())?;
    match plan_read(dev, read, choice.cluster) {
        Ok(job) => Ok((choice, job)),
        Err(ReclusterError::Refused(refusal)) => Err(ReclusterError::AutoRefused {
            choice: Box::new(choice),
            refusal,
        }),
        Err(e) => Err(e),
    }
}
