//! [`write_table`]: serializes a [`TablePlan`] through the ondisk `Mbr`
//! struct (MBR, the same bytes the firmware path writes) or with `gpt`
//! (GPT) onto a [`BlockIo`].

use std::collections::BTreeMap;
use std::io;

use mkfs_alloc_blockio::BlockIo;

use crate::guid::Guid;
use crate::stream::BlockStream;
use crate::{GptPlan, MbrPlan, PartitionError, TableKind, TablePlan, TableSpec};
use mkfs_alloc_ondisk::mbr::Mbr;
use zerocopy::IntoBytes;

/// Checks that `dev` is the medium `plan` was made for (a plan holds
/// together by construction: only [`plan_table`](crate::plan_table) makes
/// one).
pub(crate) fn check_plan<D: BlockIo>(plan: &TablePlan, dev: &D) -> Result<(), PartitionError> {
    if dev.block_size() != plan.block_size() || dev.num_blocks() != plan.num_blocks() {
        return Err(PartitionError::DeviceMismatch {
            plan_block_size: plan.block_size(),
            plan_blocks: plan.num_blocks(),
            dev_block_size: dev.block_size(),
            dev_blocks: dev.num_blocks(),
        });
    }
    Ok(())
}

/// Writes the table of `plan` to `dev` and flushes.
///
/// MBR: LBA 0 (the whole block) with one primary partition. GPT: protective
/// MBR in LBA 0, primary header and 128 entries, backup entries and header
/// at the end. [`TableKind::None`] writes nothing. Call
/// [`wipe_for_table`](crate::wipe_for_table) first so that no stale
/// signature survives outside the blocks written here.
///
/// # Errors
///
/// [`PartitionError::DeviceMismatch`] if `dev` is not the medium of the plan;
/// [`PartitionError::InvalidPlan`] if a value does not fit its MBR field;
/// [`PartitionError::Io`] on I/O failure; [`PartitionError::Table`] if the
/// table library fails.
pub fn write_table<D: BlockIo>(plan: &TablePlan, dev: &mut D) -> Result<(), PartitionError> {
    check_plan(plan, dev)?;
    match plan.spec() {
        TableSpec::None => return Ok(()),
        TableSpec::Mbr(mbr) => write_mbr(plan, mbr, dev)?,
        TableSpec::Gpt(gpt) => write_gpt(plan, gpt, dev)?,
    }
    dev.flush()?;
    Ok(())
}

/// A plan that `plan_table` would not have made.
fn invalid(kind: TableKind, reason: &str) -> PartitionError {
    PartitionError::InvalidPlan {
        kind,
        reason: reason.to_string(),
    }
}

/// Converts a plan LBA value to the 32-bit MBR field.
fn mbr_u32(v: u64, what: &str) -> Result<u32, PartitionError> {
    u32::try_from(v).map_err(|_| {
        invalid(
            TableKind::Mbr,
            &format!("{what} {v} does not fit the 32-bit MBR field (0..=4294967295)"),
        )
    })
}

fn write_mbr<D: BlockIo>(
    plan: &TablePlan,
    mbr_plan: &MbrPlan,
    dev: &mut D,
) -> Result<(), PartitionError> {
    let sys = mbr_plan.partition_type();
    let sig = mbr_plan.disk_signature();
    let geometry = mbr_plan.chs_geometry();
    let start = mbr_u32(plan.partition_start_lba(), "partition start LBA")?;
    let sectors = mbr_u32(plan.partition_blocks(), "partition sector count")?;
    // plan_table: the partition is non-empty and inside the medium.
    mbr_u32(
        plan.partition_start_lba() + plan.partition_blocks() - 1,
        "partition last LBA",
    )?;

    // LBA 0 through the ondisk struct; bytes 512.. of a larger block stay zero.
    let mbr = Mbr::one_partition(sig, sys, start, sectors, geometry);
    let mut lba0 = vec![0u8; plan.block_size() as usize];
    lba0[..core::mem::size_of::<Mbr>()].copy_from_slice(mbr.as_bytes());
    dev.write_blocks(0, &lba0)?;
    Ok(())
}

fn write_gpt<D: BlockIo>(
    plan: &TablePlan,
    gpt_plan: &GptPlan,
    dev: &mut D,
) -> Result<(), PartitionError> {
    let kind = TableKind::Gpt;
    let lb_size = match plan.block_size() {
        512 => gpt::disk::LogicalBlockSize::Lb512,
        4096 => gpt::disk::LogicalBlockSize::Lb4096,
        block_size => {
            return Err(PartitionError::UnsupportedBlockSize {
                block_size,
                kind,
                valid: "512 or 4096",
            })
        }
    };
    let disk_guid = gpt_plan.disk_guid();
    let part_guid = gpt_plan.partition_guid();
    let (want_first, want_last) = (gpt_plan.first_usable_lba(), gpt_plan.last_usable_lba());
    let first_lba = plan.partition_start_lba();
    // plan_table: the partition is non-empty and inside the medium.
    let last_lba = first_lba + plan.partition_blocks() - 1;

    // Protective MBR: one 0xEE partition from LBA 1 over the rest of the
    // disk, capped at 2^32 - 1 sectors. Written as a whole block.
    let pmbr_sectors = u32::try_from(plan.num_blocks().saturating_sub(1)).unwrap_or(u32::MAX);
    let pmbr = gpt::mbr::ProtectiveMBR::with_lb_size(pmbr_sectors);
    let mut lba0 = vec![0u8; plan.block_size() as usize];
    let pmbr = pmbr.to_bytes();
    lba0[..pmbr.len()].copy_from_slice(&pmbr);
    dev.write_blocks(0, &lba0)?;

    // The gpt crate takes `uuid::Uuid`; going through the text form keeps
    // uuid out of our dependencies (the type is inferred from the field).
    let gpt_err = |e: gpt::GptError| PartitionError::table(kind, e);
    let uuid_err = |e| {
        PartitionError::table(
            kind,
            io::Error::new(io::ErrorKind::InvalidData, format!("GUID: {e}")),
        )
    };
    let stream = BlockStream::new(dev);
    let mut disk = gpt::GptConfig::new()
        .writable(true)
        .logical_block_size(lb_size)
        .create_from_device(
            stream,
            Some(disk_guid.to_string().parse().map_err(uuid_err)?),
        )
        .map_err(gpt_err)?;
    let part = gpt::partition::Partition {
        part_type_guid: if gpt_plan.partition_type_guid() == Guid::EFI_SYSTEM {
            gpt::partition_types::EFI
        } else {
            gpt::partition_types::BASIC
        },
        part_guid: part_guid.to_string().parse().map_err(uuid_err)?,
        first_lba,
        last_lba,
        flags: 0,
        name: gpt_plan.partition_name().to_string(),
    };
    disk.update_partitions(BTreeMap::from([(1, part)]))
        .map_err(gpt_err)?;
    let header = disk.header();
    if (header.first_usable, header.last_usable) != (want_first, want_last) {
        return Err(PartitionError::LayoutMismatch {
            want_first,
            want_last,
            got_first: header.first_usable,
            got_last: header.last_usable,
        });
    }
    disk.write().map_err(gpt_err)?;
    Ok(())
}
