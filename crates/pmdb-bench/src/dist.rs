//! Request distributions for key choice, as YCSB defines them: uniform, and zipfian with
//! constant 0.99 (Gray et al.'s generator), scrambled by hashing so that popular keys are
//! spread over the key space.

use rand::Rng;

use crate::limits::InvalidSetting;

/// FNV-1a of a 64-bit integer: YCSB's scrambling hash.
pub fn fnv64(v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_le_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Zipfian over `0..items`: item 0 most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipfian {
    /// Over no items there is nothing to draw, and a constant outside (0, 1) makes the
    /// generator's exponents infinite or negative.
    pub fn new(items: u64, theta: f64) -> Result<Zipfian, InvalidSetting> {
        if items == 0 {
            return Err(InvalidSetting::new(
                "zipfian items",
                "must be at least 1, not 0",
            ));
        }
        if !(theta > 0.0 && theta < 1.0) {
            return Err(InvalidSetting::new(
                "zipfian constant",
                format!("must be strictly between 0 and 1, not {theta}"),
            ));
        }
        let zetan = zeta(items, theta);
        let zeta2 = zeta(2, theta);
        Ok(Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        })
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let v = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.items - 1)
    }

    /// A zipfian draw hashed over the item space (YCSB's scrambled zipfian).
    pub fn next_scrambled(&self, rng: &mut impl Rng) -> u64 {
        fnv64(self.next(rng)) % self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn zipfian_is_skewed_like_ycsb() {
        let z = Zipfian::new(10_000, ZIPFIAN_CONSTANT).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let n = 200_000;
        let mut counts = vec![0u32; 10_000];
        for _ in 0..n {
            counts[z.next(&mut rng) as usize] += 1;
        }
        // Item 0 gets 1/zeta(n) of the draws (about 10% for 10,000 items at 0.99).
        let p0 = counts[0] as f64 / n as f64;
        let expected = 1.0 / zeta(10_000, ZIPFIAN_CONSTANT);
        assert!((p0 - expected).abs() < 0.01, "p0 {p0}, expected {expected}");
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 as f64 / n as f64 > 0.25, "top 10 share {top10}");
        assert!(counts[0] > counts[1] && counts[1] > counts[9]);
    }

    #[test]
    fn scrambled_stays_in_range_and_spreads_the_hot_keys() {
        let z = Zipfian::new(1000, ZIPFIAN_CONSTANT).unwrap();
        let mut rng = SmallRng::seed_from_u64(2);
        let draws: Vec<u64> = (0..10_000).map(|_| z.next_scrambled(&mut rng)).collect();
        assert!(draws.iter().all(|&d| d < 1000));
        assert_ne!(fnv64(0) % 1000, 0, "the hottest key is not item 0");
    }

    #[test]
    fn refuses_no_items_and_bad_constants() {
        assert!(Zipfian::new(0, ZIPFIAN_CONSTANT).is_err());
        for theta in [0.0, 1.0, -1.0, f64::NAN] {
            assert!(Zipfian::new(10, theta).is_err(), "{theta}");
        }
        let one = Zipfian::new(1, ZIPFIAN_CONSTANT).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        assert!((0..100).all(|_| one.next_scrambled(&mut rng) == 0));
    }
}
