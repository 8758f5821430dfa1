//! The boots: batches of images through QEMU, and what the console said.

use super::*;

// --- the boots -----------------------------------------------------------------

/// What the guest reported about one case in one phase.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) disk: String,
    pub(super) statfs: BTreeMap<String, (u64, u64, u64)>,
    pub(super) digest: BTreeMap<String, (String, u64)>,
    pub(super) klog: Vec<(String, String)>,
    pub(super) fails: Vec<String>,
    pub(super) infos: Vec<String>,
    /// Fill mode: the file's size (and the cluster-sized appends it took).
    pub(super) fill: Option<(u64, u64)>,
    pub(super) time: Option<f64>,
}

/// The two boots of a batch.
#[derive(Default)]
pub(super) struct BatchResult {
    /// Keyed by (phase, case tag).
    pub(super) seen: BTreeMap<(String, String), Seen>,
    /// Boot-time kernel lines about disks or tables, by phase.
    pub(super) boot_klog: Vec<(String, String)>,
    /// Phases that reached `KT END`.
    pub(super) ended: Vec<String>,
    /// Guest uptime when /init started, by phase.
    pub(super) booted: Vec<(String, f64)>,
    pub(super) boots: Vec<(String, Duration)>,
    pub(super) error: Option<String>,
}

impl BatchResult {
    /// The guest's notes on a case (both phases).
    pub(super) fn notes(&self, tag: &str) -> Vec<String> {
        let mut notes = Vec::new();
        for ((_, t), seen) in &self.seen {
            if t == tag {
                for i in &seen.infos {
                    if !notes.contains(i) {
                        notes.push(i.clone());
                    }
                }
            }
        }
        notes
    }
}

/// Boots the batch twice (write, verify) and collects the reports.
pub(super) fn run_batch(guest: &Guest, batch: &[&Image], dir: &Path) -> BatchResult {
    let mut result = BatchResult::default();
    if let Err(e) = std::fs::create_dir_all(dir) {
        result.error = Some(format!("{}: {e}", dir.display()));
        return result;
    }
    for phase in ["write", "verify"] {
        let started = Instant::now();
        let console = dir.join(format!("{phase}.console"));
        let outcome = boot(guest, batch, phase, &console);
        result.boots.push((phase.to_string(), started.elapsed()));
        let text = std::fs::read(console.with_extension("out"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        parse_console(&text, phase, &mut result);
        if let Err(e) = outcome {
            result.error = Some(format!("{phase} boot: {e}"));
            break;
        }
    }
    result
}

pub(super) fn boot(guest: &Guest, batch: &[&Image], phase: &str, log: &Path) -> Result<(), String> {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(accel().1)
        .args(["-m", "768", "-smp", "1", "-nodefaults", "-no-user-config"])
        .args(["-display", "none", "-no-reboot", "-serial", "stdio"])
        .arg("-kernel")
        .arg(&guest.kernel)
        .arg("-initrd")
        .arg(&guest.initramfs)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 quiet loglevel=1 panic=-1 kt.phase={phase} kt.disks={}",
            batch.len()
        ));
    for (i, image) in batch.iter().enumerate() {
        let bs = image.case.sector;
        cmd.arg("-drive")
            .arg(format!(
                "file={},format=raw,if=none,id=d{i},cache=writeback",
                image.path.display()
            ))
            .arg("-device")
            .arg(format!(
                "virtio-blk-pci,drive=d{i},serial={}.{}.{}.{},logical_block_size={bs},physical_block_size={bs}",
                image.tag,
                image.case.driver.name(),
                image.partition,
                if image.case.fill { "fill" } else { "set" }
            ));
    }
    let limit = Duration::from_secs(120 + 180 * batch.len() as u64);
    let out = output_with_timeout(&mut cmd, limit, log)?;
    if !out.status.success() {
        return Err(format!(
            "qemu failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Reads the `KT` lines of a console log.
fn parse_console(text: &str, phase: &str, result: &mut BatchResult) {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let Some(rest) = line.strip_prefix("KT ") else {
            continue;
        };
        let (tag, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        if tag == "END" {
            result.ended.push(kind.to_string());
            continue;
        }
        if tag == "BOOTED" {
            result
                .booted
                .push((phase.to_string(), kind.parse().unwrap_or(0.0)));
            continue;
        }
        if tag == "-" {
            if let Some(l) = rest.strip_prefix("boot ") {
                result.boot_klog.push((phase.to_string(), l.to_string()));
            } else {
                result
                    .boot_klog
                    .push((phase.to_string(), format!("{kind} {rest}")));
            }
            continue;
        }
        let seen = result
            .seen
            .entry((phase.to_string(), tag.to_string()))
            .or_default();
        let words: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match kind {
            "DISK" => seen.disk = rest.to_string(),
            "STATFS" if words.len() == 4 => {
                seen.statfs
                    .insert(words[0].to_string(), (num(1), num(2), num(3)));
            }
            "DIGEST" if words.len() == 3 => {
                seen.digest
                    .insert(words[0].to_string(), (words[1].to_string(), num(2)));
            }
            "KLOG" => {
                let (step, l) = rest.split_once(' ').unwrap_or((rest, ""));
                seen.klog.push((step.to_string(), l.to_string()));
            }
            "FAIL" => seen.fails.push(rest.to_string()),
            "INFO" => seen.infos.push(rest.to_string()),
            "FILL" if words.len() == 2 => seen.fill = Some((num(0), num(1))),
            "TIME" => seen.time = rest.trim().parse().ok(),
            _ => seen.fails.push(format!("unreadable report: {line}")),
        }
    }
}
