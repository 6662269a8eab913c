//! The crash-test harness: runs a workload on the crash simulator, crashes it at crash
//! point k for every k (or a seeded sample of them when there are many) — the points are
//! the pool's fences and the state-changing operations on its files (`Pool::files`) —
//! reopens each crash image, pool and files, and runs the caller's recovery checker
//! against what the workload had acknowledged by then. A failure names the seed and crash
//! point that reproduce it.

use std::collections::BTreeSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::crashsim::{CrashImage, SimStore};
use crate::options::PoolOptions;
use crate::pool::Pool;

/// What a workload has been told is durable, stamped with the crash points passed then.
pub struct AckLog<T> {
    sim: Arc<SimStore>,
    acks: Vec<(u64, T)>,
}

impl<T> AckLog<T> {
    /// Records that `item` was acknowledged to the caller as durable.
    pub fn ack(&mut self, item: T) {
        self.acks.push((self.sim.fences(), item));
    }
}

/// A crash test: pool options, seed, how many crash points and word mixes.
#[derive(Clone, Debug)]
pub struct CrashTest {
    options: PoolOptions,
    seed: u64,
    max_points: usize,
    mixes: u32,
    only_point: Option<u64>,
}

/// What a passing crash test covered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashReport {
    /// Crash points the workload passed (fences and file operations).
    pub fences: u64,
    /// Crash points tested.
    pub points: usize,
    /// Crash images recovered and checked (points × mixes).
    pub images: usize,
}

/// The first failing crash image of a run, with everything needed to reproduce it.
#[derive(Clone, Debug)]
pub struct CrashFailure {
    pub seed: u64,
    pub point: u64,
    pub mix_seed: u64,
    pub fences: u64,
    pub failed_images: usize,
    pub message: String,
}

impl fmt::Display for CrashFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "crash test failed at crash point {} of {} (seed {}, mix seed {:#x}; {} \
             failing images): {}\nreproduce with CrashTest::new({}).replay({})",
            self.point,
            self.fences,
            self.seed,
            self.mix_seed,
            self.failed_images,
            self.message,
            self.seed,
            self.point
        )
    }
}

impl std::error::Error for CrashFailure {}

impl CrashTest {
    /// A crash test on `PoolOptions::small()`, every crash point up to 2,000 of them, one
    /// mix each.
    pub fn new(seed: u64) -> CrashTest {
        CrashTest {
            options: PoolOptions::small(),
            seed,
            max_points: 2000,
            mixes: 1,
            only_point: None,
        }
    }

    pub fn options(mut self, options: PoolOptions) -> CrashTest {
        self.options = options;
        self
    }

    /// Above this many crash points, they are a seeded sample of this size.
    pub fn max_points(mut self, max_points: usize) -> CrashTest {
        self.max_points = max_points.max(2);
        self
    }

    /// Word mixes (crash images) per crash point.
    pub fn mixes(mut self, mixes: u32) -> CrashTest {
        self.mixes = mixes.max(1);
        self
    }

    /// Tests only `point` (to reproduce a reported failure).
    pub fn replay(mut self, point: u64) -> CrashTest {
        self.only_point = Some(point);
        self
    }

    /// Runs `workload` (which must be deterministic) twice on the crash simulator: once to
    /// count its crash points, once capturing crash images at the chosen points. Each
    /// image is opened (allocator recovery, files restored) and handed to `check` with the
    /// items acknowledged before that crash point and the first one acknowledged after it
    /// — the operation in flight at the crash, whose effect may or may not be visible
    /// (workloads here are single-threaded, so at most one is). `check` runs the caller's
    /// recovery and returns an error (or panics) if an invariant is broken.
    pub fn run<T, W, C>(&self, workload: W, check: C) -> Result<CrashReport, CrashFailure>
    where
        W: Fn(&Arc<Pool>, &mut AckLog<T>),
        C: Fn(&Arc<Pool>, &[&T], Option<&T>) -> Result<(), String>,
    {
        let failure = |point, message: String| CrashFailure {
            seed: self.seed,
            point,
            mix_seed: 0,
            fences: 0,
            failed_images: 1,
            message,
        };
        let (fences, _) = self.execute(&workload, None).map_err(|m| failure(0, m))?;
        let points = self.points(fences);
        let (fences2, (images, acks)) = self
            .execute(&workload, Some(&points))
            .map_err(|m| failure(0, m))?;
        if fences2 != fences {
            return Err(failure(
                0,
                format!("workload is not deterministic: {fences} crash points, then {fences2}"),
            ));
        }
        let mut first: Option<CrashFailure> = None;
        let mut failed = 0;
        for image in &images {
            if let Err(message) = self.check_image(image, &acks, &check) {
                failed += 1;
                first.get_or_insert(CrashFailure {
                    seed: self.seed,
                    point: image.point,
                    mix_seed: image.seed,
                    fences,
                    failed_images: 0,
                    message,
                });
            }
        }
        match first {
            Some(mut f) => {
                f.failed_images = failed;
                Err(f)
            }
            None => Ok(CrashReport {
                fences,
                points: points.len(),
                images: images.len(),
            }),
        }
    }

    fn points(&self, fences: u64) -> BTreeSet<u64> {
        if let Some(p) = self.only_point {
            return BTreeSet::from([p]);
        }
        let total = fences + 1;
        if total as usize <= self.max_points {
            return (0..total).collect();
        }
        let mut rng = SmallRng::seed_from_u64(self.seed);
        // The first and last points always, a sample of the ones between.
        let mut points: BTreeSet<u64> =
            rand::seq::index::sample(&mut rng, (fences - 1) as usize, self.max_points - 2)
                .into_iter()
                .map(|p| p as u64 + 1)
                .collect();
        points.insert(0);
        points.insert(fences);
        points
    }

    #[allow(clippy::type_complexity)]
    fn execute<T, W>(
        &self,
        workload: &W,
        capture: Option<&BTreeSet<u64>>,
    ) -> Result<(u64, (Vec<CrashImage>, Vec<(u64, T)>)), String>
    where
        W: Fn(&Arc<Pool>, &mut AckLog<T>),
    {
        let pool = Arc::new(Pool::create_sim(&self.options).map_err(|e| e.to_string())?);
        let sim = Arc::clone(pool.sim().expect("simulated pool"));
        if let Some(points) = capture {
            sim.arm(points.clone(), self.seed, self.mixes);
        }
        let mut log = AckLog {
            sim: Arc::clone(&sim),
            acks: Vec::new(),
        };
        catch_unwind(AssertUnwindSafe(|| workload(&pool, &mut log)))
            .map_err(|p| format!("workload panicked: {}", panic_message(&p)))?;
        sim.capture_final();
        Ok((sim.fences(), (sim.take_images(), log.acks)))
    }

    fn check_image<T, C>(
        &self,
        image: &CrashImage,
        acks: &[(u64, T)],
        check: &C,
    ) -> Result<(), String>
    where
        C: Fn(&Arc<Pool>, &[&T], Option<&T>) -> Result<(), String>,
    {
        let acked: Vec<&T> = acks
            .iter()
            .filter(|(f, _)| *f <= image.point)
            .map(|(_, t)| t)
            .collect();
        let in_flight = acks.iter().find(|(f, _)| *f > image.point).map(|(_, t)| t);
        catch_unwind(AssertUnwindSafe(|| {
            let pool = Arc::new(
                Pool::open_image(image, &self.options)
                    .map_err(|e| format!("recovery failed to open the image: {e}"))?,
            );
            check(&pool, &acked, in_flight)
        }))
        .unwrap_or_else(|p| Err(format!("check panicked: {}", panic_message(&p))))
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic".into())
}
