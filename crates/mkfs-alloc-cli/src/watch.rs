//! Whether a format has begun to write (`mkfs_alloc::blockio::WriteWatch`
//! tells): a failure before the first write is a refusal (exit 2, the
//! target as it was), one after it an I/O failure (exit 1).

use crate::target::Target;
use crate::{usage, Failure};
use anyhow::anyhow;

/// A failure of a run on an opened target: before the first write
/// (`wrote` false) it is a refusal (exit 2) and a grown image gets its old
/// length back; after it, it stays what it was.
pub fn settle(failure: Failure, wrote: bool, target: &Target) -> Failure {
    if wrote {
        return failure;
    }
    if let (Err(e), Some(len)) = (target.shrink_back(), target.len_before()) {
        return Failure::Io(anyhow!(
            "{}; the image was grown but nothing was written, and shrinking it back to {len} bytes failed: {e}",
            crate::text::error_text(failure.error())
        ));
    }
    match failure {
        Failure::Io(e) => usage(anyhow!(
            "{}; nothing was written",
            crate::text::error_text(&e)
        )),
        f => f,
    }
}
