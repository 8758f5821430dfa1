//! `mkfs-alloc convert --fs fat32 TARGET`: an exFAT volume checked against
//! what FAT32 holds (the first file that does not fit named) and its
//! in-place conversion planned, read-only (`--dry-run` prints the plan).
//! The write path is not supported yet: a run is refused with that reason
//! after the same checks (exit 2, the target unchanged). On a medium with
//! a partition table the volume is the one `--partition` chooses (as for
//! `--fs exfat`), read through a window over that partition alone.

use crate::cmd_convert::ConvertArgs;
use crate::in_place::{refusal, target_block_size};
use crate::{usage, Failure};
use anyhow::anyhow;
use mkfs_alloc::blockio::Slice;
use mkfs_alloc::recluster::convert::{self, Fat32Plan};
use mkfs_alloc_inspect::ReadOnlyFile;

/// Runs `convert --fs fat32`.
pub fn run(args: &ConvertArgs) -> Result<(), Failure> {
    if args.cluster.is_some() {
        return Err(usage(anyhow!(
            "--cluster with --fs fat32 is not supported yet (the conversion keeps the cluster size)"
        )));
    }
    let path = &args.common.target;
    let block_size = target_block_size(path)?;
    let mut ro = ReadOnlyFile::open(path, block_size)
        .map_err(|e| usage(anyhow!("cannot open {}", e.source)))?;
    let (first, count) = match crate::partition_pick::choose(&mut ro, args.common.partition)? {
        Some(n) => crate::partition_pick::blocks_of(&mut ro, n)?,
        None => (0, mkfs_alloc::blockio::BlockIo::num_blocks(&ro)),
    };
    let mut ro = Slice::new(&mut ro, first, count).map_err(|e| crate::Failure::Io(anyhow!(e)))?;
    if !args.common.dry_run {
        // Every check first, then the refusal of the write path.
        return match convert::run_fat32(&mut ro) {
            Ok(_) => Ok(()),
            Err(e) => Err(refusal(e)),
        };
    }
    let p = convert::plan_fat32(&mut ro).map_err(refusal)?;
    print_plan(args, &p);
    Ok(())
}

/// The plan as JSON.
fn plan_json(p: &Fat32Plan) -> serde_json::Value {
    serde_json::json!({
        "step": "start",
        "fs": "fat32",
        "write_supported": false,
        "cluster_size": p.cluster_size,
        "cluster_count": p.cluster_count,
        "reserved_sectors": p.reserved_sectors,
        "fat_bytes": p.fat_bytes,
        "data_offset": p.data_offset,
        "shift": p.shift,
        "metadata_covered": p.metadata_covered,
        "evacuate": p.evacuate,
        "directories": p.directories,
        "files": p.files,
        "directory_bytes": p.directory_bytes,
    })
}

/// The plan, as text or JSON on stdout.
fn print_plan(args: &ConvertArgs, p: &Fat32Plan) {
    if args.common.json {
        outln!("{:#}", plan_json(p));
        return;
    }
    if args.common.quiet {
        return;
    }
    out!("{}", p.plan_text(&args.common.target.display().to_string()));
}
