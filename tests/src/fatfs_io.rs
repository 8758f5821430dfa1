//! The `fatfs` crate as an independent FAT reader and writer: one file in
//! the root directory written and read back, and the round trip the FAT
//! interop suites share (fatfs, mtools and fsck.fat agree on it).

use crate::checks::{fsck_fat_clean, mtools};
use crate::image::test_data;
use std::io::{Read, Write};
use std::path::Path;

/// Opens the FAT volume of the image file `img` (read-write) with `fatfs`.
#[track_caller]
pub fn open_fs(img: &Path) -> fatfs::FileSystem<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", img.display()));
    fatfs::FileSystem::new(f, fatfs::FsOptions::new())
        .unwrap_or_else(|e| panic!("fatfs cannot open the image: {e}"))
}

/// Writes `data` as `/NAME` through `fatfs` and unmounts.
#[track_caller]
pub fn fatfs_write(img: &Path, name: &str, data: &[u8]) {
    let fs = open_fs(img);
    {
        let mut f = fs.root_dir().create_file(name).expect("fatfs create_file");
        f.truncate().expect("fatfs truncate");
        f.write_all(data).expect("fatfs write");
        f.flush().expect("fatfs flush");
    }
    fs.unmount().expect("fatfs unmount");
}

/// Reads `/NAME` through `fatfs`.
#[track_caller]
pub fn fatfs_read(img: &Path, name: &str) -> Vec<u8> {
    let fs = open_fs(img);
    let mut out = Vec::new();
    fs.root_dir()
        .open_file(name)
        .expect("fatfs open_file")
        .read_to_end(&mut out)
        .expect("fatfs read");
    out
}

/// `fatfs` writes `FATFS.BIN` (one and a half clusters and 7 bytes) and
/// reads it back, reads `DATA.BIN` (which mcopy wrote, holding `data`),
/// `mtype` reads fatfs's file, and `fsck.fat -n` finds the volume clean.
#[track_caller]
pub fn fatfs_round_trip(img: &Path, cluster: u64, data: &[u8]) {
    let note = test_data(3 * usize::try_from(cluster).expect("fits") / 2 + 7, 7);
    fatfs_write(img, "FATFS.BIN", &note);
    assert!(
        fatfs_read(img, "FATFS.BIN") == note,
        "fatfs read back other bytes"
    );
    assert!(
        fatfs_read(img, "DATA.BIN") == data,
        "fatfs reads mcopy's file wrong"
    );
    let typed = mtools("mtype", img, &["::/FATFS.BIN"]);
    typed.assert_success();
    assert!(typed.stdout_bytes == note, "mtype reads fatfs's file wrong");
    fsck_fat_clean(img);
}
