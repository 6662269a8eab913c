//! Crash simulation of the files beside a pool: what a crash leaves of unsynced appends,
//! synced bytes and pending renames; the write-sync-rename protocol surviving every crash
//! point, and broken variants of it caught; and a pool word and a file crashed at the same
//! points, so a protocol that spans both is tested as one.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use pmdb_pmem::{AckLog, CrashImage, CrashTest, FileSystem, PmemError, Pool, PoolOptions};

fn sim_pool() -> Pool {
    Pool::create_sim(&PoolOptions::small()).unwrap()
}

fn files_of(pool: &Pool) -> Arc<dyn FileSystem> {
    pool.files(Path::new("ignored on the simulator")).unwrap()
}

/// The files of `image`, reopened.
fn reopen(image: &CrashImage) -> Arc<dyn FileSystem> {
    files_of(&Pool::open_image(image, &PoolOptions::small()).unwrap())
}

/// `len` bytes that differ from zeros and from each other's offsets.
fn body(tag: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (tag as usize * 131 + i * 7 + 1) as u8 | 1)
        .collect()
}

/// The whole of `name`, or `None` if it does not exist.
fn read_opt(fs: &dyn FileSystem, name: &str) -> Result<Option<Vec<u8>>, String> {
    match fs.read_all(name) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(PmemError::MissingFile { .. }) => Ok(None),
        Err(e) => Err(format!("reading {name}: {e}")),
    }
}

#[test]
fn file_operations_are_crash_points_and_appends_are_not() {
    let test = CrashTest::new(1);
    let base = test
        .run(|_, _: &mut AckLog<()>| {}, |_, _, _| Ok(()))
        .unwrap();
    let report = test
        .run(
            |pool, _: &mut AckLog<()>| {
                let fs = files_of(pool);
                let mut f = fs.create("a").unwrap();
                f.append(b"one").unwrap();
                f.append(b"two").unwrap();
                f.sync().unwrap();
                fs.rename("a", "b").unwrap();
                fs.remove("b").unwrap();
                fs.sync_dir().unwrap();
            },
            |_, _, _| Ok(()),
        )
        .unwrap();
    assert_eq!(report.fences, base.fences + 5);
    assert_eq!(report.points as u64, report.fences + 1);
}

#[test]
fn missing_files_are_not_found_and_written_bytes_read_back() {
    let pool = sim_pool();
    let fs = files_of(&pool);
    let missing = |r: Result<(), PmemError>| match r {
        Err(PmemError::MissingFile { path }) => path.display().to_string(),
        r => panic!("expected MissingFile, got {r:?}"),
    };
    assert_eq!(
        missing(fs.open("nope").map(drop)),
        "<crash image>/files/nope"
    );
    assert_eq!(missing(fs.rename("nope", "x")), "<crash image>/files/nope");
    assert_eq!(missing(fs.remove("nope")), "<crash image>/files/nope");
    assert_eq!(fs.describe("x"), "<crash image>/files/x");

    let mut f = fs.create("b").unwrap();
    fs.create("a").unwrap();
    f.append(b"hello ").unwrap();
    f.append(b"world").unwrap();
    assert_eq!(f.len(), 11);
    // Unsynced bytes are readable; a reader keeps what it opened.
    let r = fs.open("b").unwrap();
    f.append(b"!").unwrap();
    let mut buf = [0u8; 5];
    r.read_at(6, &mut buf).unwrap();
    assert_eq!(&buf, b"world");
    assert!(r.read_at(8, &mut buf).is_err(), "read past the end");
    assert_eq!((*r.map().unwrap()).as_ref(), b"hello world");
    assert_eq!(fs.read_all("b").unwrap(), b"hello world!");
    assert_eq!(fs.list().unwrap(), ["a", "b"]);
}

#[test]
fn unsynced_appends_may_be_lost_or_torn_synced_ones_never() {
    let pool = sim_pool();
    let fs = files_of(&pool);
    let all = body(7, 200);
    let mut f = fs.create("f").unwrap();
    f.append(&all[..100]).unwrap();
    f.sync().unwrap();
    fs.sync_dir().unwrap();
    f.append(&all[100..150]).unwrap();
    f.append(&all[150..]).unwrap();

    let (mut lost, mut partial, mut whole, mut torn) = (0, 0, 0, 0);
    for seed in 0..400 {
        let bytes = reopen(&pool.crash(seed).unwrap()).read_all("f").unwrap();
        assert!(
            (100..=200).contains(&bytes.len()),
            "seed {seed}: {}",
            bytes.len()
        );
        assert_eq!(
            bytes[..100],
            all[..100],
            "seed {seed}: synced bytes damaged"
        );
        match bytes.len() {
            _ if bytes != all[..bytes.len()] => torn += 1,
            100 => lost += 1,
            200 => whole += 1,
            _ => partial += 1,
        }
    }
    assert!(
        lost > 0 && partial > 0 && whole > 0 && torn > 0,
        "lost {lost}, partial {partial}, whole {whole}, torn {torn}"
    );
}

#[test]
fn a_created_file_never_synced_comes_back_empty_partial_or_whole() {
    let pool = sim_pool();
    let fs = files_of(&pool);
    let all = body(3, 64);
    let mut f = fs.create("new").unwrap();
    f.append(&all).unwrap();
    fs.sync_dir().unwrap();
    let mut seen = BTreeSet::new();
    for seed in 0..200 {
        let bytes = reopen(&pool.crash(seed).unwrap()).read_all("new").unwrap();
        assert!(bytes.len() <= all.len());
        seen.insert(match bytes.len() {
            0 => "empty",
            64 if bytes == all => "whole",
            _ => "partial or torn",
        });
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
}

#[test]
fn synced_prefixes_survive_every_crash_point() {
    let all = body(5, 40 * 20);
    let report = CrashTest::new(2)
        .mixes(4)
        .run(
            |pool, acks: &mut AckLog<usize>| {
                let fs = files_of(pool);
                let mut f = fs.create("log").unwrap();
                fs.sync_dir().unwrap();
                for (i, chunk) in all.chunks(40).enumerate() {
                    f.append(chunk).unwrap();
                    if i % 3 == 2 {
                        f.sync().unwrap();
                        acks.ack(f.len() as usize);
                    }
                }
            },
            |pool, acked, _| {
                let Some(bytes) = read_opt(&*files_of(pool), "log")? else {
                    return match acked.last() {
                        Some(len) => Err(format!("{len} synced bytes acknowledged, no file")),
                        None => Ok(()),
                    };
                };
                let durable = acked.last().map_or(0, |l| **l);
                if bytes.len() < durable || bytes[..durable] != all[..durable] {
                    return Err(format!("synced prefix of {durable} bytes lost or damaged"));
                }
                Ok(())
            },
        )
        .unwrap();
    assert!(report.images > 20);
}

#[test]
fn an_unsynced_rename_may_be_lost_but_never_half_applied() {
    let pool = sim_pool();
    let fs = files_of(&pool);
    for name in ["a.tmp", "c"] {
        let mut f = fs.create(name).unwrap();
        f.append(&body(1, 100)).unwrap();
        f.sync().unwrap();
    }
    fs.sync_dir().unwrap();
    fs.rename("a.tmp", "a").unwrap();
    let mut b = fs.create("b").unwrap();
    b.append(&body(2, 100)).unwrap();
    b.sync().unwrap();
    fs.remove("c").unwrap();

    // Directory operations commit in order: only prefixes of the three are possible.
    let prefixes = [
        vec!["a.tmp", "c"],
        vec!["a", "c"],
        vec!["a", "b", "c"],
        vec!["a", "b"],
    ];
    let mut seen = BTreeSet::new();
    for seed in 0..200 {
        let crashed = reopen(&pool.crash(seed).unwrap());
        let names = crashed.list().unwrap();
        let at = prefixes
            .iter()
            .position(|p| *p == names)
            .unwrap_or_else(|| panic!("seed {seed}: {names:?} is no prefix"));
        seen.insert(at);
        let moved = if at == 0 { "a.tmp" } else { "a" };
        assert_eq!(crashed.read_all(moved).unwrap(), body(1, 100));
        if names.contains(&"b".to_string()) {
            assert_eq!(crashed.read_all("b").unwrap(), body(2, 100));
        }
    }
    assert_eq!(seen.len(), prefixes.len());
}

#[test]
fn reopened_files_are_durable() {
    let pool = sim_pool();
    let fs = files_of(&pool);
    let mut f = fs.create("f").unwrap();
    f.append(&body(4, 300)).unwrap();
    fs.sync_dir().unwrap();
    for seed in 0..20 {
        let image = pool.crash(seed).unwrap();
        let reopened = Pool::open_image(&image, &PoolOptions::small()).unwrap();
        let first = files_of(&reopened).read_all("f").unwrap();
        for again in 0..5 {
            let bytes = reopen(&reopened.crash(again).unwrap())
                .read_all("f")
                .unwrap();
            assert_eq!(bytes, first);
        }
    }
}

/// How the manifest workload switches CURRENT to a new manifest.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Protocol {
    /// Manifest written and synced, CURRENT.tmp written and synced, renamed to CURRENT,
    /// directory synced.
    Correct,
    /// Syncs the manifest only after the rename is durable.
    RenameBeforeDataSync,
    /// Never syncs the directory.
    NoSyncDir,
}

const VERSIONS: u64 = 4;

fn manifest(version: u64) -> String {
    format!("MANIFEST-{version:06}")
}

fn manifest_body(version: u64) -> Vec<u8> {
    body(version, 150 + 40 * version as usize)
}

fn manifest_workload(protocol: Protocol) -> impl Fn(&Arc<Pool>, &mut AckLog<u64>) {
    move |pool, acks| {
        let fs = files_of(pool);
        for version in 1..=VERSIONS {
            let data = manifest_body(version);
            let mut m = fs.create(&manifest(version)).unwrap();
            m.append(&data[..100]).unwrap();
            m.append(&data[100..]).unwrap();
            if protocol != Protocol::RenameBeforeDataSync {
                m.sync().unwrap();
            }
            let mut current = fs.create("CURRENT.tmp").unwrap();
            current
                .append(format!("{}\n", manifest(version)).as_bytes())
                .unwrap();
            current.sync().unwrap();
            fs.rename("CURRENT.tmp", "CURRENT").unwrap();
            if protocol != Protocol::NoSyncDir {
                fs.sync_dir().unwrap();
            }
            if protocol == Protocol::RenameBeforeDataSync {
                m.sync().unwrap();
            }
            if version > 1 {
                fs.remove(&manifest(version - 1)).unwrap();
            }
            acks.ack(version);
        }
    }
}

/// After recovery CURRENT is absent only if nothing was acknowledged, names a version no
/// older than the last acknowledged and no newer than the one in flight, and that
/// version's manifest is whole.
fn check_manifest(pool: &Arc<Pool>, acked: &[&u64], in_flight: Option<&u64>) -> Result<(), String> {
    let fs = files_of(pool);
    let last = acked.last().map_or(0, |v| **v);
    let Some(current) = read_opt(&*fs, "CURRENT")? else {
        return match last {
            0 => Ok(()),
            v => Err(format!("version {v} acknowledged, CURRENT missing")),
        };
    };
    let version = (1..=VERSIONS)
        .find(|v| current == format!("{}\n", manifest(*v)).as_bytes())
        .ok_or_else(|| format!("CURRENT is torn: {current:?}"))?;
    let newest = in_flight.map_or(last, |v| *v);
    if version < last || version > newest {
        return Err(format!(
            "CURRENT names version {version}, acknowledged {last}, in flight {in_flight:?}"
        ));
    }
    match read_opt(&*fs, &manifest(version))? {
        Some(bytes) if bytes == manifest_body(version) => Ok(()),
        Some(bytes) => Err(format!(
            "CURRENT names {}, which is damaged ({} bytes)",
            manifest(version),
            bytes.len()
        )),
        None => Err(format!(
            "CURRENT names {}, which is missing",
            manifest(version)
        )),
    }
}

#[test]
fn write_sync_rename_survives_every_crash_point() {
    for seed in 0..3 {
        let report = CrashTest::new(seed)
            .mixes(8)
            .run(manifest_workload(Protocol::Correct), check_manifest)
            .unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(report.points as u64, report.fences + 1);
    }
}

#[test]
fn renaming_before_the_data_is_synced_is_caught() {
    let failure = CrashTest::new(0)
        .mixes(8)
        .run(
            manifest_workload(Protocol::RenameBeforeDataSync),
            check_manifest,
        )
        .expect_err("a rename durable before its data must fail the check");
    assert!(failure.message.contains("damaged"), "{failure}");
}

#[test]
fn skipping_sync_dir_is_caught() {
    let failure = CrashTest::new(0)
        .mixes(8)
        .run(manifest_workload(Protocol::NoSyncDir), check_manifest)
        .expect_err("an acknowledged rename that is not durable must fail the check");
    assert!(failure.message.contains("acknowledged"), "{failure}");
}

/// Publishes root word 0 = version once that version's file is whole: after the file's
/// sync and the directory's, or (broken) before the directory's.
fn publish_workload(sync_dir_first: bool) -> impl Fn(&Arc<Pool>, &mut AckLog<u64>) {
    move |pool, acks| {
        let fs = files_of(pool);
        for version in 1..=3 {
            let mut f = fs.create(&format!("sst-{version}")).unwrap();
            f.append(&body(version, 500)).unwrap();
            f.sync().unwrap();
            if sync_dir_first {
                fs.sync_dir().unwrap();
            }
            pool.publish_root(0, version).unwrap();
            if !sync_dir_first {
                fs.sync_dir().unwrap();
            }
            acks.ack(version);
        }
    }
}

/// The published version's file must be whole.
fn check_published(pool: &Arc<Pool>, acked: &[&u64], _: Option<&u64>) -> Result<(), String> {
    let version = pool.root(0);
    if version < acked.last().map_or(0, |v| **v) {
        return Err(format!("root word {version} older than acknowledged"));
    }
    if version == 0 {
        return Ok(());
    }
    match read_opt(&*files_of(pool), &format!("sst-{version}"))? {
        Some(bytes) if bytes == body(version, 500) => Ok(()),
        Some(_) => Err(format!("sst-{version} is published but damaged")),
        None => Err(format!("sst-{version} is published but missing")),
    }
}

#[test]
fn a_pool_word_published_after_its_file_is_synced_never_precedes_the_file() {
    CrashTest::new(3)
        .mixes(8)
        .run(publish_workload(true), check_published)
        .unwrap_or_else(|f| panic!("{f}"));
}

#[test]
fn a_pool_word_published_before_the_directory_sync_is_caught() {
    let failure = CrashTest::new(3)
        .mixes(8)
        .run(publish_workload(false), check_published)
        .expect_err("a file whose name is not durable must not be published");
    assert!(failure.message.contains("missing"), "{failure}");
}
