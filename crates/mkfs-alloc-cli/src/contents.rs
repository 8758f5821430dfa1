//! What a medium holds, read from the medium itself (not from partition
//! nodes, which loop devices and some readers lack): for the confirmation,
//! `--dry-run` and `list`.

use mkfs_alloc::layout::units::format_size;
use mkfs_alloc_inspect::{inspect, AnyFs, InspectOptions, ReadOnlyFile, TableKind};
use std::path::Path;

/// One line per volume: where it is, its file system and its label, e.g.
/// `partition 1 at 1 MiB, 127 MiB: exFAT labelled "PRECIOUS"`. Empty when
/// the medium cannot be read (no permission) or holds nothing recognisable.
pub fn describe(path: &Path, block_size: u32) -> Vec<String> {
    let Ok(mut dev) = ReadOnlyFile::open(path, block_size) else {
        return Vec::new();
    };
    let Ok(report) = inspect(&mut dev, &InspectOptions::default()) else {
        return Vec::new();
    };
    let table = match report.partition_table.kind {
        TableKind::None => None,
        k => Some(format!("{} partition table", k.display_name())),
    };
    let volumes = report.volumes.iter().filter_map(|v| {
        if v.fs.is_none() && v.partition.is_none() {
            return None;
        }
        let place = match v.partition {
            Some(p) => format!(
                "partition {p} at {}, {}",
                format_size(v.start),
                format_size(v.size)
            ),
            None => format!("whole medium, {}", format_size(v.size)),
        };
        let label = v
            .label
            .as_deref()
            .map(|l| format!(" labelled {l:?}"))
            .unwrap_or_default();
        Some(format!(
            "{place}: {}{label}",
            v.fs.map_or("unknown", AnyFs::display_name)
        ))
    });
    table.into_iter().chain(volumes).collect()
}
