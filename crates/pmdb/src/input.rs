//! Parsing and range-checking what the command line gives: every numeric option goes
//! through one of these parsers, so a zero, an absurd value, a sign, a fraction or a
//! wrong unit is refused before any work starts, in the one sentence
//! [`pmdb_bench::limits::accepted`] phrases ("must be a whole number from 1 to 1024").

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

use pmdb_bench::limits::{InvalidSetting, accepted, fmt_bytes};

/// A clap value parser: what every parser here returns.
pub trait OptionParser<T>: Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {}
impl<T, F: Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static> OptionParser<T> for F {}

/// A whole number in `range`.
pub fn whole<T>(range: RangeInclusive<T>) -> impl OptionParser<T>
where
    T: FromStr + PartialOrd + Display + Clone + Send + Sync + 'static,
{
    move |s| {
        s.trim()
            .parse::<T>()
            .ok()
            .filter(|v| range.contains(v))
            .ok_or_else(|| accepted("a whole number", range.start(), range.end()))
    }
}

/// A byte size in `range`, written `4096`, `64K`, `4MiB` or `8G` (binary units).
pub fn size(range: RangeInclusive<u64>) -> impl OptionParser<u64> {
    sized("a size", range, |_| true)
}

/// A byte size in `range` that is a power of two.
pub fn power_of_two_size(range: RangeInclusive<u64>) -> impl OptionParser<u64> {
    sized("a power of two", range, u64::is_power_of_two)
}

fn sized(
    kind: &'static str,
    range: RangeInclusive<u64>,
    ok: fn(u64) -> bool,
) -> impl OptionParser<u64> {
    move |s| {
        parse_size(s)
            .filter(|v| range.contains(v) && ok(*v))
            .ok_or_else(|| {
                format!(
                    "{}, such as 4096, 64K or 4MiB",
                    accepted(kind, fmt_bytes(*range.start()), fmt_bytes(*range.end()))
                )
            })
    }
}

/// A latency factor in `range`, written `4x` or `4`.
pub fn factor(range: RangeInclusive<u32>) -> impl OptionParser<u32> {
    move |s| {
        s.trim()
            .trim_end_matches(['x', 'X'])
            .parse::<u32>()
            .ok()
            .filter(|v| range.contains(v))
            .ok_or_else(|| {
                accepted(
                    "a latency factor",
                    format_args!("{}x", range.start()),
                    format_args!("{}x", range.end()),
                )
            })
    }
}

/// A setting the benchmark library refused, named as the option that set it.
pub fn as_option(e: InvalidSetting) -> String {
    format!("--{} {}", e.name.replace('_', "-"), e.reason)
}

/// `4096`, `64K`, `4MiB`, `8G`; None for anything else, or for a size beyond u64.
fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("4MiB"), Some(4 << 20));
        assert_eq!(parse_size("8g"), Some(8 << 30));
        for bad in [
            "4 parsecs",
            "4XB",
            "lots",
            "-4K",
            "1.5M",
            "",
            "99999999999T",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn refuses_out_of_range_in_one_sentence() {
        let threads = whole(1..=8usize);
        assert_eq!(threads("3"), Ok(3));
        for bad in ["0", "9", "-1", "2.5", "4K", "many", "100000000000000000000"] {
            assert_eq!(
                threads(bad),
                Err("must be a whole number from 1 to 8".into()),
                "{bad}"
            );
        }
        let zone = power_of_two_size(4096..=1 << 30);
        assert_eq!(zone("64K"), Ok(64 << 10));
        assert_eq!(
            zone("5000"),
            Err("must be a power of two from 4 KiB to 1 GiB, such as 4096, 64K or 4MiB".into())
        );
        assert!(size(1..=1 << 20)("2M").is_err());
        let f = factor(1..=16);
        assert_eq!(f("4x"), Ok(4));
        assert_eq!(
            f("0x"),
            Err("must be a latency factor from 1x to 16x".into())
        );
        assert_eq!(
            as_option(InvalidSetting::new("put_ops", "must be …")),
            "--put-ops must be …"
        );
    }
}
