//! The judgement: the findings about one case, and the host fsck.

use super::*;
use mkfs_alloc_testsupport::{fsck_judge, FsckKind};
use std::process::Output;

// --- the judgement ---------------------------------------------------------------

/// A boot-time line that every disk prints (its size, its queues, the
/// partitions found).
fn routine_boot_line(line: &str, disk: &str) -> bool {
    let text = line
        .split_once("] ")
        .filter(|(ts, _)| ts.starts_with('['))
        .map_or(line, |(_, t)| t);
    if text.starts_with("virtio_blk ")
        && (text.contains("logical blocks") || text.contains("default/read/poll queues"))
    {
        return true;
    }
    let mut words = text.split_whitespace();
    words.next() == Some(&format!("{disk}:")) && words.all(|w| w.starts_with(disk))
}

/// The findings about one case: an empty list is a pass.
pub(super) fn judge(image: &Image, result: &BatchResult) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(e) = &result.error {
        f.push(format!("batch: {e}"));
    }
    let get = |phase: &str| result.seen.get(&(phase.to_string(), image.tag.clone()));
    let (Some(w), Some(v)) = (get("write"), get("verify")) else {
        f.push("the guest did not report on this case in both boots".into());
        return f;
    };
    guest_failures(image, result, w, v, &mut f);
    if w.fails.is_empty() && v.fails.is_empty() {
        missing_reports(image, w, v, &mut f);
    }
    fresh_volume(image, w, &mut f);
    read_back(image, w, v, &mut f);
    f
}

fn statfs(seen: &Seen, step: &str) -> Option<(u64, u64, u64)> {
    seen.statfs.get(step).copied()
}

fn digest(seen: &Seen, step: &str) -> Option<(String, u64)> {
    seen.digest.get(step).cloned()
}

/// What the guest said went wrong: unfinished boots and cases, failed
/// steps, and kernel log lines about the volume.
fn guest_failures(image: &Image, result: &BatchResult, w: &Seen, v: &Seen, f: &mut Vec<String>) {
    for (phase, seen) in [("write", w), ("verify", v)] {
        if !result.ended.iter().any(|e| e == phase) {
            f.push(format!(
                "{phase}: the guest did not reach the end of the boot"
            ));
        }
        if seen.time.is_none() {
            f.push(format!("{phase}: the guest did not finish the case"));
        }
        for fail in &seen.fails {
            f.push(format!("{phase}: {fail}"));
        }
        for (step, line) in &seen.klog {
            if !UNRELATED_KERNEL_LINES.iter().any(|u| line.contains(u))
                && !exfat_end_of_heap_hint(image, line)
            {
                f.push(format!("{phase}: kernel during {step}: {line}"));
            }
        }
    }
    for (phase, line) in &result.boot_klog {
        let about_us = line.contains(&w.disk) && !w.disk.is_empty();
        let about_any = !line.contains("vd");
        if (about_us && !routine_boot_line(line, &w.disk)) || about_any {
            f.push(format!("{phase}: kernel at boot: {line}"));
        }
    }
}

/// Every report a clean run makes (a failed step has said why already).
fn missing_reports(image: &Image, w: &Seen, v: &Seen, f: &mut Vec<String>) {
    let fsinfo = image.case.driver == Driver::Vfat;
    let statfs_steps = [
        ("write", w, "fresh", true),
        ("write", w, "after-delete", true),
        ("write", w, "after-write", true),
        ("write", w, "remount", true),
        ("write", w, "fsinfo", fsinfo),
        ("verify", v, "cold", true),
        ("verify", v, "fsinfo", fsinfo),
    ];
    for (phase, seen, step, needed) in statfs_steps {
        if needed && statfs(seen, step).is_none() {
            f.push(format!("{phase}: no statfs at step {step}"));
        }
    }
    for (phase, seen, step) in [
        ("write", w, "fresh"),
        ("write", w, "written"),
        ("write", w, "remount"),
        ("verify", v, "cold"),
    ] {
        if digest(seen, step).is_none() {
            f.push(format!("{phase}: no tree listing at step {step}"));
        }
    }
}

/// The fresh volume: statfs equals what mkfs-alloc reported, deleting
/// gives the clusters back, FSInfo agrees, the tree is the source's, and a
/// fill takes every free cluster.
fn fresh_volume(image: &Image, w: &Seen, f: &mut Vec<String>) {
    if let Some((bsize, blocks, free)) = statfs(w, "fresh") {
        let mut expected = vec![(
            "info",
            image.cluster_size,
            image.cluster_count,
            image.free_bytes,
        )];
        if let Some((cs, count, usable)) = image.format {
            expected.push(("format", cs, count, usable));
        }
        for (src, cs, count, free_bytes) in expected {
            if (bsize, blocks, free * bsize) != (cs, count, free_bytes) {
                f.push(format!(
                    "statfs: cluster {bsize} B, {blocks} clusters, {free} free; mkfs-alloc {src}: cluster {cs} B, {count} clusters, {} free",
                    free_bytes / cs.max(1)
                ));
            }
        }
        if statfs(w, "after-delete").map(|s| s.2) != Some(free) {
            f.push(format!(
                "free clusters after writing and deleting 5 clusters: {:?}, fresh {free}",
                statfs(w, "after-delete")
            ));
        }
        if image.case.driver == Driver::Vfat {
            match statfs(w, "fsinfo") {
                Some((_, _, fsinfo)) if fsinfo == free => {}
                other => f.push(format!(
                    "FSInfo free count as the kernel reads it: {:?}, counted {free}",
                    other.map(|s| s.2)
                )),
            }
        }
    }
    match (digest(w, "fresh"), &image.tree) {
        (Some(got), Some(source)) if got != *source => f.push(format!(
            "the fresh volume lists {got:?}, the --rootdir source {source:?} (digest, lines)"
        )),
        (Some((_, lines)), None) if lines != 0 => {
            f.push(format!("the fresh root directory lists {lines} entries"));
        }
        _ => {}
    }
    // Fill: every cluster we reported free took data.
    if image.case.fill {
        match (w.fill, statfs(w, "fresh"), statfs(w, "after-write")) {
            (Some((bytes, _)), Some((bsize, _, free)), Some((_, _, left)))
                if bytes == free * bsize && left == 0 => {}
            (fill, fresh, full) => f.push(format!(
                "fill: file {:?} B, fresh free {:?} clusters of {:?} B, free when full {:?}",
                fill.map(|x| x.0),
                fresh.map(|x| x.2),
                fresh.map(|x| x.0),
                full.map(|x| x.2)
            )),
        }
    }
}

/// The tree and statfs read back after a remount and after a fresh boot;
/// the FSInfo free count the kernel wrote back.
fn read_back(image: &Image, w: &Seen, v: &Seen, f: &mut Vec<String>) {
    let written = statfs(w, "after-write");
    for (what, got) in [
        ("remount", statfs(w, "remount")),
        ("fresh boot", statfs(v, "cold")),
    ] {
        if written.is_some() && got != written {
            f.push(format!(
                "statfs after the {what} {got:?} != after writing {written:?}"
            ));
        }
    }
    let tree = digest(w, "written");
    for (what, got) in [
        ("remount", digest(w, "remount")),
        ("fresh boot", digest(v, "cold")),
    ] {
        if tree.is_some() && got != tree {
            f.push(format!(
                "tree after the {what} {got:?} != as written {tree:?}"
            ));
        }
    }
    if image.case.driver == Driver::Vfat {
        if let Some((_, _, cold)) = statfs(v, "cold") {
            if let Some((_, _, fsinfo)) = statfs(v, "fsinfo").filter(|s| s.2 != cold) {
                f.push(format!(
                    "FSInfo free count the kernel wrote back: {fsinfo}, counted {cold}"
                ));
            }
        }
    }
}

/// Linux 6.1's exFAT logs `hint_cluster is invalid (N)` when a file that
/// ends in the volume's last cluster grows: the next cluster, N = cluster
/// count + 2, is past the heap, and the allocator starts over at cluster 2.
/// That is the normal case (later kernels log only other values), met when
/// a volume is filled; any other N is a finding.
fn exfat_end_of_heap_hint(image: &Image, line: &str) -> bool {
    image.case.driver == Driver::Exfat
        && line.contains(&format!(
            "hint_cluster is invalid ({})",
            image.cluster_count + 2
        ))
}

/// `fsck -n` of the volume on a read-only loop device: findings.
pub(super) fn fsck(image: &Image) -> Vec<String> {
    let program = match image.case.driver {
        Driver::Exfat => "fsck.exfat",
        Driver::Vfat => "fsck.fat",
    };
    let kind = match image.case.driver {
        Driver::Exfat => FsckKind::Exfat,
        Driver::Vfat => FsckKind::Fat,
    };
    // The shared judge: the exit status and the text (fsck.exfat 1.2 exits
    // 0 after some errors).
    match fsck_volume_output(program, &image.path, image.start, image.size) {
        Err(e) => vec![e],
        Ok(out) => match fsck_judge(kind, &out) {
            Ok(_) => Vec::new(),
            Err(e) => vec![format!("host {}", e.trim().replace('\n', " | "))],
        },
    }
}

/// Runs `PROGRAM -n` on the volume at `start` (`size` bytes) of the image
/// `path`, through a read-only loop device. Returns whether it exited 0,
/// and its stdout and stderr (an exit status other than 0 is named in the
/// text). Shared with `test-uboot`, which judges the text its own way.
pub(crate) fn fsck_volume(
    program: &str,
    path: &Path,
    start: u64,
    size: u64,
) -> Result<(bool, String), String> {
    let o = fsck_volume_output(program, path, start, size)?;
    let mut text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if !o.status.success() {
        text = format!("({}) {text}", o.status);
    }
    Ok((o.status.success(), text))
}

/// Runs `PROGRAM -n` on the volume at `start` (`size` bytes) of the image
/// `path`, through a read-only loop device: its output.
fn fsck_volume_output(program: &str, path: &Path, start: u64, size: u64) -> Result<Output, String> {
    let out = Command::new("losetup")
        .args(["-r", "-f", "--show", "-o"])
        .arg(start.to_string())
        .arg("--sizelimit")
        .arg(size.to_string())
        .arg(path)
        .output();
    let loop_dev = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        Ok(o) => {
            return Err(format!(
                "losetup: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Err(e) => return Err(format!("cannot run losetup: {e}")),
    };
    let out = Command::new(program).args(["-n", &loop_dev]).output();
    let _ = Command::new("losetup").args(["-d", &loop_dev]).status();
    out.map_err(|e| format!("cannot run {program}: {e}"))
}
