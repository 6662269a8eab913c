//! Byte sizes on the command line: `4096`, `64K`, `4MiB`, `8G` (binary units).

pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 4096, 64K, 4MiB, 8G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("unknown size unit {other:?} in {s:?}")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Formats a byte count with a binary unit.
pub fn fmt_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("8g"), Ok(8 << 30));
        assert!(parse_size("4 parsecs").unwrap_err().contains("unit"));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
        assert!(
            parse_size("99999999999T")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn formats_units() {
        assert_eq!(fmt_size(512), "512 B");
        assert_eq!(fmt_size(4 << 20), "4 MiB");
        assert_eq!(fmt_size(1536), "1.5 KiB");
    }
}
