//! Process crashes: a child process writes batches across two subtables on the Memory
//! backend (tmpfs) and reports each acknowledged batch; the parent kills it with SIGKILL
//! at a random moment, reopens the database and checks that every acknowledged batch is
//! there and no batch is partly there. The database carries over from one kill to the
//! next, so recovery after recovery is exercised too.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: u64 = 50;

/// Room for every batch of 100 runs (nothing is reclaimed before the global index).
fn options() -> DbOptions {
    let mut o = DbOptions::small();
    o.pool.zone_size = Some(256 << 10);
    o.pool.zones_per_extent = 32;
    o.pool.max_extents = Some(64);
    o.memtable_size = 4 << 20;
    o
}

fn last_batch(db: &Db, sub: &str) -> Option<u64> {
    let v = db.subtable(sub).unwrap().get_owned(b"last").unwrap()?;
    Some(String::from_utf8(v).unwrap().parse().unwrap())
}

/// The child: writes batch n (keys in both subtables) forever, printing `ack n` after
/// each acknowledged write.
#[test]
#[ignore = "spawned by kill_minus_nine_loses_nothing_acknowledged"]
fn child_writer() {
    let Some(dir) = std::env::var_os("PMDB_CRASH_DIR") else {
        return;
    };
    let db = Db::open(dir, options()).unwrap();
    let (a, b) = (db.subtable("a").unwrap(), db.subtable("b").unwrap());
    let start = last_batch(&db, "a").map_or(0, |n| n + 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    for n in start.. {
        let mut wb = WriteBatch::new();
        let value = format!("{n}");
        for sub in [&a, &b] {
            wb.put(sub, format!("k{}", n % KEYS), &value);
            wb.put(sub, b"last", &value);
        }
        db.write(wb, WriteOptions::default()).unwrap();
        println!("ack {n}");
        if Instant::now() > deadline {
            break;
        }
    }
}

fn verify(dir: &Path, acked: Option<u64>) -> u64 {
    let db = Db::open(dir, options()).unwrap();
    assert!(
        db.recovery_stats().damage.is_empty(),
        "{:?}",
        db.recovery_stats().damage
    );
    let (la, lb) = (last_batch(&db, "a"), last_batch(&db, "b"));
    assert_eq!(la, lb, "a batch is partly there");
    let last = la.unwrap_or(0);
    if let Some(acked) = acked {
        assert!(
            last >= acked,
            "acknowledged batch {acked} lost (last {last})"
        );
        assert!(
            last <= acked + 1,
            "batch {last} appeared, beyond the one in flight"
        );
    }
    for sub in ["a", "b"] {
        let s = db.subtable(sub).unwrap();
        for k in 0..KEYS.min(last + 1) {
            // The newest batch that wrote key k is the largest n <= last with n % KEYS == k.
            let expect = last - (last + KEYS - k) % KEYS;
            let got = s
                .get_owned(format!("k{k}"))
                .unwrap()
                .map(|v| String::from_utf8(v).unwrap());
            assert_eq!(
                got,
                Some(expect.to_string()),
                "{sub}/k{k} after batch {last}"
            );
        }
    }
    last
}

#[test]
fn kill_minus_nine_loses_nothing_acknowledged() {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(0x6b11);
    let started = Instant::now();
    let mut kills = 0;
    let log = dir.path().join("child.stderr");
    while kills < 100 && started.elapsed() < Duration::from_secs(120) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_writer",
                "--include-ignored",
                "--nocapture",
            ])
            .env("PMDB_CRASH_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ack ") {
                    let _ = tx.send(n.parse::<u64>().unwrap());
                }
            }
        });
        // Let it acknowledge something, then kill it at a random moment.
        let mut acked = rx.recv_timeout(Duration::from_secs(20)).ok();
        std::thread::sleep(Duration::from_micros(rng.random_range(0..15_000)));
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        reader.join().unwrap();
        while let Ok(n) = rx.try_recv() {
            acked = Some(n);
        }
        assert!(
            acked.is_some(),
            "the child acknowledged nothing: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        verify(dir.path(), acked);
        kills += 1;
    }
    assert!(kills >= 100, "only {kills} kills in the time bound");
}
