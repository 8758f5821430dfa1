//! Puts `memory.x` where the linker finds it and links with cortex-m-rt's
//! `link.x` (so no `.cargo/config.toml` is needed: `cargo xtask embedded`
//! builds from the workspace root).

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("memory.x"), include_bytes!("memory.x")).expect("write memory.x");
    // cortex-m-rt's `device` feature includes the device's interrupt
    // names; this firmware handles none.
    std::fs::write(out.join("device.x"), b"").expect("write device.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("TARGET").is_ok_and(|t| t.starts_with("thumb")) {
        println!("cargo:rustc-link-arg=-Tlink.x");
        // Identical code folding: one copy of functions that compile alike.
        println!("cargo:rustc-link-arg=--icf=all");
    }
}
