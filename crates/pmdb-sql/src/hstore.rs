//! Values of the hstore extension's type: sets of text keys, each with a text value or
//! NULL. A value is held as its canonical text, the text PostgreSQL's hstore prints
//! (`"k"=>"v", "n"=>NULL`, keys shorter first then by bytes, each key once), so equal
//! values have equal text. This module reads and writes both wire forms and computes
//! the operators' and functions' results; [`crate::hstore_functions`] plans them.

use crate::error::{SqlError, state};

/// The function a cast to hstore becomes: text read as hstore input.
pub(crate) const HSTORE_IN: &str = "pmdb_hstore";

/// The most pairs a value read from the wire may claim: PostgreSQL's own limit on an
/// hstore's pairs.
const MAX_PAIRS: usize = (1 << 28) - 1;

/// The keys and values of one hstore, in canonical order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Hstore {
    pairs: Vec<(String, Option<String>)>,
}

fn syntax(message: String) -> SqlError {
    SqlError::user(state::SYNTAX, message)
}

impl Hstore {
    /// The value of these pairs; of a key given twice, the first is kept.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, Option<String>)>) -> Hstore {
        let mut pairs: Vec<(String, Option<String>)> = pairs.into_iter().collect();
        // A stable sort keeps the first of equal keys first.
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        pairs.dedup_by(|later, first| later.0 == first.0);
        Hstore { pairs }
    }

    pub fn pairs(&self) -> &[(String, Option<String>)] {
        &self.pairs
    }

    /// hstore's text input: `key => value` pairs separated by commas, each part bare or
    /// in double quotes (a backslash takes the next character as it is), a bare `NULL`
    /// value (any case) the NULL.
    pub fn parse(text: &str) -> Result<Hstore, SqlError> {
        let mut p = Parser {
            text,
            at: 0,
            pairs: Vec::new(),
        };
        p.pairs()?;
        Ok(Hstore::from_pairs(p.pairs))
    }

    /// The canonical text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            quoted(&mut out, k);
            out.push_str("=>");
            match v {
                Some(v) => quoted(&mut out, v),
                None => out.push_str("NULL"),
            }
        }
        out
    }

    /// hstore's binary form: the pair count, then each key and value as a length and
    /// bytes (a value's length -1 for NULL), all integers 32-bit big-endian.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let length = |n: usize| i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes();
        out.extend_from_slice(&length(self.pairs.len()));
        for (k, v) in &self.pairs {
            out.extend_from_slice(&length(k.len()));
            out.extend_from_slice(k.as_bytes());
            match v {
                Some(v) => {
                    out.extend_from_slice(&length(v.len()));
                    out.extend_from_slice(v.as_bytes());
                }
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        out
    }

    /// A value in the binary form, checked: counts and lengths within the bytes given,
    /// text in UTF-8, nothing after the last pair.
    pub fn from_binary(bytes: &[u8]) -> Result<Hstore, SqlError> {
        let bad = |m: &str| SqlError::user("22P03", format!("invalid hstore binary value: {m}"));
        let mut at = 0usize;
        let int = |at: &mut usize| -> Result<i32, SqlError> {
            let end = at.checked_add(4).ok_or_else(|| bad("too long"))?;
            let word = bytes.get(*at..end).ok_or_else(|| bad("cut short"))?;
            *at = end;
            Ok(i32::from_be_bytes(word.try_into().expect("four bytes")))
        };
        let count = usize::try_from(int(&mut at)?).map_err(|_| bad("a negative pair count"))?;
        if count > MAX_PAIRS {
            return Err(SqlError::user(
                state::PROGRAM_LIMIT,
                format!("number of pairs ({count}) exceeds the maximum allowed ({MAX_PAIRS})"),
            ));
        }
        let text = |at: &mut usize, n: usize| -> Result<String, SqlError> {
            let end = at.checked_add(n).ok_or_else(|| bad("too long"))?;
            let raw = bytes.get(*at..end).ok_or_else(|| bad("cut short"))?;
            *at = end;
            String::from_utf8(raw.to_vec())
                .map_err(|_| SqlError::user("22021", "an hstore key or value that is not UTF-8"))
        };
        let mut pairs = Vec::with_capacity(count.min(bytes.len() / 8));
        for _ in 0..count {
            let n = usize::try_from(int(&mut at)?).map_err(|_| {
                SqlError::user(
                    state::NULL_VALUE_NOT_ALLOWED,
                    "null value not allowed for hstore key",
                )
            })?;
            let key = text(&mut at, n)?;
            let value = match int(&mut at)? {
                -1 => None,
                n => Some(text(
                    &mut at,
                    usize::try_from(n).map_err(|_| bad("a negative value length"))?,
                )?),
            };
            pairs.push((key, value));
        }
        if at != bytes.len() {
            return Err(bad("bytes after the last pair"));
        }
        Ok(Hstore::from_pairs(pairs))
    }

    /// `h -> key`: the key's value; `None` when the key is missing or its value NULL.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.position(key).and_then(|i| self.pairs[i].1.as_deref())
    }

    /// `h ? key`
    pub fn has(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// `defined(h, key)`: has it with a value that is not NULL.
    pub fn defines(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `a @> b`: every pair of `b` is `a`'s (NULL values match each other).
    pub fn contains(&self, other: &Hstore) -> bool {
        other
            .pairs
            .iter()
            .all(|(k, v)| self.position(k).is_some_and(|i| &self.pairs[i].1 == v))
    }

    /// `a || b`: the pairs of both, `b`'s value where both have a key.
    pub fn concat(&self, other: &Hstore) -> Hstore {
        Hstore::from_pairs(other.pairs.iter().chain(&self.pairs).cloned())
    }

    /// `h - keys`: without the keys given.
    pub fn without_keys<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> Hstore {
        let keys: Vec<&str> = keys.into_iter().collect();
        Hstore {
            pairs: self
                .pairs
                .iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// `a - b`: without the pairs `b` has with the same value.
    pub fn without_pairs(&self, other: &Hstore) -> Hstore {
        Hstore {
            pairs: self
                .pairs
                .iter()
                .filter(|(k, v)| other.position(k).is_none_or(|i| &other.pairs[i].1 != v))
                .cloned()
                .collect(),
        }
    }

    /// `slice(h, keys)`: only the keys given.
    pub fn slice<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> Hstore {
        let keys: Vec<&str> = keys.into_iter().collect();
        Hstore {
            pairs: self
                .pairs
                .iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// `hstore_to_json`: an object of the pairs, each value a string or null, in
    /// PostgreSQL's spacing.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            json_string(&mut out, k);
            out.push_str(": ");
            match v {
                Some(v) => json_string(&mut out, v),
                None => out.push_str("null"),
            }
        }
        out.push('}');
        out
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.pairs.binary_search_by(|(k, _)| key_order(k, key)).ok()
    }
}

/// hstore's key order: shorter first, then by bytes.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Parser<'t> {
    text: &'t str,
    /// Byte offset of the next character.
    at: usize,
    pairs: Vec<(String, Option<String>)>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.at += c.len_utf8();
        }
    }

    fn near(&self) -> SqlError {
        match self.peek() {
            Some(c) => syntax(format!("Syntax error near \"{c}\" at position {}", self.at)),
            None => end_of_string(),
        }
    }

    fn pairs(&mut self) -> Result<(), SqlError> {
        loop {
            self.skip_space();
            if self.peek().is_none() {
                return Ok(());
            }
            let (key, _) = self.token(true)?;
            self.skip_space();
            if !self.text[self.at..].starts_with("=>") {
                return Err(self.near());
            }
            self.at += 2;
            self.skip_space();
            if self.peek().is_none() {
                return Err(end_of_string());
            }
            let (value, bare) = self.token(false)?;
            let value = (!(bare && value.eq_ignore_ascii_case("null"))).then_some(value);
            self.pairs.push((key, value));
            self.skip_space();
            match self.peek() {
                None => return Ok(()),
                Some(',') => self.at += 1,
                Some(_) => return Err(self.near()),
            }
        }
    }

    /// A key (`key`) or value, quoted or bare; whether it was bare.
    fn token(&mut self, key: bool) -> Result<(String, bool), SqlError> {
        let mut out = String::new();
        if self.peek() == Some('"') {
            self.at += 1;
            loop {
                let c = self.peek().ok_or_else(end_of_string)?;
                self.at += c.len_utf8();
                match c {
                    '"' => return Ok((out, false)),
                    '\\' => {
                        let next = self.peek().ok_or_else(end_of_string)?;
                        self.at += next.len_utf8();
                        out.push(next);
                    }
                    c => out.push(c),
                }
            }
        }
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' || (key && self.text[self.at..].starts_with("=>")) {
                break;
            }
            if !key && c == '=' && self.text[self.at..].starts_with("=>") {
                return Err(self.near());
            }
            self.at += c.len_utf8();
            if c == '\\' {
                let next = self.peek().ok_or_else(end_of_string)?;
                self.at += next.len_utf8();
                out.push(next);
            } else {
                out.push(c);
            }
        }
        if out.is_empty() {
            return Err(self.near());
        }
        Ok((out, true))
    }
}

fn end_of_string() -> SqlError {
    syntax("Unexpected end of string".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text(s: &str) -> String {
        Hstore::parse(s).unwrap().to_text()
    }

    #[test]
    fn input_is_read_as_postgresql_reads_it() {
        assert_eq!(
            text(r#"b=>1, a=>2, aa=>NULL, "x y"=>"q\"z", c=>"NULL""#),
            r#""a"=>"2", "b"=>"1", "c"=>"NULL", "aa"=>NULL, "x y"=>"q\"z""#
        );
        assert_eq!(text(""), "");
        assert_eq!(text("   "), "");
        assert_eq!(text("a=>1,"), r#""a"=>"1""#);
        assert_eq!(text("a=>1,a=>2"), r#""a"=>"1""#);
        assert_eq!(text(r#""a\\b"=>c"#), r#""a\\b"=>"c""#);
        assert_eq!(text("k => NuLL"), r#""k"=>NULL"#);
    }

    #[test]
    fn bad_input_is_a_syntax_error() {
        for bad in [
            "a",
            "a=>",
            "a=>1 b=>2",
            "a=>1, =>2",
            r#""a=>1"#,
            "a=>1,,b=>2",
        ] {
            let e = Hstore::parse(bad).unwrap_err();
            assert_eq!(e.sqlstate(), state::SYNTAX, "{bad}");
        }
        let e = Hstore::parse("a=>1, =>2").unwrap_err();
        assert!(e.to_string().contains("near \"=\" at position 6"), "{e}");
    }

    #[test]
    fn operators_compute_postgresql_results() {
        let h = Hstore::parse("a=>1, b=>2, n=>NULL").unwrap();
        assert_eq!(h.get("a"), Some("1"));
        assert_eq!(h.get("n"), None);
        assert!(h.has("n") && !h.defines("n") && !h.has("z"));
        assert!(h.contains(&Hstore::parse("a=>1, n=>NULL").unwrap()));
        assert!(!h.contains(&Hstore::parse("a=>2").unwrap()));
        let joined = h.concat(&Hstore::parse("b=>3, c=>4").unwrap());
        assert_eq!(
            joined.to_text(),
            r#""a"=>"1", "b"=>"3", "c"=>"4", "n"=>NULL"#
        );
        assert_eq!(h.without_keys(["a", "n"]).to_text(), r#""b"=>"2""#);
        let less = h.without_pairs(&Hstore::parse("a=>1, b=>3").unwrap());
        assert_eq!(less.to_text(), r#""b"=>"2", "n"=>NULL"#);
        assert_eq!(h.slice(["b", "z"]).to_text(), r#""b"=>"2""#);
        assert_eq!(h.to_json(), r#"{"a": "1", "b": "2", "n": null}"#);
    }

    #[test]
    fn binary_form_is_postgresqls() {
        let h = Hstore::parse("bb=>NULL, a=>1").unwrap();
        assert_eq!(
            h.to_binary(),
            b"\0\0\0\x02\0\0\0\x01a\0\0\0\x011\0\0\0\x02bb\xff\xff\xff\xff".to_vec()
        );
        for bad in [
            &b"\0\0\0\x01"[..],
            b"\xff\xff\xff\xff",
            b"\0\0\0\x01\0\0\0\x05a",
            b"\0\0\0\x00x",
            b"\0\0\0\x01\0\0\0\x01a\xff\xff\xff\xfe",
        ] {
            assert!(Hstore::from_binary(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn text_and_binary_round_trip(
            pairs in prop::collection::vec(("[a-z\"\\\\ =>,é]{0,6}", prop::option::of("[a-z\"\\\\ =>,]{0,6}")), 0..8)
        ) {
            let h = Hstore::from_pairs(pairs);
            prop_assert_eq!(Hstore::parse(&h.to_text()).unwrap(), h.clone());
            prop_assert_eq!(Hstore::from_binary(&h.to_binary()).unwrap(), h);
        }
    }
}
