//! `--partition N` of the in-place commands: which FAT/exFAT volume of a
//! medium with a partition table is meant. One such partition: that one;
//! several: N chooses, and without it the job is refused (exit 2) naming
//! them. Numbers as `fdisk` and `lsblk` count them (1-based).

use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::BlockIo;
use mkfs_alloc::units::format_size;
use mkfs_alloc_inspect::{inspect, InspectOptions};

/// The partition number of the volume meant on `dev` (`None`: the volume
/// fills the medium, or there is none and the job's own read says so),
/// `asked` being `--partition`. Reads only.
pub fn choose<D: BlockIo + ?Sized>(
    dev: &mut D,
    asked: Option<u32>,
) -> Result<Option<u32>, Failure> {
    let report = inspect(dev, &InspectOptions::default())
        .map_err(|e| usage(anyhow!("cannot read the partition table: {e}")))?;
    let ours: Vec<_> = report
        .volumes
        .iter()
        .filter(|v| v.partition.is_some() && v.fs.is_some_and(|f| f.ours().is_some()))
        .collect();
    let list = || {
        ours.iter()
            .map(|v| {
                format!(
                    "{} ({}, {} at byte {})",
                    v.partition.unwrap_or(0),
                    v.fs.map_or("?", |f| f.id()),
                    format_size(v.size),
                    v.start
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match asked {
        Some(n) if ours.iter().any(|v| v.partition == Some(n)) => Ok(Some(n)),
        Some(n) if report.partition_table.kind == mkfs_alloc_inspect::TableKind::None => Err(usage(
            anyhow!("--partition {n}: the medium has no partition table"),
        )),
        Some(n) => Err(usage(anyhow!(
            "--partition {n}: no FAT or exFAT volume in that partition (FAT/exFAT partitions: {})",
            if ours.is_empty() { "none".into() } else { list() }
        ))),
        None if ours.len() > 1 => Err(usage(anyhow!(
            "the medium holds {} FAT/exFAT partitions: choose one with --partition N (partitions {})",
            ours.len(),
            list()
        ))),
        None => Ok(ours.first().and_then(|v| v.partition)),
    }
}

/// The blocks `(first, count)` of partition `n` of `dev`, for a job that
/// leaves the table alone and runs on the partition alone (a re-cluster):
/// through a [`Slice`](mkfs_alloc::blockio::Slice) the medium's other
/// volumes are out of its sight.
pub fn blocks_of<D: BlockIo + ?Sized>(dev: &mut D, n: u32) -> Result<(u64, u64), Failure> {
    let t = mkfs_alloc_inspect::read_partition_table(dev)
        .map_err(|e| usage(anyhow!("cannot read the partition table: {e}")))?;
    let bs = u64::from(dev.block_size());
    t.partitions
        .iter()
        .find(|p| p.index == n)
        .filter(|p| p.start % bs == 0 && p.size % bs == 0)
        .map(|p| (p.start / bs, p.size / bs))
        .ok_or_else(|| usage(anyhow!("--partition {n}: no such partition")))
}
