//! `image_from_dir DIR OUT.img`: the image `mkfs-alloc --rootdir DIR --size auto
//! --cluster auto OUT.img` makes (the same size, file system and cluster size).

use mkfs_alloc::populate::{scan_result, TimePolicy, Tree};
use mkfs_alloc::{blockio::ImageFile, MediumOptions, DEFAULT_SLACK_PERCENT};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: image_from_dir DIR OUT.img";
    let (dir, out) = (args.next().ok_or(usage)?, args.next().ok_or(usage)?);
    let tree = Tree::from_dir(dir)?; // the one reading of the folder
    let data = scan_result(&tree); // the choices are made from this, reading nothing
    let size = MediumOptions::new().size_for(&data, 512, DEFAULT_SLACK_PERCENT)?;
    let mut image = ImageFile::create(out, size, 512)?; // sparse
    let plan = MediumOptions::new().plan_for(&image)?.fit_cluster(&data)?;
    let mut plan = plan.populate(tree, TimePolicy::default())?;
    plan.format(&mut image)?;
    Ok(())
}
