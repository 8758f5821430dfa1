//! cloud-localds (cloud-image-utils) with `--filesystem=vfat`: `truncate -s
//! 128K IMG`, `mkfs.vfat -n cidata IMG` (a failure only reported), then
//! `mcopy -oi IMG user-data meta-data ::`, whose failure fails the caller.
//! cloud-init's NoCloud source finds the seed by its label `cidata`.

use super::*;

/// A NoCloud seed built by cloud-localds with `mkfs`, from a user-data of
/// `user_data_len` bytes.
struct Seed {
    run: CmdOutput,
    image: PathBuf,
    user_data: PathBuf,
    meta_data: PathBuf,
}

fn seed(links: &Links, tmp: &TempDir, mkfs: Mkfs, user_data_len: usize) -> Seed {
    let localds = require_tool("cloud-localds");
    require_tool("mcopy");
    let dir = tmp.subdir(&format!("{}-{user_data_len}", mkfs.tag()));
    let user_data = dir.join("user-data");
    let mut text = String::from("#cloud-config\nwrite_files:\n- path: /etc/x\n  content: |\n");
    let mut line = 0u64;
    while text.len() < user_data_len {
        text.push_str(&format!(
            "    line {line:08} of the test payload, padded out\n"
        ));
        line += 1;
    }
    text.truncate(user_data_len);
    std::fs::write(&user_data, &text).expect("write user-data");
    let meta_data = dir.join("meta-data");
    std::fs::write(
        &meta_data,
        "instance-id: iid-local01\nlocal-hostname: seed\n",
    )
    .expect("write meta-data");
    let image = dir.join("seed.img");
    let run = links.run(
        mkfs,
        &localds,
        &[
            "--filesystem=vfat",
            &s(&image),
            &s(&user_data),
            &s(&meta_data),
        ],
    );
    Seed {
        run,
        image,
        user_data,
        meta_data,
    }
}

/// The seed is a clean FAT12 volume of 128 KiB holding both files.
#[track_caller]
fn assert_seed(seed: &Seed, tmp: &TempDir, what: &str) {
    assert!(seed.run.success(), "cloud-localds ({what}):\n{}", seed.run);
    let len = std::fs::metadata(&seed.image).expect("stat the seed").len();
    assert_eq!(len, 128 << 10, "{what}: the seed's size");
    assert_fsck_clean(&seed.image, false);
    assert_file(&seed.image, "::/user-data", &seed.user_data, tmp);
    assert_file(&seed.image, "::/meta-data", &seed.meta_data, tmp);
}

/// A small user-data: both seeds hold it, and blkid sees the same file
/// system and label.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn cloud_localds_vfat_seed_with_our_mkfs_holds_the_files() {
    let links = Links::new();
    let tmp = TempDir::new("localds-small");
    let real = seed(&links, &tmp, Mkfs::Real, 4000);
    assert_seed(&real, &tmp, "real mkfs.vfat");
    let ours = seed(&links, &tmp, Mkfs::Ours, 4000);
    assert_seed(&ours, &tmp, "our mkfs.vfat");
    let (r, o) = (blkid(&real.image), blkid(&ours.image));
    assert_same_blkid(
        "cloud-localds seed",
        &r,
        &o,
        &["TYPE", "VERSION", "SEC_TYPE", "LABEL"],
    );
}

/// cloud-init matches the label `cidata` as mkfs.fat writes it (lower
/// case; FAT keeps the case it is given): ours must write the same.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn cloud_localds_seed_label_is_the_one_dosfstools_writes() {
    let links = Links::new();
    let tmp = TempDir::new("localds-label");
    let real = seed(&links, &tmp, Mkfs::Real, 1000);
    real.run.assert_success();
    let ours = seed(&links, &tmp, Mkfs::Ours, 1000);
    ours.run.assert_success();
    let (r, o) = (blkid(&real.image), blkid(&ours.image));
    assert_eq!(r.get("LABEL").map(String::as_str), Some("cidata"), "{r:?}");
    assert_same_blkid("cloud-localds label", &r, &o, &["LABEL", "LABEL_FATBOOT"]);
}

/// A 100,000-byte user-data fits the 128 KiB seed dosfstools makes
/// (106,496 bytes free); ours must leave as much room.
#[test]
#[ignore = "tool tier: cargo xtask test"]
fn cloud_localds_100000_byte_user_data_fits_as_with_dosfstools() {
    let links = Links::new();
    let tmp = TempDir::new("localds-big");
    let real = seed(&links, &tmp, Mkfs::Real, 100_000);
    assert_seed(&real, &tmp, "real mkfs.vfat");
    let ours = seed(&links, &tmp, Mkfs::Ours, 100_000);
    assert_seed(&ours, &tmp, "our mkfs.vfat");
}
