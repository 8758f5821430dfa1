//! `mkfs.fat` / `mkfs.vfat` / `mkfs.msdos` / `mkdosfs`: dosfstools 4.2's
//! words (the line itself is `mkfs_alloc::compat::cmdline`'s).

use super::DOSFSTOOLS;
use mkfs_alloc::compat::Note;
use mkfs_alloc::layout::units::format_size;

/// dosfstools 4.2's warning for a label with lower-case letters (its text
/// exactly, whatever the program's name).
pub const LABEL_WARNING: &str =
    "mkfs.fat: Warning: lowercase labels might not work properly on some systems";

/// The first line of every run and of `--help`: the dialect we follow, then
/// who we are. libblockdev reads `mkfs.fat\s+([\d.]+).+` from `--help` and
/// passes `--mbr=no` from 4.2 on.
pub fn version_line() -> String {
    format!(
        "mkfs.fat {DOSFSTOOLS} (mkfs-alloc {}; dosfstools-compatible front end)",
        env!("CARGO_PKG_VERSION")
    )
}

/// The usage text (`--help`, and after a usage error).
pub fn usage(name: &str) -> String {
    format!(
        "Usage: {name} [OPTIONS] TARGET [BLOCKS]\n\
         Make a FAT12/16/32 file system on TARGET (a block device or an image file) with\n\
         mkfs-alloc, taking dosfstools {DOSFSTOOLS}'s options. BLOCKS: 1024-byte blocks to use;\n\
         with -C, TARGET is created with that size.\n\n\
         Options:\n  \
         -a           do not align the FAT and data region (default: 1 MiB alignment)\n  \
         -C           create TARGET (BLOCKS required)\n  \
         -F 12|16|32  FAT width (default: as mkfs.fat chooses from the size)\n  \
         -f 1|2       number of FATs (default 2)\n  \
         -b 6         FAT32 backup boot sector (only 6)\n  \
         -i VOLID     volume ID, 32-bit hex\n  \
         -I           format a whole disk that holds partitions\n  \
         -n LABEL     volume label (up to 11 characters, case kept)\n  \
         --codepage=N DOS codepage of the label (labels are ASCII here)\n  \
         -r COUNT     root directory entries (FAT12/16)\n  \
         -s COUNT     sectors per cluster (a power of two up to 128)\n  \
         -S SIZE      logical sector size: 512, 1024, 2048 or 4096\n  \
         -v           verbose: print mkfs-alloc's summary\n  \
         --mbr=n|a    no fake MBR in the boot sector (the only way here)\n  \
         --variant=standard\n  \
         --invariant  volume ID 1234-ABCD and a fixed time\n  \
         --help, --version\n\
         Refused by name (exit 2): -A -c -D -g -h -l -m -M -R --offset, --mbr=y, --variant=atari.\n\
         Exit codes: 0 done; 1 no TARGET, or an I/O failure after writing began;\n\
         2 refused before anything was written. See mkfs-alloc(1)."
    )
}

/// A note's words, after `NAME: note: `.
pub fn note_text(n: &Note) -> String {
    match *n {
        Note::RootEntriesOnFat32 => {
            "root directory entries specified with -r have no effect on FAT32".to_string()
        }
        Note::OutsideMargins {
            fs,
            cluster,
            clusters,
            instead,
        } => {
            let why = format!(
                "mkfs.fat {DOSFSTOOLS} would make {} with {} clusters ({clusters} of them); mkfs-alloc's layout \
                 leaves a count outside that width's range with its 16-cluster margins (FAT12 1..4,068, \
                 FAT16 4,101..65,508, FAT32 65,541 and more), where readers disagree about the width",
                fs.id().to_uppercase(),
                format_size(cluster),
            );
            match instead {
                Some((bytes, n)) => format!(
                    "{why}; made it with {} clusters ({n} of them) instead",
                    format_size(bytes)
                ),
                None => format!(
                    "{why}; made the width the volume's size allows, at mkfs-alloc's cluster size, instead"
                ),
            }
        }
        _ => "the volume differs from mkfs.fat's".to_string(),
    }
}
