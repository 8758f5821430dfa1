//! The up-case table: the one mkfs.exfat writes, extracted from its image,
//! equals ours byte for byte (in our image and from the library).

use mkfs_alloc_ondisk::exfat::upcase::{compressed_table, UPCASE_TABLE_CHECKSUM, UPCASE_TABLE_LEN};
use mkfs_alloc_tests::boot::exfat_upcase_table;
use mkfs_alloc_tests::{
    exfat_checksum, format_image, require_tool, run, sparse_file, FormatArgs, TempDir, MIB,
};
use std::path::Path;

#[test]
#[ignore = "tool tier: cargo xtask test"]
fn same_table_as_mkfs_exfat() {
    let tmp = TempDir::new("upcase");
    let reference = tmp.join("ref.img");
    sparse_file(&reference, 64 * MIB);
    // Reference: truncate -s 64M ref.img && mkfs.exfat ref.img
    run(require_tool("mkfs.exfat"), &[&reference as &Path]).assert_success();
    let (theirs, their_sum) = exfat_upcase_table(&reference, 0);
    assert_eq!(theirs.len(), UPCASE_TABLE_LEN);
    assert_eq!(their_sum, UPCASE_TABLE_CHECKSUM);
    assert_eq!(exfat_checksum(&theirs), their_sum);

    let lib = compressed_table();
    if let Some(at) = lib.iter().zip(&theirs).position(|(a, b)| a != b) {
        panic!(
            "library table differs from mkfs.exfat's at byte {at} (u16 index {})",
            at / 2
        );
    }
    assert_eq!(lib, theirs);

    for (cluster, sector) in [(4096, 512), (512, 512), (32 * 1024, 4096)] {
        let mine = tmp.join(&format!("ours-{cluster}-{sector}.img"));
        format_image(&mine, &FormatArgs::new("exfat", cluster, sector, 64 * MIB));
        let (ours, our_sum) = exfat_upcase_table(&mine, 0);
        assert!(
            ours == theirs,
            "the table in our image differs ({cluster}-byte clusters)"
        );
        assert_eq!(our_sum, UPCASE_TABLE_CHECKSUM);
    }
}
