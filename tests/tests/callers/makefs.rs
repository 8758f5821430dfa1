//! systemd-makefs (the helper of `systemd-makefs@.service` and of
//! `x-systemd.makefs` in fstab): it opens the device, takes
//! `flock(LOCK_EX)` on it and runs `mkfs.vfat -i SERIAL -n LABEL -F 32 DEV`
//! (the label from the device's name) or `mkfs.exfat DEV` under that lock.

use super::*;
use mkfs_alloc_tests::{fill_file, test_data, LoopDevice, MIB};

/// Where Debian installs it (merged `/usr`: `/lib` is `/usr/lib`).
const MAKEFS: &str = "/lib/systemd/systemd-makefs";

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn systemd_makefs_runs_our_mkfs_under_its_lock() {
    mkfs_alloc_tests::require_root();
    let makefs = require_tool(MAKEFS);
    let links = Links::new();
    let tmp = TempDir::new("makefs");
    for fs in ["vfat", "exfat"] {
        let mut reports = Vec::new();
        for mkfs in Mkfs::BOTH {
            let img = tmp.join(&format!("{fs}-{}.img", mkfs.tag()));
            fill_file(&img, 64 * MIB, 0);
            let lo = LoopDevice::attach(&img);
            let run = links.run(mkfs, &makefs, &[fs, lo.path_str()]);
            assert!(
                run.success(),
                "systemd-makefs {fs} with the {} mkfs:\n{run}",
                mkfs.tag()
            );
            lo.flush();
            assert_fsck_clean(lo.path(), fs == "exfat");
            let report = blkid(lo.path());
            if fs == "vfat" {
                // The label systemd-makefs derives from the device's name.
                let name = lo
                    .path()
                    .file_name()
                    .map(|n| n.to_string_lossy().to_uppercase());
                assert_eq!(report.get("LABEL"), name.as_ref(), "{report:?}");
                let file = tmp.join("payload");
                std::fs::write(&file, test_data(123_457, 9)).expect("write");
                tool("mcopy", &["-i", lo.path_str(), &s(&file), "::/payload"]).assert_success();
                assert_file(lo.path(), "::/payload", &file, &tmp);
            }
            reports.push(report);
        }
        assert_same_blkid(
            &format!("systemd-makefs {fs}"),
            &reports[0],
            &reports[1],
            &["TYPE", "VERSION", "USAGE"],
        );
    }
}
