//! The host's side: the volume as `info --json` describes it, the source
//! tree with every file's CRC-32, the names U-Boot and mtools show, the
//! FAT's free count counted here, mtools' copy of the volume, the faults
//! of the negative controls.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::cases::Fault;
use crate::kernel::json_u64;

/// The volume under test, from `mkfs-alloc info --json`.
#[derive(Clone, Debug)]
pub(super) struct Volume {
    /// `fat12`, `fat16`, `fat32` or `exfat`.
    pub(super) fs: String,
    pub(super) start: u64,
    pub(super) size: u64,
    pub(super) sector: u64,
    pub(super) cluster_size: u64,
    pub(super) cluster_count: u64,
    /// The first FAT's offset in the image (not in the volume).
    pub(super) fat_offset: u64,
    pub(super) fat_count: u64,
    /// The partition number, `None` without a table.
    pub(super) partition: Option<u64>,
    pub(super) label: Option<String>,
    /// Free clusters as counted by `info` and as FSInfo says (FAT32).
    pub(super) free_clusters: u64,
    pub(super) fsinfo_free: Option<u64>,
}

impl Volume {
    pub(super) fn from_json(v: &Value) -> Result<Self, String> {
        let cluster_size = json_u64(v, "cluster_size")?.max(1);
        let fs = v
            .get("fs")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let fat = fs.starts_with("fat");
        Ok(Volume {
            start: json_u64(v, "start")?,
            size: json_u64(v, "size")?,
            sector: json_u64(v, "sector_size")?,
            cluster_count: json_u64(v, "cluster_count")?,
            fat_offset: if fat { json_u64(v, "fat_offset")? } else { 0 },
            fat_count: if fat { json_u64(v, "fat_count")? } else { 0 },
            partition: v.get("partition").and_then(Value::as_u64),
            label: v.get("label").and_then(Value::as_str).map(str::to_string),
            free_clusters: json_u64(v, "free_bytes")? / cluster_size,
            fsinfo_free: v
                .get("free_bytes_fsinfo")
                .and_then(Value::as_u64)
                .map(|b| b / cluster_size),
            cluster_size,
            fs,
        })
    }

    /// The FAT width `fatinfo` must print (12, 16, 32), `None` for exFAT.
    pub(super) fn width(&self) -> Option<u32> {
        self.fs.strip_prefix("fat").and_then(|w| w.parse().ok())
    }
}

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Entry {
    pub(super) name: String,
    /// Size in bytes; 0 for a directory.
    pub(super) size: u64,
    pub(super) dir: bool,
}

/// A tree of files: every directory's entries and every file's size and
/// CRC-32, by path relative to the root (`/`-separated; the root is "").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Tree {
    pub(super) dirs: BTreeMap<String, Vec<Entry>>,
    pub(super) files: BTreeMap<String, (u64, u32)>,
}

impl Tree {
    /// Reads the tree under `root`.
    pub(super) fn read(root: &Path) -> Result<Tree, String> {
        let mut tree = Tree::default();
        tree.read_dir(root, "")?;
        Ok(tree)
    }

    fn read_dir(&mut self, dir: &Path, rel: &str) -> Result<(), String> {
        let mut entries = Vec::new();
        let listing = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for item in listing {
            let item = item.map_err(|e| format!("{}: {e}", dir.display()))?;
            let name = item
                .file_name()
                .into_string()
                .map_err(|n| format!("{}: a name that is not UTF-8: {n:?}", dir.display()))?;
            let path = join(rel, &name);
            let meta = item
                .metadata()
                .map_err(|e| format!("{}: {e}", item.path().display()))?;
            if meta.is_dir() {
                self.read_dir(&item.path(), &path)?;
                entries.push(Entry {
                    name,
                    size: 0,
                    dir: true,
                });
            } else {
                let data = std::fs::read(item.path()).map_err(|e| format!("{path}: {e}"))?;
                self.files.insert(path, (data.len() as u64, crc32(&data)));
                entries.push(Entry {
                    name,
                    size: data.len() as u64,
                    dir: false,
                });
            }
        }
        entries.sort();
        self.dirs.insert(rel.to_string(), entries);
        Ok(())
    }

    /// Removes a file or an (empty) directory, as `fatrm` does.
    pub(super) fn remove(&mut self, path: &str) {
        self.files.remove(path);
        self.dirs.remove(path);
        let (parent, name) = split(path);
        if let Some(entries) = self.dirs.get_mut(parent) {
            entries.retain(|e| e.name != name);
        }
    }

    /// Adds a directory (`fatmkdir`).
    pub(super) fn add_dir(&mut self, path: &str) {
        let (parent, name) = split(path);
        self.dirs.entry(path.to_string()).or_default();
        self.add_entry(parent, name, 0, true);
    }

    /// Adds a file (`fatwrite`).
    pub(super) fn add_file(&mut self, path: &str, size: u64, crc: u32) {
        let (parent, name) = split(path);
        self.files.insert(path.to_string(), (size, crc));
        self.add_entry(parent, name, size, false);
    }

    fn add_entry(&mut self, parent: &str, name: &str, size: u64, dir: bool) {
        let entries = self.dirs.entry(parent.to_string()).or_default();
        entries.retain(|e| e.name != name);
        entries.push(Entry {
            name: name.to_string(),
            size,
            dir,
        });
        entries.sort();
    }

    /// The same tree with every name as `rename` shows it.
    pub(super) fn renamed(&self, rename: fn(&str) -> String) -> Tree {
        let path = |p: &str| p.split('/').map(rename).collect::<Vec<_>>().join("/");
        let mut dirs = BTreeMap::new();
        for (p, entries) in &self.dirs {
            let mut entries: Vec<Entry> = entries
                .iter()
                .map(|e| Entry {
                    name: rename(&e.name),
                    ..e.clone()
                })
                .collect();
            entries.sort();
            dirs.insert(path(p), entries);
        }
        let files = self.files.iter().map(|(p, s)| (path(p), *s)).collect();
        Tree { dirs, files }
    }
}

/// `rel/name`, or `name` in the root.
pub(super) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// (parent, name) of a relative path.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// CRC-32 (IEEE 802.3, reflected, as U-Boot's `crc32` and zlib compute it).
pub(super) fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// A long name as U-Boot 2023.01 shows it: the low byte of each UTF-16
/// unit, up to the first zero byte (`slot2str` in `fs/fat/fat.c`), read
/// here as Latin-1 (the console is read that way too). ASCII names are
/// unchanged; others are a limit of U-Boot (TESTING.md).
pub(super) fn uboot_name(name: &str) -> String {
    name.encode_utf16()
        .map(|u| u.to_le_bytes()[0])
        .take_while(|&b| b != 0)
        .map(char::from)
        .collect()
}

/// A name as mtools 4.0 copies it out: each character outside the Basic
/// Multilingual Plane (a UTF-16 surrogate pair) becomes `__`.
pub(super) fn mtools_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if u32::from(c) > 0xFFFF {
                "__".to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A path the suite can type on U-Boot's command line inside double
/// quotes: printable ASCII without `"`, `$`, `\` and `;`.
pub(super) fn typeable(path: &str) -> bool {
    path.chars()
        .all(|c| (c == ' ' || c.is_ascii_graphic()) && !matches!(c, '"' | '$' | '\\' | ';'))
}

fn read_at(path: &Path, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; len];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|e| format!("{}: reading {len} bytes at {offset}: {e}", path.display()))?;
    Ok(buf)
}

fn write_at(path: &Path, offset: u64, data: &[u8]) -> Result<(), String> {
    let mut f = File::options()
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.write_all(data))
        .map_err(|e| format!("{}: writing at {offset}: {e}", path.display()))
}

/// The FAT entry of `cluster` in a FAT of `width` bits.
fn fat_entry(fat: &[u8], width: u32, cluster: u64) -> u32 {
    let at = |i: u64| usize::try_from(i).ok().and_then(|i| fat.get(i)).copied();
    let byte = |i: u64| u32::from(at(i).unwrap_or(0xFF));
    match width {
        12 => {
            let i = cluster * 3 / 2;
            let pair = byte(i) | byte(i + 1) << 8;
            if cluster % 2 == 0 {
                pair & 0xFFF
            } else {
                pair >> 4
            }
        }
        16 => byte(cluster * 2) | byte(cluster * 2 + 1) << 8,
        _ => {
            let i = cluster * 4;
            (byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24) & 0x0FFF_FFFF
        }
    }
}

/// The bytes of the first FAT that hold the entries of every cluster.
fn fat_bytes(vol: &Volume, width: u32) -> u64 {
    ((vol.cluster_count + 2) * u64::from(width)).div_ceil(8)
}

/// The free clusters, counted here in the first FAT.
pub(super) fn count_free(path: &Path, vol: &Volume) -> Result<u64, String> {
    let width = vol.width().ok_or("not a FAT volume")?;
    let len = usize::try_from(fat_bytes(vol, width)).map_err(|e| e.to_string())?;
    let fat = read_at(path, vol.fat_offset, len)?;
    Ok((2..vol.cluster_count + 2)
        .filter(|&c| fat_entry(&fat, width, c) == 0)
        .count() as u64)
}

/// FAT32: the byte offset of FSInfo's free count (`FSI_Free_Count`).
fn fsinfo_free_offset(path: &Path, vol: &Volume) -> Result<u64, String> {
    let bpb = read_at(path, vol.start, 64)?;
    let fsinfo = u64::from(u16::from_le_bytes([bpb[48], bpb[49]]));
    Ok(vol.start + fsinfo * vol.sector + 488)
}

/// mtools' copy of the whole volume (`mcopy -s`) into `out`, read back as
/// a tree. mtools' own checks of the boot sector stay on, as in the tests.
pub(super) fn mtools_copy(image: &Path, vol: &Volume, out: &Path) -> Result<Tree, String> {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let o = Command::new("mcopy")
        .args(["-s", "-n", "-i"])
        .arg(format!("{}@@{}", image.display(), vol.start))
        .arg("::/*")
        .arg(out)
        .env("LC_ALL", "C.UTF-8")
        .output()
        .map_err(|e| format!("cannot run mcopy: {e}"))?;
    if !o.status.success() || !o.stderr.is_empty() {
        return Err(format!(
            "mcopy -s ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Tree::read(out)
}

/// Puts the fault of a negative control into the image (or, for
/// [`Fault::SourceByteChanged`], into the source tree `src`).
pub(super) fn inject(fault: Fault, image: &Path, vol: &Volume, src: &Path) -> Result<(), String> {
    match fault {
        Fault::SourceByteChanged => {
            let tree = Tree::read(src)?;
            let (path, (size, _)) = tree
                .files
                .iter()
                .find(|(p, (size, _))| typeable(p) && *size > 1)
                .ok_or("no source file to change")?;
            let file = src.join(path);
            let old = read_at(&file, size / 2, 1)?;
            write_at(&file, size / 2, &[old[0] ^ 0x5A])
        }
        Fault::LostCluster => {
            let width = vol.width().ok_or("not a FAT volume")?;
            let last = vol.cluster_count + 1;
            // BPB_FATSz16 (offset 22), else BPB_FATSz32 (36), in sectors.
            let bpb = read_at(image, vol.start, 40)?;
            let fat_len = match u16::from_le_bytes([bpb[22], bpb[23]]) {
                0 => u64::from(u32::from_le_bytes([bpb[36], bpb[37], bpb[38], bpb[39]])),
                n => u64::from(n),
            } * vol.sector;
            for copy in 0..vol.fat_count {
                let fat = vol.fat_offset + copy * fat_len;
                let (at, bytes) = match width {
                    12 => {
                        let i = last * 3 / 2;
                        let old = read_at(image, fat + i, 2)?;
                        let pair = u16::from_le_bytes([old[0], old[1]]);
                        let new = if last % 2 == 0 {
                            pair | 0x0FFF
                        } else {
                            pair | 0xFFF0
                        };
                        (i, new.to_le_bytes().to_vec())
                    }
                    16 => (last * 2, 0xFFFFu16.to_le_bytes().to_vec()),
                    _ => (last * 4, 0x0FFF_FFFFu32.to_le_bytes().to_vec()),
                };
                write_at(image, fat + at, &bytes)?;
            }
            Ok(())
        }
        Fault::FsinfoLow => {
            let at = fsinfo_free_offset(image, vol)?;
            let b = read_at(image, at, 4)?;
            let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]).wrapping_sub(1000);
            write_at(image, at, &v.to_le_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The CRC-32 check value of the catalogue of parametrised CRCs.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn names_as_uboot_and_mtools_show_them() {
        assert_eq!(uboot_name("Urlaub am Meer.jpeg"), "Urlaub am Meer.jpeg");
        // Latin-1 letters keep their code as one byte; an emoji's high
        // surrogate 0xD83D leaves '=', its low one 0xDE00 ends the name.
        assert_eq!(uboot_name("Größe.txt"), "Gr\u{f6}\u{df}e.txt");
        assert_eq!(uboot_name("emoji-😀.txt"), "emoji-=");
        assert_eq!(mtools_name("emoji-😀.txt"), "emoji-__.txt");
        assert_eq!(mtools_name("日本語"), "日本語");
        assert!(typeable("many/entry 001 of the directory.txt"));
        assert!(!typeable("日本語/ファイル名.txt"));
        assert!(!typeable("a$b"));
    }

    #[test]
    fn fat_entries_of_every_width() {
        // FAT12: clusters 2 and 3 packed in 3 bytes (0x345, 0x678).
        let fat12 = [0xF8, 0xFF, 0xFF, 0x45, 0x83, 0x67];
        assert_eq!(fat_entry(&fat12, 12, 2), 0x345);
        assert_eq!(fat_entry(&fat12, 12, 3), 0x678);
        let fat16 = [0xF8, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x34, 0x12];
        assert_eq!(fat_entry(&fat16, 16, 2), 0);
        assert_eq!(fat_entry(&fat16, 16, 3), 0x1234);
        let mut fat32 = vec![0u8; 16];
        fat32[12..16].copy_from_slice(&0xF000_0005u32.to_le_bytes());
        assert_eq!(fat_entry(&fat32, 32, 3), 5, "the top 4 bits are reserved");
    }

    #[test]
    fn tree_edits_as_uboot_makes_them() {
        let mut t = Tree::default();
        t.dirs.insert(String::new(), Vec::new());
        t.add_dir("U-Boot dir");
        t.add_file("U-Boot dir/x.bin", 5, 7);
        t.add_file("UBOOT.TXT", 1, 2);
        t.remove("UBOOT.TXT");
        assert_eq!(t.dirs[""].len(), 1);
        assert_eq!(t.dirs["U-Boot dir"][0].size, 5);
        assert_eq!(t.files.len(), 1);
    }
}
