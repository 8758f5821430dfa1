//! `mkfs-alloc completions SHELL` (clap_complete) and the hidden
//! `mkfs-alloc man DIR` that `cargo xtask man` runs (clap_mangen).

use crate::{usage, Failure};
use anyhow::anyhow;
use clap::{CommandFactory, ValueEnum};
use std::path::PathBuf;

/// A shell with a completion script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash: `source <(mkfs-alloc completions bash)`.
    Bash,
    /// zsh: a `_mkfs-alloc` file in a `$fpath` directory.
    Zsh,
    /// fish: `~/.config/fish/completions/mkfs-alloc.fish`.
    Fish,
    /// PowerShell: add to `$PROFILE`.
    Powershell,
}

/// Options of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Options of the hidden `man` command.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory to write `mkfs-alloc.1` and one page per subcommand into.
    pub dir: PathBuf,
}

/// Prints the completion script on stdout.
pub fn run(args: &CompletionsArgs) -> Result<(), Failure> {
    use clap_complete::shells;
    let mut cmd = crate::args::Cli::command();
    let name = cmd.get_name().to_string();
    let mut out = std::io::stdout();
    match args.shell {
        Shell::Bash => clap_complete::generate(shells::Bash, &mut cmd, name, &mut out),
        Shell::Zsh => clap_complete::generate(shells::Zsh, &mut cmd, name, &mut out),
        Shell::Fish => clap_complete::generate(shells::Fish, &mut cmd, name, &mut out),
        Shell::Powershell => clap_complete::generate(shells::PowerShell, &mut cmd, name, &mut out),
    }
    Ok(())
}

/// Writes `mkfs-alloc.1` and `mkfs-alloc-SUBCOMMAND.1` into `args.dir`.
pub fn man(args: &ManArgs) -> Result<(), Failure> {
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| usage(anyhow!(e).context(format!("cannot create {}", args.dir.display()))))?;
    let cmd = crate::args::Cli::command();
    clap_mangen::generate_to(cmd, &args.dir).map_err(|e| {
        Failure::Io(anyhow!(e).context(format!("writing man pages into {}", args.dir.display())))
    })
}
