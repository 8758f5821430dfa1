//! The request as mkfs-alloc's own command line.

use std::ffi::OsString;
use std::path::Path;

use mkfs_alloc_layout::{ClusterChoice, FsChoice};
use mkfs_alloc_partition::Guid;

use super::Request;
use crate::compat::Decision;

impl Request {
    /// The arguments of `mkfs-alloc` for the request and its decision
    /// (`sector`: the sector size it was decided for): the same format
    /// through mkfs-alloc's own command line, so that every check of it
    /// applies.
    pub fn mkfs_alloc_args(&self, d: &Decision, sector: u32) -> Vec<OsString> {
        let req = self;
        let mut a: Vec<OsString> = [
            "mkfs-alloc",
            "--table",
            "none",
            "--yes",
            "--fs",
            fs_arg(d.fs),
            "--cluster",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        a.push(cluster_arg(d.cluster).into());
        let mut opt = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                a.push(name.into());
                a.push(v.into());
            }
        };
        opt("--sector-size", req.sector.map(|s| s.to_string()));
        opt("--label", req.label.clone().filter(|l| !l.is_empty()));
        opt("--serial", req.serial.map(|s| format!("{s:08X}")));
        opt("--size", req.size.map(|s| s.to_string()));
        opt(
            "--align",
            req.align_for(sector).or(d.align).map(|s| s.to_string()),
        );
        opt("--fats", req.fats.map(|f| f.to_string()));
        let small = matches!(fs_arg(d.fs), "fat12" | "fat16");
        let root = d.root_entries.or(req.root_entries);
        opt(
            "--root-entries",
            root.filter(|_| small).map(|r| r.to_string()),
        );
        if let Some(g) = &req.volume_guid {
            a.push(format!("--volume-guid={}", Guid::from_mixed_endian(*g)).into());
        }
        if req.full {
            a.push("--full".into());
        }
        if req.quiet {
            a.push("-q".into());
        }
        a.push("--".into());
        a.push(plain_target(&req.target));
        a
    }
}

/// `--fs`'s value for a decision's file system.
fn fs_arg(fs: FsChoice) -> &'static str {
    match fs {
        FsChoice::Fixed(k) => k.id(),
        FsChoice::Fat => "fat",
        _ => "auto",
    }
}

/// `--cluster`'s value for a decision's cluster size.
fn cluster_arg(c: ClusterChoice) -> String {
    match c {
        ClusterChoice::Bytes(b) | ClusterChoice::FromData(b) => b.to_string(),
        _ => "auto".to_string(),
    }
}

/// A bare relative name (`list`) as a path (`./list`): mkfs-alloc takes a
/// subcommand's name for a mistake, mkfs.fat for a file.
fn plain_target(p: &Path) -> OsString {
    if p.is_relative() && p.components().count() == 1 {
        Path::new(".").join(p).into_os_string()
    } else {
        p.as_os_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_targets() {
        assert_eq!(plain_target(Path::new("list")), OsString::from("./list"));
        assert_eq!(
            plain_target(Path::new("/dev/sdb1")),
            OsString::from("/dev/sdb1")
        );
    }

    #[test]
    fn a_decision_becomes_mkfs_alloc_arguments() {
        let req = super::super::parse(
            super::super::FrontEnd::Exfat,
            &["-c", "32K", "card.img"].map(OsString::from),
        )
        .expect("a valid line");
        let d = Decision {
            fs: FsChoice::Fixed(mkfs_alloc_layout::FsKind::Exfat),
            cluster: ClusterChoice::Bytes(32 << 10),
            root_entries: None,
            align: None,
            bios: None,
            notes: Vec::new(),
        };
        let args = req.mkfs_alloc_args(&d, 512);
        let text: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            text[..7],
            [
                "mkfs-alloc",
                "--table",
                "none",
                "--yes",
                "--fs",
                "exfat",
                "--cluster"
            ]
        );
        assert_eq!(text[7], "32768");
        assert_eq!(text[text.len() - 2..], ["--", "./card.img"]);
    }
}
