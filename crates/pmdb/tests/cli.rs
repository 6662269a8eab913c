//! The `pmdb` command end to end: pool administration, inspection (`stats`, `sst dump`),
//! their exit statuses and messages, and the benchmark's report files.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pmdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmdb"))
        .args(args)
        .output()
        .expect("run pmdb")
}

/// Runs pmdb and fails the test, killing it, if it has not exited within `limit`: a
/// regression to a hang must fail here rather than hang the test run.
fn pmdb_within(limit: Duration, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmdb"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pmdb");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait for pmdb").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pmdb {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("pmdb's output")
}

/// Asserts that `args` is refused at once: a non-zero exit and one line on stderr naming
/// `option` and the range it accepts.
fn refused(args: &[&str], option: &str) {
    let out = pmdb_within(Duration::from_secs(20), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.contains(option) && err.contains(" must be ") && err.contains(" from "),
        "{args:?}: {err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{args:?} started work: {}",
        text(&out)
    );
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn create_info_check() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("pool");
    let p = path_str(&pool);
    let out = pmdb(&[
        "pool",
        "create",
        "--path",
        p,
        "--zone-size",
        "64K",
        "--max-size",
        "16M",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("zone size   64 KiB"), "{}", text(&out));

    let out = pmdb(&["pool", "info", "--path", p, "--owners"]);
    assert!(out.status.success(), "{}", text(&out));
    let info = text(&out);
    assert!(info.contains("extents     1 of at most 4"), "{info}");
    assert!(info.contains("64 total, 64 free"), "{info}");

    let out = pmdb(&["pool", "check", "--path", p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("consistent"));

    let out = pmdb(&["pool", "create", "--path", p]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("already exists"), "{}", text(&out));
}

#[test]
fn check_fails_on_damage() {
    let dir = tempfile::tempdir().unwrap();
    let p = path_str(dir.path());
    assert!(
        pmdb(&["pool", "create", "--path", p, "--zone-size", "64K"])
            .status
            .success()
    );
    let extent = dir.path().join("extent-00000.pm");
    let mut bytes = std::fs::read(&extent).unwrap();
    bytes[33] ^= 0xff;
    std::fs::write(&extent, bytes).unwrap();
    let out = pmdb(&["pool", "check", "--path", p]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("checksum mismatch"), "{}", text(&out));
}

/// `pool check` reads the database too: a database whose committed-lsn root cell is
/// changed in both copies passes the device-layer checks, and the check still fails.
#[test]
fn check_reads_the_database_and_reports_its_damage() {
    let dir = tempfile::tempdir().unwrap();
    let p = path_str(dir.path());
    {
        let db = pmdb_engine::Db::open(dir.path(), pmdb_engine::DbOptions::small()).unwrap();
        db.subtable("t").unwrap().put("k", "v").unwrap();
    }
    let out = pmdb(&["pool", "check", "--path", p]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("database consistent (1 subtables, 1 memtables, 1 records)"),
        "{}",
        text(&out)
    );
    {
        let pool = pmdb_pmem::Pool::open(dir.path(), &pmdb_pmem::PoolOptions::default()).unwrap();
        // Root words 5..9 are the committed-lsn cell: value and check word of each copy.
        for word in [6, 8] {
            pool.publish_root(word, 0x5eed).unwrap();
        }
    }
    let out = pmdb(&["pool", "check", "--path", p]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("consistent (1 extents"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("damaged"), "{}", text(&out));

    let empty = tempfile::tempdir().unwrap();
    let e = path_str(empty.path());
    assert!(pmdb(&["pool", "create", "--path", e]).status.success());
    let out = pmdb(&["pool", "check", "--path", e]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("holds no pmdb database"),
        "{}",
        text(&out)
    );
}

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = path_str(dir.path());
    let out = pmdb(&["pool", "create", "--path", p, "--zone-size", "5000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("must be a power of two"),
        "{}",
        text(&out)
    );
    let out = pmdb(&["pool", "create", "--path", p, "--size", "lots"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("must be a size"), "{}", text(&out));
    let out = pmdb(&["pool", "info", "--path", p, "--backend", "nvme"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("unknown backend"), "{}", text(&out));
    let missing = dir.path().join("missing");
    let out = pmdb(&["pool", "info", "--path", path_str(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("does not exist"), "{}", text(&out));
}

#[test]
fn bench_pmem_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("results");
    let out = pmdb(&[
        "bench",
        "pmem",
        "--memory-dir",
        path_str(dir.path()),
        "--no-file",
        "--ops",
        "500",
        "--zone-ops",
        "100",
        "--out",
        path_str(&out_dir),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(out_dir.join("pmem.md")).unwrap();
    assert!(
        md.contains("commit floor") && md.contains("Command: `"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("pmem.json")).unwrap()).unwrap();
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["measurements"][0]["latency"]["count"], 500);
    assert!(json["machine"]["cores"].as_u64().unwrap() >= 1);
}

#[test]
fn stats_reports_recovery() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = pmdb_engine::Db::open(dir.path(), pmdb_engine::DbOptions::small()).unwrap();
        let t = db.subtable("things").unwrap();
        for i in 0..10 {
            t.put(format!("k{i}"), b"v").unwrap();
        }
    }
    let out = pmdb(&["stats", "--path", path_str(dir.path()), "--threads", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = text(&out);
    assert!(s.contains("recovered 10 records"), "{s}");
    assert!(
        s.contains("subtable    things: 10 records in 1 memtables"),
        "{s}"
    );
    assert!(s.contains("last seq    10"), "{s}");

    let out = pmdb(&["stats", "--path", path_str(&dir.path().join("none"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no database"), "{}", text(&out));
}

/// A database whose subtable `t` holds `key000`..`key{n-1}` (`rounds` versions each,
/// `value-<i>-<round>`), then enough `zfill…` keys for the memtable holding them to
/// freeze; compacted, so SST files hold every version of the `key…` keys.
fn compacted_db(dir: &Path, n: usize, rounds: usize) {
    let db = pmdb_engine::Db::open(dir, pmdb_engine::DbOptions::small()).unwrap();
    let t = db.subtable("t").unwrap();
    for round in 0..rounds {
        for i in 0..n {
            t.put(format!("key{i:03}"), format!("value-{i}-{round}"))
                .unwrap();
        }
    }
    // DbOptions::small's memtables hold 128 KiB.
    for i in 0..1000 {
        t.put(format!("zfill{i:04}"), [b'z'; 200]).unwrap();
    }
    db.compact().unwrap();
}

/// The SST files under `dir`, sorted.
fn sst_files(dir: &Path) -> Vec<std::path::PathBuf> {
    files(dir)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect()
}

#[test]
fn stats_prints_amplification() {
    let dir = tempfile::tempdir().unwrap();
    compacted_db(dir.path(), 100, 3);
    let out = pmdb(&["stats", "--path", path_str(dir.path())]);
    assert!(out.status.success(), "{}", text(&out));
    let s = text(&out);
    let line = s
        .lines()
        .find(|l| l.starts_with("amplification  write "))
        .unwrap_or_else(|| panic!("{s}"));
    let write: f64 = line["amplification  write ".len()..]
        .split('x')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(write > 1.0, "{line}");
    assert!(
        line.contains(", space ") && !line.contains("space unknown"),
        "{line}"
    );
    assert!(s.contains("by compactions"), "{s}");

    let out = pmdb(&["stats", "--path", path_str(dir.path()), "--no-scan"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("space unknown (live not scanned,"),
        "{}",
        text(&out)
    );
}

#[test]
fn sst_dump_shows_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    compacted_db(dir.path(), 100, 1);
    // The file that holds subtable t's keys.
    let (file, summary) = sst_files(dir.path())
        .into_iter()
        .map(|f| {
            let out = pmdb(&["sst", "dump", path_str(&f)]);
            assert!(out.status.success(), "{}", text(&out));
            (f, text(&out))
        })
        .find(|(_, s)| s.contains("\"key000\""))
        .expect("an SST holds subtable t");
    let f = path_str(&file);
    assert!(summary.contains(&format!("file        {f}")), "{summary}");
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(
        summary.contains(&format!("size        {len} B")),
        "{summary}"
    );
    assert!(
        summary.contains("smallest    \"key000\" @1 put"),
        "{summary}"
    );
    assert!(summary.contains("largest     \"zfill"), "{summary}");
    for field in [
        "footer      format 1; index block at",
        "filter      bloom",
        "index       ",
        " (0 tombstones)",
    ] {
        assert!(summary.contains(field), "{field}: {summary}");
    }

    let out = pmdb(&["sst", "dump", f, "--entries", "--verify"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = text(&out);
    let entries: Vec<&str> = s.lines().filter(|l| l.starts_with('"')).collect();
    assert!(
        s.contains(&format!("entries     {} (0 tombstones)", entries.len())),
        "{s}"
    );
    for (i, line) in entries[..100].iter().enumerate() {
        let value = format!("value-{i}-0");
        let want = format!(
            "\"key{i:03}\" @{} put, {} B: \"{value}\"",
            i + 1,
            value.len()
        );
        assert_eq!(*line, want);
    }
    let z = format!("200 B: \"{}\"…", "z".repeat(32));
    assert!(
        entries[100..]
            .iter()
            .all(|l| l.starts_with("\"zfill") && l.ends_with(&z)),
        "{s}"
    );
    assert!(
        s.contains(&format!("verified    {} entries in", entries.len())),
        "{s}"
    );

    let out = pmdb(&["sst", "dump", f, "--from", "key050", "--limit", "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = text(&out);
    let keys: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with('"'))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(keys, ["\"key050\"", "\"key051\"", "\"key052\""], "{s}");
    refused(&["sst", "dump", f, "--limit", "0"], "--limit");
}

/// A damaged, truncated or foreign file is an error naming it, and is left as it was.
#[test]
fn sst_dump_refuses_damaged_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    compacted_db(dir.path(), 100, 1);
    let good = std::fs::read(&sst_files(dir.path())[0]).unwrap();
    let check = |name: &str, bytes: &[u8], args: &[&str], expect: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let p = path_str(&path);
        let out = pmdb_within(
            Duration::from_secs(20),
            &[&["sst", "dump", p][..], args].concat(),
        );
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(p) && err.contains(expect), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    };
    check(
        "truncated.sst",
        &good[..good.len() - 10],
        &[],
        "not a pmdb SST file",
    );
    check("short.sst", &good[..40], &[], "too short");
    let mut flipped = good.clone();
    flipped[10] ^= 0x10;
    check("flipped.sst", &flipped, &["--verify"], "checksum mismatch");
    check(
        "flipped2.sst",
        &flipped,
        &["--entries"],
        "checksum mismatch",
    );
    let mut footer = good.clone();
    let at = footer.len() - 20;
    footer[at] ^= 1;
    check("footer.sst", &footer, &[], "footer");
    check(
        "notes.sst",
        b"these are not the bytes you are looking for\n",
        &[],
        "too short",
    );
    let manifest = files(dir.path())
        .into_iter()
        .find(|(p, _)| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    check("manifest.sst", &manifest.1, &[], "not a pmdb SST file");

    let missing = dir.path().join("missing.sst");
    let out = pmdb(&["sst", "dump", path_str(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains(path_str(&missing)) && text(&out).contains("does not exist"),
        "{}",
        text(&out)
    );
}

#[test]
fn bench_ycsb_writes_report_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("results");
    let out = pmdb(&[
        "bench",
        "ycsb",
        "--dir",
        path_str(dir.path()),
        "--engines",
        "pmdb,lmdb",
        "--workloads",
        "A,C",
        "--records",
        "300",
        "--operations",
        "300",
        "--warmup",
        "10",
        "--out",
        path_str(&out_dir),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(out_dir.join("ycsb.md")).unwrap();
    assert!(md.contains("pmdb ÷ LMDB") && md.contains("| C |"), "{md}");
    for chart in [
        "ycsb-throughput.svg",
        "ycsb-latency-insert.svg",
        "ycsb-latency-read.svg",
    ] {
        let svg = std::fs::read_to_string(out_dir.join(chart)).unwrap();
        assert!(svg.contains("<svg"), "{chart}");
    }
    // The charts can be redrawn from the JSON alone.
    let again = dir.path().join("again");
    let json = out_dir.join("ycsb.json");
    let out = pmdb(&[
        "bench",
        "replot",
        path_str(&json),
        "--out",
        path_str(&again),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(again.join("ycsb-throughput.svg").exists() && again.join("ycsb.md").exists());
    let out = pmdb(&["bench", "replot", path_str(&out_dir.join("ycsb.md"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("not a YCSB report"), "{}", text(&out));

    let out = pmdb(&["bench", "ycsb", "--nvm-latency", "fast"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("must be a latency factor"),
        "{}",
        text(&out)
    );
    let out = pmdb(&["bench", "ycsb", "--workloads", "Z", "--records", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("--workloads must be letters from A to F"),
        "{}",
        text(&out)
    );
}

#[test]
fn bench_recovery_reopens_after_a_kill_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("results");
    let out = pmdb_within(
        Duration::from_secs(120),
        &[
            "bench",
            "recovery",
            "--dir",
            path_str(&dir.path().join("data")),
            "--engines",
            "pmdb",
            "--records",
            "2000",
            "--runs",
            "1",
            "--out",
            path_str(&out_dir),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(out_dir.join("recovery.md")).unwrap();
    // The stats row: 2000 records recovered; the timed read and 1000 more checked.
    assert!(md.contains("| 2000 | 1 | 2000 |"), "{md}");
    assert!(
        md.contains("Every timed read returned the value written") && md.contains(": 1001"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("recovery.json")).unwrap())
            .unwrap();
    let run = &json["results"][0]["engines"][0]["runs"][0];
    assert_eq!(run["pmdb"]["records"], 2000, "{json}");
    assert!(run["reopen_secs"].as_f64().unwrap() > 0.0, "{json}");
    assert!(out_dir.join("recovery.svg").exists());
    // The loaded data is gone once measured.
    assert!(!dir.path().join("data/recovery-pmdb").exists());

    refused(&["bench", "recovery", "--runs", "0"], "--runs");
    refused(&["bench", "recovery", "--records", "1000,0"], "--records");
    let out = pmdb_within(
        Duration::from_secs(20),
        &["bench", "recovery", "--engines", "lmdb", "--records", "10"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("--engines must be among pmdb"),
        "{}",
        text(&out)
    );
}

#[test]
fn zero_values_are_refused_at_once() {
    for (args, option) in [
        (
            &["pool", "create", "--zones-per-extent", "0"][..],
            "--zones-per-extent",
        ),
        (&["pool", "create", "--size", "0"], "--size"),
        (&["bench", "ycsb", "--records", "0"], "--records"),
        (&["bench", "ycsb", "--operations", "0"], "--operations"),
        (&["bench", "ycsb", "--threads", "0"], "--threads"),
        (
            &["bench", "ycsb", "--nvm-latency", "1x,0x"],
            "--nvm-latency",
        ),
        (
            &["bench", "ycsb", "--dram-latency-ns", "0"],
            "--dram-latency-ns",
        ),
        (&["bench", "engine", "--put-ops", "0"], "--put-ops"),
        (&["bench", "engine", "--keys", "1000,0"], "--keys"),
        (&["bench", "index", "--lookups", "0"], "--lookups"),
        (&["bench", "pmem", "--zone-ops", "0"], "--zone-ops"),
    ] {
        refused(args, option);
    }
}

#[test]
fn absurd_values_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = path_str(dir.path());
    for (args, option) in [
        (
            &["pool", "create", "--max-owners", "100000000"][..],
            "--max-owners",
        ),
        (&["pool", "create", "--max-size", "999999T"], "--max-size"),
        (
            &[
                "pool",
                "create",
                "--path",
                p,
                "--size",
                "16G",
                "--max-size",
                "8G",
            ],
            "--size",
        ),
        (&["stats", "--threads", "100000"], "--threads"),
        (
            &["bench", "ycsb", "--records", "1000000000000000"],
            "--records",
        ),
        (&["bench", "ycsb", "--threads", "100000"], "--threads"),
        (
            &["bench", "ycsb", "--nvm-latency", "1000000x"],
            "--nvm-latency",
        ),
        (&["bench", "engine", "--keys", "1000000000000"], "--keys"),
        (&["bench", "index", "--keys", "1000000000000000"], "--keys"),
        (
            &["bench", "pmem", "--write-latency-ns", "1000000000000"],
            "--write-latency-ns",
        ),
    ] {
        refused(args, option);
    }
    // More than the machine holds: one extent of a pebibyte.
    refused(
        &[
            "pool",
            "create",
            "--path",
            p,
            "--zone-size",
            "1G",
            "--zones-per-extent",
            "1048576",
            "--max-size",
            "1T",
        ],
        "--max-size",
    );
    let out = pmdb_within(
        Duration::from_secs(20),
        &[
            "pool",
            "create",
            "--path",
            p,
            "--zone-size",
            "1G",
            "--zones-per-extent",
            "1048576",
            "--max-size",
            "1024T",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("needs at least 1 PiB"),
        "{}",
        text(&out)
    );
    assert!(!dir.path().join("extent-00000.pm").exists());
}

#[test]
fn wrong_units_signs_and_fractions_are_refused_at_once() {
    for (args, option) in [
        (&["pool", "create", "--size", "4XB"][..], "--size"),
        (&["pool", "create", "--zone-size", "-4K"], "--zone-size"),
        (&["pool", "create", "--max-size", "1.5G"], "--max-size"),
        (&["stats", "--threads", "4x"], "--threads"),
        (&["stats", "--threads", "-1"], "--threads"),
        (&["bench", "ycsb", "--records", "-5"], "--records"),
        (&["bench", "ycsb", "--operations", "2.5"], "--operations"),
        (&["bench", "ycsb", "--warmup", "10k"], "--warmup"),
        (&["bench", "ycsb", "--seed", "-1"], "--seed"),
        (&["bench", "engine", "--get-ops", "1M"], "--get-ops"),
        (&["bench", "index", "--lookups", "1e6"], "--lookups"),
        (
            &["bench", "pmem", "--write-bandwidth-mb-s", "1.5"],
            "--write-bandwidth-mb-s",
        ),
        (&["bench", "pmem", "--ops", "-200"], "--ops"),
    ] {
        refused(args, option);
    }
}

#[test]
fn zero_where_it_means_something_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none");
    // One recovery thread per core: the run gets as far as finding no database.
    let out = pmdb_within(
        Duration::from_secs(20),
        &["stats", "--path", path_str(&none), "--threads", "0"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no database"), "{}", text(&out));
    // No warm-up and no emulation pass their parsers; the bad workload is what stops
    // these runs, before any work.
    let out = pmdb_within(
        Duration::from_secs(20),
        &["bench", "ycsb", "--warmup", "0", "--workloads", "Z"],
    );
    assert!(text(&out).contains("--workloads"), "{}", text(&out));
    let out = pmdb_within(
        Duration::from_secs(20),
        &["bench", "pmem", "--write-latency-ns", "0", "--ops", "x"],
    );
    assert!(text(&out).contains("--ops"), "{}", text(&out));
}

#[test]
fn replot_of_a_report_without_results_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ycsb.json");
    let report = serde_json::json!({
        "machine": {
            "cpu": "x", "cores": 1, "memory_gib": 1.0, "kernel": "x",
            "flush_instruction": "x", "pmdb_version": "x"
        },
        "command": "pmdb bench",
        "filesystem": "tmpfs",
        "config": {
            "dir": "/tmp", "engines": [], "workloads": [], "records": 0,
            "operations": 0, "warmup": 0, "threads": 0, "field_count": 0,
            "field_length": 0, "durability": "Durable", "seed": 0
        },
        "results": []
    });
    std::fs::write(&json, report.to_string()).unwrap();
    let out = pmdb_within(
        Duration::from_secs(20),
        &["bench", "replot", path_str(&json)],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no results"), "{}", text(&out));
}

/// Every file under the directory with its bytes.
fn files(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .flat_map(|path| {
            if path.is_dir() {
                files(&path)
            } else {
                let bytes = std::fs::read(&path).unwrap();
                vec![(path, bytes)]
            }
        })
        .collect();
    files.sort();
    files
}

#[test]
fn inspection_changes_no_byte_of_the_pool() {
    use pmdb_engine::{Db, DbOptions, WriteBatch, WriteOptions};
    use pmdb_pmem::{ObjPool, OwnerId, Pool, PoolOptions};

    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), DbOptions::small()).unwrap();
        let mut wb = WriteBatch::new();
        for name in ["a", "b"] {
            let t = db.subtable(name).unwrap();
            t.put(b"k", b"v").unwrap();
            wb.put(&t, b"last", b"both");
        }
        db.write(wb, WriteOptions::default()).unwrap();
    }
    {
        // What a writable open would repair: the last group made partial (one memtable's
        // last part rolled back, per docs/format.md: the catalog owner at root word 1,
        // memtable slots tagged 2 << 56, head words at offset 24), and an owner nobody
        // reaches.
        let pool = Pool::open(dir.path(), &PoolOptions::default()).unwrap();
        let owner = OwnerId::from_raw(pool.root(1)).unwrap();
        let zone = pool.zones_of(owner)[0];
        let (_, slot, _) = ObjPool::open(&pool, zone)
            .unwrap()
            .live(&pool)
            .into_iter()
            .find(|(_, _, tag)| tag >> 56 == 2)
            .unwrap();
        let head = slot.checked_add(24).unwrap();
        let start = pool.load_u64(head).unwrap() >> 32;
        pool.publish_u64(head, (start << 32) | start).unwrap();
        pool.create_owner().unwrap();
    }
    let before = files(dir.path());
    let path = path_str(dir.path());
    let info = pmdb(&["pool", "info", "--path", path, "--owners"]);
    assert!(info.status.success(), "{}", text(&info));
    let check = pmdb(&["pool", "check", "--path", path]);
    assert!(check.status.success(), "{}", text(&check));
    let stats = pmdb(&["stats", "--path", path]);
    assert!(stats.status.success(), "{}", text(&stats));
    let s = text(&stats);
    assert!(s.contains("rolled back 1 parts"), "{s}");
    assert!(s.contains("read-only"), "{s}");
    assert!(
        files(dir.path()) == before,
        "pool info, pool check or stats changed the pool"
    );
}

#[cfg(feature = "sql")]
#[test]
fn sql_runs_statements_files_and_reports_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let path = path.to_str().unwrap();
    let out = pmdb(&["sql", "--path", path, "-c", "select 1 + 1 as two"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        " two\n-----\n   2\n(1 row)\n\n"
    );
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "CREATE TABLE t (k INT PRIMARY KEY,\n  v TEXT);\nINSERT INTO t VALUES (1, 'a;b'), (2, NULL);\n\\timing off\nSELECT * FROM t ORDER BY k;\n",
    )
    .unwrap();
    let out = pmdb(&["sql", "--path", path, "-f", script.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("CREATE TABLE\nINSERT 0 2\n"), "{text}");
    assert!(text.contains(" 1 | a;b\n 2 |\n(2 rows)"), "{text}");
    // An error is one line, the exit status 1, and what was committed stays.
    let out = pmdb(&[
        "sql",
        "--path",
        path,
        "-c",
        "INSERT INTO t VALUES (1, 'again')",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("ERROR:  duplicate key value"), "{err}");
    // The key comes on a line of its own, as psql shows it.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[1].starts_with("DETAIL:  Key (k)=(1)"), "{err}");
    let out = pmdb(&["sql", "--path", path, "-c", "SELECT count(*) AS n FROM t"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\n 2\n"),
        "{out:?}"
    );
    let out = pmdb(&["sql", "--path", path, "-c", "SELEC nonsense"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("ERROR:  "));
}

#[cfg(feature = "sql")]
#[test]
fn bench_tpch_checks_every_answer_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out_dir = dir.path().join("report");
    let out = pmdb(&[
        "bench",
        "tpch",
        "--sf",
        "0.01",
        "--runs",
        "1",
        "--queries",
        "1,3,13,22",
        "--no-postgres",
        "--dir",
        data.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let md = std::fs::read_to_string(out_dir.join("tpch.md")).unwrap();
    for q in ["Q1 ", "Q3 ", "Q13 ", "Q22 "] {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {q}")))
            .unwrap();
        assert!(line.ends_with("| all match |"), "{line}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("tpch.json")).unwrap()).unwrap();
    assert_eq!(json["queries"].as_array().unwrap().len(), 4);
    assert!(out_dir.join("tpch.svg").exists());
    assert!(!data.exists(), "the bench removes its data directory");
    assert!(pmdb(&["bench", "tpch", "--sf", "0"]).status.code() == Some(2));
}
