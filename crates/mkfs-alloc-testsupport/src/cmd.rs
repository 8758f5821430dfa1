//! Running commands and keeping what they printed.

use std::ffi::OsStr;
use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

/// What a finished command printed and how it exited.
#[derive(Debug, Clone)]
pub struct CmdOutput {
    /// The command line, for messages.
    pub command: String,
    /// Exit code; `None` if a signal ended the process.
    pub code: Option<i32>,
    /// Standard output (lossy UTF-8).
    pub stdout: String,
    /// Standard error (lossy UTF-8).
    pub stderr: String,
    /// Standard output as bytes.
    pub stdout_bytes: Vec<u8>,
}

impl CmdOutput {
    /// What a finished [`Command`] returned, under the name `command`.
    pub fn from_output(command: String, out: std::process::Output) -> CmdOutput {
        CmdOutput {
            command,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            stdout_bytes: out.stdout,
        }
    }

    /// True when the command exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Panics, showing the whole output, unless the command exited with 0.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(self.success(), "command failed:\n{self}");
        self
    }

    /// Panics, showing the whole output, unless the command exited with `code`.
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit code:\n{self}");
        self
    }

    /// Non-empty lines of stdout and stderr together.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.stdout
            .lines()
            .chain(self.stderr.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
    }
}

impl fmt::Display for CmdOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "$ {}", self.command)?;
        match self.code {
            Some(c) => writeln!(f, "exit code {c}")?,
            None => writeln!(f, "killed by a signal")?,
        }
        writeln!(f, "--- stdout ---\n{}", self.stdout.trim_end())?;
        write!(f, "--- stderr ---\n{}", self.stderr.trim_end())
    }
}

/// Quotes one argument for display when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Runs `program` with `args` and waits; stdin is empty. Panics only if the
/// program cannot be started at all.
#[track_caller]
pub fn run<S: AsRef<OsStr>>(program: impl AsRef<Path>, args: &[S]) -> CmdOutput {
    run_env(program, args, &[])
}

/// Runs the external tool `name` (found with
/// [`require_tool`](crate::tools::require_tool), so a missing tool fails
/// naming its package) with `args`.
#[track_caller]
pub fn tool<S: AsRef<OsStr>>(name: &str, args: &[S]) -> CmdOutput {
    run(crate::tools::require_tool(name), args)
}

/// Runs the tool `name` like [`tool`], panics with the whole output unless
/// it exits with 0, and returns its stdout.
#[track_caller]
pub fn tool_ok<S: AsRef<OsStr>>(name: &str, args: &[S]) -> String {
    let out = tool(name, args);
    out.assert_success();
    out.stdout
}

/// Runs the tool `name` with `input` on its stdin; panics unless it exits
/// with 0 and returns its stdout.
#[track_caller]
pub fn tool_stdin<S: AsRef<OsStr>>(name: &str, args: &[S], input: &str) -> String {
    use std::io::Write;
    let program = crate::tools::require_tool(name);
    let command = command_line(&program, args, &[]);
    let mut child = Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `{command}`: {e}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .unwrap_or_else(|e| panic!("cannot write to `{command}`: {e}"));
    }
    let out = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("cannot wait for `{command}`: {e}"));
    let out = CmdOutput::from_output(command, out);
    out.assert_success();
    out.stdout
}

/// The command line as a shell would show it, for messages.
fn command_line<S: AsRef<OsStr>>(program: &Path, args: &[S], env: &[(&str, &str)]) -> String {
    let mut words = vec![shell_quote(&program.to_string_lossy())];
    words.extend(
        args.iter()
            .map(|a| shell_quote(&a.as_ref().to_string_lossy())),
    );
    let mut command = words.join(" ");
    for (k, v) in env.iter().rev() {
        command = format!("{k}={} {command}", shell_quote(v));
    }
    command
}

/// Like [`run`], with extra environment variables.
#[track_caller]
pub fn run_env<S: AsRef<OsStr>>(
    program: impl AsRef<Path>,
    args: &[S],
    env: &[(&str, &str)],
) -> CmdOutput {
    let program = program.as_ref();
    let command = command_line(program, args, env);
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{command}`: {e}"));
    CmdOutput::from_output(command, out)
}
