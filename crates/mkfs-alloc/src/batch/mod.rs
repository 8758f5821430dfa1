//! Many targets at once: one template of options, each target planned for
//! its own size with its own identity, formatted (and read back)
//! concurrently; one failing target fails alone.
//!
//! ```text
//!  Batch { template, label template, serial_from } + [TargetSpec { size, overrides }]
//!    │  plan(): per target: options = template + identity + overrides ─► MediumPlan
//!    │         (an error is that target's alone); identities checked distinct
//!    ▼
//!  BatchPlan ─► run(targets, jobs, verify): `jobs` workers; per target
//!               open ─► before_content ─► Found::probe ─► before_format ─► format (recorded)
//!               ─► verify ─► finish ─► Outcome (notes, the written extents)
//! ```
//!
//! A plan made on its own is run as a batch of one ([`BatchPlan::one`]):
//! the same steps, its tree (if it holds one) read by its own writer and
//! given back to it after the run.
//!
//! Identity: unless pinned, every target gets a fresh random serial and
//! fresh random GUIDs (and MBR disk signature); planning checks that no two
//! targets share any of them and draws again for one that does. With
//! [`Batch::serial_from`] target `i` gets serial `N + i` (pinned: its GUIDs
//! derive from it); [`Batch::label`] numbers the labels (`KIT{n:03}`).
//!
//! ```
//! use mkfs_alloc::batch::{Batch, TargetSpec};
//! use mkfs_alloc::{layout::FsKind, MediumOptions};
//!
//! let mut batch = Batch::new(MediumOptions::new().fs(FsKind::Exfat).cluster_size(32 << 10));
//! batch.label = Some("KIT{n:03}".parse()?);
//! let specs: Vec<TargetSpec> = [1000, 1002, 998]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, mib)| TargetSpec::new(format!("stick{i}.img"), mib << 20, 512))
//!     .collect();
//! let plan = batch.plan(&specs)?;
//! let labels: Vec<_> = plan.plans().map(|p| p.ok().and_then(|p| p.layout().label())).collect();
//! assert_eq!(labels, [Some("KIT001"), Some("KIT002"), Some("KIT003")]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod exec;
mod run;
mod template;

pub use run::{BatchTarget, Event, Outcome, RunOptions, RunReport, Stage, TargetError, Verdict};
pub use template::{LabelTemplate, TemplateError};

#[cfg(feature = "populate")]
pub use crate::populated::TargetContent;

use crate::layout::Timestamp;
use crate::{MediumOptions, MediumPlan};

/// A batch: the options every target shares, and how targets are told
/// apart.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Batch {
    /// The options of every target (its serial, if set, is ignored: see
    /// [`Batch::serial_from`]).
    pub template: MediumOptions,
    /// Numbered labels; `None` keeps the template's label.
    pub label: Option<LabelTemplate>,
    /// Serial of the first target; the next ones count up. Pins the
    /// identifiers (the GUIDs derive from each serial). `None`: random.
    pub serial_from: Option<u32>,
    /// The number of the first target in labels (`{n}`); 1 by default.
    /// The numbers stop at `u64::MAX` (the targets after it repeat it): a
    /// caller checks that `number_from + targets - 1` fits.
    pub number_from: u64,
}

/// One target of a batch: its name (for reports), its size and what it
/// changes of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TargetSpec {
    /// What the target is called in reports (a path).
    pub name: String,
    /// Bytes of the medium.
    pub medium_bytes: u64,
    /// Logical block size of the medium.
    pub block_size: u32,
    /// What this target changes of the template.
    pub overrides: Overrides,
}

impl TargetSpec {
    /// A target of `medium_bytes` bytes in `block_size`-byte blocks, with
    /// the template's options.
    pub fn new(name: impl Into<String>, medium_bytes: u64, block_size: u32) -> Self {
        TargetSpec {
            name: name.into(),
            medium_bytes,
            block_size,
            overrides: Overrides::default(),
        }
    }
}

/// Options one target has of its own (`None`: the template's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Overrides {
    /// A whole disk (`auto` then writes a partition table) or not.
    pub whole_disk: Option<bool>,
    /// The alignment (a device's preferred one).
    pub align: Option<u64>,
    /// The file system's sector size.
    pub sector_size: Option<u32>,
    /// The label (instead of the template's or the numbered one).
    pub label: Option<String>,
    /// The serial (pins this target's identifiers).
    pub serial: Option<u32>,
}

impl Overrides {
    /// What a medium brings of its own: whether it is a whole disk, the
    /// alignment it prefers (a device's optimal I/O size) and the file
    /// system's sector size (the one asked for, else the medium's block
    /// size). The single target and every target of a batch take their
    /// options from the same call.
    pub fn of_medium(whole_disk: bool, preferred_align: Option<u64>, sector_size: u32) -> Self {
        Overrides {
            whole_disk: Some(whole_disk),
            align: preferred_align,
            sector_size: Some(sector_size),
            ..Overrides::default()
        }
    }

    /// `opts` with these overrides, the sector size checked (the batch's
    /// targets are checked when planned).
    ///
    /// # Errors
    ///
    /// [`PlanError::SectorSize`](crate::layout::PlanError::SectorSize) for
    /// a sector size other than 512, 1024, 2048 or 4096.
    pub fn applied(&self, mut opts: MediumOptions) -> Result<MediumOptions, crate::FormatError> {
        if let Some(s) = self.sector_size {
            opts = opts.sector_size(s)?;
        }
        self.apply(&mut opts);
        Ok(opts)
    }

    /// Sets what is overridden in `o`. The preferred alignment gives way
    /// to one the options give and to the SD layout's (the card's boundary
    /// unit).
    fn apply(&self, o: &mut MediumOptions) {
        if let Some(w) = self.whole_disk {
            o.whole_disk = w;
        }
        if let (Some(a), None, false) = (self.align, o.format.given_align(), o.format.is_sd()) {
            o.format = std::mem::take(&mut o.format).align(a);
        }
        if let Some(s) = self.sector_size {
            o.sector_size = s;
        }
        if let Some(l) = &self.label {
            o.format = std::mem::take(&mut o.format).label(l);
        }
    }
}

/// Why a batch cannot be planned at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// `serial_from` plus the number of targets passes 0xFFFFFFFF.
    #[error("serials from {first:08X} for {count} targets pass FFFFFFFF")]
    SerialOverflow {
        /// The first serial.
        first: u32,
        /// How many targets.
        count: usize,
    },
    /// Two targets would get the same identifier, and it is pinned (a
    /// random one is drawn again instead).
    #[error("targets {a} and {b} would share the {what} {value}; pinned identifiers must differ")]
    Duplicate {
        /// Index of the first target.
        a: usize,
        /// Index of the second.
        b: usize,
        /// Which identifier.
        what: &'static str,
        /// Its value.
        value: String,
    },
}

impl Batch {
    /// A batch of `template`'s options, random identities, labels as the
    /// template says.
    pub fn new(template: MediumOptions) -> Self {
        Batch {
            template,
            label: None,
            serial_from: None,
            number_from: 1,
        }
    }

    /// The options of target `i` (`spec`): the template, its identity
    /// (numbered label and serial, or a fresh random serial left to
    /// planning) and the target's overrides.
    pub fn options_for(&self, i: usize, spec: &TargetSpec) -> MediumOptions {
        let mut o = self.template.clone();
        if let Some(t) = &self.label {
            // Saturating, never wrapping to 0: see `number_from`.
            let n = self.number_from.saturating_add(i as u64);
            o.format = o.format.label(t.render(n));
        }
        let ov = &spec.overrides;
        ov.apply(&mut o);
        // A given serial pins the target's identifiers (they derive from
        // it); otherwise planning draws a fresh random serial.
        match ov
            .serial
            .or(self.serial_from.map(|s| s.wrapping_add(i as u32)))
        {
            Some(serial) => {
                let time = o.format.given_timestamp().unwrap_or_else(Timestamp::now);
                o.format = o.format.pinned(serial, time);
            }
            None => o.format = o.format.fresh_serial(),
        }
        o
    }

    /// Plans every target with [`MediumOptions::plan`].
    ///
    /// # Errors
    ///
    /// As [`Batch::plan_with`].
    pub fn plan(&self, specs: &[TargetSpec]) -> Result<BatchPlan, BatchError> {
        self.plan_with(specs, |_, opts, spec| {
            opts.plan(spec.medium_bytes, spec.block_size)
                .map_err(|e| TargetError::new(Verdict::Refused, false, e))
        })
    }

    /// Plans every target with `planner` (called with the target's index,
    /// its options and its spec; the CLI lets a tree choose the cluster
    /// size there; its error is the target's, usually
    /// [`Verdict::Refused`]). A target that cannot be planned keeps its error; the
    /// others are planned. Random identifiers that two targets share are
    /// drawn again (by planning that target again).
    ///
    /// # Errors
    ///
    /// [`BatchError::SerialOverflow`]; [`BatchError::Duplicate`] for pinned
    /// identifiers two targets share.
    pub fn plan_with(
        &self,
        specs: &[TargetSpec],
        mut planner: impl FnMut(usize, &MediumOptions, &TargetSpec) -> Result<MediumPlan, TargetError>,
    ) -> Result<BatchPlan, BatchError> {
        if let Some(first) = self.serial_from {
            if u64::from(first) + specs.len() as u64 > 1 << 32 {
                return Err(BatchError::SerialOverflow {
                    first,
                    count: specs.len(),
                });
            }
        }
        let mut plans: Vec<Result<MediumPlan, TargetError>> = Vec::with_capacity(specs.len());
        let mut redraws = 0;
        for (i, spec) in specs.iter().enumerate() {
            let opts = self.options_for(i, spec);
            let mut plan = planner(i, &opts, spec);
            // Random identifiers: drawn again while one collides (2^-32 per pair).
            while let Some(dup) = plan.as_ref().ok().and_then(|p| duplicate(&plans, p, i)) {
                if opts.format.given_serial().is_some() || opts.format.is_pinned() || redraws > 64 {
                    return Err(dup);
                }
                redraws += 1;
                plan = planner(i, &opts, spec);
            }
            plans.push(plan);
        }
        Ok(BatchPlan {
            names: specs.iter().map(|s| s.name.clone()).collect(),
            plans,
            #[cfg(feature = "populate")]
            contents: Vec::new(),
            #[cfg(feature = "populate")]
            source: None,
            #[cfg(feature = "populate")]
            window: mkfs_alloc_populate::feed::WINDOW,
        })
    }
}

/// The identifiers of a plan that must differ between targets.
fn identifiers(p: &MediumPlan) -> Vec<(&'static str, String)> {
    let mut ids = vec![("volume serial", format!("{:08X}", p.layout().serial()))];
    if let Some(g) = p.layout().volume_guid() {
        // The entry's bytes as a GUID's text (its first three groups
        // little-endian), as the reports show it.
        let text = mkfs_alloc_partition::Guid::from_mixed_endian(g).to_string();
        ids.push(("exFAT volume GUID", text));
    }
    if let Some(m) = p.table().mbr() {
        ids.push(("MBR disk signature", format!("{:08X}", m.disk_signature())));
    }
    if let Some(g) = p.table().gpt() {
        ids.push(("GPT disk GUID", g.disk_guid().to_string()));
        ids.push(("GPT partition GUID", g.partition_guid().to_string()));
    }
    ids
}

/// The first identifier `p` (target `i`) shares with an earlier plan.
fn duplicate(
    plans: &[Result<MediumPlan, TargetError>],
    p: &MediumPlan,
    i: usize,
) -> Option<BatchError> {
    let mine = identifiers(p);
    for (a, other) in plans.iter().enumerate() {
        let Ok(other) = other else { continue };
        for (what, value) in identifiers(other) {
            if mine.iter().any(|(w, v)| *w == what && *v == value) {
                return Some(BatchError::Duplicate {
                    a,
                    b: i,
                    what,
                    value,
                });
            }
        }
    }
    None
}

/// Every target's plan (or the error that stopped it), in the order given.
#[derive(Debug)]
pub struct BatchPlan {
    names: Vec<String>,
    plans: Vec<Result<MediumPlan, TargetError>>,
    /// Each target's part of the tree ([`BatchPlan::populate`]).
    #[cfg(feature = "populate")]
    contents: Vec<Option<mkfs_alloc_populate::Populated>>,
    /// The tree, read once per wave of targets.
    #[cfg(feature = "populate")]
    source: Option<mkfs_alloc_populate::Tree>,
    /// Bytes of file data held for the targets of a wave.
    #[cfg(feature = "populate")]
    window: usize,
}

#[cfg(feature = "populate")]
impl BatchPlan {
    /// Plans `tree` into every planned target's volume: once, and again
    /// only for a volume where that allocation cannot be reused (another
    /// file system, cluster size, data region or root directory, or too
    /// small: sticks of one model that differ by megabytes share it). A
    /// target the tree does not fit, or whose file system cannot store its
    /// names, is refused (its plan becomes that error). Returns how many
    /// times the tree was planned. Nothing is read from the files yet: the
    /// run reads them once and writes them to every target.
    pub fn populate(
        &mut self,
        tree: mkfs_alloc_populate::Tree,
        time: mkfs_alloc_populate::TimePolicy,
    ) -> usize {
        let layouts: Vec<Option<&mkfs_alloc_layout::Layout>> = self
            .plans
            .iter()
            .map(|p| p.as_ref().ok().map(MediumPlan::layout))
            .collect();
        let planned = mkfs_alloc_populate::batch::plan_batch(tree, &layouts, time);
        self.contents = Vec::with_capacity(self.plans.len());
        for (i, p) in planned.plans.into_iter().enumerate() {
            match p {
                Some(Ok(p)) => self.contents.push(Some(p)),
                Some(Err(e)) => {
                    self.plans[i] = Err(TargetError::new(
                        Verdict::Refused,
                        false,
                        crate::FormatError::Populate(e),
                    ));
                    self.contents.push(None);
                }
                None => self.contents.push(None),
            }
        }
        self.source = Some(planned.source);
        planned.plannings
    }

    /// Target `i`'s part of the tree, once [`BatchPlan::populate`]d.
    pub fn populated(&self, i: usize) -> Option<&mkfs_alloc_populate::Populated> {
        self.contents.get(i).and_then(Option::as_ref)
    }

    /// Holds at most `bytes` of file data for the targets of a wave (the
    /// default is [`mkfs_alloc_populate::feed::WINDOW`]).
    pub fn set_window(&mut self, bytes: usize) {
        self.window = bytes;
    }
}

impl BatchPlan {
    /// A batch of one target, `name`, of a plan made on its own
    /// ([`MediumOptions::plan`], [`MediumPlan::populate`]): run, it takes
    /// the same steps as every target of a batch. The plan's tree, if it
    /// holds one, is read by its own writer, and the plan gets it back
    /// after the run (with what the run did of it:
    /// [`MediumPlan::copy_counts`]).
    #[cfg_attr(not(feature = "populate"), allow(unused_mut))]
    pub fn one(name: impl Into<String>, mut plan: MediumPlan) -> BatchPlan {
        #[cfg(feature = "populate")]
        let contents = vec![plan.content.take()];
        BatchPlan {
            names: vec![name.into()],
            plans: vec![Ok(plan)],
            #[cfg(feature = "populate")]
            contents,
            #[cfg(feature = "populate")]
            source: None,
            #[cfg(feature = "populate")]
            window: mkfs_alloc_populate::feed::WINDOW,
        }
    }

    /// The targets' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Each target's plan, or why it could not be planned.
    pub fn plans(&self) -> impl Iterator<Item = Result<&MediumPlan, &TargetError>> {
        self.plans.iter().map(Result::as_ref)
    }

    /// Number of targets.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// True for a batch of no target.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    /// Every identifier that two successfully planned targets share (none,
    /// by construction; a test of the batch's promise).
    pub fn shared_identifiers(&self) -> Vec<(usize, usize, &'static str)> {
        let mut out = Vec::new();
        let ok: Vec<(usize, Vec<(&'static str, String)>)> = self
            .plans
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().ok().map(|p| (i, identifiers(p))))
            .collect();
        for (x, (a, ia)) in ok.iter().enumerate() {
            for (b, ib) in &ok[x + 1..] {
                for (what, v) in ia {
                    if ib.iter().any(|(w, u)| w == what && u == v) {
                        out.push((*a, *b, *what));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
