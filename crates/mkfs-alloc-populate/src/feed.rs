//! One reading of a tree's file data for several writers (a batch of
//! targets): [`FeedSource`] reads every file once, in the order every
//! [`Populated`](crate::plan::Populated) writes them, into a window of shared chunks; each target's
//! [`FeedReader`] takes them from there.
//!
//! ```text
//!  FeedSource::run (one thread) ──► [chunk][chunk][chunk]…  (at most `window` bytes)
//!       open, read, check each file      ▲        ▲
//!                            FeedReader 0 ┘        └ FeedReader 1 …  (a target's writer)
//! ```
//!
//! The order of the files is the tree's (directories in preorder, each
//! one's files by name), whatever the volume: targets of different sizes,
//! file systems or cluster sizes share one reading. Memory is the window
//! (shared) whatever the number of targets; the source waits for the
//! slowest reader still reading. A reader that is dropped (its target
//! failed) no longer holds the others back. A source file that cannot be
//! read, or that changes, fails every target that reads it (each gets the
//! error), as it fails a single format.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use mkfs_alloc_layout::WriteError;

use crate::source::{check_at_end, open_source, read_full};
use crate::tree::cursor::Cursor;
use crate::tree::Tree;
use crate::write::READ_CHUNK;

/// The default window: bytes of file data held for the readers.
pub const WINDOW: usize = 64 << 20;

/// One item of the stream.
#[derive(Debug)]
enum Item {
    /// Bytes of node `node`.
    Data { node: u32, bytes: Vec<u8> },
    /// Node `node` ended where planned and did not change.
    End { node: u32 },
    /// Reading node `node` failed: every reader gets this message.
    Failed { node: u32, message: String },
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<Arc<Item>>,
    /// Sequence number of `items[0]`.
    base: u64,
    /// Bytes of data in `items`.
    held: usize,
    /// The next item each reader takes; `None` once it is dropped.
    positions: Vec<Option<u64>>,
    /// The source stopped (after its last item).
    finished: bool,
    /// Bytes read from the source files.
    bytes_read: u64,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    window: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Drops the items every live reader has taken.
fn trim(s: &mut State) {
    let min = s.positions.iter().flatten().min().copied();
    let keep_from = min.unwrap_or(s.base + s.items.len() as u64);
    while s.base < keep_from {
        let Some(item) = s.items.pop_front() else {
            break;
        };
        if let Item::Data { bytes, .. } = item.as_ref() {
            s.held -= bytes.len();
        }
        s.base += 1;
    }
}

/// The one reading of a tree's files ([`FeedSource::run`]).
#[derive(Debug)]
pub struct FeedSource {
    shared: Arc<Shared>,
}

/// What one target's writer reads instead of the source files
/// ([`Populated::read_from`](crate::plan::Populated::read_from)); dropping it lets the others go on without it.
#[derive(Debug)]
pub struct FeedReader {
    shared: Arc<Shared>,
    id: usize,
}

/// A source for `readers` readers, holding at most `window` bytes of file
/// data (at least one chunk).
pub fn feed(readers: usize, window: usize) -> (FeedSource, Vec<FeedReader>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            positions: vec![Some(0); readers],
            ..State::default()
        }),
        changed: Condvar::new(),
        window: window.max(READ_CHUNK),
    });
    let list = (0..readers)
        .map(|id| FeedReader {
            shared: shared.clone(),
            id,
        })
        .collect();
    (FeedSource { shared }, list)
}

impl FeedSource {
    /// Bytes read from the source files so far.
    pub fn bytes_read(&self) -> u64 {
        self.shared.lock().bytes_read
    }

    /// Adds an item, waiting while the window is full; false when no
    /// reader is left.
    fn push(&self, item: Item) -> bool {
        let len = match &item {
            Item::Data { bytes, .. } => bytes.len(),
            _ => 0,
        };
        let mut s = self.shared.lock();
        loop {
            if s.positions.iter().all(Option::is_none) {
                return false;
            }
            if s.held + len <= self.shared.window || s.items.is_empty() {
                break;
            }
            s = self
                .shared
                .changed
                .wait(s)
                .unwrap_or_else(|p| p.into_inner());
        }
        s.held += len;
        s.bytes_read += len as u64;
        s.items.push_back(Arc::new(item));
        self.shared.changed.notify_all();
        true
    }

    /// Reads every file of `source` (a tree planned by
    /// [`plan_batch`](crate::batch::plan_batch)) once, in the order the writers
    /// take them, checking each as a single format does (the file the walk
    /// found, its planned size, unchanged while read). Returns when every
    /// file is read, when a file fails (the readers get its error), or
    /// when no reader is left.
    pub fn run(&self, source: &mut Tree) {
        let mut cursor = Cursor::new();
        let mut chunk = vec![0u8; READ_CHUNK];
        for k in source.file_order() {
            let size = source.nodes[k as usize].size;
            match read_file(source, k, size, &mut cursor, &mut chunk, self) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    let message = e.to_string();
                    self.push(Item::Failed { node: k, message });
                    break;
                }
            }
        }
        let mut s = self.shared.lock();
        s.finished = true;
        self.shared.changed.notify_all();
    }
}

/// Reads node `k` into the feed; false when no reader is left.
fn read_file(
    source: &mut Tree,
    k: u32,
    size: u64,
    cursor: &mut Cursor,
    chunk: &mut [u8],
    feed: &FeedSource,
) -> Result<bool, WriteError> {
    let mut opened = open_source(source, k, cursor)?;
    let tree = &*source;
    let path = || tree.display_path(k);
    let reader = opened.reader_at(0).map_err(|e| {
        crate::write::content_err(crate::write::SourceError::Io {
            path: path(),
            source: e,
        })
    })?;
    let mut done = 0u64;
    while done < size {
        let want = (size - done).min(chunk.len() as u64) as usize;
        read_full(reader, &mut chunk[..want], &path, size, done)?;
        if !feed.push(Item::Data {
            node: k,
            bytes: chunk[..want].to_vec(),
        }) {
            return Ok(false);
        }
        done += want as u64;
    }
    check_at_end(reader, &path, size)?;
    opened.check_unchanged(&path)?;
    Ok(feed.push(Item::End { node: k }))
}

impl FeedReader {
    /// The next item, waiting for the source.
    fn next(&mut self) -> Option<Arc<Item>> {
        let shared = self.shared.clone();
        let mut s = shared.lock();
        loop {
            let pos = s.positions.get(self.id).copied().flatten()?;
            if pos < s.base + s.items.len() as u64 {
                let item = s.items[(pos - s.base) as usize].clone();
                s.positions[self.id] = Some(pos + 1);
                trim(&mut s);
                shared.changed.notify_all();
                return Some(item);
            }
            if s.finished {
                return None;
            }
            s = shared.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The bytes of node `k`, the next file of the stream.
    pub(crate) fn file(&mut self, k: u32) -> FeedFile<'_> {
        FeedFile {
            reader: self,
            node: k,
            current: None,
            at: 0,
            ended: false,
        }
    }
}

impl Drop for FeedReader {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        if let Some(p) = s.positions.get_mut(self.id) {
            *p = None;
        }
        trim(&mut s);
        self.shared.changed.notify_all();
    }
}

/// One file's bytes from the feed, as a reader: it ends where the source
/// said the file ended.
pub(crate) struct FeedFile<'a> {
    reader: &'a mut FeedReader,
    node: u32,
    current: Option<Arc<Item>>,
    at: usize,
    ended: bool,
}

impl Read for FeedFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.ended || buf.is_empty() {
                return Ok(0);
            }
            if let Some(item) = &self.current {
                if let Item::Data { bytes, .. } = item.as_ref() {
                    if self.at < bytes.len() {
                        let n = (bytes.len() - self.at).min(buf.len());
                        buf[..n].copy_from_slice(&bytes[self.at..self.at + n]);
                        self.at += n;
                        return Ok(n);
                    }
                }
            }
            let item = self.reader.next().ok_or_else(|| {
                std::io::Error::other("the batch's reading of the tree stopped early")
            })?;
            match item.as_ref() {
                Item::Data { node, .. } if *node == self.node => {
                    self.current = Some(item.clone());
                    self.at = 0;
                }
                Item::End { node } if *node == self.node => self.ended = true,
                Item::Failed { node, message } if *node == self.node => {
                    return Err(std::io::Error::other(message.clone()));
                }
                Item::Failed { message, .. } => {
                    return Err(std::io::Error::other(message.clone()));
                }
                _ => {
                    return Err(std::io::Error::other(
                        "the batch's reading of the tree is out of step with this target",
                    ))
                }
            }
        }
    }
}
