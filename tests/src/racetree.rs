//! A `--rootdir` source that changes under the format: `racetree.py`
//! (fusepy) serves `/a.txt` and `/dir/f.txt`; once the walk has opened
//! and closed the trigger file (it checks that it can be read), an entry
//! turns into a symbolic link to a secret outside the tree: between the
//! walk and the copy, every time.

use crate::fakestick::python_with_fusepy;
use crate::fuse::FuseMount;
use std::path::Path;

/// The bytes of both files in the tree.
pub const PUBLIC: &[u8] = b"public-inside-the-tree-abcdefghijk";

/// What turns into a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    /// `/dir` becomes a link to `OUTSIDE` (a directory holding `f.txt`)
    /// once `/dir/f.txt` was opened and closed.
    Dir,
    /// `/a.txt` becomes a link to `OUTSIDE/a.txt` once it was opened and
    /// closed.
    File,
}

/// Mounts the tree on `dir`; `outside` is the directory the link leads to.
#[track_caller]
pub fn race_tree(dir: &Path, swap: Swap, outside: &Path) -> FuseMount {
    let python = python_with_fusepy();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/racetree.py");
    let (trigger, entry, target) = match swap {
        Swap::Dir => ("/dir/f.txt", "/dir", outside.join("dir")),
        Swap::File => ("/a.txt", "/a.txt", outside.join("a.txt")),
    };
    let args = vec![
        script.to_string_lossy().into_owned(),
        dir.to_string_lossy().into_owned(),
        trigger.to_string(),
        entry.to_string(),
        target.to_string_lossy().into_owned(),
    ];
    FuseMount::spawn(&python, &args, dir)
}
