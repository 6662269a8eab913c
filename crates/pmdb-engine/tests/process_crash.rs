//! Process crashes: a child process writes batches across two subtables on the Memory
//! backend (tmpfs) and reports each acknowledged batch; the parent kills it with SIGKILL
//! at a random moment — most often while it writes, sometimes while it is still
//! recovering — reopens the database and checks that every acknowledged batch is there,
//! no batch is partly there, and every byte of PM is accounted for. The database carries
//! over from one kill to the next, so recovery after recovery is exercised too.
//!
//! Two scenarios: the commits alone (large memtables, nothing leaves them), and the tiers
//! working hard (tiny memtables, generations and levels, background merges, flushes and
//! level compactions, a small pool that only freeing PM keeps from filling), so kills
//! land in memtable-to-global-index merges, flushes to level 1, level compactions,
//! manifest edits, manifest switches at open and batch frees.

use std::io::{BufRead, BufReader};
use std::ops::RangeInclusive;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SUBTABLES: [&str; 2] = ["a", "b"];
/// The key holding the number of the last batch written, in every subtable.
const LAST: &[u8] = b"last";

/// One way of writing and killing.
struct Scenario {
    name: &'static str,
    options: fn() -> DbOptions,
    /// Keys batches write to (besides `LAST`).
    keys: u64,
    /// Values are padded to up to this many bytes.
    max_value: usize,
    kills: usize,
    /// Most batches the child acknowledges before a kill (picked at random, as is the
    /// wait after them, up to `max_delay`): counted in batches, so runs are as long on
    /// a slow machine as on a fast one.
    max_batches: u64,
    max_delay: Duration,
}

/// The commit path: large memtables in a large pool, which the tiers barely touch.
const COMMITS: Scenario = Scenario {
    name: "commits",
    options: commits_options,
    keys: 50,
    max_value: 0,
    kills: 100,
    max_batches: 1,
    max_delay: Duration::from_millis(15),
};

/// Every tier busy, in a pool a small fraction of what the run writes.
const TIERS: Scenario = Scenario {
    name: "tiers",
    options: tiers_options,
    keys: 3000,
    max_value: 500,
    kills: 40,
    max_batches: 7000,
    max_delay: Duration::from_millis(50),
};

fn commits_options() -> DbOptions {
    let mut o = DbOptions::small();
    o.pool.zone_size = Some(256 << 10);
    o.pool.zones_per_extent = 32;
    o.pool.max_extents = Some(64);
    o.memtable_size = 4 << 20;
    o
}

/// Memtables of one zone's worth, three per generation, generations flushed once the
/// subtables hold four generations' worth of PM, levels of 64 KiB times two, 16 KiB
/// files.
fn tiers_options() -> DbOptions {
    DbOptions {
        memtable_size: 32 << 10,
        gi_budget: 96 << 10,
        flush_watermark: Some(384 << 10),
        max_frozen_memtables: 2,
        l1_target: 64 << 10,
        level_ratio: 2,
        target_file_size: 16 << 10,
        block_size: 1 << 10,
        background_flush: true,
        compaction_threads: 1,
        ..DbOptions::small()
    }
    .pool_max(TIERS_POOL)
}

/// Bytes of PM the tiers scenario may use: 64 zones. Past the watermark the flusher
/// sends generations to SSTs; however slow it is, stalls keep a subtable to an active
/// memtable and two frozen ones, and hold commits while the pool has less than two
/// memtables of room and a flush could free some.
const TIERS_POOL: u64 = 2 << 20;

fn scenario(name: &str) -> &'static Scenario {
    [&COMMITS, &TIERS]
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

/// A well-mixed function of `n` (splitmix64), so batches hit keys at random.
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Scenario {
    /// What batch `n` does in every subtable: the key it writes, and whether it deletes
    /// it (one batch in eight) rather than putting a value.
    fn op(&self, n: u64) -> (u64, bool) {
        let h = mix(n);
        (h % self.keys, (h >> 32).is_multiple_of(8))
    }

    fn key(k: u64) -> Vec<u8> {
        format!("k{k:05}").into_bytes()
    }

    /// The value batch `n` puts in `sub`: it names both, so a value in the wrong place
    /// or from the wrong batch cannot pass for the right one.
    fn value(&self, sub: &str, n: u64) -> Vec<u8> {
        let mut v = format!("{sub}/{n}").into_bytes();
        let len = (mix(!n) as usize) % (self.max_value + 1);
        v.resize(len.max(v.len()), b'a' + (n % 26) as u8);
        v
    }

    /// Every subtable's expected contents (key order) once batches `0..=last` are in.
    fn expected(&self, sub: &str, last: Option<u64>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut newest: Vec<Option<u64>> = vec![None; self.keys as usize];
        for n in last.map_or(0..0, |l| 0..l + 1) {
            let (k, delete) = self.op(n);
            newest[k as usize] = (!delete).then_some(n);
        }
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = newest
            .iter()
            .enumerate()
            .filter_map(|(k, n)| n.map(|n| (Scenario::key(k as u64), self.value(sub, n))))
            .collect();
        if let Some(last) = last {
            out.push((LAST.to_vec(), last.to_string().into_bytes()));
        }
        out.sort();
        out
    }

    /// Bytes of values `batches` wrote, in all subtables.
    fn bytes_written(&self, batches: RangeInclusive<u64>) -> u64 {
        let one: u64 = batches.map(|n| self.value("a", n).len() as u64).sum();
        one * SUBTABLES.len() as u64
    }
}

fn last_batch(db: &Db, sub: &str) -> Option<u64> {
    let v = db.existing_subtable(sub).ok()?.get_owned(LAST).unwrap()?;
    Some(String::from_utf8(v).unwrap().parse().unwrap())
}

/// The child: writes batch n (the same key in every subtable, and `LAST`) forever,
/// printing `ack n` after each acknowledged write and, every 50 batches, what the
/// tiers have done so far.
#[test]
#[ignore = "spawned by the kill tests"]
fn child_writer() {
    let (Some(dir), Ok(name)) = (
        std::env::var_os("PMDB_CRASH_DIR"),
        std::env::var("PMDB_CRASH_SCENARIO"),
    ) else {
        return;
    };
    let s = scenario(&name);
    let db = Db::open(dir, (s.options)()).unwrap();
    let subs: Vec<_> = SUBTABLES.iter().map(|n| db.subtable(n).unwrap()).collect();
    let start = last_batch(&db, SUBTABLES[0]).map_or(0, |n| n + 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    for n in start.. {
        let (k, delete) = s.op(n);
        let mut wb = WriteBatch::new();
        for sub in &subs {
            if delete {
                wb.delete(sub, Scenario::key(k));
            } else {
                wb.put(sub, Scenario::key(k), s.value(sub.name(), n));
            }
            wb.put(sub, LAST, n.to_string());
        }
        db.write(wb, WriteOptions::default()).unwrap();
        println!("ack {n}");
        if n % 50 == 0 {
            let t = db.tier_stats();
            assert_eq!(t.last_error, None, "a background job failed");
            println!("tiers {} {} {}", t.merges, t.flushes, t.compactions);
        }
        if Instant::now() > deadline {
            break;
        }
    }
}

/// What a run of kills saw.
#[derive(Debug, Default)]
struct Observed {
    kills: usize,
    /// Kills before the child acknowledged anything (while it recovered, mostly).
    early_kills: usize,
    /// Merges, flushes and level compactions the children reported, summed over runs.
    merges: u64,
    flushes: u64,
    compactions: u64,
    /// Most SST files found after a kill.
    max_sst_files: usize,
    /// Most value bytes one child wrote.
    most_written: u64,
    /// Memtables recovery found flushed but not freed (a kill between the manifest
    /// edit and the batch free), and parts of partial groups it rolled back.
    flushed_not_freed: usize,
    rolled_back_parts: usize,
    last: Option<u64>,
}

/// Reopens after a kill and checks the database against the batches up to `floor`
/// (acknowledged, or seen after an earlier kill): every one of them is there, at most
/// the one after it too, none partly; the SST files read back; the pool's zones are
/// all accounted for. Returns the last batch found.
fn verify(s: &Scenario, dir: &Path, floor: Option<u64>, seen: &mut Observed) -> Option<u64> {
    // No background job may change the pool while it is counted.
    let db = Db::open(dir, (s.options)().manual_tiering()).unwrap();
    let recovery = db.recovery_stats();
    assert!(recovery.damage.is_empty(), "{:?}", recovery.damage);
    let lasts: Vec<_> = SUBTABLES.iter().map(|n| last_batch(&db, n)).collect();
    assert!(
        lasts.iter().all(|l| *l == lasts[0]),
        "a batch is partly there: {lasts:?}"
    );
    let last = lasts[0];
    assert!(last >= floor, "batch {floor:?} lost (last {last:?})");
    assert!(
        last <= floor.map_or(Some(0), |f| Some(f + 1)),
        "batch {last:?} appeared, beyond the one in flight after {floor:?}"
    );
    for name in SUBTABLES {
        let sub = db.existing_subtable(name).unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = sub
            .scan::<&[u8]>(..)
            .map(|e| e.unwrap().to_owned())
            .collect();
        let want = s.expected(name, last);
        if got != want {
            let diff: Vec<_> = want
                .iter()
                .filter(|w| !got.contains(w))
                .chain(got.iter().filter(|g| !want.contains(g)))
                .map(|(k, v)| {
                    let v = String::from_utf8_lossy(v);
                    format!("{}={}", String::from_utf8_lossy(k), &v[..v.len().min(16)])
                })
                .take(4)
                .collect();
            panic!(
                "{name} after batch {last:?}: {} entries, {} expected; e.g. {diff:?}",
                got.len(),
                want.len()
            );
        }
        for (k, v) in &want {
            assert_eq!(sub.get_owned(k).unwrap().as_ref(), Some(v), "{name}: get");
        }
    }
    let problems = db.verify_tables();
    assert!(problems.is_empty(), "{problems:?}");
    // Recovery frees every zone the catalog does not reach, so the pool holds the
    // catalog's zones, the zones of the memtables (global-index members included) up to
    // their last published part, and at most one zone per subtable past it: a crash
    // between a zone's allocation and the publish of the part written into it.
    let owned = db.device().alloc.owned_zones;
    let held = (recovery.catalog_zones + recovery.zones) as u64;
    assert!(
        (held..=held + SUBTABLES.len() as u64).contains(&owned),
        "{owned} zones owned; the catalog and the memtables hold {held}: {recovery}"
    );
    let files: usize = db
        .subtable_stats()
        .iter()
        .flat_map(|st| st.levels.iter().map(|(files, _)| files))
        .sum();
    seen.max_sst_files = seen.max_sst_files.max(files);
    seen.flushed_not_freed += recovery.flushed_memtables;
    seen.rolled_back_parts += recovery.rolled_back_parts;
    last
}

/// Compacts what the kills left, and checks that nothing changes but PM: only the
/// active memtables hold zones beyond the catalog's.
fn verify_compacted(s: &Scenario, dir: &Path, last: Option<u64>) {
    let db = Db::open(dir, (s.options)().manual_tiering()).unwrap();
    db.compact().unwrap();
    for name in SUBTABLES {
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .existing_subtable(name)
            .unwrap()
            .scan::<&[u8]>(..)
            .map(|e| e.unwrap().to_owned())
            .collect();
        assert!(
            got == s.expected(name, last),
            "{name} changed by compaction"
        );
    }
    let zone = db.device().zone_size;
    let active: u64 = db
        .subtable_stats()
        .iter()
        .map(|st| st.memtables as u64 * (db.options().memtable_size / zone + 2))
        .sum();
    let owned = db.device().alloc.owned_zones;
    let catalog = db.recovery_stats().catalog_zones as u64;
    assert!(
        owned <= catalog + active,
        "{owned} zones owned after compaction, beyond the catalog's {catalog} and the active memtables' {active}: leaked"
    );
}

/// Runs `s`: spawns the child, kills it, verifies, `s.kills` times.
fn kill_loop(s: &Scenario, seed: u64) -> Observed {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seen = Observed::default();
    let log = dir.path().join("child.stderr");
    let db_dir = dir.path().join("db");
    let mut startup = Duration::from_millis(10);
    while seen.kills < s.kills {
        let spawned = Instant::now();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_writer",
                "--include-ignored",
                "--nocapture",
            ])
            .env("PMDB_CRASH_DIR", &db_dir)
            .env("PMDB_CRASH_SCENARIO", s.name)
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut tiers = [0u64; 3];
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ack ") {
                    let _ = tx.send(n.parse::<u64>().unwrap());
                } else if let Some(counts) = line.strip_prefix("tiers ") {
                    for (t, c) in tiers.iter_mut().zip(counts.split(' ')) {
                        *t = c.parse().unwrap();
                    }
                }
            }
            tiers
        });
        // One kill in four lands before the child's first acknowledgement (as long as
        // it has taken so far): while it starts, recovers, and switches manifests. The
        // others let it acknowledge something first.
        let mut acked = None;
        if rng.random_ratio(1, 4) {
            let at = spawned + rng.random_range(Duration::ZERO..startup);
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
        } else {
            acked = rx.recv_timeout(Duration::from_secs(20)).ok();
            startup = startup.max(spawned.elapsed());
            for _ in 1..rng.random_range(1..=s.max_batches) {
                match rx.recv_timeout(Duration::from_secs(20)) {
                    Ok(n) => acked = Some(n),
                    Err(_) => break,
                }
            }
            std::thread::sleep(rng.random_range(Duration::ZERO..s.max_delay));
        }
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let status = child.wait().unwrap();
        let [merges, flushes, compactions] = reader.join().unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "the child ended before the kill: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        while let Ok(n) = rx.try_recv() {
            acked = Some(n);
        }
        if acked.is_none() {
            seen.early_kills += 1;
        }
        let floor = acked.max(seen.last);
        let first = seen.last.map_or(0, |l| l + 1);
        seen.last = verify(s, &db_dir, floor, &mut seen);
        if let Some(last) = seen.last {
            seen.most_written = seen.most_written.max(s.bytes_written(first..=last));
        }
        seen.kills += 1;
        seen.merges += merges;
        seen.flushes += flushes;
        seen.compactions += compactions;
    }
    verify_compacted(s, &db_dir, seen.last);
    assert!(
        seen.early_kills < seen.kills / 2,
        "the child acknowledged nothing in most runs: {seen:?}"
    );
    seen
}

#[test]
fn kill_minus_nine_loses_nothing_acknowledged() {
    let seen = kill_loop(&COMMITS, 0x6b11);
    eprintln!("{seen:?}");
}

#[test]
fn kill_minus_nine_during_compaction_loses_nothing_acknowledged() {
    let seen = kill_loop(&TIERS, 0x7e25);
    eprintln!("{seen:?}");
    assert!(
        seen.merges > 0 && seen.flushes > 0 && seen.compactions > 0 && seen.max_sst_files > 0,
        "the tiers must work while the child is killed: {seen:?}"
    );
    // Had the flushes not freed PM while the child ran, it would have met PoolFull.
    assert!(
        seen.most_written > TIERS_POOL,
        "no child wrote more than the {TIERS_POOL}-byte pool holds: {seen:?}"
    );
}
