//! Generates the exFAT recommended up-case table from its rule
//! (`src/exfat/upcase_rule.rs`) and compresses it
//! (`src/exfat/upcase_compress.rs`) once at build time, into
//! `$OUT_DIR/upcase.bin`, which the library includes. Generating it at run
//! time cost every exFAT format about 0.6 ms of CPU (most of the format's
//! own computing, `perf record`).

extern crate alloc;

#[path = "src/exfat/upcase_compress.rs"]
#[allow(dead_code)]
mod compression;
#[path = "src/exfat/upcase_rule.rs"]
mod rule;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/exfat/upcase_rule.rs");
    println!("cargo:rerun-if-changed=src/exfat/upcase_compress.rs");
    let table = compression::compress(&rule::recommended_map());
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let path = PathBuf::from(out_dir).join("upcase.bin");
    if let Err(e) = std::fs::write(&path, &table) {
        panic!("cannot write {}: {e}", path.display());
    }
}
