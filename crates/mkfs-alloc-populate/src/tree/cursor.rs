//! The open directories on the way from a host root down to the directory
//! being read: how the walk and the copy reach a host directory without a
//! path that could be redirected.
//!
//! Every step down is an [`open_dir`] (no link followed) whose identity is
//! compared with the one the walk recorded: a directory swapped for a link,
//! moved, or replaced by another one is found at the step where it
//! happened. At most [`MAX_HELD`] descriptors stay open (the root and the
//! deepest ones): in a tree deeper than that, a directory whose descriptor
//! was closed is reopened from the deepest one still open, checked the same
//! way. The walk and the copy both visit directories depth first, so almost
//! every step is one level down from the last.

use super::sys::{is_link_error, open_dir, open_root, DirFd, HostId, Kind};
use super::Tree;
use std::ffi::OsStr;
use std::io;

/// Descriptors held open at most. Windows holds the whole chain (a path
/// there has at most 32,767 characters, so no chain is longer than this):
/// a directory handle held without `FILE_SHARE_DELETE` is what keeps its
/// path from being renamed or replaced.
pub(crate) const MAX_HELD: usize = if cfg!(windows) { 1 << 16 } else { 64 };

/// Why a host directory could not be reached.
#[derive(Debug)]
pub(crate) struct EnterError {
    /// The host directory at which it failed.
    pub(crate) hd: u32,
    /// `None`: it is no longer the directory the walk saw (a link now, or
    /// another directory); `Some`: the operating system's error.
    pub(crate) io: Option<io::Error>,
}

struct Level {
    hd: u32,
    dir: Option<DirFd>,
}

/// The chain of open directories from a root host directory.
#[derive(Default)]
pub(crate) struct Cursor {
    chain: Vec<Level>,
    held: usize,
}

impl Cursor {
    /// An empty cursor.
    pub(crate) fn new() -> Cursor {
        Cursor::default()
    }

    /// The open host directory `hd`, and its identity: as opened now, or as
    /// recorded (the walk records the first where it had none). Opens what
    /// is missing from the chain, checking each directory against its
    /// recorded identity.
    pub(crate) fn enter(
        &mut self,
        tree: &Tree,
        hd: u32,
    ) -> Result<(&DirFd, Option<HostId>), EnterError> {
        let here = self
            .chain
            .last()
            .is_some_and(|l| l.hd == hd && l.dir.is_some());
        let opened = if here {
            None
        } else {
            self.open_down(tree, hd)?
        };
        match self.chain.last().and_then(|l| l.dir.as_ref()) {
            Some(d) => Ok((d, opened.or_else(|| tree.host_dir_id(hd)))),
            None => Err(EnterError { hd, io: None }),
        }
    }

    /// Opens the chain down to `hd`; the identity of `hd` as opened.
    fn open_down(&mut self, tree: &Tree, hd: u32) -> Result<Option<HostId>, EnterError> {
        let path = tree.host_dir_chain(hd);
        let common = self
            .chain
            .iter()
            .zip(&path)
            .take_while(|(l, &h)| l.hd == h)
            .count();
        for l in self.chain.drain(common..) {
            self.held -= usize::from(l.dir.is_some());
        }
        let start = self
            .chain
            .iter()
            .rposition(|l| l.dir.is_some())
            .map_or(0, |i| i + 1);
        let mut id = None;
        for (i, &h) in path.iter().enumerate().skip(start) {
            let fail = |io| EnterError { hd: h, io };
            let opened = if i == 0 {
                open_root(tree.host_root_path(h))
            } else {
                let parent = self.chain[i - 1].dir.as_ref().ok_or_else(|| fail(None))?;
                open_dir(parent, OsStr::new(tree.host_dir_name(h)))
            };
            let (dir, facts) = opened.map_err(|e| {
                if i > 0 && is_link_error(&e) {
                    fail(None)
                } else {
                    fail(Some(e))
                }
            })?;
            let recorded = tree.host_dir_id(h);
            if facts.kind != Kind::Dir || (recorded.is_some() && facts.id != recorded) {
                return Err(fail(None));
            }
            id = facts.id;
            if i < self.chain.len() {
                self.chain[i].dir = Some(dir);
            } else {
                self.chain.push(Level {
                    hd: h,
                    dir: Some(dir),
                });
            }
            self.held += 1;
            self.evict();
        }
        Ok(id)
    }

    /// Closes the shallowest descriptors (the root's excepted) above [`MAX_HELD`].
    fn evict(&mut self) {
        while self.held > MAX_HELD {
            match self.chain.iter_mut().skip(1).find(|l| l.dir.is_some()) {
                Some(l) => {
                    l.dir = None;
                    self.held -= 1;
                }
                None => break,
            }
        }
    }

    /// Descriptors open now.
    #[cfg(all(test, unix))]
    pub(crate) fn held(&self) -> usize {
        self.held
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use mkfs_alloc_testsupport::TempDir;

    /// A chain deeper than [`MAX_HELD`]: never more descriptors than that,
    /// and every directory reached again from any other, in any order.
    #[test]
    fn deep_chains_stay_within_the_limit() {
        let tmp = TempDir::new("cursor-deep");
        let mut p = tmp.subdir("src");
        let depth = 150;
        for _ in 0..depth {
            p.push("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        let tree = Tree::from_dir(tmp.join("src")).unwrap();
        let n = tree.host_dirs.len() as u32;
        assert_eq!(n, depth + 1);
        let mut c = Cursor::new();
        let order: Vec<u32> = (0..n)
            .chain([0, n - 1, 3, n - 2, 1])
            .chain((0..n).rev())
            .collect();
        for hd in order {
            let (_, id) = c.enter(&tree, hd).unwrap();
            assert_eq!(id, tree.host_dir_id(hd), "host dir {hd}");
            assert!(c.held() <= MAX_HELD.min(n as usize), "{} held", c.held());
        }
    }
}
