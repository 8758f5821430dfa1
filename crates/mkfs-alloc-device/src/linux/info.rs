//! Linux device facts from sysfs, udev's database and the probe:
//! [`gather`] builds a [`DeviceInfo`] (partitions, holders, file systems).

use super::*;
use crate::probe::{probe, ProbeRead, PROBE_UNIT};

/// udev's database entry `E:KEY=value` properties for `dev`.
fn udev_props(dev: DevNum) -> Vec<(String, String)> {
    let p = format!("/run/udev/data/b{}:{}", dev.0, dev.1);
    fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("E:"))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn prop(props: &[(String, String)], key: &str) -> Option<String> {
    props
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| clean(v))
}

/// Reads through an open device file, for the probe.
struct FileReader<'a>(&'a File);

impl ProbeRead for FileReader<'_> {
    /// A disk's page cache and its partitions' are not kept coherent: a
    /// page of the disk cached before a partition was written through its
    /// own node stays stale while any opener holds the disk (another
    /// `list`, a desktop's disk monitor), and the probe of that partition
    /// through the disk read the old bytes (seen: an exFAT partition probed
    /// as empty). The clean cached pages of the range are dropped first
    /// (`POSIX_FADV_DONTNEED`), so the read goes to the device.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let len = std::num::NonZeroU64::new(buf.len() as u64);
        let _ = rustix::fs::fadvise(self.0, offset, len, rustix::fs::Advice::DontNeed);
        self.0.read_exact_at(buf, offset)
    }
}

pub(super) fn gather(
    env: &Env,
    path: &Path,
    dev: DevNum,
    file: Option<&File>,
) -> Result<DeviceInfo, DeviceError> {
    let dir = sys_dir(dev).ok_or_else(|| {
        DeviceError::io(
            path,
            format!("find /sys/dev/block/{}:{}", dev.0, dev.1),
            io::Error::from(io::ErrorKind::NotFound),
        )
    })?;
    let is_partition = dir.join("partition").exists();
    let disk_dir = if is_partition {
        dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf)
    } else {
        dir.clone()
    };
    let g = geometry(&dir, &disk_dir, file);
    let props = udev_props(dev);
    let disk_props = if is_partition {
        read_dev(&disk_dir.join("dev"))
            .map(udev_props)
            .unwrap_or_default()
    } else {
        props.clone()
    };
    let (vendor, model, serial) = identity(&disk_dir, &disk_props);
    let (fs_type, label) = fs_of(&props, file, 0, g.size_bytes);
    let partitions = if is_partition {
        Vec::new()
    } else {
        partitions(env, &dir, file)
    };
    let (in_use_by, holds_system_root) = users(env, dev, &dir, &partitions);
    Ok(DeviceInfo {
        path: path.to_path_buf(),
        size_bytes: g.size_bytes,
        logical_block_size: g.logical_block_size,
        physical_block_size: g.physical_block_size,
        optimal_io_size: g.optimal_io_size,
        discard_granularity: g.discard_granularity,
        removable: is_removable(&disk_dir),
        read_only: g.read_only,
        vendor,
        model,
        serial,
        is_whole_disk: !is_partition,
        partitions: partitions.into_iter().map(|p| p.info).collect(),
        mountpoints: env.mountpoints(dev, path),
        holds_system_root,
        in_use_by,
        fs_type,
        label,
    })
}

/// Sizes and the read-only flag of a device.
struct Geometry {
    size_bytes: u64,
    logical_block_size: u32,
    physical_block_size: u32,
    optimal_io_size: u32,
    discard_granularity: u64,
    read_only: bool,
}

/// Sizes from the open device's ioctls, else from sysfs (`dir` the
/// device's, `disk_dir` its disk's, for the queue limits).
fn geometry(dir: &Path, disk_dir: &Path, file: Option<&File>) -> Geometry {
    let queue = disk_dir.join("queue");
    let q = |name: &str| read_u64(&queue.join(name));
    let size_bytes = match file.map(ioctl_size) {
        Some(Ok(n)) => n,
        _ => read_u64(&dir.join("size")).unwrap_or(0).saturating_mul(512),
    };
    let logical_block_size = match file.map(rustix::fs::ioctl_blksszget) {
        Some(Ok(n)) => n,
        _ => q("logical_block_size").map_or(512, |n| u32::try_from(n).unwrap_or(0)),
    };
    let physical_block_size = match file.map(rustix::fs::ioctl_blkpbszget) {
        Some(Ok(n)) => n,
        _ => q("physical_block_size").map_or(0, |n| u32::try_from(n).unwrap_or(0)),
    };
    let optimal_io_size = match file.map(ioctl_io_opt) {
        Some(Ok(n)) => n,
        _ => q("optimal_io_size").map_or(0, |n| u32::try_from(n).unwrap_or(0)),
    };
    let discard_granularity = if q("discard_max_bytes").unwrap_or(0) > 0 {
        q("discard_granularity").unwrap_or(0)
    } else {
        0
    };
    let read_only = match file.map(ioctl_ro) {
        Some(Ok(ro)) => ro,
        _ => read_u64(&dir.join("ro")).unwrap_or(0) != 0,
    };
    Geometry {
        size_bytes,
        logical_block_size,
        physical_block_size,
        optimal_io_size,
        discard_granularity,
        read_only,
    }
}

/// Vendor, model and serial of the disk: sysfs first, then udev.
fn identity(
    disk_dir: &Path,
    disk_props: &[(String, String)],
) -> (Option<String>, Option<String>, Option<String>) {
    let device = disk_dir.join("device");
    // virtio and NVMe put a PCI vendor number (`0x1af4`) there: not a name.
    let vendor = read_str(&device.join("vendor"))
        .filter(|v| !v.starts_with("0x"))
        .or_else(|| prop(disk_props, "ID_VENDOR"));
    let model = read_str(&device.join("model"))
        .or_else(|| read_str(&device.join("name")))
        .or_else(|| prop(disk_props, "ID_MODEL"));
    let serial = read_str(&device.join("serial"))
        .or_else(|| read_str(&disk_dir.join("serial")))
        .or_else(|| prop(disk_props, "ID_SERIAL_SHORT"));
    (vendor, model, serial)
}

/// Who uses the device or one of its partitions (holders such as
/// device-mapper, swap), and whether the running system's root lives on it.
fn users(env: &Env, dev: DevNum, dir: &Path, partitions: &[Part]) -> (Vec<String>, bool) {
    let mut in_use_by = holders(dir);
    let mut devs = vec![dev];
    for p in partitions {
        if let Some(d) = p.dev {
            devs.push(d);
            in_use_by.extend(holders(&p.sys_dir));
        }
    }
    if env.swaps.iter().any(|s| devs.contains(s)) {
        in_use_by.push("swap".to_string());
    }
    let holds_system_root = devs.iter().any(|d| env.root_chain.contains(d));
    (in_use_by, holds_system_root)
}

/// Removable medium (`removable` = 1), or on a USB bus, or an SD card.
fn is_removable(disk_dir: &Path) -> bool {
    if read_u64(&disk_dir.join("removable")) == Some(1) {
        return true;
    }
    let p = disk_dir.to_string_lossy();
    if p.contains("/usb") || p.contains("/firewire") {
        return true;
    }
    read_str(&disk_dir.join("device/type")).as_deref() == Some("SD")
}

/// `/dev/NAME` of the devices in `dir/holders` (device-mapper, RAID).
fn holders(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir.join("holders"))
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    format!("/dev/{}", dev_name(&e.path()).unwrap_or(name))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Type and label from udev's database, else from the probe.
fn fs_of(
    props: &[(String, String)],
    file: Option<&File>,
    base: u64,
    size: u64,
) -> (Option<String>, Option<String>) {
    if let Some(t) = prop(props, "ID_FS_TYPE") {
        return (Some(t), prop(props, "ID_FS_LABEL"));
    }
    match file {
        Some(f) if base % PROBE_UNIT == 0 => probe(&mut FileReader(f), base, size),
        _ => (None, None),
    }
}

struct Part {
    info: PartitionInfo,
    number: u64,
    dev: Option<DevNum>,
    sys_dir: PathBuf,
}

/// The partitions of the disk at `disk_dir`, from sysfs, ordered by number.
/// Partition nodes may be missing in `/dev`; the disk's handle is used to
/// probe them.
fn partitions(env: &Env, disk_dir: &Path, file: Option<&File>) -> Vec<Part> {
    let Ok(rd) = fs::read_dir(disk_dir) else {
        return Vec::new();
    };
    let mut out: Vec<Part> = rd
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let number = read_u64(&dir.join("partition"))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let start_bytes = read_u64(&dir.join("start"))?.saturating_mul(512);
            let size_bytes = read_u64(&dir.join("size"))?.saturating_mul(512);
            let path = Path::new("/dev").join(dev_name(&dir).unwrap_or(name));
            let dev = read_dev(&dir.join("dev"));
            let props = dev.map(udev_props).unwrap_or_default();
            let (fs_type, label) = fs_of(&props, file, start_bytes, size_bytes);
            let mountpoints = dev.map_or_else(Vec::new, |d| env.mountpoints(d, &path));
            Some(Part {
                info: PartitionInfo {
                    path,
                    start_bytes,
                    size_bytes,
                    mountpoints,
                    fs_type,
                    label,
                },
                number,
                dev,
                sys_dir: dir,
            })
        })
        .collect();
    out.sort_by_key(|p| p.number);
    out
}
