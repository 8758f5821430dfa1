//! FAT32 re-clustered on a medium of 4096-byte sectors (the sector count
//! fields, the reserved sectors' reach, the intent record's sector and the
//! FSInfo sector all in 4 KiB units): to a smaller and to a larger cluster
//! size, cut at every write, each trial holding every file before and
//! after the same command runs again.

use super::fat::{check_fat, check_fatfs, fat32_on, Bytes};
use super::*;
use mkfs_alloc_blockio::powercut::sweep::SweepReport;
use mkfs_alloc_blockio::IoError;
use std::sync::Arc;

/// A medium that shares its prepared bytes and keeps only the blocks
/// written since: a 520 MiB trial is cloned without copying 520 MiB.
#[derive(Debug, Clone)]
struct Overlay {
    base: Arc<MemDisk>,
    written: BTreeMap<u64, Vec<u8>>,
}

impl Overlay {
    fn block(&self, n: u64) -> Vec<u8> {
        let bs = self.base.block_size() as usize;
        self.written
            .get(&n)
            .cloned()
            .unwrap_or_else(|| read(&self.base, n * bs as u64, bs))
    }

    /// Whether both hold the same bytes (over the same base).
    fn same_bytes(&self, other: &Overlay) -> bool {
        Arc::ptr_eq(&self.base, &other.base)
            && self
                .written
                .keys()
                .chain(other.written.keys())
                .all(|&n| self.block(n) == other.block(n))
    }
}

impl BlockIo for Overlay {
    fn block_size(&self) -> u32 {
        self.base.block_size()
    }
    fn num_blocks(&self) -> u64 {
        self.base.num_blocks()
    }
    fn read_blocks(&mut self, lba: u64, dst: &mut [u8]) -> Result<(), IoError> {
        let bs = self.base.block_size() as usize;
        for (i, chunk) in dst.chunks_mut(bs).enumerate() {
            chunk.copy_from_slice(&self.block(lba + i as u64));
        }
        Ok(())
    }
    fn write_blocks(&mut self, lba: u64, src: &[u8]) -> Result<(), IoError> {
        let bs = self.base.block_size() as usize;
        for (i, chunk) in src.chunks(bs).enumerate() {
            self.written.insert(lba + i as u64, chunk.to_vec());
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

impl Bytes for Overlay {
    fn bytes(&self, offset: u64, len: usize) -> Vec<u8> {
        let bs = u64::from(self.base.block_size());
        let (first, end) = (offset / bs, (offset + len as u64).div_ceil(bs));
        let all: Vec<u8> = (first..end).flat_map(|n| self.block(n)).collect();
        let skip = (offset - first * bs) as usize;
        all[skip..skip + len].to_vec()
    }
}

/// 520 MiB: at 8 KiB about 66,500 clusters, the fewest FAT32 allows at
/// that size being 65,525; about 133,000 at 4 KiB (FAT32 both).
const SIZE: u64 = 520 << 20;

/// The volume at `cluster` bytes with the test tree, `/photos/frag-1.raw`
/// fragmented, on 4096-byte sectors.
fn volume(cluster: u64) -> (MemDisk, Vec<(String, usize)>) {
    let want = files_in(usize::try_from(cluster).unwrap(), 3);
    (fat32_on(4096, SIZE, cluster, &want, None), want)
}

/// A whole run from `from` to `to`: every file through the model's walk
/// and fatfs, the sector size kept, FSInfo's free count, a second run
/// nothing to do.
fn whole_run(from: u64, to: u64) {
    let (mut disk, want) = volume(from);
    let p = recluster(&mut disk, to).unwrap().plan.unwrap();
    let m = check_fat(&disk, &want).unwrap();
    assert_eq!(
        (m.geometry.cluster_size, m.geometry.sector_size),
        (to, 4096)
    );
    assert_eq!(m.geometry.kind, FsKind::Fat32);
    assert!(m.findings.is_empty(), "{:?}", m.findings);
    check_fatfs(&disk, &want).unwrap();
    let free = u64::from(m.geometry.cluster_count) - m.used.count_set();
    assert_eq!(free * to, p.free_after);
    // FSInfo is sector 1, in 4 KiB units: its free count at byte 488.
    let fsinfo = read(&disk, 4096 + 488, 4);
    assert_eq!(
        u64::from(u32::from_le_bytes(fsinfo.try_into().unwrap())),
        free
    );
    assert_eq!(read(&disk, 0, 4096), read(&disk, 6 * 4096, 4096));
    assert_eq!(plan(&mut disk, to).unwrap().step, Step::Nothing);
}

#[test]
fn fat32_on_4096_byte_sectors_reclusters_both_ways() {
    whole_run(8192, 4096);
    whole_run(4096, 8192);
}

/// The sweep from `from` to `to`, one seed at every cut point.
fn sweep(from: u64, to: u64) -> SweepReport {
    let (disk, want) = volume(from);
    let disk = Overlay {
        base: Arc::new(disk),
        written: BTreeMap::new(),
    };
    let job = |dev: &mut dyn BlockIo| recluster(dev, to).map(|_| ());
    Sweep::new()
        .seeds(1)
        .run(&disk, job, |t| {
            let m = check_fat(t.medium, &want)?;
            if t.stage == Stage::AfterRerun {
                if m.geometry.cluster_size != to || !m.findings.is_empty() {
                    return Err(format!("after the rerun: {:?}", m.findings));
                }
                if !t.medium.same_bytes(t.reference) {
                    return Err("the rerun's bytes differ from an uncut run's".into());
                }
            }
            Ok(true)
        })
        .unwrap()
}

#[test]
fn fat32_power_cuts_on_4096_byte_sectors_to_a_smaller_size() {
    let report = sweep(8192, 4096);
    eprintln!("FAT32 recluster sweep, 4 KiB sectors, 8 KiB to 4 KiB: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 20, "{report}");
}

#[test]
fn fat32_power_cuts_on_4096_byte_sectors_to_a_larger_size() {
    let report = sweep(4096, 8192);
    eprintln!("FAT32 recluster sweep, 4 KiB sectors, 4 KiB to 8 KiB: {report}");
    assert_eq!(report.intact_after_rerun, report.trials);
    assert_eq!(report.intact_before_rerun, report.trials);
    assert!(report.cut_points > 20, "{report}");
}
