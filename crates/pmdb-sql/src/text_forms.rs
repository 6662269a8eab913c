//! PostgreSQL's text forms of BYTEA and UUID, read and written as PostgreSQL does: a
//! bytea is `\x` and hex digits (or the older escape form, `\ooo` and `\\`), a uuid is
//! 32 hex digits, in either case, with hyphens after any group of four and optionally in
//! braces, always written lower-case in the 8-4-4-4-12 form. REAL and DOUBLE PRECISION
//! as PostgreSQL writes them (`extra_float_digits` 1, its default): the fewest digits
//! that read back as the same value, in fixed notation while the exponent is from -4 to
//! below the type's digits (15 for a double, 6 for a real), else as `1.5e+20`, with a
//! sign and at least two exponent digits; `NaN`, `Infinity`, `-Infinity`.

use crate::error::{SqlError, state};

/// The bytes of the bytea text `s`.
pub fn parse_bytea(s: &str) -> Result<Vec<u8>, SqlError> {
    let invalid = || {
        SqlError::user(
            state::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type bytea: {s:?}"),
        )
    };
    if let Some(hex) = s.strip_prefix("\\x") {
        let digits: Vec<u8> = hex
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .map(|b| {
                (b as char)
                    .to_digit(16)
                    .map(|d| d as u8)
                    .ok_or_else(invalid)
            })
            .collect::<Result<_, _>>()?;
        if !digits.len().is_multiple_of(2) {
            return Err(invalid());
        }
        return Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect());
    }
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
        } else if bytes.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let octal = bytes.get(i + 1..i + 4).ok_or_else(invalid)?;
            let valid = octal[0] <= b'3' && octal.iter().all(|b| (b'0'..=b'7').contains(b));
            if !valid {
                return Err(invalid());
            }
            out.push(octal.iter().fold(0u8, |v, d| v << 3 | (d - b'0')));
            i += 4;
        }
    }
    Ok(out)
}

/// The bytea text of `bytes` (PostgreSQL's default `hex` output).
pub fn bytea_text(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("\\x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The text PostgreSQL writes for a timestamp (`zone`: a timestamptz, shown in UTC):
/// seconds with as many fraction digits as they need, up to microseconds.
pub fn timestamp_text(at: chrono::NaiveDateTime, zone: bool) -> String {
    let mut text = at.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    if zone {
        text.push_str("+00");
    }
    text
}

/// The uuid the text `s` names.
pub fn parse_uuid(s: &str) -> Result<u128, SqlError> {
    let invalid = || {
        SqlError::user(
            state::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type uuid: {s:?}"),
        )
    };
    let inner = match s.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}').ok_or_else(invalid)?,
        None => s,
    };
    let mut value = 0u128;
    let mut digits = 0;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        let d = c.to_digit(16).ok_or_else(invalid)?;
        value = value << 4 | u128::from(d);
        digits += 1;
        // A hyphen may follow any group of four digits, except the last.
        if digits % 4 == 0 && digits < 32 && chars.peek() == Some(&'-') {
            chars.next();
        }
    }
    if digits == 32 {
        Ok(value)
    } else {
        Err(invalid())
    }
}

/// The canonical text of the uuid `u`.
pub fn uuid_text(u: u128) -> String {
    let h = format!("{u:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Whether `s` is a uuid's canonical text (what [`uuid_text`] writes).
pub fn is_canonical_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// The first exponent written in exponential notation: the type's decimal digits.
const DOUBLE_DIGITS: i32 = 15;
const REAL_DIGITS: i32 = 6;

/// A double in PostgreSQL's text.
pub fn double_text(v: f64) -> String {
    special(v.is_nan(), v.is_infinite(), v < 0.0)
        .unwrap_or_else(|| laid_out(&format!("{v:e}"), DOUBLE_DIGITS))
}

/// A real in PostgreSQL's text.
pub fn real_text(v: f32) -> String {
    special(v.is_nan(), v.is_infinite(), v < 0.0)
        .unwrap_or_else(|| laid_out(&format!("{v:e}"), REAL_DIGITS))
}

fn special(nan: bool, infinite: bool, negative: bool) -> Option<String> {
    match (nan, infinite, negative) {
        (true, _, _) => Some("NaN".into()),
        (false, true, false) => Some("Infinity".into()),
        (false, true, true) => Some("-Infinity".into()),
        _ => None,
    }
}

/// Rust's shortest exponential form of a finite number (`-1.25e-7`, `8e0`) laid out as
/// PostgreSQL lays it out.
fn laid_out(exponential: &str, digits_limit: i32) -> String {
    let (mantissa, exponent) = exponential.split_once('e').unwrap_or((exponential, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::from(sign);
    if (-4..digits_limit).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        } else {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exponent < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exponent.unsigned_abs()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bytea_in_both_forms() {
        assert_eq!(parse_bytea("\\xDEad01").unwrap(), [0xde, 0xad, 1]);
        assert_eq!(parse_bytea("\\x").unwrap(), b"");
        assert_eq!(parse_bytea("ab\\\\c\\000\\377").unwrap(), b"ab\\c\0\xff");
        for bad in ["\\x1", "\\xzz", "a\\9", "a\\", "\\400"] {
            assert!(parse_bytea(bad).is_err(), "{bad}");
        }
        assert_eq!(bytea_text(&[0, 0xab]), "\\x00ab");
    }

    #[test]
    fn uuids_in_every_form_postgresql_reads() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for form in [
            canonical,
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
        ] {
            assert_eq!(uuid_text(parse_uuid(form).unwrap()), canonical, "{form}");
        }
        for bad in [
            "",
            "a0eebc99",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "g0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11-",
            "a0eebc999c0b4ef8bb6d6bb9bd380a1100",
        ] {
            assert!(parse_uuid(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn texts_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..40), u in any::<u128>()) {
            prop_assert_eq!(parse_bytea(&bytea_text(&bytes)).unwrap(), bytes);
            prop_assert_eq!(parse_uuid(&uuid_text(u)).unwrap(), u);
            prop_assert!(is_canonical_uuid(&uuid_text(u)));
        }

        /// Canonical uuid texts sort as their values do.
        #[test]
        fn uuid_text_order_is_value_order(a in any::<u128>(), b in any::<u128>()) {
            prop_assert_eq!(uuid_text(a).cmp(&uuid_text(b)), a.cmp(&b));
        }
    }

    #[test]
    fn doubles_read_as_postgresql_writes_them() {
        // PostgreSQL 15's answers to SELECT x::float8.
        for (v, text) in [
            (8.0, "8"),
            (2.5, "2.5"),
            (-0.5, "-0.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e15, "1e+15"),
            (123_456_789_012_345.0, "123456789012345"),
            (1_234_567_890_123_456.0, "1.234567890123456e+15"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000_123_4, "0.0001234"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1.0 / 3.0, "0.3333333333333333"),
            (100.0, "100"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(double_text(v), text, "{v:?}");
        }
    }

    #[test]
    fn reals_read_as_postgresql_writes_them() {
        for (v, text) in [
            (0.1f32, "0.1"),
            (8.0, "8"),
            (123_456.0, "123456"),
            (1_234_567.0, "1.234567e+06"),
            (1e-5, "1e-05"),
            (3.4028235e38, "3.4028235e+38"),
            (1.0 / 3.0, "0.33333334"),
        ] {
            assert_eq!(real_text(v), text, "{v:?}");
        }
    }

    #[test]
    fn every_text_reads_back_as_its_value() {
        let mut x = 1.234_567_891_234_5e-310_f64;
        while x.is_finite() {
            assert_eq!(double_text(x).parse::<f64>().unwrap(), x);
            assert_eq!(double_text(-x).parse::<f64>().unwrap(), -x);
            x *= 7.3;
        }
    }
}
