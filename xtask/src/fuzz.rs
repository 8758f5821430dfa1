//! `cargo xtask fuzz [--secs N]`: every cargo-fuzz target of `fuzz/` for N
//! seconds each (default 30), on nightly.
//!
//! Installs what is missing (the nightly toolchain, `cargo install
//! cargo-fuzz --locked`, a C++ compiler for libFuzzer), builds all targets
//! once (`cargo +nightly fuzz build`), then runs each with
//! `-max_total_time=N`. Prints the executions per target; fails naming every
//! target that crashed (with the end of its log and the crashing input that
//! cargo-fuzz wrote under `fuzz/artifacts/`). Logs: `<target>/fuzz-logs/`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::windows::output_with_timeout;
use crate::{install_packages, run, target_dir, workspace_root};

/// Tools `fuzz` needs, with their Debian packages (libfuzzer-sys compiles
/// libFuzzer's C++ sources).
pub const TOOLS: &[(&str, &str)] = &[("c++", "g++")];

/// Default seconds per target.
const DEFAULT_SECS: u64 = 30;

/// A `cargo` through rustup's proxy (so `+nightly` works), without the
/// variables of the cargo that runs xtask, which would pin its toolchain.
fn rustup_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    for var in [
        "CARGO",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `cargo xtask fuzz [--secs N]`.
pub fn fuzz_cmd(args: &[String]) -> Result<(), String> {
    let mut secs = DEFAULT_SECS;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secs" => {
                secs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--secs needs a positive number")?;
            }
            other => return Err(format!("unknown option {other:?}; valid: --secs N")),
        }
    }
    let start = Instant::now();
    let root = workspace_root();
    let fuzz_dir = root.join("fuzz");
    let mut times: Vec<(String, Duration)> = Vec::new();
    let mut lap = Instant::now();

    install_packages(TOOLS)?;
    ensure_nightly()?;
    ensure_cargo_fuzz()?;
    times.push(("tools".into(), lap.elapsed()));
    lap = Instant::now();

    let targets = list_targets(&root)?;
    if targets.is_empty() {
        return Err(format!("no fuzz targets in {}", fuzz_dir.display()));
    }
    run(rustup_cargo()
        .current_dir(&root)
        .args(["+nightly", "fuzz", "build"]))?;
    times.push(("cargo +nightly fuzz build".into(), lap.elapsed()));

    let logs = target_dir().join("fuzz-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let mut results = Vec::new();
    let mut crashed = Vec::new();
    for t in &targets {
        lap = Instant::now();
        let mut cmd = rustup_cargo();
        cmd.current_dir(&root)
            .args(["+nightly", "fuzz", "run", t, "--"])
            .arg(format!("-max_total_time={secs}"))
            .arg("-print_final_stats=1");
        // Generous: the build is done; libFuzzer stops itself after `secs`.
        let limit = Duration::from_secs(secs * 2 + 300);
        let out = output_with_timeout(&mut cmd, limit, &logs.join(t))?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        let runs = executions(&log);
        times.push((format!("fuzz run {t}"), lap.elapsed()));
        if out.status.success() {
            results.push(format!(
                "  {t:<20} {:>12} executions in {secs} s ({}/s)",
                runs.map_or_else(|| "?".to_string(), group),
                runs.map_or_else(|| "?".to_string(), |r| group(r / secs)),
            ));
        } else {
            eprintln!(
                "xtask: fuzz target {t} FAILED ({}); from {}:\n{}",
                out.status,
                logs.join(format!("{t}.err")).display(),
                crash_summary(&log)
            );
            results.push(format!("  {t:<20} CRASHED ({})", out.status));
            crashed.push(format!(
                "{t} ({}; crashing input under {}; log {})",
                out.status,
                fuzz_dir.join("artifacts").join(t).display(),
                logs.join(format!("{t}.err")).display()
            ));
        }
    }

    eprintln!("xtask: fuzz results ({secs} s per target):");
    for r in &results {
        eprintln!("{r}");
    }
    eprintln!("xtask: fuzz times:");
    for (what, t) in &times {
        eprintln!("  {what:<32} {:>6.1} s", t.as_secs_f64());
    }
    eprintln!("xtask: fuzz finished in {:.0?}", start.elapsed());
    if crashed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} fuzz target(s) crashed:\n  {}",
            crashed.len(),
            crashed.join("\n  ")
        ))
    }
}

/// Installs the nightly toolchain if rustup does not list one.
fn ensure_nightly() -> Result<(), String> {
    let out = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map_err(|e| format!("cannot run `rustup toolchain list`: {e}"))?;
    let list = String::from_utf8_lossy(&out.stdout);
    if list.lines().any(|l| l.starts_with("nightly")) {
        return Ok(());
    }
    run(Command::new("rustup").args(["toolchain", "install", "nightly", "--profile", "minimal"]))
}

/// `cargo install cargo-fuzz --locked` unless `cargo fuzz` already runs.
fn ensure_cargo_fuzz() -> Result<(), String> {
    let present = rustup_cargo()
        .args(["fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    let t = Instant::now();
    run(rustup_cargo().args(["install", "cargo-fuzz", "--locked"]))?;
    eprintln!(
        "xtask: installed cargo-fuzz in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The targets, from `cargo fuzz list`.
fn list_targets(root: &Path) -> Result<Vec<String>, String> {
    let out = rustup_cargo()
        .current_dir(root)
        .args(["+nightly", "fuzz", "list"])
        .output()
        .map_err(|e| format!("cannot run `cargo +nightly fuzz list`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo +nightly fuzz list` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// The lines of a failed run's log that matter: the panic (with the line
/// after it, the message), libFuzzer's error and summary, the crashing
/// input and how to reproduce it; the last 30 lines if none is found.
fn crash_summary(log: &str) -> String {
    const KEYS: &[&str] = &[
        "panicked at",
        "ERROR: libFuzzer",
        "SUMMARY:",
        "Test unit written to",
        "cargo fuzz run",
        "error: ",
        "Error: ",
    ];
    let lines: Vec<&str> = log.lines().collect();
    let mut picked: Vec<&str> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if KEYS.iter().any(|k| l.contains(k)) {
            picked.push(l);
            if l.contains("panicked at") {
                if let Some(next) = lines.get(i + 1) {
                    picked.push(next);
                }
            }
        }
    }
    if picked.is_empty() {
        let from = lines.len().saturating_sub(30);
        picked.extend_from_slice(&lines[from..]);
    }
    picked
        .iter()
        .map(|l| format!("  | {}", l.trim_end()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Executions from libFuzzer's log: `stat::number_of_executed_units: N`,
/// else `Done N runs in S second(s)`.
fn executions(log: &str) -> Option<u64> {
    log.lines()
        .find_map(|l| {
            l.strip_prefix("stat::number_of_executed_units:")
                .and_then(|v| v.trim().parse().ok())
        })
        .or_else(|| {
            log.lines().find_map(|l| {
                l.strip_prefix("Done ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
            })
        })
}

/// 1234567 -> "1,234,567".
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_from_stats_or_done_line() {
        let log =
            "#1024 pulse\nDone 5000 runs in 20 second(s)\nstat::number_of_executed_units: 5012\n";
        assert_eq!(executions(log), Some(5012));
        assert_eq!(executions("Done 77 runs in 1 second(s)\n"), Some(77));
        assert_eq!(executions("nothing"), None);
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(999), "999");
    }
}
