//! U-Boot in QEMU, driven over its serial console: boot to the `=>`
//! prompt (autoboot interrupted by a key), one command at a time, each
//! followed by `echo @@rc=$?` so that its end and exit status are known
//! without sleeping. The console is read as Latin-1 (U-Boot prints bytes)
//! and copied to a transcript file.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::cases::{Bus, Case};

/// Longest wait for the prompt after QEMU starts.
const BOOT_LIMIT: Duration = Duration::from_secs(120);
/// Longest wait for one command.
pub(super) const COMMAND_LIMIT: Duration = Duration::from_secs(300);
/// The marker appended to every command (the echoed command line holds
/// `$?`, the output a number: only the output matches).
const MARKER: &str = "@@rc=";

/// What a command printed (the echoed command line left out) and its exit
/// status.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) text: String,
    pub(super) rc: u32,
}

/// A running U-Boot.
pub(super) struct Console {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Vec<u8>>,
    buf: String,
    transcript: File,
    /// The banner line (`U-Boot 2023.01+dfsg-2+deb12u3 (...)`).
    pub(super) banner: String,
}

impl Console {
    /// Starts QEMU with U-Boot and the image as the case's disk, and waits
    /// for the prompt.
    pub(super) fn boot(case: &Case, image: &Path, transcript: &Path) -> Result<Console, String> {
        let (program, machine) = case.arch.qemu();
        let bs = case.sector;
        let device = match case.bus {
            Bus::Virtio => "virtio-blk-device,drive=d0".to_string(),
            Bus::Nvme => "nvme,drive=d0,serial=uboot0".to_string(),
        };
        let mut cmd = Command::new(program);
        cmd.args(machine)
            .args(["-accel", "tcg", "-m", "512", "-smp", "1"])
            .args(["-nodefaults", "-no-user-config", "-display", "none"])
            .args(["-serial", "stdio", "-no-reboot", "-bios"])
            .arg(case.arch.firmware())
            .arg("-drive")
            .arg(format!(
                "file={},format=raw,if=none,id=d0,cache=writeback",
                image.display()
            ))
            .arg("-device")
            .arg(format!(
                "{device},logical_block_size={bs},physical_block_size={bs}"
            ));
        let shown = format!("{cmd:?}").replace('"', "");
        let err = transcript.with_extension("qemu-err");
        let err_file = File::create(&err).map_err(|e| format!("{}: {e}", err.display()))?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err_file)
            .spawn()
            .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
        let (Some(stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("qemu without stdin/stdout pipes".into());
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 || tx.send(chunk[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let transcript =
            File::create(transcript).map_err(|e| format!("{}: {e}", transcript.display()))?;
        let mut console = Console {
            child,
            stdin,
            rx,
            buf: String::new(),
            transcript,
            banner: String::new(),
        };
        console.log(&format!("+ {shown}\n"));
        console.wait_for_prompt()?;
        console.banner = console
            .buf
            .lines()
            .find(|l| l.starts_with("U-Boot "))
            .unwrap_or("")
            .trim()
            .to_string();
        console.buf.clear();
        Ok(console)
    }

    fn log(&mut self, text: &str) {
        // Latin-1 back to the bytes U-Boot sent.
        let bytes: Vec<u8> = text
            .chars()
            .map(|c| u8::try_from(c).unwrap_or(b'?'))
            .collect();
        let _ = self.transcript.write_all(&bytes);
    }

    /// Reads console output into `buf` until `done(buf)` or `limit`.
    fn read_until(&mut self, limit: Duration, done: impl Fn(&str) -> bool) -> Result<(), String> {
        let start = Instant::now();
        while !done(&self.buf) {
            let left = limit.saturating_sub(start.elapsed());
            match self.rx.recv_timeout(left) {
                Ok(bytes) => {
                    let text: String = bytes.iter().copied().map(char::from).collect();
                    self.log(&text);
                    self.buf.push_str(&text);
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no answer in {} s; the console ends with: {:?}",
                        limit.as_secs(),
                        tail(&self.buf)
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "QEMU exited; the console ends with: {:?}",
                        tail(&self.buf)
                    ))
                }
            }
        }
        Ok(())
    }

    /// Boot: a key stops autoboot (U-Boot reads and drops it), then the
    /// prompt.
    fn wait_for_prompt(&mut self) -> Result<(), String> {
        self.read_until(BOOT_LIMIT, |b| {
            b.contains("Hit any key to stop autoboot") || b.ends_with("\n=> ")
        })?;
        if !self.buf.ends_with("\n=> ") {
            self.send(" ")?;
            self.read_until(BOOT_LIMIT, |b| b.ends_with("\n=> "))?;
        }
        Ok(())
    }

    fn send(&mut self, text: &str) -> Result<(), String> {
        self.stdin
            .write_all(text.as_bytes())
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("writing to the console: {e}"))
    }

    /// Runs one command line and waits for its end.
    pub(super) fn run(&mut self, command: &str, limit: Duration) -> Result<Reply, String> {
        self.buf.clear();
        self.send(&format!("{command}; echo {MARKER}$?\n"))?;
        self.read_until(limit, |b| reply_end(b).is_some())?;
        let (at, rc) = reply_end(&self.buf).ok_or("lost the reply")?;
        // The first line is U-Boot's echo of what we typed.
        let text = self.buf[..at]
            .split_once('\n')
            .map_or("", |(_, rest)| rest)
            .replace('\r', "");
        Ok(Reply { text, rc })
    }

    /// `poweroff`, then waits for QEMU to exit (killed after 30 s).
    pub(super) fn poweroff(mut self) -> Result<(), String> {
        self.send("poweroff\n")?;
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if start.elapsed() > Duration::from_secs(30) => {
                    return Err("QEMU did not exit after poweroff (killed)".into())
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("waiting for QEMU: {e}")),
            }
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        // QEMU is ours: never leave it running (after poweroff it is gone).
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Where the output of a command ends (the marker's offset) and its exit
/// status, once the marker and the next prompt have arrived.
fn reply_end(buf: &str) -> Option<(usize, u32)> {
    let body = buf.strip_suffix("\n=> ")?;
    let at = body.rfind(MARKER)?;
    let rc = body[at + MARKER.len()..].trim().parse().ok()?;
    Some((at, rc))
}

/// The last few hundred characters of the console, for an error message.
fn tail(buf: &str) -> String {
    let chars: Vec<char> = buf.chars().collect();
    chars[chars.len().saturating_sub(300)..].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_ends_at_the_marker_and_the_prompt() {
        let echo = "fatls virtio 0:1 /; echo @@rc=$?\r\n";
        assert_eq!(reply_end(echo), None, "the echoed command is no reply");
        let out = format!("{echo}        6   hello.txt\r\n@@rc=0\r\n=> ");
        let (at, rc) = reply_end(&out).expect("a complete reply");
        assert_eq!(rc, 0);
        assert!(out[..at].ends_with("hello.txt\r\n"));
        assert_eq!(
            reply_end(&format!("{echo}@@rc=1\r\n")),
            None,
            "no prompt yet"
        );
        assert_eq!(
            reply_end(&format!("{echo}@@rc=1\r\n=> ")).map(|r| r.1),
            Some(1)
        );
    }
}
