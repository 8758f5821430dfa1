//! FUSE mounts (exfat-fuse, fusefat) run in the foreground as child
//! processes, so that unmounting can wait until the driver has flushed and
//! exited before a checker reads the device.

use crate::cmd::run;
use crate::tools::require_tool;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for a mount to appear or a driver to exit.
const TIMEOUT: Duration = Duration::from_secs(20);

/// A mounted FUSE file system; unmounted (`fusermount -u`, a few retries) on
/// drop. Prefer [`FuseMount::unmount`], which panics if unmounting fails.
#[derive(Debug)]
pub struct FuseMount {
    dir: PathBuf,
    child: Option<Child>,
    log: PathBuf,
    what: String,
}

/// Mount points (field 5 of `/proc/self/mountinfo`), unescaped.
fn mount_points() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| {
            PathBuf::from(
                p.replace("\\040", " ")
                    .replace("\\011", "\t")
                    .replace("\\134", "\\"),
            )
        })
        .collect()
}

/// True if `dir` is a mount point.
pub fn is_mounted(dir: &Path) -> bool {
    mount_points().iter().any(|p| p == dir)
}

/// True if something is mounted at or below `dir`.
pub fn mounted_under(dir: &Path) -> bool {
    mount_points().iter().any(|p| p.starts_with(dir))
}

impl FuseMount {
    /// `mount.exfat-fuse DEV DIR` (read-write), run in the foreground (`-d`).
    #[track_caller]
    pub fn exfat(dev: &Path, dir: &Path) -> FuseMount {
        let prog = require_tool("mount.exfat-fuse");
        let args = vec![
            "-d".into(),
            dev.to_string_lossy().into_owned(),
            dir.to_string_lossy().into_owned(),
        ];
        Self::spawn(&prog, &args, dir)
    }

    /// `fusefat -o ro DEV DIR`, run in the foreground (`-f`).
    #[track_caller]
    pub fn fusefat_ro(dev: &Path, dir: &Path) -> FuseMount {
        Self::fusefat(dev, dir, "ro")
    }

    /// `fusefat -o rw+ IMAGE DIR` (read-write; an image file needs no loop
    /// device), run in the foreground (`-f`).
    #[track_caller]
    pub fn fusefat_rw(image: &Path, dir: &Path) -> FuseMount {
        Self::fusefat(image, dir, "rw+")
    }

    #[track_caller]
    fn fusefat(dev: &Path, dir: &Path, mode: &str) -> FuseMount {
        let prog = require_tool("fusefat");
        let args = vec![
            "-f".into(),
            "-o".into(),
            mode.into(),
            dev.to_string_lossy().into_owned(),
            dir.to_string_lossy().into_owned(),
        ];
        Self::spawn(&prog, &args, dir)
    }

    /// Runs the FUSE driver `prog ARGS` (in the foreground, as a child
    /// process) and waits until `dir` is a mount point; panics with the
    /// driver's output if it exits or does not mount within 20 s.
    #[track_caller]
    pub fn spawn(prog: &Path, args: &[String], dir: &Path) -> FuseMount {
        crate::tools::require_fuse();
        let log = dir.with_extension("log");
        let out =
            File::create(&log).unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
        let err = out
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot dup log handle: {e}"));
        let command = format!("{} {}", prog.display(), args.join(" "));
        let child = Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{command}`: {e}"));
        let mut m = FuseMount {
            dir: dir.to_path_buf(),
            child: Some(child),
            log,
            what: command,
        };
        let start = Instant::now();
        loop {
            if is_mounted(dir) {
                return m;
            }
            let exited = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                m.child = None;
                panic!(
                    "`{}` exited ({status}) without mounting:\n{}",
                    m.what,
                    m.log_tail()
                );
            }
            if start.elapsed() > TIMEOUT {
                panic!(
                    "`{}` did not mount within {TIMEOUT:?}:\n{}",
                    m.what,
                    m.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The last lines the driver printed.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Unmounts and waits for the driver to exit. Panics if that fails.
    #[track_caller]
    pub fn unmount(mut self) {
        if let Err(e) = self.try_unmount() {
            panic!("{e}");
        }
    }

    fn try_unmount(&mut self) -> Result<(), String> {
        let Some(fusermount) = crate::tools::find_tool("fusermount") else {
            return Err("fusermount is missing (apt-get install -y fuse)".into());
        };
        let mut last = None;
        for attempt in 0..10 {
            if !is_mounted(&self.dir) {
                break;
            }
            let out = run(
                &fusermount,
                &[std::ffi::OsStr::new("-u"), self.dir.as_os_str()],
            );
            if out.success() {
                break;
            }
            last = Some(out);
            std::thread::sleep(Duration::from_millis(100 * (attempt + 1)));
        }
        if is_mounted(&self.dir) {
            let msg = last.map(|o| o.to_string()).unwrap_or_default();
            return Err(format!(
                "cannot unmount {} ({}):\n{msg}",
                self.dir.display(),
                self.what
            ));
        }
        // The driver writes back and exits after the unmount; wait for it.
        if let Some(mut child) = self.child.take() {
            let start = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if start.elapsed() < TIMEOUT => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(format!(
                            "`{}` did not exit after unmount:\n{}",
                            self.what,
                            self.log_tail()
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        if self.child.is_none() && !is_mounted(&self.dir) {
            return;
        }
        if let Err(e) = self.try_unmount() {
            eprintln!("warning: {e}");
            if let Some(fusermount) = crate::tools::find_tool("fusermount") {
                let _ = run(
                    &fusermount,
                    &[std::ffi::OsStr::new("-uz"), self.dir.as_os_str()],
                );
            }
        }
    }
}
