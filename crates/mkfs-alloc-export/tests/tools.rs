//! The block map and the sparse image against the real tools: bmaptool 3.6
//! copies an image by our map and verifies every checksum, `simg2img`
//! expands our sparse images to the image byte for byte, and libsparse
//! itself (`sparse_file_import` with its CRC check on, through Python's
//! ctypes: `simg2img` never checks a CRC32 chunk) accepts our CRC32 chunk
//! and refuses a wrong one. Tool tier.
#![allow(clippy::unwrap_used, clippy::single_range_in_vec_init)]

mod common;

use common::{image, Synthetic};
use mkfs_alloc_export::{
    sparse_block_size, write_bmap, write_sparse, write_sparse_seekable, SparseOptions,
};
use mkfs_alloc_testsupport::{require_tool, run, tool, CmdOutput, LoopDevice, TempDir};
use std::ffi::OsStr;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

const LIBSPARSE: &str = "/usr/lib/x86_64-linux-gnu/android/libsparse.so.0";

/// Image sizes and maps: the last block partial for bmap (1 MiB + 512),
/// everything mapped, nothing mapped, and scattered ranges.
fn cases() -> Vec<(usize, Vec<Range<u64>>)> {
    vec![
        (1 << 20, vec![0..512, 4096..70_000, 500_000..600_000]),
        ((1 << 20) + 512, vec![0..1, 1_048_000..1_049_088]),
        (2 << 20, vec![0..(2 << 20)]),
        (3 << 20, vec![]),
        (
            4 << 20,
            vec![(1 << 20)..(3 << 20) + 100, (4 << 20) - 1..(4 << 20)],
        ),
    ]
}

fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

/// `bmaptool copy --bmap MAP IMAGE DEST`.
fn bmaptool_copy(map: &Path, image: &Path, dest: &Path) -> CmdOutput {
    let args = [
        OsStr::new("copy"),
        OsStr::new("--bmap"),
        map.as_os_str(),
        image.as_os_str(),
        dest.as_os_str(),
    ];
    tool("bmaptool", &args)
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn bmaptool_copies_exactly_the_mapped_blocks() {
    let dir = TempDir::new("bmap");
    for (i, (size, mapped)) in cases().into_iter().enumerate() {
        let img = image(size, &mapped, i as u64 + 3);
        let (raw, map) = (dir.join("image.raw"), dir.join("image.bmap"));
        write_file(&raw, &img);
        let mut out = Vec::new();
        let s = write_bmap(size as u64, 4096, &mapped, &mut img.as_slice(), &mut out).unwrap();
        write_file(&map, &out);
        // A new file: identical to the image.
        let dest = dir.join("new.raw");
        let _ = std::fs::remove_file(&dest);
        bmaptool_copy(&map, &raw, &dest).assert_success();
        assert_eq!(std::fs::read(&dest).unwrap(), img, "case {i}: {s:?}");
        // A device of old bytes (bmaptool truncates a regular file, so a
        // loop device): the mapped blocks written, the others left alone.
        let old = dir.join("old.raw");
        write_file(&old, &vec![0xEE; size]);
        let dev = LoopDevice::attach(&old);
        bmaptool_copy(&map, &raw, dev.path()).assert_success();
        dev.flush();
        drop(dev);
        let got = std::fs::read(&old).unwrap();
        let runs: Vec<_> = mkfs_alloc_export::block_runs(&mapped, 4096).collect();
        for b in 0..size.div_ceil(4096) {
            let at = b * 4096..((b + 1) * 4096).min(size);
            if runs.iter().any(|r| r.contains(&(b as u64))) {
                assert_eq!(got[at.clone()], img[at], "case {i}: mapped block {b}");
            } else {
                assert!(
                    got[at].iter().all(|&x| x == 0xEE),
                    "case {i}: block {b} was written"
                );
            }
        }
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn bmaptool_refuses_a_wrong_image_or_a_damaged_map() {
    let dir = TempDir::new("bmap-bad");
    let mapped = vec![0..8192, 100_000..300_000];
    let img = image(1 << 20, &mapped, 11);
    let (raw, map, dest) = (
        dir.join("image.raw"),
        dir.join("image.bmap"),
        dir.join("dest"),
    );
    let mut out = Vec::new();
    write_bmap(1 << 20, 4096, &mapped, &mut img.as_slice(), &mut out).unwrap();
    write_file(&map, &out);
    let copy = || {
        let _ = std::fs::remove_file(&dest);
        bmaptool_copy(&map, &raw, &dest)
    };
    // One byte of mapped data differs from what the map was made of.
    let mut other = img.clone();
    other[150_000] ^= 1;
    write_file(&raw, &other);
    let r = copy();
    assert!(
        !r.success() && r.stderr.contains("checksum mismatch"),
        "{r}"
    );
    // The map's own checksum: one digit of a block number changed.
    write_file(&raw, &img);
    assert!(copy().success());
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("> 24-73 <"), "{text}");
    let text = text.replace("> 24-73 <", "> 24-72 <");
    write_file(&map, text.as_bytes());
    let r = copy();
    assert!(
        !r.success() && r.stderr.contains("checksum mismatch"),
        "{r}"
    );
}

/// `simg2img SIMG RAW` and the bytes it wrote.
fn simg2img(dir: &TempDir, simg: &[u8]) -> Vec<u8> {
    let (s, r) = (dir.join("x.simg"), dir.join("x.raw"));
    let _ = std::fs::remove_file(&r);
    write_file(&s, simg);
    tool("simg2img", &[s.as_os_str(), r.as_os_str()]).assert_success();
    std::fs::read(&r).unwrap()
}

/// libsparse's own import with CRC checking on: does it accept `simg`?
fn libsparse_accepts(dir: &TempDir, simg: &[u8]) -> bool {
    require_tool(LIBSPARSE);
    let path = dir.join("crc.simg");
    write_file(&path, simg);
    let script = format!(
        "import ctypes, os, sys\n\
         lib = ctypes.CDLL({LIBSPARSE:?})\n\
         lib.sparse_file_import.restype = ctypes.c_void_p\n\
         lib.sparse_file_import.argtypes = [ctypes.c_int, ctypes.c_bool, ctypes.c_bool]\n\
         fd = os.open(sys.argv[1], os.O_RDONLY)\n\
         sys.exit(0 if lib.sparse_file_import(fd, True, True) else 3)\n"
    );
    let out = run(
        require_tool("python3"),
        &["-c".as_ref(), script.as_ref(), path.as_os_str()],
    );
    match out.code {
        Some(0) => true,
        Some(3) => false,
        _ => panic!("the libsparse check did not run:\n{out}"),
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn simg2img_expands_to_the_image_and_libsparse_checks_the_crc() {
    let dir = TempDir::new("simg");
    for (i, (size, mapped)) in cases().into_iter().enumerate() {
        let img = image(size, &mapped, i as u64 + 5);
        let bs = sparse_block_size(size as u64).unwrap();
        for crc in [false, true] {
            let opts = SparseOptions::new(bs).with_crc(crc);
            let mut simg = Vec::new();
            write_sparse(size as u64, opts, &mapped, &mut img.as_slice(), &mut simg).unwrap();
            assert_eq!(
                simg2img(&dir, &simg),
                img,
                "case {i}, block {bs}, crc {crc}"
            );
            assert!(libsparse_accepts(&dir, &simg), "case {i}, crc {crc}");
            if crc {
                // The last four bytes are the CRC32 chunk's value.
                let n = simg.len();
                simg[n - 1] ^= 0x80;
                assert!(
                    !libsparse_accepts(&dir, &simg),
                    "case {i}: a wrong CRC was accepted"
                );
            }
        }
    }
}

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn a_sparse_image_through_a_pipe_and_into_a_file() {
    let dir = TempDir::new("simg-pipe");
    let mapped = vec![0..65_536, (1 << 20)..(5 << 20), (7 << 20) + 4096..(8 << 20)];
    let img = image(8 << 20, &mapped, 21);
    let opts = SparseOptions::new(4096).with_crc(true);
    // Into a pipe (not seekable): `cat` on the other end stores it.
    let piped = dir.join("piped.simg");
    let sh = require_tool("sh");
    let mut child = std::process::Command::new(sh)
        .args(["-c", "cat > \"$1\"", "sh"])
        .arg(&piped)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    write_sparse(8 << 20, opts, &mapped, &mut img.as_slice(), &mut stdin).unwrap();
    stdin.flush().unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Into a file, written once and its header patched.
    let seek = dir.join("seek.simg");
    let f = std::fs::File::create(&seek).unwrap();
    write_sparse_seekable(8 << 20, opts, &mapped, &mut img.as_slice(), f).unwrap();
    let (a, b) = (
        std::fs::read(&piped).unwrap(),
        std::fs::read(&seek).unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(simg2img(&dir, &a), img);
    assert!(libsparse_accepts(&dir, &a));
}

/// An image of 2,197,265,625 blocks of 4 KiB (9 TB, more than 2^31
/// blocks) mapped only at its two ends: `simg2img` expands it (it refused
/// the one DONT_CARE chunk of more than 2^31 blocks such an image once
/// had) to the image's size, both ends in place.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn simg2img_expands_an_image_of_more_than_2_31_blocks() {
    use mkfs_alloc_export::ReadAt;
    use std::os::unix::fs::FileExt;
    let dir = TempDir::new("sparse-huge");
    let (bs, blocks) = (4096u32, 2_197_265_625u64);
    let size = blocks * u64::from(bs);
    let mapped = [0..8192, size - 4096..size];
    let mut simg = Vec::new();
    write_sparse(
        size,
        SparseOptions::new(bs),
        &mapped,
        &mut Synthetic,
        &mut simg,
    )
    .unwrap();
    let (s, r) = (dir.join("huge.simg"), dir.join("huge.raw"));
    write_file(&s, &simg);
    tool("simg2img", &[s.as_os_str(), r.as_os_str()]).assert_success();
    let raw = std::fs::File::open(&r).unwrap();
    assert_eq!(raw.metadata().unwrap().len(), size);
    for range in mapped {
        let mut got = vec![0u8; (range.end - range.start) as usize];
        raw.read_exact_at(&mut got, range.start).unwrap();
        let mut want = vec![0u8; got.len()];
        Synthetic.read_exact_at(range.start, &mut want).unwrap();
        assert!(got == want, "bytes {range:?} differ");
    }
    drop(raw);
    std::fs::remove_file(&r).unwrap();
}
