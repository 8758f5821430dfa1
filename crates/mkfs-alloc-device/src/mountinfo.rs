//! Parser of `/proc/self/mountinfo` (Linux).
//!
//! Source: proc(5), "/proc/pid/mountinfo". One line per mount:
//!
//! ```text
//! 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//! (1)(2) (3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
//! ```
//!
//! (3) is `major:minor` of the mounted device, (5) the mount point, (9) the
//! file system type and (10) the mount source. Fields (7) are optional and
//! end with `-`. Spaces, tabs, newlines and backslashes are escaped as octal
//! (`\040`).
//!
//! Reading: the file is a seq_file (`fs/proc_namespace.c`); each read(2)
//! fills at most one kernel buffer and the next resumes where the last
//! stopped. Since Linux 5.8 that place is a cursor in the mount list
//! (`fs/namespace.c`, "proc/mounts: add cursor"); before, it was a record
//! index, so a mount or unmount between two reads could hide a line or
//! show one twice. [`read_table`] reads until two readings agree.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Device number of the mounted file system (`0:NN` for virtual and
    /// FUSE file systems).
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Mount point.
    pub mountpoint: PathBuf,
    /// File system type (`ext4`, `vfat`, `fuseblk`, ...).
    pub fs_type: String,
    /// Mount source (`/dev/sdb1`, `/dev/loop3` for exfat-fuse, `tmpfs`).
    pub source: String,
}

/// Readings taken while the table keeps changing between two of them.
const READINGS: usize = 5;

/// A seq_file table of `/proc` (`/proc/self/mountinfo`, `/proc/locks`):
/// the whole text, read in reads of 64 KiB.
pub(crate) fn read_whole(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut text = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// `path` (a mount table) read again until two readings agree, up to
/// [`READINGS`] times; the last reading when the table never settles.
pub(crate) fn read_table(path: &Path) -> io::Result<String> {
    let mut last = read_whole(path)?;
    for _ in 1..READINGS {
        let next = read_whole(path)?;
        if next == last {
            break;
        }
        last = next;
    }
    Ok(last)
}

/// Parses the whole file; malformed lines are skipped.
pub(crate) fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let mut fields = line.split(' ');
    let _id = fields.next()?;
    let _parent = fields.next()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let _root = fields.next()?;
    let mountpoint = unescape(fields.next()?);
    let _options = fields.next()?;
    // Optional fields up to the separator.
    for f in fields.by_ref() {
        if f == "-" {
            break;
        }
    }
    let fs_type = unescape(fields.next()?);
    let source = unescape(fields.next()?);
    Some(Mount {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        mountpoint: PathBuf::from(mountpoint),
        fs_type,
        source,
    })
}

/// Decodes the kernel's `\ooo` octal escapes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = &b[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits
                    .iter()
                    .fold(0u16, |acc, d| acc * 8 + u16::from(d - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_and_fuse_mounts() {
        let text = "\
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
112 27 0:52 / /tmp/my\\040stick rw,nosuid,nodev,relatime - fuseblk /dev/loop3 rw,user_id=0
bad line
113 27 7:3 / /mnt/x rw master:2 propagate_from:1 - vfat /dev/loop3 rw
";
        let m = parse(text);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[0].mountpoint, PathBuf::from("/"));
        assert_eq!(m[0].source, "/dev/vda");
        assert_eq!(m[1].fs_type, "fuseblk");
        assert_eq!(m[1].mountpoint, PathBuf::from("/tmp/my stick"));
        assert_eq!((m[1].major, m[1].minor), (0, 52));
        assert_eq!((m[2].fs_type.as_str(), m[2].minor), ("vfat", 3));
    }

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape("a\\040b\\134c\\011"), "a b\\c\t");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
        assert_eq!(unescape("\\xyz"), "\\xyz");
        assert_eq!(unescape("\\é12"), "\\é12");
    }

    #[test]
    fn a_table_longer_than_one_read_comes_whole() {
        let dir = std::env::temp_dir().join(format!("mkfs-alloc-mountinfo-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("table");
        let line = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n";
        let text = line.repeat(3_000); // 168,000 bytes: three reads of 64 KiB
        fs::write(&file, &text).unwrap();
        assert_eq!(read_whole(&file).unwrap(), text);
        assert_eq!(read_table(&file).unwrap(), text);
        assert_eq!(parse(&read_table(&file).unwrap()).len(), 3_000);
        assert!(read_table(&dir.join("absent")).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_process_mount_table_holds_the_root() {
        let text = read_table(Path::new("/proc/self/mountinfo")).unwrap();
        assert!(parse(&text).iter().any(|m| m.mountpoint == Path::new("/")));
    }
}
