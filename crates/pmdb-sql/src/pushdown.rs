//! Which stored keys a scan must read, from the filters DataFusion pushes down: equality,
//! IN lists and ranges on the leading columns of the primary key (or of an index)
//! become key ranges. The ranges may hold more rows than the filters pass (DataFusion
//! applies the filters again; pushdown is Inexact), never fewer.

use std::cmp::Ordering;
use std::ops::Bound;

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

use crate::arrow_conv::without_trailing_blanks;
use crate::keycode::encode_key;
use crate::text_forms::parse_uuid;
use crate::types::{SqlType, Value};

/// Most point prefixes an IN list (times the ones before it) expands to.
const MAX_POINTS: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Every key that starts with `prefix`.
    fn prefixed(prefix: Vec<u8>) -> KeyRange {
        KeyRange {
            end: successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded),
            start: Bound::Included(prefix),
        }
    }
}

/// The least byte string above every string that starts with `prefix`, if any.
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// What the filters say about one column.
#[derive(Default)]
struct Constraint {
    points: Option<Vec<Value>>,
    low: Option<(Value, bool)>,
    high: Option<(Value, bool)>,
}

/// How a scan narrows to `columns` (a key's columns by table position, with types),
/// given `filters`: the key ranges to read, and whether every column it used was
/// pinned to points (equality or IN). `None` when the filters do not narrow the first
/// column.
pub fn key_ranges(
    columns: &[(usize, SqlType)],
    names: &[String],
    filters: &[Expr],
) -> Option<(Vec<KeyRange>, bool)> {
    let conjuncts: Vec<&Expr> = filters.iter().flat_map(split_and).collect();
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    for (depth, &(col, ty)) in columns.iter().enumerate() {
        let c = constraint(&names[col], ty, &conjuncts);
        if let Some(points) = c.points
            && prefixes.len() * points.len() <= MAX_POINTS
        {
            let mut next = Vec::with_capacity(prefixes.len() * points.len());
            for p in &prefixes {
                for v in &points {
                    let mut k = p.clone();
                    encode_key(&[ty], std::slice::from_ref(v), &mut k).ok()?;
                    next.push(k);
                }
            }
            prefixes = next;
            continue;
        }
        if c.low.is_none() && c.high.is_none() {
            return (depth > 0)
                .then(|| (prefixes.into_iter().map(KeyRange::prefixed).collect(), true));
        }
        let ranges = prefixes
            .iter()
            .map(|p| {
                let bound_key = |v: &Value| {
                    let mut k = p.clone();
                    encode_key(&[ty], std::slice::from_ref(v), &mut k)
                        .ok()
                        .map(|()| k)
                };
                let start = match &c.low {
                    Some((v, inclusive)) => {
                        let k = bound_key(v)?;
                        if *inclusive {
                            Bound::Included(k)
                        } else {
                            successor(&k).map_or(Bound::Excluded(k), Bound::Included)
                        }
                    }
                    // Past the NULLs of this column, which no range filter passes.
                    None => Bound::Included(bound_key(&Value::Null)?),
                };
                let end = match &c.high {
                    Some((v, inclusive)) => {
                        let k = bound_key(v)?;
                        if *inclusive {
                            successor(&k).map_or(Bound::Unbounded, Bound::Excluded)
                        } else {
                            Bound::Excluded(k)
                        }
                    }
                    None => successor(p).map_or(Bound::Unbounded, Bound::Excluded),
                };
                Some(KeyRange { start, end })
            })
            .collect::<Option<Vec<_>>>()?;
        return Some((ranges, false));
    }
    Some((prefixes.into_iter().map(KeyRange::prefixed).collect(), true))
}

/// The stored keys `filters` pin the key column `column` of a keyed scan to (`= X'…'`
/// or `IN (X'…', …)`), each as a range of one key, in key order.
pub fn stored_keys(column: &str, filters: &[Expr]) -> Option<Vec<KeyRange>> {
    let binary = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Binary(Some(k)), _) => Some(k.clone()),
        _ => None,
    };
    let conjuncts: Vec<&Expr> = filters.iter().flat_map(split_and).collect();
    let mut keys = conjuncts.iter().find_map(|e| match e {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) if is_column(left, column) => Some(vec![binary(right)?]),
        Expr::InList(list) if !list.negated && is_column(&list.expr, column) => {
            list.list.iter().map(binary).collect()
        }
        _ => None,
    })?;
    keys.sort();
    keys.dedup();
    Some(
        keys.into_iter()
            .map(|k| KeyRange {
                start: Bound::Included(k.clone()),
                end: Bound::Included(k),
            })
            .collect(),
    )
}

fn split_and(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            let mut v = split_and(left);
            v.extend(split_and(right));
            v
        }
        e => vec![e],
    }
}

fn is_column(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Column(c) if c.name == name)
}

fn literal(e: &Expr, ty: SqlType) -> Option<Value> {
    match e {
        Expr::Literal(v, _) => value_of(v, ty),
        _ => None,
    }
}

fn constraint(name: &str, ty: SqlType, conjuncts: &[&Expr]) -> Constraint {
    let mut c = Constraint::default();
    for e in conjuncts {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (op, lit) = if is_column(left, name) {
                    (*op, right)
                } else if is_column(right, name) {
                    match op.swap() {
                        Some(op) => (op, left),
                        None => continue,
                    }
                } else {
                    continue;
                };
                let Some(v) = literal(lit, ty) else { continue };
                match op {
                    Operator::Eq => c.points = Some(vec![v]),
                    Operator::Gt => tighten_low(&mut c, v, false),
                    Operator::GtEq => tighten_low(&mut c, v, true),
                    Operator::Lt => tighten_high(&mut c, v, false),
                    Operator::LtEq => tighten_high(&mut c, v, true),
                    _ => {}
                }
            }
            Expr::Between(Between {
                expr,
                negated: false,
                low,
                high,
            }) if is_column(expr, name) => {
                if let (Some(lo), Some(hi)) = (literal(low, ty), literal(high, ty)) {
                    tighten_low(&mut c, lo, true);
                    tighten_high(&mut c, hi, true);
                }
            }
            Expr::InList(list) if !list.negated && is_column(&list.expr, name) => {
                if let Some(mut values) = list
                    .list
                    .iter()
                    .map(|e| literal(e, ty))
                    .collect::<Option<Vec<_>>>()
                {
                    values.sort_by(|a, b| a.sql_cmp(b).unwrap_or(Ordering::Equal));
                    values.dedup();
                    c.points = Some(values);
                }
            }
            _ => {}
        }
    }
    c
}

fn tighten_low(c: &mut Constraint, v: Value, inclusive: bool) {
    let tighter = match &c.low {
        None => true,
        Some((old, _)) => v.sql_cmp(old) == Some(Ordering::Greater),
    };
    if tighter {
        c.low = Some((v, inclusive));
    }
}

fn tighten_high(c: &mut Constraint, v: Value, inclusive: bool) {
    let tighter = match &c.high {
        None => true,
        Some((old, _)) => v.sql_cmp(old) == Some(Ordering::Less),
    };
    if tighter {
        c.high = Some((v, inclusive));
    }
}

/// `v` as a value of a column of type `ty`, when it is one exactly (no rounding, no
/// overflow); a NULL is no bound at all.
pub fn value_of(v: &ScalarValue, ty: SqlType) -> Option<Value> {
    let int = match v {
        ScalarValue::Int8(Some(x)) => Some(i128::from(*x)),
        ScalarValue::Int16(Some(x)) => Some(i128::from(*x)),
        ScalarValue::Int32(Some(x)) => Some(i128::from(*x)),
        ScalarValue::Int64(Some(x)) => Some(i128::from(*x)),
        ScalarValue::UInt8(Some(x)) => Some(i128::from(*x)),
        ScalarValue::UInt16(Some(x)) => Some(i128::from(*x)),
        ScalarValue::UInt32(Some(x)) => Some(i128::from(*x)),
        ScalarValue::UInt64(Some(x)) => Some(i128::from(*x)),
        _ => None,
    };
    let out = match (ty, v) {
        (SqlType::SmallInt, _) => Value::SmallInt(int?.try_into().ok()?),
        (SqlType::Int, _) => Value::Int(int?.try_into().ok()?),
        (SqlType::BigInt, _) => Value::BigInt(int?.try_into().ok()?),
        (SqlType::Decimal { scale, .. }, ScalarValue::Decimal128(Some(x), _, s)) => {
            Value::Decimal(rescale(*x, i32::from(*s), i32::from(scale))?)
        }
        (SqlType::Decimal { scale, .. }, _) => Value::Decimal(rescale(int?, 0, i32::from(scale))?),
        (SqlType::Double, ScalarValue::Float64(Some(x))) => Value::Double(*x),
        (SqlType::Double, ScalarValue::Float32(Some(x))) => Value::Double(f64::from(*x)),
        (SqlType::Real, ScalarValue::Float32(Some(x))) => Value::Real(*x),
        (
            SqlType::Char(_),
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Value::Str(without_trailing_blanks(s).to_owned()),
        (
            SqlType::Varchar(_) | SqlType::Text,
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Value::Str(s.clone()),
        (SqlType::Date, ScalarValue::Date32(Some(d))) => Value::Date(*d),
        (SqlType::Time, ScalarValue::Time64Microsecond(Some(t))) => Value::Time(*t),
        (SqlType::Timestamp, ScalarValue::TimestampMicrosecond(Some(t), None)) => {
            Value::Timestamp(*t)
        }
        // Both are microseconds since the epoch in UTC, whatever zone the literal shows.
        (SqlType::TimestampTz, ScalarValue::TimestampMicrosecond(Some(t), Some(_))) => {
            Value::Timestamp(*t)
        }
        (SqlType::Boolean, ScalarValue::Boolean(Some(b))) => Value::Boolean(*b),
        (SqlType::Bytea, ScalarValue::Binary(Some(b))) => Value::Bytes(b.clone()),
        (
            SqlType::Uuid,
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Value::Uuid(parse_uuid(s).ok()?),
        _ => return None,
    };
    ty.check(&out).ok()?;
    Some(out)
}

/// `x` at scale `from` written at scale `to`, if exact.
fn rescale(x: i128, from: i32, to: i32) -> Option<i128> {
    if to >= from {
        x.checked_mul(10i128.checked_pow((to - from) as u32)?)
    } else {
        let d = 10i128.checked_pow((from - to) as u32)?;
        (x % d == 0).then(|| x / d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into(), "c".into()]
    }

    fn enc(types: &[SqlType], values: &[Value]) -> Vec<u8> {
        let mut k = Vec::new();
        encode_key(types, values, &mut k).unwrap();
        k
    }

    fn contains(r: &KeyRange, k: &[u8]) -> bool {
        let above = match &r.start {
            Bound::Included(s) => k >= s.as_slice(),
            Bound::Excluded(s) => k > s.as_slice(),
            Bound::Unbounded => true,
        };
        let below = match &r.end {
            Bound::Included(e) => k <= e.as_slice(),
            Bound::Excluded(e) => k < e.as_slice(),
            Bound::Unbounded => true,
        };
        above && below
    }

    #[test]
    fn equality_on_a_prefix_and_a_range_after_it() {
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let t = [SqlType::Int, SqlType::BigInt];
        let f = [
            col("a").eq(lit(5i32)),
            col("b").gt(lit(10i64)),
            col("b").lt_eq(lit(20i64)),
        ];
        let (ranges, points) = key_ranges(&cols, &names(), &f).unwrap();
        assert!(!points);
        assert_eq!(ranges.len(), 1);
        for (b, inside) in [(10, false), (11, true), (20, true), (21, false)] {
            let k = enc(&t, &[Value::Int(5), Value::BigInt(b)]);
            assert_eq!(contains(&ranges[0], &k), inside, "b = {b}");
        }
        assert!(!contains(
            &ranges[0],
            &enc(&t, &[Value::Int(6), Value::BigInt(15)])
        ));
        assert!(!contains(
            &ranges[0],
            &enc(&t, &[Value::Int(5), Value::Null])
        ));
    }

    #[test]
    fn in_lists_expand_to_points_and_unusable_filters_give_none() {
        let cols = [(0, SqlType::Int)];
        let f = [col("a").in_list(vec![lit(3i32), lit(1i32), lit(3i32)], false)];
        let (ranges, points) = key_ranges(&cols, &names(), &f).unwrap();
        assert!(points);
        assert_eq!(ranges.len(), 2);
        assert!(key_ranges(&cols, &names(), &[col("b").eq(lit(1i32))]).is_none());
        // 1.5 is no INT: no narrowing, rather than a wrong one.
        assert!(key_ranges(&cols, &names(), &[col("a").eq(lit(1.5f64))]).is_none());
        assert!(key_ranges(&cols, &names(), &[col("a").eq(lit(1i64 << 40))]).is_none());
    }

    #[test]
    fn decimal_literals_are_rescaled_exactly() {
        let ty = SqlType::Decimal {
            precision: 10,
            scale: 2,
        };
        assert_eq!(
            value_of(&ScalarValue::Decimal128(Some(15), 10, 1), ty),
            Some(Value::Decimal(150))
        );
        assert_eq!(
            value_of(&ScalarValue::Decimal128(Some(1234), 10, 3), ty),
            None
        );
        assert_eq!(
            value_of(&ScalarValue::Int64(Some(7)), ty),
            Some(Value::Decimal(700))
        );
    }
}
