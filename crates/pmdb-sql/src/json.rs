//! JSON values as PostgreSQL's `json` and `jsonb` hold them. A `json` value is kept as
//! its text, checked; a `jsonb` value in its canonical text, which is what PostgreSQL
//! prints for it: object keys in jsonb order (shorter first, then by bytes), a repeated
//! key's last value kept, numbers as numeric prints them, `", "` and `": "` between
//! items. Both are held as Arrow text, so equal jsonb values have equal text. What the
//! operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`) and functions
//! compute is defined here on parsed values; numbers keep the digits they were written
//! with (no rounding through floating point).

use crate::error::{SqlError, state};

/// Nesting deeper than this is refused (54000), as PostgreSQL refuses nesting beyond
/// its stack depth limit.
const MAX_DEPTH: usize = 256;

/// A parsed JSON value; `span` is where its text is in the input (a `json` value's
/// parts are returned as they were written).
#[derive(Clone, Debug, PartialEq)]
pub struct Json {
    pub kind: Kind,
    pub span: (usize, usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Null,
    Bool(bool),
    /// The number as numeric prints it.
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in the order written (repeats too).
    Object(Vec<(String, Json)>),
}

/// 22P02 with PostgreSQL's message for text that is not JSON.
fn invalid(detail: impl Into<String>) -> SqlError {
    SqlError::user(
        state::INVALID_TEXT_REPRESENTATION,
        "invalid input syntax for type json",
    )
    .with_detail(detail)
}

/// Parses `text` as one JSON value (whitespace around it allowed).
pub fn parse(text: &str) -> Result<Json, SqlError> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let v = p.value(0)?;
    p.space();
    if p.at != p.s.len() {
        return Err(invalid(format!(
            "Token \"{}\" is invalid.",
            &text[p.at..].chars().take(20).collect::<String>()
        )));
    }
    Ok(v)
}

/// `text` as a value of type json (`jsonb`: false) or jsonb: checked, and for jsonb in
/// its canonical text.
pub fn input(text: &str, jsonb: bool) -> Result<String, SqlError> {
    let v = parse(text)?;
    Ok(if jsonb {
        canonical(&v)
    } else {
        text.to_owned()
    })
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.at < self.s.len() && matches!(self.s[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), SqlError> {
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn unexpected(&self) -> SqlError {
        match self.peek() {
            None => invalid("The input string ended unexpectedly."),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.s[self.at..]);
                invalid(format!(
                    "Token \"{}\" is invalid.",
                    rest.chars().take(20).collect::<String>()
                ))
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, SqlError> {
        if depth > MAX_DEPTH {
            return Err(SqlError::user(
                state::PROGRAM_LIMIT,
                "JSON value nested too deeply",
            ));
        }
        self.space();
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                self.space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.space();
                        if self.peek() != Some(b'"') {
                            return Err(self.unexpected());
                        }
                        let key = self.string()?;
                        self.space();
                        self.expect(b':')?;
                        let v = self.value(depth + 1)?;
                        members.push((key, v));
                        self.space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.unexpected()),
                        }
                    }
                }
                Kind::Object(members)
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.unexpected()),
                        }
                    }
                }
                Kind::Array(items)
            }
            Some(b'"') => Kind::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => Kind::Number(self.number()?),
            Some(b't') => self.word("true", Kind::Bool(true))?,
            Some(b'f') => self.word("false", Kind::Bool(false))?,
            Some(b'n') => self.word("null", Kind::Null)?,
            _ => return Err(self.unexpected()),
        };
        Ok(Json {
            kind,
            span: (start, self.at),
        })
    }

    fn word(&mut self, w: &str, kind: Kind) -> Result<Kind, SqlError> {
        if self.s[self.at..].starts_with(w.as_bytes()) {
            self.at += w.len();
            Ok(kind)
        } else {
            Err(self.unexpected())
        }
    }

    fn string(&mut self) -> Result<String, SqlError> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self.at < self.s.len() && !matches!(self.s[self.at], b'"' | b'\\' | 0..=0x1f) {
                self.at += 1;
            }
            // The input is a &str and the run ends at ASCII: whole characters.
            out.push_str(
                std::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.unexpected())?,
            );
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.at += 1;
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                if !self.s[self.at..].starts_with(b"\\u") {
                                    return Err(invalid(
                                        "Unicode low surrogate must follow a high surrogate.",
                                    ));
                                }
                                self.at += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(invalid(
                                        "Unicode low surrogate must follow a high surrogate.",
                                    ));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            match char::from_u32(code) {
                                Some('\0') | None => {
                                    return Err(invalid("\\u0000 cannot be converted to text."));
                                }
                                Some(c) => {
                                    out.push(c);
                                    continue;
                                }
                            }
                        }
                        _ => return Err(self.unexpected()),
                    };
                    self.at += 1;
                    out.push(c);
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, SqlError> {
        let digits = self
            .s
            .get(self.at..self.at + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| invalid("\"\\u\" must be followed by four hexadecimal digits."))?;
        self.at += 4;
        Ok(digits)
    }

    /// A number, as numeric would print it.
    fn number(&mut self) -> Result<String, SqlError> {
        let start = self.at;
        let digits = |p: &mut Parser| {
            let from = p.at;
            while p.peek().is_some_and(|b| b.is_ascii_digit()) {
                p.at += 1;
            }
            p.at - from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let int_start = self.at;
        if digits(self) == 0 || (self.s[int_start] == b'0' && self.at - int_start > 1) {
            return Err(self.unexpected());
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return Err(self.unexpected());
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.unexpected());
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.unexpected())?;
        numeric_text(text).ok_or_else(|| invalid(format!("Number {text} is out of range.")))
    }
}

/// A JSON number's text as PostgreSQL's numeric prints it: no exponent, as many digits
/// after the point as it had (less the exponent), `-0` as `0`. `None` for an exponent
/// numeric cannot take.
fn numeric_text(text: &str) -> Option<String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    if exp.abs() > 1000 {
        return None;
    }
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    // The value is digits × 10^(point), the point `point` places from the right.
    let point = frac.len() as i64 - exp;
    let scale = point.max(0) as usize;
    let mut all = digits;
    if point < 0 {
        all.push_str(&"0".repeat((-point) as usize));
    }
    if all.len() <= scale {
        all = format!("{}{all}", "0".repeat(scale + 1 - all.len()));
    }
    let (whole, fraction) = all.split_at(all.len() - scale);
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let zero = whole == "0" && fraction.bytes().all(|b| b == b'0');
    let sign = if negative && !zero { "-" } else { "" };
    Some(if scale == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    })
}

/// Whether two numbers (as [`numeric_text`] wrote them) are equal: `1.0` is `1`.
fn same_number(a: &str, b: &str) -> bool {
    let trimmed = |n: &str| -> String {
        match n.split_once('.') {
            Some((w, f)) => {
                let f = f.trim_end_matches('0');
                if f.is_empty() {
                    w.to_owned()
                } else {
                    format!("{w}.{f}")
                }
            }
            None => n.to_owned(),
        }
    };
    trimmed(a) == trimmed(b)
}

/// The canonical (jsonb) text of `v`.
pub fn canonical(v: &Json) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

/// An object's members as jsonb keeps them: a repeated key's last value, keys shorter
/// first, then by bytes.
fn jsonb_members(members: &[(String, Json)]) -> Vec<&(String, Json)> {
    let mut kept: Vec<&(String, Json)> = Vec::with_capacity(members.len());
    for m in members.iter().rev() {
        if !kept.iter().any(|k| k.0 == m.0) {
            kept.push(m);
        }
    }
    kept.sort_by(|a, b| (a.0.len(), a.0.as_bytes()).cmp(&(b.0.len(), b.0.as_bytes())));
    kept
}

fn write_canonical(v: &Json, out: &mut String) {
    match &v.kind {
        Kind::Null => out.push_str("null"),
        Kind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Kind::Number(n) => out.push_str(n),
        Kind::String(s) => quote(s, out),
        Kind::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Kind::Object(members) => {
            out.push('{');
            for (i, (k, item)) in jsonb_members(members).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                quote(k, out);
                out.push_str(": ");
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string, escaped as PostgreSQL escapes it.
pub fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON value taken out of a value of type json or jsonb (`jsonb`), as a value of the
/// same type: a json value's part as written, a jsonb value's in canonical text.
pub fn part_text(text: &str, part: &Json, jsonb: bool) -> String {
    if jsonb {
        canonical(part)
    } else {
        text[part.span.0..part.span.1].to_owned()
    }
}

/// `->>`'s text of a part: a string unquoted, null as SQL NULL, anything else its JSON.
pub fn part_as_text(text: &str, part: &Json, jsonb: bool) -> Option<String> {
    match &part.kind {
        Kind::Null => None,
        Kind::String(s) => Some(s.clone()),
        _ => Some(part_text(text, part, jsonb)),
    }
}

impl Json {
    /// The member `key` of an object (the last, if repeated).
    pub fn member(&self, key: &str) -> Option<&Json> {
        match &self.kind {
            Kind::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Element `i` of an array (from the end when negative).
    pub fn element(&self, i: i64) -> Option<&Json> {
        match &self.kind {
            Kind::Array(items) => {
                let at = if i < 0 { items.len() as i64 + i } else { i };
                usize::try_from(at).ok().and_then(|at| items.get(at))
            }
            _ => None,
        }
    }

    /// The part at `path` (`#>`): each step a key, or an index into an array.
    pub fn at_path(&self, path: &[String]) -> Option<&Json> {
        path.iter().try_fold(self, |v, step| match &v.kind {
            Kind::Array(_) => step.parse::<i64>().ok().and_then(|i| v.element(i)),
            _ => v.member(step),
        })
    }

    /// `?`: `key` is a key of the object, a string element of the array, or the string.
    pub fn has_key(&self, key: &str) -> bool {
        match &self.kind {
            Kind::Object(_) => self.member(key).is_some(),
            Kind::Array(items) => items.iter().any(|i| i.kind == Kind::String(key.to_owned())),
            Kind::String(s) => s == key,
            _ => false,
        }
    }

    /// `@>`: whether this value contains `other`, by jsonb's rules (an object contains
    /// the objects whose members it contains, an array the arrays whose elements it
    /// contains, at the top a scalar it has as an element).
    pub fn contains(&self, other: &Json) -> bool {
        self.contains_at(other, true)
    }

    fn contains_at(&self, other: &Json, top: bool) -> bool {
        match (&self.kind, &other.kind) {
            (Kind::Object(_), Kind::Object(wanted)) => wanted
                .iter()
                .all(|(k, w)| self.member(k).is_some_and(|v| v.contains_at(w, false))),
            (Kind::Array(items), Kind::Array(wanted)) => wanted
                .iter()
                .all(|w| items.iter().any(|i| i.contains_at(w, false))),
            (Kind::Array(items), _) if top && !matches!(other.kind, Kind::Object(_)) => {
                items.iter().any(|i| i.contains_at(other, false))
            }
            (Kind::Number(a), Kind::Number(b)) => same_number(a, b),
            (a, b) => !matches!(a, Kind::Object(_) | Kind::Array(_)) && a == b,
        }
    }

    /// jsonb's `=`: the same structure, numbers equal as numbers (`2.5` is `2.50`),
    /// an object's repeated keys read as jsonb keeps them.
    pub fn equals(&self, other: &Json) -> bool {
        match (&self.kind, &other.kind) {
            (Kind::Object(a), Kind::Object(b)) => {
                let (a, b) = (jsonb_members(a), jsonb_members(b));
                a.len() == b.len()
                    && a.iter()
                        .zip(&b)
                        .all(|(x, y)| x.0 == y.0 && x.1.equals(&y.1))
            }
            (Kind::Array(a), Kind::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.equals(y))
            }
            (Kind::Number(a), Kind::Number(b)) => same_number(a, b),
            (a, b) => a == b,
        }
    }

    /// `jsonb_typeof`'s name of the value's type.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "boolean",
            Kind::Number(_) => "number",
            Kind::String(_) => "string",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
        }
    }
}

/// A `text[]` literal's elements (`{a,b,"c d"}`), as `#>` takes its path.
pub fn text_array(literal: &str) -> Result<Vec<String>, SqlError> {
    let bad = || {
        SqlError::user(
            state::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{literal}\""),
        )
    };
    let inner = literal
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(bad)?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let mut item = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next().ok_or_else(bad)? {
                    '"' => break,
                    '\\' => item.push(chars.next().ok_or_else(bad)?),
                    c => item.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim().to_owned();
        }
        out.push(item);
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some(',') => {}
            Some(_) => return Err(bad()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jsonb(s: &str) -> String {
        input(s, true).unwrap()
    }

    #[test]
    fn jsonb_text_is_postgresqls() {
        assert_eq!(
            jsonb(r#"{"bb":1,"a":[1,2.50,1e2,-0,"x\u00e9\n"],"bb":{"c":null},"aa":true}"#),
            r#"{"a": [1, 2.50, 100, 0, "xé\n"], "aa": true, "bb": {"c": null}}"#
        );
        assert_eq!(jsonb(" 12.5E-3 "), "0.0125");
        assert_eq!(jsonb("1.50e1"), "15.0");
        assert_eq!(jsonb(r#""a\"b\\c\/""#), r#""a\"b\\c/""#);
        assert_eq!(
            input(r#"{"b":1, "a":2}"#, false).unwrap(),
            r#"{"b":1, "a":2}"#
        );
    }

    #[test]
    fn bad_json_is_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "tru",
            "{\"a\" 1}",
            "\"\\u0000\"",
            "[1] x",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.sqlstate(), "22P02", "{bad}");
        }
        let deep = "[".repeat(2000) + &"]".repeat(2000);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn parts_containment_and_keys() {
        let text = r#"{"a": {"b": [10, "x", {"c": 1}]}, "n": null}"#;
        let v = parse(text).unwrap();
        let b = v.member("a").and_then(|a| a.member("b")).unwrap();
        assert_eq!(part_text(text, b, false), r#"[10, "x", {"c": 1}]"#);
        assert_eq!(b.element(-1).map(|e| e.type_name()), Some("object"));
        let path = vec!["a".to_owned(), "b".to_owned(), "1".to_owned()];
        assert_eq!(
            part_as_text(text, v.at_path(&path).unwrap(), true).as_deref(),
            Some("x")
        );
        assert_eq!(part_as_text(text, v.member("n").unwrap(), true), None);
        let has = |a: &str, b: &str| parse(a).unwrap().contains(&parse(b).unwrap());
        assert!(has(text, r#"{"a": {"b": [{"c": 1}]}}"#));
        assert!(!has(text, r#"{"a": {"b": [{"c": 2}]}}"#));
        assert!(has(r#"["x", 1]"#, r#""x""#));
        assert!(!has(r#"[["x"]]"#, r#""x""#));
        assert!(has("[1, 2, 3]", "[3, 1]"));
        assert!(has("1.0", "1"));
        let same = |a: &str, b: &str| parse(a).unwrap().equals(&parse(b).unwrap());
        assert!(same(
            r#"{"a": 2.50, "b": [1]}"#,
            r#"{"b": [1.0], "a": 2.5, "a": 2.5}"#
        ));
        assert!(!same("[1, 2]", "[2, 1]"));
        assert!(!same(r#"{"a": 1}"#, r#"{"a": 1, "b": 1}"#));
        assert!(has(r#"[1.50]"#, "1.5"));
        assert!(parse(r#"["k", 1]"#).unwrap().has_key("k"));
        assert!(!v.has_key("b"));
        assert_eq!(text_array(r#"{a, "b c",1}"#).unwrap(), ["a", "b c", "1"]);
        assert!(text_array("a,b").is_err());
    }
}
