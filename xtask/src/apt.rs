//! Installing Debian packages when an installed package of another suite
//! stands in the way.
//!
//! A machine image may carry a package newer than its release has, from a
//! backports suite or a local `.deb` (qemu-utils 10 from bookworm-backports
//! beside bookworm's QEMU 7.2). Such a package may declare `Breaks:` or
//! `Conflicts:` against the release's version of a package we install
//! (qemu-utils 10 Breaks qemu-system-common << 8.0), and apt then refuses the
//! whole install ("pkgProblemResolver::Resolve generated breaks", exit 100).
//!
//! The install is first simulated (`apt-get install -s`). When it fails, the
//! installed packages that apt names on the left of a `Breaks:` or
//! `Conflicts:` line (and that were not asked for) are the ones in the way;
//! each is moved to the version its configured sources prefer (the highest
//! pin priority of the version table, the installed version left out), and
//! the simulation is repeated with those downgrades added. Nothing is
//! changed unless that simulation succeeds; otherwise the error quotes what
//! apt said conflicted.

use std::process::Command;

/// One line of apt's "The following packages have unmet dependencies"
/// section that names a package in the way: `PKG : Breaks: OTHER ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocker {
    /// The package that declares the relation (installed, in the way).
    pub package: String,
    /// `Breaks` or `Conflicts`.
    pub relation: String,
    /// What it declares it against, as apt printed it.
    pub against: String,
}

/// The `Breaks:`/`Conflicts:` relations of apt's unmet-dependency report in
/// `output` (the text of a failed `apt-get install -s`), in order, one per
/// declaring package and target. Continuation lines (indented, without a
/// `PKG :` head) belong to the package of the line above.
pub(crate) fn blockers(output: &str) -> Vec<Blocker> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    let mut in_report = false;
    for line in output.lines() {
        if line.starts_with("The following packages have unmet dependencies") {
            in_report = true;
            continue;
        }
        if !in_report {
            continue;
        }
        if !line.starts_with(' ') {
            // "E: ..." or any other unindented line ends the report.
            in_report = false;
            current = None;
            continue;
        }
        let rest = match line.split_once(" : ") {
            Some((head, rest)) if !head.trim().is_empty() => {
                current = Some(head.trim().to_string());
                rest
            }
            _ => line.trim_start(),
        };
        let Some(package) = current.clone() else {
            continue;
        };
        for relation in ["Breaks", "Conflicts"] {
            if let Some(against) = rest.trim_start().strip_prefix(&format!("{relation}: ")) {
                let blocker = Blocker {
                    package: package.clone(),
                    relation: relation.to_string(),
                    against: against.trim().to_string(),
                };
                if !found.contains(&blocker) {
                    found.push(blocker);
                }
            }
        }
    }
    found
}

/// The version the configured sources prefer in `apt-cache policy PKG`'s
/// output, the installed one left out: the first version (apt lists them
/// newest first) among those of the highest pin priority. `None` when no
/// source offers another version.
pub(crate) fn preferred_other_version(policy: &str) -> Option<String> {
    let mut best: Option<(i64, String)> = None;
    let mut in_table = false;
    for line in policy.lines() {
        let trimmed = line.trim();
        if trimmed == "Version table:" {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        // A version line: "*** 1:10.0 100" (installed) or "1:7.2 500";
        // its sources follow, indented deeper: "500 http://... Packages".
        let installed = trimmed.starts_with("***");
        let fields: Vec<&str> = trimmed
            .trim_start_matches("***")
            .split_whitespace()
            .collect();
        let [version, priority] = fields[..] else {
            continue;
        };
        // Source lines ("500 http://... Packages", "100 /var/lib/dpkg/status")
        // have more fields or no number in the second.
        let Ok(priority) = priority.parse::<i64>() else {
            continue;
        };
        if installed {
            continue;
        }
        if best.as_ref().is_none_or(|(p, _)| priority > *p) {
            best = Some((priority, version.to_string()));
        }
    }
    best.map(|(_, v)| v)
}

/// Installs `pkgs` with apt-get (root), moving installed packages of other
/// suites that Break or Conflict with them to the version their sources
/// prefer (see the module docs). `apt-get update` has been run.
pub(crate) fn install(pkgs: &[&str]) -> Result<(), String> {
    let wanted: Vec<String> = pkgs.iter().map(|p| (*p).to_string()).collect();
    let (ok, output) = simulate(&wanted, false)?;
    let mut args = wanted.clone();
    let mut downgrade = false;
    if !ok {
        let found = blockers(&output);
        let in_way: Vec<&Blocker> = found
            .iter()
            .filter(|b| !wanted.contains(&b.package) && is_installed(&b.package))
            .collect();
        if in_way.is_empty() {
            return Err(format!(
                "apt-get cannot install {}; it said:\n{}",
                wanted.join(" "),
                report(&output)
            ));
        }
        let mut moves = Vec::new();
        for b in &in_way {
            let policy = capture(Command::new("apt-cache").args(["policy", &b.package]))?;
            let Some(version) = preferred_other_version(&policy) else {
                return Err(format!(
                    "the installed {} {}: {} and no configured source offers another version \
                     of it; apt said:\n{}",
                    b.package,
                    b.relation,
                    b.against,
                    report(&output)
                ));
            };
            let arg = format!("{}={version}", b.package);
            if !moves.contains(&arg) {
                eprintln!(
                    "xtask: the installed {} {}: {}; moving it to {version}, the version its \
                     sources prefer",
                    b.package, b.relation, b.against
                );
                moves.push(arg);
            }
        }
        args.extend(moves);
        downgrade = true;
        let (ok, retry) = simulate(&args, downgrade)?;
        if !ok {
            return Err(format!(
                "apt-get cannot install {} even with {}; it said:\n{}",
                wanted.join(" "),
                args[wanted.len()..].join(" "),
                report(&retry)
            ));
        }
    }
    let mut cmd = Command::new("apt-get");
    cmd.args(["install", "-y"]);
    if downgrade {
        cmd.arg("--allow-downgrades");
    }
    crate::run(
        cmd.args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("LC_ALL", "C"),
    )
}

/// `apt-get install -s` of `args`: whether it would succeed, and its text.
fn simulate(args: &[String], downgrade: bool) -> Result<(bool, String), String> {
    let mut cmd = Command::new("apt-get");
    cmd.args(["install", "-s", "-y"]);
    if downgrade {
        cmd.arg("--allow-downgrades");
    }
    let out = cmd
        .args(args)
        .env("LC_ALL", "C")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .map_err(|e| format!("cannot run apt-get: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

fn is_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status}", pkg])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout == b"installed")
}

fn capture(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The part of apt's text worth quoting: the unmet-dependency report and
/// its `E:` lines (the whole text when it has neither).
fn report(output: &str) -> String {
    let start = output
        .find("The following packages have unmet dependencies")
        .or_else(|| output.find("E: "));
    let lines: Vec<&str> = output[start.unwrap_or(0)..]
        .lines()
        .filter(|l| !l.starts_with("Inst ") && !l.starts_with("Conf "))
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `LC_ALL=C apt-get install -s -y qemu-system-x86 qemu-system-arm` on
    /// Debian 12 with qemu-utils 1:10.0.2+ds-2+deb13u1~bpo12+1 installed.
    const QEMU_BREAKS: &str = "\
Reading package lists...
Building dependency tree...
Reading state information...
Some packages could not be installed. This may mean that you have
requested an impossible situation or if you are using the unstable
distribution that some required packages have not yet been created
or been moved out of Incoming.
The following information may help to resolve the situation:

The following packages have unmet dependencies:
 qemu-utils : Breaks: qemu-system-common (< 1:8.0+dfsg-5~) but 1:7.2+dfsg-7+deb12u18+b3 is to be installed
              Recommends: qemu-block-extra (= 1:10.0.2+ds-2+deb13u1~bpo12+1) but 1:7.2+dfsg-7+deb12u18+b3 is to be installed
E: Error, pkgProblemResolver::Resolve generated breaks, this may be caused by held packages.
";

    /// `LC_ALL=C apt-cache policy qemu-utils` on the same machine.
    const QEMU_POLICY: &str = "\
qemu-utils:
  Installed: 1:10.0.2+ds-2+deb13u1~bpo12+1
  Candidate: 1:10.0.2+ds-2+deb13u1~bpo12+1
  Version table:
 *** 1:10.0.2+ds-2+deb13u1~bpo12+1 100
        100 /var/lib/dpkg/status
     1:7.2+dfsg-7+deb12u18+b3 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
     1:7.2+dfsg-7+deb12u15 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
";

    #[test]
    fn the_breaking_package_is_named() {
        assert_eq!(
            blockers(QEMU_BREAKS),
            vec![Blocker {
                package: "qemu-utils".into(),
                relation: "Breaks".into(),
                against: "qemu-system-common (< 1:8.0+dfsg-5~) but 1:7.2+dfsg-7+deb12u18+b3 \
                          is to be installed"
                    .into(),
            }]
        );
    }

    #[test]
    fn continuation_lines_belong_to_the_package_above() {
        let text = "The following packages have unmet dependencies:\n \
                    a : Depends: b but it is not going to be installed\n     \
                    Conflicts: c\n \
                    d : Breaks: e (< 2)\nE: Unable to correct problems\n";
        let found = blockers(text);
        let pairs: Vec<(&str, &str)> = found
            .iter()
            .map(|b| (b.package.as_str(), b.relation.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "Conflicts"), ("d", "Breaks")]);
        assert!(blockers("E: Unable to locate package nosuch\n").is_empty());
    }

    #[test]
    fn the_release_version_is_preferred_over_the_installed_one() {
        assert_eq!(
            preferred_other_version(QEMU_POLICY).as_deref(),
            Some("1:7.2+dfsg-7+deb12u18+b3")
        );
    }

    #[test]
    fn a_package_no_source_offers_has_no_other_version() {
        let only_installed = "x:\n  Installed: 1.0\n  Candidate: 1.0\n  Version table:\n \
                              *** 1.0 100\n        100 /var/lib/dpkg/status\n";
        assert_eq!(preferred_other_version(only_installed), None);
    }

    #[test]
    fn a_higher_pin_wins_over_a_newer_version() {
        let policy = "x:\n  Version table:\n     3.0 100\n        100 http://a b Packages\n     \
                      2.0 990\n        990 http://c d Packages\n";
        assert_eq!(preferred_other_version(policy).as_deref(), Some("2.0"));
    }
}
