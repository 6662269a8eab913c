//! The `pmdb` command end to end: pool administration, its exit statuses and messages,
//! and the benchmark's report files.

use std::path::Path;
use std::process::{Command, Output};

fn pmdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pmdb"))
        .args(args)
        .output()
        .expect("run pmdb")
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

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = path_str(dir.path());
    let out = pmdb(&["pool", "create", "--path", p, "--zone-size", "5000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("not a power of two"), "{}", text(&out));
    let out = pmdb(&["pool", "create", "--path", p, "--size", "lots"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("not a size"), "{}", text(&out));
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
        text(&out).contains("not a latency factor"),
        "{}",
        text(&out)
    );
    let out = pmdb(&["bench", "ycsb", "--workloads", "Z", "--records", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("unknown workload"), "{}", text(&out));
}
