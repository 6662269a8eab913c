//! PostgreSQL's NUMERIC on the wire for pmdb's decimals (up to 38 digits, a scale per
//! column): in text, the digits with exactly the scale's fraction digits; in binary,
//! PostgreSQL's form — digit count, weight, sign and display scale, then base-10000
//! digits, most significant first. Both ways, so parameters of 29 to 38 digits read as
//! results of that size are written.

use std::fmt;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::types::ToSqlText;
use postgres_types::{IsNull, ToSql};

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// Why a value does not read as a decimal: its SQLSTATE and message.
pub type NumericError = (&'static str, String);

const INVALID_TEXT: &str = "22P02";
const INVALID_BINARY: &str = "22P03";
const OUT_OF_RANGE: &str = "22003";

fn overflow() -> NumericError {
    (
        OUT_OF_RANGE,
        "numeric field overflow: more than 38 digits".into(),
    )
}

const POSITIVE: u16 = 0x0000;
const NEGATIVE: u16 = 0x4000;
const NOT_A_NUMBER: u16 = 0xC000;

/// The most digits pmdb's decimals hold.
const MAX_DIGITS: usize = 38;

/// A decimal: `mantissa` × 10^-`scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numeric {
    pub mantissa: i128,
    pub scale: u32,
}

impl Numeric {
    /// The digits of the absolute value, with at least `scale + 1` of them (leading
    /// zeros added), so that the integer part has one digit or more.
    fn padded_digits(&self) -> Vec<u8> {
        let mut digits = self.mantissa.unsigned_abs().to_string().into_bytes();
        let scale = self.scale as usize;
        if digits.len() <= scale {
            let mut padded = vec![b'0'; scale + 1 - digits.len()];
            padded.append(&mut digits);
            digits = padded;
        }
        digits
    }

    /// Reads PostgreSQL's text form: a sign, digits with a point anywhere, an exponent
    /// (`-1.5e3`); the scale is the fraction's digits (none below zero).
    pub fn parse(text: &str) -> Result<Numeric, NumericError> {
        let invalid = || {
            (
                INVALID_TEXT,
                format!("invalid input syntax for type numeric: \"{text}\""),
            )
        };
        let t = text.trim();
        let (negative, t) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let (number, exponent) = match t.find(['e', 'E']) {
            Some(at) => (&t[..at], t[at + 1..].parse::<i32>().map_err(|_| invalid())?),
            None => (t, 0),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return Err(invalid());
        }
        let scale = i64::try_from(fraction.len()).map_err(|_| invalid())? - i64::from(exponent);
        if scale.unsigned_abs() > MAX_DIGITS as u64 {
            return Err(overflow());
        }
        let mut digits = format!("{whole}{fraction}");
        let scale = if scale < 0 {
            digits.extend(std::iter::repeat_n('0', scale.unsigned_abs() as usize));
            0
        } else {
            scale
        };
        let digits = digits.trim_start_matches('0');
        if digits.len() > MAX_DIGITS {
            return Err(overflow());
        }
        let magnitude: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| overflow())?
        };
        Ok(Numeric {
            mantissa: if negative { -magnitude } else { magnitude },
            scale: u32::try_from(scale).map_err(|_| overflow())?,
        })
    }

    /// Reads PostgreSQL's binary form.
    pub fn from_binary(raw: &[u8]) -> Result<Numeric, NumericError> {
        let invalid = |why: &str| (INVALID_BINARY, format!("invalid numeric data: {why}"));
        let word = |i: usize| -> Result<u16, NumericError> {
            raw.get(i * 2..i * 2 + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
                .ok_or_else(|| invalid("it ends early"))
        };
        let count = usize::from(word(0)?);
        let weight = i32::from(word(1)? as i16);
        let sign = word(2)?;
        let scale = u32::from(word(3)?);
        if sign == NOT_A_NUMBER {
            return Err(("0A000", "NaN is not a value of pmdb's decimals".into()));
        }
        if scale as usize > MAX_DIGITS {
            return Err(overflow());
        }
        if (sign != POSITIVE && sign != NEGATIVE) || raw.len() != 8 + count * 2 {
            return Err(invalid("wrong sign or length"));
        }
        // The digits as one integer G, worth G × 10000^last_power; the mantissa is the
        // value times 10^scale: G's digits with `tens` zeros added, or taken off.
        let last_power = weight - i32::try_from(count).map_err(|_| overflow())? + 1;
        let mut digits = String::with_capacity(count * 4);
        for i in 0..count {
            let digit = word(4 + i)?;
            if digit >= 10_000 {
                return Err(invalid("a digit beyond 9999"));
            }
            digits.push_str(&format!("{digit:04}"));
        }
        let tens = i64::from(last_power) * 4 + i64::from(scale);
        if tens < 0 {
            let cut = usize::try_from(-tens).map_err(|_| overflow())?;
            let keep = digits
                .len()
                .checked_sub(cut)
                .ok_or_else(|| invalid("digits beyond its display scale"))?;
            if digits[keep..].bytes().any(|b| b != b'0') {
                return Err(invalid("digits beyond its display scale"));
            }
            digits.truncate(keep);
        } else {
            let zeros = usize::try_from(tens).map_err(|_| overflow())?;
            if zeros > MAX_DIGITS {
                return Err(overflow());
            }
            digits.extend(std::iter::repeat_n('0', zeros));
        }
        let digits = digits.trim_start_matches('0');
        if digits.len() > MAX_DIGITS {
            return Err(overflow());
        }
        let magnitude: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| overflow())?
        };
        Ok(Numeric {
            mantissa: if sign == NEGATIVE {
                -magnitude
            } else {
                magnitude
            },
            scale,
        })
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = String::from_utf8(self.padded_digits()).map_err(|_| fmt::Error)?;
        let point = digits.len() - self.scale as usize;
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        f.write_str(&digits[..point])?;
        if self.scale > 0 {
            write!(f, ".{}", &digits[point..])?;
        }
        Ok(())
    }
}

impl ToSqlText for Numeric {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _options: &pgwire::types::format::FormatOptions,
    ) -> Result<IsNull, BoxError> {
        out.put_slice(self.to_string().as_bytes());
        Ok(IsNull::No)
    }
}

impl ToSql for Numeric {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let digits = self.padded_digits();
        let point = digits.len() - self.scale as usize;
        // Whole part padded on the left, fraction on the right, to groups of four.
        let whole_pad = (4 - point % 4) % 4;
        let fraction_len = digits.len() - point;
        let fraction_pad = (4 - fraction_len % 4) % 4;
        let mut all = vec![b'0'; whole_pad];
        all.extend_from_slice(&digits);
        all.extend(std::iter::repeat_n(b'0', fraction_pad));
        let mut groups: Vec<i16> = all
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |n, d| n * 10 + i16::from(d - b'0')))
            .collect();
        let mut weight =
            i16::try_from((point + whole_pad) / 4).map_err(|_| "numeric too long")? - 1;
        while groups.first() == Some(&0) {
            groups.remove(0);
            weight -= 1;
        }
        while groups.last() == Some(&0) {
            groups.pop();
        }
        if groups.is_empty() {
            weight = 0;
        }
        out.put_i16(i16::try_from(groups.len()).map_err(|_| "numeric too long")?);
        out.put_i16(weight);
        out.put_u16(if self.mantissa < 0 {
            NEGATIVE
        } else {
            POSITIVE
        });
        out.put_u16(u16::try_from(self.scale).map_err(|_| "numeric scale too large")?);
        for g in groups {
            out.put_i16(g);
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    postgres_types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_types::FromSql;
    use rust_decimal::Decimal;

    fn text(n: Numeric) -> String {
        let mut out = BytesMut::new();
        n.to_sql_text(&Type::NUMERIC, &mut out, &Default::default())
            .unwrap();
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn binary(n: Numeric) -> Vec<u8> {
        let mut out = BytesMut::new();
        n.to_sql(&Type::NUMERIC, &mut out).unwrap();
        out.to_vec()
    }

    #[test]
    fn written_as_rust_decimal_writes_what_it_can_hold() {
        for (m, s) in [
            (0i128, 0u32),
            (0, 2),
            (1, 0),
            (-1, 3),
            (12345, 2),
            (100_000, 0),
            (10_000, 4),
            (-99_999_999, 8),
            (7, 10),
            (123_456_789_012_345, 5),
        ] {
            let n = Numeric {
                mantissa: m,
                scale: s,
            };
            let d = Decimal::from_i128_with_scale(m, s);
            assert_eq!(text(n), d.to_string(), "{m}e-{s}");
            // Each reads the other's binary form (PostgreSQL's has no trailing zero
            // digits; rust_decimal's may).
            let mut theirs = BytesMut::new();
            d.to_sql(&Type::NUMERIC, &mut theirs).unwrap();
            let back = Numeric::from_binary(&theirs).unwrap();
            assert_eq!(Decimal::from_i128_with_scale(back.mantissa, back.scale), d);
            assert_eq!(Decimal::from_sql(&Type::NUMERIC, &binary(n)).unwrap(), d);
            assert_eq!(Numeric::from_binary(&binary(n)).unwrap(), n);
            assert_eq!(Numeric::parse(&text(n)).unwrap(), n);
        }
    }

    #[test]
    fn thirty_eight_digits_go_both_ways() {
        let max = 10i128.pow(38) - 1;
        for (m, s) in [
            (max, 0u32),
            (-max, 10),
            (-18_446_744_073_709_551_616_000_000_000, 9),
        ] {
            let n = Numeric {
                mantissa: m,
                scale: s,
            };
            assert_eq!(Numeric::from_binary(&binary(n)).unwrap(), n);
            assert_eq!(Numeric::parse(&text(n)).unwrap(), n);
        }
        assert_eq!(
            text(Numeric {
                mantissa: -max,
                scale: 10
            }),
            "-9999999999999999999999999999.9999999999"
        );
    }

    #[test]
    fn text_input_as_postgresql_reads_it() {
        let n = |t: &str| Numeric::parse(t).unwrap();
        assert_eq!(
            n("1.50"),
            Numeric {
                mantissa: 150,
                scale: 2
            }
        );
        assert_eq!(
            n("-.5"),
            Numeric {
                mantissa: -5,
                scale: 1
            }
        );
        assert_eq!(
            n("1.5e3"),
            Numeric {
                mantissa: 1500,
                scale: 0
            }
        );
        assert_eq!(
            n("15e-3"),
            Numeric {
                mantissa: 15,
                scale: 3
            }
        );
        for bad in [
            "",
            "abc",
            "1.2.3",
            "--1",
            "1e",
            "1e999999999999",
            "1e2000000000",
            "1e-50",
            &"9".repeat(39),
        ] {
            assert!(Numeric::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn damaged_binary_is_an_error() {
        let good = binary(Numeric {
            mantissa: 123_456_789,
            scale: 3,
        });
        for cut in 0..good.len() {
            assert!(Numeric::from_binary(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_digit = good.clone();
        bad_digit[8..10].copy_from_slice(&20_000u16.to_be_bytes());
        assert!(Numeric::from_binary(&bad_digit).is_err());
        let mut nan = good;
        nan[4..6].copy_from_slice(&NOT_A_NUMBER.to_be_bytes());
        assert!(Numeric::from_binary(&nan).is_err());
    }
}
