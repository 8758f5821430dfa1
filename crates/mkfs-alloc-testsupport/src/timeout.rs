//! A deadline for code that could hang (parsers of corrupt media).

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

/// Runs `f` in a thread and returns its result; panics if it takes longer
/// than `secs` seconds (a hang) or panics itself.
#[track_caller]
pub fn with_timeout<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("took longer than {secs} s: a hang"),
        Err(e) => panic!("the code under test panicked: {e}"),
    }
}
