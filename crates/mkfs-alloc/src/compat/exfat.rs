//! mkfs.exfat (exfatprogs): its default cluster size.

use super::{Decision, Medium};
use mkfs_alloc_layout::{ClusterChoice, FsChoice, FsKind};

/// exfatprogs' default cluster size (its `exfat_set_default_cluster_size`,
/// on the device's size): 4 KiB up to and including 256 MiB, 32 KiB up to
/// and including 32 GiB, 128 KiB above.
pub fn exfat_default_cluster(bytes: u64) -> u64 {
    match bytes {
        b if b <= 256 << 20 => 4 << 10,
        b if b <= 32 << 30 => 32 << 10,
        _ => 128 << 10,
    }
}

/// exFAT at `cluster` bytes (mkfs.exfat's `-c`), or at mkfs.exfat's default
/// for the medium (at least a sector).
pub fn decide_exfat(cluster: Option<u64>, m: &Medium) -> Decision {
    let cluster =
        cluster.unwrap_or_else(|| exfat_default_cluster(m.bytes).max(u64::from(m.sector)));
    Decision {
        fs: FsChoice::Fixed(FsKind::Exfat),
        cluster: ClusterChoice::Bytes(cluster),
        root_entries: None,
        align: None,
        bios: None,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_cluster_sizes_follow_exfatprogs() {
        assert_eq!(exfat_default_cluster(64 << 20), 4096);
        assert_eq!(exfat_default_cluster(256 << 20), 4096);
        assert_eq!(exfat_default_cluster((256 << 20) + 512), 32768);
        assert_eq!(exfat_default_cluster(32 << 30), 32768);
        assert_eq!(exfat_default_cluster((32 << 30) + 512), 131_072);
        assert_eq!(exfat_default_cluster(300 << 20), 32768);
        assert_eq!(exfat_default_cluster(40 << 30), 131_072);
    }

    #[test]
    fn the_default_is_at_least_a_sector() {
        let m = Medium {
            bytes: 64 << 20,
            block: 4096,
            sector: 8192,
            not_fixed: true,
            align: None,
        };
        assert_eq!(decide_exfat(None, &m).cluster, ClusterChoice::Bytes(8192));
        assert_eq!(
            decide_exfat(Some(1 << 20), &m).cluster,
            ClusterChoice::Bytes(1 << 20)
        );
    }
}
