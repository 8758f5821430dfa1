//! The cluster size the advice recommends for the files already on a
//! volume: what `recluster --cluster auto` goes to.
//!
//! The volume's one reading (the model's walk, [`super::plan`]'s own) also
//! hands every entry set to the tally of [`crate::existing`], which makes
//! of them the [`ScanResult`] a scan of the same tree on the host would
//! give: each file's size, and per directory its names' entries. The
//! recommendation is then `advise_with`'s for the volume's file system on
//! a volume of its size and sector size, with the default policy: for
//! exFAT the one `mkfs-alloc advise --size BYTES --fs exfat PATH` prints
//! for those files, and the one `advise --target` prints
//! ([`crate::existing::advise_volume`], the same tally and call).

use mkfs_alloc_advise::{AdviseError, Policy, RecommendationRule, ScanResult};
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_inspect::model::VolumeModel;

use super::{plan_read, read_one_with, Job, ReclusterError};
use crate::existing::{advise_for, Tally};

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
    let advice = advise_for(model, data, None, None, &Policy::default())
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
