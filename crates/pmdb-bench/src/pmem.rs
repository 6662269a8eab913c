//! The device-layer benchmark: what it costs to make a record durable on each backend
//! (copy + flush + fence for 64 B, 256 B and 4 KiB), the 8-byte publish, the floor of a
//! log-free commit (a 116-byte record persisted, then an 8-byte head persisted), and a
//! halloc zone allocation + commit.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pmdb_pmem::{Backend, BackendChoice, Emulation, PmOff, Pool, PoolOptions};
use serde::Serialize;

use crate::histogram::{Latencies, Summary, fmt_ns};
use crate::limits::{InvalidSetting, MAX_BANDWIDTH_MB_S, MAX_EMULATED_NS, MAX_OPERATIONS, check};
use crate::machine::{Machine, filesystem_of};
use crate::progress::{progress, tick};

/// One device path to measure, with the backend to force there (or Auto).
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub dir: PathBuf,
    #[serde(serialize_with = "ser_choice")]
    pub backend: BackendChoice,
    /// Operations per measurement on this target (msync-based backends want fewer).
    pub ops: u64,
    /// Zone allocations + commits measured on this target.
    pub zone_ops: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PmemBenchConfig {
    pub targets: Vec<Target>,
    pub sizes: Vec<usize>,
    #[serde(serialize_with = "ser_emulation")]
    pub emulation: Emulation,
}

/// Largest record size measured: records go at strides through one zone of the default
/// size (4 MiB), which must hold more than one of them.
const MAX_RECORD: usize = 1 << 20;

impl PmemBenchConfig {
    /// Refuses a configuration that could not run to the end: no operations, absurd
    /// counts or emulated delays, records no zone holds.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        for t in &self.targets {
            check("ops", t.ops, 1..=MAX_OPERATIONS)?;
            check("zone_ops", t.zone_ops, 1..=MAX_OPERATIONS)?;
        }
        for &size in &self.sizes {
            check("sizes", size, 1..=MAX_RECORD)?;
        }
        let e = &self.emulation;
        check("read_latency_ns", e.read_latency_ns, 0..=MAX_EMULATED_NS)?;
        check("write_latency_ns", e.write_latency_ns, 0..=MAX_EMULATED_NS)?;
        check(
            "write_bandwidth_mb_s",
            e.write_bandwidth_mb_s,
            0..=MAX_BANDWIDTH_MB_S,
        )?;
        Ok(())
    }
}

fn ser_choice<S: serde::Serializer>(c: &BackendChoice, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

fn ser_emulation<S: serde::Serializer>(e: &Emulation, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("Emulation", 3)?;
    st.serialize_field("read_latency_ns", &e.read_latency_ns)?;
    st.serialize_field("write_latency_ns", &e.write_latency_ns)?;
    st.serialize_field("write_bandwidth_mb_s", &e.write_bandwidth_mb_s)?;
    st.end()
}

/// One measured operation on one target.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub operation: String,
    pub bytes: usize,
    pub latency: Summary,
}

#[derive(Clone, Debug, Serialize)]
pub struct TargetResult {
    pub dir: PathBuf,
    pub filesystem: String,
    pub backend: String,
    pub durability: String,
    pub measurements: Vec<Measurement>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PmemReport {
    pub machine: Machine,
    pub command: String,
    pub config: PmemBenchConfig,
    pub results: Vec<TargetResult>,
}

/// Size of the record in the commit-floor measurement: 16 B key + 100 B value.
pub const FLOOR_RECORD: usize = 116;

/// Runs the benchmark on every target; each gets a fresh pool in a subdirectory that is
/// removed afterwards.
pub fn run(
    config: &PmemBenchConfig,
    command: String,
) -> Result<PmemReport, Box<dyn std::error::Error>> {
    config.validate()?;
    let mut results = Vec::new();
    for target in &config.targets {
        results.push(run_target(config, target)?);
    }
    Ok(PmemReport {
        machine: Machine::detect(),
        command,
        config: config.clone(),
        results,
    })
}

fn run_target(config: &PmemBenchConfig, target: &Target) -> pmdb_pmem::Result<TargetResult> {
    let dir = target.dir.join("pmdb-pmem-bench");
    let _ = std::fs::remove_dir_all(&dir);
    let options = PoolOptions {
        backend: target.backend,
        emulation: config.emulation,
        ..PoolOptions::default()
    };
    let result = measure(config, target, &dir, &options);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure(
    config: &PmemBenchConfig,
    target: &Target,
    dir: &Path,
    options: &PoolOptions,
) -> pmdb_pmem::Result<TargetResult> {
    let pool = Pool::create(dir, options)?;
    let label = pool.backend().name();
    let owner = pool.create_owner()?;
    let zone = pool.alloc_zone(owner)?.commit()?;
    let zone_size = pool.zone_size() as usize;
    let mut measurements = Vec::new();

    for &size in &config.sizes {
        let stride = size.next_multiple_of(64);
        let buf = vec![0xa5u8; size];
        let lat = timed(&format!("{label}: persist {size} B"), target.ops, |i| {
            let off = at(zone, (i as usize * stride) % (zone_size - stride));
            pool.write(off, &buf).and_then(|_| pool.persist(off, size))
        })?;
        measurements.push(Measurement {
            operation: persist_label(pool.backend()).into(),
            bytes: size,
            latency: lat,
        });
    }

    let head = at(zone, zone_size - 64);
    let lat = timed(&format!("{label}: publish 8 B"), target.ops, |i| {
        pool.publish_u64(head, i)
    })?;
    measurements.push(Measurement {
        operation: "publish 8-byte word".into(),
        bytes: 8,
        latency: lat,
    });

    let lat = commit_floor(&pool, zone, target.ops, label)?;
    measurements.push(Measurement {
        operation: "commit floor (record persist + 8-byte head persist)".into(),
        bytes: FLOOR_RECORD,
        latency: lat,
    });

    measurements.push(Measurement {
        operation: "zone alloc + commit".into(),
        bytes: zone_size,
        latency: zone_commits(&pool, target.zone_ops, label)?,
    });

    Ok(TargetResult {
        dir: target.dir.clone(),
        filesystem: filesystem_of(&target.dir),
        backend: label.into(),
        durability: pool.backend().durability().into(),
        measurements,
    })
}

/// Zone allocation + commit latency; owners are released every 16 zones (untimed) so
/// the pool never grows past its first extent.
fn zone_commits(pool: &Pool, ops: u64, label: &str) -> pmdb_pmem::Result<Summary> {
    let mut owner = pool.create_owner()?;
    let mut in_owner = 0;
    let bar = progress(&format!("{label}: zone alloc + commit"), ops);
    let mut lat = Latencies::default();
    for i in 0..ops {
        let t = Instant::now();
        pool.alloc_zone(owner)?.commit()?;
        lat.record(t.elapsed().as_nanos() as u64);
        in_owner += 1;
        if in_owner == 16 {
            pool.release_owner(owner)?;
            owner = pool.create_owner()?;
            in_owner = 0;
        }
        tick(&bar, i);
    }
    bar.finish_and_clear();
    Ok(lat.summary())
}

/// The floor of a log-free commit, measured in a committed zone: a 116-byte record
/// copied in and persisted, then an 8-byte head word published (the zone's last word).
pub fn commit_floor(pool: &Pool, zone: PmOff, ops: u64, label: &str) -> pmdb_pmem::Result<Summary> {
    let zone_size = pool.zone_size() as usize;
    let head = at(zone, zone_size - 64);
    let record = vec![0x3cu8; FLOOR_RECORD];
    let stride = FLOOR_RECORD.next_multiple_of(8);
    timed(&format!("{label}: commit floor"), ops, |i| {
        let off = at(zone, (i as usize * stride) % (zone_size - 64 - stride));
        pool.write(off, &record)?;
        pool.persist(off, FLOOR_RECORD)?;
        pool.publish_u64(head, off.to_raw())
    })
}

fn persist_label(backend: Backend) -> &'static str {
    match backend {
        Backend::File => "persist (copy + msync)",
        _ => "persist (copy + flush + fence)",
    }
}

fn at(zone: PmOff, offset: usize) -> PmOff {
    zone.checked_add(offset as u64).expect("inside the zone")
}

fn timed(
    what: &str,
    ops: u64,
    mut op: impl FnMut(u64) -> pmdb_pmem::Result<()>,
) -> pmdb_pmem::Result<Summary> {
    let bar = progress(what, ops);
    let mut lat = Latencies::default();
    for i in 0..ops {
        let t = Instant::now();
        op(i)?;
        lat.record(t.elapsed().as_nanos() as u64);
        tick(&bar, i);
    }
    bar.finish_and_clear();
    Ok(lat.summary())
}

/// The report as a Markdown table.
pub fn markdown(report: &PmemReport) -> String {
    let m = &report.machine;
    let mut out = String::new();
    out.push_str("# pmdb device-layer costs\n\n");
    out.push_str(&format!(
        "Machine: {} ({} cores, {} GiB), Linux {}, flush instruction `{}`, pmdb {}.\n\n",
        m.cpu, m.cores, m.memory_gib, m.kernel, m.flush_instruction, m.pmdb_version
    ));
    out.push_str(&format!("Command: `{}`\n\n", report.command));
    if !report.config.emulation.is_off() {
        out.push_str(&format!(
            "Emulation on (approximate): {:?}\n\n",
            report.config.emulation
        ));
    }
    out.push_str("| backend (filesystem) | operation | bytes | ops | mean | p50 | p99 | p99.9 | ops/s (1 thread) |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &report.results {
        for x in &r.measurements {
            let l = &x.latency;
            out.push_str(&format!(
                "| {} ({}) | {} | {} | {} | {} | {} | {} | {} | {:.0} |\n",
                r.backend,
                r.filesystem,
                x.operation,
                x.bytes,
                l.count,
                fmt_ns(l.mean_ns),
                fmt_ns(l.p50_ns as f64),
                fmt_ns(l.p99_ns as f64),
                fmt_ns(l.p999_ns as f64),
                l.ops_per_sec()
            ));
        }
    }
    out.push_str("\nDurability of each backend:\n\n");
    for r in &report.results {
        out.push_str(&format!(
            "- {} at `{}`: {}\n",
            r.backend,
            r.dir.display(),
            r.durability
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_operation_on_a_target() {
        let dir = tempfile::tempdir().unwrap();
        let config = PmemBenchConfig {
            targets: vec![Target {
                dir: dir.path().into(),
                backend: BackendChoice::Memory,
                ops: 200,
                zone_ops: 40,
            }],
            sizes: vec![64, 4096],
            emulation: Emulation::default(),
        };
        let report = run(&config, "test".into()).unwrap();
        let r = &report.results[0];
        assert_eq!(r.backend, "memory");
        let ops: Vec<(&str, usize, u64)> = r
            .measurements
            .iter()
            .map(|m| (m.operation.as_str(), m.bytes, m.latency.count))
            .collect();
        assert_eq!(ops.len(), 5);
        assert_eq!(ops[0].1, 64);
        assert_eq!(ops[1].1, 4096);
        assert!(ops[..4].iter().all(|o| o.2 == 200), "{ops:?}");
        assert_eq!(ops[4].2, 40);
        let md = markdown(&report);
        assert!(
            md.contains("| memory (") && md.contains("zone alloc + commit"),
            "{md}"
        );
        // The benchmark cleans up its pool.
        assert!(!dir.path().join("pmdb-pmem-bench").exists());
    }

    #[test]
    fn refuses_configs_that_cannot_run() {
        let dir = tempfile::tempdir().unwrap();
        let target = |ops, zone_ops| Target {
            dir: dir.path().into(),
            backend: BackendChoice::Memory,
            ops,
            zone_ops,
        };
        for (name, targets, write_latency_ns) in [
            ("ops", vec![target(0, 1)], 0),
            ("zone_ops", vec![target(1, 0)], 0),
            ("write_latency_ns", vec![target(1, 1)], u64::MAX),
        ] {
            let config = PmemBenchConfig {
                targets,
                sizes: vec![64],
                emulation: Emulation {
                    write_latency_ns,
                    ..Emulation::default()
                },
            };
            let e = run(&config, "test".into()).unwrap_err().to_string();
            assert!(e.starts_with(name), "{name}: {e}");
        }
    }
}
