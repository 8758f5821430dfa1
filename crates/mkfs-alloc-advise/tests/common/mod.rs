//! Helpers shared by the advise crate's integration tests.

use std::fs;
use std::path::PathBuf;

/// A scratch directory, `mkfs-alloc-advise-{test}-{pid}-{name}` under the
/// temporary directory (`{test}`: the test target, `scan` or `reality`),
/// emptied on creation and removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "mkfs-alloc-advise-{}-{}-{name}",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
