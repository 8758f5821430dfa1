//! One case's conversation with U-Boot: what it reads (`fatinfo`,
//! `fatls` of every directory, `size`, `fatload` + `crc32` of every file)
//! and what it writes (`fatmkdir`, `fatwrite`, `fatrm`), each reply
//! judged on the spot.

use super::cases::{Case, Expect};
use super::console::{Console, Reply, COMMAND_LIMIT};
use super::host::{join, typeable, uboot_name, Tree, Volume};
use super::judge::*;

/// The directory and files U-Boot writes.
const NEW_DIR: &str = "U-Boot dir";
const WRITTEN: &str = "U-Boot dir/written by U-Boot.bin";
const REMOVED: &str = "U-Boot dir/removed by U-Boot.bin";
const SMALL: &str = "UBOOT.TXT";
/// The name of the file U-Boot adds to the fullest source directory.
const ADDED: &str = "added by U-Boot.bin";
/// Bytes of the small file U-Boot writes into the root.
const SMALL_SIZE: u64 = 0x100;

/// What came of the conversation.
#[derive(Default)]
pub(super) struct Outcome {
    pub(super) findings: Vec<String>,
    pub(super) notes: Vec<String>,
    /// The tree (real names) that must be on the volume now; `None` if
    /// U-Boot wrote nothing.
    pub(super) after: Option<Tree>,
    /// The text of the case's U-Boot limit appeared in a reply.
    pub(super) limit_seen: bool,
}

/// The conversation's state.
struct Talk<'a> {
    console: &'a mut Console,
    case: &'a Case,
    /// `virtio 0:1`, `nvme 0` ...
    disk: String,
    out: Outcome,
}

impl Talk<'_> {
    /// Runs a command; a console failure (no prompt, QEMU gone) ends the
    /// conversation.
    fn run(&mut self, command: &str) -> Result<Reply, String> {
        let reply = self.console.run(command, COMMAND_LIMIT)?;
        if let Expect::Limit(text) = self.case.expect {
            self.out.limit_seen |= reply.text.contains(text);
        }
        Ok(reply)
    }

    /// Runs a command that must succeed; a finding if it does not.
    fn must(&mut self, command: &str) -> Result<Option<Reply>, String> {
        let reply = self.run(command)?;
        if reply.rc == 0 {
            Ok(Some(reply))
        } else {
            self.fail(format!(
                "`{command}` failed ({}): {}",
                reply.rc,
                one_line(&reply.text)
            ));
            Ok(None)
        }
    }

    fn fail(&mut self, finding: String) {
        self.out.findings.push(finding);
    }

    /// `fatls` of `/path`, compared with the entries U-Boot must show.
    fn list(&mut self, path: &str, tree: &Tree) -> Result<(), String> {
        let command = format!("fatls {} \"/{path}\"", self.disk);
        let Some(reply) = self.must(&command)? else {
            return Ok(());
        };
        let want = tree.renamed(uboot_name);
        let expected = want.dirs.get(path).cloned().unwrap_or_default();
        match parse_fatls(&reply.text) {
            Ok(listed) => {
                let findings = compare_dir(path, &expected, &listed);
                self.out.findings.extend(findings);
            }
            Err(e) => self.fail(format!("fatls /{path}: {e}")),
        }
        Ok(())
    }

    /// `size` and `fatload` + `crc32` of `/path`: both must say `size`
    /// bytes, the CRC must be `crc`.
    fn load(&mut self, path: &str, size: u64, crc: u32) -> Result<(), String> {
        let d = self.disk.clone();
        if let Some(r) = self.must(&format!("size {d} \"/{path}\" && printenv filesize"))? {
            let got = parse_filesize(&r.text);
            if got != Some(size) {
                self.fail(format!("size /{path}: {got:?}, the file has {size} B"));
            }
        }
        let command =
            format!("fatload {d} ${{loadaddr}} \"/{path}\" && crc32 ${{loadaddr}} ${{filesize}}");
        if let Some(r) = self.must(&command)? {
            let (bytes, got) = (parse_bytes(&r.text, "read"), parse_crc(&r.text));
            if bytes != Some(size) || got != Some(crc) {
                self.fail(format!(
                    "fatload + crc32 /{path}: {} B, CRC-32 {}; the file: {size} B, {crc:08x}",
                    bytes.map_or("no".into(), |b| b.to_string()),
                    got.map_or("none".into(), |c| format!("{c:08x}"))
                ));
            }
        }
        Ok(())
    }
}

/// Talks to U-Boot about the case's volume; `source` is the tree it was
/// populated with (`None`: an empty volume).
pub(super) fn converse(
    console: &mut Console,
    case: &Case,
    vol: &Volume,
    source: Option<&Tree>,
) -> Outcome {
    let interface = case.bus.interface();
    let disk = match vol.partition {
        Some(p) => format!("{interface} 0:{p}"),
        // U-Boot takes the whole disk when it finds no partition table.
        None => format!("{interface} 0"),
    };
    let mut talk = Talk {
        console,
        case,
        disk,
        out: Outcome::default(),
    };
    if let Err(e) = talk_through(&mut talk, vol, source) {
        talk.fail(format!("console: {e}"));
    }
    talk.out
}

fn talk_through(t: &mut Talk, vol: &Volume, source: Option<&Tree>) -> Result<(), String> {
    let help = t.run("help")?.text;
    let has = |c: &str| help.lines().any(|l| l.split_whitespace().next() == Some(c));
    for needed in [
        "fatls", "fatload", "fatinfo", "crc32", "size", "printenv", "random",
    ] {
        if !has(needed) {
            t.fail(format!("this U-Boot has no `{needed}` command"));
        }
    }
    let writes = ["fatwrite", "fatrm", "fatmkdir"].into_iter().all(has);
    if !writes {
        t.out
            .notes
            .push("this U-Boot has no fatwrite/fatrm/fatmkdir: nothing written".into());
    }
    let fstypes = t.run("fstypes")?.text;
    if matches!(t.case.expect, Expect::Limit(_)) {
        t.out.notes.push(fstypes.trim().to_string());
    }
    t.run(&format!("{} scan", t.case.bus.interface()))?;
    fatinfo(t, vol)?;
    if vol.partition.is_none() {
        let r = t.run(&format!("fatls {} 0:1 /", t.case.bus.interface()))?;
        if r.rc == 0 {
            t.fail("U-Boot found a partition 1 on an image without a partition table".into());
        }
    }
    let empty = {
        let mut e = Tree::default();
        e.dirs.insert(String::new(), Vec::new());
        e
    };
    let source = source.unwrap_or(&empty);
    read_tree(t, source)?;
    if !writes {
        return Ok(());
    }
    let after = write(t, vol, source)?;
    read_back(t, vol, source, &after)?;
    t.out.after = Some(after);
    Ok(())
}

/// U-Boot's own view after its writes: the directories it changed list
/// `after`, what it wrote loads with its CRC, what it removed is gone.
fn read_back(t: &mut Talk, vol: &Volume, source: &Tree, after: &Tree) -> Result<(), String> {
    t.list("", after)?;
    t.list(NEW_DIR, after)?;
    let fullest = fullest_dir(source);
    if let Some(dir) = &fullest {
        t.list(dir, after)?;
    }
    let added = fullest.map(|d| join(&d, ADDED));
    for path in [Some(WRITTEN.to_string()), added].into_iter().flatten() {
        if let Some(&(size, crc)) = after.files.get(&path) {
            t.load(&path, size, crc)?;
        }
    }
    let d = t.disk.clone();
    for (path, dir) in removed_paths(source, vol) {
        let command = if dir { "fatls" } else { "size" };
        let r = t.run(&format!("{command} {d} \"/{path}\""))?;
        if r.rc == 0 {
            t.fail(format!("/{path} is still there after fatrm"));
        }
    }
    Ok(())
}

/// `fatinfo`: the FAT width we wrote and the boot sector's label.
fn fatinfo(t: &mut Talk, vol: &Volume) -> Result<(), String> {
    let d = t.disk.clone();
    let Some(r) = t.must(&format!("fatinfo {d}"))? else {
        return Ok(());
    };
    let want = (
        vol.width().unwrap_or(0),
        expected_label(vol.label.as_deref()),
    );
    match parse_fatinfo(&r.text) {
        Some(got) if got == want => {}
        got => t.fail(format!(
            "fatinfo: {got:?}; we wrote FAT{} labelled {:?}",
            want.0, want.1
        )),
    }
    Ok(())
}

/// Every directory listed, every file loaded, where U-Boot can be given
/// the name (ASCII); the others are seen in their parent's listing only.
fn read_tree(t: &mut Talk, source: &Tree) -> Result<(), String> {
    let mut skipped = (0, 0);
    for path in source.dirs.keys() {
        if typeable(path) {
            t.list(path, source)?;
        } else {
            skipped.0 += 1;
        }
    }
    for (path, &(size, crc)) in &source.files {
        if typeable(path) {
            t.load(path, size, crc)?;
        } else {
            skipped.1 += 1;
        }
    }
    if skipped != (0, 0) {
        t.out.notes.push(format!(
            "{} directories, {} files with non-ASCII names: listed only (U-Boot limit)",
            skipped.0, skipped.1
        ));
    }
    Ok(())
}

/// The source files `fatrm` removes from a populated volume: the first
/// file (by path) of more than two clusters and the first empty
/// directory U-Boot can be given the names of.
fn removed_paths(source: &Tree, vol: &Volume) -> Vec<(String, bool)> {
    let mut paths = Vec::new();
    if let Some((p, _)) = source
        .files
        .iter()
        .find(|(p, (size, _))| typeable(p) && *size > 2 * vol.cluster_size)
    {
        paths.push((p.clone(), false));
    }
    if let Some((p, _)) = source
        .dirs
        .iter()
        .find(|(p, entries)| !p.is_empty() && entries.is_empty() && typeable(p))
    {
        paths.push((p.clone(), true));
    }
    paths.push((REMOVED.to_string(), false));
    paths
}

/// The writes: a directory, a file of three clusters and 17 bytes in it
/// (random data, its CRC from U-Boot), a small file in the root, a file
/// written and removed again, and on a populated volume a source file and
/// an empty directory removed. Returns the tree that must be on the volume.
fn write(t: &mut Talk, vol: &Volume, source: &Tree) -> Result<Tree, String> {
    let d = t.disk.clone();
    let size = 3 * vol.cluster_size + 17;
    let mut after = source.clone();
    if t.must(&format!("fatmkdir {d} \"/{NEW_DIR}\""))?.is_some() {
        after.add_dir(NEW_DIR);
    }
    // Random bytes (seed 7); U-Boot's CRCs of them and of their first
    // 256 bytes are what the files must hold.
    let crcs = t
        .must(&format!(
            "random ${{loadaddr}} {size:#x} 7 && crc32 ${{loadaddr}} {size:#x} && crc32 ${{loadaddr}} {SMALL_SIZE:#x}"
        ))?
        .map(|r| {
            let mut lines = r.text.lines().filter_map(parse_crc);
            (lines.next(), lines.next())
        });
    let Some((Some(crc_big), Some(crc_small))) = crcs else {
        t.fail("U-Boot's random + crc32 gave no CRC".into());
        return Ok(after);
    };
    let mut files = vec![
        (WRITTEN.to_string(), size, crc_big),
        (SMALL.to_string(), SMALL_SIZE, crc_small),
        (REMOVED.to_string(), size, crc_big),
    ];
    if let Some(dir) = fullest_dir(source) {
        files.push((join(&dir, ADDED), size, crc_big));
    }
    for (path, bytes, file_crc) in files {
        let command = format!("fatwrite {d} ${{loadaddr}} \"/{path}\" {bytes:#x}");
        if let Some(r) = t.must(&command)? {
            if parse_bytes(&r.text, "written") != Some(bytes) {
                t.fail(format!("fatwrite /{path}: {:?}", one_line(&r.text)));
            }
            after.add_file(&path, bytes, file_crc);
        }
    }
    for (path, _) in removed_paths(source, vol) {
        if t.must(&format!("fatrm {d} \"/{path}\""))?.is_some() {
            after.remove(&path);
        }
    }
    Ok(after)
}

/// The source directory with the most entries (U-Boot can be given its
/// name): a file added there may need the directory to grow by a cluster.
fn fullest_dir(source: &Tree) -> Option<String> {
    source
        .dirs
        .iter()
        .filter(|(p, entries)| !p.is_empty() && !entries.is_empty() && typeable(p))
        .max_by_key(|(_, entries)| entries.len())
        .map(|(p, _)| p.clone())
}

/// A reply on one line, shortened, for a finding.
fn one_line(text: &str) -> String {
    let line = text.trim().replace('\n', " | ");
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line,
    }
}
