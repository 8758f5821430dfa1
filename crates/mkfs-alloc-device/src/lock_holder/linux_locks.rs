//! Who holds a BSD lock (`flock`) on a file: `/proc/locks`, and whether
//! that process is one of ours (this process or an ancestor).
//!
//! systemd's "locking block device access" convention
//! (<https://systemd.io/BLOCK_DEVICE_LOCKING/>) lets a program take
//! `flock(LOCK_EX)` on a device and run mkfs under that lock
//! (systemd-repart, systemd-makefs, `flock -x DEV mkfs.vfat DEV`). Our own
//! `flock(LOCK_EX | LOCK_NB)` then fails on a second open file of the same
//! node; the lock's holder, read here, tells that caller apart from an
//! unrelated process.
//!
//! Sources: proc(5) (`/proc/locks`, `/proc/PID/status`, `comm`, `cmdline`),
//! the kernel's `fs/locks.c` (`lock_get_status`: `ID: [-> ]KIND ADVISORY
//! TYPE PID MAJ:MIN:INODE START END`, major and minor in hex, the inode in
//! decimal; a waiter's line carries `->`; a lock taken in another pid
//! namespace shows pid 0), and `fs/seq_file.c` (`seq_read_iter`: each
//! read(2) starts again at the record index the last one stopped at, and
//! fills at most one buffer, a page at first).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::LockHolder;

/// One granted `FLOCK` entry of `/proc/locks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlockEntry {
    /// The process that took the lock (0: not visible from here).
    pub(crate) pid: u32,
    /// Device number (major, minor) of the file system holding the inode.
    pub(crate) dev: (u32, u32),
    /// Inode number.
    pub(crate) ino: u64,
}

/// The granted `FLOCK` entries of `/proc/locks` text (POSIX, OFD locks,
/// leases and waiters are left out; malformed lines are skipped).
pub(crate) fn parse_locks(text: &str) -> Vec<FlockEntry> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<FlockEntry> {
    let mut words = line.split_whitespace();
    words.next()?.strip_suffix(':')?;
    let kind = words.next()?;
    if kind != "FLOCK" {
        // "->" (or "->FLOCK"): a process waiting for the lock, not a holder.
        return None;
    }
    let _advisory = words.next()?;
    let _access = words.next()?;
    let pid = words.next()?.parse().ok()?;
    let mut id = words.next()?.split(':');
    let major = u32::from_str_radix(id.next()?, 16).ok()?;
    let minor = u32::from_str_radix(id.next()?, 16).ok()?;
    let ino = id.next()?.parse().ok()?;
    Some(FlockEntry {
        pid,
        dev: (major, minor),
        ino,
    })
}

/// The parent's pid from `/proc/PID/status` text (`PPid:`).
pub(crate) fn parse_ppid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A `/proc/PID/cmdline` (arguments separated and ended by NUL) as one
/// printable line: arguments joined by spaces, control characters shown as
/// `?` (a process name is not trusted to be text for a terminal), at most
/// `MAX_COMMAND` characters.
pub(crate) fn command_line(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let words: Vec<&str> = text.split('\0').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return None;
    }
    Some(printable(&words.join(" ")))
}

/// Longest command line (in characters) an error repeats.
const MAX_COMMAND: usize = 200;

fn printable(s: &str) -> String {
    let mut out: String = s
        .trim()
        .chars()
        .take(MAX_COMMAND)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.trim().chars().count() > MAX_COMMAND {
        out.push_str("...");
    }
    out
}

/// Longest chain of parents followed (pid 1 ends it well before this; the
/// bound keeps a cycle read from a changing `/proc` finite).
const MAX_DEPTH: usize = 4096;

/// This process and its ancestors below pid 1, from `/proc/PID/status`.
/// Pid 1 (init, every process's ancestor) is left out: a lock it holds is
/// not one a caller took for this run.
fn lineage() -> Vec<u32> {
    let mut chain = vec![std::process::id()];
    while chain.len() < MAX_DEPTH {
        let Some(&pid) = chain.last() else { break };
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        match parse_ppid(&status) {
            Some(ppid) if ppid > 1 && !chain.contains(&ppid) => chain.push(ppid),
            _ => break,
        }
    }
    chain
}

/// What `/proc` says about process `pid`.
fn holder(pid: u32) -> LockHolder {
    let name = fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| printable(&s))
        .filter(|s| !s.is_empty());
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|raw| command_line(&raw));
    LockHolder { pid, name, command }
}

/// Of the `FLOCK` entries on (`dev`, `ino`), whether all are held by
/// `ours` (this process and its ancestors): `Ok(())` then; otherwise the
/// first other holder's pid (`None`: no entry found, or pid 0).
pub(crate) fn foreign_holder(
    entries: &[FlockEntry],
    dev: (u32, u32),
    ino: u64,
    ours: &[u32],
) -> Result<(), Option<u32>> {
    let mut found = false;
    for e in entries.iter().filter(|e| e.dev == dev && e.ino == ino) {
        found = true;
        if e.pid == 0 {
            return Err(None);
        }
        if !ours.contains(&e.pid) {
            return Err(Some(e.pid));
        }
    }
    if found {
        Ok(())
    } else {
        Err(None)
    }
}

/// Readings of `/proc/locks` taken before "no entry on the inode" is
/// believed.
const READINGS: usize = 5;

/// `/proc/locks` as far as it can be read (empty when it cannot), in reads
/// of 64 KiB: a table that fits one kernel buffer comes whole in the first
/// read(2), which the kernel serves under its lock-list lock.
fn read_locks() -> String {
    crate::mountinfo::read_whole(Path::new("/proc/locks")).unwrap_or_default()
}

/// The granted `FLOCK` entries on (`dev`, `ino`), each once, read again
/// while there are none (up to [`READINGS`] times).
///
/// Between two reads the table can change, and the next read resumes at a
/// record index, not at a record: a lock taken before the position shows
/// an entry twice, one released before it hides the entry after it (a
/// table longer than one kernel buffer always comes in several reads). The
/// caller's `flock` has just failed, so a lock on the inode is held; an
/// empty answer is taken again.
fn entries_on(dev: (u32, u32), ino: u64) -> Vec<FlockEntry> {
    let mut entries = Vec::new();
    for reading in 0..READINGS {
        if reading > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        entries = parse_locks(&read_locks());
        entries.retain(|e| e.dev == dev && e.ino == ino);
        entries.sort_unstable_by_key(|e| e.pid);
        entries.dedup();
        if !entries.is_empty() {
            break;
        }
    }
    entries
}

/// After `flock` failed because the lock is held: `Ok(())` when every
/// holder of a lock on (`dev`, `ino`) is this process or one of its
/// ancestors, else the other holder (if it can be told).
pub(crate) fn check(path: PathBuf, dev: (u32, u32), ino: u64) -> Result<(), crate::DeviceError> {
    let entries = entries_on(dev, ino);
    match foreign_holder(&entries, dev, ino, &lineage()) {
        Ok(()) => Ok(()),
        Err(pid) => Err(crate::DeviceError::Locked {
            path,
            holder: pid.map(holder),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Linux 6.x prints them: a flock(1) holding a loop device
    /// node (devtmpfs 0:5), a waiter for it, a POSIX lock, an OFD lock and
    /// a lease on other inodes, and a shared flock.
    const SAMPLE: &str = "\
1: FLOCK  ADVISORY  WRITE 4242 00:05:1093 0 EOF
1: -> FLOCK  ADVISORY  WRITE 4300 00:05:1093 0 EOF
2: POSIX  ADVISORY  WRITE 611 fe:01:786434 0 EOF
3: OFDLCK ADVISORY  READ -1 00:19:17 0 EOF
4: LEASE  ACTIVE    READ 900 08:02:12 0 EOF
5: FLOCK  ADVISORY  READ 77 103:0a:524291 0 EOF
";

    #[test]
    fn parses_granted_flock_entries_only() {
        let e = parse_locks(SAMPLE);
        assert_eq!(
            e,
            vec![
                FlockEntry {
                    pid: 4242,
                    dev: (0, 5),
                    ino: 1093
                },
                FlockEntry {
                    pid: 77,
                    dev: (0x103, 0x0a),
                    ino: 524_291
                },
            ]
        );
    }

    #[test]
    fn a_waiter_written_without_a_space_is_no_holder() {
        assert!(parse_locks("7: ->FLOCK  ADVISORY  WRITE 9 00:05:3 0 EOF\n").is_empty());
    }

    #[test]
    fn malformed_lines_are_skipped() {
        let text = "garbage\n1: FLOCK ADVISORY WRITE x 00:05:1 0 EOF\n\
                    2: FLOCK ADVISORY WRITE 5 zz:05:1 0 EOF\n3: FLOCK\n\
                    4: FLOCK ADVISORY WRITE 5 00:05 0 EOF\n\
                    5: FLOCK ADVISORY WRITE 6 00:05:2 0 EOF\n";
        assert_eq!(
            parse_locks(text),
            vec![FlockEntry {
                pid: 6,
                dev: (0, 5),
                ino: 2
            }]
        );
    }

    #[test]
    fn an_ancestors_lock_is_ours_another_is_not() {
        let e = parse_locks(SAMPLE);
        // Held by our parent (4242): ours.
        assert_eq!(foreign_holder(&e, (0, 5), 1093, &[4300, 4242, 1]), Ok(()));
        // By ourselves (a lock taken before an exec).
        assert_eq!(foreign_holder(&e, (0, 5), 1093, &[4242, 1]), Ok(()));
        // By a process outside our lineage: named.
        assert_eq!(
            foreign_holder(&e, (0, 5), 1093, &[4300, 1]),
            Err(Some(4242))
        );
        // Same inode number on another file system: not this file.
        assert_eq!(foreign_holder(&e, (0, 6), 1093, &[4242]), Err(None));
        // A shared lock of another process.
        assert_eq!(
            foreign_holder(&e, (0x103, 0x0a), 524_291, &[1]),
            Err(Some(77))
        );
    }

    #[test]
    fn an_invisible_or_second_holder_is_foreign() {
        let e = parse_locks(
            "1: FLOCK  ADVISORY  READ 10 00:05:9 0 EOF\n\
             2: FLOCK  ADVISORY  READ 11 00:05:9 0 EOF\n\
             3: FLOCK  ADVISORY  WRITE 0 00:05:8 0 EOF\n",
        );
        assert_eq!(foreign_holder(&e, (0, 5), 9, &[10, 1]), Err(Some(11)));
        assert_eq!(foreign_holder(&e, (0, 5), 9, &[11, 10, 1]), Ok(()));
        assert_eq!(foreign_holder(&e, (0, 5), 8, &[0, 1]), Err(None));
    }

    #[test]
    fn ppid_from_status() {
        let status = "Name:\tflock\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n\
                      Ngid:\t0\nPid:\t4242\nPPid:\t4100\nTracerPid:\t0\n";
        assert_eq!(parse_ppid(status), Some(4100));
        assert_eq!(parse_ppid("Name:\tinit\nPPid:\t0\n"), Some(0));
        assert_eq!(parse_ppid("Name:\tx\n"), None);
    }

    #[test]
    fn command_lines_are_printable_and_bounded() {
        assert_eq!(
            command_line(b"flock\0-x\0/dev/loop0\0sleep\x0060\0").as_deref(),
            Some("flock -x /dev/loop0 sleep 60")
        );
        assert_eq!(command_line(b"").as_deref(), None);
        assert_eq!(
            command_line(b"evil\x1b[2J\0x\0").as_deref(),
            Some("evil?[2J x")
        );
        let long = vec![b'a'; 500];
        let shown = command_line(&long).unwrap_or_default();
        assert_eq!(shown.chars().count(), MAX_COMMAND + 3);
        assert!(shown.ends_with("..."));
    }

    /// A real lock: one open file of this process holds it, a second one
    /// cannot take it, and `/proc/locks` names this process: ours.
    #[test]
    fn a_lock_this_process_holds_is_found_and_ours() {
        use rustix::fs::{flock, FlockOperation};
        use std::os::unix::fs::MetadataExt;
        let dir = mkfs_alloc_testsupport::TempDir::new("proc-locks");
        let path = dir.join("locked");
        let first = fs::File::create(&path).expect("create");
        flock(&first, FlockOperation::NonBlockingLockExclusive).expect("lock");
        let second = fs::File::open(&path).expect("open");
        let refused = flock(&second, FlockOperation::NonBlockingLockExclusive);
        assert_eq!(refused, Err(rustix::io::Errno::WOULDBLOCK));
        let meta = second.metadata().expect("fstat");
        let dev = (rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
        let mine = entries_on(dev, meta.ino());
        assert_eq!(mine.len(), 1, "{}", read_locks());
        assert_eq!(mine[0].pid, std::process::id());
        assert!(check(path.clone(), dev, meta.ino()).is_ok());
        drop(first);
        // Released: no entry, so no holder to let through.
        let err = check(path, dev, meta.ino()).map_err(|e| e.to_string());
        assert!(
            err.is_err_and(|e| e.ends_with("in use by another process (it holds a lock on it)"))
        );
    }

    /// Other locks taken and released while the table is read (as the
    /// other tests of this binary do): the held one is found every time.
    #[test]
    fn a_held_lock_is_found_while_others_come_and_go() {
        use rustix::fs::{flock, FlockOperation};
        use std::os::unix::fs::MetadataExt;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = mkfs_alloc_testsupport::TempDir::new("proc-locks-busy");
        let held = fs::File::create(dir.join("held")).expect("create");
        flock(&held, FlockOperation::NonBlockingLockExclusive).expect("lock");
        let meta = held.metadata().expect("fstat");
        let dev = (rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..4 {
                let path = dir.join(&format!("churn-{t}"));
                let stop = &stop;
                s.spawn(move || {
                    let f = fs::File::create(path).expect("create");
                    while !stop.load(Ordering::Relaxed) {
                        flock(&f, FlockOperation::NonBlockingLockExclusive).expect("lock");
                        flock(&f, FlockOperation::Unlock).expect("unlock");
                    }
                });
            }
            let missed = (0..2000)
                .filter(|_| entries_on(dev, meta.ino()).len() != 1)
                .count();
            stop.store(true, Ordering::Relaxed);
            assert_eq!(missed, 0, "readings without the held lock, of 2000");
        });
    }

    #[test]
    fn this_process_lineage_holds_its_parent() {
        let chain = lineage();
        assert_eq!(chain.first(), Some(&std::process::id()));
        assert!(chain.len() >= 2, "{chain:?}");
    }
}
