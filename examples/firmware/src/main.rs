//! Formats disks from a Cortex-M3 (QEMU `lm3s6965evb`): each disk is a host
//! file reached through semihosting, one sector at a time, through a
//! 512-byte sector buffer in static RAM. At the end it reports its peak
//! stack (the untouched part of the stack cortex-m-rt painted) and exits
//! 0, or non-zero naming what failed.
//!
//! Printed lines (read by `cargo xtask embedded`):
//! `firmware: image NAME ok|FAILED`, `firmware: stack_peak_bytes=N`,
//! `firmware: sector_buffer_bytes=N`, `firmware: done`.

#![no_std]
#![no_main]

mod disk;
mod semihosting;

use core::panic::PanicInfo;
use cortex_m_rt::{entry, exception, ExceptionFrame};
use disk::HostDisk;
use embedded_sdmmc::Block;
use mkfs_alloc_layout::embedded::{format_sdmmc, Table};
use mkfs_alloc_layout::{FormatOptions, FsKind, Timestamp};
use semihosting::{exit, print};

/// Sector size of every disk here (SD cards: 512 bytes).
const SECTOR: usize = 512;

/// The one sector buffer (static, so it is counted apart from the stack).
static mut SECTOR_BUFFER: Block = Block {
    contents: [0; SECTOR],
};

/// The serial and the time every image is pinned to (the harness gives the
/// CLI `--serial 1234ABCD` and `SOURCE_DATE_EPOCH=1700000000`).
const SERIAL: u32 = 0x1234_ABCD;
const TIME: Timestamp = Timestamp {
    secs: 1_700_000_000,
    nanos: 0,
};

/// A disk to format: the host file (NUL-terminated; the harness creates it
/// with the size of the "card") and the options, the CLI's in the comment.
struct Job {
    name: &'static [u8],
    fs: FsKind,
    table: Table,
    /// FatFs's `n_fat` and `n_root` (`None`: the defaults, 2 and 512).
    fats: Option<u8>,
    root_entries: Option<u32>,
}

/// The disks, in the harness's order (`xtask/src/embedded/mod.rs`, `JOBS`).
const JOBS: &[Job] = &[
    // --fs exfat --table mbr --label CARD
    Job {
        name: b"exfat-mbr.img\0",
        fs: FsKind::Exfat,
        table: Table::Mbr,
        fats: None,
        root_entries: None,
    },
    // --fs fat32 --table mbr --label CARD
    Job {
        name: b"fat32-mbr.img\0",
        fs: FsKind::Fat32,
        table: Table::Mbr,
        fats: None,
        root_entries: None,
    },
    // --fs fat16 --table none --fats 1 --root-entries 256 --label CARD
    // (FatFs: FM_FAT | FM_SFD, n_fat 1, n_root 256)
    Job {
        name: b"fat16-sfd.img\0",
        fs: FsKind::Fat16,
        table: Table::None,
        fats: Some(1),
        root_entries: Some(256),
    },
];

#[entry]
fn main() -> ! {
    // SAFETY: `main` runs once and is the only user of the buffer.
    let buf: &'static mut Block = unsafe { &mut *core::ptr::addr_of_mut!(SECTOR_BUFFER) };
    let mut failed = 0;
    for job in JOBS {
        let ok = format_job(job, buf);
        line(&[
            b"firmware: image ",
            strip(job.name),
            if ok { b" ok" } else { b" FAILED" },
        ]);
        if !ok {
            failed += 1;
        }
    }
    let mut digits = [0u8; 10];
    line(&[
        b"firmware: stack_peak_bytes=",
        decimal(stack_peak(), &mut digits),
    ]);
    line(&[
        b"firmware: sector_buffer_bytes=",
        decimal(SECTOR as u32, &mut digits),
    ]);
    line(&[b"firmware: done"]);
    exit(failed)
}

/// Formats one disk: the embedded-sdmmc user's few lines.
fn format_job(job: &Job, block: &mut Block) -> bool {
    let Some(card) = HostDisk::open(job.name) else {
        return false;
    };
    // The counts first: their setters check them, before anything is written.
    let opts = match job.root_entries {
        Some(n) => FormatOptions::new().root_entries(n),
        None => Ok(FormatOptions::new()),
    }
    .and_then(|o| match job.fats {
        Some(n) => o.fats(n),
        None => Ok(o),
    });
    let Ok(opts) = opts else {
        return false;
    };
    let opts = opts.fs(job.fs).label("CARD").pinned(SERIAL, TIME);
    format_sdmmc(&card, block, &opts, job.table).is_ok()
}

/// Bytes of the stack ever used: from the stack's top down to the lowest
/// word that no longer holds cortex-m-rt's paint (0xCCCC_CCCC).
fn stack_peak() -> u32 {
    extern "C" {
        static _stack_start: u32;
        static _stack_end: u32;
    }
    // The linker script defines both symbols; only their addresses are used.
    let top = core::ptr::addr_of!(_stack_start) as usize;
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    let mut at = bottom;
    // SAFETY: every word in [bottom, top) is RAM that cortex-m-rt painted;
    // the loop stops below the current stack pointer, which is in use.
    while at < top && unsafe { core::ptr::read_volatile(at as *const u32) } == 0xCCCC_CCCC {
        at += 4;
    }
    (top - at) as u32
}

/// `name` without its NUL.
fn strip(name: &[u8]) -> &[u8] {
    &name[..name.len() - 1]
}

/// Prints the concatenation of `parts` as one line.
fn line(parts: &[&[u8]]) {
    let mut text = [0u8; 80];
    let mut n = 0;
    for part in parts {
        let take = part.len().min(text.len() - 2 - n);
        text[n..n + take].copy_from_slice(&part[..take]);
        n += take;
    }
    text[n] = b'\n';
    print(&text[..=n + 1]);
}

/// `value` in decimal, in `digits`.
fn decimal(mut value: u32, digits: &mut [u8; 10]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &digits[at..];
        }
    }
}

extern "C" {
    /// cortex-m-rt's handler of unexpected exceptions and interrupts.
    fn DefaultHandler();
}

/// The LM3S6965's interrupt vectors: none is enabled, so one entry (the
/// linker script wants the table not empty) instead of the generic 240
/// (cortex-m-rt's `device` feature lets the firmware say so).
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
static __INTERRUPTS: [unsafe extern "C" fn(); 1] = [DefaultHandler];

#[exception]
unsafe fn HardFault(_frame: &ExceptionFrame) -> ! {
    print(b"firmware: hard fault\n\0");
    exit(101)
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    // No message: formatting it would link core::fmt into the measured size.
    print(b"firmware: panic\n\0");
    exit(102)
}
