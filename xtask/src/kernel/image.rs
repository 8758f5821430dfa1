//! The images: formatted, read back with `info --json`, damaged on purpose.

use super::*;

// --- the images ----------------------------------------------------------------

/// What mkfs-alloc says about a volume (`info --json`, and the format's
/// `--json` where we made the image).
pub(super) struct Image<'a> {
    pub(super) case: &'a Case,
    /// Short tag for the disk serial (`k03`).
    pub(super) tag: String,
    pub(super) path: PathBuf,
    /// From `info --json`: the volume.
    pub(super) partition: u64,
    pub(super) start: u64,
    pub(super) size: u64,
    pub(super) cluster_size: u64,
    pub(super) cluster_count: u64,
    pub(super) free_bytes: u64,
    /// From the format's `--json`: (cluster size, clusters, free bytes).
    pub(super) format: Option<(u64, u64, u64)>,
    /// Populated: the listing digest and line count of the source tree.
    pub(super) tree: Option<(String, u64)>,
}

/// The source tree of populated cases: 8.3 names in upper and lower case,
/// long, non-ASCII and 255-character names, a 300-entry directory, deep
/// nesting, an empty directory, sizes around cluster boundaries, 5 MiB.
pub(crate) fn write_source_tree(dir: &Path) -> Result<(), String> {
    let long = format!("{}.txt", "L".repeat(251));
    let mut files: Vec<(String, usize)> = [
        ("README", 100),
        ("readme.txt", 101),
        (".hidden", 3),
        ("Fotos/2024/IMG_0001.JPG", 70_000),
        ("Fotos/2024/img_0002.jpg", 4097),
        ("Fotos/2024/Urlaub am Meer.jpeg", 65_537),
        ("Dokumente/Größe-Übersicht.txt", 511),
        ("日本語/ファイル名.txt", 512),
        ("emoji-😀.txt", 513),
        ("a/b/c/d/e/f/g/h/deep.txt", 10),
        ("big.bin", 5 << 20),
    ]
    .iter()
    .map(|&(p, n)| (p.to_string(), n))
    .collect();
    for n in [0, 1, 4095, 4096, 4097, 32_769, (1 << 20) + 3] {
        files.push((format!("sizes/{n}"), n));
    }
    for i in 1..=300 {
        files.push((format!("many/entry {i:03} of the directory.txt"), 20));
    }
    files.push((long, 7));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("leer")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for (path, size) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let data = xorshift_bytes(&mut state, size);
        std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The digest and line count of [`LISTING`] run in `dir` by busybox.
fn listing_digest(dir: &Path) -> Result<(String, u64), String> {
    let busybox = find_tool("busybox").ok_or("busybox is missing")?;
    let out = Command::new(&busybox)
        .args(["sh", "-c", LISTING])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run busybox sh: {e}"))?;
    if !out.status.success() {
        return Err(format!("listing {}: {}", dir.display(), out.status));
    }
    let list = dir.with_extension("list");
    std::fs::write(&list, &out.stdout).map_err(|e| format!("{}: {e}", list.display()))?;
    let sum = Command::new(&busybox)
        .args(["sha256sum"])
        .arg(&list)
        .output()
        .map_err(|e| format!("cannot run busybox sha256sum: {e}"))?;
    let digest = String::from_utf8_lossy(&sum.stdout)
        .split_whitespace()
        .next()
        .ok_or("busybox sha256sum printed nothing")?
        .to_string();
    let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
    Ok((digest, lines as u64))
}

pub(crate) fn json_u64(v: &Value, key: &str) -> Result<u64, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("no number {key:?} in {v}"))
}

/// Makes the image of `case`, reads it back with `info --json`, injects the
/// fault of a negative control.
pub(super) fn prepare<'a>(
    case: &'a Case,
    index: usize,
    bin: &Path,
    work: &Path,
) -> Result<Image<'a>, String> {
    let path = work.join(format!("{}.img", case.name));
    let src = work.join(format!("{}.src", case.name));
    let mut rootdir = Vec::new();
    if case.populated {
        write_source_tree(&src)?;
        rootdir = vec!["--rootdir".into(), src.clone().into_os_string()];
    }
    let mut format = format_image(case.name, case.make, bin, &path, &rootdir)?;
    if case.populated && matches!(case.make, Make::Peer { .. }) {
        match case.made_as() {
            Driver::Exfat => {
                super::fill::fill_through_fuse(case.name, bin, &path, &src, work, case.past)?
            }
            Driver::Vfat => super::fill::fill_mtools(case.name, bin, &path, &src, work, case.past)?,
        }
    }
    if let Some(change) = case.change {
        super::change::apply(case.name, change, bin, &path)?;
        // The format's figures are the old volume's: info's are judged.
        format = None;
    }
    let vol = read_info(case, bin, &path)?;
    if let Some((Fault::SourceChanged, _)) = case.fault {
        let readme = src.join("README");
        File::options()
            .append(true)
            .open(&readme)
            .and_then(|mut f| f.write_all(b"!"))
            .map_err(|e| format!("{}: {e}", readme.display()))?;
    }
    let tree = if case.populated {
        Some(listing_digest(&src)?)
    } else {
        None
    };
    let image = Image {
        case,
        tag: format!("k{index:02}"),
        partition: vol.get("partition").and_then(Value::as_u64).unwrap_or(0),
        start: json_u64(&vol, "start")?,
        size: json_u64(&vol, "size")?,
        cluster_size: json_u64(&vol, "cluster_size")?,
        cluster_count: json_u64(&vol, "cluster_count")?,
        free_bytes: json_u64(&vol, "free_bytes")?,
        format,
        tree,
        path,
    };
    if let Some((fault, _)) = case.fault {
        inject(&image, fault).map_err(|e| format!("{}: {e}", image.path.display()))?;
    }
    Ok(image)
}

/// Formats the image of case `name` at `path` as `make` says: with
/// mkfs-alloc (returning its `--json` cluster size, cluster count and free
/// bytes) or a peer's tool. Shared with `test-uboot`.
pub(crate) fn format_image(
    name: &str,
    make: Make,
    bin: &Path,
    path: &Path,
    rootdir: &[std::ffi::OsString],
) -> Result<Option<(u64, u64, u64)>, String> {
    match make {
        Make::Ours(args) => {
            let out = Command::new(bin)
                .args(args.split_whitespace())
                .args(["--serial", "1234ABCD", "--json"])
                .args(rootdir)
                .arg(path)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{}: mkfs-alloc {args} failed ({}): {}",
                    name,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let v: Value = serde_json::from_slice(&out.stdout)
                .map_err(|e| format!("{}: format --json: {e}", name))?;
            let cluster = json_u64(&v, "cluster_size")?;
            // usable_bytes is the free space before the --rootdir copy.
            let copied = v
                .get("rootdir")
                .map_or(Ok(0), |r| json_u64(r, "clusters"))?;
            Ok(Some((
                cluster,
                json_u64(&v, "cluster_count")?,
                json_u64(&v, "usable_bytes")? - copied * cluster,
            )))
        }
        Make::Firmware(job) => {
            crate::embedded::firmware_image(job, path)?;
            Ok(None)
        }
        Make::Peer {
            size,
            program,
            args,
        } => {
            File::create(path)
                .and_then(|f| f.set_len(size))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // Its chatter to stderr: stdout may carry a JSON report.
            run(Command::new(program)
                .args(args.split_whitespace())
                .arg(path)
                .stdout(std::io::stderr()))?;
            Ok(None)
        }
    }
}

/// `mkfs-alloc recluster --cluster TO --yes -q IMAGE` on the image of case
/// `name`. Shared with `test-uboot`.
pub(crate) fn recluster(name: &str, bin: &Path, path: &Path, to: u64) -> Result<(), String> {
    let out = Command::new(bin)
        .args(["recluster", "--cluster", &to.to_string(), "--yes", "-q"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{name}: mkfs-alloc recluster --cluster {to} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// The one volume `info --json` finds on the image of case `name`.
/// Shared with `test-uboot`.
pub(crate) fn read_volume(name: &str, bin: &Path, path: &Path) -> Result<Value, String> {
    let out = Command::new(bin)
        .args(["info", "--json"])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let info: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{name}: info --json: {e}"))?;
    let volumes = info
        .get("volumes")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{name}: info --json has no volumes"))?;
    let [vol] = volumes.as_slice() else {
        return Err(format!(
            "{name}: info found {} volumes, not 1",
            volumes.len()
        ));
    };
    Ok(vol.clone())
}

/// The one volume `info --json` finds on the image, checked against the
/// case's driver and sector size.
fn read_info(case: &Case, bin: &Path, path: &Path) -> Result<Value, String> {
    let vol = read_volume(case.name, bin, path)?;
    let fs = vol.get("fs").and_then(Value::as_str).unwrap_or("");
    let fs_ok = match case.driver {
        Driver::Exfat => fs == "exfat",
        Driver::Vfat => fs.starts_with("fat"),
    };
    let sector = json_u64(&vol, "sector_size")?;
    if !fs_ok || sector != u64::from(case.sector) {
        return Err(format!(
            "{}: info says {fs} with {sector}-byte sectors; the case says {} with {}",
            case.name,
            case.driver.name(),
            case.sector
        ));
    }
    Ok(vol)
}

/// Damages a negative control's volume.
fn inject(image: &Image, fault: Fault) -> std::io::Result<()> {
    let mut f = File::options().read(true).write(true).open(&image.path)?;
    let mut patch = |offset: u64, change: &dyn Fn(&mut [u8])| -> std::io::Result<()> {
        let mut buf = [0u8; 4];
        f.seek(SeekFrom::Start(image.start + offset))?;
        f.read_exact(&mut buf)?;
        change(&mut buf);
        f.seek(SeekFrom::Start(image.start + offset))?;
        f.write_all(&buf)
    };
    match fault {
        Fault::ExfatDirty => patch(106, &|b| b[0] |= 0x02),
        Fault::ExfatBootChecksum => patch(200, &|b| b[0] ^= 0x55),
        Fault::SourceChanged => Ok(()), // the source, not the image: see prepare
        Fault::FatFsinfoFree => {
            let mut bpb = [0u8; 64];
            let mut r = File::open(&image.path)?;
            r.seek(SeekFrom::Start(image.start))?;
            r.read_exact(&mut bpb)?;
            let sector = u64::from(u16::from_le_bytes([bpb[11], bpb[12]]));
            let fsinfo = u64::from(u16::from_le_bytes([bpb[48], bpb[49]]));
            patch(fsinfo * sector + 488, &|b| {
                let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]).wrapping_sub(1000);
                b.copy_from_slice(&v.to_le_bytes());
            })
        }
    }
}

/// `n` reproducible bytes from an xorshift64 generator at `state` (no
/// dependency needed), the generator advanced past them.
pub(super) fn xorshift_bytes(state: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}
