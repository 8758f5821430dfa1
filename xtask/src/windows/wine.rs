//! Wine: a private prefix, processes with a time limit, their output.

use super::*;

/// A temporary Wine prefix; its wineserver is stopped and the prefix
/// removed on drop (unless kept).
pub(super) struct Wine {
    pub(super) prefix: PathBuf,
    pub(super) keep: bool,
    pub(super) logs: PathBuf,
}

impl Wine {
    pub(super) fn new(keep: bool, logs: &Path) -> Result<Self, String> {
        let prefix = std::env::temp_dir().join(format!("mkfs-alloc-wine-{}", std::process::id()));
        if prefix.exists() {
            std::fs::remove_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        }
        Ok(Self {
            prefix,
            keep,
            logs: logs.to_path_buf(),
        })
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", DLL_OVERRIDES)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY");
        cmd
    }

    pub(super) fn boot(&self) -> Result<(), String> {
        let mut cmd = self.command("wineboot");
        cmd.arg("--init");
        let out = output_with_timeout(&mut cmd, BOOT_LIMIT, &self.logs.join("wineboot"))?;
        if !out.status.success() {
            return Err(format!(
                "`wineboot --init` failed ({}) with WINEPREFIX={}:\n{}",
                out.status,
                self.prefix.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// `wine mkfs-alloc.exe ARGS` in `dir`.
    pub(super) fn exe(&self, dir: &Path, args: &[&str], log: &Path) -> Result<Output, String> {
        let mut cmd = self.command("wine");
        cmd.current_dir(dir)
            .arg("mkfs-alloc.exe")
            .args(args)
            .env("SOURCE_DATE_EPOCH", EPOCH);
        output_with_timeout(&mut cmd, RUN_LIMIT, log)
    }
}

impl Drop for Wine {
    fn drop(&mut self) {
        // Stops the wineserver of our prefix (and its processes) only.
        let _ = self
            .command("wineserver")
            .arg("-k")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if self.keep {
            eprintln!("xtask: kept the Wine prefix {}", self.prefix.display());
        } else if self.prefix.exists() {
            let _ = std::fs::remove_dir_all(&self.prefix);
        }
    }
}

/// Runs `cmd` with stdin closed and stdout / stderr in `LOG.out` /
/// `LOG.err` (files, not pipes: the wineserver Wine starts may inherit them
/// and outlive the command), killing it after `limit`.
pub(crate) fn output_with_timeout(
    cmd: &mut Command,
    limit: Duration,
    log: &Path,
) -> Result<Output, String> {
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    let out_file = File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let err_file = File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{shown}` did not finish in {} s (killed); output in {} and {}",
                    limit.as_secs(),
                    out_path.display(),
                    err_path.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for `{shown}`: {e}")),
        }
    };
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    Ok(Output {
        status,
        stdout: read(&out_path)?,
        stderr: read(&err_path)?,
    })
}

/// Runs a Linux command in `dir`, output captured.
pub(super) fn output_in(program: &Path, dir: &Path, args: &[&str]) -> Result<Output, String> {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH);
    let shown = format!("{cmd:?}").replace('"', "");
    eprintln!("+ {shown}");
    cmd.output()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))
}

pub(super) fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
