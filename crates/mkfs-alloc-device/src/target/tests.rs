//! Hostile and ordinary paths given as targets: what each becomes, and the
//! refusal each meets, before anything is opened for writing.

use super::*;
use mkfs_alloc_blockio::BlockIo;
use mkfs_alloc_testsupport::TempDir;

fn inspect(path: &Path, size: Option<u64>) -> Result<Target, TargetError> {
    Target::inspect(path, size, None, false)
}

#[test]
fn a_missing_image_needs_a_size_and_a_directory() {
    let dir = TempDir::new("target-missing");
    let img = dir.join("new.img");
    assert!(matches!(
        inspect(&img, None),
        Err(TargetError::Missing { .. })
    ));
    let t = inspect(&img, Some(1 << 20)).expect("a new image");
    assert_eq!(t.action(), Action::Create(1 << 20));
    assert_eq!(
        (t.size_bytes(), t.block_size(), t.len_before()),
        (1 << 20, 512, None)
    );
    assert!(!img.exists(), "inspecting creates nothing");
    let deeper = dir.join("no-such-dir/new.img");
    assert!(matches!(
        inspect(&deeper, Some(1 << 20)),
        Err(TargetError::NoDirectory { dir: d, .. }) if d == dir.join("no-such-dir")
    ));
    assert!(matches!(
        inspect(&img, Some(1000)),
        Err(TargetError::SizeNotMultiple {
            size: 1000,
            sector_size: 512,
            ..
        })
    ));
}

#[test]
fn an_existing_image_is_kept_or_grown_never_shrunk() {
    let dir = TempDir::new("target-existing");
    let img = dir.join("old.img");
    std::fs::write(&img, vec![0u8; 8192]).expect("image");
    let t = inspect(&img, None).expect("kept");
    assert_eq!(
        (t.action(), t.len_before()),
        (Action::Keep(8192), Some(8192))
    );
    assert_eq!(
        inspect(&img, Some(8192)).expect("same").action(),
        Action::Keep(8192)
    );
    assert_eq!(
        inspect(&img, Some(16384)).expect("grown").action(),
        Action::Grow(16384)
    );
    assert!(matches!(
        inspect(&img, Some(4096)),
        Err(TargetError::Shrink {
            size: 4096,
            current: 8192
        })
    ));
    std::fs::write(&img, vec![0u8; 1000]).expect("odd image");
    assert!(matches!(
        inspect(&img, None),
        Err(TargetError::LengthNotMultiple {
            len: 1000,
            sector_size: 512,
            ..
        })
    ));
}

#[test]
fn a_grown_image_shrinks_back_to_its_old_length() {
    let dir = TempDir::new("target-shrink-back");
    let img = dir.join("old.img");
    std::fs::write(&img, vec![0u8; 8192]).expect("image");
    let len = || std::fs::metadata(&img).expect("meta").len();
    let grown = inspect(&img, Some(16384)).expect("grown");
    let opened = grown.open_with(false).expect("opened");
    assert_eq!(len(), 16384);
    grown.shrink_back().expect("shrunk back");
    assert_eq!(len(), 8192);
    grown.undo_open(opened);
    assert_eq!(len(), 8192, "undoing the open shrinks it back too");
    let kept = inspect(&img, None).expect("kept");
    kept.shrink_back().expect("nothing to do");
    assert_eq!(len(), 8192);
}

#[test]
fn directories_dangling_links_and_fifos_are_refused() {
    let dir = TempDir::new("target-hostile");
    assert!(matches!(
        inspect(dir.path(), None),
        Err(TargetError::Directory { .. })
    ));
    #[cfg(unix)]
    {
        let link = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &link).expect("symlink");
        assert!(matches!(
            inspect(&link, Some(1 << 20)),
            Err(TargetError::DanglingLink { link: l, .. }) if l == dir.join("nowhere")
        ));
        let fifo = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .expect("mkfifo");
        assert!(matches!(
            inspect(&fifo, None),
            Err(TargetError::NotAFile { .. })
        ));
        // A link to an image is the image.
        let img = dir.join("real.img");
        std::fs::write(&img, vec![0u8; 4096]).expect("image");
        let to_img = dir.join("link.img");
        std::os::unix::fs::symlink(&img, &to_img).expect("symlink");
        assert_eq!(
            inspect(&to_img, None).expect("followed").action(),
            Action::Keep(4096)
        );
    }
}

#[test]
fn a_created_image_is_opened_locked_and_written() {
    let dir = TempDir::new("target-open");
    let img = dir.join("new.img");
    let t = Target::inspect(&img, Some(64 << 10), Some(4096), false).expect("new");
    let mut opened = t.open_with(false).expect("created");
    assert!(opened.created());
    assert_eq!((opened.block_size(), opened.num_blocks()), (4096, 16));
    opened.write_blocks(1, &[0xA5; 4096]).expect("write");
    opened.flush().expect("flush");
    // Held by this process: a dry run's look lets it through (the caller's).
    let again = Target::inspect(&img, None, Some(4096), true).expect("inspected");
    assert!(again.would_refuse().is_none(), "{:?}", again.would_refuse());
    drop(opened);
    let bytes = std::fs::read(&img).expect("read back");
    assert_eq!((bytes.len(), bytes[4096], bytes[0]), (64 << 10, 0xA5, 0));
}

#[test]
fn messages_name_the_path_and_the_values() {
    let e = TargetError::Shrink {
        size: 4096,
        current: 8192,
    };
    assert_eq!(
        e.to_string(),
        "a size of 4096 bytes is smaller than the existing image (8192 bytes); images are grown, never shrunk"
    );
    let n = TargetNote::LoopAttached {
        path: "a.img".into(),
        loop_device: "/dev/loop7".into(),
    };
    assert_eq!(
        n.to_string(),
        "a.img is attached to /dev/loop7 (not mounted); what the kernel caches of it may be stale: losetup -d /dev/loop7"
    );
}

#[test]
fn one_image_under_two_names_is_one_medium() {
    let dir = TempDir::new("target-ids");
    let img = dir.join("a.img");
    std::fs::write(&img, vec![0u8; 4096]).expect("image");
    let other = dir.join("b.img");
    std::fs::write(&other, vec![0u8; 4096]).expect("image");
    let shares = |a: &Path, b: &Path| {
        let ids = medium_ids(b, None);
        medium_ids(a, None).iter().any(|x| ids.contains(x))
    };
    assert!(shares(&img, &dir.join("./a.img")));
    assert!(!shares(&img, &other));
    #[cfg(unix)]
    {
        let hard = dir.join("hard.img");
        std::fs::hard_link(&img, &hard).expect("hard link");
        assert!(shares(&img, &hard), "a hard link names the same file");
        let soft = dir.join("soft.img");
        std::os::unix::fs::symlink(&img, &soft).expect("symlink");
        assert!(shares(&img, &soft), "a symbolic link names the same file");
    }
    // A file still to be created: its canonical directory and name.
    let new = dir.join("new.img");
    assert_eq!(
        canonical(&new),
        Some(
            std::fs::canonicalize(dir.path())
                .expect("dir")
                .join("new.img")
        )
    );
}

#[test]
fn an_output_is_a_regular_file_or_a_new_one_in_a_directory() {
    let dir = TempDir::new("target-output");
    let file = dir.join("log.txt");
    assert_eq!(check_output(&file, OutputWrite::Append), Ok(()));
    std::fs::write(&file, b"x").expect("file");
    assert_eq!(check_output(&file, OutputWrite::Replace), Ok(()));
    assert_eq!(
        check_output(dir.path(), OutputWrite::Append),
        Err(OutputError::Directory)
    );
    assert_eq!(
        check_output(&dir.join("none/log.txt"), OutputWrite::Append),
        Err(OutputError::NoDirectory {
            dir: dir.join("none")
        })
    );
    #[cfg(unix)]
    {
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        assert_eq!(
            check_output(&link, OutputWrite::Append),
            Err(OutputError::Symlink { to: file.clone() })
        );
        assert_eq!(
            check_output(Path::new("/dev/null"), OutputWrite::Append),
            Err(OutputError::Special {
                kind: "a character device"
            })
        );
    }
}

#[test]
fn an_image_is_read_in_512_byte_blocks() {
    let dir = TempDir::new("target-read-block");
    let img = dir.join("a.img");
    std::fs::write(&img, vec![0u8; 4096]).expect("image");
    assert_eq!(crate::read_block_size(&img), 512);
    assert_eq!(crate::read_block_size(&dir.join("missing")), 512);
}
