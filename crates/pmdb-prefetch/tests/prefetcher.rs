//! The prefetcher end to end on this machine: helpers take every job, count its lines,
//! never block the producer, drop what does not fit, and stop on drop.

use std::time::{Duration, Instant};

use pmdb_prefetch::{Mapping, PrefetchOptions, Prefetcher, Topology};

fn wait_idle(p: &Prefetcher) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.is_idle() {
        assert!(Instant::now() < deadline, "helpers did not finish: {p:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn m1() -> Option<Prefetcher> {
    match Prefetcher::start(&PrefetchOptions::default()) {
        Ok(p) => Some(p),
        // A one-core machine has nowhere to put an M1 helper; the error says so.
        Err(e) if Topology::detect().cores.len() < 2 => {
            assert!(e.to_string().contains("second core"), "{e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn helpers_prefetch_every_line_of_every_job() {
    let Some(p) = m1() else { return };
    assert!(!p.placement().far.is_empty());
    let data = vec![7u8; 1 << 20];
    // Ranges starting inside a line and crossing lines count every line they touch.
    let jobs = [(0usize, 64usize), (10, 64), (100, 1000), (4096, 65536)];
    for &(at, len) in &jobs {
        assert!(p.push(data[at..].as_ptr(), len));
    }
    wait_idle(&p);
    let lines: u64 = jobs
        .iter()
        .map(|&(at, len)| {
            let start = (data.as_ptr() as usize + at) & !63;
            (data.as_ptr() as usize + at + len - start).div_ceil(64) as u64
        })
        .sum();
    let s = p.stats();
    assert_eq!((s.queued, s.dropped, s.done, s.lines), (4, 0, 4, lines));
    // Memory that is gone is no hazard: a prefetch of it does nothing.
    drop(data);
    assert!(p.push(std::ptr::null(), 4096));
    wait_idle(&p);
    assert_eq!(p.stats().done, 5);
}

#[test]
fn a_full_queue_drops_jobs_and_never_blocks() {
    let Some(p) = Prefetcher::start(&PrefetchOptions {
        queue_capacity: 2,
        ..PrefetchOptions::default()
    })
    .ok() else {
        return;
    };
    let big = vec![1u8; 64 << 20];
    let started = Instant::now();
    let accepted = (0..1000)
        .filter(|_| p.push(big.as_ptr(), big.len()))
        .count() as u64;
    // A thousand pushes take far less than one 64 MiB job does.
    assert!(started.elapsed() < Duration::from_secs(1));
    wait_idle(&p);
    let s = p.stats();
    assert_eq!(s.queued, accepted);
    assert_eq!(s.queued + s.dropped, 1000);
    assert!(s.dropped > 0, "{s:?}");
}

#[test]
fn bad_options_are_errors() {
    for options in [
        PrefetchOptions {
            helpers: 0,
            ..PrefetchOptions::default()
        },
        PrefetchOptions {
            queue_capacity: 0,
            ..PrefetchOptions::default()
        },
    ] {
        assert!(Prefetcher::start(&options).is_err());
    }
    let no_smt = Topology {
        cores: vec![vec![0], vec![1]],
    };
    let e = Prefetcher::start_on(
        &PrefetchOptions {
            mapping: Mapping::M2,
            ..PrefetchOptions::default()
        },
        &no_smt,
    )
    .unwrap_err();
    assert!(e.to_string().contains("SMT"), "{e}");
}

#[test]
fn m3_passes_jobs_through_both_stages() {
    // A made-up machine with SMT: the helpers are pinned where the mapping says (the
    // pinning of a CPU this machine lacks is refused, and the helper runs unpinned).
    let smt = Topology {
        cores: vec![vec![0, 2], vec![1, 3]],
    };
    let p = Prefetcher::start_on(
        &PrefetchOptions {
            mapping: Mapping::M3,
            ..PrefetchOptions::default()
        },
        &smt,
    )
    .unwrap();
    assert_eq!(
        (p.placement().far.as_slice(), p.placement().near.as_slice()),
        (&[1][..], &[2][..])
    );
    let data = vec![0u8; 8192];
    for _ in 0..10 {
        p.push(data.as_ptr(), data.len());
    }
    wait_idle(&p);
    let s = p.stats();
    assert_eq!(s.done + s.dropped, 10, "{s:?}");
    assert_eq!(
        s.lines,
        s.done * 128 + u64::from(!(data.as_ptr() as usize).is_multiple_of(64)) * s.done
    );
}
