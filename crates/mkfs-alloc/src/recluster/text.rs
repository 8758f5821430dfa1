//! The in-place jobs' plans as text: one line each, every line ending in a
//! newline, for a front end to print as it is (the front end adds the lines
//! that name its own flags or refusals).

use super::convert::{Conversion, Fat32Plan};
use super::{Coarse, Grow, Job, Plan, Totals};
use crate::units::plural;
use mkfs_alloc_layout::units::format_size as sz;
use mkfs_alloc_ondisk::{FsKind, TableKind};
use mkfs_alloc_partition::PartitionGrow;
use std::fmt::{self, Write as _};

impl fmt::Display for Totals {
    /// Free space before and after (and what it gains, or how much less
    /// there is), the I/O and the time estimate.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (before, after) = self.free;
        let change = if after >= before {
            format!("gained {}", sz(after - before))
        } else {
            format!("{} less", sz(before - after))
        };
        writeln!(
            f,
            "  free           {} -> {} ({change})",
            sz(before),
            sz(after)
        )?;
        let (r, w) = (sz(self.bytes_read), sz(self.bytes_written));
        writeln!(f, "  I/O            reads {r}, writes {w}")?;
        writeln!(
            f,
            "  time           about {:.1} s on a stick that reads 20 MB/s and writes 5 MB/s",
            self.estimate_stick_seconds
        )
    }
}

impl Job {
    /// The re-cluster's plan on `target` (the medium's name), or the one
    /// line of what is left when there is no plan.
    pub fn plan_text(&self, target: &str) -> String {
        let mut out = String::new();
        let Some(p) = &self.plan else {
            let _ = writeln!(out, "{target}: {}", self.step);
            return out;
        };
        let kind = p.fat.as_ref().map_or("exFAT", |f| f.kind.display_name());
        let _ = writeln!(out, "{target}: re-cluster {kind} ({})", self.step);
        let _ = match &p.coarse {
            Some(c) => larger(&mut out, p, c),
            None => smaller(&mut out, p),
        };
        out
    }
}

/// The plan of a smaller cluster size (or of an evacuation) after its
/// first line.
fn smaller(out: &mut String, p: &Plan) -> fmt::Result {
    writeln!(
        out,
        "  cluster size   {} -> {} ({} new clusters per old one)",
        sz(p.old.cluster_size),
        sz(p.new.cluster_size),
        p.ratio
    )?;
    counts_and_fat(out, p)?;
    match &p.evacuate {
        _ if p.fat.is_some() => fat_regions(out, p)?,
        None if p.new.heap_offset == p.old.heap_offset => writeln!(
            out,
            "  cluster heap   at byte {} (kept: no file data moves)",
            p.new.heap_offset
        )?,
        None => writeln!(
            out,
            "  cluster heap   at byte {} -> {} (its first {} free)",
            p.old.heap_offset,
            p.new.heap_offset,
            plural(
                (p.new.heap_offset - p.old.heap_offset) / p.old.cluster_size,
                "old cluster is",
                "old clusters are"
            )
        )?,
        Some(e) => {
            writeln!(
                out,
                "  cluster heap   at byte {} -> {}: the new FAT covers its first {}",
                p.old.heap_offset,
                p.new.heap_offset,
                plural(u64::from(e.clusters), "old cluster", "old clusters")
            )?;
            writeln!(
                out,
                "  evacuation     first, at {}: {} of them in use, {} clusters of data copied ({}), reads {}, writes {}",
                sz(p.old.cluster_size),
                e.in_use,
                e.moved,
                sz(e.moved * p.old.cluster_size),
                sz(e.bytes_read),
                sz(e.bytes_written)
            )?;
        }
    }
    bitmap_and_dirs(out, p, p.evacuate.is_some())?;
    writeln!(out, "  clusters moved {}", p.clusters_moved)?;
    if !p.bad_clusters.is_empty() {
        let n = p.bad_clusters.len() as u64;
        writeln!(
            out,
            "  bad clusters   {} -> {}, still marked bad (no copy goes there)",
            n,
            n * u64::from(p.ratio)
        )?;
    }
    writeln!(
        out,
        "  files          {} ({}), taking {} -> {}",
        p.files,
        sz(p.file_bytes),
        sz(p.files_allocated.0),
        sz(p.files_allocated.1)
    )?;
    write!(out, "{}", p.totals())
}

/// A FAT volume's reserved sectors and data region.
fn fat_regions(out: &mut String, p: &Plan) -> fmt::Result {
    let Some(f) = &p.fat else {
        return Ok(());
    };
    writeln!(
        out,
        "  reserved       {} -> {} sectors: they cover the old FATs and the data region's first {} ({} in use, {} of file data copied out)",
        f.reserved.0,
        f.reserved.1,
        plural(f.covered, "old cluster", "old clusters"),
        f.in_use,
        plural(p.clusters_moved - f.evacuated, "cluster", "clusters")
    )?;
    if f.evacuated > 0 {
        writeln!(
            out,
            "  evacuation     first, at {}: the {} in use where the new FATs go moved to free space in the old volume",
            sz(p.old.cluster_size),
            plural(f.evacuated, "old cluster", "old clusters")
        )?;
    }
    writeln!(
        out,
        "  data region    at byte {} -> {} (the {} FATs end there)",
        p.old.heap_offset, p.new.heap_offset, f.fat_count
    )
}

/// The plan's cluster counts and FATs.
fn counts_and_fat(out: &mut String, p: &Plan) -> fmt::Result {
    writeln!(
        out,
        "  clusters       {} -> {}",
        p.old.cluster_count, p.new.cluster_count
    )?;
    writeln!(
        out,
        "  FAT            at byte {} ({}) -> at byte {} ({}); the old FAT's {} become unused",
        p.old.fat_offset,
        sz(p.old.fat_bytes),
        p.new.fat_offset,
        sz(p.new.fat_bytes),
        sz(p.gap.1)
    )
}

/// The new bitmap (exFAT) and the directories copied (`twice`: once at
/// each cluster size, for an evacuation).
fn bitmap_and_dirs(out: &mut String, p: &Plan, twice: bool) -> fmt::Result {
    if p.fat.is_none() {
        writeln!(
            out,
            "  bitmap         new, {} at cluster {}",
            sz(p.bitmap.1),
            p.bitmap.0
        )?;
    }
    if twice {
        writeln!(
            out,
            "  directories    {} copied twice (once at each cluster size)",
            p.dirs.len()
        )
    } else {
        let root = match p.new.root_cluster {
            0 => "the root region into the new one".to_string(),
            n => format!("the root now at cluster {n}"),
        };
        writeln!(out, "  directories    {} copied ({root})", p.dirs.len())
    }
}

/// The plan of a larger cluster size after its first line.
fn larger(out: &mut String, p: &Plan, c: &Coarse) -> fmt::Result {
    writeln!(
        out,
        "  cluster size   {} -> {} ({} old clusters per new one)",
        sz(p.old.cluster_size),
        sz(p.new.cluster_size),
        c.group
    )?;
    counts_and_fat(out, p)?;
    let aligned = if c.heap_aligned {
        "aligned to"
    } else {
        "not aligned to"
    };
    let moved = p.new.heap_offset != p.old.heap_offset;
    if let Some(f) = p.fat.as_ref().filter(|_| moved) {
        // FAT12/16: the data region starts whole new clusters later.
        writeln!(
            out,
            "  data region    at byte {} -> {} ({} the new cluster size)",
            p.old.heap_offset, p.new.heap_offset, aligned
        )?;
        writeln!(
            out,
            "  reserved       {} -> {} sectors: they cover the old FATs, the old root region and the data region's first {} ({} in use, copied out)",
            f.reserved.0,
            f.reserved.1,
            plural(f.covered, "old cluster", "old clusters"),
            f.in_use
        )?;
    } else {
        writeln!(
            out,
            "  cluster heap   at byte {} (kept; {aligned} the new cluster size)",
            p.new.heap_offset
        )?;
    }
    if let Some(f) = p.fat.as_ref().filter(|_| !moved) {
        writeln!(
            out,
            "  reserved       {} -> {} sectors: the {} new FATs take the old FATs' end",
            f.reserved.0, f.reserved.1, f.fat_count
        )?;
        if c.shortened > 0 {
            writeln!(
                out,
                "  volume         ends {} earlier (the new FATs, in the old ones' room, index no more clusters)",
                sz(c.shortened)
            )?;
        }
    }
    bitmap_and_dirs(out, p, false)?;
    writeln!(
        out,
        "  data           {}, {} copied first: {} ({}{})",
        plural(
            c.files_kept,
            "file keeps its place",
            "files keep their place"
        ),
        c.files_moved,
        sz(c.bytes_moved),
        plural(p.clusters_moved, "old cluster", "old clusters"),
        if p.fat.is_some() {
            ""
        } else {
            ", the up-case table's included"
        }
    )?;
    writeln!(
        out,
        "  files          {} ({}), taking {} -> {} (slack {} -> {})",
        p.files,
        sz(p.file_bytes),
        sz(p.files_allocated.0),
        sz(p.files_allocated.1),
        sz(c.slack.0),
        sz(c.slack.1)
    )?;
    write!(out, "{}", p.totals())
}

impl Job {
    /// The resize's plan on `target` (the medium's name), or the one line
    /// of what is left when there is no plan.
    pub fn resize_plan_text(&self, target: &str) -> String {
        let mut out = String::new();
        let _ = match &self.grow {
            Some(g) => resize(&mut out, target, self, g),
            None => writeln!(out, "{target}: {}", self.step.resize_text())
                .and_then(|()| table_after(&mut out, self)),
        };
        out
    }
}

/// A table's name in a plan.
fn table_name(t: &PartitionGrow) -> &'static str {
    if t.kind() == TableKind::Gpt {
        "GPT"
    } else {
        "MBR"
    }
}

/// The partition's entry, shrunk after the volume's switch.
fn table_after(out: &mut String, job: &Job) -> fmt::Result {
    let Some(t) = &job.table_after else {
        return Ok(());
    };
    let (old, new) = t.sectors();
    writeln!(
        out,
        "  partition      {} {} at byte {}: {} -> {} ({old} -> {new} sectors; written after the volume's switch)",
        table_name(t),
        t.number(),
        t.start_bytes(),
        sz(t.old_bytes()),
        sz(t.new_bytes()),
    )
}

/// A resize's plan.
fn resize(out: &mut String, target: &str, job: &Job, g: &Grow) -> fmt::Result {
    let exfat = g.fs == FsKind::Exfat;
    let shrink = g.new_bytes < g.old_bytes;
    writeln!(
        out,
        "{target}: {} {} ({})",
        if shrink { "shrink" } else { "grow" },
        if exfat { "exFAT" } else { "FAT32" },
        job.step.resize_text()
    )?;
    writeln!(
        out,
        "  volume         {} -> {} ({} -> {} sectors)",
        sz(g.old_bytes),
        sz(g.new_bytes),
        g.old_bytes / u64::from(g.sector_size),
        g.new_bytes / u64::from(g.sector_size)
    )?;
    let moves = if shrink {
        format!(
            "{} of data past the new end copied below it",
            plural(g.moved_clusters, "cluster", "clusters")
        )
    } else {
        "no file data moves".to_string()
    };
    writeln!(
        out,
        "  clusters       {} -> {} of {} (the data region stays at byte {}; {moves})",
        g.old.cluster_count,
        g.new.cluster_count,
        sz(g.new.cluster_size),
        g.new.heap_offset
    )?;
    if let Some(t) = &g.table {
        writeln!(
            out,
            "  partition      {} {} at byte {}: {} -> {} (written first){}",
            table_name(t),
            t.number(),
            t.start_bytes(),
            sz(t.old_bytes()),
            sz(t.new_bytes()),
            if t.moves_backup() {
                "; the backup GPT moves to the medium's end"
            } else {
                ""
            }
        )?;
    }
    table_after(out, job)?;
    writeln!(
        out,
        "  FAT            at byte {}, {} -> {}",
        g.new.fat_offset,
        sz(g.old.fat_bytes),
        sz(g.new.fat_bytes)
    )?;
    if !exfat {
        writeln!(
            out,
            "  switch         the boot sector (after its backup); FSInfo's hints recounted"
        )?;
        return write!(out, "{}", g.totals());
    }
    writeln!(
        out,
        "  bitmap         new, {} at cluster {}",
        sz(g.bitmap.1),
        g.bitmap.0
    )?;
    writeln!(
        out,
        "  root           copied to cluster {} ({}){}",
        g.new.root_cluster,
        plural(u64::from(g.root_clusters), "cluster", "clusters"),
        if shrink { ", and every directory" } else { "" }
    )?;
    write!(out, "{}", g.totals())
}

impl Conversion {
    /// The FAT32-to-exFAT conversion's plan on `target` (the medium's
    /// name), each line after the first indented, or the one line of what
    /// is left when there is no plan.
    pub fn plan_text(&self, target: &str) -> String {
        let mut out = String::new();
        let Some(p) = &self.plan else {
            let _ = writeln!(out, "mkfs-alloc: {target}: {}", self.step);
            return out;
        };
        let _ = (|| -> fmt::Result {
            writeln!(
                out,
                "mkfs-alloc: {target}: FAT32 to exFAT in place ({})",
                self.step
            )?;
            writeln!(
                out,
                "  clusters: {} of {} (unchanged; no file data moves)",
                p.exfat.cluster_count,
                sz(p.exfat.cluster_size)
            )?;
            writeln!(
                out,
                "  exFAT FAT at byte {} (FAT32's second FAT), heap at byte {}",
                p.exfat.fat_offset, p.exfat.heap_offset
            )?;
            writeln!(
                out,
                "  {} directories rewritten, {} files kept, label {}, serial {:08X}",
                p.directories,
                p.files,
                p.label.as_deref().unwrap_or("(none)"),
                p.serial
            )?;
            writeln!(
                out,
                "  writes {}; free afterwards {}",
                sz(p.bytes_written),
                sz(p.free_after)
            )?;
            if p.partition_type.is_some() {
                writeln!(out, "  MBR partition type: 07h (exFAT)")?;
            }
            Ok(())
        })();
        out
    }
}

impl Fat32Plan {
    /// The exFAT-to-FAT32 conversion's plan on `target` (the medium's
    /// name), the refusal of its write included.
    pub fn plan_text(&self, target: &str) -> String {
        let p = self;
        format!(
            "mkfs-alloc: {target}: exFAT to FAT32 in place (every file fits FAT32)\n\
             \x20 clusters: {} of {} (the size kept; file data stays in place)\n\
             \x20 {} reserved sectors, two FATs of {}, data region at byte {}\n\
             \x20 the FATs take exFAT's first {} clusters ({} exFAT metadata, {} to evacuate first); cluster n becomes n - {}\n\
             \x20 {} directories rewritten with long and short names ({}), {} files kept\n\
             \x20 the run would be refused: writing the FAT32 volume is not supported yet\n",
            p.cluster_count,
            sz(p.cluster_size),
            p.reserved_sectors,
            sz(p.fat_bytes),
            p.data_offset,
            p.shift,
            p.metadata_covered,
            p.evacuate,
            p.shift,
            p.directories,
            sz(p.directory_bytes),
            p.files,
        )
    }
}
