//! The allow-lists of `tidy`: files that may break a rule for now, each with
//! its reason. They only shrink: an entry whose file is clean is a finding.

/// Files outside `mkfs-alloc-ondisk` that may decode bytes by position.
pub const BYTE_OFFSETS: &[(&str, &str)] = &[
    (
        "crates/mkfs-alloc-device/src/windows/mod.rs",
        "Windows IOCTL buffers (STORAGE_PROPERTY_QUERY, descriptors): the OS's structures, \
         not bytes of a medium",
    ),
    (
        "crates/mkfs-alloc-layout/src/plan/choices.rs",
        "the exFAT volume GUID drawn from the seeded generator (a value, not a decode)",
    ),
    (
        "crates/mkfs-alloc-partition/src/guid.rs",
        "a GUID value's byte order (RFC 4122 vs the mixed-endian on-disk form), not a decode \
         of a medium",
    ),
];

/// Library files whose strings may name a command-line flag.
pub const CLI_FLAGS: &[(&str, &str)] = &[];

/// Crates of [`super::NO_STD_CRATES`] not yet `no_std`, with the reason.
pub const NO_STD_PENDING: &[(&str, &str)] = &[];
