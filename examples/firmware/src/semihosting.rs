//! The few ARM semihosting calls this firmware needs, by hand: `bkpt 0xAB`
//! with the operation in r0 and its parameter block in r1.
//!
//! Sources: Arm, "Semihosting for AArch32 and AArch64" (version 3.0):
//! SYS_OPEN 0x01, SYS_CLOSE 0x02, SYS_WRITE0 0x04, SYS_WRITE 0x05, SYS_READ 0x06,
//! SYS_SEEK 0x0A, SYS_FLEN 0x0C, SYS_EXIT_EXTENDED 0x20; QEMU implements
//! them with `-semihosting-config enable=on,target=native` (host files,
//! relative to QEMU's working directory; the exit code of QEMU).

use core::arch::asm;

const SYS_OPEN: u32 = 0x01;
const SYS_CLOSE: u32 = 0x02;
const SYS_WRITE0: u32 = 0x04;
const SYS_WRITE: u32 = 0x05;
const SYS_READ: u32 = 0x06;
const SYS_SEEK: u32 = 0x0A;
const SYS_FLEN: u32 = 0x0C;
const SYS_EXIT_EXTENDED: u32 = 0x20;
/// `ADP_Stopped_ApplicationExit`: with SYS_EXIT_EXTENDED, the subcode is
/// the exit status.
const ADP_STOPPED_APPLICATION_EXIT: u32 = 0x20026;
/// SYS_OPEN mode "r+b": an existing file, read and write, no truncation.
const MODE_READ_WRITE: u32 = 3;

/// One semihosting call; `block` is the operation's parameter block.
fn call(op: u32, block: *const u32) -> i32 {
    let result: i32;
    // SAFETY: `bkpt 0xAB` traps to the debugger (QEMU), which reads the
    // parameter block at `block` and, for reads, writes the buffer it names;
    // both stay alive for the call. It touches no register but r0.
    unsafe {
        asm!("bkpt #0xab", inout("r0") op => result, in("r1") block, options(nostack));
    }
    result
}

/// Prints a NUL-terminated line on the host's standard output.
pub fn print(text: &[u8]) {
    debug_assert!(text.last() == Some(&0));
    call(SYS_WRITE0, text.as_ptr().cast());
}

/// Ends the program; QEMU exits with `status`.
pub fn exit(status: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, status];
    call(SYS_EXIT_EXTENDED, block.as_ptr());
    // Not reached under QEMU; a debugger that ignores the call stops here.
    loop {
        core::hint::spin_loop();
    }
}

/// An open host file.
pub struct File(u32);

impl File {
    /// Opens an existing host file for reading and writing; `name` is
    /// NUL-terminated.
    pub fn open(name: &[u8]) -> Option<File> {
        let block = [name.as_ptr() as u32, MODE_READ_WRITE, name.len() as u32 - 1];
        let handle = call(SYS_OPEN, block.as_ptr());
        (handle >= 0).then_some(File(handle as u32))
    }

    /// The file's length in bytes.
    pub fn len(&self) -> Option<u32> {
        let block = [self.0];
        let n = call(SYS_FLEN, block.as_ptr());
        (n >= 0).then_some(n as u32)
    }

    /// Reads all of `data` from byte `offset`.
    pub fn read_at(&self, offset: u32, data: &mut [u8]) -> bool {
        let seek = [self.0, offset];
        if call(SYS_SEEK, seek.as_ptr()) != 0 {
            return false;
        }
        let block = [self.0, data.as_mut_ptr() as u32, data.len() as u32];
        // The result is the number of bytes NOT read.
        call(SYS_READ, block.as_ptr()) == 0
    }

    /// Writes all of `data` at byte `offset`.
    pub fn write_at(&self, offset: u32, data: &[u8]) -> bool {
        let seek = [self.0, offset];
        if call(SYS_SEEK, seek.as_ptr()) != 0 {
            return false;
        }
        let block = [self.0, data.as_ptr() as u32, data.len() as u32];
        // The result is the number of bytes NOT written.
        call(SYS_WRITE, block.as_ptr()) == 0
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let block = [self.0];
        call(SYS_CLOSE, block.as_ptr());
    }
}
