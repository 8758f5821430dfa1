//! `mkfs.exfat`: exfatprogs' words (the line itself is
//! `mkfs_alloc::compat::cmdline`'s).

/// The exfatprogs version whose command line the front end follows.
const EXFATPROGS: &str = "1.2.0";

/// `-V`: exfatprogs' first line (GParted enables exFAT only when the output
/// starts with `exfatprogs version`), then who we are.
pub fn version_line() -> String {
    format!(
        "exfatprogs version : {EXFATPROGS}\nmkfs.exfat: mkfs-alloc {}, an exfatprogs-compatible front end",
        env!("CARGO_PKG_VERSION")
    )
}

/// The usage text.
pub fn usage() -> String {
    "Usage: mkfs.exfat [OPTIONS] DEVICE\n\
     Make an exFAT file system on DEVICE (a block device or an existing image file)\n\
     with mkfs-alloc, taking exfatprogs' options.\n\n\
     Options:\n  \
     -L, --volume-label=LABEL   volume label (up to 11 UTF-16 units); -n LABEL too\n  \
     -c, --cluster-size=SIZE    cluster size in bytes, or with a k/K or m/M suffix\n  \
     -b, --boundary-align=SIZE  alignment of the FAT and the cluster heap (default 1M)\n  \
     -s, --sector-size=SIZE     logical sector size: 512, 1024, 2048, 4096\n  \
     -f, --full-format          zero the whole device\n  \
     -q, --quiet                print nothing but errors\n  \
     -U, --volume-guid=GUID     a volume GUID entry (its bytes in text order, as exfatprogs)\n  \
     -v, --verbose              print mkfs-alloc's summary (the default)\n  \
     -V, --version, -h, --help\n\
     Refused by name (exit 2): --pack-bitmap, -C, -F, -K, -P, --upcase.\n\
     Exit codes: 0 done; 1 no DEVICE, or an I/O failure after writing began;\n\
     2 refused before anything was written. See mkfs-alloc(1)."
        .to_string()
}
