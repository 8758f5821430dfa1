use super::*;
use crate::blockio::{BlockIo, Fault, FaultyIo, MemDisk};
use crate::layout::{FsKind, Timestamp};
use crate::partition::TableKind;
use std::sync::Mutex as StdMutex;

const MIB: u64 = 1 << 20;

fn specs(mibs: &[u64]) -> Vec<TargetSpec> {
    mibs.iter()
        .enumerate()
        .map(|(i, m)| TargetSpec::new(format!("t{i}"), m * MIB, 512))
        .collect()
}

fn template() -> MediumOptions {
    MediumOptions::new()
        .fs(FsKind::Exfat)
        .cluster_size(4096)
        .table(TableKind::Gpt)
}

/// Random identities: every serial, volume GUID and table GUID differs,
/// even with a pinned time (SOURCE_DATE_EPOCH) in the template.
#[test]
fn random_identities_are_all_distinct() {
    let time = Timestamp {
        secs: 1_700_000_000,
        nanos: 0,
    };
    for t in [template(), template().pinned(7, time)] {
        let o = t
            .clone()
            .format(t.format_options().clone().volume_guid(true));
        let plan = Batch::new(o).plan(&specs(&[64; 40])).expect("plan");
        assert!(plan.shared_identifiers().is_empty());
        let serials: std::collections::BTreeSet<u32> = plan
            .plans()
            .map(|p| p.expect("planned").layout().serial())
            .collect();
        assert_eq!(serials.len(), 40);
    }
}

/// An exFAT volume GUID is named by its text (as the reports show it), not
/// as an array of bytes, among the identifiers a duplicate error names.
#[test]
fn the_volume_guid_is_named_as_text() {
    let o = template().pinned(
        7,
        Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        },
    );
    let o = o
        .clone()
        .format(o.format_options().clone().volume_guid(true));
    let plan = Batch::new(o).plan(&specs(&[64])).expect("plan");
    let p = plan.plans().next().expect("one").expect("planned");
    let ids = identifiers(p);
    let (_, text) = ids
        .iter()
        .find(|(what, _)| *what == "exFAT volume GUID")
        .expect("a volume GUID");
    let bytes = p.layout().volume_guid().expect("a volume GUID");
    assert_eq!(text.len(), 36, "{text}");
    assert_eq!(
        *text,
        crate::partition::Guid::from_mixed_endian(bytes).to_string()
    );
}

/// Numbers past `u64::MAX` stop there instead of wrapping to 0.
#[test]
fn label_numbers_do_not_wrap() {
    let mut b = Batch::new(template());
    b.label = Some("N{n}".parse().expect("template"));
    b.number_from = u64::MAX;
    let spec = &specs(&[64])[0];
    let label = |i| {
        b.options_for(i, spec)
            .format
            .label_text()
            .map(|l| l.to_string())
    };
    assert_eq!(label(0), label(1));
}

/// Each target is planned for its own size; numbered labels and serials.
#[test]
fn numbered_identities_and_own_sizes() {
    let mut b = Batch::new(template());
    b.label = Some("KIT{n:03}".parse().expect("template"));
    b.serial_from = Some(0x1000_0000);
    b.number_from = 9;
    let plan = b.plan(&specs(&[64, 65, 63])).expect("plan");
    let got: Vec<(u64, u32, String)> = plan
        .plans()
        .map(|p| {
            let p = p.expect("planned");
            let l = p.layout();
            (p.medium_bytes(), l.serial(), l.label().unwrap_or("").into())
        })
        .collect();
    assert_eq!(
        got,
        [
            (64 * MIB, 0x1000_0000, "KIT009".to_string()),
            (65 * MIB, 0x1000_0001, "KIT010".to_string()),
            (63 * MIB, 0x1000_0002, "KIT011".to_string()),
        ]
    );
    let mut o = b.clone();
    o.serial_from = Some(u32::MAX - 1);
    assert!(matches!(
        o.plan(&specs(&[64; 3])),
        Err(BatchError::SerialOverflow { .. })
    ));
}

/// A target that cannot be planned keeps its error; the others plan.
#[test]
fn a_target_too_small_fails_alone_in_planning() {
    let b = Batch::new(MediumOptions::new().fs(FsKind::Fat32));
    let plan = b.plan(&specs(&[64, 1, 64])).expect("plan");
    let ok: Vec<bool> = plan.plans().map(|p| p.is_ok()).collect();
    assert_eq!(ok, [true, false, true]);
}

/// A test target: a disk in memory, failing after `fail_after` writes.
struct Mem {
    disk: Option<MemDisk>,
    fail_after: Option<u64>,
    corrupt: bool,
    out: std::sync::Arc<StdMutex<Vec<(usize, MemDisk)>>>,
    index: usize,
}

impl BatchTarget for Mem {
    type Io = FaultyIo<MemDisk>;
    fn open(&mut self, _: &mut dyn FnMut(Stage, u64, u64)) -> Result<Self::Io, TargetError> {
        let disk = self.disk.take().expect("opened once");
        let fault = self.fail_after.map_or(Fault::Never, Fault::FailAfter);
        Ok(FaultyIo::new(disk, fault))
    }
    fn before_verify(&mut self, io: &mut Self::Io) -> Result<(), TargetError> {
        if self.corrupt {
            // The medium forgets a block of the FAT region after the flush.
            let fat = 1 << 20;
            let mut block = vec![0u8; 512];
            io.inner_mut().read_blocks(fat / 512 + 3, &mut block).ok();
            block[0] ^= 1;
            io.inner_mut().write_blocks(fat / 512 + 3, &block).ok();
        }
        Ok(())
    }
    fn finish(&mut self, io: &mut Self::Io) -> Vec<String> {
        let copy = MemDisk::new(512, io.num_blocks()).and_then(|mut d| {
            d.write_blocks(0, io.inner_mut().as_bytes())?;
            Ok(d)
        });
        if let (Ok(d), Ok(mut out)) = (copy, self.out.lock()) {
            out.push((self.index, d));
        }
        vec!["finished".into()]
    }
}

/// Four targets, two jobs: one fails part-way, one reads back wrong; the
/// other two finish, verified.
#[test]
fn one_failing_target_fails_alone() {
    let mibs = [64, 66, 62, 64];
    let mut plan = Batch::new(template()).plan(&specs(&mibs)).expect("plan");
    let out = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let targets: Vec<Mem> = mibs
        .iter()
        .enumerate()
        .map(|(i, m)| Mem {
            disk: Some(MemDisk::filled(512, m * MIB / 512, 0xEE).expect("disk")),
            fail_after: (i == 1).then_some(5),
            corrupt: i == 2,
            out: out.clone(),
            index: i,
        })
        .collect();
    let seen = StdMutex::new(Vec::new());
    let outcomes = plan
        .run(
            targets,
            &RunOptions {
                jobs: 2,
                verify: true,
            },
            &|e| {
                if let (Stage::Done(v), Ok(mut s)) = (e.stage, seen.lock()) {
                    s.push((e.index, v));
                }
            },
        )
        .outcomes;
    let verdicts: Vec<Verdict> = outcomes.iter().map(|o| o.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Ok,
            Verdict::Failed,
            Verdict::VerifyFailed,
            Verdict::Ok
        ]
    );
    assert_eq!(seen.lock().map(|s| s.len()).unwrap_or(0), 4);
    for o in &outcomes {
        if o.verdict == Verdict::Ok {
            let v = o.verify.expect("verified");
            assert_eq!((v.mismatches, v.unverifiable_bytes), (0, 0), "{v:?}");
            assert!(
                v.bytes_verified > 0 && v.bytes_read >= v.bytes_verified,
                "{v:?}"
            );
            assert_eq!(o.notes, ["finished"]);
        }
    }
    assert!(outcomes[1].error.as_ref().is_some_and(|e| e.wrote));
    // The good ones hold an exFAT volume of their own size.
    for (i, d) in out.lock().expect("lock").iter() {
        if [0, 3].contains(i) {
            assert_eq!(
                &d.as_bytes()[MIB as usize + 3..MIB as usize + 11],
                b"EXFAT   "
            );
        }
    }
}

fn mem_targets(mibs: &[u64], out: &std::sync::Arc<StdMutex<Vec<(usize, MemDisk)>>>) -> Vec<Mem> {
    mibs.iter()
        .enumerate()
        .map(|(i, m)| Mem {
            disk: Some(MemDisk::filled(512, m * MIB / 512, 0xEE).expect("disk")),
            fail_after: None,
            corrupt: false,
            out: out.clone(),
            index: i,
        })
        .collect()
}

/// A tree in memory: `count` files of `len` bytes, each a pattern of its own.
fn tree(count: usize, len: usize) -> (crate::populate::Tree, Vec<Vec<u8>>) {
    let mut t = crate::populate::Tree::new();
    let mut datas = Vec::new();
    for i in 0..count {
        let data: Vec<u8> = (0..len).map(|j| (j * 7 + i * 13) as u8 | 1).collect();
        let mtime = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        t.add_file(
            &format!("/d{}/f{i}.bin", i % 3),
            std::io::Cursor::new(data.clone()),
            len as u64,
            mtime,
        )
        .expect("add");
        datas.push(data);
    }
    (t, datas)
}

/// The tree is planned once for sticks that differ by megabytes, read
/// once, and every target holds every file; a target too small for it is
/// refused alone.
#[test]
fn one_reading_of_the_tree_fills_every_target() {
    let mibs = [96, 97, 95, 96, 48];
    let mut plan = Batch::new(template()).plan(&specs(&mibs)).expect("plan");
    let (t, datas) = tree(12, 5 << 20); // 60 MiB: too much for 48 MiB
    assert_eq!(plan.populate(t, Default::default()), 1);
    assert!(plan.populated(4).is_none());
    assert!(plan.plans().nth(4).is_some_and(|p| p.is_err()));
    plan.set_window(4 << 20);
    let out = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let opts = RunOptions::new().verify(true);
    let report = plan.run(mem_targets(&mibs, &out), &opts, &|_| {});
    let verdicts: Vec<Verdict> = report.outcomes.iter().map(|o| o.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Ok,
            Verdict::Ok,
            Verdict::Ok,
            Verdict::Ok,
            Verdict::Refused
        ]
    );
    assert_eq!(report.source_passes, 1);
    assert_eq!(report.source_bytes_read, 12 * (5 << 20));
    for o in &report.outcomes[..4] {
        let v = o.verify.expect("verified");
        assert_eq!((v.mismatches, v.unverifiable_bytes), (0, 0));
        assert!(v.bytes_verified > 60 << 20, "{v:?}");
    }
    for (i, d) in out.lock().expect("lock").iter() {
        let bytes = d.as_bytes();
        for data in &datas {
            let probe = &data[..4096];
            assert!(
                bytes.windows(4096).step_by(512).any(|w| w == probe),
                "target {i} lacks a file"
            );
        }
    }
}

/// With fewer jobs than targets, each wave reads the tree once.
#[test]
fn jobs_make_waves_each_reading_the_tree_once() {
    let mibs = [64, 64, 65];
    let mut plan = Batch::new(template()).plan(&specs(&mibs)).expect("plan");
    // Host files: each wave opens them again (a reader given in memory
    // is read once, so only one wave could have it).
    let host = tempdir_tree();
    let tree = crate::populate::Tree::from_dir(host.path()).expect("walk");
    plan.populate(tree, Default::default());
    let out = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let opts = RunOptions::new().jobs(2);
    let report = plan.run(mem_targets(&mibs, &out), &opts, &|_| {});
    assert!(report.outcomes.iter().all(|o| o.verdict == Verdict::Ok));
    assert_eq!(report.source_passes, 2);
    assert_eq!(report.source_bytes_read, 2 * 3 * (1 << 20));
}

struct TempTree(std::path::PathBuf);

impl TempTree {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir_tree() -> TempTree {
    let dir = std::env::temp_dir().join(format!("mkfs-alloc-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for i in 0..3 {
        let data: Vec<u8> = (0..1 << 20).map(|j: usize| (j * 3 + i) as u8).collect();
        std::fs::write(dir.join(format!("f{i}")), data).expect("write");
    }
    TempTree(dir)
}

/// A test target that notes whether it saw the tree before the format.
struct Seeing {
    mem: Mem,
    saw_content: Option<u64>,
}

impl BatchTarget for Seeing {
    type Io = FaultyIo<MemDisk>;
    fn open(&mut self, p: &mut dyn FnMut(Stage, u64, u64)) -> Result<Self::Io, TargetError> {
        self.mem.open(p)
    }
    fn before_content(
        &mut self,
        _io: &mut Self::Io,
        content: &mut TargetContent<'_>,
    ) -> Result<(), TargetError> {
        self.saw_content = Some(content.populated().new_clusters());
        Ok(())
    }
    fn finish(&mut self, io: &mut Self::Io) -> Vec<String> {
        self.mem.finish(io)
    }
}

/// A plan made on its own, run as a batch of one (a lent target), writes
/// the bytes its own format writes, tree included; the target sees the
/// tree before the format, the outcome holds what was found and the
/// extents, and the plan gets its tree back.
#[test]
fn a_plan_of_one_writes_what_its_format_writes() {
    let time = Timestamp {
        secs: 1_700_000_000,
        nanos: 0,
    };
    let planned = || {
        let plan = template()
            .pinned(7, time)
            .plan(64 * MIB, 512)
            .expect("plan");
        plan.populate(tree(5, 300_000).0, Default::default())
            .expect("populate")
    };
    let mut alone = MemDisk::filled(512, 64 * MIB / 512, 0xEE).expect("disk");
    planned().format(&mut alone).expect("format");
    let out = std::sync::Arc::new(StdMutex::new(Vec::new()));
    let mut target = Seeing {
        mem: mem_targets(&[64], &out).remove(0),
        saw_content: None,
    };
    let mut plan = BatchPlan::one("alone", planned());
    let report = plan.run(vec![&mut target], &RunOptions::new(), &|_| {});
    let o = &report.outcomes[0];
    assert_eq!(o.verdict, Verdict::Ok, "{:?}", o.error);
    let p = plan.plans().next().expect("one").expect("planned");
    let content = p.content().expect("the tree back in its plan");
    assert_eq!(target.saw_content, Some(content.new_clusters()));
    let found = o.found.as_ref().expect("found");
    assert_eq!(o.extents.as_ref(), Some(&p.extents(found)));
    let written = out.lock().expect("lock");
    assert_eq!(written.len(), 1);
    assert!(written[0].1.as_bytes() == alone.as_bytes(), "bytes differ");
}

#[test]
fn a_medium_gives_the_same_options_alone_and_in_a_batch() {
    let ov = Overrides::of_medium(true, Some(4 << 20), 4096);
    let alone = ov.applied(template()).expect("valid options");
    let mut spec = TargetSpec::new("disk", 8 << 30, 512);
    spec.overrides = ov.clone();
    let batch = Batch::new(template()).options_for(0, &spec);
    for o in [&alone, &batch] {
        assert!(o.is_whole_disk());
        assert_eq!(o.sector_bytes(), 4096);
        assert_eq!(o.format_options().given_align(), Some(4 << 20));
    }
    // An alignment the options give, and the SD layout's, win over the
    // medium's preferred one.
    let given = ov
        .applied(template().align(1 << 20))
        .expect("valid options");
    assert_eq!(given.format_options().given_align(), Some(1 << 20));
    let sd = ov
        .applied(MediumOptions::new().sd(true))
        .expect("valid options");
    assert_eq!(sd.format_options().given_align(), None);
    // A sector size no file system has is refused.
    assert!(Overrides::of_medium(false, None, 520)
        .applied(template())
        .is_err());
}
