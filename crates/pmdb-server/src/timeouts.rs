//! The time limits a client sets, as PostgreSQL reads and shows them: `statement_timeout`
//! (a statement running longer is cancelled, 57014), `lock_timeout` (a row-lock wait
//! lasting longer fails, 55P03; the SQL session enforces it) and
//! `idle_in_transaction_session_timeout` (a client idle that long in a block is
//! disconnected, 25P03). A value is milliseconds, or a number with a unit (`us`, `ms`,
//! `s`, `min`, `h`, `d`); 0 means no limit.

use std::time::Duration;

use pmdb_sql::SqlError;

pub const STATEMENT: &str = "statement_timeout";
pub const LOCK: &str = "lock_timeout";
pub const IDLE_IN_TRANSACTION: &str = "idle_in_transaction_session_timeout";

/// The settings this module reads.
pub fn is_timeout(name: &str) -> bool {
    matches!(name, STATEMENT | LOCK | IDLE_IN_TRANSACTION)
}

/// Units PostgreSQL accepts for times, in milliseconds each.
const UNITS: [(&str, f64); 6] = [
    ("us", 0.001),
    ("ms", 1.0),
    ("s", 1_000.0),
    ("min", 60_000.0),
    ("h", 3_600_000.0),
    ("d", 86_400_000.0),
];

/// The largest limit PostgreSQL takes (its settings are 32-bit).
const MAX_MS: f64 = i32::MAX as f64;

/// `value` of setting `name` in milliseconds, or 22023 as PostgreSQL words it.
pub fn parse(name: &str, value: &str) -> Result<u64, SqlError> {
    let invalid = || {
        SqlError::user(
            "22023",
            format!("invalid value for parameter \"{name}\": \"{value}\""),
        )
    };
    let text = value.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.trim().parse().map_err(|_| invalid())?;
    let scale = match unit.trim() {
        "" => 1.0,
        u => UNITS
            .iter()
            .find(|(name, _)| *name == u)
            .map(|(_, ms)| *ms)
            .ok_or_else(invalid)?,
    };
    let ms = (number * scale).round();
    if !(0.0..=MAX_MS).contains(&ms) {
        return Err(SqlError::user(
            "22023",
            format!("{ms} ms is outside the valid range for parameter \"{name}\" (0 .. {MAX_MS})"),
        ));
    }
    // A limit below a millisecond is one millisecond, not none.
    Ok(if ms == 0.0 && number > 0.0 {
        1
    } else {
        ms as u64
    })
}

/// `ms` as SHOW gives it: in the largest unit that divides it (`5s`, `1min`, `0`).
pub fn shown(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let (unit, size) = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1_000),
    ]
    .into_iter()
    .find(|(_, size)| ms.is_multiple_of(*size))
    .unwrap_or(("ms", 1));
    format!("{}{unit}", ms / size)
}

/// The three limits as a client's settings set them, in milliseconds (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    pub statement_ms: u64,
    pub lock_ms: u64,
    pub idle_in_transaction_ms: u64,
}

impl Limits {
    /// The limits `get` gives the values of (a value that does not read is no limit:
    /// SET refused it).
    pub fn of<'v>(get: impl Fn(&str) -> Option<&'v str>) -> Limits {
        let ms = |name| get(name).and_then(|v| parse(name, v).ok()).unwrap_or(0);
        Limits {
            statement_ms: ms(STATEMENT),
            lock_ms: ms(LOCK),
            idle_in_transaction_ms: ms(IDLE_IN_TRANSACTION),
        }
    }
}

/// A limit in milliseconds as a duration; `None` for 0 (no limit).
pub fn limit(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// The error of a statement cancelled by `statement_timeout`.
pub fn statement_cancelled() -> SqlError {
    SqlError::user("57014", "canceling statement due to statement timeout")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_and_show_as_postgresql_reads_and_shows_them() {
        assert_eq!(parse(STATEMENT, "250").unwrap(), 250);
        assert_eq!(parse(STATEMENT, "5s").unwrap(), 5_000);
        assert_eq!(parse(STATEMENT, "1.5 s").unwrap(), 1_500);
        assert_eq!(parse(STATEMENT, "2min").unwrap(), 120_000);
        assert_eq!(parse(STATEMENT, "100us").unwrap(), 1);
        assert_eq!(parse(STATEMENT, "0").unwrap(), 0);
        assert_eq!(shown(5_000), "5s");
        assert_eq!(shown(120_000), "2min");
        assert_eq!(shown(1_500), "1500ms");
        assert_eq!(shown(0), "0");
        for bad in ["-1", "soon", "5 parsecs", "99999999999"] {
            assert_eq!(parse(LOCK, bad).unwrap_err().sqlstate(), "22023", "{bad}");
        }
    }
}
