//! Which stored keys a scan must read, from the filters DataFusion pushes down: equality,
//! IN lists and ranges on the leading columns of the primary key (or of an index)
//! become key ranges. A disjunction (`OR`, a row IN list such as `(a, b) IN ((1, 2),
//! (3, 4))`) narrows when each of its branches does: its ranges are the union of the
//! branches'. The ranges may hold more rows than the filters pass (DataFusion applies
//! the filters again; pushdown is Inexact), never fewer, and never overlap, since a row
//! read twice would be returned twice.

use std::cmp::Ordering;
use std::ops::Bound;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{Cast, InList};
use datafusion::logical_expr::utils::{split_binary, split_conjunction};
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

use crate::arrow_conv::{arrow_type, without_trailing_blanks};
use crate::keycode::encode_key;
use crate::text_forms::parse_uuid;
use crate::types::{SqlType, Value};

/// Most point prefixes an IN list (times the ones before it) expands to, and most
/// ranges a disjunction's branches give together.
pub(crate) const MAX_POINTS: usize = 4096;

/// Most branches of disjunctions (times the ones nested in them) tried for one scan, so
/// that a conjunction of many ORs costs planning time in proportion to its size only.
const MAX_BRANCHES: usize = 4096;

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
    pub(crate) fn prefixed(prefix: Vec<u8>) -> KeyRange {
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

/// How filters narrow a key: the ranges to read, and how far down the key they reach.
#[derive(Debug)]
pub struct Narrowing {
    pub ranges: Vec<KeyRange>,
    /// Every column used was pinned to points (equality or IN), none to a range.
    pub pinned: bool,
    /// How many leading columns of the key the ranges constrain (in every branch of a
    /// disjunction): with more, fewer rows are read, whichever key they belong to.
    pub columns: usize,
}

/// How a scan narrows to `columns` (a key's columns by table position, with types),
/// given `filters`. `None` when the filters do not narrow the first column.
pub fn key_ranges(
    columns: &[(usize, SqlType)],
    names: &[String],
    filters: &[Expr],
) -> Option<Narrowing> {
    let conjuncts: Vec<&Expr> = filters.iter().flat_map(split_conjunction).collect();
    let mut budget = MAX_BRANCHES;
    narrowed(columns, names, &conjuncts, &mut budget)
}

/// The ranges of the first disjunction among `conjuncts` whose every branch narrows
/// (each branch taken with the other conjuncts, so never wider than those alone), else
/// those of the conjuncts without their disjunctions.
fn narrowed(
    columns: &[(usize, SqlType)],
    names: &[String],
    conjuncts: &[&Expr],
    budget: &mut usize,
) -> Option<Narrowing> {
    for (i, e) in conjuncts.iter().enumerate() {
        let Some(branches) = disjuncts(e, columns, names) else {
            continue;
        };
        let mut ranges = Vec::new();
        let mut pinned = true;
        let mut depth = columns.len();
        let all_narrow = branches.iter().all(|branch| {
            let Some(left) = budget.checked_sub(1) else {
                return false;
            };
            *budget = left;
            let mut with_branch: Vec<&Expr> = conjuncts[..i].to_vec();
            with_branch.extend(&conjuncts[i + 1..]);
            with_branch.extend(branch.iter().flat_map(split_conjunction));
            match narrowed(columns, names, &with_branch, budget) {
                Some(n) => {
                    ranges.extend(n.ranges);
                    pinned &= n.pinned;
                    depth = depth.min(n.columns);
                    ranges.len() <= MAX_POINTS
                }
                None => false,
            }
        });
        if all_narrow {
            return Some(Narrowing {
                ranges: disjoint(ranges),
                pinned,
                columns: depth,
            });
        }
    }
    conjunctive(columns, names, conjuncts)
}

/// The branches of a disjunction, each as the filters it is the conjunction of: the
/// operands of ORs, or for a row IN list over columns, one equality per column and row.
fn disjuncts(e: &Expr, columns: &[(usize, SqlType)], names: &[String]) -> Option<Vec<Vec<Expr>>> {
    match e {
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::Or, ..
        }) => Some(
            split_binary(e, Operator::Or)
                .into_iter()
                .map(|b| vec![b.clone()])
                .collect(),
        ),
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let fields = row_columns(expr, columns, names)?;
            list.iter()
                .map(|row| {
                    let values = row_values(row)?;
                    (values.len() == fields.len()).then(|| {
                        fields
                            .iter()
                            .zip(values)
                            .map(|(f, v)| f.clone().eq(Expr::Literal(v, None)))
                            .collect()
                    })
                })
                .collect()
        }
        _ => None,
    }
}

/// The columns of a row constructor `(a, b, …)`, as DataFusion plans it: `struct(a, b)`,
/// perhaps cast to the literals' types where that cast keeps equality as it is (a wider
/// integer, another form of text).
fn row_columns(e: &Expr, columns: &[(usize, SqlType)], names: &[String]) -> Option<Vec<Expr>> {
    let (row, to) = match e {
        Expr::Cast(Cast { expr, field }) => (expr.as_ref(), Some(field.data_type())),
        e => (e, None),
    };
    let Expr::ScalarFunction(f) = row else {
        return None;
    };
    if f.name() != "struct" || !f.args.iter().all(|a| matches!(a, Expr::Column(_))) {
        return None;
    }
    if let Some(to) = to {
        let DataType::Struct(targets) = to else {
            return None;
        };
        if targets.len() != f.args.len() {
            return None;
        }
        for (arg, target) in f.args.iter().zip(targets.iter()) {
            let Expr::Column(c) = arg else { return None };
            // Columns outside the key narrow nothing; any cast of them is harmless here.
            let Some(&(_, ty)) = columns.iter().find(|(i, _)| names[*i] == c.name) else {
                continue;
            };
            if !equality_kept(&arrow_type(ty), target.data_type()) {
                return None;
            }
        }
    }
    Some(f.args.clone())
}

/// Whether casting values of type `from` to `to` keeps which values are equal.
fn equality_kept(from: &DataType, to: &DataType) -> bool {
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let width = |t: &DataType| match t {
        DataType::Int8 => Some(8),
        DataType::Int16 => Some(16),
        DataType::Int32 => Some(32),
        DataType::Int64 => Some(64),
        _ => None,
    };
    from == to
        || (text(from) && text(to))
        || matches!((width(from), width(to)), (Some(f), Some(t)) if f <= t)
}

/// The fields of one row of a row IN list: a struct literal, or `struct(…)` of literals.
fn row_values(e: &Expr) -> Option<Vec<ScalarValue>> {
    match e {
        Expr::Literal(ScalarValue::Struct(row), _) if row.len() == 1 => row
            .columns()
            .iter()
            .map(|c| ScalarValue::try_from_array(c, 0).ok())
            .collect(),
        Expr::ScalarFunction(f) if f.name() == "struct" => f
            .args
            .iter()
            .map(|a| match a {
                Expr::Literal(v, _) => Some(v.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// `ranges` in key order, overlapping ones joined, empty ones dropped.
fn disjoint(mut ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    ranges.retain(|r| !is_empty(r));
    ranges.sort_by(|a, b| start_order(&a.start, &b.start));
    let mut out: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if overlaps(&last.end, &r.start) => {
                if end_order(&r.end, &last.end) == Ordering::Greater {
                    last.end = r.end;
                }
            }
            _ => out.push(r),
        }
    }
    out
}

/// Order of start bounds by the first key each admits.
fn start_order(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Ordering {
    bound_order(a, b, Ordering::Less)
}

/// Order of end bounds by the last key each admits.
fn end_order(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Ordering {
    bound_order(a, b, Ordering::Greater)
}

/// Order of two bounds of one side, an open bound being `open` to any other (below every
/// start, above every end). At one key an exclusive start admits its first key later
/// than an inclusive one, an exclusive end its last key earlier.
fn bound_order(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>, open: Ordering) -> Ordering {
    let exclusive = |x: &Bound<Vec<u8>>| matches!(x, Bound::Excluded(_));
    match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Ordering::Equal,
        (Bound::Unbounded, _) => open,
        (_, Bound::Unbounded) => open.reverse(),
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            let later = exclusive(a).cmp(&exclusive(b));
            x.cmp(y).then(if open == Ordering::Less {
                later
            } else {
                later.reverse()
            })
        }
    }
}

/// Whether a range ending at `end` and one starting at `start` (not before it) share a
/// key. Ranges that only touch stay apart, as an IN list's points do.
fn overlaps(end: &Bound<Vec<u8>>, start: &Bound<Vec<u8>>) -> bool {
    match (end, start) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(e), Bound::Included(s)) => s <= e,
        (Bound::Included(e) | Bound::Excluded(e), Bound::Included(s) | Bound::Excluded(s)) => s < e,
    }
}

fn is_empty(r: &KeyRange) -> bool {
    match (&r.start, &r.end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
        _ => false,
    }
}

/// The ranges the conjuncts narrow the key to, disjunctions among them aside.
fn conjunctive(
    columns: &[(usize, SqlType)],
    names: &[String],
    conjuncts: &[&Expr],
) -> Option<Narrowing> {
    let points_from = |prefixes: Vec<Vec<u8>>, depth| Narrowing {
        ranges: prefixes.into_iter().map(KeyRange::prefixed).collect(),
        pinned: true,
        columns: depth,
    };
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    for (depth, &(col, ty)) in columns.iter().enumerate() {
        let c = constraint(&names[col], ty, conjuncts);
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
            return (depth > 0).then(|| points_from(prefixes, depth));
        }
        let ranges = prefixes
            .iter()
            .map(|p| bounded(p, ty, c.low.as_ref(), c.high.as_ref()))
            .collect::<Option<Vec<_>>>()?;
        return Some(Narrowing {
            ranges,
            pinned: false,
            columns: depth + 1,
        });
    }
    Some(points_from(prefixes, columns.len()))
}

/// The keys that start with `prefix` and go on with a value of type `ty` within `low`
/// and `high` (each a value and whether it is included); a missing bound leaves that
/// side open, though never to the column's NULLs, which no range filter passes. `None`
/// if a bound is not of type `ty`.
pub(crate) fn bounded(
    prefix: &[u8],
    ty: SqlType,
    low: Option<&(Value, bool)>,
    high: Option<&(Value, bool)>,
) -> Option<KeyRange> {
    let bound_key = |v: &Value| {
        let mut k = prefix.to_vec();
        encode_key(&[ty], std::slice::from_ref(v), &mut k)
            .ok()
            .map(|()| k)
    };
    let start = match low {
        Some((v, inclusive)) => {
            let k = bound_key(v)?;
            if *inclusive {
                Bound::Included(k)
            } else {
                successor(&k).map_or(Bound::Excluded(k), Bound::Included)
            }
        }
        // Past the column's NULLs, which sort first.
        None => {
            let null = bound_key(&Value::Null)?;
            successor(&null).map_or(Bound::Excluded(null), Bound::Included)
        }
    };
    let end = match high {
        Some((v, inclusive)) => {
            let k = bound_key(v)?;
            if *inclusive {
                successor(&k).map_or(Bound::Unbounded, Bound::Excluded)
            } else {
                Bound::Excluded(k)
            }
        }
        None => successor(prefix).map_or(Bound::Unbounded, Bound::Excluded),
    };
    Some(KeyRange { start, end })
}

/// The stored keys `filters` pin the key column `column` of a keyed scan to (`= X'…'`
/// or `IN (X'…', …)`), each as a range of one key, in key order.
pub fn stored_keys(column: &str, filters: &[Expr]) -> Option<Vec<KeyRange>> {
    let binary = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Binary(Some(k)), _) => Some(k.clone()),
        _ => None,
    };
    let conjuncts: Vec<&Expr> = filters.iter().flat_map(split_conjunction).collect();
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
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &f).unwrap();
        assert!(!points);
        assert_eq!(ranges.len(), 1);
        assert_eq!(key_ranges(&cols, &names(), &f).unwrap().columns, 2);
        assert_eq!(key_ranges(&cols, &names(), &f[..1]).unwrap().columns, 1);
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
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &f).unwrap();
        assert!(points);
        assert_eq!(ranges.len(), 2);
        assert!(key_ranges(&cols, &names(), &[col("b").eq(lit(1i32))]).is_none());
        // 1.5 is no INT: no narrowing, rather than a wrong one.
        assert!(key_ranges(&cols, &names(), &[col("a").eq(lit(1.5f64))]).is_none());
        assert!(key_ranges(&cols, &names(), &[col("a").eq(lit(1i64 << 40))]).is_none());
    }

    /// Every key `(a, b)` with a and b in 0..6 and NULL, as (a, b, key).
    fn grid(t: &[SqlType]) -> Vec<(Option<i32>, Option<i64>, Vec<u8>)> {
        let vals = || (0..6).map(Some).chain([None]);
        let mut out = Vec::new();
        for a in vals() {
            for b in vals() {
                let v = [
                    a.map_or(Value::Null, Value::Int),
                    b.map_or(Value::Null, |b| Value::BigInt(i64::from(b))),
                ];
                out.push((a, b.map(i64::from), enc(t, &v)));
            }
        }
        out
    }

    /// Checks that `ranges` are disjoint, in key order, and hold every key of the grid
    /// `passes` passes, each once.
    fn covers(ranges: &[KeyRange], passes: impl Fn(Option<i32>, Option<i64>) -> bool) {
        let t = [SqlType::Int, SqlType::BigInt];
        for w in ranges.windows(2) {
            assert_eq!(start_order(&w[0].start, &w[1].start), Ordering::Less);
            assert!(!overlaps(&w[0].end, &w[1].start), "{w:?} overlap");
        }
        for (a, b, k) in grid(&t) {
            let held = ranges.iter().filter(|r| contains(r, &k)).count();
            if passes(a, b) {
                assert_eq!(held, 1, "a = {a:?}, b = {b:?}");
            }
        }
    }

    #[test]
    fn disjunctions_of_conjunctions_give_the_union_of_their_ranges() {
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let f = [col("a")
            .eq(lit(1i32))
            .and(col("b").eq(lit(4i64)))
            .or(col("a").eq(lit(2i32)).and(col("b").eq(lit(5i64))))];
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &f).unwrap();
        assert!(points);
        assert_eq!(ranges.len(), 2);
        covers(&ranges, |a, b| {
            (a, b) == (Some(1), Some(4)) || (a, b) == (Some(2), Some(5))
        });
        // An IN list DataFusion wrote as ORs, after an equality on the first column.
        let f = [
            col("a").eq(lit(3i32)),
            col("b").eq(lit(1i64)).or(col("b").eq(lit(2i64))),
        ];
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &f).unwrap();
        assert!(points);
        assert_eq!(ranges.len(), 2);
        covers(&ranges, |a, b| a == Some(3) && matches!(b, Some(1 | 2)));
    }

    #[test]
    fn overlapping_branches_are_read_once() {
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let f = [col("a")
            .eq(lit(2i32))
            .or(col("a").gt_eq(lit(1i32)).and(col("a").lt(lit(4i32))))
            .or(col("a").eq(lit(4i32)).and(col("b").gt(lit(2i64))))
            .or(col("a").eq(lit(5i32)))];
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &f).unwrap();
        assert!(!points);
        covers(&ranges, |a, b| match a {
            Some(1..=3) | Some(5) => true,
            Some(4) => b.is_some_and(|b| b > 2),
            _ => false,
        });
        // [1, 4) with the point 2 in it; (4, b > 2) up to 5; 5.
        assert_eq!(ranges.len(), 3, "{ranges:?}");
        // Some branches constrain `a` only: the union reaches no further.
        assert_eq!(key_ranges(&cols, &names(), &f).unwrap().columns, 1);
    }

    #[test]
    fn a_branch_that_narrows_nothing_leaves_the_conjunction() {
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let f = [
            col("a").eq(lit(1i32)),
            col("b").eq(lit(4i64)).or(col("c").eq(lit(2i32))),
        ];
        let n = key_ranges(&cols, &names(), &f).unwrap();
        covers(&n.ranges, |a, _| a == Some(1));
        assert_eq!(n.columns, 1);
        let f = [col("a").eq(lit(1i32)).or(col("c").eq(lit(2i32)))];
        assert!(key_ranges(&cols, &names(), &f).is_none());
    }

    #[test]
    fn row_in_lists_are_points_when_their_casts_keep_equality() {
        use datafusion::arrow::datatypes::{Field, Fields};
        use datafusion::functions::core::expr_fn::r#struct;
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let row = |a: i64, b: i64| r#struct(vec![lit(a), lit(b)]);
        let as_type = |t: DataType| {
            DataType::Struct(Fields::from(vec![
                Field::new("c0", t.clone(), true),
                Field::new("c1", t, true),
            ]))
        };
        let list = |to: DataType| {
            Expr::Cast(Cast::new(
                Box::new(r#struct(vec![col("a"), col("b")])),
                as_type(to),
            ))
            .in_list(vec![row(1, 4), row(2, 5), row(1, 4)], false)
        };
        let Narrowing {
            ranges,
            pinned: points,
            ..
        } = key_ranges(&cols, &names(), &[list(DataType::Int64)]).unwrap();
        assert!(points);
        assert_eq!(ranges.len(), 2);
        covers(&ranges, |a, b| {
            (a, b) == (Some(1), Some(4)) || (a, b) == (Some(2), Some(5))
        });
        // Equal as doubles is not equal as integers (or the other way about).
        assert!(key_ranges(&cols, &names(), &[list(DataType::Float64)]).is_none());
        assert!(key_ranges(&cols, &names(), &[list(DataType::Int16)]).is_none());
    }

    #[test]
    fn many_disjunctions_stay_within_the_branch_budget() {
        // 2^40 combinations of branches; the budget stops the search long before.
        let cols = [(0, SqlType::Int), (1, SqlType::BigInt)];
        let mut f = vec![col("a").eq(lit(1i32))];
        for i in 0..40i64 {
            f.push(col("b").eq(lit(3i64)).or(col("b").eq(lit(i + 10))));
        }
        let ranges = key_ranges(&cols, &names(), &f).unwrap().ranges;
        covers(&ranges, |a, b| a == Some(1) && b == Some(3));
    }

    #[test]
    fn decimal_literals_are_rescaled_exactly() {
        let ty = SqlType::decimal(10, 2);
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
