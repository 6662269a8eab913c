//! A statement's text with its literals taken out: the same statement sent again and
//! again with other values (as the simple protocol's clients send them: pgbench,
//! sysbench, an ORM that binds on its side) has one text once its numbers and strings
//! are `$1`, `$2`, …, which a plan is kept by ([`crate::sql_session`]'s shapes).
//!
//! Only what reads the same as a parameter is taken out: unsigned numbers (with a minus
//! sign where it can only be one, after an operator or an opening parenthesis), and
//! strings in single quotes without a prefix (`E'…'` and the like) or a backslash. Text
//! that holds anything this reader does not know the whole grammar of (a `$`, a comment,
//! several statements, a number with an exponent) gives no template, and is parsed as
//! it is.

use datafusion::common::ScalarValue;

/// A statement's text with its literals as `$n`, and the literals.
#[derive(Debug, PartialEq)]
pub(crate) struct Template {
    pub text: String,
    pub literals: Vec<Literal>,
}

/// A literal taken out of a statement's text.
#[derive(Debug, PartialEq)]
pub(crate) enum Literal {
    /// As written: digits, maybe a point and more digits, maybe a leading minus.
    Number(String),
    /// The string's value, its doubled quotes made one.
    Text(String),
}

/// Longest text given a template: the texts kept are an application's statements.
const MAX_TEXT: usize = 16 * 1024;

/// Most literals one template takes out.
const MAX_LITERALS: usize = 1024;

/// The statement kinds worth a template: those whose plans keep values apart.
const FIRST_WORDS: [&str; 4] = ["select", "insert", "update", "delete"];

/// What came last before the place being read, for telling a sign from a minus.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    /// The start of the text, an operator or an opening parenthesis or comma: a `-`
    /// here is a sign.
    Operator,
    /// A word, a literal or a closing bracket: a `-` here subtracts.
    Operand,
}

/// `sql` as a template, if it is one statement of a kind [`FIRST_WORDS`] names that
/// this reader can take apart whole.
pub(crate) fn split(sql: &str) -> Option<Template> {
    let sql = sql.trim();
    let sql = sql.strip_suffix(';').unwrap_or(sql).trim_end();
    if sql.len() > MAX_TEXT {
        return None;
    }
    let first = sql.split(|c: char| !c.is_ascii_alphabetic()).next()?;
    if !FIRST_WORDS.iter().any(|w| first.eq_ignore_ascii_case(w)) {
        return None;
    }
    let bytes = sql.as_bytes();
    let mut text = String::with_capacity(sql.len());
    let mut literals = Vec::new();
    let mut before = Before::Operator;
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let next = bytes.get(at + 1).copied();
        match b {
            b'$' | b';' | b'\\' => return None,
            b'-' if next == Some(b'-') => return None,
            b'/' if next == Some(b'*') => return None,
            b'\'' => {
                let (value, end) = quoted(bytes, at)?;
                literals.push(Literal::Text(value));
                placeholder(&mut text, literals.len());
                before = Before::Operand;
                at = end;
            }
            b'"' => {
                let end = quoted_name_end(bytes, at)?;
                text.push_str(sql.get(at..end)?);
                before = Before::Operand;
                at = end;
            }
            b'0'..=b'9' => {
                let end = number_end(bytes, at)?;
                literals.push(Literal::Number(sql.get(at..end)?.to_owned()));
                placeholder(&mut text, literals.len());
                before = Before::Operand;
                at = end;
            }
            b'-' if before == Before::Operator && next.is_some_and(|d| d.is_ascii_digit()) => {
                let end = number_end(bytes, at + 1)?;
                literals.push(Literal::Number(sql.get(at..end)?.to_owned()));
                placeholder(&mut text, literals.len());
                before = Before::Operand;
                at = end;
            }
            b'.' if next.is_some_and(|d| d.is_ascii_digit()) => return None,
            b if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 => {
                let end = word_end(bytes, at);
                if bytes.get(end) == Some(&b'\'') {
                    // A prefixed string (E'…', B'…', X'…', N'…'): read otherwise.
                    return None;
                }
                text.push_str(sql.get(at..end)?);
                before = Before::Operand;
                at = end;
            }
            b if b.is_ascii_whitespace() => {
                text.push(char::from(b));
                at += 1;
            }
            b')' | b']' => {
                text.push(char::from(b));
                before = Before::Operand;
                at += 1;
            }
            b if b.is_ascii() => {
                text.push(char::from(b));
                before = Before::Operator;
                at += 1;
            }
            _ => return None,
        }
        if literals.len() > MAX_LITERALS {
            return None;
        }
    }
    Some(Template { text, literals })
}

fn placeholder(text: &mut String, n: usize) {
    text.push('$');
    text.push_str(&n.to_string());
}

/// The value of the string in single quotes that starts at `from`, and where it ends.
fn quoted(bytes: &[u8], from: usize) -> Option<(String, usize)> {
    let mut value = Vec::new();
    let mut at = from + 1;
    loop {
        match *bytes.get(at)? {
            b'\'' if bytes.get(at + 1) == Some(&b'\'') => {
                value.push(b'\'');
                at += 2;
            }
            b'\'' => return Some((String::from_utf8(value).ok()?, at + 1)),
            b'\\' => return None,
            b => {
                value.push(b);
                at += 1;
            }
        }
    }
}

/// Where the name in double quotes that starts at `from` ends.
fn quoted_name_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from + 1;
    loop {
        match *bytes.get(at)? {
            b'"' if bytes.get(at + 1) == Some(&b'"') => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
}

/// Where the number of digits at `from` ends (with a point and more digits); `None`
/// for a number this reader does not take (an exponent, a letter or `_` in it).
fn number_end(bytes: &[u8], from: usize) -> Option<usize> {
    let digits = |at: usize| {
        bytes[at..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| at + n)
    };
    let mut end = digits(from);
    if bytes.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    match bytes.get(end) {
        Some(b) if b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.' || *b >= 0x80 => None,
        _ => Some(end),
    }
}

fn word_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80))
        .map_or(bytes.len(), |n| from + n)
}

impl Literal {
    /// The literal as a parameter's value: a number as the integer or exact decimal it
    /// is, a string as text. The fast path converts a parameter to a column's type only
    /// where it would convert the literal (and exactly), so the values mean what the
    /// literals did.
    pub(crate) fn value(&self) -> Option<ScalarValue> {
        match self {
            Literal::Text(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
            Literal::Number(n) => {
                if let Ok(i) = n.parse::<i64>() {
                    return Some(ScalarValue::Int64(Some(i)));
                }
                let (whole, fraction) = n.split_once('.').unwrap_or((n, ""));
                let scale = i8::try_from(fraction.len()).ok()?;
                let units: i128 = format!("{whole}{fraction}").parse().ok()?;
                const MAX_PRECISION: u8 = 38;
                if units.unsigned_abs() >= 10u128.pow(u32::from(MAX_PRECISION)) {
                    return None;
                }
                Some(ScalarValue::Decimal128(Some(units), MAX_PRECISION, scale))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(n: &str) -> Literal {
        Literal::Number(n.into())
    }

    #[test]
    fn pgbench_statements_take_their_values_out() {
        let t = split("UPDATE pgbench_accounts SET abalance = abalance + -2345 WHERE aid = 17;")
            .unwrap();
        assert_eq!(
            t.text,
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(t.literals, vec![number("-2345"), number("17")]);
        let t = split(
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 99, 10, \
             CURRENT_TIMESTAMP)",
        )
        .unwrap();
        assert_eq!(
            t.text,
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, \
             CURRENT_TIMESTAMP)"
        );
    }

    #[test]
    fn a_minus_after_an_operand_subtracts() {
        let t = split("SELECT a FROM t WHERE a = b -1 AND c = (-2) AND d = 'x'-3").unwrap();
        assert_eq!(
            t.text,
            "SELECT a FROM t WHERE a = b -$1 AND c = ($2) AND d = $3-$4"
        );
        assert_eq!(
            t.literals,
            vec![
                number("1"),
                number("-2"),
                Literal::Text("x".into()),
                number("3")
            ]
        );
    }

    #[test]
    fn names_and_quoted_names_stay() {
        let t = split("select \"t1\"\"x\".c2 from t1 where name = 'it''s' and k2 = 4.50").unwrap();
        assert_eq!(
            t.text,
            "select \"t1\"\"x\".c2 from t1 where name = $1 and k2 = $2"
        );
        assert_eq!(
            t.literals,
            vec![Literal::Text("it's".into()), number("4.50")]
        );
    }

    #[test]
    fn text_read_otherwise_gives_no_template() {
        for sql in [
            "SELECT * FROM t WHERE a = $1",
            "SELECT 1; SELECT 2",
            "SELECT a FROM t -- comment",
            "SELECT a /* comment */ FROM t",
            "SELECT E'a\\n'",
            "SELECT 'a\\'",
            "SELECT 1e5",
            "SELECT .5",
            "SELECT 0x1F",
            "SELECT 1_000",
            "SELECT 'never closed",
            "BEGIN",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "CREATE TABLE t (a INT DEFAULT 1)",
        ] {
            assert_eq!(split(sql), None, "{sql}");
        }
    }

    #[test]
    fn literals_become_exact_values() {
        assert_eq!(number("42").value(), Some(ScalarValue::Int64(Some(42))));
        assert_eq!(number("-7").value(), Some(ScalarValue::Int64(Some(-7))));
        assert_eq!(
            number("-0.50").value(),
            Some(ScalarValue::Decimal128(Some(-50), 38, 2))
        );
        assert_eq!(
            number("99999999999999999999").value(),
            Some(ScalarValue::Decimal128(
                Some(99_999_999_999_999_999_999),
                38,
                0
            ))
        );
        assert_eq!(number(&"9".repeat(39)).value(), None);
        assert_eq!(
            Literal::Text("x".into()).value(),
            Some(ScalarValue::Utf8(Some("x".into())))
        );
    }
}
