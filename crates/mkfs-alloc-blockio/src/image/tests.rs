//! Unit tests of [`ImageFile`](super::ImageFile).

use super::*;
use mkfs_alloc_testsupport::TempDir;

/// `image.img` in a fresh temporary directory (kept, and removed on drop, by
/// the second field).
struct TempPath(PathBuf, #[allow(dead_code)] TempDir);

impl TempPath {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(&format!("blockio-{tag}"));
        TempPath(dir.join("image.img"), dir)
    }
}

#[cfg(unix)]
#[test]
fn an_exclusive_lock_keeps_a_second_opener_out() {
    let p = TempPath::new("lock");
    let a = ImageFile::create(&p.0, 1 << 20, 512).unwrap();
    a.try_lock_exclusive().unwrap();
    let b = ImageFile::open(&p.0, 512).unwrap();
    let e = b.try_lock_exclusive().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    let r = ImageFile::open_read_only(&p.0, 512).unwrap();
    assert_eq!(
        r.try_lock_shared().unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    drop(a);
    b.try_lock_exclusive().unwrap();
}

#[test]
fn create_round_trip_and_counters() {
    let t = TempPath::new("rt");
    let mut img = ImageFile::create(&t.0, 1 << 20, 4096).unwrap();
    assert_eq!(img.size_bytes(), 1 << 20);
    assert_eq!(img.num_blocks(), 256);
    assert_eq!(img.path(), t.0.as_path());
    assert!(img.reads_as_zero());
    assert_eq!(std::fs::metadata(&t.0).unwrap().len(), 1 << 20);

    let src: Vec<u8> = (0..8192u32).map(|i| (i % 253) as u8).collect();
    img.write_blocks(10, &src).unwrap();
    assert!(!img.reads_as_zero());
    img.flush().unwrap();
    let mut dst = vec![0; 8192];
    img.read_blocks(10, &mut dst).unwrap();
    assert_eq!(dst, src);
    img.write_zeroes(11, 1).unwrap();
    img.read_blocks(10, &mut dst).unwrap();
    assert_eq!(dst[..4096], src[..4096]);
    assert!(dst[4096..].iter().all(|&b| b == 0));

    let s = img.stats();
    assert_eq!((s.writes, s.bytes_written), (1, 8192));
    assert_eq!((s.zeroes, s.bytes_zeroed), (1, 4096));
    assert_eq!(s.flushes, 1);
    assert_eq!((s.reads, s.bytes_read), (2, 16384));
}

#[test]
fn bounds_errors() {
    let t = TempPath::new("bounds");
    let mut img = ImageFile::create(&t.0, 8 * 512, 512).unwrap();
    let err = img.write_blocks(7, &[0; 1024]).unwrap_err();
    assert_eq!((err.op, err.offset), (IoOp::Write, 3584));
    assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);
    assert!(img.read_blocks(0, &mut [0; 100]).is_err());
    assert!(img.write_zeroes(8, 1).is_err());
    assert!(img.reads_as_zero(), "failed requests change nothing");
    assert_eq!(std::fs::metadata(&t.0).unwrap().len(), 8 * 512);
}

#[test]
fn create_refuses_an_existing_file() {
    let t = TempPath::new("exists");
    std::fs::write(&t.0, [1u8; 512]).unwrap();
    let err = ImageFile::create(&t.0, 4096, 512).unwrap_err();
    assert_eq!((err.op, err.offset), (IoOp::Open, 0));
    assert_eq!(err.source.kind(), io::ErrorKind::AlreadyExists);
    assert!(
        err.source.to_string().contains(&*t.0.to_string_lossy()),
        "{err}"
    );
    assert_eq!(std::fs::read(&t.0).unwrap(), [1u8; 512], "left alone");
}

#[test]
fn create_validates_sizes() {
    let t = TempPath::new("badsize");
    assert!(ImageFile::create(&t.0, 1000, 512).is_err());
    assert!(ImageFile::create(&t.0, 1024, 0).is_err());
    assert!(ImageFile::create(&t.0, 1024, 384).is_err());
    assert!(!t.0.exists(), "nothing created");
}

#[test]
fn open_keeps_size_and_refuses_misaligned() {
    let t = TempPath::new("open");
    std::fs::write(&t.0, vec![0x5A; 3 * 512]).unwrap();
    let mut img = ImageFile::open(&t.0, 512).unwrap();
    assert_eq!(img.num_blocks(), 3);
    assert!(!img.reads_as_zero());
    let mut b = [0; 512];
    img.read_blocks(2, &mut b).unwrap();
    assert_eq!(b, [0x5A; 512]);
    drop(img);

    let err = ImageFile::open(&t.0, 4096).unwrap_err();
    assert_eq!((err.op, err.offset), (IoOp::Open, 0));
    assert_eq!(err.source.kind(), io::ErrorKind::InvalidInput);
    let msg = err.source.to_string();
    assert!(msg.contains("1536") && msg.contains("4096"), "{msg}");

    let missing = TempPath::new("missing");
    let err = ImageFile::open(&missing.0, 512).unwrap_err();
    assert_eq!(err.source.kind(), io::ErrorKind::NotFound);
}

#[test]
fn open_resize_grows_sparsely_and_never_shrinks() {
    let t = TempPath::new("resize");
    std::fs::write(&t.0, vec![0x5A; 1024]).unwrap();
    let mut img = ImageFile::open_resize(&t.0, 1 << 20, 512).unwrap();
    assert_eq!(img.size_bytes(), 1 << 20);
    assert_eq!(std::fs::metadata(&t.0).unwrap().len(), 1 << 20);
    let mut b = [0; 1024];
    img.read_blocks(0, &mut b).unwrap();
    assert_eq!(b, [0x5A; 1024]);
    img.read_blocks(2046, &mut b).unwrap();
    assert_eq!(b, [0; 1024]);
    drop(img);

    let err = ImageFile::open_resize(&t.0, 4096, 512).unwrap_err();
    assert_eq!((err.op, err.offset), (IoOp::Open, 0));
    assert!(err.source.to_string().contains("shrink"), "{err}");
    assert_eq!(std::fs::metadata(&t.0).unwrap().len(), 1 << 20);

    assert!(ImageFile::open_resize(&t.0, (1 << 20) + 100, 512).is_err());
    assert!(ImageFile::open_resize(&t.0, 1 << 20, 512).is_ok());
}

#[cfg(unix)]
#[test]
fn write_zeroes_deallocates_written_blocks() {
    use std::os::unix::fs::MetadataExt;

    let t = TempPath::new("punch");
    let mut img = ImageFile::create(&t.0, 8 << 20, 4096).unwrap();
    let blocks_of = |p: &Path| std::fs::metadata(p).unwrap().blocks();
    let empty = blocks_of(&t.0);
    img.write_blocks(0, &vec![0xAB; 4 << 20]).unwrap();
    img.flush().unwrap();
    let written = blocks_of(&t.0);
    // `blocks()` counts 512-byte units: 4 MiB is 8192 of them.
    assert!(written >= empty + 8192, "{empty} -> {written}");

    img.write_zeroes(256, 512).unwrap(); // bytes 1 MiB..3 MiB
    let method = img.last_zero_method();
    let mut buf = vec![0xFF; 4 << 20];
    img.read_blocks(0, &mut buf).unwrap();
    assert!(buf[..1 << 20].iter().all(|&b| b == 0xAB));
    assert!(buf[1 << 20..3 << 20].iter().all(|&b| b == 0));
    assert!(buf[3 << 20..].iter().all(|&b| b == 0xAB));
    let punched = blocks_of(&t.0);
    if cfg!(target_os = "linux") && method == Some(ZeroMethod::PunchHole) {
        // 2 MiB is 4096 units of 512 bytes.
        assert!(punched + 4096 <= written, "{written} -> {punched}");
    } else {
        eprintln!("no hole punching here ({method:?}); blocks {written} -> {punched}");
    }
    assert_eq!(img.stats().bytes_zeroed, 2 << 20);
    assert_eq!(img.stats().bytes_written, 4 << 20);
    assert_eq!(std::fs::metadata(&t.0).unwrap().len(), 8 << 20, "size kept");
}

#[cfg(target_os = "linux")]
#[test]
fn punch_hole_is_used_on_this_machine() {
    let t = TempPath::new("method");
    let mut img = ImageFile::create(&t.0, 4 << 20, 512).unwrap();
    img.write_blocks(0, &vec![0x5A; 4 << 20]).unwrap();
    // Over SMALL_ZERO_RANGE and holding data: punched. tmpfs, ext4, xfs and
    // btrfs all punch holes; report loudly otherwise.
    img.write_zeroes(0, 4096).unwrap();
    assert_eq!(
        img.last_zero_method(),
        Some(ZeroMethod::PunchHole),
        "temp dir {:?} does not support hole punching",
        std::env::temp_dir()
    );
}

/// Allocated 512-byte units of the file.
#[cfg(unix)]
fn units(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().blocks()
}

#[cfg(target_os = "linux")]
#[test]
fn zeroing_a_hole_does_nothing() {
    let t = TempPath::new("hole");
    let mut img = ImageFile::create(&t.0, 8 << 20, 512).unwrap();
    img.write_zeroes(0, 4096).unwrap(); // 2 MiB of a fresh sparse image
    assert_eq!(img.last_zero_method(), Some(ZeroMethod::AlreadyZero));
    assert!(
        img.reads_as_zero(),
        "zeroing keeps a fresh image's reads_as_zero"
    );
    assert_eq!(units(&t.0), 0, "nothing allocated");
    assert_eq!(img.stats().bytes_zeroed, 2 << 20);
    assert_eq!(img.stats().bytes_written, 0);
}

#[cfg(target_os = "linux")]
#[test]
fn a_small_range_holding_data_is_overwritten_and_its_holes_left_alone() {
    let t = TempPath::new("small");
    let mut img = ImageFile::create(&t.0, 8 << 20, 512).unwrap();
    // 64 KiB of data at 4 MiB inside a sparse file.
    img.write_blocks(8192, &vec![0xC3; 64 << 10]).unwrap();
    img.flush().unwrap();
    let before = units(&t.0);
    assert!(before >= 128, "64 KiB allocated: {before}");
    // 512 KiB around it (under SMALL_ZERO_RANGE): hole, data, hole.
    img.write_zeroes(8192 - 256, 1024).unwrap();
    assert_eq!(img.last_zero_method(), Some(ZeroMethod::Writing));
    let mut buf = vec![0xFF; 512 << 10];
    img.read_blocks(8192 - 256, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    img.flush().unwrap();
    // Overwritten in place: the data blocks stay, the holes stay holes.
    assert_eq!(units(&t.0), before, "only the data part was written");
    assert_eq!(img.stats().bytes_written, 64 << 10, "zeros counted apart");
    assert_eq!(img.stats().bytes_zeroed, 512 << 10);
    // Again: the data part now reads as zero, so nothing is written.
    img.write_zeroes(8192 - 256, 1024).unwrap();
    assert_eq!(img.last_zero_method(), Some(ZeroMethod::AlreadyZero));
    assert_eq!(units(&t.0), before);
}

#[test]
fn zero_fallback_by_writing_is_counted_as_zeroing() {
    let t = TempPath::new("fallback");
    let mut img = ImageFile::create(&t.0, 3 << 20, 512).unwrap();
    img.write_blocks(0, &vec![0xCD; 3 << 20]).unwrap();
    #[cfg(target_os = "linux")]
    {
        img.punch_ok = false;
        img.zero_range_ok = false;
    }
    // Over SMALL_ZERO_RANGE (so not by writing over data only), many 64 KiB
    // zero buffers, not a multiple of one.
    img.write_zeroes(1, 2048 + 100).unwrap();
    assert_eq!(img.last_zero_method(), Some(ZeroMethod::Writing));
    let mut buf = vec![0xFF; 3 << 20];
    img.read_blocks(0, &mut buf).unwrap();
    let end = 512 * (1 + 2048 + 100);
    assert!(buf[..512].iter().all(|&b| b == 0xCD));
    assert!(buf[512..end].iter().all(|&b| b == 0));
    assert!(buf[end..].iter().all(|&b| b == 0xCD));
    let s = img.stats();
    assert_eq!((s.writes, s.bytes_written), (1, 3 << 20));
    assert_eq!((s.zeroes, s.bytes_zeroed), (1, 512 * 2148));
}
