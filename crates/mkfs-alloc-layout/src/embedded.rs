//! Formatting without std and without an allocator (firmware).
