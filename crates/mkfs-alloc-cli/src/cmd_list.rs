//! `mkfs-alloc list`: the block devices one could format.

use crate::Failure;
use mkfs_alloc::layout::units::format_size;
use mkfs_alloc_device as device;

/// Options of `list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Lists block devices, removable first, with what is on them.
pub fn run(args: &ListArgs) -> Result<(), Failure> {
    let devices = device::list().map_err(|e| Failure::Io(e.into()))?;
    if args.json {
        let v: Vec<serde_json::Value> = devices
            .iter()
            .map(|d| {
                let mut v = serde_json::json!(d);
                if let Some(obj) = v.as_object_mut() {
                    obj.insert(
                        "contents".into(),
                        serde_json::json!(crate::contents::describe(&d.path, d.logical_block_size)),
                    );
                    obj.insert(
                        "refusal".into(),
                        serde_json::json!(device::refusal(d).map(|r| r.reason)),
                    );
                }
                v
            })
            .collect();
        outln!("{:#}", serde_json::Value::Array(v));
        return Ok(());
    }
    if devices.is_empty() {
        outln!("no block devices found");
        return Ok(());
    }
    outln!(
        "{:<16} {:>10} {:<10} {:<28} contents",
        "device",
        "size",
        "kind",
        "model"
    );
    for d in &devices {
        let model = [d.vendor.as_deref(), d.model.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let mut contents = Vec::new();
        if let Some(fs) = &d.fs_type {
            contents.push(match &d.label {
                Some(l) => format!("{fs} {l:?}"),
                None => fs.clone(),
            });
        }
        if d.partitions.is_empty() {
            // Read from the medium: partition nodes may not exist.
            contents.extend(crate::contents::describe(&d.path, d.logical_block_size));
        }
        for p in &d.partitions {
            let mut s = format!(
                "{}: {}",
                p.path.display(),
                p.fs_type.as_deref().unwrap_or("?")
            );
            if let Some(l) = &p.label {
                s.push_str(&format!(" {l:?}"));
            }
            for m in &p.mountpoints {
                s.push_str(&format!(" on {}", m.display()));
            }
            contents.push(s);
        }
        for m in &d.mountpoints {
            contents.push(format!("mounted on {}", m.display()));
        }
        if let Some(r) = device::refusal(d) {
            contents.push(format!("[refused: {}]", r.reason));
        }
        outln!(
            "{:<16} {:>10} {:<10} {:<28} {}",
            d.path.display(),
            format_size(d.size_bytes),
            if d.removable { "removable" } else { "fixed" },
            if model.is_empty() {
                "-".to_string()
            } else {
                model
            },
            if contents.is_empty() {
                "-".to_string()
            } else {
                contents.join("; ")
            }
        );
    }
    Ok(())
}
