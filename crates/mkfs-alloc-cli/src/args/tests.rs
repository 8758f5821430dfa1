//! Tests of the command line's parsing.

use super::*;

/// The help's sentence on `--cluster auto` is prose; the one table is
/// `mkfs_alloc::layout::auto_cluster`. They must agree.
#[test]
fn help_states_the_auto_cluster_table() {
    use mkfs_alloc::layout::auto_cluster;
    use mkfs_alloc::layout::units::{format_size, GIB, MIB};
    use mkfs_alloc::layout::FsKind::{Exfat, Fat12, Fat16, Fat32};
    let text = EXAMPLES.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = |fs, bytes| format_size(auto_cluster(fs, bytes));
    for (fs, limit) in [(Fat32, 8 * GIB), (Fat32, 16 * GIB), (Fat32, 32 * GIB)] {
        let phrase = format!("{} up to {}", at(fs, limit), format_size(limit));
        assert!(text.contains(&phrase), "{phrase:?} not in the help");
    }
    let fat32_above = format!("{} above; exFAT", at(Fat32, 32 * GIB + 1));
    let exfat_small = format!("exFAT {} up to 256 MiB", at(Exfat, 256 * MIB));
    let exfat_above = format!("{} above; FAT16/FAT12", at(Exfat, 256 * MIB + 1));
    let small = format!("FAT16/FAT12 {}.", at(Fat16, 64 * MIB));
    for phrase in [fat32_above, exfat_small, exfat_above, small] {
        assert!(text.contains(&phrase), "{phrase:?} not in the help");
    }
    assert_eq!(at(Fat12, MIB), at(Fat16, MIB));
}

/// The help names every command as a refused target name, and every
/// file system width, FAT12/16 and `probe`, `help` among them.
#[test]
fn help_names_the_refused_targets_and_every_width() {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let text = EXAMPLES.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = text.find("named like a command (").expect("the sentence");
    let sentence = &text[start..start + text[start..].find(")").expect("its end")];
    let mut names: Vec<&str> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect();
    names.push("help");
    for n in names {
        assert!(sentence.contains(n), "{n} not in {sentence:?}");
        assert!(SUBCOMMANDS.contains(&n), "{n} not in SUBCOMMANDS");
    }
    for c in cmd.get_subcommands() {
        assert!(SUBCOMMANDS.contains(&c.get_name()), "{}", c.get_name());
    }
    let about = cmd.get_about().expect("an about").to_string();
    for fs in ["exFAT", "FAT12", "FAT16", "FAT32"] {
        assert!(about.contains(fs), "{fs} not in {about:?}");
    }
}

#[test]
fn json_before_a_command_is_the_commands() {
    let lift = |args: &[&str]| {
        let raw = std::iter::once("mkfs-alloc")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        let (out, json) = lift_json(raw);
        let out: Vec<String> = out[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        (out.join(" "), json)
    };
    assert_eq!(
        lift(&["--json", "info", "x"]),
        ("info --json x".into(), true)
    );
    assert_eq!(
        lift(&["--json", "--json", "list"]),
        ("list --json".into(), true)
    );
    assert_eq!(
        lift(&["info", "x", "--json"]),
        ("info --json x".into(), true)
    );
    assert_eq!(
        lift(&["--json", "help", "info"]),
        ("help info".into(), true)
    );
    assert_eq!(
        lift(&["completions", "bash", "--json"]),
        ("completions bash".into(), true)
    );
    // A format, and what follows `--`, are left alone.
    assert_eq!(lift(&["--json", "a.img"]), ("--json a.img".into(), true));
    assert_eq!(
        lift(&["--size", "1M", "--", "--json"]),
        ("--size 1M -- --json".into(), false)
    );
    assert_eq!(lift(&["info", "x"]), ("info x".into(), false));
}

#[test]
fn cli_is_well_formed() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}
