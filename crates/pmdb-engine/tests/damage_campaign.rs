//! A damage campaign: copies of one small database (data in SSTs and in memtables, two
//! subtables), each damaged once — a byte of an SST, the manifest, CURRENT or an extent
//! changed; an SST swapped, truncated or removed; the manifest removed — then opened and
//! read whole: every key by a point read, every subtable by a scan; then opened and read
//! again, so that what the first open did is judged too. The verdicts:
//! - wrong data: a value served that is not the one written, or a key that never was;
//! - silent loss: a key written and not served, with no damage reported and no error;
//! - a panic, or a hang (no verdict within the time limit).
//!
//! Errors (refused opens, reads that fail) and losses that the open reported are what
//! damage may cost. `PMDB_DAMAGE_COPIES` sets the number of copies (CI runs the default).

use std::collections::BTreeMap;
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use pmdb_engine::{Db, DbOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

const SUBTABLES: [&str; 2] = ["a", "b"];
const KEYS: u32 = 1500;
const TIME_LIMIT: Duration = Duration::from_secs(60);

fn options() -> DbOptions {
    DbOptions {
        l1_target: 32 << 10,
        target_file_size: 16 << 10,
        ..DbOptions::small().manual_tiering().pool_max(16 << 20)
    }
}

fn value(name: &str, i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("{name}:{i}:{round}:").into_bytes();
    v.resize(90, b'0' + (round % 10) as u8);
    v
}

/// The database the copies are made of: a first round of every key compacted to SSTs,
/// then a second round over a third of them and deletes of another few, in memtables.
fn reference(dir: &Path) -> Model {
    let db = Db::open(dir, options()).unwrap();
    let mut model = Model::new();
    for name in SUBTABLES {
        let t = db.subtable(name).unwrap();
        for i in 0..KEYS {
            t.put(i.to_be_bytes(), value(name, i, 1)).unwrap();
            model.insert((name.into(), i.to_be_bytes().to_vec()), value(name, i, 1));
        }
    }
    db.compact().unwrap();
    for name in SUBTABLES {
        let t = db.subtable(name).unwrap();
        for i in (0..KEYS).step_by(3) {
            t.put(i.to_be_bytes(), value(name, i, 2)).unwrap();
            model.insert((name.into(), i.to_be_bytes().to_vec()), value(name, i, 2));
        }
        for i in (1..KEYS).step_by(50) {
            t.delete(i.to_be_bytes()).unwrap();
            model.remove(&(name.to_string(), i.to_be_bytes().to_vec()));
        }
    }
    model
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
}

fn files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.is_file() && keep(p.file_name().unwrap().to_str().unwrap()));
    out.sort();
    out
}

/// Changes one byte of `path` that is not zero (where the structures are), if any.
fn flip(path: &Path, rng: &mut SmallRng) -> String {
    let mut bytes = fs::read(path).unwrap();
    if bytes.is_empty() {
        return format!("{} is empty", path.display());
    }
    let mut at = rng.random_range(0..bytes.len());
    for _ in 0..10_000 {
        if bytes[at] != 0 {
            break;
        }
        at = rng.random_range(0..bytes.len());
    }
    let mask = rng.random_range(1..=255u8);
    bytes[at] ^= mask;
    fs::write(path, bytes).unwrap();
    format!("byte {at} of {} xor {mask:#04x}", path.display())
}

/// Damages the copy at `dir` once; says how.
fn damage(dir: &Path, rng: &mut SmallRng) -> String {
    let sst_dir = dir.join("sst");
    let ssts = files(&sst_dir, |n| n.ends_with(".sst"));
    let manifests = files(&sst_dir, |n| n.starts_with("MANIFEST-"));
    let extents = files(dir, |n| n.starts_with("extent-"));
    let pick = |rng: &mut SmallRng, list: &[PathBuf]| list[rng.random_range(0..list.len())].clone();
    match rng.random_range(0..10) {
        0..=2 => flip(&pick(rng, &ssts), rng),
        3..=5 => flip(&pick(rng, &extents), rng),
        6 => {
            let current = sst_dir.join("CURRENT");
            if rng.random_bool(0.2) {
                flip(&current, rng)
            } else {
                flip(&pick(rng, &manifests), rng)
            }
        }
        7 => {
            let (a, b) = (pick(rng, &ssts), pick(rng, &ssts));
            let (x, y) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
            fs::write(&a, y).unwrap();
            fs::write(&b, x).unwrap();
            format!("{} and {} swapped", a.display(), b.display())
        }
        8 => {
            let f = pick(rng, &ssts);
            let bytes = fs::read(&f).unwrap();
            let keep = rng.random_range(0..bytes.len());
            fs::write(&f, &bytes[..keep]).unwrap();
            format!("{} truncated to {keep} bytes", f.display())
        }
        _ => {
            let f = if rng.random_bool(0.7) {
                pick(rng, &ssts)
            } else {
                pick(rng, &manifests)
            };
            fs::remove_file(&f).unwrap();
            format!("{} removed", f.display())
        }
    }
}

/// What opening and reading a damaged copy came to.
#[derive(Debug, Default)]
struct Verdict {
    wrong: Vec<String>,
    silent_losses: usize,
    refused: bool,
}

fn judge(dir: &Path, model: &Model) -> Verdict {
    let mut verdict = Verdict::default();
    let db = match Db::open(dir, options()) {
        Ok(db) => db,
        Err(_) => {
            verdict.refused = true;
            return verdict;
        }
    };
    let reported = !db.recovery_stats().damage.is_empty() || db.read_only().is_some();
    let mut errors = false;
    for name in SUBTABLES {
        let Ok(t) = db.existing_subtable(name) else {
            errors = true;
            continue;
        };
        for ((sub, key), want) in model.range((name.to_string(), Vec::new())..) {
            if sub != name {
                break;
            }
            match t.get_owned(key) {
                Ok(Some(got)) if &got != want => {
                    verdict
                        .wrong
                        .push(format!("{name}/{key:?}: served {got:?}"));
                }
                Ok(Some(_)) => {}
                Ok(None) => verdict.silent_losses += 1,
                Err(_) => errors = true,
            }
        }
        for entry in t.scan::<&[u8]>(..) {
            match entry {
                Ok(e) => {
                    let (key, got) = e.into_parts();
                    if model.get(&(name.to_string(), key.clone())) != Some(&got) {
                        verdict
                            .wrong
                            .push(format!("{name}/{key:?}: a scan served {got:?}"));
                    }
                }
                Err(_) => {
                    errors = true;
                    break;
                }
            }
        }
    }
    if reported || errors {
        verdict.silent_losses = 0;
    }
    verdict
}

#[test]
fn damaged_copies_serve_no_wrong_data_lose_nothing_silently_and_never_hang() {
    let copies: usize = std::env::var("PMDB_DAMAGE_COPIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(60);
    let base = tempfile::tempdir().unwrap();
    let reference_dir = base.path().join("reference");
    let model = reference(&reference_dir);
    let mut rng = SmallRng::seed_from_u64(0x5eed_da4a);
    let mut failures = Vec::new();
    let mut refused = 0;
    for copy in 0..copies {
        let dir = base.path().join(format!("copy-{copy}"));
        copy_dir(&reference_dir, &dir);
        let how = damage(&dir, &mut rng);
        let (tx, rx) = mpsc::channel();
        let (judged, model) = (dir.clone(), model.clone());
        std::thread::spawn(move || {
            // Twice: what the first open did to the copy must not cost the second.
            let verdict = catch_unwind(AssertUnwindSafe(|| {
                let first = judge(&judged, &model);
                let second = judge(&judged, &model);
                Verdict {
                    wrong: [first.wrong, second.wrong].concat(),
                    silent_losses: first.silent_losses + second.silent_losses,
                    refused: first.refused,
                }
            }));
            let _ = tx.send(verdict);
        });
        match rx.recv_timeout(TIME_LIMIT) {
            Ok(Ok(v)) => {
                refused += usize::from(v.refused);
                if !v.wrong.is_empty() {
                    failures.push(format!(
                        "{how}: wrong data: {:?}",
                        &v.wrong[..v.wrong.len().min(3)]
                    ));
                }
                if v.silent_losses > 0 {
                    failures.push(format!("{how}: {} keys lost silently", v.silent_losses));
                }
            }
            Ok(Err(_)) => failures.push(format!("{how}: panicked")),
            Err(_) => failures.push(format!("{how}: no verdict in {TIME_LIMIT:?}")),
        }
        let _ = fs::remove_dir_all(&dir);
    }
    eprintln!(
        "{copies} damaged copies: {refused} refused at open, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
