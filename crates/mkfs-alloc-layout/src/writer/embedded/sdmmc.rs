//! The adapter for `embedded_sdmmc::BlockDevice` (embedded-sdmmc 0.10: the
//! trait of its `embedded-sdmmc-types` crate, which it re-exports): an SD
//! card driver's device formatted through one `Block` of the caller's,
//! which is the sector buffer (no copy, nothing else allocated).

use embedded_sdmmc_types::{Block, BlockDevice, BlockIdx};

use super::{plan_medium, write_medium, Error, Formatted, SectorTarget, Table};
use crate::options::FormatOptions;

/// Formats the card behind `dev` (512-byte blocks, as embedded-sdmmc's)
/// with `opts`, through `block`: every check first, then the writes. See
/// [`format`](super::format) for the options firmware must give.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use embedded_sdmmc_types::{Block, BlockCount, BlockDevice, BlockIdx};
/// use mkfs_alloc_layout::embedded::{format_sdmmc, Table};
/// use mkfs_alloc_layout::{FormatOptions, FsKind, Timestamp};
/// # use core::cell::RefCell;
/// # #[derive(Debug)] struct E;
/// # impl core::fmt::Display for E { fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result { f.write_str("e") } }
/// # impl core::error::Error for E {}
/// # struct Card(RefCell<Vec<u8>>);
/// # impl BlockDevice for Card {
/// #     type Error = E;
/// #     fn read(&self, _: &mut [Block], _: BlockIdx) -> Result<(), E> { Ok(()) }
/// #     fn write(&self, b: &[Block], at: BlockIdx) -> Result<(), E> {
/// #         let mut d = self.0.borrow_mut();
/// #         for (i, b) in b.iter().enumerate() { let o = (at.0 as usize + i) * 512; d[o..o + 512].copy_from_slice(&b.contents); }
/// #         Ok(())
/// #     }
/// #     fn num_blocks(&self) -> Result<BlockCount, E> { Ok(BlockCount((self.0.borrow().len() / 512) as u32)) }
/// # }
/// # let card = Card(RefCell::new(vec![0; 64 << 20]));
/// // `card` is your SD card: embedded_sdmmc::SdCard, or any BlockDevice.
/// let mut block = Block::new();
/// let opts = FormatOptions::new()
///     .fs(FsKind::Fat32)
///     .label("CARD")
///     .pinned(0x1234_ABCD, Timestamp { secs: 1_700_000_000, nanos: 0 });
/// let done = format_sdmmc(&card, &mut block, &opts, Table::Mbr)?;
/// # assert_eq!(done.fs, FsKind::Fat32);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// As [`format`](super::format): [`Error::Plan`] and [`Error::Table`]
/// before any write, [`Error::Device`] from the card.
pub fn format_sdmmc<D: BlockDevice>(
    dev: &D,
    block: &mut Block,
    opts: &FormatOptions,
    table: Table,
) -> Result<Formatted, Error<D::Error>> {
    let blocks = dev.num_blocks().map_err(Error::Device)?.0;
    let medium = plan_medium(opts, table, Block::LEN_U32, u64::from(blocks))?;
    write_medium(&medium, &mut Card { dev, block }).map_err(Error::Device)
}

/// A card and the caller's block.
struct Card<'a, D> {
    dev: &'a D,
    block: &'a mut Block,
}

impl<D: BlockDevice> SectorTarget for Card<'_, D> {
    type Error = D::Error;
    fn buf(&mut self) -> &mut [u8] {
        &mut self.block.contents
    }
    fn write(&mut self, lba: u64) -> Result<(), D::Error> {
        // plan_medium keeps the medium within the card's blocks (a u32
        // count); saturated, an index past any card's end, which it refuses.
        let idx = BlockIdx(u32::try_from(lba).unwrap_or(u32::MAX));
        self.dev.write(core::slice::from_ref(self.block), idx)
    }
    fn flush(&mut self) -> Result<(), D::Error> {
        // embedded-sdmmc writes through: a write returns when the card has it.
        Ok(())
    }
}
