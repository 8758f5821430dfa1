//! The guest: the Debian kernel, its modules and the initramfs.

use super::*;

// --- the guest ---------------------------------------------------------------

/// A bootable guest.
pub(super) struct Guest {
    pub(super) version: String,
    pub(super) kernel: PathBuf,
    pub(super) initramfs: PathBuf,
}

/// Fetches the kernel (once) and writes the initramfs (every run: it is
/// quick, and always holds the current `kernel_init.sh`).
pub(super) fn build_guest(dir: &Path) -> Result<Guest, String> {
    let version = kernel_version()?;
    let root = fetch_kernel(dir, &version)?;
    let kernel = root.join("boot").join(format!("vmlinuz-{version}"));
    if !kernel.is_file() {
        return Err(format!("{} is missing", kernel.display()));
    }
    let mut cpio = Cpio::default();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "mnt",
        "lib",
        "lib/modules",
    ] {
        cpio.add(d, 0o040_755, &[]);
    }
    // The console the kernel opens for PID 1, before devtmpfs is mounted.
    cpio.add_device("dev/console", 0o020_600, 5, 1);
    cpio.add("init", 0o100_755, INIT.as_bytes());
    cpio.add("listing.sh", 0o100_644, LISTING.as_bytes());
    let busybox = find_tool("busybox").ok_or("busybox is missing")?;
    let data = std::fs::read(&busybox).map_err(|e| format!("{}: {e}", busybox.display()))?;
    cpio.add("bin/busybox", 0o100_755, &data);
    let mut order = String::new();
    for module in module_files(&root, &version)? {
        let name = module
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| format!("odd module path {}", module.display()))?
            .to_string();
        if !name.ends_with(".ko") {
            return Err(format!(
                "{name}: compressed modules are not supported (busybox insmod loads .ko)"
            ));
        }
        let data = std::fs::read(&module).map_err(|e| format!("{}: {e}", module.display()))?;
        cpio.add(&format!("lib/modules/{name}"), 0o100_644, &data);
        order.push_str(&name);
        order.push('\n');
    }
    cpio.add("modules.order", 0o100_644, order.as_bytes());
    let initramfs = dir.join("initramfs.cpio");
    std::fs::write(&initramfs, cpio.finish())
        .map_err(|e| format!("{}: {e}", initramfs.display()))?;
    eprintln!(
        "xtask: guest: Linux {version}, initramfs with modules {}",
        order.trim().replace('\n', " ")
    );
    Ok(Guest {
        version,
        kernel,
        initramfs,
    })
}

/// `$XTASK_KERNEL_VERSION`, else the version `linux-image-amd64` depends on.
fn kernel_version() -> Result<String, String> {
    if let Ok(v) = std::env::var("XTASK_KERNEL_VERSION") {
        return Ok(v);
    }
    for attempt in 0..2 {
        let out = Command::new("apt-cache")
            .args(["depends", "linux-image-amd64"])
            .output()
            .map_err(|e| format!("cannot run apt-cache: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let found = text.lines().find_map(|l| {
            l.trim()
                .strip_prefix("Depends: linux-image-")
                .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        });
        if let Some(v) = found {
            return Ok(v.to_string());
        }
        if attempt == 0 && is_root() {
            run(Command::new("apt-get").arg("update"))?;
        }
    }
    Err("cannot tell which kernel linux-image-amd64 depends on (apt-cache depends)".into())
}

/// The unpacked kernel package in `dir/linux-VERSION` (fetched once).
fn fetch_kernel(dir: &Path, version: &str) -> Result<PathBuf, String> {
    let root = dir.join(format!("linux-{version}"));
    let done = root.join(".unpacked");
    if done.exists() {
        return Ok(root);
    }
    let _ = std::fs::remove_dir_all(&root);
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
    let package = format!("linux-image-{version}");
    run(Command::new("apt-get")
        .current_dir(&debs)
        .args(["download", &package]))?;
    let deb = std::fs::read_dir(&debs)
        .map_err(|e| format!("{}: {e}", debs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{package}_")) && n.ends_with(".deb"))
        })
        .ok_or_else(|| format!("apt-get download left no {package}_*.deb"))?;
    run(Command::new("dpkg").arg("-x").arg(&deb).arg(&root))?;
    run(Command::new("depmod").arg("-b").arg(&root).arg(version))?;
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    let _ = std::fs::remove_file(&deb);
    Ok(root)
}

/// The module files of [`MODULES`] and their dependencies, in load order.
fn module_files(root: &Path, version: &str) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = Vec::new();
    for module in MODULES {
        let out = Command::new("modprobe")
            .arg("-d")
            .arg(root)
            .args(["-S", version, "--show-depends", module])
            .output()
            .map_err(|e| format!("cannot run modprobe: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "modprobe --show-depends {module}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut words = line.split_whitespace();
            if words.next() == Some("insmod") {
                if let Some(path) = words.next().map(PathBuf::from) {
                    if !files.contains(&path) {
                        files.push(path);
                    }
                }
            }
        }
    }
    Ok(files)
}

/// A `newc` cpio archive (the initramfs format), built in memory.
#[derive(Default)]
struct Cpio {
    pub(super) data: Vec<u8>,
    pub(super) inode: u32,
}

impl Cpio {
    fn add(&mut self, name: &str, mode: u32, content: &[u8]) {
        self.entry(name, mode, content, (0, 0));
    }

    fn add_device(&mut self, name: &str, mode: u32, major: u32, minor: u32) {
        self.entry(name, mode, &[], (major, minor));
    }

    pub(super) fn entry(&mut self, name: &str, mode: u32, content: &[u8], rdev: (u32, u32)) {
        self.inode += 1;
        let nlink = if mode & 0o040_000 != 0 { 2 } else { 1 };
        let fields = [
            self.inode,
            mode,
            0,
            0,
            nlink,
            0,
            u32::try_from(content.len()).unwrap_or(u32::MAX),
            0,
            0,
            rdev.0,
            rdev.1,
            u32::try_from(name.len() + 1).unwrap_or(u32::MAX),
            0,
        ];
        self.data.extend_from_slice(b"070701");
        for f in fields {
            self.data.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.data.extend_from_slice(name.as_bytes());
        self.data.push(0);
        self.pad();
        self.data.extend_from_slice(content);
        self.pad();
    }

    fn pad(&mut self) {
        while self.data.len() % 4 != 0 {
            self.data.push(0);
        }
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.data
    }
}
